// Data movement, any strides: cast (every real dtype and bool to every dtype), copy, assign (writes
// into its first input) and where. Semantics are plugins/cpu's (cast.cc, misc.cc): cast converts as
// pointwise.h convert(); the others move elements bit for bit (NaN payloads kept), so they also cover
// complex dtypes.
#include "pointwise.h"

namespace oar_cuda {
namespace {

template <typename To, typename From>
struct CastOp {
  OAR_D To operator()(From v) const { return convert<To, From>(v); }
};
template <typename B>
struct IdentityOp {
  OAR_D B operator()(B v) const { return v; }
};
template <typename B>
struct SelectOp {
  OAR_D B operator()(bool c, B a, B b) const { return c ? a : b; }
};

void copy_bits(sdk::KernelContext& c, const char* name, const sdk::TensorView& out,
               const sdk::TensorView& x) {
  dispatch_bits(x.dtype(), name, [&](auto tag) {
    using B = typename decltype(tag)::type;
    elementwise<B, B>(name, stream_of(c), c.device(), out, {x}, IdentityOp<B>{});
  });
}

void cast_kernel(sdk::KernelContext& c) {
  const sdk::TensorView x = c.input(0), out = c.output(0);
  // The output's dtype is the `dtype` attribute; the core allocated it, so it is the one to trust.
  if (x.dtype() == out.dtype()) return copy_bits(c, "cast", out, x);
  dispatch_all(x.dtype(), "cast", [&](auto from_tag) {
    using From = typename decltype(from_tag)::type;
    dispatch_any(out.dtype(), "cast", [&](auto to_tag) {
      using To = typename decltype(to_tag)::type;
      if constexpr (!std::is_same_v<To, From>) unary<To, From>(c, "cast", CastOp<To, From>{});
    });
  });
}

void copy_kernel(sdk::KernelContext& c) { copy_bits(c, "copy", c.output(0), c.input(0)); }

// assign(dst, src): src (broadcast) written through dst's own strides; dst is an input by design
// (docs/ops.md, "In-place"), and the core has already separated src when it overlaps dst.
void assign_kernel(sdk::KernelContext& c) { copy_bits(c, "assign", c.input(0), c.input(1)); }

void where_kernel(sdk::KernelContext& c) {
  dispatch_bits(c.input(1).dtype(), "where", [&](auto tag) {
    using B = typename decltype(tag)::type;
    elementwise<B, bool, B, B>("where", stream_of(c), c.device(), c.output(0),
                               {c.input(0), c.input(1), c.input(2)}, SelectOp<B>{});
  });
}

}  // namespace

void register_cast(Registry& r) {
  // cast dispatches on x: complex x (to a real dtype it drops the imaginary part) stays on the CPU.
  r.add("cast", gpu_all_dtypes(), &cast_kernel, kStrided);
  r.add("copy", every_dtype(), &copy_kernel, kStrided);
  r.add("assign", every_dtype(), &assign_kernel, kStrided);
  r.add("where", every_dtype(), &where_kernel, kStrided);
}

}  // namespace oar_cuda
