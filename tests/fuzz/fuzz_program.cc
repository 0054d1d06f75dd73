// libFuzzer target: the .pdmodel (ProgramDesc) parser. Any input must give a Program or an oar::Error;
// a Program that parses must serialize and parse back to the same Program.
#include <oar/core/error.h>
#include <oar/ir/program.h>

#include <cstdio>
#include <cstdlib>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  oar::ir::ParseOptions opts;
  opts.max_bytes = 1 << 20;
  oar::ir::Program p;
  try {
    p = oar::ir::Program::parse(data, size, opts);
  } catch (const oar::Error&) {
    return 0;
  }
  (void)p.to_string();
  oar::ir::Program q = oar::ir::Program::parse(p.serialize(), opts);
  if (!(p == q)) {
    std::fprintf(stderr, "fuzz_program: a parsed program does not survive serialize + parse\n");
    std::abort();
  }
  return 0;
}
