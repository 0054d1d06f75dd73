// Host harness for the gpu plugin's batch_norm kernels (plugins/cuda/batch_norm.cu): its registration,
// planning and launch code runs unchanged over host buffers, its kernels (batch_norm_kernels.cuh) under the
// block emulator (block_emu.h); test_cuda_batch_norm_host.py compares the results with float64 numpy.
// Built with a plain C++ compiler against the CUDA headers; no GPU, no CUDA runtime library.
//
// Protocol (stdin, whitespace separated): OP GRID_CAP, the attributes (host_core.h's read_attrs), the input
// count and each input (DTYPE OFFSET NDIM DIMS... VALUES...), the output count and each output (DTYPE
// OFFSET NDIM DIMS...). OFFSET elements of padding come before a tensor's data (0 or 1: a misaligned
// view). stdout: every output's values in order, one a line. A kernel error: "error CODE message" on
// stderr, exit status 2.
#include "block_emu.h"
// block_emu.h first
#include "batch_norm.cu"
// the plugin file, then the host core
#include "host_core.h"

using namespace host_core;

namespace {
struct Spec {
  int32_t dtype;
  int64_t offset;
};
Spec read_spec() {
  Spec s;
  std::cin >> s.dtype >> s.offset;
  return s;
}
}  // namespace

int main() {
  install_core();
  sdk::KernelRegistrar registrar(nullptr);  // never used: Registry::add (host_core.h) only records the bodies
  Registry reg(registrar);
  register_batch_norm(reg);
  std::string op;
  std::cin >> op >> g_grid_cap;
  OarKernelContext ctx;
  read_attrs(ctx);
  int n_in, n_out;
  std::cin >> n_in;
  std::vector<Buffer> bufs(16);
  for (int i = 0; i < n_in; ++i) {
    const Spec s = read_spec();
    bufs[i].dims = read_dims();
    const std::vector<double> v = read_values(bufs[i].dims);
    ctx.inputs.push_back(make_tensor(bufs[i], s.dtype, &v, s.offset));
  }
  std::cin >> n_out;
  for (int i = 0; i < n_out; ++i) {
    const Spec s = read_spec();
    bufs[n_in + i].dims = read_dims();
    ctx.outputs.push_back(make_tensor(bufs[n_in + i], s.dtype, nullptr, s.offset));
  }
  if (!std::cin || n_in + n_out > 16) {
    std::fprintf(stderr, "batch_norm_host: malformed input\n");
    return 1;
  }
  if (!run_kernel(op, ctx)) return 2;
  for (int i = 0; i < n_out; ++i) print_output(ctx, i);
  return 0;
}
