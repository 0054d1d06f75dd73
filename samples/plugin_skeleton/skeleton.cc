// A from-scratch oar device plugin with only what the ABI requires: a device table, a memory table and
// two kernels (docs/plugin_guide.md, "A plugin from scratch", shows this file). No stream, event,
// collective or profiler table: the device is synchronous and has no collectives, which the ABI allows.
// Its "device memory" is host memory the core may read (OAR_CAP_HOST_ACCESSIBLE); a real device's
// allocate/memcpy call the vendor runtime instead.
#include <oar/sdk.h>

#include <cstdlib>
#include <cstring>

namespace {
namespace sdk = oar::sdk;

constexpr int32_t kDevices = 1;
constexpr uint64_t kMemory = 1ull << 30;

void check_device(int32_t device) {
  OAR_SDK_CHECK(device >= 0 && device < kDevices, OAR_ERR_OUT_OF_RANGE,
                "skeleton: no device " << device << " (there is " << kDevices << ")");
}

// ---- device table: count (required) and properties -------------------------------------------------
OarError* device_count(int32_t* count) {
  *count = kDevices;
  return nullptr;
}
OarError* device_properties(int32_t device, OarDeviceProperties* props) {
  return sdk::guard([&] {
    check_device(device);
    OarDeviceProperties p = sdk::sized<OarDeviceProperties>();
    std::strncpy(p.name, "skeleton device", sizeof(p.name) - 1);
    p.total_memory = kMemory;
    p.capabilities = OAR_CAP_HOST_ACCESSIBLE | OAR_CAP_FP64;
    p.alloc_alignment = 64;
    p.compute_units = 1;
    sdk::fill_sized(props, p);  // never more than the caller's struct_size
  });
}

// ---- memory table: allocate, free and memcpy are required -----------------------------------------
OarError* mem_allocate(int32_t device, int32_t /*kind*/, uint64_t bytes, void** ptr) {
  return sdk::guard([&] {
    check_device(device);
    OAR_SDK_CHECK(bytes <= kMemory, OAR_ERR_OUT_OF_MEMORY,
                  "skeleton: " << bytes << " bytes requested, the device has " << kMemory);
    *ptr = std::aligned_alloc(64, (bytes + 63) / 64 * 64 + 64);
    OAR_SDK_CHECK(*ptr, OAR_ERR_OUT_OF_MEMORY, "skeleton: the host could not allocate " << bytes << " bytes");
  });
}
OarError* mem_free(int32_t /*device*/, int32_t /*kind*/, void* ptr) {
  std::free(ptr);
  return nullptr;
}
// No stream table: every stream argument is NULL and each call completes before it returns.
OarError* mem_memset(int32_t device, void* ptr, int32_t value, uint64_t bytes, OarStream) {
  return sdk::guard([&] {
    check_device(device);
    std::memset(ptr, value, bytes);
  });
}
OarError* mem_memcpy(int32_t device, void* dst, OarMemLocation, const void* src, OarMemLocation,
                     uint64_t bytes, OarStream) {
  return sdk::guard([&] {
    check_device(device);
    if (bytes) std::memmove(dst, src, bytes);
  });
}

// ---- kernels: numpy broadcasting over any strides (oar/sdk/iter.h) --------------------------------
template <typename T>
void add(sdk::KernelContext& ctx) {
  sdk::binary_loop<T, T, T>(ctx.output(0), ctx.input(0), ctx.input(1), [](T x, T y) { return x + y; });
}
template <typename T>
void multiply(sdk::KernelContext& ctx) {
  sdk::binary_loop<T, T, T>(ctx.output(0), ctx.input(0), ctx.input(1), [](T x, T y) { return x * y; });
}

void setup(sdk::Tables& t, sdk::KernelRegistrar& kernels) {
  t.device.count = device_count;
  t.device.properties = device_properties;
  t.memory = {sizeof(OarMemoryTable), mem_allocate, mem_free, mem_memset, mem_memcpy};
  const uint32_t strided = OAR_KERNEL_STRIDED_INPUTS;  // the loops handle strides and broadcasting
  kernels.add("add", {OAR_DTYPE_FLOAT32}, add<float>, strided);
  kernels.add("add", {OAR_DTYPE_FLOAT64}, add<double>, strided);
  kernels.add("multiply", {OAR_DTYPE_FLOAT32}, multiply<float>, strided);
  kernels.add("multiply", {OAR_DTYPE_FLOAT64}, multiply<double>, strided);
}

// {name (the file is liboar_plugin_skeleton.so), device type, version}
const sdk::PluginDescription kPlugin{"skeleton", "skeleton", "0.1.0"};

}  // namespace

OAR_SDK_PLUGIN(kPlugin, setup)
