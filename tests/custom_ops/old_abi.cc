// Built with -D_GLIBCXX_USE_CXX11_ABI=0 (the pre-C++11 std::string of old toolchains): only C crosses
// into the core, so it loads and runs next to a core built with the new ABI. The std::string attribute
// is the part that would break if a C++ type crossed the boundary.
#include <oar/extension.h>

#include <string>
#include <vector>

#if _GLIBCXX_USE_CXX11_ABI != 0
#error "this library must be built with -D_GLIBCXX_USE_CXX11_ABI=0"
#endif

namespace {
// out = x + len(tag) (CPU), the tag's length counted by the old std::string.
std::vector<oar::Tensor> AddLen(const oar::Tensor& x, const std::string& tag) {
  oar::Tensor h = x.is_cpu() ? x : x.copy_to(oar::CPUPlace());
  oar::Tensor out = oar::empty(h.shape(), h.dtype(), h.place());
  OAR_DISPATCH_FLOATING_TYPES(h.dtype(), "custom_old_abi", ([&] {
                                const data_t* a = h.data<data_t>();
                                data_t* o = out.data<data_t>();
                                for (int64_t i = 0; i < h.numel(); ++i)
                                  o[i] = a[i] + static_cast<data_t>(tag.size());
                              }));
  return {x.is_cpu() ? out : out.copy_to(x.place())};
}
}  // namespace

OAR_BUILD_OP(custom_old_abi)
    .Inputs({"X"})
    .Outputs({"Out"})
    .Attrs({"tag: std::string"})
    .SetKernelFn(OAR_KERNEL(AddLen));
