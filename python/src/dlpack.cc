// DLPack in and out (oar.utils.dlpack, Tensor.__dlpack__, oar.from_dlpack): zero-copy exchange of CPU
// tensors with numpy, PyTorch, JAX, ... The structs below follow the DLPack specification (v0.8
// layout, unversioned "dltensor" capsules, which every consumer still accepts).
#include "common.h"

#include <oar/core/ops.h>
#include <oar/core/runtime.h>

#include <cstring>

namespace oarpy {
namespace {

enum DLDeviceType : int32_t { kDLCPU = 1, kDLCUDA = 2, kDLCUDAHost = 3 };
enum DLDataTypeCode : uint8_t { kDLInt = 0, kDLUInt = 1, kDLFloat = 2, kDLBfloat = 4, kDLComplex = 5, kDLBool = 6 };
struct DLDevice {
  int32_t device_type;
  int32_t device_id;
};
struct DLDataType {
  uint8_t code;
  uint8_t bits;
  uint16_t lanes;
};
struct DLTensor {
  void* data;
  DLDevice device;
  int32_t ndim;
  DLDataType dtype;
  int64_t* shape;
  int64_t* strides;  // in elements; may be NULL for a compact row-major tensor
  uint64_t byte_offset;
};
struct DLManagedTensor {
  DLTensor dl_tensor;
  void* manager_ctx;
  void (*deleter)(DLManagedTensor* self);
};

using oar::DType;

DLDataType to_dl(DType d) {
  const uint8_t bits = static_cast<uint8_t>(oar::dtype_size(d) * 8);
  switch (d) {
    case DType::kBool: return {kDLBool, 8, 1};
    case DType::kUInt8: return {kDLUInt, bits, 1};
    case DType::kInt8:
    case DType::kInt16:
    case DType::kInt32:
    case DType::kInt64: return {kDLInt, bits, 1};
    case DType::kFloat16:
    case DType::kFloat32:
    case DType::kFloat64: return {kDLFloat, bits, 1};
    case DType::kBFloat16: return {kDLBfloat, 16, 1};
    case DType::kComplex64:
    case DType::kComplex128: return {kDLComplex, bits, 1};
  }
  return {kDLFloat, 32, 1};
}

DType from_dl(const DLDataType& t) {
  if (t.lanes != 1) throw py::type_error("from_dlpack: vector dtypes (lanes=" + std::to_string(t.lanes) + ") are not supported");
  switch (t.code) {
    case kDLBool: if (t.bits == 8) return DType::kBool; break;
    case kDLUInt: if (t.bits == 8) return DType::kUInt8; if (t.bits == 1) break; break;
    case kDLInt:
      if (t.bits == 8) return DType::kInt8;
      if (t.bits == 16) return DType::kInt16;
      if (t.bits == 32) return DType::kInt32;
      if (t.bits == 64) return DType::kInt64;
      break;
    case kDLFloat:
      if (t.bits == 16) return DType::kFloat16;
      if (t.bits == 32) return DType::kFloat32;
      if (t.bits == 64) return DType::kFloat64;
      break;
    case kDLBfloat: if (t.bits == 16) return DType::kBFloat16; break;
    case kDLComplex:
      if (t.bits == 64) return DType::kComplex64;
      if (t.bits == 128) return DType::kComplex128;
      break;
  }
  throw py::type_error("from_dlpack: unsupported DLPack dtype (code " + std::to_string(t.code) + ", " +
                       std::to_string(t.bits) + " bits)");
}

// What an exported tensor keeps alive: the tensor itself and its shape/strides arrays.
struct Export {
  oar::Tensor tensor;
  std::vector<int64_t> shape, strides;
  DLManagedTensor managed;
};

void delete_export(DLManagedTensor* self) { delete static_cast<Export*>(self->manager_ctx); }

void capsule_destructor(PyObject* capsule) {
  // Only a capsule nobody consumed still owns the tensor (a consumer renames it "used_dltensor").
  if (!PyCapsule_IsValid(capsule, "dltensor")) return;
  auto* m = static_cast<DLManagedTensor*>(PyCapsule_GetPointer(capsule, "dltensor"));
  if (m && m->deleter) m->deleter(m);
}

py::object to_dlpack(const oar::Tensor& t) {
  if (!t.place().is_cpu())
    throw py::buffer_error("to_dlpack: only CPU tensors can be shared through DLPack (this one is on " +
                           t.place().to_string() + "); copy it with .cpu() first");
  auto* e = new Export;
  e->tensor = t;
  e->shape.assign(t.dims().data(), t.dims().data() + t.ndim());
  e->strides.assign(t.strides().data(), t.strides().data() + t.ndim());
  DLTensor& d = e->managed.dl_tensor;
  d.data = t.storage()->data();
  d.device = {kDLCPU, 0};
  d.ndim = t.ndim();
  d.dtype = to_dl(t.dtype());
  d.shape = e->shape.data();
  d.strides = e->strides.data();
  d.byte_offset = static_cast<uint64_t>(t.offset()) * oar::dtype_size(t.dtype());
  e->managed.manager_ctx = e;
  e->managed.deleter = &delete_export;
  return py::reinterpret_steal<py::object>(PyCapsule_New(&e->managed, "dltensor", &capsule_destructor));
}

// Takes ownership of the producer's tensor: its deleter runs when the last oar tensor using the memory
// is gone.
oar::Tensor from_capsule(py::handle capsule) {
  if (!PyCapsule_IsValid(capsule.ptr(), "dltensor"))
    throw py::value_error("from_dlpack: expected an unconsumed DLPack capsule named 'dltensor' (a capsule can be "
                          "consumed only once)");
  auto* m = static_cast<DLManagedTensor*>(PyCapsule_GetPointer(capsule.ptr(), "dltensor"));
  const DLTensor& d = m->dl_tensor;
  if (d.device.device_type != kDLCPU && d.device.device_type != kDLCUDAHost)
    throw py::buffer_error("from_dlpack: only CPU memory can be imported (DLPack device type " +
                           std::to_string(d.device.device_type) + ")");
  const DType dtype = from_dl(d.dtype);
  std::vector<int64_t> shape_v(d.shape, d.shape + d.ndim), strides_v(d.ndim);
  int64_t expect = 1;
  for (int32_t i = d.ndim - 1; i >= 0; --i) {  // compact row-major when strides are absent
    strides_v[i] = d.strides ? d.strides[i] : expect;
    expect *= d.shape[i];
  }
  const oar::Dims dims(shape_v), strides(strides_v);
  // The storage spans the elements the strides reach, starting at data + byte_offset.
  int64_t lo = 0, hi = 0;
  bool empty = false;
  for (int32_t i = 0; i < d.ndim; ++i) {
    if (d.shape[i] == 0) empty = true;
    const int64_t ext = (d.shape[i] - 1) * strides[i];
    (ext < 0 ? lo : hi) += ext;
  }
  const size_t esize = oar::dtype_size(dtype);
  char* base = static_cast<char*>(d.data) + d.byte_offset;
  std::shared_ptr<void> owner(m, [](void* p) {
    auto* mt = static_cast<DLManagedTensor*>(p);
    if (mt->deleter) {
      py::gil_scoped_acquire gil;  // producers such as numpy release Python objects
      mt->deleter(mt);
    }
  });
  PyCapsule_SetName(capsule.ptr(), "used_dltensor");
  auto impl = std::make_shared<oar::TensorImpl>();
  impl->dtype = dtype;
  impl->dims = dims;
  impl->strides = strides;
  impl->offset = empty ? 0 : -lo;
  oar::Device* dev = &oar::Runtime::get().device(oar::cpu_place());
  impl->storage = std::make_shared<oar::Storage>(dev, base + (empty ? 0 : lo * static_cast<int64_t>(esize)),
                                                 empty ? 0 : static_cast<size_t>((hi - lo + 1) * esize), owner);
  return oar::Tensor(std::move(impl));
}

}  // namespace

void init_dlpack(py::module_& m) {
  auto cls = py::reinterpret_borrow<py::class_<PyTensor>>(reinterpret_cast<PyObject*>(g_tensor_type));
  cls.def(
         "__dlpack__",
         [](const PyTensor& s, py::handle stream, py::handle max_version, py::handle dl_device, py::handle copy) {
           (void)stream, (void)max_version, (void)dl_device;  // CPU only: no stream to order against
           if (!copy.is_none() && copy.cast<bool>()) return to_dlpack(oar::ops::copy(s.t));
           return to_dlpack(s.t);
         },
         py::arg("stream") = py::none(), py::kw_only(), py::arg("max_version") = py::none(),
         py::arg("dl_device") = py::none(), py::arg("copy") = py::none())
      .def("__dlpack_device__", [](const PyTensor& s) {
        if (!s.t.place().is_cpu())
          throw py::buffer_error("__dlpack_device__: only CPU tensors can be shared through DLPack");
        return py::make_tuple(static_cast<int>(kDLCPU), 0);
      });
  m.def("_to_dlpack", [](const PyTensor& x) { return to_dlpack(x.t); });
  m.def("_from_dlpack_capsule", [](py::handle capsule) { return PyTensor{from_capsule(capsule)}; });
}

}  // namespace oarpy
