// The sim kernels: a deliberate subset (add, multiply, relu, sum, matmul) so that the core's CPU
// fallback is exercised for everything else. A kernel never computes inline: it copies what it needs
// out of the descriptors (valid only during the call), validates the device addresses, and enqueues a
// task on the context's stream that translates them and runs the loop from oar/sdk/iter.h.
#include <oar/sdk/iter.h>
#include <oar/sdk/kernel.h>

#include <array>
#include <cmath>
#include <type_traits>

#include "sim_state.h"

namespace oar::sim {
namespace {

using sdk::KernelContext;
using sdk::TensorView;

// A tensor descriptor copied out of the core's context; bind() turns it into a host view.
struct TensorArg {
  OarTensorDesc desc{};
  int64_t dims[sdk::kMaxDims] = {};
  int64_t strides[sdk::kMaxDims] = {};
  int64_t numel = 1;

  TensorView bind() {
    desc.struct_size = sizeof(desc);
    desc.dims = dims;
    desc.strides = strides;
    if (desc.data && is_tagged(desc.data)) desc.data = untag(desc.data);
    return TensorView(&desc);
  }
  bool contiguous() const {
    int64_t expect = 1;
    for (int32_t i = desc.ndim - 1; i >= 0; --i) {
      if (dims[i] != 1 && strides[i] != expect) return false;
      expect *= dims[i];
    }
    return true;
  }
};

void capture(TensorArg& t, const OarTensorDesc* d, int32_t device, const char* op, const char* role) {
  OAR_SDK_CHECK(d, OAR_ERR_INVALID_ARGUMENT, op << ": " << role << " is missing");
  OAR_SDK_CHECK(
      d->ndim >= 0 && d->ndim <= sdk::kMaxDims, OAR_ERR_INVALID_ARGUMENT,
      op << ": " << role << " has rank " << d->ndim << " (sim supports up to " << sdk::kMaxDims << ")");
  const int64_t es = sdk::dtype_size(d->dtype);
  OAR_SDK_CHECK(es > 0, OAR_ERR_TYPE, op << ": " << role << " has unknown dtype " << d->dtype);
  t.desc.struct_size = sizeof(t.desc);
  t.desc.data = d->data;
  t.desc.dtype = d->dtype;
  t.desc.ndim = d->ndim;
  t.desc.offset = d->offset;
  t.desc.device = d->device;
  t.desc.layout = d->layout;
  t.numel = 1;
  int64_t lo = d->offset, hi = d->offset;
  for (int32_t i = 0; i < d->ndim; ++i) {
    t.dims[i] = d->dims[i];
    t.strides[i] = d->strides[i];
    OAR_SDK_CHECK(t.dims[i] >= 0, OAR_ERR_INVALID_ARGUMENT,
                  op << ": " << role << " has negative dimension " << t.dims[i]);
    t.numel *= t.dims[i];
    if (t.dims[i] > 0) {
      const int64_t span = t.strides[i] * (t.dims[i] - 1);
      (span < 0 ? lo : hi) += span;
    }
  }
  OAR_SDK_CHECK(d->layout == OAR_LAYOUT_STRIDED, OAR_ERR_INVALID_ARGUMENT,
                op << ": " << role << " has unsupported layout " << d->layout);
  OAR_SDK_CHECK(d->device == device, OAR_ERR_INVALID_ARGUMENT,
                op << ": " << role << " is on sim device " << d->device << ", the kernel runs on " << device);
  if (t.numel == 0) return;  // nothing is read or written
  OAR_SDK_CHECK(lo >= 0, OAR_ERR_INVALID_ARGUMENT,
                op << ": " << role << " reaches before its storage (element offset " << lo << ")");
  const void* first = static_cast<const char*>(d->data) + lo * es;
  std::string what = std::string(op) + " " + role;
  device_to_host(first, static_cast<uint64_t>((hi - lo + 1) * es), device, what.c_str());
}

const OarTensorDesc* input_desc(const KernelContext& ctx, int32_t i, const char* op) {
  OAR_SDK_CHECK(ctx.num_inputs() > i, OAR_ERR_INVALID_ARGUMENT,
                op << ": expected at least " << (i + 1) << " inputs, got " << ctx.num_inputs());
  return sdk::kernel_api().input(ctx.raw(), i);
}

void check_dtype(const char* op, int32_t dtype, std::initializer_list<OarDType> allowed) {
  for (OarDType d : allowed)
    if (d == dtype) return;
  throw sdk::Error(OAR_ERR_TYPE,
                   std::string(op) + ": the sim kernel does not handle dtype " + sdk::dtype_name(dtype));
}

// Calls fn(T{}) for the four dtypes the sim kernels cover.
template <typename Fn>
void dispatch(int32_t dtype, const char* op, Fn&& fn) {
  // clang-format off
  switch (dtype) {
    case OAR_DTYPE_FLOAT32: return fn(float{});
    case OAR_DTYPE_FLOAT64: return fn(double{});
    case OAR_DTYPE_INT32: return fn(int32_t{});
    case OAR_DTYPE_INT64: return fn(int64_t{});
    default: throw sdk::Error(OAR_ERR_TYPE, std::string(op) + ": unsupported dtype " + sdk::dtype_name(dtype));
  }
  // clang-format on
}

void check_output(const TensorArg& out, const char* op) {
  OAR_SDK_CHECK(out.contiguous(), OAR_ERR_INVALID_ARGUMENT,
                op << ": the output must be contiguous (docs/ops.md)");
}

// ---- elementwise -------------------------------------------------------------------------------

struct AddOp {
  template <typename T>
  T operator()(T a, T b) const {
    if constexpr (std::is_integral_v<T>) {  // wrap around instead of signed-overflow UB
      using U = std::make_unsigned_t<T>;
      return static_cast<T>(static_cast<U>(a) + static_cast<U>(b));
    } else {
      return a + b;
    }
  }
};
struct MulOp {
  template <typename T>
  T operator()(T a, T b) const {
    if constexpr (std::is_integral_v<T>) {
      using U = std::make_unsigned_t<T>;
      return static_cast<T>(static_cast<U>(a) * static_cast<U>(b));
    } else {
      return a * b;
    }
  }
};

template <typename Op>
void binary_kernel(KernelContext& ctx, const char* op) {
  const int32_t dev = ctx.device();
  auto args = std::make_shared<std::array<TensorArg, 3>>();
  TensorArg& x = (*args)[0];
  TensorArg& y = (*args)[1];
  TensorArg& out = (*args)[2];
  capture(x, input_desc(ctx, 0, op), dev, op, "input x");
  capture(y, input_desc(ctx, 1, op), dev, op, "input y");
  capture(out, ctx.output(0).desc(), dev, op, "output");
  check_dtype(op, x.desc.dtype, {OAR_DTYPE_FLOAT32, OAR_DTYPE_FLOAT64, OAR_DTYPE_INT32, OAR_DTYPE_INT64});
  OAR_SDK_CHECK(y.desc.dtype == x.desc.dtype && out.desc.dtype == x.desc.dtype, OAR_ERR_TYPE,
                op << ": dtypes differ (x " << sdk::dtype_name(x.desc.dtype) << ", y "
                   << sdk::dtype_name(y.desc.dtype) << ", out " << sdk::dtype_name(out.desc.dtype) << ")");
  check_output(out, op);
  for (const TensorArg* in : {&x, &y}) {
    const int32_t lead = out.desc.ndim - in->desc.ndim;
    bool ok = lead >= 0;
    for (int32_t i = 0; ok && i < in->desc.ndim; ++i)
      ok = in->dims[i] == out.dims[i + lead] || in->dims[i] == 1;
    OAR_SDK_CHECK(ok, OAR_ERR_INVALID_ARGUMENT, op << ": an input does not broadcast to the output shape");
  }
  if (out.numel == 0) return;
  submit(dev, ctx.stream(), op, "kernel", [args, op] {
    auto& a = *args;
    TensorView vx = a[0].bind(), vy = a[1].bind(), vo = a[2].bind();
    dispatch(vx.dtype(), op, [&](auto tag) {
      using T = decltype(tag);
      sdk::binary_loop<T, T, T>(vo, vx, vy, Op{});
    });
  });
}

void add_kernel(KernelContext& ctx) { binary_kernel<AddOp>(ctx, "add"); }
void multiply_kernel(KernelContext& ctx) { binary_kernel<MulOp>(ctx, "multiply"); }

void relu_kernel(KernelContext& ctx) {
  const char* op = "relu";
  const int32_t dev = ctx.device();
  auto args = std::make_shared<std::array<TensorArg, 2>>();
  TensorArg& x = (*args)[0];
  TensorArg& out = (*args)[1];
  capture(x, input_desc(ctx, 0, op), dev, op, "input x");
  capture(out, ctx.output(0).desc(), dev, op, "output");
  check_dtype(op, x.desc.dtype, {OAR_DTYPE_FLOAT32, OAR_DTYPE_FLOAT64});
  OAR_SDK_CHECK(out.desc.dtype == x.desc.dtype, OAR_ERR_TYPE, op << ": output dtype differs");
  OAR_SDK_CHECK(out.numel == x.numel && out.desc.ndim == x.desc.ndim, OAR_ERR_INVALID_ARGUMENT,
                op << ": output shape differs from the input's");
  check_output(out, op);
  if (out.numel == 0) return;
  submit(dev, ctx.stream(), op, "kernel", [args] {
    auto& a = *args;
    TensorView vx = a[0].bind(), vo = a[1].bind();
    dispatch(vx.dtype(), "relu", [&](auto tag) {
      using T = decltype(tag);
      sdk::unary_loop<T, T>(vo, vx, [](T v) -> T {
        if (v > T(0)) return v;
        return v != v ? v : T(0);  // NaN propagates
      });
    });
  });
}

// ---- sum -----------------------------------------------------------------------------------------

template <typename T>
struct SumOp {
  using acc_t = double;
  acc_t init() const { return 0.0; }
  acc_t step(acc_t acc, T v, int64_t) const { return acc + static_cast<double>(v); }
  acc_t merge(acc_t a, acc_t b) const { return a + b; }
  T finish(acc_t acc, int64_t) const { return static_cast<T>(acc); }
};

struct SumArgs {
  TensorArg x, out;
  std::vector<int64_t> axes;
};

void sum_kernel(KernelContext& ctx) {
  const char* op = "sum";
  const int32_t dev = ctx.device();
  auto args = std::make_shared<SumArgs>();
  capture(args->x, input_desc(ctx, 0, op), dev, op, "input x");
  capture(args->out, ctx.output(0).desc(), dev, op, "output");
  const TensorArg& x = args->x;
  const TensorArg& out = args->out;
  check_dtype(op, x.desc.dtype, {OAR_DTYPE_FLOAT32, OAR_DTYPE_FLOAT64});
  OAR_SDK_CHECK(out.desc.dtype == x.desc.dtype, OAR_ERR_TYPE,
                op << ": output dtype " << sdk::dtype_name(out.desc.dtype) << " differs from "
                   << sdk::dtype_name(x.desc.dtype));
  check_output(out, op);
  std::vector<int64_t> axes = ctx.attr_ints_or("axis", {});
  const int64_t keepdim = ctx.attr_int_or("keepdim", 0);
  if (axes.empty())
    for (int32_t i = 0; i < x.desc.ndim; ++i) axes.push_back(i);
  int64_t kept = 1;
  std::vector<int64_t> expect;
  for (size_t k = 0; k < axes.size(); ++k)
    OAR_SDK_CHECK(
        axes[k] >= 0 && axes[k] < x.desc.ndim && (k == 0 || axes[k] > axes[k - 1]), OAR_ERR_INVALID_ARGUMENT,
        op << ": axis attribute must be sorted, unique and in [0, " << x.desc.ndim << "); got " << axes[k]);
  for (int32_t i = 0, k = 0; i < x.desc.ndim; ++i) {
    const bool red = k < static_cast<int32_t>(axes.size()) && axes[k] == i;
    if (red) ++k;
    if (!red)
      kept *= x.dims[i], expect.push_back(x.dims[i]);
    else if (keepdim)
      expect.push_back(1);
  }
  bool shape_ok = static_cast<int32_t>(expect.size()) == out.desc.ndim;
  for (size_t i = 0; shape_ok && i < expect.size(); ++i) shape_ok = expect[i] == out.dims[i];
  OAR_SDK_CHECK(shape_ok && kept == out.numel, OAR_ERR_INVALID_ARGUMENT,
                op << ": output shape does not match the reduction (keepdim=" << keepdim << ")");
  args->axes = std::move(axes);
  if (out.numel == 0) return;
  submit(dev, ctx.stream(), op, "kernel", [args] {
    TensorView vx = args->x.bind(), vo = args->out.bind();
    if (vx.dtype() == OAR_DTYPE_FLOAT32)
      sdk::reduce_loop<float, float>(vo, vx, args->axes, SumOp<float>{});
    else
      sdk::reduce_loop<double, double>(vo, vx, args->axes, SumOp<double>{});
  });
}

// ---- matmul --------------------------------------------------------------------------------------

struct MatmulArgs {
  TensorArg x, y, out;
  int64_t M = 0, N = 0, K = 0;
  int64_t x_sm = 0, x_sk = 0, y_sk = 0, y_sn = 0;  // element strides of the logical matrices
  int32_t nbatch = 0;                              // number of broadcast batch dims
  int64_t batch_dims[sdk::kMaxDims] = {};
  int64_t x_bstride[sdk::kMaxDims] = {};  // 0 where x broadcasts
  int64_t y_bstride[sdk::kMaxDims] = {};
  int64_t batches = 1;
};

template <typename T>
void run_matmul(MatmulArgs& a) {
  TensorView vx = a.x.bind(), vy = a.y.bind(), vo = a.out.bind();
  const T* px = vx.data<T>();
  const T* py = vy.data<T>();
  T* po = vo.data<T>();
  const int64_t M = a.M, N = a.N, K = a.K;
  const int64_t rows = a.batches * M;
  const int64_t grain = std::max<int64_t>(1, sdk::kElementwiseGrain / std::max<int64_t>(1, K * N));
  sdk::parallel_for(0, rows, grain, [&](int64_t lo, int64_t hi) {
    for (int64_t r = lo; r < hi; ++r) {
      const int64_t b = r / M, i = r % M;
      int64_t xo = 0, yo = 0, rem = b;
      for (int32_t d = a.nbatch - 1; d >= 0; --d) {
        const int64_t idx = rem % a.batch_dims[d];
        rem /= a.batch_dims[d];
        xo += idx * a.x_bstride[d];
        yo += idx * a.y_bstride[d];
      }
      T* o = po + r * N;
      for (int64_t j = 0; j < N; ++j) o[j] = T(0);
      const T* xrow = px + xo + i * a.x_sm;
      for (int64_t k = 0; k < K; ++k) {
        const T v = xrow[k * a.x_sk];
        const T* yrow = py + yo + k * a.y_sk;
        if (a.y_sn == 1) {
          for (int64_t j = 0; j < N; ++j) o[j] += v * yrow[j];
        } else {
          for (int64_t j = 0; j < N; ++j) o[j] += v * yrow[j * a.y_sn];
        }
      }
    }
  });
}

void matmul_kernel(KernelContext& ctx) {
  const char* op = "matmul";
  const int32_t dev = ctx.device();
  auto args = std::make_shared<MatmulArgs>();
  MatmulArgs& a = *args;
  capture(a.x, input_desc(ctx, 0, op), dev, op, "input x");
  capture(a.y, input_desc(ctx, 1, op), dev, op, "input y");
  capture(a.out, ctx.output(0).desc(), dev, op, "output");
  check_dtype(op, a.x.desc.dtype, {OAR_DTYPE_FLOAT32, OAR_DTYPE_FLOAT64});
  OAR_SDK_CHECK(a.y.desc.dtype == a.x.desc.dtype && a.out.desc.dtype == a.x.desc.dtype, OAR_ERR_TYPE,
                op << ": x, y and out must share one dtype");
  check_output(a.out, op);
  const int64_t tx = ctx.attr_int_or("transpose_x", 0), ty = ctx.attr_int_or("transpose_y", 0);
  const int32_t nx = a.x.desc.ndim, ny = a.y.desc.ndim;
  OAR_SDK_CHECK(nx >= 1 && ny >= 1, OAR_ERR_INVALID_ARGUMENT,
                op << ": operands must have at least one dimension");
  int64_t kx, ky;
  if (nx == 1) {  // [k] is [1, k]; a transpose has no effect
    a.M = 1, kx = a.x.dims[0], a.x_sm = 0, a.x_sk = a.x.strides[0];
  } else {
    const int64_t r = a.x.dims[nx - 2], c = a.x.dims[nx - 1];
    const int64_t sr = a.x.strides[nx - 2], sc = a.x.strides[nx - 1];
    if (tx)
      a.M = c, kx = r, a.x_sm = sc, a.x_sk = sr;
    else
      a.M = r, kx = c, a.x_sm = sr, a.x_sk = sc;
  }
  if (ny == 1) {  // [k] is [k, 1]
    ky = a.y.dims[0], a.N = 1, a.y_sk = a.y.strides[0], a.y_sn = 0;
  } else {
    const int64_t r = a.y.dims[ny - 2], c = a.y.dims[ny - 1];
    const int64_t sr = a.y.strides[ny - 2], sc = a.y.strides[ny - 1];
    if (ty)
      ky = c, a.N = r, a.y_sk = sc, a.y_sn = sr;
    else
      ky = r, a.N = c, a.y_sk = sr, a.y_sn = sc;
  }
  OAR_SDK_CHECK(kx == ky, OAR_ERR_INVALID_ARGUMENT,
                op << ": inner dimensions differ (" << kx << " vs " << ky << ")");
  a.K = kx;
  const int32_t bx = nx > 2 ? nx - 2 : 0, by = ny > 2 ? ny - 2 : 0;
  a.nbatch = std::max(bx, by);
  for (int32_t d = 0; d < a.nbatch; ++d) {
    const int32_t ix = d - (a.nbatch - bx), iy = d - (a.nbatch - by);
    const int64_t dx = ix >= 0 ? a.x.dims[ix] : 1, dy = iy >= 0 ? a.y.dims[iy] : 1;
    OAR_SDK_CHECK(dx == dy || dx == 1 || dy == 1, OAR_ERR_INVALID_ARGUMENT,
                  op << ": batch dimensions " << dx << " and " << dy << " do not broadcast");
    a.batch_dims[d] = std::max(dx, dy);
    if (dx == 0 || dy == 0) a.batch_dims[d] = 0;
    a.x_bstride[d] = (ix >= 0 && dx != 1) ? a.x.strides[ix] : 0;
    a.y_bstride[d] = (iy >= 0 && dy != 1) ? a.y.strides[iy] : 0;
    a.batches *= a.batch_dims[d];
  }
  std::vector<int64_t> expect(a.batch_dims, a.batch_dims + a.nbatch);
  if (nx > 1) expect.push_back(a.M);
  if (ny > 1) expect.push_back(a.N);
  bool ok = static_cast<int32_t>(expect.size()) == a.out.desc.ndim;
  for (size_t i = 0; ok && i < expect.size(); ++i) ok = expect[i] == a.out.dims[i];
  OAR_SDK_CHECK(ok, OAR_ERR_INVALID_ARGUMENT, op << ": the output shape does not match x @ y");
  if (a.out.numel == 0) return;
  submit(dev, ctx.stream(), op, "kernel", [args] {
    if (args->x.desc.dtype == OAR_DTYPE_FLOAT32)
      run_matmul<float>(*args);
    else
      run_matmul<double>(*args);
  });
}

}  // namespace

void register_kernels(sdk::KernelRegistrar& reg) {
  const uint32_t strided = OAR_KERNEL_STRIDED_INPUTS;
  struct Def {
    const char* op;
    std::vector<OarDType> dtypes;
    sdk::KernelBody body;
    uint32_t flags;
  };
  const std::vector<OarDType> arith = {OAR_DTYPE_FLOAT32, OAR_DTYPE_FLOAT64, OAR_DTYPE_INT32,
                                       OAR_DTYPE_INT64};
  const std::vector<OarDType> floats = {OAR_DTYPE_FLOAT32, OAR_DTYPE_FLOAT64};
  const Def defs[] = {
      {"add", arith, &add_kernel, strided},    {"multiply", arith, &multiply_kernel, strided},
      {"relu", floats, &relu_kernel, strided}, {"sum", floats, &sum_kernel, strided},
      {"matmul", floats, &matmul_kernel, 0},  // matmul handles strides too, but takes contiguous inputs
  };
  for (const Def& d : defs) {
    try {
      reg.add(d.op, d.dtypes, d.body, d.flags);
    } catch (const sdk::Error& e) {  // a refused kernel is a warning, never a failed plugin
      sdk::log(OAR_LOG_WARNING, std::string("sim: kernel '") + d.op + "' not registered: " + e.what());
    }
  }
}

}  // namespace oar::sim
