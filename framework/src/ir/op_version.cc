// The op versions oar implements for the Paddle op types it maps. A version here is the newest
// PaddlePaddle op definition (its REGISTER_OP_VERSION checkpoint count) whose semantics oar's mapping
// follows; ops Paddle never versioned are 0. Older versions are accepted: the mapping handles them.
#include <oar/core/error.h>
#include <oar/ir/op_version.h>
#include <oar/ir/program.h>

#include <set>
#include <string_view>
#include <unordered_map>

namespace oar::ir {

const std::vector<std::pair<std::string, int32_t>>& supported_op_versions() {
  static const std::vector<std::pair<std::string, int32_t>> kVersions = {
      {"feed", 0},
      {"fetch", 0},
      {"elementwise_add", 1},
      {"elementwise_sub", 1},
      {"elementwise_mul", 1},
      {"elementwise_div", 1},
      {"elementwise_pow", 1},
      {"matmul", 1},
      {"matmul_v2", 0},
      {"mul", 0},
      {"relu", 0},
      {"sigmoid", 0},
      {"tanh", 0},
      {"leaky_relu", 1},
      {"softplus", 1},
      {"softmax", 0},
      {"conv2d", 1},
      {"depthwise_conv2d", 1},
      {"conv2d_transpose", 2},
      {"pool2d", 0},
      {"max_pool2d_with_index", 1},
      {"batch_norm", 0},
      {"layer_norm", 0},
      {"scale", 0},
      {"reshape2", 0},
      {"transpose2", 0},
      {"flatten_contiguous_range", 0},
      {"concat", 0},
      {"dropout", 0},
      {"fill_constant", 2},
      {"shape", 0},
      {"rnn", 0},  // Paddle 3.3 records no version for it
      {"lookup_table", 1},
      {"lookup_table_v2", 1},
      {"clip", 1},
      {"gather", 1},
      {"cumsum", 1},
      {"cumprod", 1},
      {"flip", 1},
      {"roll", 2},
      {"equal", 1},
      {"not_equal", 1},
      {"less_than", 1},
      {"less_equal", 1},
      {"greater_than", 1},
      {"greater_equal", 1},
      // Emitted by export_paddle_dialect (paddle_export.cc); versions as in PaddlePaddle 3.3.
      {"elementwise_max", 0},
      {"elementwise_min", 0},
      {"elementwise_floordiv", 0},
      {"elementwise_mod", 0},
      {"logical_and", 0},
      {"logical_or", 0},
      {"logical_xor", 0},
      {"logical_not", 0},
      {"exp", 0},
      {"log", 0},
      {"sqrt", 0},
      {"rsqrt", 0},
      {"abs", 0},
      {"square", 0},
      {"sin", 0},
      {"cos", 0},
      {"tan", 0},
      {"asin", 0},
      {"acos", 0},
      {"atan", 0},
      {"sinh", 0},
      {"cosh", 0},
      {"asinh", 0},
      {"acosh", 0},
      {"atanh", 0},
      {"floor", 0},
      {"ceil", 0},
      {"reciprocal", 0},
      {"erf", 0},
      {"erfinv", 0},
      {"log1p", 0},
      {"expm1", 0},
      {"log2", 0},
      {"log10", 0},
      {"sign", 0},
      {"silu", 0},
      {"lgamma", 0},
      {"digamma", 0},
      {"trunc", 0},
      {"gelu", 0},
      {"elu", 0},
      {"hard_swish", 0},
      {"hard_sigmoid", 0},
      {"log_softmax", 0},
      {"assign", 0},
      {"cast", 0},
      {"eye", 0},
      {"reduce_sum", 0},
      {"reduce_mean", 0},
      {"reduce_max", 0},
      {"reduce_min", 0},
      {"reduce_prod", 0},
      {"reduce_all", 0},
      {"reduce_any", 0},
      {"arg_max", 0},
      {"arg_min", 0},
      {"index_select", 0},
      {"where", 0},
      {"gather_nd", 0},
      {"tril_triu", 0},
      {"top_k_v2", 0},
      {"argsort", 1},
      {"pad", 0},
      {"conv3d", 1},
      {"squeeze2", 0},
      {"unsqueeze2", 0},
      {"slice", 0},
      {"strided_slice", 0},
      {"expand_v2", 0},
      {"expand_as_v2", 0},
      {"elementwise_fmax", 0},
      {"elementwise_fmin", 0},
      {"elementwise_heaviside", 0},
      {"bitwise_and", 0},
      {"bitwise_or", 0},
      {"bitwise_xor", 0},
      {"bitwise_not", 0},
      {"atan2", 0},
      {"isnan_v2", 0},
      {"isinf_v2", 0},
      {"isfinite_v2", 0},
      {"logcumsumexp", 0},
      {"take_along_axis", 0},
      {"put_along_axis", 0},
      {"scatter_nd_add", 0},
      {"index_add", 0},
      {"inverse", 0},
      {"determinant", 0},
      {"cholesky", 0},
      {"solve", 0},
      {"triangular_solve", 0},
      {"qr", 0},
      {"svd", 0},
      {"eigh", 0},
      {"polygamma", 0},
      {"unfold", 0},
      {"fold", 0},
      {"grid_sampler", 1},
      {"range", 0},
      {"linspace", 1},
      {"softmax_with_cross_entropy", 0},
      {"pad3d", 0},
      {"pool3d", 0},
      {"nearest_interp_v2", 0},
      {"linear_interp_v2", 0},
      {"bilinear_interp_v2", 0},
      {"trilinear_interp_v2", 0},
      {"bicubic_interp_v2", 0},
      {"slogdeterminant", 0},
  };
  return kVersions;
}

std::optional<int32_t> supported_op_version(const std::string& op_type) {
  for (auto& [name, v] : supported_op_versions())
    if (name == op_type) return v;
  return std::nullopt;
}

void check_op_versions(const Program& program, bool require_known_ops) {
  // Hash lookups: a hostile program may list millions of op types and version entries.
  std::unordered_map<std::string_view, int32_t> recorded;
  for (auto& [name, v] : program.op_version_map()) recorded.emplace(name, v);
  std::set<std::string> used;
  for (int32_t bi = 0; bi < program.num_blocks(); ++bi)
    for (const OpDesc& op : program.block(bi).ops()) used.insert(op.type);
  for (const std::string& type : used) {
    auto ours = supported_op_version(type);
    if (!ours) {
      OAR_ENFORCE(!require_known_ops, ErrorCode::kUnimplemented,
                  type << ": oar does not implement this PaddlePaddle op type");
      continue;
    }
    auto it = recorded.find(type);
    int32_t needed = it == recorded.end() ? 0 : it->second;
    OAR_ENFORCE(needed <= *ours, ErrorCode::kUnimplemented,
                type << ": the model needs version " << needed << " of this op, oar implements version "
                     << *ours << " (the model was saved by a newer PaddlePaddle)");
  }
}

void fill_op_version_map(Program* program) {
  program->set_op_version_map(supported_op_versions());
  program->set_has_op_version_map(true);
}

}  // namespace oar::ir
