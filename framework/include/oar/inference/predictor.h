// The inference API (namespace oar_infer), following Paddle Inference's C++ API (paddle_infer::):
//
//   oar_infer::Config config("model.pdmodel", "model.pdiparams");
//   config.SetDevice("cpu");                        // or "sim:0", ...; DisableGpu() = "cpu"
//   config.SetCpuMathLibraryNumThreads(4);
//   auto predictor = oar_infer::CreatePredictor(config);
//   auto in = predictor->GetInputHandle(predictor->GetInputNames()[0]);
//   in->Reshape({1, 1, 28, 28});
//   in->CopyFromCpu(data.data());
//   predictor->Run();
//   auto out = predictor->GetOutputHandle(predictor->GetOutputNames()[0]);
//   std::vector<float> result(numel(out->shape()));
//   out->CopyToCpu(result.data());
//
// A Predictor runs block 0 of the program through oar::ir::Executor. It is not thread-safe: use one
// predictor per thread, made with Clone() (shares the weights, has its own inputs, outputs and
// intermediates) or taken from a services::PredictorPool. Errors throw oar::Error.
#pragma once

#include <oar/core/tensor.h>

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <type_traits>
#include <vector>

namespace oar_infer {

// Element types of input and output tensors (Paddle's paddle_infer::DataType, plus oar's other dtypes).
enum class DataType : int32_t {
  FLOAT32,
  INT64,
  INT32,
  UINT8,
  INT8,
  FLOAT16,
  BOOL,
  FLOAT64,
  BFLOAT16,
  INT16,
  COMPLEX64,
  COMPLEX128,
};
const char* DataTypeName(DataType t);  // "FLOAT32", ...
DataType ToDataType(oar::DType t);
oar::DType ToDType(DataType t);
int GetDataTypeSize(DataType t);  // bytes per element (Paddle's paddle_infer::GetNumBytesOfDataType)

// Paddle's precision for the whole model. oar runs programs in the dtypes they were saved with: only
// kFloat32 is accepted by Config (the others throw kUnimplemented).
enum class PrecisionType : int32_t { kFloat32 = 0, kInt8, kHalf, kBf16 };
const char* PrecisionTypeName(PrecisionType t);

enum class PlaceType : int32_t { kUNK = -1, kCPU, kGPU, kXPU, kCUSTOM };

// The DataType of a C++ element type (CopyFromCpu / CopyToCpu).
template <typename T>
constexpr DataType data_type_of() {
  if constexpr (std::is_same_v<T, float>)
    return DataType::FLOAT32;
  else if constexpr (std::is_same_v<T, double>)
    return DataType::FLOAT64;
  else if constexpr (std::is_same_v<T, int64_t>)
    return DataType::INT64;
  else if constexpr (std::is_same_v<T, int32_t>)
    return DataType::INT32;
  else if constexpr (std::is_same_v<T, int16_t>)
    return DataType::INT16;
  else if constexpr (std::is_same_v<T, uint8_t>)
    return DataType::UINT8;
  else if constexpr (std::is_same_v<T, int8_t>)
    return DataType::INT8;
  else {
    static_assert(std::is_same_v<T, bool>, "CopyFromCpu/CopyToCpu: unsupported element type");
    return DataType::BOOL;
  }
}

class Config {
 public:
  Config() = default;
  // A folder holding the model: `inference.pdmodel`, else its only `*.pdmodel`, else Paddle 1.x's
  // `__model__`; parameters from the `.pdiparams` of the same stem, else one file per parameter in the
  // folder (Paddle's non-combined save). Throws kNotFound when the folder has no model.
  explicit Config(const std::string& model_dir);
  Config(const std::string& prog_file, const std::string& params_file);

  void SetModel(const std::string& model_dir);
  void SetModel(const std::string& prog_file, const std::string& params_file);
  void SetProgFile(const std::string& path) { prog_file_ = path; }
  void SetParamsFile(const std::string& path) { params_file_ = path; }
  // The serialized program and parameters instead of files (copied).
  void SetModelBuffer(const char* prog_buffer, size_t prog_size, const char* params_buffer,
                      size_t params_size);
  bool model_from_memory() const { return from_memory_; }
  const std::string& model_dir() const { return model_dir_; }
  const std::string& prog_file() const { return prog_file_; }
  const std::string& params_file() const { return params_file_; }

  // The device the predictor runs on: "cpu" (default), "sim:0", any place oar::Place::parse reads.
  // Checked by CreatePredictor (kNotFound for a device type no plugin provides).
  void SetDevice(const std::string& place);
  const std::string& device() const { return device_; }
  // Paddle's names: DisableGpu() = SetDevice("cpu"); EnableUseGpu(_, id) = SetDevice("gpu:<id>") (the
  // memory pool size is ignored: oar's pools grow on demand); EnableCustomDevice(type, id).
  void DisableGpu() { SetDevice("cpu"); }
  void EnableUseGpu(uint64_t memory_pool_init_size_mb = 100, int device_id = 0,
                    PrecisionType precision = PrecisionType::kFloat32);
  void EnableCustomDevice(const std::string& device_type, int device_id = 0,
                          PrecisionType precision = PrecisionType::kFloat32);
  bool use_gpu() const;
  int gpu_device_id() const;
  bool use_custom_device() const;
  std::string custom_device_type() const;
  int custom_device_id() const;

  // OpenMP threads of the CPU math kernels while this predictor runs (0: leave the process default).
  void SetCpuMathLibraryNumThreads(int n);
  int cpu_math_library_num_threads() const { return threads_; }

  // Run the inference pass pipeline on the program before lowering it (default on, as in Paddle).
  void SwitchIrOptim(bool on = true) { ir_optim_ = on; }
  bool ir_optim() const { return ir_optim_; }
  // Release each intermediate tensor right after its last use (the executor's garbage collection).
  // Off (Paddle's default): intermediates stay in the predictor until the next Run,
  // ClearIntermediateTensor() or TryShrinkMemory().
  void EnableMemoryOptim(bool on = true) { memory_optim_ = on; }
  bool enable_memory_optim() const { return memory_optim_; }

  // Accepted for source compatibility; they change nothing in oar.
  void SwitchUseFeedFetchOps(bool) {}
  void SwitchSpecifyInputNames(bool = true) {}
  void DisableGlogInfo() {}
  void EnableMKLDNN() {}

  // Custom op libraries (docs/custom_op.md) the model's custom ops come from, loaded by CreatePredictor
  // before the program is read; the ':'-separated OAR_CUSTOM_OP_LIBS adds more without code changes.
  void LoadCustomOpLibrary(const std::string& path) { custom_op_libs_.push_back(path); }
  const std::vector<std::string>& custom_op_libraries() const { return custom_op_libs_; }

  // A readable table of the settings.
  std::string Summary() const;

 private:
  friend class Predictor;
  std::string model_dir_, prog_file_, params_file_;
  bool from_memory_ = false;
  std::string prog_buffer_, params_buffer_;
  std::string device_ = "cpu";
  std::vector<std::string> custom_op_libs_;
  int threads_ = 0;
  bool ir_optim_ = true;
  bool memory_optim_ = false;
};

namespace detail {
struct PredictorState;
}

// A handle on one input or output of a Predictor (Paddle's paddle_infer::Tensor). Handles stay valid
// as long as they live (they keep the predictor's state alive).
class Tensor {
 public:
  // Inputs only: the shape of the next CopyFromCpu. Checked against the program's declared shape
  // (rank, and every extent the program fixes); drops data copied in with another shape.
  void Reshape(const std::vector<int>& shape);
  // Inputs only: copies numel(shape) elements from host memory. T must be the input's dtype (kType).
  template <typename T>
  void CopyFromCpu(const T* data) {
    CopyFromCpuBytes(data, data_type_of<T>());
  }
  // Copies the tensor (an output after Run, or an input's data) to host memory, numel(shape())
  // elements of the tensor's type (T must match: kType).
  template <typename T>
  void CopyToCpu(T* data) const {
    CopyToCpuBytes(data, data_type_of<T>());
  }
  // The same without a C++ element type (float16 / bfloat16 data, the Python binding); `dtype` must be
  // the tensor's type.
  void CopyFromCpuBytes(const void* data, DataType dtype);
  void CopyToCpuBytes(void* data, DataType dtype) const;

  // Inputs: the shape given to Reshape (else the declared one, -1 for unknown extents). Outputs: the
  // shape of the last Run's value (before any Run: the declared one).
  std::vector<int> shape() const;
  DataType type() const;
  const std::string& name() const { return name_; }
  bool is_input() const { return input_; }
  PlaceType place() const;
  // Has it a value (an input after CopyFromCpu, an output after Run)?
  bool has_data() const;

  // oar extensions, without copies through host memory: an input takes an oar::Tensor as its data
  // (checked like Reshape + CopyFromCpu; moved to the predictor's device when elsewhere); value() is the
  // tensor itself (an output's after Run, on the predictor's device; undefined when there is none).
  void SetValue(const oar::Tensor& t);
  oar::Tensor value() const;

  Tensor(std::shared_ptr<detail::PredictorState> state, std::string name, bool input);

 private:
  std::shared_ptr<detail::PredictorState> state_;
  std::string name_;
  bool input_;
};

class Predictor {
 public:
  // Use CreatePredictor. Loads the program (running the passes when ir_optim) and the parameters.
  explicit Predictor(const Config& config);
  ~Predictor();
  Predictor(const Predictor&) = delete;
  Predictor& operator=(const Predictor&) = delete;

  // Feed targets and fetch sources of the program, in `col` order.
  std::vector<std::string> GetInputNames() const;
  std::vector<std::string> GetOutputNames() const;
  // The declared shapes (-1: any extent) and element types, by name (Paddle's GetInputTensorShape,
  // GetInputTypes, ...).
  std::map<std::string, std::vector<int64_t>> GetInputTensorShape() const;
  std::map<std::string, std::vector<int64_t>> GetOutputTensorShape() const;
  std::map<std::string, DataType> GetInputTypes() const;
  std::map<std::string, DataType> GetOutputTypes() const;
  // Throws kNotFound naming the known inputs (outputs) for an unknown name.
  std::unique_ptr<Tensor> GetInputHandle(const std::string& name);
  std::unique_ptr<Tensor> GetOutputHandle(const std::string& name);

  // Runs the program with the inputs' data (kPrecondition when an input has none); returns true. The
  // inputs keep their data for the next Run.
  bool Run();

  // A predictor on the same device sharing this one's weights (the same tensors, no copy), with its
  // own inputs, outputs and intermediates: for another thread.
  std::unique_ptr<Predictor> Clone();

  // Drops the intermediate tensors this predictor holds (the outputs and inputs stay).
  void ClearIntermediateTensor();
  // ClearIntermediateTensor, then gives the device pool's unused memory back; returns the bytes given
  // back. The pool is per device (shared with every predictor and tensor on it).
  uint64_t TryShrinkMemory();

  const Config& config() const;
  // oar extensions: the value of a variable of the program's scope (a parameter, or an intermediate
  // while it is alive); an undefined tensor when there is none.
  oar::Tensor GetVariable(const std::string& name) const;
  std::string device() const;

 private:
  explicit Predictor(std::shared_ptr<detail::PredictorState> state);
  void apply_ir_passes();  // the inference pass pipeline, on the loaded program and parameters
  std::shared_ptr<detail::PredictorState> state_;
};

std::shared_ptr<Predictor> CreatePredictor(const Config& config);

// "2.6.0-oar ..." style version string of the library.
std::string GetVersion();

namespace services {

// `size` predictors for `size` threads: the first is made from the config, the others are its clones
// (sharing its weights).
class PredictorPool {
 public:
  explicit PredictorPool(const Config& config, size_t size = 1);
  // Paddle's spelling and the correct one; throw kOutOfRange for idx >= size.
  Predictor* Retrive(size_t idx) { return Retrieve(idx); }
  Predictor* Retrieve(size_t idx);
  size_t size() const { return preds_.size(); }

 private:
  std::vector<std::shared_ptr<Predictor>> preds_;
};

}  // namespace services

}  // namespace oar_infer
