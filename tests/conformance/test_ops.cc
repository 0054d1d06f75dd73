// The op conformance suite, in the spirit of ggml's test-backend-ops: a table of cases (op, dtypes,
// input shapes with broadcasting / 0-d / empty / non-contiguous views, attributes), each checked on
// every place the runtime offers (cpu, sim:0, sim:1, ...) against a plain double-precision reference
// written here, never against the op under test. docs/ops.md is the contract.
//
// Test names read <op>_<dtype>[_<variant>]/<place>, so a failure names what broke where.
#include <oar/core/dispatch.h>
#include <oar/core/ops.h>

#include <functional>
#include <map>
#include <set>
#include <utility>

#include "conformance_util.h"

namespace oar_conformance {
namespace {

using oar::Attrs;
using oar::ErrorCode;

// ==== inputs ========================================================================================

// How input values are drawn. Integer dtypes always get integers (clipped to the dtype), bool 0/1.
struct Range {
  double lo = -1, hi = 1;
  enum Kind { kReal, kInteger, kHalves } kind = kReal;  // kHalves: multiples of 0.5 (for round)
  bool nonzero = false;                                 // divisors: no 0 (floats: |v| >= 0.25)
  bool zeros = false;                                   // about a quarter of the elements are exactly 0
  bool specials = false;                                // floats: some NaN, +inf and -inf
};
Range R(double lo, double hi) { return Range{lo, hi}; }
Range Int(double lo, double hi) {
  Range r{lo, hi};
  r.kind = Range::kInteger;
  return r;
}
Range Halves(double lo, double hi) {
  Range r{lo, hi};
  r.kind = Range::kHalves;
  return r;
}
Range NonZero(double lo, double hi) {
  Range r{lo, hi};
  r.nonzero = true;
  return r;
}
Range WithZeros(Range r) {
  r.zeros = true;
  return r;
}
Range WithSpecials(Range r) {
  r.specials = true;
  return r;
}

double draw(DType d, const Range& r, std::mt19937& g) {
  if (d == kBool) return std::uniform_int_distribution<int>(0, 1)(g);
  const bool integral = is_int(d) || r.kind == Range::kInteger;
  double lo = r.lo, hi = r.hi;
  if (is_int(d)) lo = std::max(lo, int_min(d)), hi = std::min(hi, int_max(d));
  for (;;) {
    double v;
    if (integral)
      v = static_cast<double>(std::uniform_int_distribution<int64_t>(
          static_cast<int64_t>(std::ceil(lo)), static_cast<int64_t>(std::floor(hi)))(g));
    else if (r.kind == Range::kHalves)
      v = static_cast<double>(std::uniform_int_distribution<int64_t>(
              static_cast<int64_t>(std::ceil(2 * lo)), static_cast<int64_t>(std::floor(2 * hi)))(g)) /
          2;
    else
      v = std::uniform_real_distribution<double>(lo, hi)(g);
    if (r.nonzero && (integral ? v == 0 : std::fabs(v) < 0.25)) continue;
    return v;
  }
}

// n values of dtype d (already rounded / wrapped to what the dtype holds).
std::vector<cd> generate(DType d, int64_t n, const Range& r, std::mt19937& g) {
  std::vector<cd> v(static_cast<size_t>(n));
  const double specials[] = {std::nan(""), INFINITY, -INFINITY};
  for (auto& x : v) {
    double re = draw(d, r, g), im = is_cplx(d) ? draw(d, r, g) : 0.0;
    if (r.zeros && g() % 4 == 0) re = im = 0;
    if (r.specials && is_flt(d) && g() % 5 == 0) re = specials[g() % 3];
    x = cd(re, im);
  }
  return quantize(d, v);
}

enum class View { kNone, kTranspose, kSlice, kReverse, kExpand };
const char* view_name(View v) {
  switch (v) {
    case View::kTranspose:
      return "transposed";
    case View::kSlice:
      return "sliced";
    case View::kReverse:
      return "reversed";
    case View::kExpand:
      return "expanded";
    default:
      return "";
  }
}

// One input of a case: its logical shape and values, and how the tensor is made (maybe as a view).
struct In {
  DType dtype = kF32;
  Shape shape;
  Range range;
  View view = View::kNone;
  Shape src;               // kExpand: the shape that is expanded to `shape`
  std::vector<cd> values;  // explicit values (index tensors); otherwise drawn from `range`
};
In in(DType d, Shape s, Range r = {}) { return In{d, std::move(s), r}; }
In values(DType d, Shape s, std::vector<cd> v) {
  In i{d, std::move(s)};
  i.values = std::move(v);
  return i;
}
In viewed(In i, View v, Shape src = {}) {
  i.view = v;
  i.src = std::move(src);
  return i;
}

// Builds the tensor on `place` and the logical values it holds. Views are made on the device with the
// core's view functions; the host side builds the same layout independently:
//   kTranspose: the base has the last two dims swapped and is transposed back;
//   kSlice:     the base has 2*n+1 rows along axis 0, the view takes rows 1, 3, 5, ...;
//   kReverse:   the base is the rows in reverse order, the view is slice(0, n-1, -n-1, -1);
//   kExpand:    the base has shape `src`, the view is expand(shape) (stride 0 on broadcast dims).
std::pair<Host, Tensor> make_input(const In& in, Place place, std::mt19937& rng) {
  Host logical{in.dtype, in.shape, {}};
  if (in.view == View::kExpand) {
    Host src{in.dtype, in.src, generate(in.dtype, numel(in.src), in.range, rng)};
    logical.v.resize(static_cast<size_t>(numel(in.shape)));
    for (int64_t i = 0; i < numel(in.shape); ++i)
      logical.v[i] = src.v[bcast_index(unravel(i, in.shape), in.src)];
    return {logical, upload(src, place).expand(oar::Dims(in.shape))};
  }
  logical.v =
      in.values.empty() ? generate(in.dtype, numel(in.shape), in.range, rng) : quantize(in.dtype, in.values);
  if (in.view == View::kNone) return {logical, upload(logical, place)};

  const size_t r = in.shape.size();
  const int64_t n0 = in.shape.empty() ? 0 : in.shape[0];
  Host base{in.dtype, in.shape, {}};
  if (in.view == View::kTranspose) std::swap(base.shape[r - 2], base.shape[r - 1]);
  if (in.view == View::kSlice) base.shape[0] = 2 * n0 + 1;
  base.v = generate(in.dtype, numel(base.shape), in.range, rng);  // what the view must not see
  for (int64_t i = 0; i < numel(in.shape); ++i) {
    Shape c = unravel(i, in.shape);
    if (in.view == View::kTranspose) std::swap(c[r - 2], c[r - 1]);
    if (in.view == View::kSlice) c[0] = 2 * c[0] + 1;
    if (in.view == View::kReverse) c[0] = n0 - 1 - c[0];
    base.v[ravel(c, base.shape)] = logical.v[i];
  }
  Tensor t = upload(base, place);
  if (in.view == View::kTranspose) {
    std::vector<int64_t> perm(r);
    for (size_t k = 0; k < r; ++k) perm[k] = static_cast<int64_t>(k);
    std::swap(perm[r - 2], perm[r - 1]);
    t = t.transpose(perm);
  } else if (in.view == View::kSlice) {
    t = t.slice(0, 1, 2 * n0 + 1, 2);
  } else {
    t = t.slice(0, n0 - 1, -n0 - 1, -1);
  }
  return {logical, t};
}

// ==== cases =========================================================================================

using RefFn = std::function<Host(const std::vector<Host>&)>;

struct Case {
  std::string name;  // <op>_<dtype>[_<variant>]
  std::string op;
  std::vector<In> inputs;
  Attrs attrs;
  RefFn ref;
};

std::vector<Case>& case_list() {
  static std::vector<Case> v;
  return v;
}
void add_case(std::string name, std::string op, std::vector<In> inputs, Attrs attrs, RefFn ref) {
  case_list().push_back(
      {std::move(name), std::move(op), std::move(inputs), std::move(attrs), std::move(ref)});
}
std::string case_name(const std::string& op, DType d, const std::string& variant) {
  return op + "_" + dname(d) + (variant.empty() ? "" : "_" + variant);
}

// ==== reference implementations =====================================================================

// Elementwise over numpy-broadcast inputs: out[i] = f(inputs at i).
using MapFn = std::function<cd(const std::vector<cd>&)>;
Host ref_map(const std::vector<Host>& ins, DType out, const MapFn& f) {
  Shape s = ins[0].shape;
  for (const Host& h : ins) s = broadcast_shape(s, h.shape);
  Host r{out, s, std::vector<cd>(static_cast<size_t>(numel(s)))};
  std::vector<cd> args(ins.size());
  for (int64_t i = 0; i < numel(s); ++i) {
    const Shape c = unravel(i, s);
    for (size_t k = 0; k < ins.size(); ++k) args[k] = ins[k].v[bcast_index(c, ins[k].shape)];
    r.v[i] = f(args);
  }
  return finish(r);
}

using F1 = std::function<double(double)>;
using F2 = std::function<double(double, double)>;
using C2 = std::function<cd(cd, cd)>;

RefFn binary_ref(F2 f, C2 fc, bool to_bool) {
  return [=](const std::vector<Host>& in) {
    const bool cplx = is_cplx(in[0].dtype);
    return ref_map({in[0], in[1]}, to_bool ? kBool : in[0].dtype, [&](const std::vector<cd>& a) {
      return cplx ? fc(a[0], a[1]) : cd(f(a[0].real(), a[1].real()));
    });
  };
}
RefFn unary_ref(F1 f, bool to_bool) {
  return [=](const std::vector<Host>& in) {
    return ref_map({in[0]}, to_bool ? kBool : in[0].dtype,
                   [&](const std::vector<cd>& a) { return cd(f(a[0].real())); });
  };
}

// Reductions: every output element sees its group of inputs in row-major order of the reduced
// coordinates (so for one axis, in order along the axis; for all axes, the flat order).
using GroupFn = std::function<cd(const std::vector<cd>&)>;
enum class Mag { kNone, kSumAbs, kMeanAbs };
Host ref_reduce(const Host& x, Shape axes, bool keepdim, DType out, const GroupFn& f, Mag mag = Mag::kNone) {
  const int64_t r = static_cast<int64_t>(x.shape.size());
  std::vector<bool> reduced(x.shape.size(), axes.empty());
  for (int64_t a : axes) {
    if (a < 0) a += std::max<int64_t>(r, 1);
    if (a < r) reduced[a] = true;
  }
  Shape os;
  for (int64_t k = 0; k < r; ++k)
    if (!reduced[k])
      os.push_back(x.shape[k]);
    else if (keepdim)
      os.push_back(1);
  std::vector<std::vector<cd>> groups(static_cast<size_t>(numel(os)));
  for (int64_t i = 0; i < numel(x.shape); ++i) {
    const Shape c = unravel(i, x.shape);
    Shape oc;
    for (int64_t k = 0; k < r; ++k)
      if (!reduced[k])
        oc.push_back(c[k]);
      else if (keepdim)
        oc.push_back(0);
    groups[ravel(oc, os)].push_back(x.v[i]);
  }
  Host h{out, os, {}};
  for (const auto& g : groups) {
    h.v.push_back(f(g));
    double s = 0;
    for (const cd& v : g) s += std::abs(v);
    if (mag == Mag::kSumAbs) h.mag.push_back(s);
    if (mag == Mag::kMeanAbs) h.mag.push_back(g.empty() ? 0 : s / static_cast<double>(g.size()));
  }
  return finish(h);
}

// numpy.matmul after the optional transposes of the last two dims; 1-D operands promoted.
Host ref_matmul(const Host& x, const Host& y, bool tx, bool ty) {
  const bool x1 = x.shape.size() == 1, y1 = y.shape.size() == 1;
  const Shape xm = x1 ? Shape{1, x.shape[0]} : Shape(x.shape.end() - 2, x.shape.end());
  const Shape ym = y1 ? Shape{y.shape[0], 1} : Shape(y.shape.end() - 2, y.shape.end());
  const Shape xb = x1 ? Shape{} : Shape(x.shape.begin(), x.shape.end() - 2);
  const Shape yb = y1 ? Shape{} : Shape(y.shape.begin(), y.shape.end() - 2);
  const bool tx_ = tx && !x1, ty_ = ty && !y1;
  const int64_t M = tx_ ? xm[1] : xm[0], K = tx_ ? xm[0] : xm[1], N = ty_ ? ym[0] : ym[1];
  const Shape ob = broadcast_shape(xb, yb);
  Shape os = ob;
  if (!x1) os.push_back(M);
  if (!y1) os.push_back(N);
  Host h{x.dtype, os, {}};
  for (int64_t b = 0; b < numel(ob); ++b) {
    const Shape bc = unravel(b, ob);
    const int64_t xo = bcast_index(bc, xb) * xm[0] * xm[1], yo = bcast_index(bc, yb) * ym[0] * ym[1];
    for (int64_t i = 0; i < M; ++i)
      for (int64_t j = 0; j < N; ++j) {
        cd acc = 0;
        double mag = 0;
        for (int64_t k = 0; k < K; ++k) {
          const cd a = x.v[xo + (tx_ ? k * xm[1] + i : i * xm[1] + k)];
          const cd c = y.v[yo + (ty_ ? j * ym[1] + k : k * ym[1] + j)];
          acc += a * c;
          mag += std::abs(a) * std::abs(c);
        }
        h.v.push_back(acc);
        h.mag.push_back(mag);
      }
  }
  return finish(h);
}

// Conversion as numpy's astype: to bool is != 0, complex to real keeps the real part, floats to
// integers truncate toward zero (encode() does that), real to complex has imaginary part 0.
Host ref_cast(const Host& x, DType to) {
  Host h{to, x.shape, {}};
  for (const cd& v : x.v) {
    if (to == kBool)
      h.v.push_back(v != cd(0) ? 1.0 : 0.0);
    else if (!is_cplx(to))
      h.v.push_back(v.real());
    else
      h.v.push_back(v);
  }
  return finish(h);
}

Host ref_concat(const std::vector<Host>& xs, int64_t axis) {
  const int64_t r = static_cast<int64_t>(xs[0].shape.size());
  if (axis < 0) axis += r;
  Shape os = xs[0].shape;
  os[axis] = 0;
  for (const Host& h : xs) os[axis] += h.shape[axis];
  Host h{xs[0].dtype, os, {}};
  for (int64_t i = 0; i < numel(os); ++i) {
    Shape c = unravel(i, os);
    size_t k = 0;
    while (c[axis] >= xs[k].shape[axis]) c[axis] -= xs[k++].shape[axis];
    h.v.push_back(xs[k].v[ravel(c, xs[k].shape)]);
  }
  return h;
}

Host ref_index_add(const Host& x, const Host& index, const Host& src, int64_t axis) {
  if (axis < 0) axis += static_cast<int64_t>(x.shape.size());
  Host h = x;
  for (int64_t i = 0; i < numel(src.shape); ++i) {
    Shape c = unravel(i, src.shape);
    c[axis] = static_cast<int64_t>(index.v[c[axis]].real());
    h.v[ravel(c, x.shape)] += src.v[i];
  }
  return h;
}

Host ref_index_select(const Host& x, const Host& index, int64_t axis) {
  if (axis < 0) axis += static_cast<int64_t>(x.shape.size());
  Shape os = x.shape;
  os[axis] = index.shape[0];
  Host h{x.dtype, os, {}};
  for (int64_t i = 0; i < numel(os); ++i) {
    Shape c = unravel(i, os);
    c[axis] = static_cast<int64_t>(index.v[c[axis]].real());
    h.v.push_back(x.v[ravel(c, x.shape)]);
  }
  return h;
}

Host ref_softmax(const Host& x, int64_t axis, bool log) {
  const int64_t r = static_cast<int64_t>(x.shape.size());
  if (axis < 0) axis += std::max<int64_t>(r, 1);
  Host h{x.dtype, x.shape, std::vector<cd>(x.v.size()), std::vector<double>(x.v.size())};
  const int64_t len = r == 0 ? 1 : x.shape[axis];
  const int64_t inner = r == 0 ? 1 : numel(Shape(x.shape.begin() + axis + 1, x.shape.end()));
  const int64_t outer = len * inner == 0 ? 0 : numel(x.shape) / (len * inner);
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t in = 0; in < inner; ++in) {
      auto at = [&](int64_t k) { return o * len * inner + k * inner + in; };
      double mx = -INFINITY, sum = 0;
      for (int64_t k = 0; k < len; ++k) mx = std::max(mx, x.v[at(k)].real());
      for (int64_t k = 0; k < len; ++k) sum += std::exp(x.v[at(k)].real() - mx);
      for (int64_t k = 0; k < len; ++k) {
        const double d = x.v[at(k)].real() - mx;
        h.v[at(k)] = log ? d - std::log(sum) : std::exp(d) / sum;
        h.mag[at(k)] = log ? std::fabs(d) + std::log(sum) : 0;
      }
    }
  return h;
}

// The counter-based generator of docs/ops.md (splitmix64 finaliser, as oar/sdk/random.h).
uint64_t mix64(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}
uint64_t random_bits(uint64_t seed, uint64_t counter) {
  return mix64(mix64(seed + 0x9e3779b97f4a7c15ull) ^ (counter * 0xd1b54a32d192ed03ull));
}
double uniform01(uint64_t seed, uint64_t counter, int bits) {
  return static_cast<double>(random_bits(seed, counter) >> (64 - bits)) * std::ldexp(1.0, -bits);
}

// ==== the table =====================================================================================

// Shapes for binary elementwise cases: every dtype gets "bcast"; the variant dtypes get all.
struct BinShapes {
  std::string name;
  In x, y;  // dtype and range are filled in per op
};
std::vector<BinShapes> binary_shapes(bool all) {
  std::vector<BinShapes> v = {{"bcast", in(kF32, {2, 3, 4}), in(kF32, {3, 1})}};
  if (!all) return v;
  v.push_back({"same", in(kF32, {4, 5}), in(kF32, {4, 5})});
  v.push_back({"scalar", in(kF32, {}), in(kF32, {})});
  v.push_back({"scalar_vec", in(kF32, {}), in(kF32, {5})});
  v.push_back({"vec_scalar", in(kF32, {2, 5}), in(kF32, {})});
  v.push_back({"empty", in(kF32, {0, 3}), in(kF32, {1, 3})});
  v.push_back(
      {"transposed", viewed(in(kF32, {4, 6}), View::kTranspose), viewed(in(kF32, {4, 6}), View::kTranspose)});
  v.push_back({"sliced", viewed(in(kF32, {3, 4}), View::kSlice), in(kF32, {4})});
  v.push_back({"reversed", viewed(in(kF32, {5, 3}), View::kReverse), in(kF32, {5, 3})});
  v.push_back({"expanded", viewed(in(kF32, {4, 5}), View::kExpand, {4, 1}),
               viewed(in(kF32, {4, 5}), View::kExpand, {5})});
  v.push_back({"large", in(kF32, {300, 257}), in(kF32, {257})});
  v.push_back({"large_transposed", viewed(in(kF32, {256, 300}), View::kTranspose), in(kF32, {256, 300})});
  return v;
}

struct BinaryOp {
  const char* op;
  std::vector<DType> dtypes;
  Range x, y;
  bool to_bool;
  F2 f;   // real dtypes
  C2 fc;  // complex dtypes
  std::vector<DType> variant_dtypes = {kF32};
};

double py_floordiv(double a, double b) {
  return static_cast<double>(std::floor(static_cast<long double>(a) / b));
}
double py_mod(double a, double b) {
  double r = std::fmod(a, b);
  if (r != 0 && ((r < 0) != (b < 0))) r += b;
  return r;
}
bool any_nan(double a, double b) { return std::isnan(a) || std::isnan(b); }

void add_elementwise_binary_cases() {
  const Range arith = R(-10, 10), cmp = Int(-3, 3), logic = Int(-2, 2);
  const std::vector<DType> sim_arith = {kF32, kF64, kI32, kI64};  // the sim device's own kernels
  const std::vector<BinaryOp> ops = {
      {"add", all_but_bool(), arith, arith, false, [](double a, double b) { return a + b; },
       [](cd a, cd b) { return a + b; }, sim_arith},
      {"subtract", all_but_bool(), arith, arith, false, [](double a, double b) { return a - b; },
       [](cd a, cd b) { return a - b; }},
      {"multiply", all_but_bool(), arith, arith, false, [](double a, double b) { return a * b; },
       [](cd a, cd b) { return a * b; }, sim_arith},
      // divide: the real reference is set per dtype below (ints truncate toward zero).
      {"divide", all_but_bool(), arith, NonZero(-5, 5), false, nullptr, [](cd a, cd b) { return a / b; }},
      {"floor_divide", real_not_bool(), arith, NonZero(-5, 5), false, py_floordiv, nullptr},
      {"remainder", real_not_bool(), arith, NonZero(-5, 5), false, py_mod, nullptr},
      {"maximum", real_not_bool(), arith, arith, false,
       [](double a, double b) { return any_nan(a, b) ? NAN : std::max(a, b); }, nullptr},
      {"minimum", real_not_bool(), arith, arith, false,
       [](double a, double b) { return any_nan(a, b) ? NAN : std::min(a, b); }, nullptr},
      {"pow", real_not_bool(), R(0.5, 3), R(-2, 2), false, [](double a, double b) { return std::pow(a, b); },
       nullptr},
      {"equal", all_dtypes(), cmp, cmp, true, [](double a, double b) { return double(a == b); },
       [](cd a, cd b) { return cd(a == b); }},
      {"not_equal", all_dtypes(), cmp, cmp, true, [](double a, double b) { return double(a != b); },
       [](cd a, cd b) { return cd(a != b); }},
      {"less_than", real_dtypes(), cmp, cmp, true, [](double a, double b) { return double(a < b); }, nullptr},
      {"less_equal", real_dtypes(), cmp, cmp, true, [](double a, double b) { return double(a <= b); },
       nullptr},
      {"greater_than", real_dtypes(), cmp, cmp, true, [](double a, double b) { return double(a > b); },
       nullptr},
      {"greater_equal", real_dtypes(), cmp, cmp, true, [](double a, double b) { return double(a >= b); },
       nullptr},
      {"logical_and", real_dtypes(), logic, logic, true,
       [](double a, double b) { return double(a != 0 && b != 0); }, nullptr},
      {"logical_or", real_dtypes(), logic, logic, true,
       [](double a, double b) { return double(a != 0 || b != 0); }, nullptr},
      {"logical_xor", real_dtypes(), logic, logic, true,
       [](double a, double b) { return double((a != 0) != (b != 0)); }, nullptr},
  };
  for (const BinaryOp& op : ops) {
    for (DType d : op.dtypes) {
      F2 f = op.f;
      Range x = op.x, y = op.y;
      if (std::string(op.op) == "divide")
        f = is_int(d) ? F2([](double a, double b) { return std::trunc(a / b); })
                      : F2([](double a, double b) { return a / b; });
      if (std::string(op.op) == "pow" && is_int(d)) x = Int(-4, 4), y = Int(0, 3);
      const bool all =
          std::find(op.variant_dtypes.begin(), op.variant_dtypes.end(), d) != op.variant_dtypes.end();
      for (BinShapes s : binary_shapes(all)) {
        s.x.dtype = s.y.dtype = d;
        s.x.range = x;
        s.y.range = y;
        add_case(case_name(op.op, d, s.name), op.op, {s.x, s.y}, {}, binary_ref(f, op.fc, op.to_bool));
      }
    }
  }
  // Special values: NaN propagates through maximum/minimum; floor_divide/remainder on exact integers.
  for (const char* op : {"maximum", "minimum"})
    for (DType d : {kF32, kF64}) {
      const bool mx = std::string(op) == "maximum";
      add_case(case_name(op, d, "nan"), op,
               {in(d, {6, 5}, WithSpecials(R(-5, 5))), in(d, {5}, WithSpecials(R(-5, 5)))}, {},
               binary_ref(
                   [mx](double a, double b) {
                     return any_nan(a, b) ? NAN : mx ? std::max(a, b) : std::min(a, b);
                   },
                   nullptr, false));
    }
  // Integer arithmetic wraps around (two's complement, as numpy); the sim has int32 add/multiply.
  for (DType d : {kI8, kU8, kI16, kI32}) {
    add_case(case_name("add", d, "wrap"), "add", {in(d, {50}, R(-3e9, 3e9)), in(d, {50}, R(-3e9, 3e9))}, {},
             binary_ref([](double a, double b) { return a + b; }, nullptr, false));
    add_case(case_name("subtract", d, "wrap"), "subtract",
             {in(d, {50}, R(-3e9, 3e9)), in(d, {50}, R(-3e9, 3e9))}, {},
             binary_ref([](double a, double b) { return a - b; }, nullptr, false));
    add_case(case_name("multiply", d, "wrap"), "multiply",
             {in(d, {50}, R(-1e6, 1e6)), in(d, {50}, R(-1e6, 1e6))}, {},
             binary_ref([](double a, double b) { return a * b; }, nullptr, false));
    add_case(case_name("pow", d, "wrap"), "pow", {in(d, {50}, Int(-7, 7)), in(d, {50}, Int(0, 9))}, {},
             binary_ref([](double a, double b) { return std::pow(a, b); }, nullptr, false));
  }
  // Float division by zero follows IEEE (inf, nan), never an error.
  for (DType d : {kF32, kF64}) {
    const std::vector<In> xy = {in(d, {5, 6}, Int(-2, 2)), in(d, {6}, Int(-1, 1))};
    add_case(case_name("divide", d, "by_zero"), "divide", xy, {},
             binary_ref([](double a, double b) { return a / b; }, nullptr, false));
    add_case(case_name("floor_divide", d, "by_zero"), "floor_divide", xy, {},
             binary_ref(py_floordiv, nullptr, false));
    add_case(case_name("remainder", d, "by_zero"), "remainder", xy, {}, binary_ref(py_mod, nullptr, false));
  }
  for (DType d : {kF32, kF64}) {
    Range div = NonZero(-4, 4);
    div.kind = Range::kInteger;
    add_case(case_name("floor_divide", d, "integral"), "floor_divide",
             {in(d, {6, 7}, Int(-12, 12)), in(d, {7}, div)}, {}, binary_ref(py_floordiv, nullptr, false));
    add_case(case_name("remainder", d, "integral"), "remainder",
             {in(d, {6, 7}, Int(-12, 12)), in(d, {7}, div)}, {}, binary_ref(py_mod, nullptr, false));
  }
}

// Shapes for unary cases.
std::vector<std::pair<std::string, In>> unary_shapes(bool all) {
  std::vector<std::pair<std::string, In>> v = {{"", in(kF32, {4, 5})}};
  if (!all) return v;
  v.push_back({"scalar", in(kF32, {})});
  v.push_back({"empty", in(kF32, {0, 4})});
  v.push_back({"transposed", viewed(in(kF32, {4, 6}), View::kTranspose)});
  v.push_back({"sliced", viewed(in(kF32, {3, 5}), View::kSlice)});
  v.push_back({"reversed", viewed(in(kF32, {4, 3}), View::kReverse)});
  v.push_back({"expanded", viewed(in(kF32, {3, 4}), View::kExpand, {1, 4})});
  v.push_back({"large", in(kF32, {1000, 70})});
  return v;
}

struct UnaryOp {
  const char* op;
  std::vector<DType> dtypes;
  Range r;
  bool to_bool;
  F1 f;
  std::vector<DType> variant_dtypes = {kF32};
};

void add_elementwise_unary_cases() {
  const std::vector<UnaryOp> ops = {
      {"neg", real_not_bool(), R(-10, 10), false, [](double x) { return -x; }},
      {"abs", real_not_bool(), R(-10, 10), false, [](double x) { return std::fabs(x); }},
      {"square", real_not_bool(), R(-10, 10), false, [](double x) { return x * x; }},
      {"sign", real_not_bool(), WithZeros(R(-10, 10)), false,
       [](double x) { return double((x > 0) - (x < 0)); }},
      {"relu",
       real_not_bool(),
       WithZeros(R(-10, 10)),
       false,
       [](double x) { return x > 0 ? x : 0.0; },
       {kF32, kF64}},
      {"exp", floats(), R(-3, 3), false, [](double x) { return std::exp(x); }},
      {"log", floats(), R(0.05, 10), false, [](double x) { return std::log(x); }},
      {"log1p", floats(), R(-0.9, 5), false, [](double x) { return std::log1p(x); }},
      {"expm1", floats(), R(-2, 2), false, [](double x) { return std::expm1(x); }},
      {"sqrt", floats(), R(0, 10), false, [](double x) { return std::sqrt(x); }},
      {"rsqrt", floats(), R(0.05, 10), false, [](double x) { return 1 / std::sqrt(x); }},
      {"sin", floats(), R(-4, 4), false, [](double x) { return std::sin(x); }},
      {"cos", floats(), R(-4, 4), false, [](double x) { return std::cos(x); }},
      {"tanh", floats(), R(-3, 3), false, [](double x) { return std::tanh(x); }},
      {"sigmoid", floats(), R(-8, 8), false, [](double x) { return 1 / (1 + std::exp(-x)); }},
      {"floor", floats(), R(-10, 10), false, [](double x) { return std::floor(x); }},
      {"ceil", floats(), R(-10, 10), false, [](double x) { return std::ceil(x); }},
      {"round", floats(), Halves(-10, 10), false,
       [](double x) { return std::round(x); }},  // half away from 0
      {"reciprocal", floats(), NonZero(-4, 4), false, [](double x) { return 1 / x; }},
      {"erf", floats(), R(-3, 3), false, [](double x) { return std::erf(x); }},
      {"logical_not", real_dtypes(), Int(-2, 2), true, [](double x) { return double(x == 0); }},
      {"isnan", floats(), WithSpecials(R(-10, 10)), true, [](double x) { return double(std::isnan(x)); }},
      {"isinf", floats(), WithSpecials(R(-10, 10)), true, [](double x) { return double(std::isinf(x)); }},
      {"isfinite", floats(), WithSpecials(R(-10, 10)), true,
       [](double x) { return double(std::isfinite(x)); }},
  };
  for (const UnaryOp& op : ops)
    for (DType d : op.dtypes) {
      const bool all =
          std::find(op.variant_dtypes.begin(), op.variant_dtypes.end(), d) != op.variant_dtypes.end();
      for (auto [variant, x] : unary_shapes(all)) {
        x.dtype = d;
        x.range = op.r;
        add_case(case_name(op.op, d, variant), op.op, {x}, {}, unary_ref(op.f, op.to_bool));
      }
    }
  // round: values that are not halves too.
  for (DType d : floats())
    add_case(case_name("round", d, "real"), "round", {in(d, {7, 9}, R(-10, 10))}, {},
             unary_ref([](double x) { return std::round(x); }, false));
}

// ---- reductions ----
struct ReduceShape {
  std::string name;
  In x;
  Shape axes;
  bool keepdim;
};
std::vector<ReduceShape> reduce_shapes(bool all, bool allow_empty) {
  std::vector<ReduceShape> v = {
      {"all", in(kF32, {3, 4, 5}), {}, false},
      {"axis1", in(kF32, {3, 4, 5}), {1}, false},
      {"axes02_keep", in(kF32, {3, 4, 5}), {0, 2}, true},
  };
  if (!all) return v;
  v.push_back({"axis_neg", in(kF32, {3, 4, 5}), {-1}, false});
  v.push_back({"all_keep", in(kF32, {3, 4}), {}, true});
  v.push_back({"scalar", in(kF32, {}), {}, false});
  v.push_back({"scalar_axis0", in(kF32, {}), {0}, true});
  v.push_back({"transposed", viewed(in(kF32, {4, 6}), View::kTranspose), {1}, false});
  v.push_back({"sliced", viewed(in(kF32, {3, 5}), View::kSlice), {0}, false});
  v.push_back({"reversed", viewed(in(kF32, {4, 3}), View::kReverse), {0}, true});
  v.push_back({"expanded", viewed(in(kF32, {3, 4}), View::kExpand, {1, 4}), {0}, false});
  v.push_back({"large_rows", in(kF32, {700, 300}), {1}, false});
  v.push_back({"large_cols", in(kF32, {300, 700}), {0}, false});
  v.push_back({"large_all", in(kF32, {1000, 300}), {}, false});
  if (allow_empty) {
    v.push_back({"empty_extent", in(kF32, {3, 0}), {1}, false});
    v.push_back({"empty_all", in(kF32, {0, 4}), {}, false});
    v.push_back({"empty_kept", in(kF32, {0, 4}), {1}, false});  // nothing to reduce into
  }
  return v;
}

struct ReduceOp {
  const char* op;
  std::vector<DType> dtypes;
  std::function<Range(DType)> range;
  std::function<DType(DType)> out;
  std::function<GroupFn(DType)> f;
  Mag mag;
  bool allow_empty;
  std::vector<DType> variant_dtypes = {kF32};
};

DType sum_dtype(DType d) { return d == kBool || d == kI8 || d == kU8 || d == kI16 || d == kI32 ? kI64 : d; }

GroupFn extreme(bool is_max) {
  return [is_max](const std::vector<cd>& g) {
    double m = g[0].real();
    for (const cd& v : g) m = is_max ? std::max(m, v.real()) : std::min(m, v.real());
    return cd(m);
  };
}
// Position of the first maximum (minimum) in the group: ties pick the first index.
GroupFn arg_extreme(bool is_max) {
  return [is_max](const std::vector<cd>& g) {
    size_t best = 0;
    for (size_t i = 1; i < g.size(); ++i)
      if (is_max ? g[i].real() > g[best].real() : g[i].real() < g[best].real()) best = i;
    return cd(static_cast<double>(best));
  };
}

void add_reduction_cases() {
  auto same = [](DType d) { return d; };
  const GroupFn sum = [](const std::vector<cd>& g) {
    cd s = 0;
    for (const cd& v : g) s += v;
    return s;
  };
  auto value_range = [](DType d) { return is_int(d) ? Int(-10, 10) : R(-5, 5); };
  const std::vector<ReduceOp> ops = {
      {"sum",
       all_dtypes(),
       value_range,
       sum_dtype,
       [sum](DType) { return sum; },
       Mag::kSumAbs,
       true,
       {kF32, kF64}},
      {"mean", floats(), value_range, same,
       [sum](DType) {
         return GroupFn(
             [sum](const std::vector<cd>& g) { return g.empty() ? cd(NAN) : sum(g) / double(g.size()); });
       },
       Mag::kMeanAbs, true},
      {"max", real_dtypes(), value_range, same, [](DType) { return extreme(true); }, Mag::kNone, false},
      {"min", real_dtypes(), value_range, same, [](DType) { return extreme(false); }, Mag::kNone, false},
      {"prod", all_but_bool(),
       [](DType d) { return is_int(d)    ? Int(-2, 2)
                            : is_cplx(d) ? R(0.6, 1.0)
                                         : R(0.5, 1.5); }, same,
       [](DType d) {
         return GroupFn([d](const std::vector<cd>& g) {
           if (is_int(d)) {  // integer products wrap: multiply in 64-bit unsigned arithmetic
             uint64_t p = 1;
             for (const cd& v : g) p *= static_cast<uint64_t>(static_cast<int64_t>(v.real()));
             return cd(wrap_int(d, static_cast<int64_t>(p)));
           }
           cd p = 1;
           for (const cd& v : g) p *= v;
           return p;
         });
       },
       Mag::kNone, true},
  };
  for (const ReduceOp& op : ops)
    for (DType d : op.dtypes) {
      const bool all =
          std::find(op.variant_dtypes.begin(), op.variant_dtypes.end(), d) != op.variant_dtypes.end();
      for (ReduceShape s : reduce_shapes(all, op.allow_empty)) {
        if (std::string(op.op) == "prod" && s.name.rfind("large", 0) == 0) continue;  // products of 1e5 terms
        s.x.dtype = d;
        s.x.range = op.range(d);
        const DType out = op.out(d);
        const GroupFn f = op.f(d);
        const Mag mag = op.mag;
        const Shape axes = s.axes;
        const bool keep = s.keepdim;
        add_case(case_name(op.op, d, s.name), op.op, {s.x}, {{"axis", axes}, {"keepdim", int64_t{keep}}},
                 [=](const std::vector<Host>& x) { return ref_reduce(x[0], axes, keep, out, f, mag); });
      }
    }

  // Narrow integer sums widen to int64 before they can overflow.
  for (auto [d, lo, hi, n] :
       {std::tuple{kI32, 1e9, 3e9, int64_t{64}}, std::tuple{kU8, 200.0, 255.0, int64_t{4096}},
        std::tuple{kI16, 30000.0, 40000.0, int64_t{1024}}, std::tuple{kI8, -128.0, -100.0, int64_t{1024}}}) {
    const DType dt = d;
    add_case(case_name("sum", dt, "widen"), "sum", {in(dt, {n}, R(lo, hi))}, {{"axis", Shape{}}},
             [](const std::vector<Host>& x) {
               return ref_reduce(x[0], {}, false, kI64, [](const std::vector<cd>& g) {
                 cd s = 0;
                 for (const cd& v : g) s += v;
                 return s;
               });
             });
  }

  // 16-bit floats accumulate in a wider type: 60000 values in [0, 1) (a float16 accumulator would stall
  // at 2048, where its spacing reaches 2).
  for (DType d : {kF16, kBF16}) {
    for (const char* op : {"sum", "mean"}) {
      const bool mean = std::string(op) == "mean";
      add_case(case_name(op, d, "large_accumulate"), op, {in(d, {200, 300}, R(0, 1))}, {{"axis", Shape{}}},
               [=](const std::vector<Host>& x) {
                 return ref_reduce(x[0], {}, false, d, [mean](const std::vector<cd>& g) {
                   cd s = 0;
                   for (const cd& v : g) s += v;
                   return mean ? s / double(g.size()) : s;
                 });
               });
    }
  }

  // argmax / argmin: small integer values make ties, which must pick the first index.
  struct ArgShape {
    std::string name;
    In x;
    int64_t axis;
    bool keepdim, flatten;
  };
  for (const char* op : {"argmax", "argmin"}) {
    const bool is_max = std::string(op) == "argmax";
    for (DType d : real_dtypes()) {
      std::vector<ArgShape> shapes = {
          {"axis1", in(d, {3, 4, 5}, Int(-3, 3)), 1, false, false},
          {"axis_neg_keep", in(d, {3, 4, 5}, Int(-3, 3)), -1, true, false},
          {"flatten", in(d, {3, 4, 5}, Int(-3, 3)), 0, false, true},
          {"flatten_keep", in(d, {3, 4}, Int(-3, 3)), 0, true, true},
      };
      if (d == kF32) {
        shapes.push_back({"real", in(d, {5, 7}, R(-5, 5)), 0, false, false});
        shapes.push_back({"scalar", in(d, {}, R(-5, 5)), 0, false, false});
        shapes.push_back(
            {"transposed", viewed(in(d, {4, 6}, Int(-3, 3)), View::kTranspose), 1, false, false});
        shapes.push_back({"sliced", viewed(in(d, {5, 6}, Int(-3, 3)), View::kSlice), 0, false, false});
        shapes.push_back({"large", in(d, {1000, 301}, R(-5, 5)), 1, false, false});
        shapes.push_back({"large_flatten", in(d, {1000, 301}, R(-5, 5)), 0, false, true});
      }
      for (const ArgShape& s : shapes) {
        const int64_t axis = s.axis;
        const bool keep = s.keepdim, flat = s.flatten;
        add_case(case_name(op, d, s.name), op, {s.x},
                 {{"axis", axis}, {"keepdim", int64_t{keep}}, {"flatten", int64_t{flat}}},
                 [=](const std::vector<Host>& x) {
                   return ref_reduce(x[0], flat ? Shape{} : Shape{axis}, keep, kI64, arg_extreme(is_max));
                 });
      }
    }
  }
}

// ---- matmul ----
void add_matmul_cases() {
  struct MatShape {
    std::string name;
    In x, y;
    bool tx, ty;
  };
  auto shapes = [](bool all) {
    std::vector<MatShape> v = {{"batch", in(kF32, {2, 3, 4}), in(kF32, {4, 5}), false, false}};
    if (!all) return v;
    v.push_back({"2d", in(kF32, {3, 4}), in(kF32, {4, 5}), false, false});
    v.push_back({"tx", in(kF32, {4, 3}), in(kF32, {4, 5}), true, false});
    v.push_back({"ty", in(kF32, {3, 4}), in(kF32, {5, 4}), false, true});
    v.push_back({"txty", in(kF32, {2, 4, 3}), in(kF32, {5, 4}), true, true});
    v.push_back({"vec_mat", in(kF32, {4}), in(kF32, {2, 4, 5}), false, false});
    v.push_back({"mat_vec", in(kF32, {3, 4}), in(kF32, {4}), false, false});
    v.push_back({"dot", in(kF32, {7}), in(kF32, {7}), false, false});
    v.push_back({"batch_bcast", in(kF32, {2, 1, 3, 4}), in(kF32, {3, 4, 5}), false, false});
    v.push_back({"transposed", viewed(in(kF32, {3, 4}), View::kTranspose),
                 viewed(in(kF32, {4, 5}), View::kTranspose), false, false});
    v.push_back({"sliced", viewed(in(kF32, {3, 4}), View::kSlice), viewed(in(kF32, {4, 5}), View::kReverse),
                 false, false});
    v.push_back({"expanded", viewed(in(kF32, {2, 3, 4}), View::kExpand, {1, 3, 4}), in(kF32, {2, 4, 5}),
                 false, false});
    v.push_back({"k0", in(kF32, {3, 0}), in(kF32, {0, 5}), false, false});
    v.push_back({"m0", in(kF32, {0, 4}), in(kF32, {4, 5}), false, false});
    v.push_back({"batch0", in(kF32, {0, 3, 4}), in(kF32, {4, 5}), false, false});
    v.push_back({"view_and_flag", viewed(in(kF32, {4, 3}), View::kTranspose),
                 viewed(in(kF32, {5, 4}), View::kSlice), true, true});
    v.push_back({"large", in(kF32, {64, 128}), in(kF32, {128, 96}), false, false});
    v.push_back({"odd", in(kF32, {67, 129}), in(kF32, {131, 129}), false, true});
    return v;
  };
  for (DType d : join({floats(), ints(), complexes()})) {
    const bool all = d == kF32 || d == kF64 || d == kBF16;
    for (MatShape s : shapes(all)) {
      s.x.dtype = s.y.dtype = d;
      s.x.range = s.y.range = is_int(d) ? Int(-3, 3) : R(-1, 1);
      const bool tx = s.tx, ty = s.ty;
      add_case(case_name("matmul", d, s.name), "matmul", {s.x, s.y},
               {{"transpose_x", int64_t{tx}}, {"transpose_y", int64_t{ty}}},
               [=](const std::vector<Host>& in) { return ref_matmul(in[0], in[1], tx, ty); });
    }
  }
}

// ---- creation ----
void add_creation_cases() {
  auto fill_case = [](DType d, const std::string& variant, Shape shape, double value) {
    add_case(case_name("fill", d, variant), "fill", {},
             {{"shape", shape}, {"value", value}, {"dtype", static_cast<int64_t>(d)}},
             [=](const std::vector<Host>&) {
               return finish(Host{d, shape, std::vector<cd>(static_cast<size_t>(numel(shape)), cd(value))});
             });
  };
  for (DType d : all_dtypes()) fill_case(d, "", {2, 3}, d == kU8 ? 7 : is_int(d) ? -7 : 2.5);
  fill_case(kF32, "scalar", {}, -1.25);
  fill_case(kF32, "empty", {0, 3}, 1);
  fill_case(kF64, "large", {1000, 100}, 0.1);
  fill_case(kI32, "frac", {4}, 2.75);  // value cast to dtype: truncates
  fill_case(kI64, "negfrac", {4}, -2.75);
  fill_case(kBool, "frac", {4}, 0.5);  // nonzero is true

  auto arange_case = [](DType d, const std::string& variant, double start, double end, double step) {
    add_case(case_name("arange", d, variant), "arange", {},
             {{"start", start}, {"end", end}, {"step", step}, {"dtype", static_cast<int64_t>(d)}},
             [=](const std::vector<Host>&) {
               const int64_t n = std::max<int64_t>(0, static_cast<int64_t>(std::ceil((end - start) / step)));
               Host h{d, {n}, {}};
               for (int64_t i = 0; i < n; ++i) {
                 h.v.push_back(start + static_cast<double>(i) * step);
                 h.mag.push_back(std::fabs(start) + std::fabs(static_cast<double>(i) * step));
               }
               return finish(h);
             });
  };
  for (DType d : real_not_bool()) {
    arange_case(d, "", 1, 11, 2);
    arange_case(d, "down", 10, 0, -3);
    arange_case(d, "empty", 5, 5, 1);
  }
  for (DType d : floats()) arange_case(d, "frac", 0.5, 3, 0.25);
  arange_case(kF64, "large", -1000, 1000, 0.01);

  // Random: element i uses counter offset + i and key seed; uniform takes the top 24 (float32) or
  // 53 (float64) bits; normal is Box-Muller on counters 2*(offset+i) and 2*(offset+i)+1.
  for (DType d : floats())
    for (int64_t offset : {int64_t{0}, int64_t{77}}) {
      const Shape shape = {40, 25};
      const double lo = -2, hi = 3;
      const uint64_t seed = 1234;
      add_case(case_name("uniform", d, "offset" + std::to_string(offset)), "uniform", {},
               {{"shape", shape},
                {"min", lo},
                {"max", hi},
                {"seed", static_cast<int64_t>(seed)},
                {"offset", offset},
                {"dtype", static_cast<int64_t>(d)}},
               [=](const std::vector<Host>&) {
                 Host h{d, shape, {}};
                 const int bits = d == kF64 ? 53 : 24;
                 for (int64_t i = 0; i < numel(shape); ++i)
                   h.v.push_back(lo + (hi - lo) * uniform01(seed, static_cast<uint64_t>(offset + i), bits));
                 return h;
               });
      add_case(case_name("normal", d, "offset" + std::to_string(offset)), "normal", {},
               {{"shape", shape},
                {"mean", 1.0},
                {"std", 2.0},
                {"seed", static_cast<int64_t>(seed)},
                {"offset", offset},
                {"dtype", static_cast<int64_t>(d)}},
               [=](const std::vector<Host>&) {
                 Host h{d, shape, {}};
                 for (int64_t i = 0; i < numel(shape); ++i) {
                   const uint64_t c = static_cast<uint64_t>(offset + i);
                   const double u1 = std::max(uniform01(seed, 2 * c, 53), 1e-300),
                                u2 = uniform01(seed, 2 * c + 1, 53);
                   h.v.push_back(1.0 + 2.0 * std::sqrt(-2 * std::log(u1)) * std::cos(2 * kPi * u2));
                 }
                 return h;
               });
    }
}

// ---- data movement ----
void add_movement_cases() {
  // cast: every dtype to every dtype. Non-negative values (some exactly 0) so that every target holds
  // them; a second set with negative values for the signed and float targets.
  for (DType from : all_dtypes())
    for (DType to : all_dtypes())
      add_case("cast_" + dname(from) + "_to_" + dname(to), "cast", {in(from, {3, 4}, WithZeros(R(0, 100)))},
               {{"dtype", static_cast<int64_t>(to)}},
               [=](const std::vector<Host>& x) { return ref_cast(x[0], to); });
  for (DType from : {kI8, kI16, kI32, kI64, kF32, kF64})
    for (DType to : {kBool, kI8, kI16, kI32, kI64, kF16, kF32, kF64, kC128})
      add_case("cast_" + dname(from) + "_to_" + dname(to) + "_signed", "cast",
               {in(from, {3, 4}, WithZeros(R(-100, 100)))}, {{"dtype", static_cast<int64_t>(to)}},
               [=](const std::vector<Host>& x) { return ref_cast(x[0], to); });
  for (const auto& tv :
       {std::pair{kF64, View::kTranspose}, std::pair{kI32, View::kSlice}, std::pair{kF16, View::kReverse}}) {
    const DType t = tv.first;
    const View view = tv.second;
    add_case("cast_float32_to_" + dname(t) + "_" + view_name(view), "cast",
             {viewed(in(kF32, {4, 6}, R(0, 100)), view)}, {{"dtype", static_cast<int64_t>(t)}},
             [=](const std::vector<Host>& x) { return ref_cast(x[0], t); });
  }

  // Out-of-range values become inf in 16-bit floats (and in float32 from float64).
  for (auto [from, to, lo, hi] : {std::tuple{kF32, kF16, 6e4, 1e5}, std::tuple{kF64, kF32, 3e38, 1e39},
                                  std::tuple{kF64, kF16, -1e5, -6e4}}) {
    const DType t = to;
    add_case("cast_" + dname(from) + "_to_" + dname(to) + "_overflow", "cast", {in(from, {20}, R(lo, hi))},
             {{"dtype", static_cast<int64_t>(to)}}, [t](const std::vector<Host>& x) {
               Host h = ref_cast(x[0], t);
               h.v = quantize(t, h.v);
               return h;
             });
  }

  // copy: a contiguous copy of any view.
  const RefFn identity = [](const std::vector<Host>& x) { return x[0]; };
  for (DType d : all_dtypes()) {
    add_case(case_name("copy", d, "transposed"), "copy",
             {viewed(in(d, {3, 4}, R(-10, 10)), View::kTranspose)}, {}, identity);
    add_case(case_name("copy", d, "expanded"), "copy",
             {viewed(in(d, {3, 4}, R(-10, 10)), View::kExpand, {3, 1})}, {}, identity);
  }
  for (auto view : {View::kSlice, View::kReverse})
    add_case(case_name("copy", kF32, view_name(view)), "copy", {viewed(in(kF32, {5, 3, 2}), view)}, {},
             identity);
  add_case(case_name("copy", kF32, "contiguous"), "copy", {in(kF32, {5, 3})}, {}, identity);
  add_case(case_name("copy", kF32, "scalar"), "copy", {in(kF32, {})}, {}, identity);
  add_case(case_name("copy", kF32, "empty"), "copy", {viewed(in(kF32, {0, 3}), View::kTranspose)}, {},
           identity);
  add_case(case_name("copy", kF32, "large_transposed"), "copy",
           {viewed(in(kF32, {513, 257}), View::kTranspose)}, {}, identity);
  add_case(case_name("copy", kF32, "expand_leading"), "copy",
           {viewed(in(kF32, {4, 2, 3}), View::kExpand, {3})}, {}, identity);

  // concat
  auto concat_case = [](DType d, const std::string& variant, std::vector<In> xs, int64_t axis) {
    for (In& x : xs) x.dtype = d, x.range = R(-10, 10);
    add_case(case_name("concat", d, variant), "concat", xs, {{"axis", axis}},
             [=](const std::vector<Host>& h) { return ref_concat(h, axis); });
  };
  for (DType d : all_dtypes()) concat_case(d, "axis1", {in(d, {2, 3}), in(d, {2, 0}), in(d, {2, 4})}, 1);
  concat_case(kF32, "axis0", {in(kF32, {1, 3}), in(kF32, {2, 3})}, 0);
  concat_case(kF32, "axis_neg", {in(kF32, {2, 2, 1}), in(kF32, {2, 2, 3})}, -1);
  concat_case(kF32, "vec", {in(kF32, {3}), in(kF32, {0}), in(kF32, {5})}, 0);
  concat_case(kF32, "one", {in(kF32, {3, 2})}, 1);
  concat_case(kF32, "many",
              {in(kF32, {1, 2}), in(kF32, {2, 2}), in(kF32, {3, 2}), in(kF32, {1, 2}), in(kF32, {2, 2}),
               in(kF32, {4, 2})},
              0);
  concat_case(kF32, "views",
              {viewed(in(kF32, {3, 4}), View::kTranspose), viewed(in(kF32, {3, 2}), View::kSlice),
               viewed(in(kF32, {3, 5}), View::kExpand, {1, 5})},
              1);
  concat_case(kF32, "large", {in(kF32, {300, 200}), in(kF32, {300, 100})}, 1);

  // index_select: repeated indices, int32 and int64 indices.
  auto index_case = [](DType d, const std::string& variant, In x, In index, int64_t axis) {
    x.dtype = d;
    x.range = R(-10, 10);
    add_case(case_name("index_select", d, variant), "index_select", {x, index}, {{"axis", axis}},
             [=](const std::vector<Host>& h) { return ref_index_select(h[0], h[1], axis); });
  };
  for (DType d : all_dtypes()) index_case(d, "", in(d, {4, 3}), values(kI64, {5}, {2, 0, 2, 3, 1}), 0);
  index_case(kF32, "int32_axis1", in(kF32, {2, 5}), values(kI32, {3}, {4, 4, 0}), 1);
  index_case(kF32, "axis_neg", in(kF32, {2, 3, 4}), values(kI64, {2}, {3, 0}), -1);
  index_case(kF32, "empty_index", in(kF32, {4, 3}), values(kI64, {0}, {}), 0);
  index_case(kF32, "vec", in(kF32, {6}), values(kI32, {4}, {5, 0, 5, 1}), 0);

  // index_add: repeated indices accumulate.
  auto index_add_case = [](DType d, const std::string& variant, In x, In index, In src, int64_t axis) {
    x.dtype = src.dtype = d;
    x.range = src.range = R(-10, 10);
    add_case(case_name("index_add", d, variant), "index_add", {x, index, src}, {{"axis", axis}},
             [=](const std::vector<Host>& h) { return ref_index_add(h[0], h[1], h[2], axis); });
  };
  for (DType d : all_but_bool())
    index_add_case(d, "", in(d, {4, 3}), values(kI64, {5}, {2, 0, 2, 3, 1}), in(d, {5, 3}), 0);
  index_add_case(kF32, "int32_axis1", in(kF32, {2, 5}), values(kI32, {3}, {4, 4, 0}), in(kF32, {2, 3}), 1);
  index_add_case(kF64, "axis_neg", in(kF64, {2, 3, 4}), values(kI64, {2}, {3, 0}), in(kF64, {2, 3, 2}), -1);
  index_add_case(kF32, "views", viewed(in(kF32, {3, 4}), View::kTranspose), values(kI64, {2}, {1, 1}),
                 in(kF32, {2, 4}), 0);
  index_case(kF32, "index_view", in(kF32, {4, 3}), viewed(values(kI32, {4}, {3, 3, 0, 1}), View::kReverse),
             0);
  index_case(kF32, "transposed", viewed(in(kF32, {5, 4}), View::kTranspose), values(kI64, {3}, {1, 3, 2}), 1);
  {
    std::vector<cd> idx;
    for (int i = 0; i < 500; ++i) idx.push_back((i * 37) % 1000);
    index_case(kF32, "large", in(kF32, {1000, 64}), values(kI64, {500}, idx), 0);
  }

  // where: condition, x and y broadcast together.
  auto where_case = [](DType d, const std::string& variant, In c, In x, In y) {
    c.dtype = kBool;
    x.dtype = y.dtype = d;
    x.range = y.range = R(-10, 10);
    add_case(case_name("where", d, variant), "where", {c, x, y}, {}, [d](const std::vector<Host>& h) {
      return ref_map(h, d, [](const std::vector<cd>& a) { return a[0] != cd(0) ? a[1] : a[2]; });
    });
  };
  for (DType d : all_dtypes()) where_case(d, "bcast", in(kBool, {3, 1}), in(d, {3, 4}), in(d, {4}));
  where_case(kF32, "same", in(kBool, {4, 5}), in(kF32, {4, 5}), in(kF32, {4, 5}));
  where_case(kF32, "scalar_y", in(kBool, {2, 3}), in(kF32, {2, 3}), in(kF32, {}));
  where_case(kF32, "cond_bcast", in(kBool, {5}), in(kF32, {2, 1}), in(kF32, {2, 5}));
  where_case(kF32, "views", viewed(in(kBool, {4, 3}), View::kTranspose),
             viewed(in(kF32, {4, 3}), View::kSlice), viewed(in(kF32, {4, 3}), View::kExpand, {3}));

  // softmax / log_softmax
  for (const char* op : {"softmax", "log_softmax"}) {
    const bool log = std::string(op) == "log_softmax";
    auto sm_case = [&](DType d, const std::string& variant, In x, int64_t axis) {
      x.dtype = d;
      add_case(case_name(op, d, variant), op, {x}, {{"axis", axis}},
               [=](const std::vector<Host>& h) { return ref_softmax(h[0], axis, log); });
    };
    for (DType d : floats()) sm_case(d, "", in(d, {3, 5}, R(-3, 3)), -1);
    sm_case(kF32, "axis0", in(kF32, {3, 5}, R(-3, 3)), 0);
    sm_case(kF32, "axis1_of3", in(kF32, {2, 3, 4}, R(-3, 3)), 1);
    sm_case(kF32, "vec", in(kF32, {7}, R(-3, 3)), 0);
    sm_case(kF32, "scalar", in(kF32, {}, R(-3, 3)), 0);
    sm_case(kF32, "stable", in(kF32, {4, 6}, R(50, 100)),
            -1);  // exp(100) overflows float32 without max-shift
    sm_case(kF64, "stable", in(kF64, {4, 6}, R(500, 1000)), -1);
    sm_case(kF32, "transposed", viewed(in(kF32, {4, 6}, R(-3, 3)), View::kTranspose), -1);
    sm_case(kF32, "large", in(kF32, {64, 1000}, R(-3, 3)), -1);
  }
}

// Ops without a sim kernel fall back to cpu: allow it quietly here (test_fallback tests the policy).
class AllowFallback : public ::testing::Environment {
 public:
  void SetUp() override {
    saved_ = oar::fallback_config();
    oar::FallbackConfig c;
    c.policy = oar::FallbackPolicy::kAllow;
    oar::set_fallback_config(c);
  }
  void TearDown() override { oar::set_fallback_config(saved_); }

 private:
  oar::FallbackConfig saved_;
};
const auto* const kAllowFallback = ::testing::AddGlobalTestEnvironment(new AllowFallback);

const std::vector<Case>& cases() {
  static const std::vector<Case>* all = [] {
    add_elementwise_binary_cases();
    add_elementwise_unary_cases();
    add_reduction_cases();
    add_matmul_cases();
    add_creation_cases();
    add_movement_cases();
    // Names must be unique for GoogleTest; number repeats.
    std::map<std::string, int> seen;
    for (Case& c : case_list())
      if (int n = seen[c.name]++) c.name += "_" + std::to_string(n + 1);
    return &case_list();
  }();
  return *all;
}

uint32_t seed_of(const std::string& s) {  // FNV-1a: the same inputs for a case on every place and run
  uint32_t h = 2166136261u;
  for (char c : s) h = (h ^ static_cast<uint8_t>(c)) * 16777619u;
  return h;
}

// ==== the parameterised tests =======================================================================

using OpParam = std::tuple<size_t, std::string>;  // case index, place
class OpConformance : public ::testing::TestWithParam<OpParam> {};

TEST_P(OpConformance, MatchesReference) {
  const Case& c = cases()[std::get<0>(GetParam())];
  const Place place = Place::parse(std::get<1>(GetParam()));
  std::mt19937 rng(seed_of(c.name));
  std::vector<Host> logical;
  std::vector<Tensor> tensors;
  for (const In& i : c.inputs) {
    auto [h, t] = make_input(i, place, rng);
    logical.push_back(std::move(h));
    tensors.push_back(std::move(t));
  }
  std::vector<Tensor> outs;
  try {
    outs = oar::call_op(c.op, tensors, c.attrs, place);
  } catch (const oar::Error& e) {
    FAIL() << c.op << " on " << place.to_string() << " threw " << oar::error_code_name(e.code()) << ": "
           << e.what();
  }
  ASSERT_EQ(outs.size(), 1u);
  EXPECT_EQ(outs[0].place().to_string(), place.to_string()) << "the output lives where the op ran";
  EXPECT_TRUE(outs[0].is_contiguous()) << "outputs are contiguous";
  expect_matches(c.ref(logical), download(outs[0]));
  // The op must not have written to its inputs.
  for (size_t k = 0; k < tensors.size(); ++k) {
    const Host after = download(tensors[k]);
    bool same = after.v.size() == logical[k].v.size();
    for (size_t i = 0; same && i < after.v.size(); ++i)
      same = after.v[i] == logical[k].v[i] ||
             (std::isnan(after.v[i].real()) && std::isnan(logical[k].v[i].real()));
    EXPECT_TRUE(same) << "input " << k << " was modified by " << c.op;
  }
}

std::string op_param_name(const ::testing::TestParamInfo<OpParam>& info) {
  return cases()[std::get<0>(info.param)].name + "_" + sanitize(std::get<1>(info.param));
}

INSTANTIATE_TEST_SUITE_P(Ops, OpConformance,
                         ::testing::Combine(::testing::Range<size_t>(0, cases().size()),
                                            ::testing::ValuesIn(place_names())),
                         op_param_name);

// Every op of docs/ops.md has cases, and every dtype the contract lists for it is covered.
TEST(OpConformanceTable, CoversEveryOpAndDtype) {
  const std::map<std::string, std::vector<DType>> contract = {
      {"add", all_but_bool()},
      {"subtract", all_but_bool()},
      {"multiply", all_but_bool()},
      {"divide", all_but_bool()},
      {"floor_divide", real_not_bool()},
      {"remainder", real_not_bool()},
      {"maximum", real_not_bool()},
      {"minimum", real_not_bool()},
      {"pow", real_not_bool()},
      {"equal", all_dtypes()},
      {"not_equal", all_dtypes()},
      {"less_than", real_dtypes()},
      {"less_equal", real_dtypes()},
      {"greater_than", real_dtypes()},
      {"greater_equal", real_dtypes()},
      {"logical_and", real_dtypes()},
      {"logical_or", real_dtypes()},
      {"logical_xor", real_dtypes()},
      {"neg", real_not_bool()},
      {"abs", real_not_bool()},
      {"square", real_not_bool()},
      {"sign", real_not_bool()},
      {"relu", real_not_bool()},
      {"exp", floats()},
      {"log", floats()},
      {"log1p", floats()},
      {"expm1", floats()},
      {"sqrt", floats()},
      {"rsqrt", floats()},
      {"sin", floats()},
      {"cos", floats()},
      {"tanh", floats()},
      {"sigmoid", floats()},
      {"floor", floats()},
      {"ceil", floats()},
      {"round", floats()},
      {"reciprocal", floats()},
      {"erf", floats()},
      {"logical_not", real_dtypes()},
      {"isnan", floats()},
      {"isinf", floats()},
      {"isfinite", floats()},
      {"sum", all_dtypes()},
      {"mean", floats()},
      {"max", real_dtypes()},
      {"min", real_dtypes()},
      {"prod", all_but_bool()},
      {"argmax", real_dtypes()},
      {"argmin", real_dtypes()},
      {"matmul", join({floats(), ints(), complexes()})},
      {"fill", all_dtypes()},
      {"arange", real_not_bool()},
      {"uniform", floats()},
      {"normal", floats()},
      {"cast", all_dtypes()},
      {"copy", all_dtypes()},
      {"concat", all_dtypes()},
      {"index_select", all_dtypes()},
      {"index_add", all_but_bool()},
      {"where", all_dtypes()},
      {"softmax", floats()},
      {"log_softmax", floats()},
  };
  std::map<std::string, std::set<std::string>> covered;
  for (const Case& c : cases())
    for (DType d : all_dtypes())
      if (c.name.rfind(c.op + "_" + dname(d), 0) == 0) covered[c.op].insert(dname(d));
  for (const auto& [op, dtypes] : contract) {
    EXPECT_NE(oar::OpRegistry::get().find(op), nullptr) << op << " is in docs/ops.md but not in the core";
    for (DType d : dtypes) EXPECT_TRUE(covered[op].count(dname(d))) << op << " has no case for " << dname(d);
  }
  // That every op the core defines is tested (here, or by the Python op suite for the op families of
  // framework/src/ops_*.cc) is checked by tests/python/test_op_coverage.py.
}

// The suite is meant to run on cpu and on both simulated devices; a plugin that failed to load must
// not silently shrink it.
TEST(OpConformanceTable, ExpectedPlacesArePresent) {
  const std::vector<std::string> places = place_names();
  for (const char* p : {"cpu", "sim:0", "sim:1"})
    EXPECT_NE(std::find(places.begin(), places.end(), p), places.end())
        << p << " is missing from all_places()";
}

// ==== errors ========================================================================================

class OpErrors : public ::testing::TestWithParam<std::string> {
 protected:
  Place place() const { return Place::parse(GetParam()); }
  Tensor t(DType d, Shape s, std::vector<cd> v = {}) {
    if (v.empty()) v.assign(static_cast<size_t>(numel(s)), cd(1));
    return upload(Host{d, std::move(s), std::move(v)}, place());
  }
};

TEST_P(OpErrors, ShapeMismatchIsInvalidArgumentNamingTheOp) {
  EXPECT_TRUE(throws_error(
      [&] {
        oar::ops::add(t(kF32, {2, 3}), t(kF32, {4, 3}));
      },
      ErrorCode::kInvalidArgument, "add"));
  EXPECT_TRUE(throws_error(
      [&] {
        oar::ops::subtract(t(kF32, {2, 3}), t(kF32, {2}));
      },
      ErrorCode::kInvalidArgument, "subtract"));
  EXPECT_TRUE(throws_error([&] { oar::ops::less_than(t(kI32, {5}), t(kI32, {4})); },
                           ErrorCode::kInvalidArgument, "less_than"));
  EXPECT_TRUE(throws_error(
      [&] {
        oar::ops::matmul(t(kF32, {2, 3}), t(kF32, {4, 5}));
      },
      ErrorCode::kInvalidArgument, "matmul"));
  EXPECT_TRUE(throws_error(
      [&] {
        oar::ops::matmul(t(kF32, {2, 2, 3}), t(kF32, {3, 3, 5}));
      },
      ErrorCode::kInvalidArgument, "matmul"));
  EXPECT_TRUE(throws_error(
      [&] {
        oar::ops::concat({t(kF32, {2, 3}), t(kF32, {3, 3})}, 1);
      },
      ErrorCode::kInvalidArgument, "concat"));
  EXPECT_TRUE(throws_error(
      [&] {
        oar::ops::concat({t(kF32, {}), t(kF32, {})}, 0);
      },
      ErrorCode::kInvalidArgument, "concat"));
  EXPECT_TRUE(throws_error([&] { oar::ops::matmul(t(kF32, {}), t(kF32, {3})); }, ErrorCode::kInvalidArgument,
                           "matmul"));
  EXPECT_TRUE(throws_error(
      [&] {
        oar::ops::where(t(kBool, {3}), t(kF32, {2, 4}), t(kF32, {4}));
      },
      ErrorCode::kInvalidArgument, "where"));
  EXPECT_TRUE(throws_error(
      [&] {
        oar::ops::index_select(t(kF32, {3, 3}), t(kI64, {2, 1}), 0);
      },
      ErrorCode::kInvalidArgument, "index_select"));
  // Reductions that have no identity refuse an empty extent.
  EXPECT_TRUE(throws_error([&] { oar::ops::max(t(kF32, {3, 0}), {1}); }, ErrorCode::kInvalidArgument, "max"));
  EXPECT_TRUE(
      throws_error([&] { oar::ops::argmin(t(kF32, {0}), 0); }, ErrorCode::kInvalidArgument, "argmin"));
  // Inputs on different places.
  for (const std::string& other : place_names())
    if (other != GetParam())
      EXPECT_TRUE(throws_error(
          [&] {
            oar::ops::add(t(kF32, {2}), upload(Host{kF32, {2}, {1, 2}}, Place::parse(other)));
          },
          ErrorCode::kInvalidArgument, "add"))
          << GetParam() << " + " << other;
}

TEST_P(OpErrors, DtypeMismatchIsTypeError) {
  EXPECT_TRUE(throws_error([&] { oar::ops::add(t(kF32, {2}), t(kF64, {2})); }, ErrorCode::kType, "add"));
  EXPECT_TRUE(throws_error([&] { oar::ops::equal(t(kI32, {2}), t(kI64, {2})); }, ErrorCode::kType, "equal"));
  EXPECT_TRUE(throws_error(
      [&] {
        oar::ops::matmul(t(kF32, {2, 2}), t(kI32, {2, 2}));
      },
      ErrorCode::kType, "matmul"));
  EXPECT_TRUE(throws_error([&] { oar::ops::where(t(kF32, {2}), t(kF32, {2}), t(kF32, {2})); },
                           ErrorCode::kType, "where"));
  EXPECT_TRUE(throws_error([&] { oar::ops::where(t(kBool, {2}), t(kF32, {2}), t(kI32, {2})); },
                           ErrorCode::kType, "where"));
  EXPECT_TRUE(throws_error([&] { oar::ops::index_select(t(kF32, {3}), t(kF32, {1}), 0); }, ErrorCode::kType,
                           "index_select"));
  EXPECT_TRUE(throws_error(
      [&] {
        oar::ops::concat({t(kF32, {2}), t(kF64, {2})}, 0);
      },
      ErrorCode::kType, "concat"));
  // Dtypes outside an op's contract.
  EXPECT_TRUE(throws_error([&] { oar::ops::exp(t(kI32, {2})); }, ErrorCode::kType, "exp"));
  EXPECT_TRUE(throws_error([&] { oar::ops::mean(t(kI64, {2})); }, ErrorCode::kType, "mean"));
  EXPECT_TRUE(throws_error([&] { oar::ops::softmax(t(kI32, {2})); }, ErrorCode::kType, "softmax"));
  EXPECT_TRUE(
      throws_error([&] { oar::ops::maximum(t(kC64, {2}), t(kC64, {2})); }, ErrorCode::kType, "maximum"));
  EXPECT_TRUE(throws_error([&] { oar::ops::add(t(kBool, {2}), t(kBool, {2})); }, ErrorCode::kType, "add"));
  EXPECT_TRUE(
      throws_error([&] { oar::ops::uniform({2}, 0, 1, kI32, 1, place()); }, ErrorCode::kType, "uniform"));
}

TEST_P(OpErrors, AxisOutOfRangeIsOutOfRange) {
  EXPECT_TRUE(throws_error([&] { oar::ops::sum(t(kF32, {2, 3}), {2}); }, ErrorCode::kOutOfRange, "sum"));
  EXPECT_TRUE(throws_error([&] { oar::ops::mean(t(kF32, {2, 3}), {-3}); }, ErrorCode::kOutOfRange, "mean"));
  EXPECT_TRUE(throws_error([&] { oar::ops::argmax(t(kF32, {2, 3}), 2); }, ErrorCode::kOutOfRange, "argmax"));
  EXPECT_TRUE(throws_error(
      [&] {
        oar::ops::softmax(t(kF32, {2, 3}), -3);
      },
      ErrorCode::kOutOfRange, "softmax"));
  EXPECT_TRUE(throws_error(
      [&] {
        oar::ops::concat({t(kF32, {2}), t(kF32, {2})}, 1);
      },
      ErrorCode::kOutOfRange, "concat"));
  EXPECT_TRUE(throws_error(
      [&] {
        oar::ops::index_select(t(kF32, {2, 3}), t(kI64, {1}, {0}), 2);
      },
      ErrorCode::kOutOfRange, "index_select"));
}

TEST_P(OpErrors, IndexSelectOutOfRangeIndexIsOutOfRange) {
  // A device with asynchronous kernels may report it at the next synchronization (reading the result) rather
  // than at the call (the gpu plugin: decision 47); either way it is an OutOfRange error naming the op.
  for (DType it : {kI32, kI64}) {
    EXPECT_TRUE(throws_error(
        [&] {
          download(oar::ops::index_select(t(kF32, {4, 3}), t(it, {3}, {0, 4, 1}), 0));
        },
        ErrorCode::kOutOfRange, "index_select"))
        << dname(it);
    EXPECT_TRUE(throws_error(
        [&] {
          download(oar::ops::index_select(t(kF32, {4, 3}), t(it, {2}, {1, 1000000}), 1));
        },
        ErrorCode::kOutOfRange, "index_select"))
        << dname(it);
    EXPECT_TRUE(throws_error(
        [&] {
          download(oar::ops::index_select(t(kF32, {4, 3}), t(it, {2}, {0, -1}), 0));
        },
        ErrorCode::kOutOfRange, "index_select"))
        << dname(it) << ": indices are in [0, n)";
  }
  // The tensor is still usable afterwards (no corrupted state).
  Tensor ok = oar::ops::index_select(t(kF32, {4, 3}), t(kI64, {1}, {3}), 0);
  EXPECT_EQ(shape_str(ok.dims().to_vector()), "[1, 3]");
}

TEST_P(OpErrors, IntegerDivisionByZeroIsAnErrorNotACrash) {
  for (DType d : ints()) {
    SCOPED_TRACE(dname(d));
    Tensor x = t(d, {4}, {7, 1, 2, 3}), y = t(d, {4}, {1, 2, 0, 3});
    EXPECT_TRUE(
        throws_error([&] { download(oar::ops::divide(x, y)); }, ErrorCode::kInvalidArgument, "divide"));
    for (const char* op : {"floor_divide", "remainder"}) {
      try {
        download(oar::call_op(op, {x, y}, {}, place())[0]);
        ADD_FAILURE() << op << " by an integer 0 did not fail";
      } catch (const oar::Error& e) {
        EXPECT_NE(std::string(e.what()).find(op), std::string::npos) << e.what();
      }
    }
  }
  // INT_MIN / -1 overflows in C; it must not trap either (the result wraps as in numpy).
  auto no_crash = [](auto fn) {
    try {
      fn();
    } catch (const oar::Error&) {
    }
  };
  no_crash([&] { download(oar::ops::divide(t(kI32, {1}, {-2147483648.0}), t(kI32, {1}, {-1}))); });
  no_crash([&] {
    download(
        oar::call_op("floor_divide", {t(kI32, {1}, {-2147483648.0}), t(kI32, {1}, {-1})}, {}, place())[0]);
  });
  no_crash([&] {
    download(oar::call_op("remainder", {t(kI32, {1}, {-2147483648.0}), t(kI32, {1}, {-1})}, {}, place())[0]);
  });
}

TEST_P(OpErrors, IntegerPowWithNegativeExponentIsAnError) {
  EXPECT_TRUE(throws_error(
      [&] {
        download(oar::ops::pow(t(kI32, {2}, {2, 3}), t(kI32, {2}, {1, -1})));
      },
      ErrorCode::kInvalidArgument, "pow"));
}

TEST_P(OpErrors, MissingAttributesAndWrongArity) {
  EXPECT_TRUE(throws_error([&] { oar::call_op("cast", {t(kF32, {2})}, {}, place()); },
                           ErrorCode::kInvalidArgument, "dtype"));
  EXPECT_TRUE(throws_error([&] { oar::call_op("add", {t(kF32, {2})}, {}, place()); },
                           ErrorCode::kInvalidArgument, "add"));
  EXPECT_TRUE(throws_error(
      [&] {
        oar::call_op("sum", {t(kF32, {2})}, {{"axis", 1.5}}, place());
      },
      ErrorCode::kType, "axis"));
}

INSTANTIATE_TEST_SUITE_P(Ops, OpErrors, ::testing::ValuesIn(place_names()),
                         [](const ::testing::TestParamInfo<std::string>& i) { return sanitize(i.param); });

// ==== transfers =====================================================================================

// Views (transposed, sliced, reversed, expanded) copied to every other place hold the logical values.
class Transfers : public ::testing::TestWithParam<std::string> {};

TEST_P(Transfers, ViewsCopyToEveryPlace) {
  const Place from = Place::parse(GetParam());
  std::mt19937 rng(11);
  for (DType d : {kF32, kF64, kI8, kBool, kC128, kBF16})
    for (In i :
         {viewed(in(d, {5, 7}, R(-9, 9)), View::kTranspose), viewed(in(d, {4, 3}, R(-9, 9)), View::kSlice),
          viewed(in(d, {4, 3}, R(-9, 9)), View::kReverse),
          viewed(in(d, {3, 4}, R(-9, 9)), View::kExpand, {4}), in(d, {}, R(-9, 9)),
          in(d, {0, 2}, R(-9, 9))}) {
      auto [logical, t] = make_input(i, from, rng);
      for (const std::string& to : place_names()) {
        const Tensor moved = t.to(Place::parse(to));
        EXPECT_EQ(moved.place().to_string(), to);
        expect_matches(logical, download(moved),
                       dname(d) + " " + view_name(i.view) + " " + GetParam() + " -> " + to);
      }
    }
}

INSTANTIATE_TEST_SUITE_P(Ops, Transfers, ::testing::ValuesIn(place_names()),
                         [](const ::testing::TestParamInfo<std::string>& i) { return sanitize(i.param); });

// ==== random ops ====================================================================================

class RandomOps : public ::testing::TestWithParam<std::string> {
 protected:
  Place place() const { return Place::parse(GetParam()); }
};

Tensor random_tensor(const char* op, DType d, Shape shape, uint64_t seed, int64_t offset, Place place,
                     double a, double b) {
  const bool uni = std::string(op) == "uniform";
  Attrs attrs{{"shape", shape},
              {"seed", static_cast<int64_t>(seed)},
              {"offset", offset},
              {"dtype", static_cast<int64_t>(d)}};
  attrs.set(uni ? "min" : "mean", a);
  attrs.set(uni ? "max" : "std", b);
  return oar::call_op(op, {}, attrs, place)[0];
}

std::vector<uint8_t> raw_bytes(const Tensor& t) {
  std::vector<uint8_t> b(static_cast<size_t>(t.numel() * esize(t.dtype())));
  t.copy_to_host(b.data(), b.size());
  return b;
}

TEST_P(RandomOps, SameSeedGivesIdenticalNumbersOnEveryPlace) {
  for (const char* op : {"uniform", "normal"})
    for (DType d : floats()) {
      const Tensor here = random_tensor(op, d, {333, 7}, 99, 5, place(), -1, 2);
      const Tensor there = random_tensor(op, d, {333, 7}, 99, 5, oar::cpu_place(), -1, 2);
      EXPECT_EQ(here.place().to_string(), place().to_string());
      EXPECT_TRUE(raw_bytes(here) == raw_bytes(there)) << op << " " << dname(d) << " differs from cpu";
      EXPECT_TRUE(raw_bytes(here) == raw_bytes(random_tensor(op, d, {333, 7}, 99, 5, place(), -1, 2)))
          << op << " " << dname(d) << " is not reproducible";
    }
}

TEST_P(RandomOps, OffsetShiftsTheCounter) {
  for (const char* op : {"uniform", "normal"}) {
    const Host a = download(random_tensor(op, kF64, {100}, 7, 0, place(), 0, 1));
    const Host b = download(random_tensor(op, kF64, {90}, 7, 10, place(), 0, 1));
    for (int i = 0; i < 90; ++i) ASSERT_EQ(a.v[10 + i], b.v[i]) << op << " element " << i;
  }
}

TEST_P(RandomOps, UniformStatistics) {
  for (DType d : {kF32, kF64, kBF16}) {
    const double lo = -2, hi = 3;
    const Host h = download(random_tensor("uniform", d, {1 << 20}, 2024, 0, place(), lo, hi));
    double s = 0, s2 = 0, mn = INFINITY, mx = -INFINITY;
    for (const cd& v : h.v)
      s += v.real(), s2 += v.real() * v.real(), mn = std::min(mn, v.real()), mx = std::max(mx, v.real());
    const double n = static_cast<double>(h.v.size()), mean = s / n, sd = std::sqrt(s2 / n - mean * mean);
    const double want_sd = (hi - lo) / std::sqrt(12.0);
    EXPECT_NEAR(mean, (lo + hi) / 2, 6 * want_sd / std::sqrt(n) + (d == kBF16 ? 0.02 : 0)) << dname(d);
    EXPECT_NEAR(sd, want_sd, 0.01 * want_sd) << dname(d);
    EXPECT_GE(mn, lo) << dname(d);
    if (d != kBF16) EXPECT_LT(mx, hi) << dname(d);  // bf16 may round up to the bound
    EXPECT_LT(mn, lo + 0.01) << dname(d);
    EXPECT_GT(mx, hi - 0.02) << dname(d);
  }
}

TEST_P(RandomOps, NormalStatistics) {
  for (DType d : {kF32, kF64, kF16}) {
    const double mu = 1, sigma = 2;
    const Host h = download(random_tensor("normal", d, {1 << 20}, 31337, 0, place(), mu, sigma));
    double s = 0, s2 = 0, within1 = 0;
    for (const cd& v : h.v) {
      s += v.real();
      s2 += v.real() * v.real();
      within1 += std::fabs(v.real() - mu) <= sigma;
    }
    const double n = static_cast<double>(h.v.size()), mean = s / n, sd = std::sqrt(s2 / n - mean * mean);
    EXPECT_NEAR(mean, mu, 6 * sigma / std::sqrt(n) + (d == kF16 ? 0.005 : 0)) << dname(d);
    EXPECT_NEAR(sd, sigma, 0.01 * sigma) << dname(d);
    EXPECT_NEAR(within1 / n, 0.6827, 0.005) << dname(d);
  }
}

TEST_P(RandomOps, DifferentSeedsDiffer) {
  for (const char* op : {"uniform", "normal"}) {
    const Host a = download(random_tensor(op, kF32, {10000}, 1, 0, place(), 0, 1));
    const Host b = download(random_tensor(op, kF32, {10000}, 2, 0, place(), 0, 1));
    int same = 0;
    for (size_t i = 0; i < a.v.size(); ++i) same += a.v[i] == b.v[i];
    EXPECT_LT(same, 10) << op;
  }
}

TEST_P(RandomOps, GlobalGenerator) {
  oar::ops::manual_seed(5);
  const auto a = raw_bytes(oar::ops::uniform({1000}, 0, 1, kF32, 0, place()));
  const auto b = raw_bytes(oar::ops::uniform({1000}, 0, 1, kF32, 0, place()));
  EXPECT_FALSE(a == b) << "the global generator advances";
  oar::ops::manual_seed(5);
  EXPECT_TRUE(a == raw_bytes(oar::ops::uniform({1000}, 0, 1, kF32, 0, place()))) << "manual_seed restarts it";
  EXPECT_TRUE(b == raw_bytes(oar::ops::uniform({1000}, 0, 1, kF32, 0, place())));
}

INSTANTIATE_TEST_SUITE_P(Ops, RandomOps, ::testing::ValuesIn(place_names()),
                         [](const ::testing::TestParamInfo<std::string>& i) { return sanitize(i.param); });

// ==== the C++ API ===================================================================================

// Every oar::ops function gives exactly what call_op gives for its op, on every place.
class CppApi : public ::testing::TestWithParam<std::string> {
 protected:
  Place place() const { return Place::parse(GetParam()); }
};

TEST_P(CppApi, WrappersMatchCallOp) {
  std::mt19937 rng(7);
  auto mk = [&](DType d, Shape s, Range r) {
    return upload(Host{d, s, generate(d, numel(s), r, rng)}, place());
  };
  const Tensor x = mk(kF32, {3, 4}, R(0.5, 2)), y = mk(kF32, {4}, R(0.5, 2)), c = mk(kBool, {3, 1}, {});
  auto same = [&](const Tensor& a, const char* op, std::vector<Tensor> in, Attrs attrs = {}) {
    const Tensor b = oar::call_op(op, in, attrs, place())[0];
    EXPECT_EQ(a.place().to_string(), place().to_string()) << op;
    EXPECT_TRUE(raw_bytes(a) == raw_bytes(b) && a.dims() == b.dims() && a.dtype() == b.dtype()) << op;
  };
  same(oar::ops::add(x, y), "add", {x, y});
  same(oar::ops::subtract(x, y), "subtract", {x, y});
  same(oar::ops::multiply(x, y), "multiply", {x, y});
  same(oar::ops::divide(x, y), "divide", {x, y});
  same(oar::ops::floor_divide(x, y), "floor_divide", {x, y});
  same(oar::ops::remainder(x, y), "remainder", {x, y});
  same(oar::ops::maximum(x, y), "maximum", {x, y});
  same(oar::ops::minimum(x, y), "minimum", {x, y});
  same(oar::ops::pow(x, y), "pow", {x, y});
  same(oar::ops::equal(x, y), "equal", {x, y});
  same(oar::ops::not_equal(x, y), "not_equal", {x, y});
  same(oar::ops::less_than(x, y), "less_than", {x, y});
  same(oar::ops::less_equal(x, y), "less_equal", {x, y});
  same(oar::ops::greater_than(x, y), "greater_than", {x, y});
  same(oar::ops::greater_equal(x, y), "greater_equal", {x, y});
  same(oar::ops::logical_and(x, y), "logical_and", {x, y});
  same(oar::ops::logical_or(x, y), "logical_or", {x, y});
  same(oar::ops::logical_xor(x, y), "logical_xor", {x, y});
  same(oar::ops::unary("erf", x), "erf", {x});
  same(oar::ops::exp(x), "exp", {x});
  same(oar::ops::log(x), "log", {x});
  same(oar::ops::sqrt(x), "sqrt", {x});
  same(oar::ops::tanh(x), "tanh", {x});
  same(oar::ops::sigmoid(x), "sigmoid", {x});
  same(oar::ops::relu(x), "relu", {x});
  same(oar::ops::neg(x), "neg", {x});
  same(oar::ops::abs(x), "abs", {x});
  same(oar::ops::sum(x, {-1}, true), "sum", {x}, {{"axis", Shape{1}}, {"keepdim", int64_t{1}}});
  same(oar::ops::mean(x), "mean", {x}, {{"axis", Shape{}}});
  same(oar::ops::max(x, {0}), "max", {x}, {{"axis", Shape{0}}});
  same(oar::ops::min(x, {0}), "min", {x}, {{"axis", Shape{0}}});
  same(oar::ops::prod(x, {1}), "prod", {x}, {{"axis", Shape{1}}});
  same(oar::ops::argmax(x, 1), "argmax", {x}, {{"axis", int64_t{1}}});
  same(oar::ops::argmin(x, 0, true, true), "argmin", {x}, {{"keepdim", int64_t{1}}, {"flatten", int64_t{1}}});
  same(oar::ops::matmul(x, y), "matmul", {x, y});
  same(oar::ops::matmul(x, x, false, true), "matmul", {x, x}, {{"transpose_y", int64_t{1}}});
  same(oar::ops::cast(x, kI32), "cast", {x}, {{"dtype", static_cast<int64_t>(kI32)}});
  same(oar::ops::copy(x), "copy", {x});
  same(oar::ops::concat({x, x}, 1), "concat", {x, x}, {{"axis", int64_t{1}}});
  const Tensor idx = upload(Host{kI64, {2}, {1, 0}}, place());
  same(oar::ops::index_select(x, idx, 1), "index_select", {x, idx}, {{"axis", int64_t{1}}});
  same(oar::ops::where(c, x, y), "where", {c, x, y});
  same(oar::ops::softmax(x), "softmax", {x}, {{"axis", int64_t{-1}}});
  same(oar::ops::log_softmax(x, 0), "log_softmax", {x}, {{"axis", int64_t{0}}});
  EXPECT_TRUE(oar::ops::cast(x, kF32).shares_storage(x)) << "cast to the same dtype is a no-op";

  // Creation wrappers put their result on the requested place.
  expect_matches(Host{kF64, {2, 2}, {3, 3, 3, 3}}, download(oar::ops::full({2, 2}, 3, kF64, place())));
  expect_matches(Host{kI32, {3}, {0, 0, 0}}, download(oar::ops::zeros({3}, kI32, place())));
  expect_matches(Host{kBool, {2}, {1, 1}}, download(oar::ops::ones({2}, kBool, place())));
  expect_matches(Host{kI64, {4}, {2, 4, 6, 8}}, download(oar::ops::arange(2, 10, 2, kI64, place())));
  for (const Tensor& t :
       {oar::ops::full({1}, 1, kF32, place()), oar::ops::arange(0, 3, 1, kI64, place()),
        oar::ops::uniform({4}, 0, 1, kF32, 3, place()), oar::ops::normal({4}, 0, 1, kF32, 3, place())})
    EXPECT_EQ(t.place().to_string(), place().to_string());
}

INSTANTIATE_TEST_SUITE_P(Ops, CppApi, ::testing::ValuesIn(place_names()),
                         [](const ::testing::TestParamInfo<std::string>& i) { return sanitize(i.param); });

}  // namespace
}  // namespace oar_conformance
