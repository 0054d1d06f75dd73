// Custom op libraries (tests/custom_ops, built against the SDK only): loading, running on every
// device, gradients through the library's grad ops, static programs, and each refusal with its reason.
#include <gtest/gtest.h>
#include <oar/core/autograd.h>
#include <oar/core/custom_op.h>
#include <oar/core/dispatch.h>
#include <oar/core/error.h>
#include <oar/core/ops.h>
#include <oar/core/runtime.h>
#include <oar/core/tensor.h>
#include <oar/ir/executor.h>
#include <oar/ir/program.h>
#include <oar/ir/static_graph.h>

#include <cmath>
#include <fstream>
#include <string>
#include <vector>

namespace {

using oar::Dims;
using oar::DType;
using oar::Tensor;

std::string lib(const std::string& name) {
  return std::string(OAR_BINARY_DIR) + "/tests/custom_ops/lib" + name + ".so";
}

// The error `fn` throws, or "" when it throws none.
template <typename F>
std::string error_of(F&& fn, oar::ErrorCode* code = nullptr) {
  try {
    fn();
  } catch (const oar::Error& e) {
    if (code) *code = e.code();
    return e.what();
  }
  return "";
}

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

std::vector<oar::Place> places() {
  std::vector<oar::Place> out{oar::cpu_place()};
  if (oar::Runtime::get().find_device_type("sim")) out.push_back(oar::Place::parse("sim:0"));
  return out;
}

Tensor input(oar::Place p) {
  return Tensor::from_vector<float>({-2.f, -0.5f, 0.f, 1.5f, 3.f, -1.f}, Dims{2, 3}, DType::kFloat32).to(p);
}

TEST(CustomOp, PaddleReluForwardAndBackwardOnEveryDevice) {
  auto ops = oar::load_custom_op_library(lib("custom_paddle_relu"));
  ASSERT_EQ(ops.size(), 3u);
  EXPECT_EQ(ops[0].name, "custom_relu");
  EXPECT_EQ(ops[1].name, "custom_relu_grad");
  EXPECT_EQ(ops[2].name, "custom_relu_grad_grad");
  // Loading again is a no-op that answers the same.
  EXPECT_EQ(oar::load_custom_op_library(lib("custom_paddle_relu")).size(), 3u);
  for (oar::Place p : places()) {
    SCOPED_TRACE(p.to_string());
    Tensor x = input(p);
    oar::autograd::set_requires_grad(x, true);
    Tensor y = oar::call_op("custom_relu", {x})[0];
    EXPECT_EQ(y.place(), p);
    std::vector<float> got = y.to_vector<float>();
    std::vector<float> want{0.f, 0.f, 0.f, 1.5f, 3.f, 0.f};
    EXPECT_EQ(got, want);
    oar::autograd::backward({oar::ops::sum(y, {}, false)});
    std::vector<float> g = oar::autograd::grad(x).to_vector<float>();
    EXPECT_EQ(g, (std::vector<float>{0.f, 0.f, 0.f, 1.f, 1.f, 0.f}));
  }
}

TEST(CustomOp, StaticProgramRecordsTheOpUnderItsOwnTypeAndTheExecutorRunsIt) {
  oar::load_custom_op_library(lib("custom_paddle_relu"));
  auto b = std::make_shared<oar::ir::ProgramBuilder>();
  auto prev = oar::ir::set_current_builder(b);
  Tensor x = b->create_var("x", {2, 3}, DType::kFloat32, oar::cpu_place());
  Tensor y = oar::call_op("custom_relu", {x})[0];
  oar::ir::set_current_builder(prev);
  const oar::ir::OpDesc* od = nullptr;
  for (const auto& op : b->program().global_block().ops())
    if (op.type == "custom_relu") od = &op;
  ASSERT_NE(od, nullptr) << "the program has no op of type custom_relu";
  ASSERT_EQ(od->input("X").size(), 1u);
  ASSERT_EQ(od->output("Out").size(), 1u);
  EXPECT_EQ(od->output("Out")[0], oar::ir::symbolic_name(y));
  // The executor's translation of the saved op type runs the library's kernel.
  oar::ir::OpTranslation tr = oar::ir::find_op_translation("custom_relu");
  ASSERT_NE(tr, nullptr);
  oar::ir::OpKernelFn fn = tr(*od);
  oar::ir::Scope scope;
  scope.set("x", input(oar::cpu_place()));
  oar::ir::OpRunContext c{&scope, oar::cpu_place(), od, 0, 0, nullptr, nullptr};
  fn(c);
  const Tensor* out = scope.find(od->output("Out")[0]);
  ASSERT_NE(out, nullptr);
  EXPECT_EQ(out->to_vector<float>(), (std::vector<float>{0.f, 0.f, 0.f, 1.5f, 3.f, 0.f}));
}

TEST(CustomOp, OldLibstdcxxAbiLibraryLoadsAndRuns) {
  oar::load_custom_op_library(lib("custom_old_abi"));
  Tensor x = input(oar::cpu_place());
  Tensor y = oar::call_op("custom_old_abi", {x}, oar::Attrs{{"tag", std::string("four")}})[0];
  std::vector<float> got = y.to_vector<float>(), in = x.to_vector<float>();
  for (size_t i = 0; i < got.size(); ++i) EXPECT_FLOAT_EQ(got[i], in[i] + 4.f);
}

TEST(CustomOp, ErrorsNameTheOpAndCarryTheLibrarysMessage) {
  oar::load_custom_op_library(lib("custom_oar_ops"));
  Tensor x = input(oar::cpu_place());
  oar::ErrorCode code{};
  std::string e = error_of([&] { oar::call_op("custom_throws", {x}); }, &code);
  EXPECT_TRUE(contains(e, "custom_throws") && contains(e, "boom from the kernel")) << e;
  EXPECT_EQ(code, oar::ErrorCode::kExternal);
  e = error_of([&] { oar::call_op("custom_bad_shape", {x}); }, &code);
  EXPECT_TRUE(contains(e, "custom_bad_shape") && contains(e, "InferShape said [3]") && contains(e, "[2, 3]"))
      << e;
  EXPECT_EQ(code, oar::ErrorCode::kInvalidArgument);
  e = error_of([&] { oar::call_op("custom_bad_dtype", {x}); }, &code);
  EXPECT_TRUE(contains(e, "custom_bad_dtype") && contains(e, "InferDtype said int32")) << e;
  e = error_of([&] { oar::call_op("custom_checks", {x}, oar::Attrs{{"k", int64_t{-3}}}); }, &code);
  EXPECT_TRUE(contains(e, "custom_checks") && contains(e, "k must be positive, got -3")) << e;
  EXPECT_EQ(code, oar::ErrorCode::kInvalidArgument);
  e = error_of([&] { oar::call_op("custom_infer_throws", {x}); }, &code);
  EXPECT_TRUE(contains(e, "custom_infer_throws") && contains(e, "InferShape") &&
              contains(e, "boom from InferShape"))
      << e;
  e = error_of([&] { oar::call_op("custom_relu", {x, x}); }, &code);
  EXPECT_TRUE(contains(e, "custom_relu") && contains(e, "expects 1 input")) << e;
  if (oar::Runtime::get().find_device_type("sim")) {
    e = error_of([&] { oar::call_op("custom_cpu_only", {input(oar::Place::parse("sim:0"))}); }, &code);
    EXPECT_TRUE(contains(e, "custom_cpu_only") && contains(e, "no kernel for device type 'sim'")) << e;
  }
}

TEST(CustomOp, RefusedLibrariesSayWhyAndLeaveNoOpBehind) {
  oar::load_custom_op_library(lib("custom_paddle_relu"));
  struct Case {
    std::string path, part;
    oar::ErrorCode code;
  };
  const std::string missing = std::string(OAR_BINARY_DIR) + "/tests/custom_ops/libnope.so";
  const std::string text = std::string(OAR_BINARY_DIR) + "/tests/custom_ops/not_a_library.so";
  std::ofstream(text) << "this is not an ELF file";
  const std::vector<Case> cases = {
      {missing, "does not exist", oar::ErrorCode::kNotFound},
      {text, "cannot be loaded", oar::ErrorCode::kInvalidArgument},
      {std::string(OAR_TEST_PLUGIN_DIR) + "/liboar_plugin_not_a_plugin.so",
       "does not export oar_custom_op_init", oar::ErrorCode::kInvalidArgument},
      {lib("custom_bad1"), "was built for custom-op ABI 2.0", oar::ErrorCode::kAbiMismatch},
      {lib("custom_bad2"), "'relu' is already registered (a built-in op)", oar::ErrorCode::kInvalidArgument},
      {lib("custom_bad3"), "already registered by custom op library", oar::ErrorCode::kInvalidArgument},
      {lib("custom_bad4"), "unsupported type 'long double'", oar::ErrorCode::kInvalidArgument},
      {lib("custom_bad5"), "input 'Z' is neither an input nor an output", oar::ErrorCode::kInvalidArgument},
      {lib("custom_bad6"), "init failed: vendor library libfoo.so.3 not found", oar::ErrorCode::kUnavailable},
      {lib("custom_bad8"), "output 'Out' is a vector output (Vec), which oar does not support",
       oar::ErrorCode::kUnimplemented},
  };
  for (const Case& c : cases) {
    oar::ErrorCode code{};
    std::string e = error_of([&] { oar::load_custom_op_library(c.path); }, &code);
    EXPECT_TRUE(contains(e, c.part)) << c.path << ": " << e;
    EXPECT_TRUE(contains(e, c.path)) << "the message should name the library: " << e;
    EXPECT_EQ(code, c.code) << e;
  }
  EXPECT_EQ(oar::OpRegistry::get().find("custom_bad_grad"), nullptr);
  // A newer minor within the window loads and runs.
  oar::load_custom_op_library(lib("custom_bad7"));
  Tensor x = input(oar::cpu_place());
  EXPECT_EQ(oar::call_op("custom_newer_minor", {x})[0].to_vector<float>(), x.to_vector<float>());
  EXPECT_EQ(oar::OpRegistry::get().find("custom_bad_attr"), nullptr);
}

}  // namespace
