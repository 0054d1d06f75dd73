#include <oar/core/autograd.h>
#include <oar/core/dispatch_hooks.h>
#include <oar/core/error.h>
#include <oar/core/graph.h>
#include <oar/core/ops.h>
#include <oar/core/runtime.h>
#include <oar/core/tensor.h>

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstring>

#include "internal.h"

namespace oar {

// ---- Storage ------------------------------------------------------------------------------------
Storage::Storage(Device* device, size_t bytes)
    : device_(device), data_(nullptr), bytes_(bytes), stream_(device->stream()), owned_(true) {
  GraphPool* pool = device->capture_pool();
  if (__builtin_expect(pool == nullptr, 1)) {
    data_ = device->allocator().allocate(bytes, stream_);
    return;
  }
  data_ = pool->alloc.allocate(bytes, stream_);  // capturing a graph: its private pool
  pool->retain();
  pool_ = pool;
}

Storage::Storage(Device* device, void* data, size_t bytes, std::shared_ptr<void> keep_alive)
    : device_(device), data_(data), bytes_(bytes), owned_(false), keep_alive_(std::move(keep_alive)) {}

Storage::~Storage() {
  if (!owned_) return;
  if (__builtin_expect(pool_ == nullptr, 1)) {
    device_->allocator().free(data_, bytes_, stream_);
    return;
  }
  pool_->alloc.free(data_, bytes_, stream_);
  pool_->release();
}

Place Storage::place() const { return device_->place(); }

// ---- Tensor -------------------------------------------------------------------------------------
namespace {

// A new tensor's TensorImpl and the Storage it owns share one heap block (one allocation on the eager
// hot path instead of two). Each still lives as long as its own shared_ptrs: a view keeps only the
// storage alive, and the TensorImpl (with its autograd state) dies with the last Tensor on it. The
// block goes when both are gone.
struct PairBlock {
  // Room for each object with its shared_ptr control block (checked where it is placed).
  static constexpr size_t kSlot[2] = {sizeof(TensorImpl) + 64, sizeof(Storage) + 64};
  std::atomic<int> live{2};
  alignas(std::max_align_t) unsigned char impl_slot[kSlot[0]];
  alignas(std::max_align_t) unsigned char storage_slot[kSlot[1]];
  void release() {
    // Whoever sees 1 is the last holder (nobody else can release any more): no atomic write needed.
    if (live.load(std::memory_order_acquire) == 1 || live.fetch_sub(1, std::memory_order_acq_rel) == 1)
      delete this;
  }
};

// The allocator std::allocate_shared uses to place one of the two in its slot.
template <typename T>
struct PairAllocator {
  using value_type = T;
  PairBlock* block;
  int slot;
  PairAllocator(PairBlock* b, int s) : block(b), slot(s) {}
  template <typename U>
  PairAllocator(const PairAllocator<U>& o) : block(o.block), slot(o.slot) {}  // NOLINT: rebinding
  T* allocate(size_t n) {
    static_assert(alignof(T) <= alignof(std::max_align_t), "over-aligned");
    OAR_ENFORCE(n == 1 && sizeof(T) <= PairBlock::kSlot[slot], ErrorCode::kInternal,
                "PairAllocator: " << n << " objects of " << sizeof(T) << " bytes do not fit a slot of "
                                  << PairBlock::kSlot[slot]);
    return reinterpret_cast<T*>(slot == 0 ? block->impl_slot : block->storage_slot);
  }
  void deallocate(T*, size_t) { block->release(); }
  template <typename U>
  bool operator==(const PairAllocator<U>& o) const {
    return block == o.block && slot == o.slot;
  }
  template <typename U>
  bool operator!=(const PairAllocator<U>& o) const {
    return !(*this == o);
  }
};

}  // namespace

Tensor Tensor::empty(const Dims& dims, DType dtype, Place place, const char* op) {
  return empty_tensor(Runtime::get().device(place), dims, dtype, op);
}

Tensor empty_tensor(Device& dev, const Dims& dims, DType dtype, const char* op) {
  OAR_ENFORCE(is_valid_dtype(static_cast<int32_t>(dtype)), ErrorCode::kType,
              "invalid dtype value " << static_cast<int32_t>(dtype));
  const size_t bytes = checked_tensor_bytes(dims, dtype, dev, op);
  PairBlock* block = new PairBlock;
  std::shared_ptr<Storage> storage;
  try {
    storage = std::allocate_shared<Storage>(PairAllocator<Storage>(block, 1), &dev, bytes);
  } catch (...) {  // out of device memory: the storage's slot went back, the impl's never will
    block->release();
    throw;
  }
  auto impl = std::allocate_shared<TensorImpl>(PairAllocator<TensorImpl>(block, 0));
  impl->dtype = dtype;
  impl->dims = dims;
  impl->strides = contiguous_strides(dims);
  impl->storage = std::move(storage);
  return Tensor(std::move(impl));
}

namespace {
// checked_tensor_bytes for the shapes its fast path leaves: a zero or negative dim, an overflow, more
// than the device holds. Finds and names the problem. Out of line, so the fast path stays small.
__attribute__((noinline, cold)) size_t checked_tensor_bytes_slow(const Dims& dims, DType dtype,
                                                                 const Device& device, const char* op) {
  const int64_t n = checked_numel(dims, op);
  int64_t bytes;
  OAR_ENFORCE(!__builtin_mul_overflow(n, dtype_size(dtype), &bytes), ErrorCode::kInvalidArgument,
              op << ": a " << dtype_name(dtype) << " tensor of shape " << dims.to_string()
                 << " has more than 2^63-1 bytes");
  // Refused before anything is allocated: a request beyond the device's memory can only fail (or, on
  // an overcommitting host, get the process killed when the pages are touched).
  const uint64_t total = device.properties().total_memory;
  OAR_ENFORCE(total == 0 || static_cast<uint64_t>(bytes) <= total, ErrorCode::kOutOfMemory,
              op << ": a " << dtype_name(dtype) << " tensor of shape " << dims.to_string() << " needs "
                 << bytes << " bytes, but " << device.name() << " has " << total << " bytes of memory");
  return static_cast<size_t>(bytes);
}
}  // namespace

size_t checked_tensor_bytes(const Dims& dims, DType dtype, const Device& device, const char* op) {
  // Every op output comes here: the common case (positive dims whose byte count fits and is within the
  // device's memory) in one pass, with one overflow test per dim.
  int64_t bytes = dtype_size(dtype);
  bool ok = true;
  for (int32_t i = 0; i < dims.size(); ++i)
    ok &= dims[i] > 0 && !__builtin_mul_overflow(bytes, dims[i], &bytes);
  const uint64_t total = device.properties().total_memory;
  if (__builtin_expect(ok && (total == 0 || static_cast<uint64_t>(bytes) <= total), 1))
    return static_cast<size_t>(bytes);
  return checked_tensor_bytes_slow(dims, dtype, device, op);
}

Tensor Tensor::from_host(const void* data, const Dims& dims, DType dtype, Place place) {
  Tensor t = empty(dims, dtype, place);
  size_t bytes = static_cast<size_t>(t.numel() * dtype_size(dtype));
  if (bytes) Runtime::get().copy_bytes(t.data_ptr(), place, data, cpu_place(), bytes);
  return t;
}

int64_t Tensor::dim(int32_t i) const {
  int32_t n = ndim();
  OAR_ENFORCE(i >= -n && i < n, ErrorCode::kOutOfRange,
              "dim " << i << " out of range for a tensor of rank " << n);
  return impl_->dims[i < 0 ? i + n : i];
}

bool Tensor::is_contiguous() const {
  const Dims& d = impl_->dims;
  const Dims& s = impl_->strides;
  int64_t expect = 1;
  for (int32_t i = d.size() - 1; i >= 0; --i) {
    if (d[i] == 0) return true;
    if (d[i] != 1 && s[i] != expect) return false;
    expect *= d[i];
  }
  return true;
}

void* Tensor::data_ptr() const {
  if (impl_->symbol) throw_symbolic_access(*this);
  return static_cast<char*>(impl_->storage->data()) + impl_->offset * dtype_size(impl_->dtype);
}

Tensor make_view(const Tensor& base, const Dims& dims, const Dims& strides, int64_t offset) {
  auto impl = std::make_shared<TensorImpl>();
  impl->dtype = base.dtype();
  impl->dims = dims;
  impl->strides = strides;
  impl->offset = offset;
  impl->storage = base.storage();
  impl->symbol = base.impl()->symbol;  // a detached program variable is still that variable
  return Tensor(std::move(impl));
}

// A host tensor holding the bytes of the storage range `t` spans, viewed with t's strides. Works for
// any device and any strides without running a kernel (fallback and transfers depend on that).
Tensor host_view(const Tensor& t, int64_t* first, int64_t* count) {
  if (first) *first = 0;
  if (count) *count = 0;
  if (t.place().is_cpu()) return t;
  int64_t lo = t.offset(), hi = t.offset();
  for (int32_t i = 0; i < t.ndim(); ++i) {
    if (t.dims()[i] == 0) return Tensor::empty(t.dims(), t.dtype());
    int64_t ext = (t.dims()[i] - 1) * t.strides()[i];
    (ext < 0 ? lo : hi) += ext;
  }
  const int64_t esize = dtype_size(t.dtype());
  Tensor buf = Tensor::empty(Dims{hi - lo + 1}, t.dtype());
  const char* src = static_cast<const char*>(t.storage()->data()) + lo * esize;
  Runtime::get().copy_bytes(buf.data_ptr(), cpu_place(), src, t.place(), static_cast<size_t>((hi - lo + 1) * esize));
  if (first) *first = lo;
  if (count) *count = hi - lo + 1;
  return make_view(buf, t.dims(), t.strides(), t.offset() - lo);
}

Tensor Tensor::contiguous() const { return is_contiguous() ? *this : ops::copy(*this); }

Tensor Tensor::to(Place place) const {
  if (place == this->place()) return *this;
  if (impl_->symbol) throw_symbolic_access(*this);
  Tensor out;
  {
    NoGradGuard no_grad;  // the copy's own history is recorded below, as one node
    Tensor src = *this;
    if (!src.is_contiguous()) src = host_view(src).contiguous();  // works without a device copy kernel
    if (src.place() == place) {
      out = src;
    } else {
      out = Tensor::empty(dims(), dtype(), place);
      size_t bytes = static_cast<size_t>(numel() * dtype_size(dtype()));
      if (bytes) Runtime::get().copy_bytes(out.data_ptr(), place, src.data_ptr(), src.place(), bytes);
    }
  }
  if (out.shares_storage(*this)) out = make_view(out, out.dims(), out.strides(), out.offset());
  autograd::record_view(*this, out, "to", [from = this->place()](const Tensor& g) { return g.to(from); });
  return out;
}

void Tensor::copy_to_host(void* dst, size_t bytes) const {
  if (impl_->symbol) throw_symbolic_access(*this);
  OAR_ENFORCE(bytes == static_cast<size_t>(numel() * dtype_size(dtype())), ErrorCode::kInvalidArgument,
              "copy_to_host: buffer of " << bytes << " bytes for a " << dtype_name(dtype()) << " tensor of shape "
                                         << dims().to_string());
  Tensor src = is_contiguous() ? *this : host_view(*this).contiguous();
  if (bytes) Runtime::get().copy_bytes(dst, cpu_place(), src.data_ptr(), src.place(), bytes);
}

// ---- views --------------------------------------------------------------------------------------
namespace {

std::vector<int64_t> shape_vector(const Dims& d) { return std::vector<int64_t>(d.begin(), d.end()); }

// The dispatch hooks see every view (static mode records it as a view op and may replace `v`).
Tensor recorded_view(const Tensor& base, Tensor v, const char* op, const Attrs& attrs) {
  run_view_hooks(base, v, op, attrs);
  return v;
}

int64_t normalize_axis(int64_t axis, int64_t ndim, const char* op) {
  OAR_ENFORCE(axis >= -ndim && axis < ndim, ErrorCode::kOutOfRange,
              op << ": axis " << axis << " is out of range for a tensor of rank " << ndim << " (expected "
                 << -ndim << " <= axis < " << ndim << ")");
  return axis < 0 ? axis + ndim : axis;
}

// Strides for viewing (old_dims, old_strides) as new_dims without a copy, or false when impossible:
// each run of dims that is contiguous in memory must be re-split exactly.
bool view_strides(const Dims& od, const Dims& os, const Dims& nd, Dims& ns) {
  ns.resize(nd.size());
  if (od.numel() == 0 || od.size() == 0) {
    ns = contiguous_strides(nd);
    return true;
  }
  int32_t vd = nd.size() - 1;
  int64_t chunk_stride = os[od.size() - 1];
  int64_t tensor_numel = 1, view_numel = 1;
  for (int32_t td = od.size() - 1; td >= 0; --td) {
    tensor_numel *= od[td];
    bool chunk_ends = td == 0 || (od[td - 1] != 1 && os[td - 1] != tensor_numel * chunk_stride);
    if (!chunk_ends) continue;
    while (vd >= 0 && (view_numel < tensor_numel || nd[vd] == 1)) {
      ns[vd] = view_numel * chunk_stride;
      view_numel *= nd[vd];
      --vd;
    }
    if (view_numel != tensor_numel) return false;
    if (td > 0) {
      chunk_stride = os[td - 1];
      tensor_numel = view_numel = 1;
    }
  }
  return vd == -1;
}

Dims infer_reshape(const Dims& in, const Dims& shape) {
  Dims out = shape;
  int32_t infer_at = -1;
  for (int32_t i = 0; i < out.size(); ++i) {
    if (out[i] == -1) {
      OAR_ENFORCE(infer_at < 0, ErrorCode::kInvalidArgument,
                  "reshape: only one dimension can be -1, got shape " << shape.to_string());
      infer_at = i;
    } else if (out[i] == 0 && i < in.size()) {
      out[i] = in[i];  // Paddle: 0 copies the input's dimension
    } else {
      OAR_ENFORCE(out[i] >= 0, ErrorCode::kInvalidArgument,
                  "reshape: invalid dimension " << out[i] << " in shape " << shape.to_string());
    }
  }
  Dims known_dims = out;
  if (infer_at >= 0) known_dims[infer_at] = 1;
  const int64_t known = checked_numel(known_dims, "reshape");
  if (infer_at >= 0) {
    OAR_ENFORCE(known != 0 && in.numel() % known == 0, ErrorCode::kInvalidArgument,
                "reshape: cannot reshape a tensor of shape " << in.to_string() << " (" << in.numel()
                                                              << " elements) into " << shape.to_string());
    out[infer_at] = in.numel() / known;
  }
  OAR_ENFORCE(checked_numel(out, "reshape") == in.numel(), ErrorCode::kInvalidArgument,
              "reshape: cannot reshape a tensor of shape " << in.to_string() << " (" << in.numel()
                                                            << " elements) into " << shape.to_string());
  return out;
}

}  // namespace

Tensor Tensor::view(const Dims& shape) const {
  Dims nd = infer_reshape(dims(), shape), ns;
  OAR_ENFORCE(view_strides(dims(), strides(), nd, ns), ErrorCode::kInvalidArgument,
              "view: shape " << nd.to_string() << " is not compatible with the strides of the input "
                             << strides().to_string() << "; use reshape (which copies)");
  Tensor v = recorded_view(*this, make_view(*this, nd, ns, offset()), "reshape", {{"shape", shape_vector(shape)}});
  autograd::record_view(*this, v, "reshape", [d = dims()](const Tensor& g) { return g.reshape(d); });
  return v;
}

Tensor Tensor::reshape(const Dims& shape) const {
  Dims nd = infer_reshape(dims(), shape), ns;
  if (!view_strides(dims(), strides(), nd, ns)) return contiguous().view(nd);
  Tensor v = recorded_view(*this, make_view(*this, nd, ns, offset()), "reshape", {{"shape", shape_vector(shape)}});
  autograd::record_view(*this, v, "reshape", [d = dims()](const Tensor& g) { return g.reshape(d); });
  return v;
}

Tensor Tensor::transpose(const std::vector<int64_t>& perm) const {
  const int32_t n = ndim();
  OAR_ENFORCE(static_cast<int32_t>(perm.size()) == n, ErrorCode::kInvalidArgument,
              "transpose: perm has " << perm.size() << " entries for a tensor of rank " << n);
  Dims nd, ns;
  nd.resize(n);
  ns.resize(n);
  std::vector<bool> seen(n, false);
  for (int32_t i = 0; i < n; ++i) {
    int64_t p = normalize_axis(perm[i], n, "transpose");
    OAR_ENFORCE(!seen[p], ErrorCode::kInvalidArgument, "transpose: perm repeats axis " << perm[i]);
    seen[p] = true;
    nd[i] = dims()[p];
    ns[i] = strides()[p];
  }
  Tensor v = recorded_view(*this, make_view(*this, nd, ns, offset()), "transpose", {{"perm", perm}});
  std::vector<int64_t> inverse(n);
  for (int32_t i = 0; i < n; ++i) inverse[perm[i] < 0 ? perm[i] + n : perm[i]] = i;
  autograd::record_view(*this, v, "transpose", [inverse](const Tensor& g) { return g.transpose(inverse); });
  return v;
}

Tensor Tensor::slice(int64_t axis, int64_t start, int64_t end, int64_t step) const {
  axis = normalize_axis(axis, ndim(), "slice");
  const Attrs recorded{{"axis", axis}, {"start", start}, {"end", end}, {"step", step}};  // as given
  OAR_ENFORCE(step != 0, ErrorCode::kInvalidArgument, "slice: step must not be 0");
  const int64_t n = dims()[axis];
  // Python's slice rules: negative indices count from the end, then clamp.
  auto clamp = [&](int64_t v, int64_t lo, int64_t hi) {
    if (v < 0) v += n;
    return std::min(std::max(v, lo), hi);
  };
  // ceil(span / |step|) written so that no step, down to INT64_MIN, overflows.
  const uint64_t abs_step = step > 0 ? static_cast<uint64_t>(step) : 0 - static_cast<uint64_t>(step);
  auto count = [abs_step](int64_t span) {
    return span > 0 ? static_cast<int64_t>(1 + static_cast<uint64_t>(span - 1) / abs_step) : int64_t{0};
  };
  int64_t len;
  if (step > 0) {
    start = clamp(start, 0, n);
    end = clamp(end, 0, n);
    len = count(end - start);
  } else {
    start = clamp(start, -1, n - 1);
    end = clamp(end, -1, n - 1);
    len = count(start - end);
  }
  Dims nd = dims(), ns = strides();
  nd[static_cast<int32_t>(axis)] = len;
  // With at most one element the stride is never used (and stride * step may not fit).
  if (len > 1)
    ns[static_cast<int32_t>(axis)] = checked_mul(strides()[static_cast<int32_t>(axis)], step, "slice");
  int64_t off = offset() + (len > 0 ? start * strides()[static_cast<int32_t>(axis)] : 0);
  Tensor v = recorded_view(*this, make_view(*this, nd, ns, off), "slice", recorded);
  autograd::record_view(*this, v, "slice", [axis, start, step, len, n](const Tensor& g) {
    // Scatter g back along `axis`: position j takes g[(j - start) / step] if it was selected, else 0
    // (the extra zero slice appended at index len).
    Dims zd = g.dims();
    zd[static_cast<int32_t>(axis)] = 1;
    Tensor padded = ops::concat({g, ops::zeros(zd, g.dtype(), g.place())}, axis);
    std::vector<int64_t> index(static_cast<size_t>(n), len);
    for (int64_t k = 0; k < len; ++k) index[static_cast<size_t>(start + k * step)] = k;
    Tensor idx = Tensor::from_vector(index, Dims{n}, DType::kInt64, g.place());
    return ops::index_select(padded, idx, axis);
  });
  return v;
}

Tensor Tensor::squeeze(const std::vector<int64_t>& axes) const {
  std::vector<bool> drop(ndim(), false);
  if (axes.empty()) {
    for (int32_t i = 0; i < ndim(); ++i) drop[i] = dims()[i] == 1;
  } else {
    for (int64_t a : axes) {
      int64_t i = normalize_axis(a, ndim(), "squeeze");
      drop[i] = dims()[static_cast<int32_t>(i)] == 1;  // Paddle leaves non-1 dims unchanged
    }
  }
  Dims nd, ns;
  for (int32_t i = 0; i < ndim(); ++i) {
    if (drop[i]) continue;
    nd.push_back(dims()[i]);
    ns.push_back(strides()[i]);
  }
  Tensor v = recorded_view(*this, make_view(*this, nd, ns, offset()), "squeeze", {{"axes", axes}});
  autograd::record_view(*this, v, "squeeze", [d = dims()](const Tensor& g) { return g.reshape(d); });
  return v;
}

Tensor Tensor::unsqueeze(int64_t axis) const {
  const int32_t n = ndim();
  OAR_ENFORCE(axis >= -(n + 1) && axis <= n, ErrorCode::kOutOfRange,
              "unsqueeze: axis " << axis << " is out of range for a tensor of rank " << n);
  if (axis < 0) axis += n + 1;
  Dims nd, ns;
  for (int32_t i = 0; i <= n; ++i) {
    if (i == axis) {
      nd.push_back(1);
      ns.push_back(i < n ? dims()[i] * strides()[i] : 1);
    }
    if (i < n) {
      nd.push_back(dims()[i]);
      ns.push_back(strides()[i]);
    }
  }
  Tensor v = recorded_view(*this, make_view(*this, nd, ns, offset()), "unsqueeze", {{"axis", axis}});
  autograd::record_view(*this, v, "unsqueeze", [d = dims()](const Tensor& g) { return g.reshape(d); });
  return v;
}

Tensor Tensor::expand(const Dims& shape) const {
  const int32_t n = ndim(), m = shape.size();
  OAR_ENFORCE(m >= n, ErrorCode::kInvalidArgument,
              "expand: target shape " << shape.to_string() << " has fewer dims than the input " << dims().to_string());
  Dims nd, ns;
  nd.resize(m);
  ns.resize(m);
  for (int32_t i = m - 1; i >= 0; --i) {
    int32_t j = i - (m - n);
    int64_t want = shape[i];
    if (j >= 0) {
      int64_t have = dims()[j];
      if (want == -1) want = have;
      OAR_ENFORCE(want >= 0, ErrorCode::kInvalidArgument,
                  "expand: invalid dimension " << want << " in target shape " << shape.to_string());
      OAR_ENFORCE(have == want || have == 1, ErrorCode::kInvalidArgument,
                  "expand: the input's dimension " << j << " (" << have << ") cannot expand to " << want
                                                   << "; target shape " << shape.to_string());
      nd[i] = want;
      ns[i] = have == want ? strides()[j] : 0;
    } else {
      OAR_ENFORCE(want >= 0, ErrorCode::kInvalidArgument,
                  "expand: -1 is not allowed in new leading dimensions, shape " << shape.to_string());
      nd[i] = want;
      ns[i] = 0;
    }
  }
  checked_numel(nd, "expand");  // a view is a tensor too: its element count must fit
  Tensor v = recorded_view(*this, make_view(*this, nd, ns, offset()), "expand", {{"shape", shape_vector(shape)}});
  autograd::record_view(*this, v, "expand", [d = dims()](const Tensor& g) { return autograd::sum_to(g, d); });
  return v;
}

}  // namespace oar
