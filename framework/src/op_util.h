// What the op definition files share: the helpers their shape/dtype inference uses, the generic
// inference functions, and the registration hooks of each op family. Every family file
// (ops_<family>.cc) defines its ops and their gradient rules together, so one op lives in one file.
#pragma once

#include <oar/core/autograd.h>
#include <oar/core/op.h>

#include <cstdint>
#include <string>
#include <vector>

namespace oar {

// ---- registration ---------------------------------------------------------------------------------
void register_foundation_ops(OpRegistry& r);  // op_defs.cc (docs/ops.md)
void register_math_ops(OpRegistry& r);    // ops_math.cc: more elementwise math, scans, reductions, creation
void register_manip_ops(OpRegistry& r);   // ops_manip.cc: manipulation, gather/scatter, sort/search
void register_conv_ops(OpRegistry& r);    // ops_conv.cc: convolution, pooling, resampling
void register_nn_ops(OpRegistry& r);      // ops_nn.cc: normalisation, activations, losses
void register_linalg_ops(OpRegistry& r);  // ops_linalg.cc: LAPACK-backed linear algebra
void register_random_ops(OpRegistry& r);  // ops_random.cc: draws for oar.distribution (no gradients)
void register_fft_ops(OpRegistry& r);     // ops_fft.cc: discrete Fourier transforms (FFTW on the CPU)
void register_optim_ops(OpRegistry& r);   // ops_optim.cc: fused optimizer updates (no gradients)
void register_scan_ops(OpRegistry& r);    // ops_scan.cc: logsumexp, p_norm, cummax/cummin, segment_pool
void register_complex_ops(OpRegistry& r);  // ops_complex.cc: real, imag, conj, angle, complex, as_complex/as_real

// Gradient rules: each family sets OpDef::grad of its ops right after defining them (GradRule:
// `saved_inputs` bit i set when the rule reads input i's values; `saved_outputs`: it reads the outputs).
void register_foundation_grads(OpRegistry& r);
void register_math_grads(OpRegistry& r);
void register_manip_grads(OpRegistry& r);
void register_conv_grads(OpRegistry& r);
void register_nn_grads(OpRegistry& r);
void register_linalg_grads(OpRegistry& r);
void register_fft_grads(OpRegistry& r);
void register_scan_grads(OpRegistry& r);
void register_complex_grads(OpRegistry& r);
// Sets `op`'s gradient rule (registration only).
inline void set_grad(OpRegistry& r, const char* op, GradFn fn, uint32_t saved_inputs, bool saved_outputs) {
  r.get_mutable(op).grad = {fn, saved_inputs, saved_outputs};
}

namespace opdef {

// ---- helpers for inference functions (op_defs.cc) ---------------------------------------------------
const char* op_name(const InferContext& c);
// Input i's name for messages; a variadic op's inputs share one name, so they are numbered ("x[2]").
std::string input_name(const InferContext& c, int i);
// numpy broadcasting of two shapes; the error names the op and the two arguments.
Dims broadcast(const InferContext& c, const Dims& a, const Dims& b, const char* an, const char* bn);
void require_same_dtype(const InferContext& c, int a, int b);
void require_floating(const InferContext& c, int i);
void require_not_complex(const InferContext& c, int i);
DType complex_of(DType d);  // float64 -> complex128, else complex64 (ops_complex.cc)
DType real_of(DType d);     // complex64 -> float32, complex128 -> float64, others unchanged
// axis in [-ndim, ndim) (a 0-d tensor accepts 0 and -1), made non-negative; kOutOfRange otherwise.
int64_t normalize_axis(const InferContext& c, int64_t axis, int32_t ndim);
// Normalises attribute "axis" (ints) to sorted unique non-negative axes (empty = all) and returns the
// reduced shape, honouring attribute "keepdim".
Dims reduce_dims(InferContext& c);
void require_nonempty_reduction(InferContext& c);
DType attr_dtype(InferContext& c);  // attribute "dtype", validated
Dims attr_shape(InferContext& c);   // attribute "shape", validated non-negative

// Attribute definitions.
AttrDef int_attr(const char* name, int64_t def);
AttrDef req_int(const char* name);
AttrDef float_attr(const char* name, double def);
AttrDef req_float(const char* name);
AttrDef ints_attr(const char* name);
AttrDef req_ints(const char* name);

// Adds a single-output op. dispatch_input -1: the dispatch dtype comes from attribute "dtype".
OpDef& def(OpRegistry& r, const char* name, std::vector<const char*> inputs, std::vector<AttrDef> attrs,
           InferFn infer, int32_t dispatch_input = 0, bool variadic = false);

// Generic inference functions.
void infer_binary(InferContext& c);       // same dtype, broadcast shapes
void infer_binary_real(InferContext& c);  // ... and not complex
void infer_compare(InferContext& c);      // broadcast, bool result
void infer_compare_real(InferContext& c);
void infer_unary(InferContext& c);            // same dtype and shape
void infer_unary_real(InferContext& c);       // not complex
void infer_unary_float(InferContext& c);      // floating only
void infer_unary_bool(InferContext& c);       // bool result
void infer_float_predicate(InferContext& c);  // floating input, bool result
void infer_sum(InferContext& c);              // reduction; small ints and bool widen to int64
void infer_mean(InferContext& c);             // reduction over floats
void infer_prod(InferContext& c);
void infer_minmax(InferContext& c);  // non-empty reduction

}  // namespace opdef
}  // namespace oar
