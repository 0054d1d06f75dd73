// The fused recurrent op `rnn` (Paddle's name and attributes) and its gradient op `rnn_grad`: what
// oar.nn.LSTM / GRU / SimpleRNN run when their configuration allows (docs/nn_rnn_transformer.md).
//
// rnn is variadic; its inputs, in order:
//   x [T, B, I] (time major), h0 [L * D, B, H], c0 [L * D, B, H] (read by LSTM only, still passed),
//   then Paddle's WeightList: W_ih [G * H, in], W_hh [G * H, H] for every (layer l, direction d) in the
//   order l * D + d, then b_ih, b_hh [G * H] in the same order; optionally sequence_length [B] (int32
//   or int64) last.
// Outputs: out [T, B, D * H], h [L * D, B, H], c [L * D, B, H] (LSTM's cell state; zeros otherwise) and
// reserve (uint8, 1-D): what a kernel keeps for the backward when is_test is 0 (Paddle's Reserve; its
// size and contents are the kernel's, set with resize_output; empty when it keeps nothing).
// Gate blocks: LSTM i, f, g, o; GRU r, z, c with the candidate tanh(x_c + r * (W_hc h + b_hc)).
// Steps at or past a sequence's length keep its state and output zeros; the reverse direction starts at
// each sequence's own last step. The op applies no dropout: the layer runs one op per layer with
// dropout between them when it trains with dropout (is_test / dropout_prob are Paddle's, kept for
// export).
//
// rnn_grad: rnn's inputs, then reserve, dout, dh, dc; outputs dx, dh0, dc0 and dw, every weight's
// gradient flattened and concatenated in WeightList order (an op has at most kMaxOpOutputs outputs). A
// kernel that finds no usable reserve recomputes the forward.
#include <oar/core/dispatch.h>
#include <oar/core/error.h>

#include <string>

#include "grad_util.h"
#include "op_samples.h"
#include "op_util.h"

namespace oar {

void register_rnn_ops(OpRegistry& r);  // called from op_defs.cc
void register_rnn_grads(OpRegistry& r);
void register_rnn_samples(OpRegistry& r);  // called from op_samples.cc

namespace {
using namespace opdef;
using namespace gradutil;

// The inputs' layout from the attributes.
struct RnnGeom {
  int64_t gates, hidden, layers, dirs, cells;
  int32_t n_weights;
  bool has_lengths;
};

RnnGeom rnn_geom(const InferContext& c, int32_t n_in) {
  const std::string& m = c.attrs->get_string("mode");
  RnnGeom g;
  if (m == "LSTM")
    g.gates = 4;
  else if (m == "GRU")
    g.gates = 3;
  else if (m == "RNN_TANH" || m == "RNN_RELU")
    g.gates = 1;
  else
    OAR_THROW(ErrorCode::kInvalidArgument,
              op_name(c) << ": mode '" << m << "' is not one of LSTM, GRU, RNN_TANH, RNN_RELU");
  g.hidden = c.attrs->get_int("hidden_size");
  g.layers = c.attrs->get_int("num_layers");
  g.dirs = c.attrs->get_int("is_bidirec") ? 2 : 1;
  OAR_ENFORCE(
      g.hidden > 0 && g.layers > 0, ErrorCode::kInvalidArgument,
      op_name(c) << ": hidden_size " << g.hidden << " and num_layers " << g.layers << " must be positive");
  g.cells = g.layers * g.dirs;
  // The gradient rule saves inputs by a 32-bit mask: 3 + 4 * cells (+ 1) inputs must fit.
  OAR_ENFORCE(g.cells <= 7, ErrorCode::kInvalidArgument,
              op_name(c) << ": at most 7 (layer, direction) pairs per op, got num_layers " << g.layers
                         << " x " << g.dirs << " directions (the layers run bigger stacks one op per layer)");
  g.n_weights = static_cast<int32_t>(4 * g.cells);
  OAR_ENFORCE(n_in == 3 + g.n_weights || n_in == 4 + g.n_weights, ErrorCode::kInvalidArgument,
              op_name(c) << ": expected " << 3 + g.n_weights << " inputs (x, h0, c0, " << g.n_weights
                         << " weights) or one more (sequence_length), got " << n_in);
  g.has_lengths = n_in == 4 + g.n_weights;
  return g;
}

// Checks rnn's own inputs (the first 3 + n_weights (+1) of c) and returns their geometry.
RnnGeom check_rnn_inputs(const InferContext& c, int32_t n_in) {
  RnnGeom g = rnn_geom(c, n_in);
  const Dims& x = c.inputs[0].dims;
  const DType dt = c.inputs[0].dtype;
  OAR_ENFORCE(dt == DType::kFloat32 || dt == DType::kFloat64, ErrorCode::kType,
              op_name(c) << ": x.dtype must be float32 or float64, got " << dtype_name(dt));
  OAR_ENFORCE(x.size() == 3, ErrorCode::kInvalidArgument,
              op_name(c) << ": x must be 3-D [time, batch, input_size], got shape " << x.to_string());
  const int64_t B = x[1], H = g.hidden, GH = g.gates * H;
  const Dims state{g.cells, B, H};
  for (int i = 1; i < 3 + g.n_weights; ++i)
    OAR_ENFORCE(c.inputs[i].dtype == dt, ErrorCode::kType,
                op_name(c) << ": " << input_name(c, i) << ".dtype " << dtype_name(c.inputs[i].dtype)
                           << " differs from x.dtype " << dtype_name(dt));
  for (int i = 1; i < 3; ++i)
    OAR_ENFORCE(c.inputs[i].dims == state, ErrorCode::kInvalidArgument,
                op_name(c) << ": " << (i == 1 ? "h0" : "c0") << " must be " << state.to_string() << ", got "
                           << c.inputs[i].dims.to_string());
  for (int64_t k = 0; k < g.cells; ++k) {
    const int64_t in = k < g.dirs ? x[2] : g.dirs * H;
    const Dims want[4] = {Dims{GH, in}, Dims{GH, H}, Dims{GH}, Dims{GH}};
    const int idx[4] = {static_cast<int>(3 + 2 * k), static_cast<int>(4 + 2 * k),
                        static_cast<int>(3 + 2 * g.cells + 2 * k), static_cast<int>(4 + 2 * g.cells + 2 * k)};
    const char* names[4] = {"weight_ih", "weight_hh", "bias_ih", "bias_hh"};
    for (int j = 0; j < 4; ++j)
      OAR_ENFORCE(c.inputs[idx[j]].dims == want[j], ErrorCode::kInvalidArgument,
                  op_name(c) << ": " << names[j] << " of layer " << k / g.dirs << " direction " << k % g.dirs
                             << " must be " << want[j].to_string() << ", got "
                             << c.inputs[idx[j]].dims.to_string());
  }
  if (g.has_lengths) {
    const TensorMeta& l = c.inputs[3 + g.n_weights];
    OAR_ENFORCE(l.dtype == DType::kInt32 || l.dtype == DType::kInt64, ErrorCode::kType,
                op_name(c) << ": sequence_length.dtype must be int32 or int64, got " << dtype_name(l.dtype));
    OAR_ENFORCE(
        l.dims == Dims({B}), ErrorCode::kInvalidArgument,
        op_name(c) << ": sequence_length must be [batch] = [" << B << "], got " << l.dims.to_string());
  }
  return g;
}

void infer_rnn(InferContext& c) {
  RnnGeom g = check_rnn_inputs(c, c.num_inputs);
  OAR_ENFORCE(g.layers == 1 || c.attrs->get_float("dropout_prob") == 0 || c.attrs->get_int("is_test"),
              ErrorCode::kUnimplemented,
              op_name(c) << ": dropout between layers in training is not part of the op (dropout_prob "
                         << c.attrs->get_float("dropout_prob")
                         << "); run one op per layer with dropout between them");
  const Dims& x = c.inputs[0].dims;
  const DType dt = c.inputs[0].dtype;
  c.outputs[0] = {dt, Dims{x[0], x[1], g.dirs * g.hidden}};
  c.outputs[1] = c.inputs[1];
  c.outputs[2] = c.inputs[1];
  c.outputs[3] = {DType::kUInt8, Dims{0}};
}

void infer_rnn_grad(InferContext& c) {
  const int32_t n = c.num_inputs - 4;
  RnnGeom g = check_rnn_inputs(c, n);
  OAR_ENFORCE(c.inputs[n].dtype == DType::kUInt8 && c.inputs[n].dims.size() == 1, ErrorCode::kInvalidArgument,
              op_name(c) << ": reserve must be a 1-D uint8 tensor (rnn's fourth output)");
  const Dims& x = c.inputs[0].dims;
  const Dims want[3] = {Dims{x[0], x[1], g.dirs * g.hidden}, c.inputs[1].dims, c.inputs[1].dims};
  for (int j = 0; j < 3; ++j)
    OAR_ENFORCE(c.inputs[n + 1 + j].dims == want[j] && c.inputs[n + 1 + j].dtype == c.inputs[0].dtype,
                ErrorCode::kInvalidArgument,
                op_name(c) << ": gradient " << j << " must be " << want[j].to_string() << ", got "
                           << c.inputs[n + 1 + j].dims.to_string());
  int64_t total = 0;
  for (int i = 3; i < 3 + g.n_weights; ++i) total += c.inputs[i].dims.numel();
  c.outputs[0] = c.inputs[0];
  c.outputs[1] = c.inputs[1];
  c.outputs[2] = c.inputs[1];
  c.outputs[3] = {c.inputs[0].dtype, Dims{total}};
}

std::vector<AttrDef> rnn_attrs() {
  return {{"mode", AttrType::kString, false, std::string("LSTM")},
          req_int("hidden_size"),
          int_attr("num_layers", 1),
          int_attr("is_bidirec", 0),
          float_attr("dropout_prob", 0.0),
          int_attr("is_test", 0)};
}

// One call of rnn_grad gives every input's gradient; missing output gradients are zeros.
std::vector<Tensor> rnn_grad_rule(const GradContext& c) {
  std::vector<Tensor> ins(c.inputs.begin(), c.inputs.end());
  ins.push_back(c.outputs[3]);
  for (size_t i = 0; i < 3; ++i) {
    const Tensor& g = c.grad_outputs[i];
    ins.push_back(
        g.defined() ? g : ops::zeros(c.output_meta[i].dims, c.output_meta[i].dtype, c.inputs[0].place()));
  }
  std::vector<Tensor> r = call_op(OAR_OP("rnn_grad"), ins, c.attrs);
  const size_t n = c.inputs.size();
  std::vector<Tensor> grads(n);
  grads[0] = r[0];
  grads[1] = r[1];
  grads[2] = r[2];
  const size_t n_w = (n - 3) / 4 * 4;  // without sequence_length
  int64_t off = 0;
  for (size_t i = 3; i < 3 + n_w; ++i) {
    const Dims& d = in_dims(c, static_cast<int>(i));
    const int64_t k = d.numel();
    if (c.needs_grad[i]) grads[i] = r[3].slice(0, off, off + k).reshape(d);
    off += k;
  }
  return grads;
}

}  // namespace

void register_rnn_ops(OpRegistry& r) {
  def(r, "rnn", {"x"}, rnn_attrs(), infer_rnn, 0, true).outputs = {"out", "h", "c", "reserve"};
  OpDef& g = def(r, "rnn_grad", {"x"}, rnn_attrs(), infer_rnn_grad, 0, true);
  g.outputs = {"dx", "dh0", "dc0", "dw"};
}

void register_rnn_grads(OpRegistry& r) { set_grad(r, "rnn", rnn_grad_rule, ~0u, true); }

void register_rnn_samples(OpRegistry& r) {
  using namespace sample;
  // x [T=3, B=2, I=3], H = 2; weights per (layer, direction).
  auto inputs = [](int64_t gates, int64_t layers, int64_t dirs, bool lengths) {
    const int64_t T = 3, B = 2, I = 3, H = 2, GH = gates * H, cells = layers * dirs;
    std::vector<SampleInput> in{real({T, B, I}, -1, 1), real({cells, B, H}, -1, 1),
                                real({cells, B, H}, -1, 1)};
    for (int64_t k = 0; k < cells; ++k) {
      in.push_back(real({GH, k < dirs ? I : dirs * H}, -0.8, 0.8));
      in.push_back(real({GH, H}, -0.8, 0.8));
    }
    for (int64_t k = 0; k < 2 * cells; ++k) in.push_back(real({GH}, -0.5, 0.5));
    if (lengths) in.push_back(index({B}, 0, T));
    return in;
  };
  auto attrs = [](const char* mode, int64_t layers, int64_t dirs) {
    return AttrList{{"mode", std::string(mode)},
                    {"hidden_size", int64_t{2}},
                    {"num_layers", layers},
                    {"is_bidirec", int64_t{dirs - 1}}};
  };
  std::vector<OpSample> s;
  s.push_back(S("lstm", inputs(4, 1, 1, false), attrs("LSTM", 1, 1)));
  s.push_back(S("lstm 2 layers bidirectional", inputs(4, 2, 2, false), attrs("LSTM", 2, 2)));
  s.push_back(S("lstm lengths bidirectional", inputs(4, 1, 2, true), attrs("LSTM", 1, 2)));
  s.push_back(S("gru 2 layers", inputs(3, 2, 1, false), attrs("GRU", 2, 1)));
  s.push_back(S("gru lengths bidirectional", inputs(3, 1, 2, true), attrs("GRU", 1, 2)));
  s.push_back(S("rnn tanh bidirectional", inputs(1, 1, 2, false), attrs("RNN_TANH", 1, 2)));
  s.push_back(S("rnn tanh lengths", inputs(1, 2, 1, true), attrs("RNN_TANH", 2, 1)));
  OpSample relu = S("rnn relu", inputs(1, 1, 1, false), attrs("RNN_RELU", 1, 1));
  relu.smooth = false;  // relu's kink
  s.push_back(relu);
  add(r, "rnn", s);
  // rnn_grad: its values against float64 (its own gradient is not defined).
  std::vector<SampleInput> gi = inputs(4, 1, 2, true);
  gi.push_back(fixed(integer({0}, 0, 1), DType::kUInt8));  // no reserve: the kernel recomputes
  gi.push_back(real({3, 2, 4}, -1, 1));
  gi.push_back(real({2, 2, 2}, -1, 1));
  gi.push_back(real({2, 2, 2}, -1, 1));
  add(r, "rnn_grad", {S("lstm lengths bidirectional", gi, attrs("LSTM", 1, 2))});
}

}  // namespace oar
