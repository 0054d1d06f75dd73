// What the family files use to declare their ops' sample inputs (oar/core/op_sample.h): short
// constructors for inputs and samples, and shared sample sets (unary, binary, reductions) so that
// most ops cost one line. Each family declares its samples in register_<family>_samples, right after
// register_<family>_ops; register_builtin_samples (op_samples.cc) calls them all.
#pragma once

#include <oar/core/op.h>

#include <string>
#include <vector>

namespace oar {

void register_builtin_samples(OpRegistry& r);     // after register_builtin_ops
void register_foundation_samples(OpRegistry& r);  // op_defs.cc
void register_math_samples(OpRegistry& r);        // ops_math.cc
void register_manip_samples(OpRegistry& r);       // ops_manip.cc
void register_conv_samples(OpRegistry& r);        // ops_conv.cc
void register_nn_samples(OpRegistry& r);          // ops_nn.cc
void register_linalg_samples(OpRegistry& r);      // ops_linalg.cc
void register_random_samples(OpRegistry& r);      // ops_random.cc
void register_fft_samples(OpRegistry& r);         // ops_fft.cc
void register_optim_samples(OpRegistry& r);       // ops_optim.cc
void register_scan_samples(OpRegistry& r);        // ops_scan.cc
void register_complex_samples(OpRegistry& r);     // ops_complex.cc

namespace sample {

using Shape = std::vector<int64_t>;
using AttrList = std::vector<std::pair<const char*, SampleAttrValue>>;

// Appends samples to an op's definition (throws kNotFound naming an unknown op).
void add(OpRegistry& r, const char* op, std::vector<OpSample> samples);
// The same samples for several ops.
void add(OpRegistry& r, std::initializer_list<const char*> ops, const std::vector<OpSample>& samples);

// ---- inputs ----
SampleInput real(Shape shape, double lo = -2, double hi = 2);
SampleInput integer(Shape shape, double lo, double hi);
SampleInput nonzero(Shape shape, double lo = -2, double hi = 2);
SampleInput halves(Shape shape, double lo, double hi);
SampleInput spd(Shape shape);         // symmetric positive definite (last two dims)
SampleInput triangular(Shape shape);  // upper triangular, well conditioned
// Index inputs: integers in [lo, hi] (unique: distinct), dtype int64 unless given.
SampleInput index(Shape shape, int64_t lo, int64_t hi, DType d = DType::kInt64);
SampleInput unique_index(Shape shape, int64_t lo, int64_t hi, DType d = DType::kInt64);
SampleInput mask(Shape shape);                     // a bool input
SampleInput fixed(SampleInput in, DType d);        // a dtype that does not follow the dtype under test
SampleInput transposed(SampleInput in);            // rank >= 2
SampleInput flipped(SampleInput in);               // rank >= 1
SampleInput expanded(SampleInput in, Shape from);  // `from` broadcasts to in.shape
SampleInput with_specials(SampleInput in);         // NaN / inf among the values
SampleInput with_zeros(SampleInput in);

// dtype lists for only()
std::vector<DType> floats();  // float16, bfloat16, float32, float64
std::vector<DType> ints();    // uint8, int8, int16, int32, int64

// ---- samples ----
OpSample S(std::string name, std::vector<SampleInput> inputs, AttrList attrs = {});
OpSample nonsmooth(OpSample s);  // no finite-difference check
OpSample only(OpSample s, std::vector<DType> dtypes);
OpSample loose(OpSample s, double tol);  // tolerance multiplier
// A random op's sample: values in [lo, hi], mean near `mean` (NaN: unchecked), one value's std `std`.
OpSample random(std::string name, std::vector<SampleInput> inputs, AttrList attrs, double lo, double hi,
                double mean, double std, std::string reason);

// ---- shared sample sets ----
// Unary elementwise: 2-d, 0-d, empty, 3-d, transposed, flipped, expanded (+ NaN/inf when `specials`).
std::vector<OpSample> unary(double lo = -2, double hi = 2, bool specials = true, AttrList attrs = {},
                            SampleKind kind = SampleKind::kReal);
// Binary elementwise with numpy broadcasting: same shape, trailing and outer broadcast, 0-d with 1-d,
// empty, transposed x, flipped y, expanded x (+ NaN/inf). y is drawn from [ylo, yhi] (nonzero: no 0).
std::vector<OpSample> binary(double lo = -2, double hi = 2, double ylo = -2, double yhi = 2,
                             bool y_nonzero = false, bool specials = true);
// Reductions with attributes axis (ints) and keepdim: all, one axis, two axes kept, negative axis,
// 0-d, views, NaN/inf, a long row (accumulation) when `long_rows`, empty extents when `allow_empty`.
std::vector<OpSample> reduction(double lo = -2, double hi = 2, bool allow_empty = true,
                                bool long_rows = true);
// Ops with one int axis attribute (softmax, scans, sort): axis 1, -1, 0 of a 3-d input, 0-d, views.
std::vector<OpSample> along_axis(double lo = -2, double hi = 2, AttrList extra = {}, bool allow_empty = true);

}  // namespace sample
}  // namespace oar
