// Sample inputs of an op, declared next to its definition (the register_<family>_samples functions of
// framework/src/op_defs.cc and ops_<family>.cc) and run by the op suite on every device
// (`python -m oar.testing.ops`, docs/ops.md "Adding an op"). A sample says how to build each input
// (shape, value range, a fixed dtype for index/condition inputs, whether it is a view) and which
// attributes to pass; the suite builds it for every dtype the device registers a kernel for.
#pragma once

#include <oar/core/dtype.h>

#include <cstdint>
#include <limits>
#include <string>
#include <utility>
#include <variant>
#include <vector>

namespace oar {

// How an input's values are drawn. Integer dtypes always get integers (clipped to the dtype), bool 0/1.
enum class SampleKind : int8_t {
  kReal,        // uniform in [lo, hi]
  kInteger,     // integers in [lo, hi], whatever the dtype (ties for sort/argmax, exact float results)
  kNonZero,     // as kReal with |v| >= 0.25 (integers: != 0): divisors
  kHalves,      // multiples of 0.5 in [lo, hi] (round's ties)
  kUnique,      // distinct integers drawn from [lo, hi] (scatter indices with no duplicates)
  kSpd,         // symmetric positive-definite matrices (last two dims): B B^T + n I, B in [lo, hi]
  kTriangular,  // upper-triangular, well conditioned: triu(B) + n I
};

// How the tensor is made on the device under test (the values the op sees are the same).
enum class SampleView : int8_t {
  kNone,
  kTranspose,  // a transposed view (last two dims swapped) of a contiguous base: non-contiguous
  kFlip,       // base[::-1] along dim 0: a negative stride and an offset
  kExpand,     // expand() of a base of shape `expand_from`: stride 0 on the broadcast dims
};

struct SampleInput {
  std::vector<int64_t> shape;
  SampleKind kind = SampleKind::kReal;
  double lo = -2, hi = 2;
  int32_t dtype = -1;  // a fixed DType (index inputs: int64, conditions: bool); -1: the dtype under test
  SampleView view = SampleView::kNone;
  std::vector<int64_t> expand_from;  // kExpand: the base shape, broadcastable to `shape`
  bool specials = false;             // floats: about a fifth of the elements are NaN, +inf or -inf
  bool zeros = false;                // about a quarter of the elements are exactly 0
};

// The alternatives of AttrValue (op.h), in the same order (op_samples.cc checks it); a separate
// name so this header stands alone.
using SampleAttrValue = std::variant<int64_t, double, std::vector<int64_t>, std::vector<double>, std::string>;

// What the suite compares.
enum class SampleCheck : int8_t {
  kValues,  // the values, against the CPU (or, on the CPU, float64) result
  kRandom,  // random numbers: shape, dtype, every value in [out_lo, out_hi], the mean near out_mean
};

struct OpSample {
  std::string name;  // a short label for reports: "broadcast", "0-d", "transposed", ...
  std::vector<SampleInput> inputs;
  std::vector<std::pair<const char*, SampleAttrValue>> attrs;  // names are string literals
  std::vector<DType> dtypes;  // only these dtypes (empty: every dtype the device has a kernel for)
  bool smooth = true;         // false: no finite-difference check (a kink or jump near the points)
  double tol = 1;             // multiplies the dtype's tolerance (long reductions, ill-conditioned ops)
  SampleCheck check = SampleCheck::kValues;
  std::string reason;  // kRandom: why the values are not compared
  double out_lo = -std::numeric_limits<double>::infinity();
  double out_hi = std::numeric_limits<double>::infinity();
  double out_mean = std::numeric_limits<double>::quiet_NaN();  // NaN: not checked
  double out_std = std::numeric_limits<double>::quiet_NaN();   // of one value, for the mean's tolerance
};

}  // namespace oar
