// Tensors: a dtype, a shape with strides and an offset (in elements) over a reference-counted Storage
// on one device. Views share the storage; in-place writes bump the storage's version counter so
// autograd can detect a modified saved tensor.
#pragma once

#include <oar/core/dtype.h>
#include <oar/core/place.h>
#include <oar/core/shape.h>
#include <oar/device_api.h>

#include <atomic>
#include <memory>
#include <vector>

namespace oar {

class Device;
struct AutogradMeta;
struct GraphPool;
namespace ir {
struct SymbolicVar;
}

class Storage {
 public:
  // Takes memory from the device's allocator.
  Storage(Device* device, size_t bytes);
  // Wraps memory the storage does not own (e.g. a numpy buffer); `keep_alive` is released with it.
  Storage(Device* device, void* data, size_t bytes, std::shared_ptr<void> keep_alive);
  ~Storage();
  Storage(const Storage&) = delete;
  Storage& operator=(const Storage&) = delete;

  void* data() const { return data_; }
  size_t bytes() const { return bytes_; }
  Device* device() const { return device_; }
  Place place() const;
  uint32_t version() const { return version_.load(std::memory_order_relaxed); }
  void bump_version() { version_.fetch_add(1, std::memory_order_relaxed); }
  // How many of the tensors sharing this storage are autograd's saved copies (not user-visible
  // views); an in-place write with gradients involved must know whether other views exist.
  int32_t saved_aliases() const { return saved_aliases_.load(std::memory_order_relaxed); }
  void add_saved_alias(int32_t delta) { saved_aliases_.fetch_add(delta, std::memory_order_relaxed); }
  // The graph pool the memory came from (allocated while its device captured a graph), or nullptr for
  // the device's allocator: the free goes back where the memory came from.
  GraphPool* graph_pool() const { return pool_; }

 private:
  Device* device_;
  GraphPool* pool_ = nullptr;
  void* data_;
  size_t bytes_;
  OarStream stream_ = nullptr;  // the one data_ was allocated for (freeing needs it)
  bool owned_;
  std::shared_ptr<void> keep_alive_;
  std::atomic<uint32_t> version_{0};
  std::atomic<int32_t> saved_aliases_{0};
};

struct TensorImpl {
  DType dtype = DType::kFloat32;
  Dims dims;
  Dims strides;        // in elements
  int64_t offset = 0;  // in elements
  std::shared_ptr<Storage> storage;
  std::shared_ptr<AutogradMeta> autograd;  // null unless the tensor takes part in differentiation
  // Set on the variables of a program being built (static mode, oar/ir/static_graph.h): such a tensor
  // has dims and dtype but no memory.
  std::shared_ptr<ir::SymbolicVar> symbol;
};

class Tensor {
 public:
  Tensor() = default;
  explicit Tensor(std::shared_ptr<TensorImpl> impl) : impl_(std::move(impl)) {}

  // A new contiguous tensor with uninitialised memory on `place`.
  // `op` names the caller in the size errors (checked_tensor_bytes): the op whose output this is.
  static Tensor empty(const Dims& dims, DType dtype, Place place = cpu_place(), const char* op = "allocate");
  // A CPU tensor holding a copy of `data` (numel * dtype_size bytes).
  static Tensor from_host(const void* data, const Dims& dims, DType dtype, Place place = cpu_place());
  template <typename T>
  static Tensor from_vector(const std::vector<T>& v, const Dims& dims, DType dtype, Place place = cpu_place()) {
    return from_host(v.data(), dims, dtype, place);
  }

  bool defined() const { return impl_ != nullptr; }
  TensorImpl* impl() const { return impl_.get(); }
  const std::shared_ptr<TensorImpl>& impl_ptr() const { return impl_; }

  DType dtype() const { return impl_->dtype; }
  const Dims& dims() const { return impl_->dims; }
  const Dims& strides() const { return impl_->strides; }
  int64_t offset() const { return impl_->offset; }
  int32_t ndim() const { return impl_->dims.size(); }
  int64_t dim(int32_t i) const;  // negative i counts from the end
  int64_t numel() const { return impl_->dims.numel(); }
  Place place() const { return impl_->storage->place(); }
  const std::shared_ptr<Storage>& storage() const { return impl_->storage; }
  bool is_contiguous() const;
  bool shares_storage(const Tensor& o) const { return impl_->storage == o.impl_->storage; }
  // Address of element 0 (a device address on devices the core may not dereference).
  void* data_ptr() const;

  // Copies to `place` (through the plugins' memcpy); returns *this when already there.
  Tensor to(Place place) const;
  Tensor cpu() const { return to(cpu_place()); }
  Tensor contiguous() const;
  // Copies the elements to host memory as a contiguous vector of T (T must match dtype's size).
  template <typename T> std::vector<T> to_vector() const {
    std::vector<T> out(static_cast<size_t>(numel()));
    copy_to_host(out.data(), out.size() * sizeof(T));
    return out;
  }
  void copy_to_host(void* dst, size_t bytes) const;

  // Views: share storage.
  Tensor reshape(const Dims& dims) const;  // -1 infers one dim; copies when no view is possible
  Tensor view(const Dims& dims) const;     // like reshape but throws if a copy would be needed
  Tensor transpose(const std::vector<int64_t>& perm) const;
  Tensor slice(int64_t axis, int64_t start, int64_t end, int64_t step = 1) const;
  Tensor squeeze(const std::vector<int64_t>& axes = {}) const;
  Tensor unsqueeze(int64_t axis) const;
  Tensor expand(const Dims& dims) const;  // broadcast view, stride 0 on expanded dims

 private:
  std::shared_ptr<TensorImpl> impl_;
};

// A new TensorImpl describing a strided view of `base`'s storage.
Tensor make_view(const Tensor& base, const Dims& dims, const Dims& strides, int64_t offset);

// The byte size of a tensor of `dims` and `dtype` on `device`, checked before anything is allocated:
// kInvalidArgument (ValueError) when a dim is negative or the element count or byte size exceeds
// 2^63-1, kOutOfMemory (MemoryError) when it is larger than the device's memory. `op` names the caller.
size_t checked_tensor_bytes(const Dims& dims, DType dtype, const Device& device, const char* op);

}  // namespace oar
