// Custom op libraries that are wrong in one way each (BAD_KIND picks which; 7 is a good one at the edge of
// the version window), for the loader.
#if BAD_KIND == 1 || BAD_KIND == 6 || BAD_KIND == 7
#define oar_custom_op_init oar_custom_op_init_replaced  // this file defines its own entry point below
#endif
#include <oar/extension.h>

#include <vector>

namespace {
std::vector<oar::Tensor> Same(const oar::Tensor& x) { return {x.copy_to(x.place())}; }
}  // namespace

#if BAD_KIND == 7  // not bad: a newer minor inside the window is accepted (and its op works)
OAR_BUILD_OP(custom_newer_minor).Inputs({"X"}).Outputs({"Out"}).SetKernelFn(OAR_KERNEL(Same));
#undef oar_custom_op_init
extern "C" __attribute__((visibility("default"))) OarError* oar_custom_op_init(
    const OarCustomOpServices* services, OarCustomOpRegistrar* registrar, uint32_t* major, uint32_t* minor) {
  *major = OAR_CUSTOM_OP_ABI_MAJOR;
  *minor = OAR_CUSTOM_OP_ABI_MINOR + OAR_CUSTOM_OP_ABI_MINOR_WINDOW;
  return ::oar::detail::register_all(services, registrar);
}
#elif BAD_KIND == 1 || BAD_KIND == 6
#undef oar_custom_op_init
extern "C" __attribute__((visibility("default"))) OarError* oar_custom_op_init(
    const OarCustomOpServices* services, OarCustomOpRegistrar*, uint32_t* major, uint32_t* minor) {
  *major = OAR_CUSTOM_OP_ABI_MAJOR;
  *minor = OAR_CUSTOM_OP_ABI_MINOR;
#if BAD_KIND == 1  // built for a newer ABI major
  *major = OAR_CUSTOM_OP_ABI_MAJOR + 1;
  return nullptr;
#else              // init fails with the library's own message
  return services->error_new(OAR_ERR_UNAVAILABLE, 0, "vendor library libfoo.so.3 not found");
#endif
}
#elif BAD_KIND == 2  // an op named like a built-in op
OAR_BUILD_OP(relu).Inputs({"X"}).Outputs({"Out"}).SetKernelFn(OAR_KERNEL(Same));
#elif BAD_KIND == 3  // an op named like the one in libcustom_paddle_relu.so
OAR_BUILD_OP(custom_relu).Inputs({"X"}).Outputs({"Out"}).SetKernelFn(OAR_KERNEL(Same));
#elif BAD_KIND == 4  // an attribute type the ABI does not know
OAR_BUILD_OP(custom_bad_attr)
    .Inputs({"X"})
    .Outputs({"Out"})
    .Attrs({"k: long double"})
    .SetKernelFn(OAR_KERNEL(Same));
#elif BAD_KIND == 8  // a forward op with a vector output (unsupported)
OAR_BUILD_OP(custom_vec_out).Inputs({"X"}).Outputs({oar::Vec("Out")}).SetKernelFn(OAR_KERNEL(Same));
#elif BAD_KIND == 5  // a grad op whose input is neither a forward tensor nor a gradient
OAR_BUILD_OP(custom_bad_grad).Inputs({"X"}).Outputs({"Out"}).SetKernelFn(OAR_KERNEL(Same));
OAR_BUILD_GRAD_OP(custom_bad_grad).Inputs({"Z"}).Outputs({oar::Grad("X")}).SetKernelFn(OAR_KERNEL(Same));
#endif
