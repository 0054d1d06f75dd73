// The shared pieces of the ops' sample declarations (op_samples.h); the samples themselves live next
// to each op's definition.
#include "op_samples.h"

#include <oar/core/error.h>

#include <cmath>
#include <type_traits>

namespace oar {

void register_sparse_samples(OpRegistry& r);  // ops_sparse.cc

static_assert(std::is_same_v<SampleAttrValue, AttrValue>,
              "SampleAttrValue must list AttrValue's alternatives");

void register_vision_samples(OpRegistry& r);  // ops_vision.cc
void register_rnn_samples(OpRegistry& r);     // ops_rnn.cc

void register_builtin_samples(OpRegistry& r) {
  register_foundation_samples(r);
  register_math_samples(r);
  register_manip_samples(r);
  register_conv_samples(r);
  register_nn_samples(r);
  register_linalg_samples(r);
  register_random_samples(r);
  register_fft_samples(r);
  register_optim_samples(r);
  register_scan_samples(r);
  register_vision_samples(r);
  register_sparse_samples(r);
  register_complex_samples(r);
  register_rnn_samples(r);
}

namespace sample {

void add(OpRegistry& r, const char* op, std::vector<OpSample> samples) {
  // The registry owns its definitions; samples are attached while it is being built, before any lookup
  // from another thread, so writing through the const lookup is safe here.
  OpDef& def = r.get_mutable(op);
  for (auto& s : samples) def.samples.push_back(std::move(s));
}
void add(OpRegistry& r, std::initializer_list<const char*> ops, const std::vector<OpSample>& samples) {
  for (const char* op : ops) add(r, op, samples);
}

SampleInput real(Shape shape, double lo, double hi) {
  SampleInput in;
  in.shape = std::move(shape);
  in.lo = lo;
  in.hi = hi;
  return in;
}
namespace {
SampleInput of_kind(SampleInput in, SampleKind k) {
  in.kind = k;
  return in;
}
}  // namespace
SampleInput integer(Shape shape, double lo, double hi) {
  return of_kind(real(std::move(shape), lo, hi), SampleKind::kInteger);
}
SampleInput nonzero(Shape shape, double lo, double hi) {
  return of_kind(real(std::move(shape), lo, hi), SampleKind::kNonZero);
}
SampleInput halves(Shape shape, double lo, double hi) {
  return of_kind(real(std::move(shape), lo, hi), SampleKind::kHalves);
}
SampleInput spd(Shape shape) { return of_kind(real(std::move(shape), -1, 1), SampleKind::kSpd); }
SampleInput triangular(Shape shape) {
  return of_kind(real(std::move(shape), -1, 1), SampleKind::kTriangular);
}
SampleInput index(Shape shape, int64_t lo, int64_t hi, DType d) {
  return fixed(integer(std::move(shape), static_cast<double>(lo), static_cast<double>(hi)), d);
}
SampleInput unique_index(Shape shape, int64_t lo, int64_t hi, DType d) {
  return of_kind(index(std::move(shape), lo, hi, d), SampleKind::kUnique);
}
SampleInput mask(Shape shape) { return fixed(integer(std::move(shape), 0, 1), DType::kBool); }
SampleInput fixed(SampleInput in, DType d) {
  in.dtype = static_cast<int32_t>(d);
  return in;
}
SampleInput transposed(SampleInput in) {
  OAR_ENFORCE(in.shape.size() >= 2, ErrorCode::kInternal, "a transposed sample input needs rank >= 2");
  in.view = SampleView::kTranspose;
  return in;
}
SampleInput flipped(SampleInput in) {
  OAR_ENFORCE(!in.shape.empty(), ErrorCode::kInternal, "a flipped sample input needs rank >= 1");
  in.view = SampleView::kFlip;
  return in;
}
SampleInput expanded(SampleInput in, Shape from) {
  in.view = SampleView::kExpand;
  in.expand_from = std::move(from);
  return in;
}
SampleInput with_specials(SampleInput in) {
  in.specials = true;
  return in;
}
SampleInput with_zeros(SampleInput in) {
  in.zeros = true;
  return in;
}

std::vector<DType> floats() { return {DType::kFloat16, DType::kBFloat16, DType::kFloat32, DType::kFloat64}; }
std::vector<DType> ints() {
  return {DType::kUInt8, DType::kInt8, DType::kInt16, DType::kInt32, DType::kInt64};
}

OpSample S(std::string name, std::vector<SampleInput> inputs, AttrList attrs) {
  OpSample s;
  s.name = std::move(name);
  s.inputs = std::move(inputs);
  s.attrs = std::move(attrs);
  for (const SampleInput& in : s.inputs)  // these values sit on kinks / ties or break symmetry
    if (in.dtype < 0 &&
        (in.specials || in.zeros || in.kind == SampleKind::kHalves || in.kind == SampleKind::kInteger))
      s.smooth = false;
  return s;
}
OpSample nonsmooth(OpSample s) {
  s.smooth = false;
  return s;
}
OpSample only(OpSample s, std::vector<DType> dtypes) {
  s.dtypes = std::move(dtypes);
  return s;
}
OpSample loose(OpSample s, double tol) {
  s.tol = tol;
  return s;
}
OpSample random(std::string name, std::vector<SampleInput> inputs, AttrList attrs, double lo, double hi,
                double mean, double std, std::string reason) {
  OpSample s = S(std::move(name), std::move(inputs), std::move(attrs));
  s.check = SampleCheck::kRandom;
  s.smooth = false;
  s.out_lo = lo;
  s.out_hi = hi;
  s.out_mean = mean;
  s.out_std = std;
  s.reason = std::move(reason);
  return s;
}

std::vector<OpSample> unary(double lo, double hi, bool specials, AttrList a, SampleKind kind) {
  auto x = [&](Shape s) { return of_kind(real(std::move(s), lo, hi), kind); };
  std::vector<OpSample> v = {
      S("2-d", {x({3, 4})}, a),
      S("0-d", {x({})}, a),
      S("empty", {x({0, 3})}, a),
      S("3-d", {x({2, 7, 5})}, a),
      S("transposed", {transposed(x({5, 3}))}, a),
      S("flipped", {flipped(x({4, 3}))}, a),
      S("expanded", {expanded(x({3, 4}), {1, 4})}, a),
  };
  if (specials) v.push_back(S("specials", {with_specials(x({4, 5}))}, a));
  return v;
}

std::vector<OpSample> binary(double lo, double hi, double ylo, double yhi, bool y_nonzero, bool specials) {
  auto y = [&](Shape s) {
    return y_nonzero ? nonzero(std::move(s), ylo, yhi) : real(std::move(s), ylo, yhi);
  };
  std::vector<OpSample> v = {
      S("same shape", {real({3, 4}, lo, hi), y({3, 4})}),
      S("broadcast trailing", {real({2, 3, 4}, lo, hi), y({4})}),
      S("broadcast outer", {real({3, 1}, lo, hi), y({1, 5})}),
      S("0-d and 1-d", {real({}, lo, hi), y({3})}),
      S("0-d", {real({}, lo, hi), y({})}),
      S("empty", {real({0, 4}, lo, hi), y({0, 4})}),
      S("empty broadcast", {real({0, 4}, lo, hi), y({4})}),
      S("transposed x", {transposed(real({4, 3}, lo, hi)), y({4, 3})}),
      S("flipped y", {real({5, 2}, lo, hi), flipped(y({5, 2}))}),
      S("expanded x", {expanded(real({3, 4}, lo, hi), {1, 4}), y({3, 4})}),
  };
  if (specials) v.push_back(S("specials", {with_specials(real({4, 5}, lo, hi)), with_specials(y({4, 5}))}));
  return v;
}

std::vector<OpSample> reduction(double lo, double hi, bool allow_empty, bool long_rows) {
  auto R = [](Shape axes, int64_t keep) { return AttrList{{"axis", axes}, {"keepdim", keep}}; };
  std::vector<OpSample> v = {
      S("all", {real({3, 4, 5}, lo, hi)}, R({}, 0)),
      S("axis 1", {real({3, 4, 5}, lo, hi)}, R({1}, 0)),
      S("axes 0,2 keepdim", {real({3, 4, 5}, lo, hi)}, R({0, 2}, 1)),
      S("axis -1", {real({3, 4, 5}, lo, hi)}, R({-1}, 0)),
      S("all keepdim", {real({3, 4}, lo, hi)}, R({}, 1)),
      S("0-d", {real({}, lo, hi)}, R({}, 0)),
      S("0-d axis 0", {real({}, lo, hi)}, R({0}, 1)),
      S("transposed", {transposed(real({4, 6}, lo, hi))}, R({1}, 0)),
      S("flipped", {flipped(real({4, 3}, lo, hi))}, R({0}, 1)),
      S("expanded", {expanded(real({3, 4}, lo, hi), {1, 4})}, R({0}, 0)),
      S("specials", {with_specials(real({4, 5}, lo, hi))}, R({1}, 0)),
  };
  if (long_rows) v.push_back(loose(S("long rows", {real({4, 700}, lo, hi)}, R({1}, 0)), 4));
  if (allow_empty) {
    v.push_back(S("empty extent", {real({3, 0}, lo, hi)}, R({1}, 0)));
    v.push_back(S("empty all", {real({0, 4}, lo, hi)}, R({}, 0)));
    v.push_back(S("empty kept", {real({0, 4}, lo, hi)}, R({1}, 0)));
  }
  return v;
}

std::vector<OpSample> along_axis(double lo, double hi, AttrList extra, bool allow_empty) {
  auto A = [&](int64_t axis) {
    AttrList a = extra;
    a.emplace_back("axis", axis);
    return a;
  };
  std::vector<OpSample> v = {
      S("axis 1", {real({3, 4, 5}, lo, hi)}, A(1)),
      S("axis -1", {real({3, 4, 5}, lo, hi)}, A(-1)),
      S("axis 0", {real({4, 3}, lo, hi)}, A(0)),
      S("0-d", {real({}, lo, hi)}, A(0)),
      S("transposed", {transposed(real({4, 6}, lo, hi))}, A(1)),
      S("flipped", {flipped(real({5, 3}, lo, hi))}, A(0)),
  };
  if (allow_empty) v.push_back(S("empty", {real({0, 4}, lo, hi)}, A(1)));
  return v;
}

}  // namespace sample
}  // namespace oar
