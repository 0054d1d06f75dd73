// Native oar ops -> PaddlePaddle's legacy op dialect (paddle_export.h). One rule per native op name;
// a rule reads the native op's slots and attributes and emits one or more Paddle ops, or declines with
// a reason (the op then stays native and is reported). Which native op has which rule is the Paddle op
// map (paddle_map.def): the regular forms' rules are derived from their entries, the others are the
// rule_* functions the map names. Every Paddle type emitted here has a translation in paddle_ops.cc,
// so the exported program runs on oar's Executor too.
#include <oar/core/error.h>
#include <oar/core/op.h>
#include <oar/ir/op_version.h>
#include <oar/ir/paddle_export.h>
#include <oar/ir/static_graph.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <map>
#include <set>
#include <sstream>

#include "paddle_map.h"

namespace oar::ir {
namespace {

constexpr const char* kNativePrefix = "oar.";
constexpr int32_t kPaddleInt64 = 3;  // VarType.INT64

using AttrList = std::vector<std::pair<std::string, Attribute>>;

}  // namespace

// What a rule works on: the native op, its block, and where new ops and temporaries go.
struct paddle_map::ExportCtx {
  Program* prog;
  int32_t block_idx;
  const OpDesc* op;
  std::string name;                   // the OpDef name ("conv"), without the prefix
  const OpDef* def;                   // nullptr for the view ops, which have no OpDef
  const std::set<std::string>* read;  // every variable some op of the program reads
  std::set<std::string>* names;       // every variable name declared in the program
  std::vector<OpDesc> emitted;
  std::string why;  // set when the rule declines

  Block& block() { return prog->block(block_idx); }

  [[noreturn]] void malformed(const std::string& what) const {
    OAR_THROW(ErrorCode::kInvalidArgument, op->type << ": " << what);
  }

  // ---- native slots --------------------------------------------------------------------------------
  const std::string& in(const char* slot) const {
    const std::vector<std::string>& v = op->input(slot);
    if (v.size() != 1)
      malformed(std::string("input slot ") + slot + " must hold one variable, has " +
                std::to_string(v.size()));
    return v[0];
  }
  const std::string& out(const char* slot) const {
    const std::vector<std::string>& v = op->output(slot);
    if (v.size() != 1)
      malformed(std::string("output slot ") + slot + " must hold one variable, has " +
                std::to_string(v.size()));
    return v[0];
  }
  // An output nobody reads (it may be dropped when Paddle's op has no such output).
  bool unused_output(const char* slot) const {
    const std::vector<std::string>& v = op->output(slot);
    return v.empty() || (v.size() == 1 && read->count(v[0]) == 0 && !is_persistable(v[0]));
  }
  const VarDesc& var(const std::string& n) const {
    const VarDesc* v = prog->find_var_recursive(block_idx, n);
    if (v == nullptr) malformed("variable " + n + " is not declared");
    return *v;
  }
  bool is_persistable(const std::string& n) const {
    const VarDesc* v = prog->find_var_recursive(block_idx, n);
    return v != nullptr && v->persistable;
  }
  const std::vector<int64_t>& shape(const std::string& n) const { return var(n).shape; }
  // The variable a run-time attribute comes from (static_graph.h, "@<attr>" input slots); "" when the
  // attribute is the op's own.
  std::string var_attr(const char* a) const {
    const std::vector<std::string>& v = op->input(std::string(1, kVarAttrPrefix) + a);
    return v.size() == 1 ? v[0] : std::string();
  }
  int64_t rank(const std::string& n) const { return static_cast<int64_t>(var(n).shape.size()); }

  // ---- native attributes (LONG / FLOAT64 / LONGS / FLOAT64S / STRING; the OpDef's default when absent)
  const AttrValue* default_of(const char* a) const {
    if (def == nullptr) return nullptr;
    for (const AttrDef& d : def->attrs)
      if (std::string(d.name) == a && !d.required) return &d.default_value;
    return nullptr;
  }
  int64_t i(const char* a) const {
    if (const Attribute* v = op->find_attr(a)) {
      if (auto* p = std::get_if<int64_t>(v)) return *p;
      if (auto* p = std::get_if<int32_t>(v)) return *p;
      if (auto* p = std::get_if<bool>(v)) return *p ? 1 : 0;
      malformed(std::string("attribute ") + a + " must be an integer, got " + attr_to_string(*v));
    }
    if (const AttrValue* d = default_of(a)) return std::get<int64_t>(*d);
    malformed(std::string("attribute ") + a + " is missing");
  }
  double f(const char* a) const {
    if (const Attribute* v = op->find_attr(a)) {
      if (auto* p = std::get_if<double>(v)) return *p;
      if (auto* p = std::get_if<float>(v)) return *p;
      if (auto* p = std::get_if<int64_t>(v)) return static_cast<double>(*p);
      if (auto* p = std::get_if<int32_t>(v)) return *p;
      malformed(std::string("attribute ") + a + " must be a number, got " + attr_to_string(*v));
    }
    if (const AttrValue* d = default_of(a)) return std::get<double>(*d);
    malformed(std::string("attribute ") + a + " is missing");
  }
  std::vector<int64_t> ints(const char* a) const {
    if (const Attribute* v = op->find_attr(a)) {
      if (auto* p = std::get_if<std::vector<int64_t>>(v)) return *p;
      if (auto* p = std::get_if<std::vector<int32_t>>(v)) return std::vector<int64_t>(p->begin(), p->end());
      malformed(std::string("attribute ") + a + " must be a list of integers, got " + attr_to_string(*v));
    }
    if (const AttrValue* d = default_of(a)) return std::get<std::vector<int64_t>>(*d);
    malformed(std::string("attribute ") + a + " is missing");
  }
  std::vector<double> floats(const char* a) const {
    if (const Attribute* v = op->find_attr(a)) {
      if (auto* p = std::get_if<std::vector<double>>(v)) return *p;
      if (auto* p = std::get_if<std::vector<float>>(v)) return std::vector<double>(p->begin(), p->end());
      malformed(std::string("attribute ") + a + " must be a list of numbers, got " + attr_to_string(*v));
    }
    if (const AttrValue* d = default_of(a)) return std::get<std::vector<double>>(*d);
    malformed(std::string("attribute ") + a + " is missing");
  }

  // The first of `names` the op carries (the view ops' attribute spelling is the recorder's choice);
  // names[0] when none is there.
  const char* spelled(std::initializer_list<const char*> names) const {
    for (const char* n : names)
      if (op->has_attr(n)) return n;
    return *names.begin();
  }

  // An integer attribute or a list of them, as a list.
  std::vector<int64_t> int_or_ints(const char* a) const {
    const Attribute* v = op->find_attr(a);
    if (v != nullptr && (attr_type(*v) == AttrType::kLong || attr_type(*v) == AttrType::kInt)) return {i(a)};
    return ints(a);
  }

  // ---- output ----------------------------------------------------------------------------------------
  bool decline(std::string reason) {
    why = std::move(reason);
    return false;
  }
  void emit(std::string type, Slots ins, Slots outs, AttrList attrs = {}) {
    OpDesc o;
    o.type = std::move(type);
    o.inputs = std::move(ins);
    o.outputs = std::move(outs);
    // Paddle writes attributes sorted by name.
    std::sort(attrs.begin(), attrs.end(), [](auto& a, auto& b) { return a.first < b.first; });
    o.attrs = std::move(attrs);
    emitted.push_back(std::move(o));
  }
  // A new temporary in the op's block, named after `base`.
  std::string temp(const std::string& base, DType dtype, std::vector<int64_t> shape) {
    std::string n;
    for (int k = 0;; ++k) {
      n = base + "@oar_export." + std::to_string(k);
      if (names->insert(n).second) break;
    }
    VarDesc v;
    v.name = n;
    v.dtype = dtype;
    v.shape = std::move(shape);
    block().add_var(v);
    return n;
  }
  // The XShape output of reshape2 / transpose2 / squeeze2 / unsqueeze2 / flatten_contiguous_range:
  // [0] + x's shape (Paddle's bookkeeping for the grad op).
  std::string xshape(const std::string& x) {
    std::vector<int64_t> s{0};
    const VarDesc& v = var(x);
    s.insert(s.end(), v.shape.begin(), v.shape.end());
    return temp(x + ".xshape", v.dtype, s);
  }
};

namespace {

using Ctx = paddle_map::ExportCtx;

// int64 values that must fit Paddle's INT / INTS attributes.
bool fits_i32(int64_t v) {
  return v >= std::numeric_limits<int32_t>::min() && v <= std::numeric_limits<int32_t>::max();
}
bool to_i32(Ctx& c, const char* what, int64_t v, int32_t* out) {
  if (!fits_i32(v))
    return c.decline(std::string(what) + " " + std::to_string(v) + " does not fit Paddle's INT");
  *out = static_cast<int32_t>(v);
  return true;
}
bool to_i32s(Ctx& c, const char* what, const std::vector<int64_t>& v, std::vector<int32_t>* out) {
  out->clear();
  for (int64_t x : v) {
    int32_t y;
    if (!to_i32(c, what, x, &y)) return false;
    out->push_back(y);
  }
  return true;
}

// Paddle's FLOAT attributes are float32; a value that does not survive the conversion (other than by
// rounding) is refused.
bool to_f32(Ctx& c, const char* what, double v, float* out) {
  if (std::isfinite(v) && std::fabs(v) > std::numeric_limits<float>::max())
    return c.decline(std::string(what) + " " + std::to_string(v) + " overflows Paddle's FLOAT");
  *out = static_cast<float>(v);
  return true;
}

std::vector<int32_t> iota32(int64_t n) {
  std::vector<int32_t> v;
  for (int32_t k = 0; k < n; ++k) v.push_back(k);
  return v;
}

// ---- elementwise --------------------------------------------------------------------------------------

// Paddle's elementwise ops with axis = -1 broadcast as numpy does; declined when the static shapes
// already show they cannot.
bool broadcastable(Ctx& c, const std::string& x, const std::string& y) {
  const auto &a = c.shape(x), &b = c.shape(y);
  size_t n = std::max(a.size(), b.size());
  for (size_t k = 0; k < n; ++k) {
    int64_t da = k < n - a.size() ? 1 : a[k - (n - a.size())];
    int64_t db = k < n - b.size() ? 1 : b[k - (n - b.size())];
    if (da >= 0 && db >= 0 && da != db && da != 1 && db != 1)
      return c.decline("shapes of " + x + " and " + y + " are not broadcastable");
  }
  return true;
}

bool rule_binary(Ctx& c, const char* type) {
  const std::string &x = c.in("x"), &y = c.in("y");
  if (!broadcastable(c, x, y)) return false;
  c.emit(type, {{"X", {x}}, {"Y", {y}}}, {{"Out", {c.out("out")}}}, {{"axis", int32_t{-1}}});
  return true;
}

bool rule_unary(Ctx& c, const char* type) {
  c.emit(type, {{"X", {c.in("x")}}}, {{"Out", {c.out("out")}}});
  return true;
}

// A native op Paddle has an op of the same name for, but with other semantics: kept native.
bool rule_differs(Ctx& c, const char* why) { return c.decline(why); }

bool rule_neg(Ctx& c, const char*) {
  c.emit("scale", {{"X", {c.in("x")}}}, {{"Out", {c.out("out")}}},
         {{"scale", -1.0f}, {"bias", 0.0f}, {"bias_after_scale", true}});
  return true;
}

bool rule_copy(Ctx& c, const char*) {
  c.emit("assign", {{"X", {c.in("x")}}}, {{"Out", {c.out("out")}}});
  return true;
}

// ---- activations with attributes -------------------------------------------------------------------

bool rule_hardswish(Ctx& c, const char*) {
  // oar's hardswish is x * relu6(x + 3) / 6: Paddle's with its default threshold/scale/offset.
  c.emit("hard_swish", {{"X", {c.in("x")}}}, {{"Out", {c.out("out")}}},
         {{"threshold", 6.0f}, {"scale", 6.0f}, {"offset", 3.0f}});
  return true;
}

bool rule_clip(Ctx& c, const char*) {
  float lo, hi;
  if (!to_f32(c, "min", c.f("min"), &lo) || !to_f32(c, "max", c.f("max"), &hi)) return false;
  c.emit("clip", {{"X", {c.in("x")}}}, {{"Out", {c.out("out")}}}, {{"min", lo}, {"max", hi}});
  return true;
}

// ---- dtype, creation ----------------------------------------------------------------------------------

bool native_dtype(Ctx& c, DType* out) {
  int64_t d = c.i("dtype");
  if (!is_valid_dtype(static_cast<int32_t>(d)))
    c.malformed("attribute dtype holds no oar dtype: " + std::to_string(d));
  *out = static_cast<DType>(d);
  return true;
}

bool rule_cast(Ctx& c, const char*) {
  DType to;
  native_dtype(c, &to);
  const std::string& x = c.in("x");
  c.emit("cast", {{"X", {x}}}, {{"Out", {c.out("out")}}},
         {{"in_dtype", dtype_to_paddle_code(c.var(x).dtype)}, {"out_dtype", dtype_to_paddle_code(to)}});
  return true;
}

// The exact decimal form of a fill value (fill_constant's str_value; Paddle parses it before `value`).
std::string exact_number(double v, DType d) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  char buf[64];
  if (!is_floating(d) && !is_complex(d) && v == std::trunc(v) && std::fabs(v) < 9.3e18)
    std::snprintf(buf, sizeof buf, "%lld", static_cast<long long>(v));
  else
    std::snprintf(buf, sizeof buf, "%.17g", v);
  return buf;
}

// A fed variable and the axis where it has the fed variables' unknown (-1) extent, from block 0's feed
// ops; false when there is none.
bool fed_unknown_axis(const Ctx& c, std::string* var, int32_t* axis) {
  for (const OpDesc& op : c.prog->block(0).ops()) {
    if (op.type != "feed" || op.output("Out").size() != 1) continue;
    const VarDesc* v = c.prog->block(0).find_var(op.output("Out")[0]);
    if (v == nullptr) continue;
    for (size_t k = 0; k < v->shape.size(); ++k)
      if (v->shape[k] < 0 || v->shape[k] == kUnknownDim) {
        *var = v->name;
        *axis = static_cast<int32_t>(k);
        return true;
      }
  }
  return false;
}

// fill_constant's ShapeTensorList for a shape holding the fed variables' unknown extent (zeros of
// [batch, n]), as Paddle records paddle.zeros([x.shape[0], n]): each unknown entry k * batch is the
// feed's `shape` sliced at its -1 axis (times k), each known one a one-element fill_constant.
bool shape_tensor_list(Ctx& c, const std::vector<int64_t>& shape, std::vector<std::string>* list) {
  std::string fed;
  int32_t axis = 0;
  if (!fed_unknown_axis(c, &fed, &axis))
    return c.decline(
        "the shape holds an extent known only when the program runs, and no fed variable has it");
  std::string fed_shape;
  for (int64_t e : shape) {
    const std::string entry = c.temp(c.out("out") + ".shape", DType::kInt32, {1});
    if (!is_unknown_extent(e)) {
      int32_t e32;
      if (!to_i32(c, "extent", e, &e32)) return false;
      c.emit("fill_constant", {}, {{"Out", {entry}}},
             {{"shape", std::vector<int64_t>{1}},
              {"dtype", dtype_to_paddle_code(DType::kInt32)},
              {"value", static_cast<float>(e32)},
              {"str_value", std::to_string(e32)}});
    } else {
      if (e % kUnknownDim != 0 || is_unknown_extent(e / kUnknownDim))
        return c.decline(
            "the shape holds an extent computed from a variable's value (or a product of unknown "
            "extents), which Paddle's fill_constant cannot take from the feeds");
      int32_t k;
      if (!to_i32(c, "extent factor", e / kUnknownDim, &k)) return false;
      if (fed_shape.empty()) {
        fed_shape = c.temp(fed + ".shape", DType::kInt32, {static_cast<int64_t>(c.shape(fed).size())});
        c.emit("shape", {{"Input", {fed}}}, {{"Out", {fed_shape}}});
      }
      const std::string extent = k == 1 ? entry : c.temp(fed + ".extent", DType::kInt32, {1});
      c.emit("slice", {{"Input", {fed_shape}}}, {{"Out", {extent}}},
             {{"axes", std::vector<int32_t>{0}},
              {"starts", std::vector<int32_t>{axis}},
              {"ends", std::vector<int32_t>{axis + 1}},
              {"infer_flags", std::vector<int32_t>{1}},
              {"decrease_axis", std::vector<int32_t>{}}});
      if (k != 1)
        c.emit("scale", {{"X", {extent}}}, {{"Out", {entry}}},
               {{"scale", static_cast<float>(k)}, {"bias", 0.0f}, {"bias_after_scale", true}});
    }
    list->push_back(entry);
  }
  return true;
}

bool rule_fill(Ctx& c, const char*) {
  DType d;
  native_dtype(c, &d);
  if (is_complex(d)) return c.decline("fill_constant cannot fill a complex dtype");
  for (const auto& [slot, args] : c.op->inputs)
    if (!slot.empty() && slot[0] == kVarAttrPrefix && slot != "@shape")
      return c.decline("an attribute other than the shape comes from a variable at run time");
  std::vector<int64_t> shape = c.ints("shape");
  Slots ins;
  if (std::string from = c.var_attr("shape"); !from.empty()) {
    // The shape is a 1-D integer variable (paddle.zeros([x.shape[0], 4]) under to_static): Paddle's
    // ShapeTensor.
    const std::vector<int64_t>& n = c.shape(from);
    if (n.size() != 1) return c.decline("the run-time shape variable is not 1-D");
    ins.push_back({"ShapeTensor", {from}});
    shape.assign(n[0] > 0 && !is_unknown_extent(n[0]) ? n[0] : 0, -1);
  } else if (std::any_of(shape.begin(), shape.end(), [](int64_t e) { return is_unknown_extent(e); })) {
    // An extent known only when the program runs: Paddle's fill_constant would read the recording
    // sentinel as a size, so the shape comes from the feeds at run time (-1 in the attribute).
    std::vector<std::string> list;
    if (!shape_tensor_list(c, shape, &list)) return false;
    ins.push_back({"ShapeTensorList", list});
    for (int64_t& e : shape)
      if (is_unknown_extent(e)) e = -1;
  }
  double v = c.f("value");
  float fv =
      std::isfinite(v) && std::fabs(v) > std::numeric_limits<float>::max() ? 0.0f : static_cast<float>(v);
  c.emit("fill_constant", std::move(ins), {{"Out", {c.out("out")}}},
         {{"shape", shape},
          {"dtype", dtype_to_paddle_code(d)},
          {"value", fv},
          {"str_value", exact_number(v, d)}});
  return true;
}

bool rule_eye(Ctx& c, const char*) {
  DType d;
  native_dtype(c, &d);
  c.emit("eye", {}, {{"Out", {c.out("out")}}},
         {{"num_rows", c.i("num_rows")},
          {"num_columns", c.i("num_columns")},
          {"dtype", dtype_to_paddle_code(d)}});
  return true;
}

// ---- reductions ---------------------------------------------------------------------------------------

bool rule_reduce(Ctx& c, const char* type) {
  const std::string& x = c.in("x");
  int64_t r = c.rank(x);
  std::vector<int64_t> axes = c.ints("axis");
  std::set<int64_t> norm;
  for (int64_t a : axes) {
    int64_t n = a < 0 ? a + std::max<int64_t>(r, 1) : a;
    if (n < 0 || n >= std::max<int64_t>(r, 1)) c.malformed("axis " + std::to_string(a) + " out of range");
    norm.insert(n);
  }
  bool all = norm.empty() || static_cast<int64_t>(norm.size()) >= r;
  std::vector<int32_t> dim = all ? iota32(r) : std::vector<int32_t>(norm.begin(), norm.end());
  DType xd = c.var(x).dtype;
  std::string t = type;
  if ((t == "reduce_all" || t == "reduce_any") && xd != DType::kBool)
    return c.decline("Paddle's " + t + " takes bool input only");
  // reduce_all / reduce_any declare dim as LONGS, the others as INTS.
  Attribute dim_attr = dim;
  if (t == "reduce_all" || t == "reduce_any") dim_attr = std::vector<int64_t>(dim.begin(), dim.end());
  AttrList a{{"dim", dim_attr}, {"keep_dim", c.i("keepdim") != 0}, {"reduce_all", all}};
  if (t == "reduce_sum") {
    // oar's sum widens bool and integers narrower than int64 to int64; Paddle keeps the dtype unless
    // out_dtype says otherwise.
    bool widen = xd == DType::kBool || xd == DType::kInt8 || xd == DType::kUInt8 || xd == DType::kInt16 ||
                 xd == DType::kInt32;
    a.push_back({"in_dtype", int32_t{-1}});
    a.push_back({"out_dtype", widen ? kPaddleInt64 : int32_t{-1}});
  }
  c.emit(type, {{"X", {x}}}, {{"Out", {c.out("out")}}}, std::move(a));
  return true;
}

bool rule_arg(Ctx& c, const char* type) {
  c.emit(type, {{"X", {c.in("x")}}}, {{"Out", {c.out("out")}}},
         {{"axis", c.i("axis")},
          {"keepdims", c.i("keepdim") != 0},
          {"flatten", c.i("flatten") != 0},
          {"dtype", kPaddleInt64}});
  return true;
}

bool rule_cumsum(Ctx& c, const char*) {
  int32_t axis;
  if (!to_i32(c, "axis", c.i("axis"), &axis)) return false;
  c.emit("cumsum", {{"X", {c.in("x")}}}, {{"Out", {c.out("out")}}},
         {{"axis", axis},
          {"flatten", c.i("flatten") != 0},
          {"exclusive", false},
          {"reverse", c.i("reverse") != 0}});
  return true;
}

// fft_c2c / fft_r2c / fft_c2r: the same op and attributes, in Paddle's attribute types.
bool rule_fft(Ctx& c, const char*) {
  const Attribute* norm = c.op->find_attr("normalization");
  const std::string* s = norm ? std::get_if<std::string>(norm) : nullptr;
  if (s == nullptr) c.malformed("attribute normalization must be a string");
  AttrList attrs = {{"axes", c.ints("axes")}, {"normalization", *s}, {"forward", c.i("forward") != 0}};
  if (c.name == "fft_r2c") attrs.push_back({"onesided", c.i("onesided") != 0});
  if (c.name == "fft_c2r") attrs.push_back({"last_dim_size", c.i("last_dim_size")});
  c.emit(c.name, {{"X", {c.in("x")}}}, {{"Out", {c.out("out")}}}, std::move(attrs));
  return true;
}

// ---- linear algebra, indexing ----------------------------------------------------------------------

bool rule_matmul(Ctx& c, const char*) {
  c.emit("matmul_v2", {{"X", {c.in("x")}}, {"Y", {c.in("y")}}}, {{"Out", {c.out("out")}}},
         {{"trans_x", c.i("transpose_x") != 0}, {"trans_y", c.i("transpose_y") != 0}});
  return true;
}

bool rule_concat(Ctx& c, const char*) {
  const std::vector<std::string>& xs = c.op->input("x");
  if (xs.empty()) c.malformed("input slot x holds no variable");
  int32_t axis;
  if (!to_i32(c, "axis", c.i("axis"), &axis)) return false;
  c.emit("concat", {{"X", xs}}, {{"Out", {c.out("out")}}}, {{"axis", axis}});
  return true;
}

// How operand `v` reaches the declared shape `to` of an op's result, for Paddle ops that do not
// broadcast: unchanged, expand_v2 to the known extents (-1 where v keeps its own), or expand_as_v2 to
// the runtime shape of an operand `like` that has the full shape. False when none applies.
bool broadcast_operand(Ctx& c, const std::string& v, const std::vector<int64_t>& to,
                       const std::vector<std::string>& others, std::string* out) {
  std::vector<int64_t> s = c.shape(v);
  if (s == to) {
    *out = v;
    return true;
  }
  if (s.size() > to.size()) return false;
  std::vector<int32_t> target;
  bool known = true;
  size_t off = to.size() - s.size();
  for (size_t k = 0; k < to.size(); ++k) {
    int64_t have = k < off ? -2 : s[k - off];  // -2: a new leading dim
    if (to[k] >= 0 && fits_i32(to[k]))
      target.push_back(static_cast<int32_t>(to[k]));
    else if (have == -1 || have > 1)
      target.push_back(-1);  // v already has this extent
    else
      known = false;
  }
  const std::string* like = nullptr;
  for (const std::string& o : others)
    if (like == nullptr && c.shape(o) == to) like = &o;
  if (!known && like == nullptr) return false;
  std::string t = c.temp(v + ".expanded", c.var(v).dtype, to);
  if (known) {
    c.emit("expand_v2", {{"X", {v}}}, {{"Out", {t}}}, {{"shape", target}});
  } else {
    std::vector<int32_t> ts;
    for (int64_t d : to) ts.push_back(d >= 0 && fits_i32(d) ? static_cast<int32_t>(d) : -1);
    c.emit("expand_as_v2", {{"X", {v}}, {"Y", {*like}}}, {{"Out", {t}}}, {{"target_shape", ts}});
  }
  *out = t;
  return true;
}

// Operands of a Paddle op that does not broadcast, each brought to the result's declared shape `to`
// (broadcast_operand). Decides before emitting anything, so a declined rule leaves no temporaries.
bool broadcast_all(Ctx& c, const std::vector<std::string>& ops,
                   std::vector<int64_t> to,  // a copy: temps move VarDescs
                   std::vector<std::string>* ins) {
  bool any_like = false;
  for (const std::string& o : ops) any_like = any_like || c.shape(o) == to;
  for (const std::string& v : ops) {
    const std::vector<int64_t>& s = c.shape(v);
    if (s.size() > to.size()) return c.decline("an operand has a higher rank than the result");
    bool need_runtime = false;
    size_t off = to.size() - s.size();
    for (size_t k = 0; k < to.size(); ++k) {
      int64_t have = k < off ? -2 : s[k - off];
      if (to[k] < 0 && have != -1 && have <= 1) need_runtime = true;
    }
    if (s != to && need_runtime && !any_like)
      return c.decline(
          "an operand must be broadcast to an unknown extent and no operand has the result's shape");
  }
  ins->assign(ops.size(), "");
  for (size_t k = 0; k < ops.size(); ++k)
    if (!broadcast_operand(c, ops[k], to, ops, &(*ins)[k])) c.malformed("broadcasting plan failed");
  return true;
}

bool rule_where(Ctx& c, const char*) {
  // Paddle's where op wants three operands of one shape: paddle.where expands them first, so do we.
  const std::string& out = c.out("out");
  std::vector<std::string> ins;
  if (!broadcast_all(c, {c.in("condition"), c.in("x"), c.in("y")}, c.shape(out), &ins)) return false;
  c.emit("where", {{"Condition", {ins[0]}}, {"X", {ins[1]}}, {"Y", {ins[2]}}}, {{"Out", {out}}});
  return true;
}

bool rule_tri(Ctx& c, const char*) {
  int32_t diag;
  if (!to_i32(c, "diagonal", c.i("diagonal"), &diag)) return false;
  c.emit("tril_triu", {{"X", {c.in("x")}}}, {{"Out", {c.out("out")}}},
         {{"diagonal", diag}, {"lower", c.name == "tril"}});
  return true;
}

bool rule_topk(Ctx& c, const char*) {
  int32_t k, axis;
  if (!to_i32(c, "k", c.i("k"), &k) || !to_i32(c, "axis", c.i("axis"), &axis)) return false;
  c.emit("top_k_v2", {{"X", {c.in("x")}}}, {{"Out", {c.out("values")}}, {"Indices", {c.out("indices")}}},
         {{"k", k}, {"axis", axis}, {"largest", c.i("largest") != 0}, {"sorted", true}});
  return true;
}

bool rule_sort(Ctx& c, const char*) {
  int32_t axis;
  if (!to_i32(c, "axis", c.i("axis"), &axis)) return false;
  // oar's sort is always stable; so is Paddle's argsort with stable = true.
  c.emit("argsort", {{"X", {c.in("x")}}}, {{"Out", {c.out("values")}}, {"Indices", {c.out("indices")}}},
         {{"axis", axis}, {"descending", c.i("descending") != 0}, {"stable", true}});
  return true;
}

// Below, with the other multi-op rules.
bool rule_pad3d(Ctx& c);
bool rule_conv1d(Ctx& c);
std::string unsqueeze_h(Ctx& c, const std::string& v);
std::string squeezed_into(Ctx& c, const std::string& out);
void squeeze_h(Ctx& c, const std::string& t, const std::string& out);

bool rule_pad(Ctx& c, const char*) {
  if (c.i("mode") != 0) return rule_pad3d(c);
  std::vector<int32_t> pads;
  float value;
  if (!to_i32s(c, "pads", c.ints("pads"), &pads) || !to_f32(c, "value", c.f("value"), &value)) return false;
  c.emit("pad", {{"X", {c.in("x")}}}, {{"Out", {c.out("out")}}}, {{"paddings", pads}, {"pad_value", value}});
  return true;
}

// oar's assign(dst, src) writes src into dst; Paddle's assign does the same when no cast or broadcast
// is involved.
bool rule_assign(Ctx& c, const char*) {
  const std::string &dst = c.in("dst"), &src = c.in("src");
  const VarDesc &d = c.var(dst), &s = c.var(src);
  if (d.dtype != s.dtype || d.shape != s.shape)
    return c.decline("assign with a cast or broadcast has no Paddle assign equivalent");
  c.emit("assign", {{"X", {src}}}, {{"Out", {dst}}});
  return true;
}

// ---- nn ---------------------------------------------------------------------------------------------

bool rule_layer_norm(Ctx& c, const char*) {
  if (!c.unused_output("mean") || !c.unused_output("rstd"))
    return c.decline("its mean / rstd outputs are used (Paddle's layer_norm gives mean and variance)");
  const std::string& x = c.in("x");
  int32_t begin;
  float eps;
  if (!to_i32(c, "begin_norm_axis", c.i("begin_norm_axis"), &begin) ||
      !to_f32(c, "epsilon", c.f("epsilon"), &eps))
    return false;
  // Paddle wants 1-D Scale and Bias; oar accepts the normalized shape.
  auto flat = [&](const std::string& v) {
    if (c.rank(v) == 1) return v;
    int64_t n = 1;
    for (int64_t d : c.shape(v)) n = (d < 0 || n < 0) ? -1 : n * d;
    std::string t = c.temp(v + ".flat", c.var(v).dtype, {n});
    c.emit("reshape2", {{"X", {v}}}, {{"Out", {t}}, {"XShape", {c.xshape(v)}}},
           {{"shape", std::vector<int32_t>{-1}}});
    return t;
  };
  std::string w = flat(c.in("weight")), b = flat(c.in("bias"));
  const VarDesc& xv = c.var(x);
  DType sd = (xv.dtype == DType::kFloat16 || xv.dtype == DType::kBFloat16) ? DType::kFloat32 : xv.dtype;
  int64_t outer = 1;
  for (int32_t k = 0; k < begin && k < static_cast<int32_t>(xv.shape.size()); ++k)
    outer = (xv.shape[k] < 0 || outer < 0) ? -1 : outer * xv.shape[k];
  std::string mean = c.temp(x + ".mean", sd, {outer}), var = c.temp(x + ".variance", sd, {outer});
  c.emit("layer_norm", {{"X", {x}}, {"Scale", {w}}, {"Bias", {b}}},
         {{"Y", {c.out("out")}}, {"Mean", {mean}}, {"Variance", {var}}},
         {{"begin_norm_axis", begin}, {"epsilon", eps}});
  return true;
}

// oar's batch_norm is Paddle's, MeanOut / VarianceOut naming the Mean / Variance variables (Paddle's
// in-place convention) and SavedMean / SavedVariance fresh temporaries (Paddle's SavedVariance is the
// inverse std, as oar's saved_rstd). use_global_stats 1 (what an eval model records) is written as
// save_inference_model writes it: is_test true, so fold_conv_bn folds it. use_global_stats 0 (a model
// saved in training mode) is is_test false, as Paddle's jit.save writes it: batch statistics, and Paddle
// moves the running statistics in place on every run where oar's pruned program does not (the output is
// the same). Either way only when the op's statistics outputs are not read by anything.
bool rule_batch_norm(Ctx& c, const char*) {
  const bool global = c.i("use_global_stats") != 0;
  if (!c.unused_output("mean_out") || !c.unused_output("var_out") || !c.unused_output("saved_mean") ||
      !c.unused_output("saved_rstd"))
    return c.decline("its statistics outputs are used");
  const std::string& x = c.in("x");
  const int64_t r = c.rank(x);
  int64_t axis = c.i("channel_axis");
  if (axis < 0) axis += r;
  if (axis != 1 && axis != r - 1)
    return c.decline("channel axis " + std::to_string(axis) + " is neither 1 nor last");
  float eps, mom;
  if (!to_f32(c, "epsilon", c.f("epsilon"), &eps) || !to_f32(c, "momentum", c.f("momentum"), &mom))
    return false;
  const std::string &rm = c.in("running_mean"), &rv = c.in("running_var");
  const std::string sm = c.temp(x + ".saved_mean", c.var(rm).dtype, c.shape(rm));
  const std::string sv = c.temp(x + ".saved_variance", c.var(rv).dtype, c.shape(rv));
  c.emit(
      "batch_norm",
      {{"X", {x}}, {"Scale", {c.in("weight")}}, {"Bias", {c.in("bias")}}, {"Mean", {rm}}, {"Variance", {rv}}},
      {{"Y", {c.out("out")}},
       {"MeanOut", {rm}},
       {"VarianceOut", {rv}},
       {"SavedMean", {sm}},
       {"SavedVariance", {sv}}},
      {{"data_layout", std::string(axis == 1 ? "NCHW" : "NHWC")},
       {"epsilon", eps},
       {"is_test", global},
       {"momentum", mom},
       {"trainable_statistics", false},
       {"use_global_stats", false}});
  return true;
}

// oar's rnn (framework/src/ops_rnn.cc) is Paddle's op with the same weight layout: Input, PreState (h0, and
// c0 for LSTM), WeightList, SequenceLength (int32 in Paddle); Reserve and DropoutState are Paddle's
// training buffers, written as fresh temporaries.
bool rule_rnn(Ctx& c, const char*) {
  const std::vector<std::string>& ins = c.op->input("x");
  const std::string mode = std::get<std::string>(*c.op->find_attr("mode"));
  const bool lstm = mode == "LSTM";
  const int64_t layers = c.i("num_layers"), dirs = c.i("is_bidirec") ? 2 : 1;
  const size_t n_w = static_cast<size_t>(4 * layers * dirs);
  if (ins.size() != 3 + n_w && ins.size() != 4 + n_w) c.malformed("rnn: unexpected number of inputs");
  if (!lstm && !c.unused_output("c")) return c.decline("the cell state of a " + mode + " rnn is used");
  int32_t hidden, nl;
  float p;
  if (!to_i32(c, "hidden_size", c.i("hidden_size"), &hidden) || !to_i32(c, "num_layers", layers, &nl) ||
      !to_f32(c, "dropout_prob", c.f("dropout_prob"), &p))
    return false;
  const std::string& x = ins[0];
  const VarDesc& xv = c.var(x);
  if (xv.shape.size() != 3) c.malformed("rnn: x must be 3-D");
  int32_t input_size;
  if (!to_i32(c, "input_size", xv.shape[2], &input_size)) return false;
  Slots in{{"Input", {x}},
           {"PreState", lstm ? std::vector<std::string>{ins[1], ins[2]} : std::vector<std::string>{ins[1]}},
           {"WeightList", std::vector<std::string>(ins.begin() + 3, ins.begin() + 3 + n_w)}};
  if (ins.size() == 4 + n_w) {
    std::string len = ins.back();
    if (c.var(len).dtype != DType::kInt32) {
      std::string t = c.temp(len + ".int32", DType::kInt32, c.shape(len));
      c.emit("cast", {{"X", {len}}}, {{"Out", {t}}},
             {{"in_dtype", dtype_to_paddle_code(c.var(len).dtype)},
              {"out_dtype", dtype_to_paddle_code(DType::kInt32)}});
      len = t;
    }
    in.push_back({"SequenceLength", {len}});
  }
  std::string reserve = c.temp(c.out("out") + ".reserve", xv.dtype, {-1});
  std::string dstate = c.temp(c.out("out") + ".dropout_state", DType::kUInt8, {-1});
  c.emit("rnn", std::move(in),
         {{"Out", {c.out("out")}},
          {"State",
           lstm ? std::vector<std::string>{c.out("h"), c.out("c")} : std::vector<std::string>{c.out("h")}},
          {"Reserve", {reserve}},
          {"DropoutState", {dstate}}},
         {{"dropout_prob", p},
          {"hidden_size", hidden},
          {"input_size", input_size},
          {"is_bidirec", dirs == 2},
          {"is_test", c.i("is_test") != 0},
          {"mode", mode},
          {"num_layers", nl},
          {"seed", int32_t{0}}});
  return true;
}

bool rule_conv(Ctx& c, const char*) {
  const std::string &x = c.in("x"), &w = c.in("weight");
  int64_t nd = c.rank(x) - 2;
  if (nd == 1) return rule_conv1d(c);
  if (nd != 2 && nd != 3) return c.decline("only 1-D, 2-D and 3-D convolutions map");
  std::vector<int32_t> s, p, d;
  std::vector<int64_t> strides = c.ints("strides"), pads = c.ints("paddings"), dil = c.ints("dilations");
  if (strides.empty()) strides.assign(nd, 1);
  if (pads.empty()) pads.assign(2 * nd, 0);
  if (dil.empty()) dil.assign(nd, 1);
  int32_t groups;
  if (!to_i32s(c, "strides", strides, &s) || !to_i32s(c, "paddings", pads, &p) ||
      !to_i32s(c, "dilations", dil, &d) || !to_i32(c, "groups", c.i("groups"), &groups))
    return false;
  c.emit(nd == 2 ? "conv2d" : "conv3d", {{"Input", {x}}, {"Filter", {w}}}, {{"Output", {c.out("out")}}},
         {{"strides", s},
          {"paddings", p},  // [before, after] per spatial dim: Paddle's explicit 2*nd form
          {"dilations", d},
          {"groups", groups},
          {"padding_algorithm", std::string("EXPLICIT")},
          {"data_format", std::string(nd == 2 ? "NCHW" : "NCDHW")}});
  return true;
}

// max_pool / avg_pool: pool2d (4-D), pool3d (5-D), unsqueeze2 + pool2d + squeeze2 (3-D, as Paddle's
// 1-D pooling writes it).
bool rule_pool(Ctx& c, const char* kind) {
  const std::string &x = c.in("x"), &out = c.out("out");
  int64_t nd = c.rank(x) - 2;
  if (nd < 1 || nd > 3) c.malformed("x must be 3-D, 4-D or 5-D");
  bool max = std::string(kind) == "max";
  if (max && !c.unused_output("mask"))
    return c.decline("its mask output is used (Paddle's pooling has none)");
  if (!max && c.i("divisor") != 0) return c.decline("divisor_override has no Paddle pooling equivalent");
  std::vector<int64_t> k = c.ints("kernel_size"), strides = c.ints("strides"), pads = c.ints("paddings");
  if (strides.empty()) strides.assign(nd, 1);
  if (pads.empty()) pads.assign(2 * nd, 0);
  if (static_cast<int64_t>(k.size()) != nd || static_cast<int64_t>(strides.size()) != nd ||
      static_cast<int64_t>(pads.size()) != 2 * nd)
    c.malformed("kernel_size / strides / paddings do not match the spatial rank");
  bool adaptive = c.i("adaptive") != 0, ceil = c.i("ceil_mode") != 0;
  if (ceil && !adaptive) {
    // With ceil_mode the last window may lie wholly in the padding: oar gives -inf (max) there, Paddle
    // -FLT_MAX. Exported only when the declared spatial extents show no window is empty.
    const std::vector<int64_t>& xs = c.shape(x);
    for (int64_t i = 0; i < nd; ++i) {
      int64_t in = xs[2 + i];
      if (in < 0) return c.decline("ceil_mode with an unknown spatial extent (a window may be empty)");
      int64_t span = in + pads[2 * i] + pads[2 * i + 1] - k[i];
      int64_t n_out = (span + strides[i] - 1) / strides[i] + 1;
      if ((n_out - 1) * strides[i] - pads[2 * i] >= in)
        return c.decline("ceil_mode makes a window that lies wholly in the padding");
    }
  }
  if (nd == 3 && max && adaptive) return c.decline("adaptive 3-D max pooling is not mapped");
  if (nd == 1) {  // as 2-D over [N, C, 1, L]
    k.insert(k.begin(), 1);
    strides.insert(strides.begin(), 1);
    pads.insert(pads.begin(), {0, 0});
  }
  std::vector<int32_t> k32, s32, p32;
  if (!to_i32s(c, "kernel_size", k, &k32) || !to_i32s(c, "strides", strides, &s32) ||
      !to_i32s(c, "paddings", pads, &p32))
    return false;
  std::string xin = nd == 1 ? unsqueeze_h(c, x) : x, o = nd == 1 ? squeezed_into(c, out) : out;
  if (max && adaptive) {
    // Paddle's pool2d computes adaptive max windows differently from its own adaptive_max_pool2d (which
    // writes max_pool2d_with_index); the latter matches oar.
    std::vector<int64_t> os = c.shape(o);
    std::string mask = c.temp(o + ".mask", DType::kInt32, os);
    c.emit("max_pool2d_with_index", {{"X", {xin}}}, {{"Out", {o}}, {"Mask", {mask}}},
           {{"ksize", k32},
            {"strides", std::vector<int32_t>{1, 1}},
            {"paddings", std::vector<int32_t>{0, 0}},
            {"global_pooling", false},
            {"adaptive", true},
            {"ceil_mode", false}});
  } else {
    c.emit(nd == 3 ? "pool3d" : "pool2d", {{"X", {xin}}}, {{"Out", {o}}},
           {{"pooling_type", std::string(kind)},
            {"ksize", k32},
            {"strides", s32},
            {"paddings", p32},
            {"global_pooling", false},
            {"adaptive", adaptive},
            {"ceil_mode", ceil},
            {"exclusive", max ? true : c.i("exclusive") != 0},
            {"padding_algorithm", std::string("EXPLICIT")},
            {"data_format", std::string(nd == 3 ? "NCDHW" : "NCHW")}});
  }
  if (nd == 1) squeeze_h(c, o, out);
  return true;
}

// ---- views (recorded as oar.reshape / transpose / squeeze / unsqueeze / slice / expand / flatten) ----

bool rule_reshape(Ctx& c, const char*) {
  const std::string& x = c.in("x");
  std::vector<int32_t> shape;
  if (!to_i32s(c, "shape", c.ints("shape"), &shape)) return false;
  c.emit("reshape2", {{"X", {x}}}, {{"Out", {c.out("out")}}, {"XShape", {c.xshape(x)}}}, {{"shape", shape}});
  return true;
}

bool rule_transpose(Ctx& c, const char*) {
  const std::string& x = c.in("x");
  std::vector<int32_t> perm;
  if (!to_i32s(c, "perm", c.ints(c.spelled({"perm", "axis", "dims"})), &perm)) return false;
  c.emit("transpose2", {{"X", {x}}}, {{"Out", {c.out("out")}}, {"XShape", {c.xshape(x)}}}, {{"axis", perm}});
  return true;
}

bool rule_squeeze(Ctx& c, const char*) {
  const std::string& x = c.in("x");
  std::vector<int32_t> axes;
  if (!to_i32s(c, "axes", c.int_or_ints(c.spelled({"axes", "axis"})), &axes)) return false;
  c.emit("squeeze2", {{"X", {x}}}, {{"Out", {c.out("out")}}, {"XShape", {c.xshape(x)}}}, {{"axes", axes}});
  return true;
}

bool rule_unsqueeze(Ctx& c, const char*) {
  const std::string& x = c.in("x");
  std::vector<int32_t> axes;  // one axis, or several inserted one after the other as Paddle does
  if (!to_i32s(c, "axis", c.int_or_ints(c.spelled({"axis", "axes"})), &axes)) return false;
  c.emit("unsqueeze2", {{"X", {x}}}, {{"Out", {c.out("out")}}, {"XShape", {c.xshape(x)}}}, {{"axes", axes}});
  return true;
}

bool rule_slice(Ctx& c, const char*) {
  const std::string& x = c.in("x");
  int64_t step = c.i("step");
  if (step <= 0) return c.decline("slice step must be positive");
  int32_t axis;
  if (!to_i32(c, "axis", c.i("axis"), &axis)) return false;
  // Bounds are clamped by Paddle as by oar; int64 limits (e.g. "to the end") are kept as LONGS there.
  std::vector<int32_t> ax{axis}, flags{1};
  int64_t lo = c.i("start"), hi = c.i("end");
  auto clamp32 = [](int64_t v) {
    return static_cast<int32_t>(
        std::clamp<int64_t>(v, std::numeric_limits<int32_t>::min(), std::numeric_limits<int32_t>::max()));
  };
  std::vector<int32_t> starts{clamp32(lo)}, ends{clamp32(hi)};
  if (step == 1) {
    c.emit("slice", {{"Input", {x}}}, {{"Out", {c.out("out")}}},
           {{"axes", ax},
            {"starts", starts},
            {"ends", ends},
            {"infer_flags", flags},
            {"decrease_axis", std::vector<int32_t>{}}});
  } else {
    int32_t st;
    if (!to_i32(c, "step", step, &st)) return false;
    c.emit("strided_slice", {{"Input", {x}}}, {{"Out", {c.out("out")}}},
           {{"axes", ax},
            {"starts", starts},
            {"ends", ends},
            {"strides", std::vector<int32_t>{st}},
            {"infer_flags", flags},
            {"decrease_axis", std::vector<int32_t>{}}});
  }
  return true;
}

bool rule_expand(Ctx& c, const char*) {
  std::vector<int32_t> shape;
  if (!to_i32s(c, "shape", c.ints("shape"), &shape)) return false;
  c.emit("expand_v2", {{"X", {c.in("x")}}}, {{"Out", {c.out("out")}}}, {{"shape", shape}});
  return true;
}

bool rule_flatten(Ctx& c, const char*) {
  const std::string& x = c.in("x");
  int32_t a, b;
  if (!to_i32(c, "start_axis", c.i("start_axis"), &a) || !to_i32(c, "stop_axis", c.i("stop_axis"), &b))
    return false;
  c.emit("flatten_contiguous_range", {{"X", {x}}}, {{"Out", {c.out("out")}}, {"XShape", {c.xshape(x)}}},
         {{"start_axis", a}, {"stop_axis", b}});
  return true;
}

// ---- more one-to-one ops -------------------------------------------------------------------------------

// Binary ops without Paddle's elementwise axis: X, Y -> Out (atan2: X1, X2).
bool rule_binary_plain(Ctx& c, const char* type) {
  const std::string &x = c.in("x"), &y = c.in("y");
  if (!broadcastable(c, x, y)) return false;
  if (std::string(type) == "atan2") {  // Paddle's atan2 does not broadcast: expand first
    const std::string& out = c.out("out");
    std::vector<std::string> ins;
    if (!broadcast_all(c, {x, y}, c.shape(out), &ins)) return false;
    c.emit(type, {{"X1", {ins[0]}}, {"X2", {ins[1]}}}, {{"Out", {out}}});
    return true;
  }
  c.emit(type, {{"X", {x}}, {"Y", {y}}}, {{"Out", {c.out("out")}}});
  return true;
}

// logsumexp: Paddle's legacy op names its attributes axis / keepdim / reduce_all (not dim / keep_dim).
bool rule_logsumexp(Ctx& c, const char*) {
  const std::string& x = c.in("x");
  int64_t r = c.rank(x);
  std::set<int64_t> norm;
  for (int64_t a : c.ints("axis")) {
    int64_t n = a < 0 ? a + std::max<int64_t>(r, 1) : a;
    if (n < 0 || n >= std::max<int64_t>(r, 1)) c.malformed("axis " + std::to_string(a) + " out of range");
    norm.insert(n);
  }
  bool all = norm.empty() || static_cast<int64_t>(norm.size()) >= r;
  std::vector<int32_t> dim = all ? iota32(r) : std::vector<int32_t>(norm.begin(), norm.end());
  c.emit("logsumexp", {{"X", {x}}}, {{"Out", {c.out("out")}}},
         {{"axis", dim}, {"keepdim", c.i("keepdim") != 0}, {"reduce_all", all}});
  return true;
}

bool rule_scan(Ctx& c, const char* type) {
  int32_t axis;
  if (!to_i32(c, "axis", c.i("axis"), &axis)) return false;
  if (std::string(type) == "cumprod") {
    if (c.i("flatten") != 0) return c.decline("Paddle's cumprod has no flatten");
    c.emit("cumprod", {{"X", {c.in("x")}}}, {{"Out", {c.out("out")}}},
           {{"dim", axis}, {"exclusive", false}, {"reverse", false}});
    return true;
  }
  c.emit(type, {{"X", {c.in("x")}}}, {{"Out", {c.out("out")}}},
         {{"axis", axis},
          {"flatten", c.i("flatten") != 0},
          {"exclusive", false},
          {"reverse", c.i("reverse") != 0}});
  return true;
}

bool rule_put_along_axis(Ctx& c, const char*) {
  int32_t axis;
  if (!to_i32(c, "axis", c.i("axis"), &axis)) return false;
  int64_t r = c.i("reduce");
  if (r < 0 || r > 2) c.malformed("reduce " + std::to_string(r) + " is not 0, 1 or 2");
  static const char* kReduce[] = {"assign", "add", "mul"};
  c.emit("put_along_axis", {{"Input", {c.in("x")}}, {"Index", {c.in("index")}}, {"Value", {c.in("values")}}},
         {{"Result", {c.out("out")}}},
         {{"Axis", axis}, {"Reduce", std::string(kReduce[r])}, {"Include_self", true}});
  return true;
}

// qr / eigh: attributes Paddle spells as strings.
bool rule_linalg(Ctx& c, const char*) {
  const std::string& n = c.name;
  if (n == "qr") {
    c.emit("qr", {{"X", {c.in("x")}}}, {{"Q", {c.out("q")}}, {"R", {c.out("r")}}},
           {{"mode", std::string(c.i("complete") != 0 ? "complete" : "reduced")}});
  } else if (n == "eigh") {
    c.emit("eigh", {{"X", {c.in("x")}}},
           {{"Eigenvalues", {c.out("eigenvalues")}}, {"Eigenvectors", {c.out("eigenvectors")}}},
           {{"UPLO", std::string(c.i("lower") != 0 ? "L" : "U")}});
  } else {
    return c.decline("no Paddle equivalent");
  }
  return true;
}

// unfold / fold: oar's paddings are [top, bottom, left, right], Paddle's [top, left, bottom, right].
bool rule_im2col(Ctx& c, const char* type) {
  std::vector<int64_t> p = c.ints("paddings");
  if (p.empty()) p.assign(4, 0);
  if (p.size() != 4) c.malformed("paddings must have 4 values");
  // Paddle's fold sizes its blocks with paddings[0] and [1] on both sides (checked with the wheel).
  if (std::string(type) == "fold" && (p[0] != p[1] || p[2] != p[3]))
    return c.decline("Paddle's fold takes symmetric paddings only");
  std::vector<int64_t> s = c.ints("strides"), d = c.ints("dilations");
  if (s.empty()) s.assign(2, 1);
  if (d.empty()) d.assign(2, 1);
  std::vector<int32_t> k32, s32, p32, d32;
  if (!to_i32s(c, "kernel_sizes", c.ints("kernel_sizes"), &k32) || !to_i32s(c, "strides", s, &s32) ||
      !to_i32s(c, "paddings", {p[0], p[2], p[1], p[3]}, &p32) || !to_i32s(c, "dilations", d, &d32))
    return false;
  AttrList a{{"kernel_sizes", k32}, {"strides", s32}, {"paddings", p32}, {"dilations", d32}};
  if (std::string(type) == "fold") {
    std::vector<int32_t> o32;
    if (!to_i32s(c, "output_sizes", c.ints("output_sizes"), &o32)) return false;
    a.push_back({"output_sizes", o32});
  }
  c.emit(type, {{"X", {c.in("x")}}}, {{"Y", {c.out("out")}}}, std::move(a));
  return true;
}

bool rule_grid_sample(Ctx& c, const char*) {
  int64_t mode = c.i("mode"), pad = c.i("padding_mode");
  static const char* kModes[] = {"bilinear", "nearest"};
  static const char* kPads[] = {"zeros", "border", "reflection"};
  if (mode < 0 || mode > 1 || pad < 0 || pad > 2) c.malformed("mode / padding_mode out of range");
  c.emit("grid_sampler", {{"X", {c.in("x")}}, {"Grid", {c.in("grid")}}}, {{"Output", {c.out("out")}}},
         {{"mode", std::string(kModes[mode])},
          {"padding_mode", std::string(kPads[pad])},
          {"align_corners", c.i("align_corners") != 0}});
  return true;
}

// ---- ops written as several Paddle ops ---------------------------------------------------------------

// A [1]-shaped fill_constant temporary (range / linspace take their scalars as tensors).
std::string scalar_tensor(Ctx& c, const std::string& base, double v, DType d) {
  std::string t = c.temp(base, d, {1});
  c.emit("fill_constant", {}, {{"Out", {t}}},
         {{"shape", std::vector<int64_t>{1}},
          {"dtype", dtype_to_paddle_code(d)},
          {"value", static_cast<float>(v)},
          {"str_value", exact_number(v, d)}});
  return t;
}

bool rule_arange(Ctx& c, const char*) {
  DType d;
  native_dtype(c, &d);
  if (d == DType::kBool || is_complex(d) || d == DType::kFloat16 || d == DType::kBFloat16)
    return c.decline("Paddle's range takes int32/int64/float32/float64 only");
  const std::string& o = c.out("out");
  std::string a = scalar_tensor(c, o + ".start", c.f("start"), d),
              b = scalar_tensor(c, o + ".end", c.f("end"), d),
              s = scalar_tensor(c, o + ".step", c.f("step"), d);
  c.emit("range", {{"Start", {a}}, {"End", {b}}, {"Step", {s}}}, {{"Out", {o}}});
  return true;
}

bool rule_linspace(Ctx& c, const char*) {
  DType d;
  native_dtype(c, &d);
  const std::string& o = c.out("out");
  int64_t num = c.i("num");
  if (!fits_i32(num)) return c.decline("num does not fit Paddle's int32 Num tensor");
  std::string a = scalar_tensor(c, o + ".start", c.f("start"), DType::kFloat64),
              b = scalar_tensor(c, o + ".stop", c.f("stop"), DType::kFloat64),
              n = scalar_tensor(c, o + ".num", static_cast<double>(num), DType::kInt32);
  c.emit("linspace", {{"Start", {a}}, {"Stop", {b}}, {"Num", {n}}}, {{"Out", {o}}},
         {{"dtype", dtype_to_paddle_code(d)}});
  return true;
}

// softmax_cross_entropy(logits [N, C], label [N]) -> loss [N], softmax: Paddle's op wants the label and
// gives the loss as [N, 1].
bool rule_softmax_ce(Ctx& c, const char*) {
  const std::string &logits = c.in("logits"), &label = c.in("label"), &loss = c.out("loss");
  int32_t ignore;
  if (!to_i32(c, "ignore_index", c.i("ignore_index"), &ignore)) return false;
  std::vector<int64_t> ls = c.shape(label);
  ls.push_back(1);
  std::string label2 = c.temp(label + ".unsqueezed", c.var(label).dtype, ls);
  c.emit("unsqueeze2", {{"X", {label}}}, {{"Out", {label2}}, {"XShape", {c.xshape(label)}}},
         {{"axes", std::vector<int32_t>{-1}}});
  std::vector<int64_t> lo = c.shape(loss);
  lo.push_back(1);
  std::string loss2 = c.temp(loss + ".2d", c.var(loss).dtype, lo);
  c.emit("softmax_with_cross_entropy", {{"Logits", {logits}}, {"Label", {label2}}},
         {{"Softmax", {c.out("softmax")}}, {"Loss", {loss2}}},
         {{"soft_label", false},
          {"use_softmax", true},
          {"numeric_stable_mode", true},
          {"ignore_index", ignore},
          {"axis", int32_t{-1}}});
  c.emit("squeeze2", {{"X", {loss2}}}, {{"Out", {loss}}, {"XShape", {c.xshape(loss2)}}},
         {{"axes", std::vector<int32_t>{-1}}});
  return true;
}

// Inserts a unit dim at position 2 ([N, C, L] -> [N, C, 1, L]) with unsqueeze2.
std::string unsqueeze_h(Ctx& c, const std::string& v) {
  std::vector<int64_t> s = c.shape(v);
  s.insert(s.begin() + 2, 1);
  std::string t = c.temp(v + ".2d", c.var(v).dtype, s);
  c.emit("unsqueeze2", {{"X", {v}}}, {{"Out", {t}}, {"XShape", {c.xshape(v)}}},
         {{"axes", std::vector<int32_t>{2}}});
  return t;
}
// The [N, C, 1, L] result of a 2-D op for the native [N, C, L] output `out`, squeezed into it afterwards.
std::string squeezed_into(Ctx& c, const std::string& out) {
  std::vector<int64_t> s = c.shape(out);
  s.insert(s.begin() + 2, 1);
  return c.temp(out + ".2d", c.var(out).dtype, s);
}
void squeeze_h(Ctx& c, const std::string& t, const std::string& out) {
  c.emit("squeeze2", {{"X", {t}}}, {{"Out", {out}}, {"XShape", {c.xshape(t)}}},
         {{"axes", std::vector<int32_t>{2}}});
}

// 1-D convolution, as paddle.nn.functional.conv1d writes it: unsqueeze2 + conv2d + squeeze2.
bool rule_conv1d(Ctx& c) {
  const std::string &x = c.in("x"), &w = c.in("weight"), &out = c.out("out");
  std::vector<int64_t> strides = c.ints("strides"), pads = c.ints("paddings"), dil = c.ints("dilations");
  if (strides.empty()) strides = {1};
  if (pads.empty()) pads = {0, 0};
  if (dil.empty()) dil = {1};
  if (strides.size() != 1 || pads.size() != 2 || dil.size() != 1)
    c.malformed("1-D conv attributes of the wrong length");
  std::vector<int32_t> s, p, d;
  int32_t groups;
  if (!to_i32s(c, "strides", {1, strides[0]}, &s) || !to_i32s(c, "paddings", {0, 0, pads[0], pads[1]}, &p) ||
      !to_i32s(c, "dilations", {1, dil[0]}, &d) || !to_i32(c, "groups", c.i("groups"), &groups))
    return false;
  std::string x2 = unsqueeze_h(c, x), w2 = unsqueeze_h(c, w), o2 = squeezed_into(c, out);
  c.emit("conv2d", {{"Input", {x2}}, {"Filter", {w2}}}, {{"Output", {o2}}},
         {{"strides", s},
          {"paddings", p},
          {"dilations", d},
          {"groups", groups},
          {"padding_algorithm", std::string("EXPLICIT")},
          {"data_format", std::string("NCHW")}});
  squeeze_h(c, o2, out);
  return true;
}

// Non-constant padding of a 4-D / 5-D tensor's spatial dims: pad3d (5-D; a 4-D input gets a unit depth
// dim first, as paddle.nn.functional.pad does).
bool rule_pad3d(Ctx& c) {
  static const char* kModes[] = {"constant", "reflect", "replicate", "circular"};
  int64_t mode = c.i("mode");
  if (mode < 1 || mode > 3) c.malformed("mode " + std::to_string(mode) + " is not 0..3");
  const std::string &x = c.in("x"), &out = c.out("out");
  int64_t r = c.rank(x);
  std::vector<int64_t> pads = c.ints("pads");
  if (r != 4 && r != 5) return c.decline("non-constant padding maps (pad3d) for 4-D and 5-D inputs only");
  if (static_cast<int64_t>(pads.size()) != 2 * r) c.malformed("pads must have 2 * rank values");
  if (pads[0] || pads[1] || pads[2] || pads[3]) return c.decline("pad3d pads spatial dims only (not N, C)");
  // Paddle's order: [left, right, top, bottom, front, back] (last dim first).
  std::vector<int64_t> pp;
  for (int64_t dim = r - 1; dim >= 2; --dim) pp.insert(pp.end(), {pads[2 * dim], pads[2 * dim + 1]});
  if (r == 4) pp.insert(pp.end(), {0, 0});
  std::vector<int32_t> p32;
  float value;
  if (!to_i32s(c, "pads", pp, &p32) || !to_f32(c, "value", c.f("value"), &value)) return false;
  AttrList a{{"paddings", p32},
             {"mode", std::string(kModes[mode])},
             {"value", value},
             {"data_format", std::string("NCDHW")}};
  if (r == 5) {
    c.emit("pad3d", {{"X", {x}}}, {{"Out", {out}}}, std::move(a));
    return true;
  }
  std::string x5 = unsqueeze_h(c, x), o5 = squeezed_into(c, out);
  c.emit("pad3d", {{"X", {x5}}}, {{"Out", {o5}}}, std::move(a));
  squeeze_h(c, o5, out);
  return true;
}

// slogdet -> slogdeterminant (one output: sign and log|det| stacked on a new leading axis) + two slice
// ops taking them apart.
bool rule_slogdet(Ctx& c, const char*) {
  const std::string &x = c.in("x"), &sign = c.out("sign"), &logabs = c.out("logabsdet");
  std::vector<int64_t> s = c.shape(x);
  if (s.size() < 2) c.malformed("x must have at least 2 dims");
  s.resize(s.size() - 2);
  s.insert(s.begin(), 2);
  std::string both = c.temp(sign + ".stacked", c.var(x).dtype, s);
  c.emit("slogdeterminant", {{"Input", {x}}}, {{"Out", {both}}});
  for (int32_t k = 0; k < 2; ++k)
    c.emit("slice", {{"Input", {both}}}, {{"Out", {k == 0 ? sign : logabs}}},
           {{"axes", std::vector<int32_t>{0}},
            {"starts", std::vector<int32_t>{k}},
            {"ends", std::vector<int32_t>{k + 1}},
            {"infer_flags", std::vector<int32_t>{1}},
            {"decrease_axis", std::vector<int32_t>{0}}});
  return true;
}

// interpolate -> <method>_interp_v2. Paddle derives the sampling ratios from the sizes (in / out, or
// (in - 1) / (out - 1) with align_corners) or from a `scale` attribute (1 / scale), in float32; oar's op
// carries them explicitly. Exported when the declared input extents reproduce oar's ratios either way.
bool rule_interpolate(Ctx& c, const char*) {
  const std::string &x = c.in("x"), &out = c.out("out");
  int64_t nd = c.rank(x) - 2, mode = c.i("mode");
  bool align = c.i("align_corners") != 0;
  const char* method = nullptr;
  if (mode == 0 && (nd == 2 || nd == 3) && !align) method = "nearest";
  if (mode == 1) method = nd == 1 ? "linear" : nd == 2 ? "bilinear" : "trilinear";
  if (mode == 2 && nd == 2) method = "bicubic";
  if (method == nullptr || nd < 1 || nd > 3)
    return c.decline("no Paddle interpolation for mode " + std::to_string(mode) + " on " +
                     std::to_string(nd) + "-D input" + (align ? " with align_corners" : ""));
  std::vector<int64_t> size = c.ints("out_size");
  std::vector<double> ratios = c.floats("ratios");
  if (static_cast<int64_t>(size.size()) != nd || static_cast<int64_t>(ratios.size()) != nd)
    c.malformed("out_size / ratios do not match the spatial rank");
  const std::vector<int64_t>& xs = c.shape(x);
  bool by_size = true, by_scale = !align;
  std::vector<float> scale;
  for (int64_t i = 0; i < nd; ++i) {
    int64_t in = xs[2 + i], o = size[i];
    if (in < 0) return c.decline("interpolation with an unknown input extent");
    float r = static_cast<float>(ratios[i]);
    float from_size = align ? (o > 1 ? static_cast<float>(in - 1) / static_cast<float>(o - 1) : 0.0f)
                            : static_cast<float>(in) / static_cast<float>(o);
    by_size = by_size && r == from_size;
    float sc = r > 0 ? static_cast<float>(1.0 / ratios[i]) : 0.0f;
    by_scale = by_scale && sc > 0 && static_cast<float>(1. / sc) == r &&
               static_cast<int64_t>(static_cast<float>(in) * sc) == o;
    scale.push_back(sc);
  }
  if (!by_size && !by_scale) return c.decline("its ratios match neither the sizes nor a scale factor");
  // Paddle orders the sizes out_d, out_h, out_w from the last spatial dim backwards.
  int32_t od = -1, oh = -1, ow = -1;
  if (!to_i32(c, "out_size", size[nd - 1], &ow)) return false;
  if (nd >= 2 && !to_i32(c, "out_size", size[nd - 2], &oh)) return false;
  if (nd == 3 && !to_i32(c, "out_size", size[0], &od)) return false;
  c.emit(std::string(method) + "_interp_v2", {{"X", {x}}}, {{"Out", {out}}},
         {{"out_d", od},
          {"out_h", oh},
          {"out_w", ow},
          {"scale", by_size ? std::vector<float>{} : scale},
          {"interp_method", std::string(method)},
          {"align_corners", align},
          {"align_mode", static_cast<int32_t>(c.i("align_mode"))},
          // Paddle's interp ops say NCHW for channel-first input of every rank (NCW / NCDHW read as
          // unknown / channel-last; checked with the wheel).
          {"data_layout", std::string("NCHW")}});
  return true;
}

// ---- the Paddle op map ---------------------------------------------------------------------------------

using paddle_map::Entry;
using paddle_map::Form;

const std::vector<Entry>& map_entries() {
#define IMPORT(fn) nullptr
#define RULE(fn) fn
  using namespace paddle_map;
  static const std::vector<Entry> t = {
#include "paddle_map.def"
  };
#undef IMPORT
#undef RULE
  return t;
}

const Entry& entry_of(const std::string& paddle_type) {
  static const std::map<std::string, const Entry*> by_type = paddle_map::index_by_type(map_entries());
  return *by_type.at(paddle_type);
}

// The slots form: the native op's inputs / outputs (OpDef order) into the entry's Paddle slots, its
// attributes renamed and converted to Paddle's INT / BOOLEAN / FLOAT.
bool rule_slots(Ctx& c, const char* type) {
  const Entry& e = entry_of(type);
  if (c.def == nullptr) c.malformed("has no op definition");
  Slots ins, outs;
  for (size_t k = 0; k < e.ins.size() && k < c.def->inputs.size(); ++k)
    ins.push_back({e.ins[k], {c.in(c.def->inputs[k])}});
  for (size_t k = 0; k < e.outs.size() && k < c.def->outputs.size(); ++k)
    outs.push_back({e.outs[k], {c.out(c.def->outputs[k])}});
  AttrList a;
  for (const paddle_map::AttrRename& r : e.attrs) {
    switch (r.kind) {
      case paddle_map::AttrKind::kInt: {
        int32_t v;
        if (!to_i32(c, r.oar, c.i(r.oar), &v)) return false;
        a.push_back({r.paddle, v});
        break;
      }
      case paddle_map::AttrKind::kBool:
        a.push_back({r.paddle, c.i(r.oar) != 0});
        break;
      case paddle_map::AttrKind::kFloat: {
        float v;
        if (!to_f32(c, r.oar, c.f(r.oar), &v)) return false;
        a.push_back({r.paddle, v});
        break;
      }
    }
  }
  c.emit(type, std::move(ins), std::move(outs), std::move(a));
  return true;
}

paddle_map::ExportFn form_rule(Form f) {
  switch (f) {
    case Form::kUnary:
      return rule_unary;
    case Form::kElementwise:
      return rule_binary;
    case Form::kBinary:
      return rule_binary_plain;
    case Form::kReduce:
      return rule_reduce;
    case Form::kSlots:
      return rule_slots;
    case Form::kCustom:
      break;
  }
  return nullptr;
}

struct Rule {
  paddle_map::ExportFn fn;
  const char* arg;              // the Paddle op type, for the forms; the declined reason for rule_differs
  bool run_time_attrs = false;  // the rule handles run-time attribute inputs (paddle_map::Export)
};

// Native op name -> its rule, from the map: each native op is exported by the one entry that lists it.
const std::map<std::string, Rule>& rules() {
  static const std::map<std::string, Rule> t = [] {
    std::map<std::string, Rule> m;
    for (const Entry& e : map_entries()) {
      if (e.declined != nullptr) m[e.op] = {rule_differs, e.declined};
      for (const paddle_map::Export& x : e.exports) {
        paddle_map::ExportFn fn = x.fn != nullptr ? x.fn : form_rule(e.form);
        OAR_ENFORCE(fn != nullptr, ErrorCode::kInternal,
                    "Paddle op map: " << e.paddle << " exports " << x.native << " without a rule");
        m[x.native] = {fn, x.arg != nullptr ? x.arg : e.paddle, x.run_time_attrs};
      }
    }
    return m;
  }();
  return t;
}

void count(std::map<std::string, int64_t>* m, const std::string& k) { ++(*m)[k]; }

}  // namespace

bool is_native_op(const OpDesc& op) { return op.type.rfind(kNativePrefix, 0) == 0; }

std::vector<std::string> exportable_native_ops() {
  std::vector<std::string> out;
  for (auto& kv : rules())
    if (kv.second.fn != rule_differs) out.push_back(kv.first);
  return out;
}

int64_t ExportReport::num_kept() const {
  int64_t n = 0;
  for (auto& kv : kept) n += kv.second;
  return n;
}

std::string ExportReport::to_string() const {
  std::ostringstream s;
  s << "exported:";
  for (auto& [t, n] : exported) s << " " << t << " x" << n;
  s << "; kept native:";
  if (kept.empty()) s << " none";
  for (auto& [t, n] : kept) {
    s << " " << t << " x" << n;
    for (auto& [rt, why] : reasons)
      if (rt == t) s << " (" << why << ")";
  }
  return s.str();
}

Program export_paddle_dialect(const Program& native, ExportReport* report) {
  Program out = native;
  std::set<std::string> read, names;
  for (int32_t bi = 0; bi < out.num_blocks(); ++bi) {
    for (const VarDesc& v : out.block(bi).vars()) names.insert(v.name);
    for (const OpDesc& op : out.block(bi).ops())
      for (auto& [slot, args] : op.inputs) read.insert(args.begin(), args.end());
  }
  std::map<std::string, int64_t> exported, kept;
  std::map<std::string, std::string> reasons;
  for (int32_t bi = 0; bi < out.num_blocks(); ++bi) {
    std::vector<OpDesc> ops = out.block(bi).ops();  // rules may add variables to the block
    std::vector<OpDesc> rewritten;
    rewritten.reserve(ops.size());
    for (OpDesc& op : ops) {
      if (!is_native_op(op)) {
        rewritten.push_back(std::move(op));
        continue;
      }
      Ctx c{&out, bi, &op, op.type.substr(4), nullptr, &read, &names, {}, {}};
      c.def = OpRegistry::get().find(c.name);
      auto it = rules().find(c.name);
      bool ok = false;
      bool var_attrs = false;  // run-time attributes (static_graph.h): most rules read attributes only
      for (auto& [slot, args] : op.inputs) var_attrs |= !slot.empty() && slot[0] == kVarAttrPrefix;
      if (var_attrs && (it == rules().end() || !it->second.run_time_attrs)) {
        c.why = "an attribute comes from a variable at run time";
      } else if (it == rules().end()) {
        c.why = "no Paddle equivalent";
      } else {
        ok = it->second.fn(c, it->second.arg);
      }
      if (ok) {
        count(&exported, op.type);
        for (OpDesc& e : c.emitted) rewritten.push_back(std::move(e));
      } else {
        // Temporaries a declining rule made stay declared but unused; rules decline before making any.
        count(&kept, op.type);
        reasons.emplace(op.type, c.why);
        rewritten.push_back(std::move(op));
      }
    }
    out.block(bi).mutable_ops() = std::move(rewritten);
  }
  // Outputs a rule dropped (max_pool's mask, layer_norm's mean / rstd) are left declared: harmless, and
  // removing them would need a second scan for the (rare) programs that name them elsewhere.

  // op_version_map: the native program's entries, then oar's version of every other Paddle type used.
  std::vector<std::pair<std::string, int32_t>> versions = native.op_version_map();
  std::set<std::string> listed;
  for (auto& kv : versions) listed.insert(kv.first);
  std::set<std::string> used;
  for (int32_t bi = 0; bi < out.num_blocks(); ++bi)
    for (const OpDesc& op : out.block(bi).ops())
      if (!is_native_op(op)) used.insert(op.type);
  for (const std::string& t : used) {
    if (listed.count(t)) continue;
    if (auto v = supported_op_version(t)) versions.push_back({t, *v});
  }
  out.set_op_version_map(std::move(versions));
  out.set_has_op_version_map(true);

  if (report != nullptr) {
    report->exported.assign(exported.begin(), exported.end());
    report->kept.assign(kept.begin(), kept.end());
    report->reasons.assign(reasons.begin(), reasons.end());
  }
  return out;
}

}  // namespace oar::ir
