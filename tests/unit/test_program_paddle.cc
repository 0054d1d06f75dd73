// Files written by the real PaddlePaddle (tests/fixtures/paddle, made by make_fixtures.py with
// PaddlePaddle 3.3 writing the legacy ProgramDesc): parsed, checked against Paddle's own values, and
// written back byte for byte.
#include <gtest/gtest.h>
#include <oar/core/error.h>
#include <oar/ir/op_version.h>
#include <oar/ir/params.h>
#include <oar/ir/program.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>

#include "program_test_util.h"

using namespace oar;
using namespace oar::ir;

namespace {

// -1 when equal, else the first differing offset (printing whole files on failure is unreadable).
long first_diff(const std::string& a, const std::string& b) {
  size_t n = std::min(a.size(), b.size());
  for (size_t i = 0; i < n; ++i)
    if (a[i] != b[i]) return static_cast<long>(i);
  return a.size() == b.size() ? -1 : static_cast<long>(n);
}

std::vector<std::string> op_types(const Program& p) {
  std::vector<std::string> out;
  for (auto& op : p.global_block().ops()) out.push_back(op.type);
  return out;
}

// Every persistable variable's value equals Paddle's reference .npy, and our writer reproduces the file.
void check_params(const std::string& model, const Program& p, size_t expected_count) {
  std::string bytes = read_all(fixture(model + "/model.pdiparams"));
  auto params = load_combined_params(p, bytes);
  ASSERT_EQ(params.size(), expected_count);
  for (auto& [name, t] : params) {
    Npy ref = read_npy(fixture(model + "/params/" + name + ".npy"));
    EXPECT_EQ(ref.descr, "<f4") << name;
    EXPECT_EQ(t.dtype, DType::kFloat32) << name;
    EXPECT_EQ(t.dims, ref.shape) << name;
    ASSERT_EQ(t.data.size(), ref.data.size()) << name;
    EXPECT_EQ(std::memcmp(t.data.data(), ref.data.data(), ref.data.size()), 0) << name;
    const VarDesc* v = p.global_block().find_var(name);
    ASSERT_NE(v, nullptr);
    EXPECT_EQ(v->shape, t.dims) << name;
  }
  EXPECT_EQ(first_diff(save_combined_params(params), bytes), -1) << model;
  EXPECT_EQ(load_combined_params_file(p, fixture(model + "/model.pdiparams")), params);
}

}  // namespace

TEST(PaddleFiles, MlpFromJitSave) {
  Program p = Program::load(fixture("mlp/model.pdmodel"));
  EXPECT_EQ(p.num_blocks(), 1);
  EXPECT_EQ(p.version(), 3003001);
  EXPECT_TRUE(p.has_op_version_map());
  EXPECT_EQ(p.op_version("elementwise_add"), 1);
  EXPECT_EQ(op_types(p), (std::vector<std::string>{"feed", "matmul_v2", "elementwise_add", "relu",
                                                   "matmul_v2", "elementwise_add", "softmax", "fetch"}));
  const Block& g = p.global_block();
  const VarDesc* x = g.find_var("x");
  ASSERT_NE(x, nullptr);
  EXPECT_EQ(x->shape, (std::vector<int64_t>{-1, 4}));
  EXPECT_EQ(x->dtype, DType::kFloat32);
  EXPECT_FALSE(x->persistable);
  const VarDesc* w = g.find_var("linear_0.w_0");
  ASSERT_NE(w, nullptr);
  EXPECT_EQ(w->shape, (std::vector<int64_t>{4, 8}));
  EXPECT_TRUE(w->persistable);
  EXPECT_EQ(g.find_var("feed")->type, VarType::kFeedMinibatch);
  EXPECT_EQ(g.find_var("fetch")->type, VarType::kFetchList);
  const OpDesc& mm = g.ops()[1];
  EXPECT_EQ(mm.input("X"), std::vector<std::string>{"x"});
  EXPECT_EQ(mm.input("Y"), std::vector<std::string>{"linear_0.w_0"});
  EXPECT_EQ(mm.attr<bool>("trans_x"), false);
  EXPECT_EQ(g.ops()[2].attr<int32_t>("axis"), -1);
  EXPECT_EQ(g.ops()[0].attr<int32_t>("col"), 0);
  EXPECT_NO_THROW(check_op_versions(p, /*require_known_ops=*/true));
  // Byte-identical re-serialization: same fields, same presence, same order.
  EXPECT_EQ(first_diff(p.serialize(), read_all(fixture("mlp/model.pdmodel"))), -1);
  EXPECT_EQ(Program::parse(p.serialize()), p);
  EXPECT_NE(p.to_string().find("{Out=['linear_0.tmp_0']} = matmul_v2(inputs={X=['x'], Y=['linear_0.w_0']}"),
            std::string::npos)
      << p.to_string();
  check_params("mlp", p, 4);

  auto info = parse_params_info(read_all(fixture("mlp/model.pdiparams.info")));
  ASSERT_EQ(info.size(), 4u);
  EXPECT_EQ(info["linear_0.w_0"].structured_name, "fc1.weight");
  EXPECT_EQ(info["linear_1.b_0"].structured_name, "fc2.bias");
  EXPECT_TRUE(info["linear_1.b_0"].trainable);
  EXPECT_FALSE(info["linear_1.b_0"].stop_gradient);
  EXPECT_EQ(serialize_params_info(info), read_all(fixture("mlp/model.pdiparams.info")));
}

TEST(PaddleFiles, LeNetFromJitSave) {
  Program p = Program::load(fixture("lenet/model.pdmodel"));
  EXPECT_EQ(op_types(p),
            (std::vector<std::string>{"feed", "conv2d", "reshape2", "elementwise_add", "batch_norm", "relu",
                                      "pool2d", "conv2d", "reshape2", "elementwise_add", "relu", "pool2d",
                                      "flatten_contiguous_range", "matmul_v2", "elementwise_add", "fetch"}));
  const Block& g = p.global_block();
  EXPECT_EQ(g.find_var("image")->shape, (std::vector<int64_t>{-1, 1, 12, 12}));
  EXPECT_EQ(g.find_var("conv2d_0.w_0")->shape, (std::vector<int64_t>{2, 1, 3, 3}));
  EXPECT_EQ(g.find_var("flatten_0.tmp_1")->shape, (std::vector<int64_t>{0, -1, 4, 2, 2}));
  const OpDesc& conv = g.ops()[1];
  EXPECT_EQ(conv.attr<std::vector<int32_t>>("strides"), (std::vector<int32_t>{1, 1}));
  EXPECT_EQ(conv.attr<std::vector<int32_t>>("paddings"), (std::vector<int32_t>{1, 1}));
  EXPECT_EQ(conv.attr<int32_t>("groups"), 1);
  EXPECT_EQ(conv.attr<std::string>("data_format"), "NCHW");
  const OpDesc& bn = g.ops()[4];
  EXPECT_EQ(bn.input("Mean"), std::vector<std::string>{"batch_norm2d_0.w_1"});
  EXPECT_TRUE(bn.input("MomentumTensor").empty());
  EXPECT_FLOAT_EQ(bn.attr<float>("epsilon"), 1e-5f);
  EXPECT_EQ(g.ops()[6].attr<std::string>("pooling_type"), "max");
  EXPECT_EQ(g.ops()[11].attr<std::string>("pooling_type"), "avg");
  EXPECT_EQ(g.ops()[12].attr<int32_t>("start_axis"), 1);
  EXPECT_NO_THROW(check_op_versions(p, true));
  EXPECT_EQ(first_diff(p.serialize(), read_all(fixture("lenet/model.pdmodel"))), -1);
  check_params("lenet", p, 10);
  auto info = parse_params_info(read_all(fixture("lenet/model.pdiparams.info")));
  EXPECT_EQ(info["batch_norm2d_0.w_1"].structured_name, "bn1._mean");
  EXPECT_TRUE(info["batch_norm2d_0.w_1"].stop_gradient);
  EXPECT_FALSE(info["batch_norm2d_0.w_1"].trainable);
  EXPECT_EQ(serialize_params_info(info), read_all(fixture("lenet/model.pdiparams.info")));
  // The reference statistics made it through: running mean [0.1, -0.2].
  auto params = load_combined_params(p, read_all(fixture("lenet/model.pdiparams")));
  EXPECT_FLOAT_EQ(params["batch_norm2d_0.w_1"].data_as<float>()[1], -0.2f);
}

TEST(PaddleFiles, StaticSaveInferenceModel) {
  Program p = Program::load(fixture("static_mlp/model.pdmodel"));
  EXPECT_EQ(op_types(p), (std::vector<std::string>{"feed", "mul", "elementwise_add", "tanh", "mul",
                                                   "elementwise_add", "sigmoid", "scale", "fetch"}));
  EXPECT_TRUE(p.global_block().find_var("x")->need_check_feed);
  EXPECT_FLOAT_EQ(p.global_block().ops()[7].attr<float>("scale"), 2.0f);
  EXPECT_FLOAT_EQ(p.global_block().ops()[7].attr<float>("bias"), 0.5f);
  EXPECT_EQ(first_diff(p.serialize(), read_all(fixture("static_mlp/model.pdmodel"))), -1);
  check_params("static_mlp", p, 4);
}

// The `rnn` op fixtures: the op's slots and attributes as Paddle wrote them (WeightList: all weights, then
// all biases), parameters equal to their .npy, and the files re-serialized byte for byte.
TEST(PaddleFiles, RnnOpFixtures) {
  for (auto [model, count] :
       {std::pair<const char*, size_t>{"lstm", 18}, {"gru_rnn", 16}, {"rnn_seqlen", 14}}) {
    Program p = Program::load(fixture(std::string(model) + "/model.pdmodel"));
    int rnns = 0;
    for (const OpDesc& op : p.global_block().ops()) {
      if (op.type != "rnn") continue;
      ++rnns;
      const std::vector<std::string>& w = op.input("WeightList");
      ASSERT_EQ(w.size() % 4, 0u) << model;
      for (size_t i = 0; i < w.size(); ++i)  // e.g. lstm_cell_0.w_0 ... then lstm_cell_0.b_0 ...
        EXPECT_NE(w[i].find(i < w.size() / 2 ? ".w_" : ".b_"), std::string::npos) << model << " " << w[i];
      EXPECT_EQ(op.input("SequenceLength").size(), std::string(model) == "rnn_seqlen" ? 1u : 0u) << model;
      EXPECT_NE(op.find_attr("mode"), nullptr);
      EXPECT_NE(op.find_attr("hidden_size"), nullptr);
    }
    EXPECT_EQ(rnns, std::string(model) == "lstm" ? 1 : std::string(model) == "gru_rnn" ? 3 : 2) << model;
    EXPECT_EQ(first_diff(p.serialize(), read_all(fixture(std::string(model) + "/model.pdmodel"))), -1)
        << model;
    check_params(model, p, count);
  }
}

TEST(PaddleFiles, WhileLoopSubBlock) {
  std::string bytes = read_all(fixture("while_loop/model.pdmodel"));
  Program p = Program::parse(bytes);
  ASSERT_EQ(p.num_blocks(), 2);
  EXPECT_EQ(p.block(1).parent_idx(), 0);
  EXPECT_EQ(op_types(p), (std::vector<std::string>{"feed", "fill_constant", "fill_constant", "less_than",
                                                   "while", "scale", "fetch"}));
  const OpDesc& w = p.global_block().ops()[4];
  EXPECT_EQ(w.attr<BlockRef>("sub_block").idx, 1);
  EXPECT_EQ(w.input("Condition"), std::vector<std::string>{"less_than_0.tmp_0"});
  EXPECT_EQ(p.global_block().find_var("_generated_var_0")->type, VarType::kStepScopes);
  // The loop body reads the parent block's variables.
  const OpDesc& body0 = p.block(1).ops()[0];
  EXPECT_EQ(body0.type, "scale");
  EXPECT_EQ(p.block(1).find_var(body0.input("X")[0]), nullptr);
  EXPECT_NE(p.find_var_recursive(1, body0.input("X")[0]), nullptr);
  EXPECT_NE(p.to_string().find("{ // block_idx:1  parent_idx:0"), std::string::npos);
  EXPECT_TRUE(combined_param_names(p).empty());
  EXPECT_EQ(first_diff(p.serialize(), bytes), -1);
  // Tampering with the block structure is refused.
  Program bad = p;
  bad.global_block().mutable_ops()[4].set_attr("sub_block", BlockRef{0});
  EXPECT_THROW(Program::parse(bad.serialize()), Error);
  bad = p;
  bad.global_block().mutable_ops()[4].set_attr("sub_block", BlockRef{2});
  EXPECT_THROW(Program::parse(bad.serialize()), Error);
}

TEST(PaddleFiles, WrittenByOarReadBack) {
  // A program edited and saved by oar, then loaded again.
  Program p = Program::load(fixture("mlp/model.pdmodel"));
  auto tmp = std::filesystem::temp_directory_path() / ("oar_ir_test_" + std::to_string(::getpid()));
  std::filesystem::create_directories(tmp);
  p.global_block().find_var("x")->shape = {-1, 4};
  p.save((tmp / "m.pdmodel").string());
  auto params = load_combined_params(p, read_all(fixture("mlp/model.pdiparams")));
  write_file_bytes((tmp / "m.pdiparams").string(), save_combined_params(params));
  Program q = Program::load((tmp / "m.pdmodel").string());
  EXPECT_EQ(p, q);
  EXPECT_EQ(load_combined_params_file(q, (tmp / "m.pdiparams").string()), params);
  std::filesystem::remove_all(tmp);
  try {
    Program::load((tmp / "missing.pdmodel").string());
    ADD_FAILURE();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kNotFound);
  }
}

TEST(PaddleFiles, TruncatedAndCorruptRealFiles) {
  std::string model = read_all(fixture("mlp/model.pdmodel"));
  Program p = Program::parse(model);
  std::string params = read_all(fixture("mlp/model.pdiparams"));
  for (size_t n = 0; n < params.size(); ++n) {
    try {
      load_combined_params(p, params.substr(0, n));
      ADD_FAILURE() << "prefix " << n << " accepted";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument) << e.what();
    }
  }
  // Every prefix of the model: an error or, rarely (a cut between two top-level fields), a program.
  for (size_t n = 0; n < model.size(); ++n) {
    try {
      Program::parse(model.data(), n);
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument) << e.what();
    }
  }
  for (size_t i = 0; i < params.size(); ++i) {
    std::string c = params;
    c[i] = static_cast<char>(c[i] ^ 0x5a);
    try {
      load_combined_params(p, c);
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument) << e.what();
    }
  }
}

// ---- the other direction: a model built and written by oar, for PaddlePaddle to load ---------------

namespace {

VarDesc tensor_var(const std::string& name, std::vector<int64_t> shape, bool persistable = false) {
  VarDesc v;
  v.name = name;
  v.shape = std::move(shape);
  v.persistable = persistable;
  return v;
}

// sin(0.3 * i + dims[0]) for element i: check_oar_written.py recomputes the same values.
TensorData pattern(std::vector<int64_t> dims) {
  TensorData t;
  t.dims = dims;
  t.data.resize(static_cast<size_t>(t.numel() * 4));
  float* f = reinterpret_cast<float*>(t.data.data());
  for (int64_t i = 0; i < t.numel(); ++i) f[i] = static_cast<float>(std::sin(0.3 * i + dims[0]));
  return t;
}

// y = relu(x @ w + b) with x: [-1, 4], w: [4, 3], b: [3], built op by op as a static-graph front end will.
Program build_mlp() {
  Program p;
  Block& g = p.global_block();
  VarDesc feed;
  feed.name = kFeedVarName;
  feed.type = VarType::kFeedMinibatch;
  feed.persistable = true;
  g.add_var(feed);
  VarDesc fetch = feed;
  fetch.name = kFetchVarName;
  fetch.type = VarType::kFetchList;
  g.add_var(fetch);
  g.add_var(tensor_var("x", {-1, 4}));
  g.add_var(tensor_var("w", {4, 3}, true));
  g.add_var(tensor_var("b", {3}, true));
  g.add_var(tensor_var("h", {-1, 3}));
  g.add_var(tensor_var("hb", {-1, 3}));
  g.add_var(tensor_var("y", {-1, 3}));
  OpDesc f;
  f.type = "feed";
  f.set_input("X", {kFeedVarName});
  f.set_output("Out", {"x"});
  f.set_attr("col", int32_t{0});
  g.append_op(f);
  OpDesc mm;
  mm.type = "matmul_v2";
  mm.set_input("X", {"x"});
  mm.set_input("Y", {"w"});
  mm.set_output("Out", {"h"});
  mm.set_attr("trans_x", false);
  mm.set_attr("trans_y", false);
  g.append_op(mm);
  OpDesc add;
  add.type = "elementwise_add";
  add.set_input("X", {"h"});
  add.set_input("Y", {"b"});
  add.set_output("Out", {"hb"});
  add.set_attr("axis", int32_t{-1});
  g.append_op(add);
  OpDesc relu;
  relu.type = "relu";
  relu.set_input("X", {"hb"});
  relu.set_output("Out", {"y"});
  g.append_op(relu);
  OpDesc ft;
  ft.type = "fetch";
  ft.set_input("X", {"y"});
  ft.set_output("Out", {kFetchVarName});
  ft.set_attr("col", int32_t{0});
  g.append_op(ft);
  fill_op_version_map(&p);
  return p;
}

}  // namespace

TEST(PaddleFiles, OarBuiltModel) {
  Program p = build_mlp();
  std::map<std::string, TensorData> params{{"w", pattern({4, 3})}, {"b", pattern({3})}};
  std::map<std::string, ParamInfo> info{{"w", {"fc.weight", false, true}}, {"b", {"fc.bias", false, true}}};
  Program q = Program::parse(p.serialize());
  EXPECT_EQ(p, q);
  EXPECT_EQ(load_combined_params(q, save_combined_params(params)), params);
  // With OAR_IR_EXPORT_DIR set, write the model for tests/fixtures/paddle/check_oar_written.py, which
  // loads it with PaddlePaddle and runs it.
  const char* dir = std::getenv("OAR_IR_EXPORT_DIR");
  if (dir == nullptr) GTEST_SKIP() << "OAR_IR_EXPORT_DIR not set: not exporting the model for PaddlePaddle";
  std::string base = std::string(dir) + "/oar_mlp";
  p.save(base + ".pdmodel");
  write_file_bytes(base + ".pdiparams", save_combined_params(params));
  write_file_bytes(base + ".pdiparams.info", serialize_params_info(info));
}
