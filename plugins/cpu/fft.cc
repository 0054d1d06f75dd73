// CPU kernels of the FFT ops (framework/src/ops_fft.cc defines them) on FFTW 3, opened at run time
// (libfftw3.so.3 for double, libfftw3f.so.3 for float) rather than linked: the plugin stays free of a
// GPL link and of a build dependency, and a machine without FFTW fails only when a transform runs, with
// a message saying what to install (docs/decisions.md). FFTW's guru64 interface takes any axes with
// any strides plus any number of batch ("howmany") dims, so every transform is one plan.
// Planning is not thread-safe in FFTW (a global mutex guards it); executing a plan is. Plans use
// FFTW_ESTIMATE, which never touches the arrays while planning, and are made per call.
#include <dlfcn.h>

#include <complex>
#include <mutex>
#include <type_traits>

#include "elementwise.h"

namespace oar_cpu {
namespace {

// ---- the subset of FFTW's API we use (fftw3.h's types, declared here: no build dependency) ----------
struct IoDim {  // fftw_iodim64
  ptrdiff_t n, is, os;
};
using Plan = void*;
constexpr int kFftwForward = -1, kFftwBackward = +1;
constexpr unsigned kFftwEstimate = 1U << 6, kFftwDestroyInput = 1U << 0;

template <class T>
struct Fftw {
  using C = T[2];
  Plan (*plan_dft)(int, const IoDim*, int, const IoDim*, C*, C*, int, unsigned) = nullptr;
  Plan (*plan_r2c)(int, const IoDim*, int, const IoDim*, T*, C*, unsigned) = nullptr;
  Plan (*plan_c2r)(int, const IoDim*, int, const IoDim*, C*, T*, unsigned) = nullptr;
  void (*execute)(const Plan) = nullptr;
  void (*destroy)(Plan) = nullptr;
};

template <class T>
Fftw<T> load_fftw() {
  constexpr bool dbl = std::is_same_v<T, double>;
  const char* lib = dbl ? "libfftw3.so.3" : "libfftw3f.so.3";
  const char* pre = dbl ? "fftw_" : "fftwf_";
  void* h = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
  OAR_SDK_CHECK(h, OAR_ERR_UNAVAILABLE,
                "fft: cannot load FFTW (" << lib << "): " << dlerror()
                                          << "; install it (Debian/Ubuntu: apt-get install libfftw3-double3 "
                                             "libfftw3-single3)");
  Fftw<T> f;
  auto get = [&](auto& fn, const char* name) {
    const std::string full = std::string(pre) + name;
    fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(dlsym(h, full.c_str()));
    OAR_SDK_CHECK(fn, OAR_ERR_UNAVAILABLE, "fft: " << lib << " has no symbol " << full);
  };
  get(f.plan_dft, "plan_guru64_dft");
  get(f.plan_r2c, "plan_guru64_dft_r2c");
  get(f.plan_c2r, "plan_guru64_dft_c2r");
  get(f.execute, "execute");
  get(f.destroy, "destroy_plan");
  return f;  // the handle stays open for the life of the process
}

template <class T>
const Fftw<T>& fftw() {
  static const Fftw<T> f = load_fftw<T>();
  return f;
}

std::mutex& planner_mutex() {
  static std::mutex mu;
  return mu;
}

// Makes a plan under the planner lock, runs it, destroys it.
template <class T, class MakePlan>
void run_plan(const char* op, MakePlan make) {
  const Fftw<T>& f = fftw<T>();
  Plan p;
  {
    std::lock_guard<std::mutex> lock(planner_mutex());
    p = make(f);
  }
  OAR_SDK_CHECK(p, OAR_ERR_INTERNAL, op << ": FFTW could not plan the transform");
  f.execute(p);
  std::lock_guard<std::mutex> lock(planner_mutex());
  f.destroy(p);
}

std::vector<int64_t> contiguous_strides(const std::vector<int64_t>& shape) {
  std::vector<int64_t> s(shape.size());
  int64_t acc = 1;
  for (size_t i = shape.size(); i-- > 0;) {
    s[i] = acc;
    acc *= std::max<int64_t>(shape[i], 1);
  }
  return s;
}

// The transform dims (in `axes` order, sizes from `logical`) and the batch dims (every other axis),
// with input and output strides in elements.
struct Layout {
  std::vector<IoDim> dims, batch;
};
Layout layout(const std::vector<int64_t>& axes, const std::vector<int64_t>& logical,
              const std::vector<int64_t>& in_shape, const std::vector<int64_t>& in_strides,
              const std::vector<int64_t>& out_strides) {
  Layout l;
  std::vector<bool> is_axis(in_shape.size(), false);
  for (int64_t a : axes) {
    is_axis[a] = true;
    l.dims.push_back({static_cast<ptrdiff_t>(logical[a]), static_cast<ptrdiff_t>(in_strides[a]),
                      static_cast<ptrdiff_t>(out_strides[a])});
  }
  for (size_t d = 0; d < in_shape.size(); ++d)
    if (!is_axis[d])
      l.batch.push_back({static_cast<ptrdiff_t>(in_shape[d]), static_cast<ptrdiff_t>(in_strides[d]),
                         static_cast<ptrdiff_t>(out_strides[d])});
  return l;
}

// The scale `normalization` asks for, n the product of the transformed (logical) sizes.
double norm_scale(const std::string& norm, bool forward, double n, const char* op) {
  if (norm == "ortho") return 1.0 / std::sqrt(n);
  if (norm == "backward") return forward ? 1.0 : 1.0 / n;
  if (norm == "forward") return forward ? 1.0 / n : 1.0;
  OAR_SDK_CHECK(false, OAR_ERR_INVALID_ARGUMENT, op << ": unknown normalization '" << norm << "'");
  return 1.0;
}

// Serial on purpose: a memory-bound pass after the transform, cheaper than waking a thread team
// (measured: a parallel_for here cost 15 ms per call for 64K elements on the loaded 2-core machine).
template <class T>
void scale_and_conj(std::complex<T>* p, int64_t count, double scale, bool conj) {
  const T s = static_cast<T>(scale);
  if (scale == 1.0 && !conj) return;
  for (int64_t i = 0; i < count; ++i) p[i] = conj ? std::conj(p[i]) * s : p[i] * s;
}

template <class T>
auto* cplx(std::complex<T>* p) {
  return reinterpret_cast<typename Fftw<T>::C*>(p);
}

struct FftAttrs {
  std::vector<int64_t> axes;
  std::string norm;
  bool forward;
};
FftAttrs read_attrs(KernelContext& ctx) {
  return {ctx.attr_ints("axes"), ctx.attr_string("normalization"), ctx.attr_int("forward") != 0};
}

// ---- fft_c2c -------------------------------------------------------------------------------------
template <class T>
void c2c(KernelContext& ctx) {
  TensorView x = ctx.input(0), out = ctx.output(0);
  const FftAttrs a = read_attrs(ctx);
  if (out.numel() == 0) return;
  const std::vector<int64_t> shape = x.shape(), st = contiguous_strides(shape);
  const Layout l = layout(a.axes, shape, shape, st, st);
  auto* in = const_cast<std::complex<T>*>(x.data<std::complex<T>>());  // out-of-place c2c keeps it
  std::complex<T>* o = out.data<std::complex<T>>();
  run_plan<T>("fft_c2c", [&](const Fftw<T>& f) {
    return f.plan_dft(static_cast<int>(l.dims.size()), l.dims.data(), static_cast<int>(l.batch.size()),
                      l.batch.data(), cplx(in), cplx(o), a.forward ? kFftwForward : kFftwBackward,
                      kFftwEstimate);
  });
  double n = 1;
  for (int64_t ax : a.axes) n *= static_cast<double>(shape[ax]);
  scale_and_conj(o, out.numel(), norm_scale(a.norm, a.forward, n, "fft_c2c"), false);
}

// ---- fft_r2c -------------------------------------------------------------------------------------
// FFTW's r2c has sign -1; the inverse direction (ihfft) is its conjugate, x being real. The full
// (not one-sided) output is completed by Hermitian symmetry: X[k] = conj(X[(n - k) mod n]) over every
// transformed axis.
template <class T>
void r2c(KernelContext& ctx) {
  TensorView x = ctx.input(0), out = ctx.output(0);
  const FftAttrs a = read_attrs(ctx);
  if (out.numel() == 0) return;
  const std::vector<int64_t> in_shape = x.shape(), out_shape = out.shape();
  const std::vector<int64_t> in_st = contiguous_strides(in_shape), out_st = contiguous_strides(out_shape);
  const Layout l = layout(a.axes, in_shape, in_shape, in_st, out_st);
  T* in = const_cast<T*>(x.data<T>());  // out-of-place r2c keeps its input
  std::complex<T>* o = out.data<std::complex<T>>();
  run_plan<T>("fft_r2c", [&](const Fftw<T>& f) {
    return f.plan_r2c(static_cast<int>(l.dims.size()), l.dims.data(), static_cast<int>(l.batch.size()),
                      l.batch.data(), in, cplx(o), kFftwEstimate);
  });
  const int64_t last = a.axes.back(), n_last = in_shape[last], half = n_last / 2 + 1;
  if (out_shape[last] > half) {  // not one-sided: mirror the missing bins
    const int64_t total = out.numel(), nd = static_cast<int64_t>(out_shape.size());
    std::vector<bool> is_axis(nd, false);
    for (int64_t ax : a.axes) is_axis[ax] = true;
    oar::sdk::parallel_for(0, total, 1 << 16, [&](int64_t lo, int64_t hi) {
      std::vector<int64_t> idx(nd);
      for (int64_t i = lo; i < hi; ++i) {
        int64_t rem = i;
        for (int64_t d = nd - 1; d >= 0; --d) idx[d] = rem % out_shape[d], rem /= out_shape[d];
        if (idx[last] < half) continue;
        int64_t src = 0;
        for (int64_t d = 0; d < nd; ++d) {
          const int64_t j = is_axis[d] ? (out_shape[d] - idx[d]) % out_shape[d] : idx[d];
          src += j * out_st[d];
        }
        o[i] = std::conj(o[src]);  // src has a last index <= n/2: written by FFTW, never by this loop
      }
    });
  }
  double n = 1;
  for (int64_t ax : a.axes) n *= static_cast<double>(in_shape[ax]);
  scale_and_conj(o, out.numel(), norm_scale(a.norm, a.forward, n, "fft_r2c"), !a.forward);
}

// ---- fft_c2r -------------------------------------------------------------------------------------
// out = Re(sum over the Hermitian extension), computed as numpy's irfftn does: a c2c over every axis but
// the last into a scratch copy, then a 1-D c2r along the last axis, which reads only the real parts of
// bin 0 and (n even) bin n/2. The forward direction (hfft) conjugates the input first.
template <class T>
void c2r(KernelContext& ctx) {
  TensorView x = ctx.input(0), out = ctx.output(0);
  const FftAttrs a = read_attrs(ctx);
  if (out.numel() == 0) return;
  const std::vector<int64_t> in_shape = x.shape(), out_shape = out.shape();
  const std::vector<int64_t> in_st = contiguous_strides(in_shape), out_st = contiguous_strides(out_shape);
  const int64_t count = x.numel(), last = a.axes.back(), n_last = out_shape[last];
  std::vector<std::complex<T>> buf(x.data<std::complex<T>>(), x.data<std::complex<T>>() + count);
  if (a.forward)
    for (auto& v : buf) v = std::conj(v);
  if (a.axes.size() > 1) {
    std::vector<int64_t> rest(a.axes.begin(), a.axes.end() - 1);
    const Layout l = layout(rest, in_shape, in_shape, in_st, in_st);
    run_plan<T>("fft_c2r", [&](const Fftw<T>& f) {
      return f.plan_dft(static_cast<int>(l.dims.size()), l.dims.data(), static_cast<int>(l.batch.size()),
                        l.batch.data(), cplx(buf.data()), cplx(buf.data()), kFftwBackward, kFftwEstimate);
    });
  }
  // Bins 0 and n/2 of a Hermitian signal are real: drop their imaginary parts explicitly.
  const int64_t m = in_shape[last], outer = count / (m * in_st[last]), inner = in_st[last];
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t i = 0; i < inner; ++i) {
      std::complex<T>* row = buf.data() + o * m * inner + i;
      row[0].imag(0);
      if (n_last % 2 == 0) row[(m - 1) * inner].imag(0);
    }
  std::vector<int64_t> logical = in_shape;
  logical[last] = n_last;
  const Layout l = layout({last}, logical, in_shape, in_st, out_st);
  T* o = out.data<T>();
  run_plan<T>("fft_c2r", [&](const Fftw<T>& f) {
    return f.plan_c2r(1, l.dims.data(), static_cast<int>(l.batch.size()), l.batch.data(), cplx(buf.data()), o,
                      kFftwEstimate | kFftwDestroyInput);
  });
  double n = 1;
  for (int64_t ax : a.axes) n *= static_cast<double>(out_shape[ax]);
  const T s = static_cast<T>(norm_scale(a.norm, a.forward, n, "fft_c2r"));
  if (s != T(1))
    for (int64_t i = 0, n_out = out.numel(); i < n_out; ++i) o[i] *= s;
}

template <template <class> class Fn>
void by_precision(KernelContext& ctx) {
  const int32_t d = ctx.input(0).dtype();
  if (d == OAR_DTYPE_FLOAT64 || d == OAR_DTYPE_COMPLEX128)
    Fn<double>::run(ctx);
  else
    Fn<float>::run(ctx);
}
template <class T>
struct C2C {
  static void run(KernelContext& c) { c2c<T>(c); }
};
template <class T>
struct R2C {
  static void run(KernelContext& c) { r2c<T>(c); }
};
template <class T>
struct C2R {
  static void run(KernelContext& c) { c2r<T>(c); }
};

}  // namespace

void register_fft_kernels(Registry& r) {
  const std::vector<OarDType> cplx_types = {OAR_DTYPE_COMPLEX64, OAR_DTYPE_COMPLEX128};
  r.add("fft_c2c", cplx_types, &by_precision<C2C>);
  r.add("fft_r2c", {OAR_DTYPE_FLOAT32, OAR_DTYPE_FLOAT64}, &by_precision<R2C>);
  r.add("fft_c2r", cplx_types, &by_precision<C2R>);
}

}  // namespace oar_cpu
