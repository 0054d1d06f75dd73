// Parameter files in PaddlePaddle's layout.
//
// `.pdiparams` is a combined tensor stream: the persistable variables of a program, sorted by name,
// each written as
//   uint32 version (0) | uint64 LoD level count | per level: uint64 byte size + that many bytes of
//   uint64 offsets | uint32 tensor version (0) | int32 byte size of a VarType.TensorDesc |
//   the serialized TensorDesc (data_type, dims) | the raw data (dims product * element size bytes)
// with every integer little-endian. There are no names in the file: they come from the program.
//
// `.pdiparams.info` is a Python pickle of {var name: {"structured_name": str, "stop_gradient": bool,
// "trainable": bool}} (what paddle.jit.save writes); read and written here for that shape only.
//
// Every reader here treats its input as hostile: lengths are checked against the bytes that are left
// before anything is allocated, so a header that claims more data than the file holds is refused.
#pragma once

#include <oar/core/dtype.h>

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace oar::ir {

class Program;

struct TensorData {
  DType dtype = DType::kFloat32;
  std::vector<int64_t> dims;
  std::vector<std::vector<uint64_t>> lod;  // LoD offsets per level (usually empty)
  std::vector<uint8_t> data;               // numel * dtype_size bytes, host order (little-endian)

  int64_t numel() const;
  template <typename T>
  const T* data_as() const {
    return reinterpret_cast<const T*>(data.data());
  }
  bool operator==(const TensorData& o) const {
    return dtype == o.dtype && dims == o.dims && lod == o.lod && data == o.data;
  }
};

struct TensorStreamLimits {
  int32_t max_rank = 64;
  int32_t max_lod_levels = 64;
};

// One tensor record from `data + *offset`; advances *offset past it. Throws kInvalidArgument on a
// truncated or malformed record (naming the field and the offset).
TensorData read_tensor_record(const uint8_t* data, size_t size, size_t* offset,
                              const TensorStreamLimits& limits = {});
void append_tensor_record(std::string* out, const TensorData& t);

// The whole stream: every record until the end of the bytes.
std::vector<TensorData> parse_tensor_stream(const void* data, size_t size,
                                            const TensorStreamLimits& limits = {});
std::string serialize_tensor_stream(const std::vector<TensorData>& tensors);

// One variable in its own file, as Paddle's non-combined save writes it (one file per variable, named
// after it): exactly one record; trailing bytes are refused.
TensorData parse_tensor_file(const std::string& bytes, const TensorStreamLimits& limits = {});
std::string serialize_tensor_file(const TensorData& t);

// The variables whose values a combined `.pdiparams` holds for `program`: persistable variables of
// every block (feed/fetch/reader kinds excluded), unique, sorted by name, as Paddle saves them.
std::vector<std::string> combined_param_names(const Program& program);

// Reads a `.pdiparams` written for `program`; the record count must equal the names' count, and each
// record's dtype and shape must agree with the variable's description. Keyed by variable name.
std::map<std::string, TensorData> load_combined_params(const Program& program, const std::string& bytes,
                                                       const TensorStreamLimits& limits = {});
std::map<std::string, TensorData> load_combined_params_file(const Program& program, const std::string& path);
// Writes the tensors in name order (std::map order is Paddle's sorted order).
std::string save_combined_params(const std::map<std::string, TensorData>& params);

// `.pdiparams.info`
struct ParamInfo {
  std::string structured_name;  // e.g. "fc1.weight"
  bool stop_gradient = false;
  bool trainable = true;
  bool operator==(const ParamInfo& o) const {
    return structured_name == o.structured_name && stop_gradient == o.stop_gradient &&
           trainable == o.trainable;
  }
};
std::map<std::string, ParamInfo> parse_params_info(const std::string& bytes);
// Pickle protocol 2, byte-identical to what Python's pickle.dump(info, f, protocol=2) writes.
std::string serialize_params_info(const std::map<std::string, ParamInfo>& info);

}  // namespace oar::ir
