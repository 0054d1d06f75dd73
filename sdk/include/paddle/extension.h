// PaddlePaddle 2.x's custom-op spellings over oar/extension.h, so that an existing Paddle custom-op
// source (`#include "paddle/extension.h"`, paddle::Tensor, PD_BUILD_OP, PD_KERNEL, ...) compiles
// unchanged against oar's SDK. Nothing here adds behaviour: every name is an alias.
#pragma once

#include <oar/extension.h>

namespace paddle {
using ::oar::bfloat16;
using ::oar::complex128;
using ::oar::complex64;
using ::oar::CPUPlace;
using ::oar::CustomPlace;
using ::oar::DataType;
using ::oar::DataTypeToString;
using ::oar::empty;
using ::oar::empty_like;
using ::oar::float16;
using ::oar::full;
using ::oar::full_like;
using ::oar::GPUPlace;
using ::oar::Grad;
using ::oar::ones;
using ::oar::ones_like;
using ::oar::OpMetaInfoBuilder;
using ::oar::optional;
using ::oar::Optional;
using ::oar::Place;
using ::oar::PlaceType;
using ::oar::Tensor;
using ::oar::Vec;
using ::oar::zeros;
using ::oar::zeros_like;
namespace experimental {
using ::oar::empty;
using ::oar::full;
using ::oar::ones;
using ::oar::Tensor;
using ::oar::zeros;
}  // namespace experimental
}  // namespace paddle

#define PD_BUILD_OP(name) OAR_BUILD_OP(name)
#define PD_BUILD_GRAD_OP(name) OAR_BUILD_GRAD_OP(name)
#define PD_BUILD_DOUBLE_GRAD_OP(name) OAR_BUILD_DOUBLE_GRAD_OP(name)
#define PD_KERNEL(...) OAR_KERNEL(__VA_ARGS__)
#define PD_INFER_SHAPE(...) OAR_INFER_SHAPE(__VA_ARGS__)
#define PD_INFER_DTYPE(...) OAR_INFER_DTYPE(__VA_ARGS__)
#define PD_CHECK(...) OAR_CHECK(__VA_ARGS__)
#define PD_THROW(...) OAR_THROW(__VA_ARGS__)
#define PD_DISPATCH_FLOATING_TYPES(...) OAR_DISPATCH_FLOATING_TYPES(__VA_ARGS__)
#define PD_DISPATCH_FLOATING_AND_HALF_TYPES(...) OAR_DISPATCH_FLOATING_AND_HALF_TYPES(__VA_ARGS__)
#define PD_DISPATCH_INTEGRAL_TYPES(...) OAR_DISPATCH_INTEGRAL_TYPES(__VA_ARGS__)
#define PD_DISPATCH_COMPLEX_TYPES(...) OAR_DISPATCH_COMPLEX_TYPES(__VA_ARGS__)
#define PD_DISPATCH_FLOATING_AND_INTEGRAL_TYPES(...) OAR_DISPATCH_FLOATING_AND_INTEGRAL_TYPES(__VA_ARGS__)
#define PD_DISPATCH_FLOATING_AND_COMPLEX_TYPES(...) OAR_DISPATCH_FLOATING_AND_COMPLEX_TYPES(__VA_ARGS__)
#define PD_DISPATCH_FLOATING_AND_HALF_AND_INTEGRAL_TYPES(...) \
  OAR_DISPATCH_FLOATING_AND_HALF_AND_INTEGRAL_TYPES(__VA_ARGS__)
