// The inference API (oar_infer) on the PaddlePaddle fixtures: Paddle's outputs through the predictor on
// cpu and sim:0, Clone (same outputs, shared weights), PredictorPool, concurrent clones, model
// folders, and every documented error.
#include <gtest/gtest.h>
#include <oar/core/error.h>
#include <oar/core/runtime.h>
#include <oar/inference/predictor.h>
#include <oar/ir/params.h>
#include <oar/ir/program.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <functional>
#include <thread>

#include "program_test_util.h"

namespace fs = std::filesystem;
using oar::Error;
using oar::ErrorCode;

namespace {

oar_infer::Config fixture_config(const std::string& model, const std::string& device = "cpu") {
  oar_infer::Config c(fixture(model + "/model.pdmodel"), fixture(model + "/model.pdiparams"));
  c.SetDevice(device);
  return c;
}

std::vector<float> npy_floats(const Npy& n) {
  std::vector<float> v(n.data.size() / 4);
  std::memcpy(v.data(), n.data.data(), n.data.size());
  return v;
}

int64_t numel(const std::vector<int>& s) {
  int64_t n = 1;
  for (int d : s) n *= d;
  return n;
}

// Feeds the fixture's input, runs, and returns output 0.
std::vector<float> run_once(oar_infer::Predictor& p, const Npy& in) {
  auto h = p.GetInputHandle(p.GetInputNames()[0]);
  h->Reshape(std::vector<int>(in.shape.begin(), in.shape.end()));
  std::vector<float> x = npy_floats(in);
  h->CopyFromCpu(x.data());
  EXPECT_TRUE(p.Run());
  auto out = p.GetOutputHandle(p.GetOutputNames()[0]);
  std::vector<float> y(numel(out->shape()));
  out->CopyToCpu(y.data());
  return y;
}

// Like numpy.allclose(got, ref, rtol=1e-5, atol=1e-6).
void expect_close(const std::vector<float>& got, const Npy& ref, const std::string& what) {
  std::vector<float> r = npy_floats(ref);
  ASSERT_EQ(got.size(), r.size()) << what;
  for (size_t i = 0; i < got.size(); ++i)
    ASSERT_LE(std::fabs(got[i] - r[i]), 1e-6 + 1e-5 * std::fabs(r[i])) << what << " element " << i;
}

template <typename F>
void expect_error(F&& f, ErrorCode code, const std::string& needle) {
  try {
    f();
    ADD_FAILURE() << "no error, expected: " << needle;
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), code) << e.what();
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
  }
}

struct Case {
  std::string model, device;
};

class PredictorFixtures : public ::testing::TestWithParam<Case> {};

}  // namespace

TEST_P(PredictorFixtures, MatchesPaddle) {
  const Case& c = GetParam();
  auto p = oar_infer::CreatePredictor(fixture_config(c.model, c.device));
  EXPECT_EQ(p->device(), c.device == "cpu" ? "cpu" : "sim:0");
  ASSERT_EQ(p->GetInputNames().size(), 1u);
  ASSERT_EQ(p->GetOutputNames().size(), 1u);
  Npy in = read_npy(fixture(c.model + "/input.npy"));
  Npy out = read_npy(fixture(c.model + "/output.npy"));
  std::vector<float> y = run_once(*p, in);
  expect_close(y, out, c.model + " on " + c.device);
  auto oh = p->GetOutputHandle(p->GetOutputNames()[0]);
  std::vector<int> oshape = oh->shape();
  EXPECT_EQ(std::vector<int64_t>(oshape.begin(), oshape.end()), out.shape);
  EXPECT_EQ(oh->type(), oar_infer::DataType::FLOAT32);
  EXPECT_EQ(oh->place(), c.device == "cpu" ? oar_infer::PlaceType::kCPU : oar_infer::PlaceType::kCUSTOM);
  // The inputs keep their data: a second Run without a new copy gives the same result.
  ASSERT_TRUE(p->Run());
  std::vector<float> y2(y.size());
  p->GetOutputHandle(p->GetOutputNames()[0])->CopyToCpu(y2.data());
  expect_close(y2, out, c.model + " second run");
  // Batch 1: the first row of the reference.
  Npy one = in;
  one.shape[0] = 1;
  one.data.resize(one.data.size() / in.shape[0]);
  std::vector<float> y1 = run_once(*p, one);
  std::vector<float> ref = npy_floats(out);
  ASSERT_EQ(y1.size(), ref.size() / out.shape[0]);
  for (size_t i = 0; i < y1.size(); ++i) EXPECT_NEAR(y1[i], ref[i], 1e-6 + 1e-5 * std::fabs(ref[i])) << i;
}

INSTANTIATE_TEST_SUITE_P(Fixtures, PredictorFixtures,
                         ::testing::Values(Case{"mlp", "cpu"}, Case{"lenet", "cpu"},
                                           Case{"static_mlp", "cpu"}, Case{"mlp", "sim:0"},
                                           Case{"lenet", "sim:0"}, Case{"static_mlp", "sim:0"}),
                         [](const ::testing::TestParamInfo<Case>& i) {
                           return i.param.model + (i.param.device == "cpu" ? "_cpu" : "_sim");
                         });

TEST(Predictor, NamesTypesAndShapes) {
  auto p = oar_infer::CreatePredictor(fixture_config("lenet"));
  EXPECT_EQ(p->GetInputNames(), std::vector<std::string>{"image"});
  EXPECT_EQ(p->GetOutputNames(), std::vector<std::string>{"linear_0.tmp_1"});
  using Shapes = std::map<std::string, std::vector<int64_t>>;
  EXPECT_EQ(p->GetInputTensorShape(), (Shapes{{"image", {-1, 1, 12, 12}}}));
  EXPECT_EQ(p->GetOutputTensorShape(), (Shapes{{"linear_0.tmp_1", {-1, 5}}}));
  EXPECT_EQ(p->GetInputTypes().at("image"), oar_infer::DataType::FLOAT32);
  EXPECT_EQ(p->GetOutputTypes().at("linear_0.tmp_1"), oar_infer::DataType::FLOAT32);
  auto in = p->GetInputHandle("image");
  EXPECT_EQ(in->name(), "image");
  EXPECT_TRUE(in->is_input());
  EXPECT_EQ(in->type(), oar_infer::DataType::FLOAT32);
  EXPECT_EQ(in->shape(), (std::vector<int>{-1, 1, 12, 12}));  // declared, before Reshape
  EXPECT_FALSE(in->has_data());
  in->Reshape({3, 1, 12, 12});
  EXPECT_EQ(in->shape(), (std::vector<int>{3, 1, 12, 12}));
  auto out = p->GetOutputHandle("linear_0.tmp_1");
  EXPECT_FALSE(out->is_input());
  EXPECT_FALSE(out->has_data());
  EXPECT_EQ(out->shape(), (std::vector<int>{-1, 5}));  // declared, before Run
  std::vector<float> x(3 * 144, 0.5f);
  in->CopyFromCpu(x.data());
  // The input's data reads back.
  std::vector<float> back(x.size());
  in->CopyToCpu(back.data());
  EXPECT_EQ(back, x);
  p->Run();
  EXPECT_TRUE(out->has_data());
  EXPECT_EQ(out->shape(), (std::vector<int>{3, 5}));
  EXPECT_EQ(oar_infer::GetDataTypeSize(out->type()), 4);
  EXPECT_STREQ(oar_infer::DataTypeName(oar_infer::DataType::INT64), "INT64");
}

TEST(Predictor, CloneSharesWeightsAndHasItsOwnState) {
  oar_infer::Config config = fixture_config("lenet");
  config.SwitchIrOptim(false);  // keep the file's parameter names (conv+bn folding replaces some)
  auto p = oar_infer::CreatePredictor(config);
  auto c = p->Clone();
  Npy in = read_npy(fixture("lenet/input.npy"));
  Npy out = read_npy(fixture("lenet/output.npy"));
  // Every parameter is the same storage in both.
  auto names = oar::ir::combined_param_names(oar::ir::Program::load(fixture("lenet/model.pdmodel")));
  ASSERT_EQ(names.size(), 10u);
  for (auto& n : names) {
    oar::Tensor a = p->GetVariable(n), b = c->GetVariable(n);
    ASSERT_TRUE(a.defined() && b.defined()) << n;
    EXPECT_TRUE(a.shares_storage(b)) << n;
    EXPECT_EQ(a.data_ptr(), b.data_ptr()) << n;
  }
  EXPECT_FALSE(c->GetVariable("no_such_var").defined());
  // The clone has its own inputs: the original has none yet.
  expect_close(run_once(*c, in), out, "clone");
  EXPECT_FALSE(p->GetInputHandle("image")->has_data());
  expect_close(run_once(*p, in), out, "original");
  // A clone of a clone works too, and outlives its source.
  auto cc = c->Clone();
  c.reset();
  p.reset();
  expect_close(run_once(*cc, in), out, "clone of a clone");
}

class ConcurrentClones : public ::testing::TestWithParam<std::string> {};

TEST_P(ConcurrentClones, GiveCorrectResults) {
  auto p = oar_infer::CreatePredictor(fixture_config("lenet", GetParam()));
  Npy in = read_npy(fixture("lenet/input.npy"));
  Npy out = read_npy(fixture("lenet/output.npy"));
  std::vector<std::unique_ptr<oar_infer::Predictor>> clones;
  for (int i = 0; i < 4; ++i) clones.push_back(p->Clone());
  std::vector<int> failures(clones.size(), 0);
  std::vector<std::thread> threads;
  for (size_t t = 0; t < clones.size(); ++t)
    threads.emplace_back([&, t] {
      std::vector<float> ref = npy_floats(out);
      for (int it = 0; it < 50; ++it) {
        std::vector<float> y = run_once(*clones[t], in);
        for (size_t i = 0; i < y.size(); ++i)
          if (std::fabs(y[i] - ref[i]) > 1e-6 + 1e-5 * std::fabs(ref[i])) ++failures[t];
      }
    });
  for (auto& th : threads) th.join();
  for (size_t t = 0; t < clones.size(); ++t) EXPECT_EQ(failures[t], 0) << "thread " << t;
}

INSTANTIATE_TEST_SUITE_P(Devices, ConcurrentClones, ::testing::Values("cpu", "sim:0"),
                         [](const ::testing::TestParamInfo<std::string>& i) {
                           return i.param == "cpu" ? std::string("cpu") : std::string("sim");
                         });

TEST(Predictor, Pool) {
  oar_infer::services::PredictorPool pool(fixture_config("mlp"), 3);
  EXPECT_EQ(pool.size(), 3u);
  Npy in = read_npy(fixture("mlp/input.npy"));
  Npy out = read_npy(fixture("mlp/output.npy"));
  for (size_t i = 0; i < 3; ++i) {
    oar_infer::Predictor* p = pool.Retrive(i);
    ASSERT_NE(p, nullptr);
    EXPECT_EQ(p, pool.Retrieve(i));
    expect_close(run_once(*p, in), out, "pool member " + std::to_string(i));
  }
  EXPECT_NE(pool.Retrieve(0), pool.Retrieve(1));
  EXPECT_TRUE(pool.Retrieve(0)
                  ->GetVariable("linear_0.w_0")
                  .shares_storage(pool.Retrieve(2)->GetVariable("linear_0.w_0")));
  expect_error([&] { pool.Retrieve(3); }, ErrorCode::kOutOfRange, "index 3 out of range (pool of 3)");
  expect_error([&] { oar_infer::services::PredictorPool bad(fixture_config("mlp"), 0); },
               ErrorCode::kInvalidArgument, "size must be >= 1");
}

TEST(Predictor, MemoryOptimAndShrink) {
  Npy in = read_npy(fixture("lenet/input.npy"));
  Npy out = read_npy(fixture("lenet/output.npy"));
  oar_infer::Config keep = fixture_config("lenet");  // memory optim off (Paddle's default)
  oar_infer::Config gc = fixture_config("lenet");
  keep.SwitchIrOptim(false);  // variables are looked up by the file's names below
  gc.SwitchIrOptim(false);
  gc.EnableMemoryOptim();
  EXPECT_FALSE(keep.enable_memory_optim());
  EXPECT_TRUE(gc.enable_memory_optim());
  auto a = oar_infer::CreatePredictor(keep);
  auto b = oar_infer::CreatePredictor(gc);
  expect_close(run_once(*a, in), out, "no memory optim");
  expect_close(run_once(*b, in), out, "memory optim");
  // Without memory optim the intermediates stay after Run; with it they are released.
  EXPECT_TRUE(a->GetVariable("conv2d_0.tmp_0").defined());
  EXPECT_FALSE(b->GetVariable("conv2d_0.tmp_0").defined());
  a->ClearIntermediateTensor();
  EXPECT_FALSE(a->GetVariable("conv2d_0.tmp_0").defined());
  EXPECT_TRUE(a->GetVariable("conv2d_0.w_0").defined());  // the weights stay
  // The outputs and inputs stay too; the predictor still runs.
  std::vector<float> y(10);
  a->GetOutputHandle("linear_0.tmp_1")->CopyToCpu(y.data());
  expect_close(y, out, "output after ClearIntermediateTensor");
  expect_close(run_once(*a, in), out, "run after ClearIntermediateTensor");
  // A large input makes large intermediates; once they are dropped, shrinking gives the pool's
  // unused chunks back.
  auto h = a->GetInputHandle("image");
  h->Reshape({4096, 1, 12, 12});
  std::vector<float> big(4096 * 144, 0.25f);
  h->CopyFromCpu(big.data());
  a->Run();
  h->Reshape({2, 1, 12, 12});  // drops the big input
  uint64_t freed = a->TryShrinkMemory();
  EXPECT_FALSE(a->GetVariable("conv2d_0.tmp_0").defined());
  std::printf("TryShrinkMemory gave back %llu bytes\n", static_cast<unsigned long long>(freed));
  EXPECT_GT(freed, 4096u * 144 * 4);
  expect_close(run_once(*a, in), out, "run after TryShrinkMemory");
}

TEST(Predictor, ThreadsSetting) {
  Npy in = read_npy(fixture("lenet/input.npy"));
  Npy out = read_npy(fixture("lenet/output.npy"));
  for (int n : {1, 2, 3}) {
    oar_infer::Config c = fixture_config("lenet");
    c.SetCpuMathLibraryNumThreads(n);
    EXPECT_EQ(c.cpu_math_library_num_threads(), n);
    auto p = oar_infer::CreatePredictor(c);
    expect_close(run_once(*p, in), out, "threads " + std::to_string(n));
  }
  oar_infer::Config c;
  expect_error([&] { c.SetCpuMathLibraryNumThreads(-1); }, ErrorCode::kInvalidArgument, "-1 is negative");
}

TEST(Predictor, ConfigSettingsAndSummary) {
  oar_infer::Config c = fixture_config("lenet");
  EXPECT_EQ(c.prog_file(), fixture("lenet/model.pdmodel"));
  EXPECT_EQ(c.params_file(), fixture("lenet/model.pdiparams"));
  EXPECT_TRUE(c.ir_optim());  // on by default, as in Paddle
  c.SwitchIrOptim(false);
  EXPECT_FALSE(c.ir_optim());
  EXPECT_EQ(c.device(), "cpu");
  EXPECT_FALSE(c.use_gpu());
  EXPECT_FALSE(c.use_custom_device());
  c.EnableCustomDevice("sim", 0);
  EXPECT_EQ(c.device(), "sim:0");
  EXPECT_TRUE(c.use_custom_device());
  EXPECT_EQ(c.custom_device_type(), "sim");
  c.EnableUseGpu(100, 1);
  EXPECT_TRUE(c.use_gpu());
  EXPECT_EQ(c.gpu_device_id(), 1);
  c.DisableGpu();
  EXPECT_EQ(c.device(), "cpu");
  c.SetCpuMathLibraryNumThreads(2);
  std::string s = c.Summary();
  for (const char* needle :
       {"prog_file", "model.pdmodel", "device", "cpu_math_threads   2", "ir_optim", "false", "memory_optim"})
    EXPECT_NE(s.find(needle), std::string::npos) << needle << "\n" << s;
  // Both settings give Paddle's outputs (no passes are wired yet: the program runs as saved).
  Npy in = read_npy(fixture("lenet/input.npy"));
  Npy out = read_npy(fixture("lenet/output.npy"));
  expect_close(run_once(*oar_infer::CreatePredictor(c), in), out, "ir_optim off");
  expect_error([&] { c.EnableUseGpu(100, 0, oar_infer::PrecisionType::kHalf); }, ErrorCode::kUnimplemented,
               "precision kHalf is not supported");
}

TEST(Predictor, ModelFromMemory) {
  std::string prog = oar::ir::read_file_bytes(fixture("mlp/model.pdmodel"), 1 << 20);
  std::string params = oar::ir::read_file_bytes(fixture("mlp/model.pdiparams"), 1 << 20);
  oar_infer::Config c;
  c.SetModelBuffer(prog.data(), prog.size(), params.data(), params.size());
  EXPECT_TRUE(c.model_from_memory());
  prog.assign(prog.size(), '\0');  // the config holds its own copy
  auto p = oar_infer::CreatePredictor(c);
  expect_close(run_once(*p, read_npy(fixture("mlp/input.npy"))), read_npy(fixture("mlp/output.npy")),
               "memory");
  // Clones (which copy the config) work without the buffers; the caller's config keeps them.
  expect_close(run_once(*p->Clone(), read_npy(fixture("mlp/input.npy"))), read_npy(fixture("mlp/output.npy")),
               "clone of a predictor from memory");
  EXPECT_TRUE(p->config().model_from_memory());
  expect_close(run_once(*oar_infer::CreatePredictor(c), read_npy(fixture("mlp/input.npy"))),
               read_npy(fixture("mlp/output.npy")), "second predictor from the same config");
}

// Config(model_dir): a folder with one .pdmodel; inference.pdmodel preferred; Paddle 1.x's __model__ with
// one parameter file per variable.
TEST(Predictor, ModelFolders) {
  fs::path root = fs::temp_directory_path() / ("oar_test_predictor_" + std::to_string(::getpid()));
  fs::remove_all(root);
  Npy in = read_npy(fixture("lenet/input.npy"));
  Npy out = read_npy(fixture("lenet/output.npy"));

  fs::create_directories(root / "one");
  fs::copy_file(fixture("lenet/model.pdmodel"), root / "one" / "lenet.pdmodel");
  fs::copy_file(fixture("lenet/model.pdiparams"), root / "one" / "lenet.pdiparams");
  oar_infer::Config one((root / "one").string());
  EXPECT_EQ(one.prog_file(), (root / "one" / "lenet.pdmodel").string());
  EXPECT_EQ(one.params_file(), (root / "one" / "lenet.pdiparams").string());
  expect_close(run_once(*oar_infer::CreatePredictor(one), in), out, "folder with one model");

  // Two programs: ambiguous, unless one is inference.pdmodel.
  fs::copy_file(fixture("mlp/model.pdmodel"), root / "one" / "mlp.pdmodel");
  expect_error([&] { oar_infer::Config c((root / "one").string()); }, ErrorCode::kInvalidArgument,
               "holds several programs (lenet.pdmodel, mlp.pdmodel)");
  fs::copy_file(fixture("lenet/model.pdmodel"), root / "one" / "inference.pdmodel");
  fs::copy_file(fixture("lenet/model.pdiparams"), root / "one" / "inference.pdiparams");
  oar_infer::Config inf((root / "one").string());
  EXPECT_EQ(fs::path(inf.prog_file()).filename(), "inference.pdmodel");
  EXPECT_EQ(fs::path(inf.params_file()).filename(), "inference.pdiparams");

  // __model__ + one file per parameter, written from the combined file.
  fs::create_directories(root / "sep");
  fs::copy_file(fixture("lenet/model.pdmodel"), root / "sep" / "__model__");
  oar::ir::Program prog = oar::ir::Program::load(fixture("lenet/model.pdmodel"));
  auto params = oar::ir::load_combined_params_file(prog, fixture("lenet/model.pdiparams"));
  for (auto& [name, t] : params)
    oar::ir::write_file_bytes((root / "sep" / name).string(), oar::ir::serialize_tensor_file(t));
  oar_infer::Config sep((root / "sep").string());
  EXPECT_EQ(sep.params_file(), "");
  EXPECT_EQ(sep.model_dir(), (root / "sep").string());
  expect_close(run_once(*oar_infer::CreatePredictor(sep), in), out, "separate parameter files");
  // A missing parameter file is named.
  fs::remove(root / "sep" / "linear_0.b_0");
  expect_error([&] { oar_infer::CreatePredictor(sep); }, ErrorCode::kNotFound,
               "parameter 'linear_0.b_0' has no file of its own");

  fs::create_directories(root / "empty");
  expect_error([&] { oar_infer::Config c((root / "empty").string()); }, ErrorCode::kNotFound,
               "holds no *.pdmodel");
  fs::remove_all(root);
}

TEST(Predictor, Errors) {
  // Missing files and folders.
  expect_error([] { oar_infer::Config c("/no/such/folder"); }, ErrorCode::kNotFound,
               "model folder '/no/such/folder' does not exist");
  expect_error(
      [] { oar_infer::CreatePredictor(oar_infer::Config("/no/such.pdmodel", "/no/such.pdiparams")); },
      ErrorCode::kNotFound, "program file '/no/such.pdmodel' does not exist");
  expect_error(
      [] {
        oar_infer::CreatePredictor(oar_infer::Config(fixture("mlp/model.pdmodel"), "/no/such.pdiparams"));
      },
      ErrorCode::kNotFound, "parameter file '/no/such.pdiparams' does not exist");
  expect_error([] { oar_infer::CreatePredictor(oar_infer::Config(fixture("mlp/model.pdmodel"), "")); },
               ErrorCode::kNotFound, "the model has 4 parameters but the Config names no parameter file");
  expect_error([] { oar_infer::CreatePredictor(oar_infer::Config()); }, ErrorCode::kInvalidArgument,
               "the Config names no model");
  // Parameters of another model.
  expect_error(
      [] {
        oar_infer::CreatePredictor(
            oar_infer::Config(fixture("mlp/model.pdmodel"), fixture("lenet/model.pdiparams")));
      },
      ErrorCode::kInvalidArgument, "model.pdiparams': pdiparams: variable 'linear_0.b_0'");
  // Devices.
  expect_error([] { oar_infer::CreatePredictor(fixture_config("mlp", "nosuchdev:0")); }, ErrorCode::kNotFound,
               "device 'nosuchdev:0' is not available");
  {
    oar_infer::Config c = fixture_config("mlp");
    c.EnableUseGpu(100, 0);  // no gpu plugin in this build
    expect_error([&] { oar_infer::CreatePredictor(c); }, ErrorCode::kNotFound,
                 "device 'gpu:0' is not available");
  }

  auto p = oar_infer::CreatePredictor(fixture_config("mlp"));
  // Unknown names.
  expect_error([&] { p->GetInputHandle("y"); }, ErrorCode::kNotFound,
               "'y' is not an input of the model (inputs: x)");
  expect_error([&] { p->GetOutputHandle("x"); }, ErrorCode::kNotFound, "'x' is not an output of the model");
  // Run before the inputs are set.
  expect_error([&] { p->Run(); }, ErrorCode::kPrecondition, "input 'x' has no data");
  auto in = p->GetInputHandle("x");
  auto out = p->GetOutputHandle(p->GetOutputNames()[0]);
  std::vector<float> y(6);
  expect_error([&] { out->CopyToCpu(y.data()); }, ErrorCode::kPrecondition,
               "it has no value (call Run first)");
  // CopyFromCpu before Reshape when the shape has an unknown extent.
  std::vector<float> x(8, 1.0f);
  expect_error([&] { in->CopyFromCpu(x.data()); }, ErrorCode::kPrecondition, "call Reshape first");
  // Shapes the program does not accept.
  expect_error([&] { in->Reshape({2, 5}); }, ErrorCode::kInvalidArgument, "the model declares [-1, 4]");
  expect_error([&] { in->Reshape({8}); }, ErrorCode::kInvalidArgument, "the model declares [-1, 4]");
  expect_error([&] { in->Reshape({-2, 4}); }, ErrorCode::kInvalidArgument, "extents must be >= 0");
  // The wrong element type.
  in->Reshape({2, 4});
  std::vector<int64_t> xi(8, 1);
  expect_error([&] { in->CopyFromCpu(xi.data()); }, ErrorCode::kType,
               "CopyFromCpu of INT64 data into input 'x' which is FLOAT32");
  std::vector<double> xd(8, 1.0);
  expect_error([&] { in->CopyFromCpu(xd.data()); }, ErrorCode::kType, "FLOAT64 data into input 'x'");
  in->CopyFromCpu(x.data());
  p->Run();
  std::vector<double> yd(6);
  expect_error([&] { out->CopyToCpu(yd.data()); }, ErrorCode::kType,
               "which is FLOAT32 into a FLOAT64 buffer");
  // Writing to an output.
  expect_error([&] { out->Reshape({1, 3}); }, ErrorCode::kPrecondition, "only inputs can be reshaped");
  expect_error([&] { out->CopyFromCpu(y.data()); }, ErrorCode::kPrecondition, "only inputs can be written");
  // Reshape to another shape drops the data copied in before.
  in->Reshape({3, 4});
  EXPECT_FALSE(in->has_data());
  expect_error([&] { p->Run(); }, ErrorCode::kPrecondition, "input 'x' has no data");
  // After all that, the predictor still works.
  std::vector<float> x3(12, 0.5f);
  in->CopyFromCpu(x3.data());
  EXPECT_TRUE(p->Run());
  EXPECT_EQ(out->shape(), (std::vector<int>{3, 3}));
}

// The oar extensions: an oar::Tensor in (no host copy on the same device), the output tensor out.
TEST(Predictor, OarTensorsInAndOut) {
  Npy in = read_npy(fixture("lenet/input.npy"));
  Npy out = read_npy(fixture("lenet/output.npy"));
  for (const char* dev : {"cpu", "sim:0"}) {
    auto p = oar_infer::CreatePredictor(fixture_config("lenet", dev));
    oar::Tensor x = oar::Tensor::from_vector(npy_floats(in), oar::Dims(in.shape), oar::DType::kFloat32);
    auto h = p->GetInputHandle("image");
    h->SetValue(x);
    EXPECT_EQ(h->shape(), (std::vector<int>{2, 1, 12, 12}));
    if (std::string(dev) == "cpu") {
      EXPECT_TRUE(h->value().shares_storage(x));
    }
    EXPECT_EQ(h->value().place().to_string(), dev);
    p->Run();
    oar::Tensor y = p->GetOutputHandle("linear_0.tmp_1")->value();
    ASSERT_TRUE(y.defined());
    EXPECT_EQ(y.place().to_string(), dev);
    expect_close(y.to_vector<float>(), out, std::string("value() on ") + dev);
    expect_error(
        [&] {
          h->SetValue(oar::Tensor::from_vector(std::vector<double>(144), oar::Dims{1, 1, 12, 12},
                                               oar::DType::kFloat64));
        },
        ErrorCode::kType, "SetValue of a FLOAT64 tensor as input 'image' which is FLOAT32");
    expect_error(
        [&] {
          h->SetValue(oar::Tensor::from_vector(std::vector<float>(100), oar::Dims{1, 1, 10, 10},
                                               oar::DType::kFloat32));
        },
        ErrorCode::kInvalidArgument, "the model declares [-1, 1, 12, 12]");
    expect_error([&] { p->GetOutputHandle("linear_0.tmp_1")->SetValue(x); }, ErrorCode::kPrecondition,
                 "only inputs can be written");
  }
}

// Two inputs of different dtypes and two outputs (fetch order differs from feed order), in a program
// built here and given as a buffer without parameters.
TEST(Predictor, SeveralInputsAndOutputs) {
  oar::ir::Program prog;
  oar::ir::Block& g = prog.global_block();
  auto var = [&](const std::string& n, oar::DType d, std::vector<int64_t> shape) {
    oar::ir::VarDesc v;
    v.name = n;
    v.dtype = d;
    v.shape = std::move(shape);
    g.add_var(v);
  };
  oar::ir::VarDesc feed, fetch;
  feed.name = "feed";
  feed.type = oar::ir::VarType::kFeedMinibatch;
  feed.persistable = true;
  fetch.name = "fetch";
  fetch.type = oar::ir::VarType::kFetchList;
  fetch.persistable = true;
  g.add_var(feed);
  g.add_var(fetch);
  var("x", oar::DType::kFloat32, {-1, 3});
  var("k", oar::DType::kInt64, {2, 2});
  var("y", oar::DType::kFloat32, {-1, 3});
  var("kk", oar::DType::kInt64, {2, 2});
  add_op(g, "feed", {{"X", {"feed"}}}, {{"Out", {"x"}}}, {{"col", int32_t{0}}});
  add_op(g, "feed", {{"X", {"feed"}}}, {{"Out", {"k"}}}, {{"col", int32_t{1}}});
  add_op(g, "scale", {{"X", {"x"}}}, {{"Out", {"y"}}},
         {{"scale", 2.0f}, {"bias", 1.0f}, {"bias_after_scale", true}});
  add_op(g, "elementwise_add", {{"X", {"k"}}, {"Y", {"k"}}}, {{"Out", {"kk"}}}, {{"axis", int32_t{-1}}});
  add_op(g, "fetch", {{"X", {"kk"}}}, {{"Out", {"fetch"}}}, {{"col", int32_t{0}}});
  add_op(g, "fetch", {{"X", {"y"}}}, {{"Out", {"fetch"}}}, {{"col", int32_t{1}}});
  std::string bytes = prog.serialize();

  for (const char* dev : {"cpu", "sim:0"}) {
    oar_infer::Config c;
    c.SetModelBuffer(bytes.data(), bytes.size(), nullptr, 0);
    c.SetDevice(dev);
    auto p = oar_infer::CreatePredictor(c);
    EXPECT_EQ(p->GetInputNames(), (std::vector<std::string>{"x", "k"}));
    EXPECT_EQ(p->GetOutputNames(), (std::vector<std::string>{"kk", "y"}));
    EXPECT_EQ(p->GetInputTypes().at("k"), oar_infer::DataType::INT64);
    auto hx = p->GetInputHandle("x");
    auto hk = p->GetInputHandle("k");
    hx->Reshape({1, 3});
    std::vector<float> x{1, 2, 3};
    hx->CopyFromCpu(x.data());
    expect_error([&] { p->Run(); }, ErrorCode::kPrecondition, "input 'k' has no data");
    std::vector<int64_t> k{1, -2, 3, int64_t{1} << 40};
    hk->CopyFromCpu(k.data());  // the declared shape [2, 2] is fixed: no Reshape needed
    ASSERT_TRUE(p->Run());
    auto hkk = p->GetOutputHandle("kk");
    EXPECT_EQ(hkk->type(), oar_infer::DataType::INT64);
    std::vector<int64_t> kk(4);
    hkk->CopyToCpu(kk.data());
    EXPECT_EQ(kk, (std::vector<int64_t>{2, -4, 6, int64_t{1} << 41})) << dev;
    std::vector<float> y(3);
    p->GetOutputHandle("y")->CopyToCpu(y.data());
    EXPECT_EQ(y, (std::vector<float>{3, 5, 7})) << dev;
    std::vector<float> wrong(4);
    expect_error([&] { hkk->CopyToCpu(wrong.data()); }, ErrorCode::kType,
                 "which is INT64 into a FLOAT32 buffer");
    expect_error([&] { hk->Reshape({4}); }, ErrorCode::kInvalidArgument, "the model declares [2, 2]");
  }
}

TEST(Predictor, IrOptimGivesTheSameOutputsWithFewerOps) {
  Npy in = read_npy(fixture("lenet/input.npy"));
  Npy out = read_npy(fixture("lenet/output.npy"));
  oar_infer::Config plain = fixture_config("lenet");
  plain.SwitchIrOptim(false);
  auto a = oar_infer::CreatePredictor(plain);
  auto b = oar_infer::CreatePredictor(fixture_config("lenet"));  // passes on (the default)
  expect_close(run_once(*a, in), out, "passes off");
  expect_close(run_once(*b, in), out, "passes on");
  // conv + batch_norm folding removed the batch_norm parameters.
  EXPECT_TRUE(a->GetVariable("batch_norm2d_0.b_0").defined());
  EXPECT_FALSE(b->GetVariable("batch_norm2d_0.b_0").defined());
}
