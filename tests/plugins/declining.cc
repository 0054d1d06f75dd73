// A plugin whose kernels decline some calls (ABI 1.2), for tests/unit/test_decline.cc and
// tests/python/test_decline.py. Built with the SDK's table helper (oar/sdk/tables.h).
//  - add (float32, float64): its supports query declines float64 and any call with more than 64 output
//    elements; the kernel itself declines a call whose x is not contiguous (it sees strides: it is
//    registered with OAR_KERNEL_STRIDED_INPUTS). The kernel fails loudly if the core calls it for a call
//    its query declined.
//  - multiply (float32): an ordinary kernel; every call runs here.
// Each kernel counts its calls; "subtract" (float32) writes those counts into its output, so a test can
// see which calls reached the device.
#include <atomic>

#include "test_plugin_common.h"

namespace {

std::atomic<int64_t> g_add_calls{0}, g_multiply_calls{0};

constexpr int64_t kMaxAddElements = 64;

void add_supports(oar::sdk::KernelContext& ctx) {
  const oar::sdk::TensorView out = ctx.output(0);
  if (out.dtype() == OAR_DTYPE_FLOAT64) oar::sdk::decline("declining: add has no float64 units");
  // A 1.2 core asks the query with the data hidden (an older one has no query: the SDK asks it itself).
  OAR_SDK_CHECK(!oar::sdk::services().register_kernel_ex || ctx.input(0).desc()->data == nullptr,
                OAR_ERR_INTERNAL, "declining: the supports query was handed tensor data");
  if (out.numel() > kMaxAddElements)
    oar::sdk::decline("declining: add takes at most " + std::to_string(kMaxAddElements) + " elements, got " +
                      std::to_string(out.numel()));
}

void add_kernel(oar::sdk::KernelContext& ctx) {
  OAR_SDK_CHECK(ctx.output(0).numel() <= kMaxAddElements && ctx.output(0).dtype() == OAR_DTYPE_FLOAT32,
                OAR_ERR_INTERNAL, "declining: add was called for a call its supports query declined");
  if (!ctx.input(0).is_contiguous()) oar::sdk::decline("declining: add reads only contiguous x");
  ++g_add_calls;
  oar_test_plugin::add_f32(ctx);
}

void multiply_kernel(oar::sdk::KernelContext& ctx) {
  ++g_multiply_calls;
  oar::sdk::binary_loop<float, float, float>(ctx.output(0), ctx.input(0), ctx.input(1),
                                             [](float a, float b) { return a * b; });
}

// out[0] = add calls, out[1] = multiply calls (the output must have at least 2 elements).
void counts_kernel(oar::sdk::KernelContext& ctx) {
  float* out = ctx.output(0).data<float>();
  OAR_SDK_CHECK(ctx.output(0).numel() >= 2, OAR_ERR_INVALID_ARGUMENT, "declining: counts needs 2 elements");
  out[0] = static_cast<float>(g_add_calls.load());
  out[1] = static_cast<float>(g_multiply_calls.load());
  for (int64_t i = 2; i < ctx.output(0).numel(); ++i) out[i] = 0;
}

void setup(oar::sdk::Tables& t, oar::sdk::KernelRegistrar& kernels) {
  oar_test_plugin::device_name() = "test_declining test device";
  t.device = oar_test_plugin::device_table();
  t.memory = oar_test_plugin::memory_table();
  kernels.add("add", {OAR_DTYPE_FLOAT32, OAR_DTYPE_FLOAT64}, add_kernel, add_supports,
              OAR_KERNEL_STRIDED_INPUTS);
  kernels.add("multiply", {OAR_DTYPE_FLOAT32}, multiply_kernel, OAR_KERNEL_STRIDED_INPUTS);
  kernels.add("subtract", {OAR_DTYPE_FLOAT32}, counts_kernel);
}

const oar::sdk::PluginDescription kPlugin{"declining", "test_declining", "0.0.1-test", nullptr, 1};

}  // namespace

OAR_SDK_PLUGIN(kPlugin, setup)
