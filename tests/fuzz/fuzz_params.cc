// libFuzzer target: the .pdiparams tensor stream and .pdiparams.info readers. The first byte picks the
// reader; the rest is the file. Any input must give a result or an oar::Error, and what parses must
// survive a write + read.
#include <oar/core/error.h>
#include <oar/ir/params.h>
#include <oar/ir/program.h>

#include <cstdio>
#include <cstdlib>

namespace {

void check(bool ok, const char* what) {
  if (!ok) {
    std::fprintf(stderr, "fuzz_params: %s\n", what);
    std::abort();
  }
}

// A program with two persistable variables, for load_combined_params.
const oar::ir::Program& program() {
  static const oar::ir::Program p = [] {
    oar::ir::Program prog;
    oar::ir::VarDesc w;
    w.name = "w";
    w.shape = {-1, 3};
    w.persistable = true;
    prog.global_block().add_var(w);
    oar::ir::VarDesc b = w;
    b.name = "b";
    b.shape = {3};
    prog.global_block().add_var(b);
    return prog;
  }();
  return p;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const uint8_t mode = data[0] % 3;
  std::string bytes(reinterpret_cast<const char*>(data + 1), size - 1);
  try {
    if (mode == 0) {
      auto ts = oar::ir::parse_tensor_stream(bytes.data(), bytes.size());
      std::string again = oar::ir::serialize_tensor_stream(ts);
      check(oar::ir::parse_tensor_stream(again.data(), again.size()) == ts, "tensor stream round trip");
    } else if (mode == 1) {
      auto params = oar::ir::load_combined_params(program(), bytes);
      check(oar::ir::load_combined_params(program(), oar::ir::save_combined_params(params)) == params,
            "combined params round trip");
    } else {
      auto info = oar::ir::parse_params_info(bytes);
      check(oar::ir::parse_params_info(oar::ir::serialize_params_info(info)) == info,
            "params info round trip");
    }
  } catch (const oar::Error&) {
  }
  return 0;
}
