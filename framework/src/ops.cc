// The C++ op API: each function looks its op definition up once and calls call_op.
#include <oar/core/error.h>
#include <oar/core/ops.h>

#include <atomic>
#include <random>

namespace oar::ops {
namespace {

const OpDef& op(const char* name) { return OpRegistry::get().at(name); }

// Single-output ops; the initializer list lives on the caller's stack, so nothing is allocated here.
Tensor call1(const OpDef& def, std::initializer_list<Tensor> inputs, Attrs attrs = {}, Place place = cpu_place()) {
  Tensor out;
  run_op(def, inputs.begin(), static_cast<int32_t>(inputs.size()), attrs, place, &out);
  return out;
}

// The global generator: a seed and a counter offset advanced by every random op (docs/ops.md).
struct Generator {
  std::atomic<uint64_t> seed{std::random_device{}()};
  std::atomic<uint64_t> offset{0};
};
Generator& generator() {
  static Generator g;
  return g;
}

Tensor random_op(const OpDef& def, const Dims& shape, const char* a, double va, const char* b, double vb,
                 DType dtype, uint64_t seed, Place place) {
  uint64_t offset = 0;
  if (seed == 0) {
    Generator& g = generator();
    seed = g.seed.load();
    // normal uses two counters per element
    offset = g.offset.fetch_add(static_cast<uint64_t>(checked_numel(shape, def.name)) * 2);
  }
  return call1(def, {},
               {{"shape", shape.to_vector()},
                {a, va},
                {b, vb},
                {"seed", static_cast<int64_t>(seed)},
                {"offset", static_cast<int64_t>(offset)},
                {"dtype", static_cast<int64_t>(dtype)}},
               place);
}

Attrs reduce_attrs(const std::vector<int64_t>& axis, bool keepdim) {
  return {{"axis", axis}, {"keepdim", int64_t{keepdim}}};
}

}  // namespace

#define OAR_BINARY_OP(NAME)                                    \
  Tensor NAME(const Tensor& x, const Tensor& y) {              \
    static const OpDef& def = op(#NAME);                       \
    return call1(def, {x, y});                                 \
  }
OAR_BINARY_OP(add)
OAR_BINARY_OP(subtract)
OAR_BINARY_OP(multiply)
OAR_BINARY_OP(divide)
OAR_BINARY_OP(floor_divide)
OAR_BINARY_OP(remainder)
OAR_BINARY_OP(maximum)
OAR_BINARY_OP(minimum)
OAR_BINARY_OP(pow)
OAR_BINARY_OP(equal)
OAR_BINARY_OP(not_equal)
OAR_BINARY_OP(less_than)
OAR_BINARY_OP(less_equal)
OAR_BINARY_OP(greater_than)
OAR_BINARY_OP(greater_equal)
OAR_BINARY_OP(logical_and)
OAR_BINARY_OP(logical_or)
OAR_BINARY_OP(logical_xor)
#undef OAR_BINARY_OP

Tensor unary(const char* name, const Tensor& x) { return call1(op(name), {x}); }
Tensor unary(const OpDef& def, const Tensor& x) { return call1(def, {x}); }

#define OAR_UNARY_OP(NAME)                       \
  Tensor NAME(const Tensor& x) {                 \
    static const OpDef& def = op(#NAME);         \
    return call1(def, {x});                      \
  }
OAR_UNARY_OP(exp)
OAR_UNARY_OP(log)
OAR_UNARY_OP(sqrt)
OAR_UNARY_OP(tanh)
OAR_UNARY_OP(sigmoid)
OAR_UNARY_OP(relu)
OAR_UNARY_OP(neg)
OAR_UNARY_OP(abs)
OAR_UNARY_OP(copy)
#undef OAR_UNARY_OP

#define OAR_REDUCE_OP(NAME)                                                        \
  Tensor NAME(const Tensor& x, const std::vector<int64_t>& axis, bool keepdim) {   \
    static const OpDef& def = op(#NAME);                                           \
    return call1(def, {x}, reduce_attrs(axis, keepdim));                           \
  }
OAR_REDUCE_OP(sum)
OAR_REDUCE_OP(mean)
OAR_REDUCE_OP(max)
OAR_REDUCE_OP(min)
OAR_REDUCE_OP(prod)
#undef OAR_REDUCE_OP

Tensor argmax(const Tensor& x, int64_t axis, bool keepdim, bool flatten) {
  static const OpDef& def = op("argmax");
  return call1(def, {x}, {{"axis", axis}, {"keepdim", int64_t{keepdim}}, {"flatten", int64_t{flatten}}});
}
Tensor argmin(const Tensor& x, int64_t axis, bool keepdim, bool flatten) {
  static const OpDef& def = op("argmin");
  return call1(def, {x}, {{"axis", axis}, {"keepdim", int64_t{keepdim}}, {"flatten", int64_t{flatten}}});
}

Tensor matmul(const Tensor& x, const Tensor& y, bool transpose_x, bool transpose_y) {
  static const OpDef& def = op("matmul");
  return call1(def, {x, y}, {{"transpose_x", int64_t{transpose_x}}, {"transpose_y", int64_t{transpose_y}}});
}

Tensor cast(const Tensor& x, DType dtype) {
  if (x.dtype() == dtype) return x;
  static const OpDef& def = op("cast");
  return call1(def, {x}, {{"dtype", static_cast<int64_t>(dtype)}});
}

Tensor full(const Dims& shape, double value, DType dtype, Place place) {
  static const OpDef& def = op("fill");
  return call1(def, {}, {{"shape", shape.to_vector()}, {"value", value}, {"dtype", static_cast<int64_t>(dtype)}},
               place);
}
Tensor zeros(const Dims& shape, DType dtype, Place place) { return full(shape, 0.0, dtype, place); }
Tensor ones(const Dims& shape, DType dtype, Place place) { return full(shape, 1.0, dtype, place); }

Tensor arange(double start, double end, double step, DType dtype, Place place) {
  static const OpDef& def = op("arange");
  return call1(def, {}, {{"start", start}, {"end", end}, {"step", step}, {"dtype", static_cast<int64_t>(dtype)}},
               place);
}

Tensor uniform(const Dims& shape, double min, double max, DType dtype, uint64_t seed, Place place) {
  OAR_ENFORCE(min <= max, ErrorCode::kInvalidArgument, "uniform: min (" << min << ") > max (" << max << ")");
  return random_op(OAR_OP("uniform"), shape, "min", min, "max", max, dtype, seed, place);
}
Tensor normal(const Dims& shape, double mean, double std, DType dtype, uint64_t seed, Place place) {
  OAR_ENFORCE(std >= 0, ErrorCode::kInvalidArgument, "normal: std (" << std << ") must be >= 0");
  return random_op(OAR_OP("normal"), shape, "mean", mean, "std", std, dtype, seed, place);
}
void reserve_random(uint64_t count, uint64_t* seed, uint64_t* offset) {
  Generator& g = generator();
  *seed = g.seed.load();
  *offset = g.offset.fetch_add(count);
}

void manual_seed(uint64_t seed) {
  generator().seed = seed;
  generator().offset = 0;
}

Tensor concat(const std::vector<Tensor>& xs, int64_t axis) {
  static const OpDef& def = op("concat");
  Attrs attrs{{"axis", axis}};
  Tensor out;
  run_op(def, xs.data(), static_cast<int32_t>(xs.size()), attrs, cpu_place(), &out);
  return out;
}
Tensor index_select(const Tensor& x, const Tensor& index, int64_t axis) {
  static const OpDef& def = op("index_select");
  return call1(def, {x, index}, {{"axis", axis}});
}
Tensor index_add(const Tensor& x, const Tensor& index, const Tensor& source, int64_t axis) {
  static const OpDef& def = op("index_add");
  return call1(def, {x, index, source}, {{"axis", axis}});
}
void assign(const Tensor& dst, const Tensor& src) {
  static const OpDef& def = op("assign");
  for (int32_t i = 0; i < dst.ndim(); ++i)
    OAR_ENFORCE(dst.strides()[i] != 0 || dst.dims()[i] <= 1, ErrorCode::kInvalidArgument,
                "assign: the destination is a broadcast (expanded) view; its elements share memory");
  OAR_ENFORCE(src.place() == dst.place(), ErrorCode::kInvalidArgument,
              "assign: src is on " << src.place().to_string() << ", dst on " << dst.place().to_string());
  Tensor s = cast(src, dst.dtype());
  if (s.shares_storage(dst)) s = copy(s);  // overlapping source and destination: read a snapshot
  Attrs attrs;
  const Tensor in[] = {dst, s};
  run_op(def, in, 2, attrs, dst.place(), nullptr);
}

Tensor where(const Tensor& condition, const Tensor& x, const Tensor& y) {
  static const OpDef& def = op("where");
  return call1(def, {condition, x, y});
}
Tensor softmax(const Tensor& x, int64_t axis) {
  static const OpDef& def = op("softmax");
  return call1(def, {x}, {{"axis", axis}});
}
Tensor log_softmax(const Tensor& x, int64_t axis) {
  static const OpDef& def = op("log_softmax");
  return call1(def, {x}, {{"axis", axis}});
}

}  // namespace oar::ops
