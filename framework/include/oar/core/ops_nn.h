// The C++ API of the nn op family (framework/src/ops_nn.cc; semantics in docs/ops_nn.md). Composite
// Python functions (batch_norm, losses other than hard-label cross entropy, ...) have no C++ form here.
#pragma once

#include <oar/core/tensor.h>

#include <cstdint>
#include <vector>

namespace oar::ops {

// Fused activations (floating dtypes); each is differentiable to any order.
Tensor gelu(const Tensor& x, bool approximate = false);
Tensor silu(const Tensor& x);
Tensor leaky_relu(const Tensor& x, double negative_slope = 0.01);
Tensor elu(const Tensor& x, double alpha = 1.0);
Tensor softplus(const Tensor& x, double beta = 1.0, double threshold = 20.0);
Tensor hardswish(const Tensor& x);
Tensor hardsigmoid(const Tensor& x, double slope = 1.0 / 6.0, double offset = 0.5);

// Normalises x over its dims from begin_norm_axis on; weight and bias have that many elements.
Tensor layer_norm(const Tensor& x, const Tensor& weight, const Tensor& bias, int64_t begin_norm_axis,
                  double epsilon = 1e-5);

// Per-row cross entropy of logits [N, C] against int labels [N]; rows labelled ignore_index give 0.
Tensor softmax_cross_entropy(const Tensor& logits, const Tensor& label, int64_t ignore_index = -100);

}  // namespace oar::ops
