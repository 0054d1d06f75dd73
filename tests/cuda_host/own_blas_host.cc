// Host harness for the gpu plugin's own matmul and convolution kernels (plugins/cuda/own_blas.cu): the
// plugin's registration, planning and launch code runs unchanged over host buffers, its kernels under the
// block emulator (block_emu.h), and test_cuda_own_kernels_host.py compares the results with the CPU plugin.
// Built with a plain C++ compiler against the CUDA headers; no GPU, no CUDA runtime library.
//
// Protocol (stdin, whitespace separated): OP DTYPE GRID_CAP, then the attributes (a count, then per
// attribute NAME i VALUE or NAME I COUNT VALUES...), then each input (NDIM DIMS... VALUES...), then the
// output's NDIM DIMS.... stdout: the output's values, one a line. A kernel error: "error CODE message" on
// stderr, exit status 2.
#include "block_emu.h"
// block_emu.h first
#include <iostream>
#include <map>
#include <string>

#include "own_blas.cu"
// the plugin file, then the host core
#include "host_core.h"

using namespace host_core;

int main() {
  install_core();
  sdk::KernelRegistrar registrar(nullptr);  // never used: Registry::add (host_core.h) only records the bodies
  Registry reg(registrar);
  register_own_blas(reg);
  std::string op;
  int32_t dtype;
  std::cin >> op >> dtype >> g_grid_cap;
  OarKernelContext ctx;
  read_attrs(ctx);
  Buffer bufs[3];
  for (int i = 0; i < 2; ++i) {
    bufs[i].dims = read_dims();
    const std::vector<double> v = read_values(bufs[i].dims);
    ctx.inputs.push_back(make_tensor(bufs[i], dtype, &v));
  }
  bufs[2].dims = read_dims();
  ctx.outputs.push_back(make_tensor(bufs[2], dtype, nullptr));
  if (!std::cin) {
    std::fprintf(stderr, "own_blas_host: malformed input\n");
    return 1;
  }
  if (!run_kernel(op, ctx)) return 2;
  print_output(ctx, 0);
  return 0;
}
