// The inference API (oar_infer): Config, Predictor, tensor handles, PredictorPool. See predictor.h and
// docs/inference.md.
#include <dlfcn.h>
#include <oar/core/custom_op.h>
#include <oar/core/error.h>
#include <oar/core/runtime.h>
#include <oar/inference/predictor.h>
#include <oar/ir/executor.h>
#include <oar/ir/params.h>
#include <oar/ir/passes.h>
#include <oar/ir/program.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <sstream>

namespace oar_infer {

using oar::DType;
using oar::Error;
using oar::ErrorCode;
namespace fs = std::filesystem;

// ---- data types -------------------------------------------------------------------------------------

const char* DataTypeName(DataType t) {
  switch (t) {
    case DataType::FLOAT32:
      return "FLOAT32";
    case DataType::INT64:
      return "INT64";
    case DataType::INT32:
      return "INT32";
    case DataType::UINT8:
      return "UINT8";
    case DataType::INT8:
      return "INT8";
    case DataType::FLOAT16:
      return "FLOAT16";
    case DataType::BOOL:
      return "BOOL";
    case DataType::FLOAT64:
      return "FLOAT64";
    case DataType::BFLOAT16:
      return "BFLOAT16";
    case DataType::INT16:
      return "INT16";
    case DataType::COMPLEX64:
      return "COMPLEX64";
    case DataType::COMPLEX128:
      return "COMPLEX128";
  }
  return "UNKNOWN";
}

DataType ToDataType(DType t) {
  switch (t) {
    case DType::kFloat32:
      return DataType::FLOAT32;
    case DType::kInt64:
      return DataType::INT64;
    case DType::kInt32:
      return DataType::INT32;
    case DType::kUInt8:
      return DataType::UINT8;
    case DType::kInt8:
      return DataType::INT8;
    case DType::kFloat16:
      return DataType::FLOAT16;
    case DType::kBool:
      return DataType::BOOL;
    case DType::kFloat64:
      return DataType::FLOAT64;
    case DType::kBFloat16:
      return DataType::BFLOAT16;
    case DType::kInt16:
      return DataType::INT16;
    case DType::kComplex64:
      return DataType::COMPLEX64;
    case DType::kComplex128:
      return DataType::COMPLEX128;
  }
  OAR_THROW(ErrorCode::kType, "oar_infer: no DataType for dtype code " << static_cast<int>(t));
}

DType ToDType(DataType t) {
  switch (t) {
    case DataType::FLOAT32:
      return DType::kFloat32;
    case DataType::INT64:
      return DType::kInt64;
    case DataType::INT32:
      return DType::kInt32;
    case DataType::UINT8:
      return DType::kUInt8;
    case DataType::INT8:
      return DType::kInt8;
    case DataType::FLOAT16:
      return DType::kFloat16;
    case DataType::BOOL:
      return DType::kBool;
    case DataType::FLOAT64:
      return DType::kFloat64;
    case DataType::BFLOAT16:
      return DType::kBFloat16;
    case DataType::INT16:
      return DType::kInt16;
    case DataType::COMPLEX64:
      return DType::kComplex64;
    case DataType::COMPLEX128:
      return DType::kComplex128;
  }
  OAR_THROW(ErrorCode::kType, "oar_infer: unknown DataType " << static_cast<int>(t));
}

int GetDataTypeSize(DataType t) { return static_cast<int>(oar::dtype_size(ToDType(t))); }

const char* PrecisionTypeName(PrecisionType t) {
  switch (t) {
    case PrecisionType::kFloat32:
      return "kFloat32";
    case PrecisionType::kInt8:
      return "kInt8";
    case PrecisionType::kHalf:
      return "kHalf";
    case PrecisionType::kBf16:
      return "kBf16";
  }
  return "unknown";
}

namespace {

void check_precision(PrecisionType p) {
  OAR_ENFORCE(p == PrecisionType::kFloat32, ErrorCode::kUnimplemented,
              "oar_infer: precision "
                  << PrecisionTypeName(p)
                  << " is not supported (oar runs a model in the dtypes it was saved with: "
                     "use kFloat32)");
}

std::string shape_str(const std::vector<int64_t>& s) {
  std::ostringstream os;
  os << "[";
  for (size_t i = 0; i < s.size(); ++i) os << (i ? ", " : "") << s[i];
  os << "]";
  return os.str();
}

std::string join(const std::vector<std::string>& v) {
  std::string s;
  for (auto& x : v) s += (s.empty() ? "" : ", ") + x;
  return s;
}

// The parts of a place string: "sim:0" -> ("sim", 0); "cpu" -> ("cpu", 0).
std::pair<std::string, int> split_place(const std::string& p) {
  auto colon = p.find(':');
  if (colon == std::string::npos) return {p, 0};
  try {
    return {p.substr(0, colon), std::stoi(p.substr(colon + 1))};
  } catch (const std::exception&) {
    return {p.substr(0, colon), 0};
  }
}

}  // namespace

// ---- Config -----------------------------------------------------------------------------------------

Config::Config(const std::string& model_dir) { SetModel(model_dir); }

Config::Config(const std::string& prog_file, const std::string& params_file) {
  SetModel(prog_file, params_file);
}

void Config::SetModel(const std::string& model_dir) {
  std::error_code ec;
  OAR_ENFORCE(fs::is_directory(model_dir, ec), ErrorCode::kNotFound,
              "oar_infer::Config: model folder '" << model_dir << "' does not exist or is not a folder");
  fs::path dir(model_dir);
  fs::path prog;
  if (fs::is_regular_file(dir / "inference.pdmodel", ec)) {
    prog = dir / "inference.pdmodel";
  } else {
    std::vector<fs::path> found;
    for (auto& e : fs::directory_iterator(dir, ec))
      if (e.path().extension() == ".pdmodel" && e.is_regular_file(ec)) found.push_back(e.path());
    std::sort(found.begin(), found.end());
    if (found.size() > 1) {
      std::vector<std::string> names;
      for (auto& f : found) names.push_back(f.filename().string());
      OAR_THROW(ErrorCode::kInvalidArgument, "oar_infer::Config: model folder '"
                                                 << model_dir << "' holds several programs (" << join(names)
                                                 << "): name one with Config(prog_file, params_file)");
    }
    if (found.size() == 1)
      prog = found[0];
    else if (fs::is_regular_file(dir / "__model__", ec))
      prog = dir / "__model__";
  }
  OAR_ENFORCE(!prog.empty(), ErrorCode::kNotFound,
              "oar_infer::Config: model folder '"
                  << model_dir << "' holds no *.pdmodel (nor inference.pdmodel, nor __model__)");
  model_dir_ = model_dir;
  prog_file_ = prog.string();
  params_file_.clear();
  fs::path params = prog;
  params.replace_extension(".pdiparams");
  if (prog.filename() != "__model__" && fs::is_regular_file(params, ec))
    params_file_ = params.string();
  else if (fs::is_regular_file(dir / "__params__", ec))
    params_file_ = (dir / "__params__").string();
  // Otherwise the parameters are read one file per variable from model_dir (Paddle's separate files).
  from_memory_ = false;
}

void Config::SetModel(const std::string& prog_file, const std::string& params_file) {
  model_dir_.clear();
  prog_file_ = prog_file;
  params_file_ = params_file;
  from_memory_ = false;
}

void Config::SetModelBuffer(const char* prog_buffer, size_t prog_size, const char* params_buffer,
                            size_t params_size) {
  OAR_ENFORCE(prog_buffer != nullptr && prog_size > 0, ErrorCode::kInvalidArgument,
              "oar_infer::Config::SetModelBuffer: empty program buffer");
  prog_buffer_.assign(prog_buffer, prog_size);
  params_buffer_.assign(params_buffer == nullptr ? "" : std::string(params_buffer, params_size));
  from_memory_ = true;
  model_dir_.clear();
  prog_file_.clear();
  params_file_.clear();
}

void Config::SetDevice(const std::string& place) {
  OAR_ENFORCE(!place.empty(), ErrorCode::kInvalidArgument, "oar_infer::Config::SetDevice: empty device name");
  device_ = place;
}

void Config::EnableUseGpu(uint64_t, int device_id, PrecisionType precision) {
  check_precision(precision);
  SetDevice("gpu:" + std::to_string(device_id));
}

void Config::EnableCustomDevice(const std::string& device_type, int device_id, PrecisionType precision) {
  check_precision(precision);
  SetDevice(device_type + ":" + std::to_string(device_id));
}

bool Config::use_gpu() const { return split_place(device_).first == "gpu"; }
int Config::gpu_device_id() const { return use_gpu() ? split_place(device_).second : 0; }
bool Config::use_custom_device() const {
  const std::string t = split_place(device_).first;
  return t != "cpu" && t != "gpu";
}
std::string Config::custom_device_type() const {
  return use_custom_device() ? split_place(device_).first : "";
}
int Config::custom_device_id() const { return use_custom_device() ? split_place(device_).second : 0; }

void Config::SetCpuMathLibraryNumThreads(int n) {
  OAR_ENFORCE(n >= 0, ErrorCode::kInvalidArgument,
              "oar_infer::Config::SetCpuMathLibraryNumThreads: thread count " << n << " is negative");
  threads_ = n;
}

std::string Config::Summary() const {
  std::vector<std::pair<std::string, std::string>> rows;
  if (from_memory_) {
    // (A predictor's own copy of the config has dropped the buffers once the model was loaded.)
    rows.push_back({"model", prog_buffer_.empty()
                                 ? std::string("from memory")
                                 : "from memory (" + std::to_string(prog_buffer_.size()) + " + " +
                                       std::to_string(params_buffer_.size()) + " bytes)"});
  } else {
    if (!model_dir_.empty()) rows.push_back({"model_dir", model_dir_});
    rows.push_back({"prog_file", prog_file_});
    rows.push_back({"params_file", params_file_.empty() ? "(none)" : params_file_});
  }
  rows.push_back({"device", device_});
  rows.push_back({"cpu_math_threads", threads_ == 0 ? "default" : std::to_string(threads_)});
  rows.push_back({"ir_optim", ir_optim_ ? "true" : "false"});
  rows.push_back({"memory_optim", memory_optim_ ? "true" : "false"});
  rows.push_back({"precision", "kFloat32"});
  size_t w = 0;
  for (auto& r : rows) w = std::max(w, r.first.size());
  std::string line(w + 3, '-');
  line += std::string(40, '-');
  std::ostringstream os;
  os << line << "\n";
  for (auto& r : rows) os << r.first << std::string(w - r.first.size() + 3, ' ') << r.second << "\n";
  os << line << "\n";
  return os.str();
}

// ---- the predictor's state --------------------------------------------------------------------------

namespace detail {

struct InputSlot {
  DType dtype = DType::kFloat32;
  bool has_decl = false;          // the program describes the variable
  std::vector<int64_t> declared;  // -1: any
  std::vector<int64_t> shape;     // from Reshape; empty + !reshaped: not set
  bool reshaped = false;
  oar::Tensor value;  // on the predictor's place, after CopyFromCpu
};

struct PredictorState {
  Config config;
  oar::Place place;
  std::shared_ptr<const oar::ir::Program> program;  // after the passes; shared by clones
  std::unique_ptr<oar::ir::Executor> exec;
  std::vector<std::string> input_names, output_names;
  std::map<std::string, InputSlot> inputs;
  std::map<std::string, size_t> output_col;  // name -> first col fetching it
  std::vector<oar::Tensor> outputs;          // by col, from the last Run

  InputSlot& input(const std::string& name) {
    auto it = inputs.find(name);
    OAR_ENFORCE(
        it != inputs.end(), ErrorCode::kNotFound,
        "oar_infer: '" << name << "' is not an input of the model (inputs: " << join(input_names) << ")");
    return it->second;
  }
  size_t output(const std::string& name) const {
    auto it = output_col.find(name);
    OAR_ENFORCE(
        it != output_col.end(), ErrorCode::kNotFound,
        "oar_infer: '" << name << "' is not an output of the model (outputs: " << join(output_names) << ")");
    return it->second;
  }
  const oar::ir::VarDesc* var(const std::string& name) const {
    return program->global_block().find_var(name);
  }
};

}  // namespace detail

namespace {

using detail::PredictorState;

// OpenMP's thread count for the calling thread. The core does not link OpenMP (the plugins do, through
// the SDK), and the runtime has no thread-count setting, so the setter is looked up in the OpenMP
// runtime the plugins loaded. OpenMP keeps the count per calling thread: it is set for the duration of
// a Run and restored after, so other threads and the caller's other work are unaffected.
struct OmpFns {
  void (*set)(int) = nullptr;
  int (*get)() = nullptr;
};

const OmpFns& omp_fns() {
  static const OmpFns fns = [] {
    OmpFns f;
    for (const char* lib : {"libgomp.so.1", "libomp.so.5", "libomp.so", "libiomp5.so"}) {
      void* h = dlopen(lib, RTLD_LAZY | RTLD_NOLOAD);
      if (h == nullptr) continue;
      f.set = reinterpret_cast<void (*)(int)>(dlsym(h, "omp_set_num_threads"));
      f.get = reinterpret_cast<int (*)()>(dlsym(h, "omp_get_max_threads"));
      if (f.set != nullptr && f.get != nullptr) break;
      f = OmpFns{};
    }
    return f;
  }();
  return fns;
}

class ThreadCountGuard {
 public:
  explicit ThreadCountGuard(int n) {
    if (n <= 0) return;
    const OmpFns& f = omp_fns();
    if (f.set == nullptr) return;
    saved_ = f.get();
    if (saved_ != n)
      f.set(n);
    else
      saved_ = 0;
  }
  ~ThreadCountGuard() {
    if (saved_ > 0) omp_fns().set(saved_);
  }

 private:
  int saved_ = 0;
};

// Paddle's non-combined parameters: one tensor file per persistable variable, named after it.
void load_separate_params(PredictorState& s, const std::string& dir) {
  for (const std::string& name : oar::ir::combined_param_names(*s.program)) {
    fs::path p = fs::path(dir) / name;
    std::error_code ec;
    OAR_ENFORCE(fs::is_regular_file(p, ec), ErrorCode::kNotFound,
                "oar_infer: the model has no combined parameter file and parameter '"
                    << name << "' has no file of its own in '" << dir << "'");
    oar::ir::TensorData t =
        oar::ir::parse_tensor_file(oar::ir::read_file_bytes(p.string(), uint64_t{64} << 30));
    const oar::ir::VarDesc* v = s.program->find_var_recursive(0, name);
    if (v != nullptr && v->has_tensor()) {
      bool ok = v->dtype == t.dtype && v->shape.size() == t.dims.size();
      for (size_t i = 0; ok && i < t.dims.size(); ++i) ok = v->shape[i] < 0 || v->shape[i] == t.dims[i];
      OAR_ENFORCE(ok, ErrorCode::kInvalidArgument,
                  "oar_infer: parameter file '" << p.string() << "' holds " << oar::dtype_name(t.dtype) << " "
                                                << shape_str(t.dims) << " but the program declares "
                                                << oar::dtype_name(v->dtype) << " " << shape_str(v->shape));
    }
    s.exec->scope().set(name, oar::Tensor::from_host(t.data.data(), oar::Dims(t.dims), t.dtype, s.place));
  }
}

oar::Place parse_device(const std::string& device) {
  try {
    oar::Place p = oar::Place::parse(device);
    oar::Runtime::get().device(p);  // opens it: a bad index fails here rather than at the first Run
    return p;
  } catch (const Error& e) {
    throw Error(e.code(), "oar_infer: device '" + device + "' is not available: " + e.what());
  }
}

// Lowers the program and sets up the input and output tables.
void make_executor(PredictorState& s) {
  oar::ir::ExecutorOptions opts;
  opts.garbage_collect = s.config.enable_memory_optim();
  s.exec = std::make_unique<oar::ir::Executor>(*s.program, s.place, opts);
  s.input_names = s.exec->feed_names();
  s.output_names = s.exec->fetch_names();
  for (const std::string& n : s.input_names) {
    detail::InputSlot slot;
    if (const oar::ir::VarDesc* v = s.var(n); v != nullptr && v->has_tensor()) {
      slot.has_decl = true;
      slot.dtype = v->dtype;
      slot.declared = v->shape;
    }
    s.inputs[n] = slot;
  }
  for (size_t c = 0; c < s.output_names.size(); ++c) s.output_col.emplace(s.output_names[c], c);
  s.outputs.assign(s.output_names.size(), oar::Tensor());
}

std::vector<int> to_int_shape(const std::vector<int64_t>& v) { return std::vector<int>(v.begin(), v.end()); }

}  // namespace

// ---- Predictor --------------------------------------------------------------------------------------

Predictor::Predictor(const Config& config) : state_(std::make_shared<PredictorState>()) {
  PredictorState& s = *state_;
  s.config = config;
  oar::load_custom_op_libraries_from_env();
  for (const std::string& lib : config.custom_op_libraries()) oar::load_custom_op_library(lib);
  s.place = parse_device(config.device());
  oar::ir::Program program;
  if (config.model_from_memory()) {
    program = oar::ir::Program::parse(config.prog_buffer_);
  } else {
    OAR_ENFORCE(
        !config.prog_file().empty(), ErrorCode::kInvalidArgument,
        "oar_infer: the Config names no model (use Config(model_dir), Config(prog_file, params_file) or "
        "SetModel)");
    std::error_code ec;
    OAR_ENFORCE(fs::is_regular_file(config.prog_file(), ec), ErrorCode::kNotFound,
                "oar_infer: program file '" << config.prog_file() << "' does not exist");
    program = oar::ir::Program::load(config.prog_file());
  }
  s.program = std::make_shared<oar::ir::Program>(std::move(program));
  make_executor(s);

  const size_t num_params = oar::ir::combined_param_names(*s.program).size();
  if (config.model_from_memory()) {
    if (!config.params_buffer_.empty() || num_params > 0) s.exec->load_params(config.params_buffer_);
  } else if (!config.params_file().empty()) {
    std::error_code ec;
    OAR_ENFORCE(fs::is_regular_file(config.params_file(), ec), ErrorCode::kNotFound,
                "oar_infer: parameter file '" << config.params_file() << "' does not exist");
    try {
      s.exec->load_params_file(config.params_file());
    } catch (const Error& e) {
      throw Error(e.code(), "oar_infer: parameter file '" + config.params_file() + "': " + e.what());
    }
  } else if (num_params > 0) {
    OAR_ENFORCE(
        !config.model_dir().empty(), ErrorCode::kNotFound,
        "oar_infer: the model has " << num_params << " parameters but the Config names no parameter file");
    load_separate_params(s, config.model_dir());
  }
  if (config.ir_optim()) apply_ir_passes();
  // The predictor's copy of the config need not keep a second copy of an in-memory model (clones copy
  // the config too).
  std::string().swap(s.config.prog_buffer_);
  std::string().swap(s.config.params_buffer_);
}

Predictor::Predictor(std::shared_ptr<PredictorState> state) : state_(std::move(state)) {}

Predictor::~Predictor() = default;

void Predictor::apply_ir_passes() {
  // The passes run on a copy of the program with the loaded parameters (some fold parameters into new
  // ones); the executor is then rebuilt from the optimised program with the resulting parameters.
  PredictorState& s = *state_;
  auto optimised = std::make_shared<oar::ir::Program>(*s.program);
  oar::ir::Scope params;
  oar::ir::copy_scope(s.exec->scope(), params);
  oar::ir::PassOptions opts;
  opts.place = s.place;
  opts.memory_reuse = s.config.enable_memory_optim();
  oar::ir::run_inference_passes(*optimised, params, opts);
  s.program = std::move(optimised);
  make_executor(s);
  oar::ir::copy_scope(params, s.exec->scope());
}

std::vector<std::string> Predictor::GetInputNames() const { return state_->input_names; }
std::vector<std::string> Predictor::GetOutputNames() const { return state_->output_names; }

namespace {

std::map<std::string, std::vector<int64_t>> declared_shapes(const PredictorState& s,
                                                            const std::vector<std::string>& names) {
  std::map<std::string, std::vector<int64_t>> out;
  for (const std::string& n : names) {
    const oar::ir::VarDesc* v = s.var(n);
    out[n] = v != nullptr ? v->shape : std::vector<int64_t>{};
  }
  return out;
}

std::map<std::string, DataType> declared_types(const PredictorState& s,
                                               const std::vector<std::string>& names) {
  std::map<std::string, DataType> out;
  for (const std::string& n : names) {
    const oar::ir::VarDesc* v = s.var(n);
    out[n] = ToDataType(v != nullptr && v->has_tensor() ? v->dtype : DType::kFloat32);
  }
  return out;
}

}  // namespace

std::map<std::string, std::vector<int64_t>> Predictor::GetInputTensorShape() const {
  return declared_shapes(*state_, state_->input_names);
}
std::map<std::string, std::vector<int64_t>> Predictor::GetOutputTensorShape() const {
  return declared_shapes(*state_, state_->output_names);
}
std::map<std::string, DataType> Predictor::GetInputTypes() const {
  return declared_types(*state_, state_->input_names);
}
std::map<std::string, DataType> Predictor::GetOutputTypes() const {
  return declared_types(*state_, state_->output_names);
}

std::unique_ptr<Tensor> Predictor::GetInputHandle(const std::string& name) {
  state_->input(name);  // throws for an unknown name
  return std::make_unique<Tensor>(state_, name, true);
}

std::unique_ptr<Tensor> Predictor::GetOutputHandle(const std::string& name) {
  state_->output(name);
  return std::make_unique<Tensor>(state_, name, false);
}

bool Predictor::Run() {
  PredictorState& s = *state_;
  std::map<std::string, oar::Tensor> feeds;
  for (const std::string& n : s.input_names) {
    const detail::InputSlot& in = s.inputs.at(n);
    OAR_ENFORCE(
        in.value.defined(), ErrorCode::kPrecondition,
        "oar_infer: Run: input '" << n << "' has no data (call its handle's Reshape and CopyFromCpu first)");
    feeds.emplace(n, in.value);
  }
  ThreadCountGuard threads(s.config.cpu_math_library_num_threads());
  // The previous outputs are dropped first, so their memory can be reused by this run.
  std::fill(s.outputs.begin(), s.outputs.end(), oar::Tensor());
  s.outputs = s.exec->run(feeds);
  return true;
}

std::unique_ptr<Predictor> Predictor::Clone() {
  const PredictorState& src = *state_;
  auto s = std::make_shared<PredictorState>();
  s->config = src.config;
  s->place = src.place;
  s->program = src.program;  // already optimised: the passes do not run again
  make_executor(*s);
  // The weights: the same tensors (shared storage), not copies.
  for (const std::string& name : src.exec->scope().names()) {
    const oar::ir::VarDesc* v = src.program->find_var_recursive(0, name);
    if (v != nullptr && v->persistable) s->exec->scope().set(name, *src.exec->scope().find(name));
  }
  return std::unique_ptr<Predictor>(new Predictor(std::move(s)));
}

void Predictor::ClearIntermediateTensor() {
  oar::ir::Scope& scope = state_->exec->scope();
  for (const std::string& n : scope.names()) {
    const oar::ir::VarDesc* v = state_->var(n);
    if (v == nullptr || !v->persistable) scope.erase(n);
  }
}

uint64_t Predictor::TryShrinkMemory() {
  ClearIntermediateTensor();
  oar::BestFitAllocator& pool = oar::Runtime::get().device(state_->place).allocator();
  const uint64_t before = pool.stats().reserved;
  pool.release_cached();
  const uint64_t after = pool.stats().reserved;
  return before > after ? before - after : 0;
}

const Config& Predictor::config() const { return state_->config; }

oar::Tensor Predictor::GetVariable(const std::string& name) const {
  const oar::Tensor* t = state_->exec->scope().find(name);
  return t == nullptr ? oar::Tensor() : *t;
}

std::string Predictor::device() const { return state_->place.to_string(); }

std::shared_ptr<Predictor> CreatePredictor(const Config& config) {
  return std::make_shared<Predictor>(config);
}

std::string GetVersion() { return "oar inference 0.1.0 (PaddlePaddle 2.6 model format)"; }

// ---- tensor handles ---------------------------------------------------------------------------------

Tensor::Tensor(std::shared_ptr<detail::PredictorState> state, std::string name, bool input)
    : state_(std::move(state)), name_(std::move(name)), input_(input) {}

namespace {

// Refuses a shape the program does not accept for input `name`.
void check_input_shape(const detail::InputSlot& in, const std::string& name, const std::vector<int64_t>& s) {
  bool ok = true;
  for (int64_t d : s) ok = ok && d >= 0;
  OAR_ENFORCE(ok, ErrorCode::kInvalidArgument,
              "oar_infer: Reshape of input '" << name << "' to " << shape_str(s) << ": extents must be >= 0");
  if (!in.has_decl) return;
  ok = s.size() == in.declared.size();
  for (size_t i = 0; ok && i < s.size(); ++i) ok = in.declared[i] < 0 || in.declared[i] == s[i];
  OAR_ENFORCE(ok, ErrorCode::kInvalidArgument,
              "oar_infer: Reshape of input '" << name << "' to " << shape_str(s) << ": the model declares "
                                              << shape_str(in.declared) << " (-1 = any)");
}

}  // namespace

void Tensor::Reshape(const std::vector<int>& shape) {
  OAR_ENFORCE(input_, ErrorCode::kPrecondition,
              "oar_infer: Reshape on output '" << name_ << "': only inputs can be reshaped");
  detail::InputSlot& in = state_->input(name_);
  std::vector<int64_t> s(shape.begin(), shape.end());
  check_input_shape(in, name_, s);
  if (in.value.defined() && in.value.dims().to_vector() != s) in.value = oar::Tensor();
  in.shape = s;
  in.reshaped = true;
}

void Tensor::SetValue(const oar::Tensor& t) {
  OAR_ENFORCE(input_, ErrorCode::kPrecondition,
              "oar_infer: SetValue on output '" << name_ << "': only inputs can be written");
  OAR_ENFORCE(t.defined(), ErrorCode::kInvalidArgument,
              "oar_infer: SetValue of input '" << name_ << "': undefined tensor");
  detail::InputSlot& in = state_->input(name_);
  OAR_ENFORCE(t.dtype() == in.dtype, ErrorCode::kType,
              "oar_infer: SetValue of a " << DataTypeName(ToDataType(t.dtype())) << " tensor as input '"
                                          << name_ << "' which is " << DataTypeName(ToDataType(in.dtype)));
  std::vector<int64_t> s = t.dims().to_vector();
  check_input_shape(in, name_, s);
  in.value = t.to(state_->place);
  in.shape = s;
  in.reshaped = true;
}

oar::Tensor Tensor::value() const {
  if (input_) return state_->input(name_).value;
  return state_->outputs[state_->output(name_)];
}

void Tensor::CopyFromCpuBytes(const void* data, DataType dtype) {
  OAR_ENFORCE(input_, ErrorCode::kPrecondition,
              "oar_infer: CopyFromCpu on output '" << name_ << "': only inputs can be written");
  detail::InputSlot& in = state_->input(name_);
  OAR_ENFORCE(ToDType(dtype) == in.dtype, ErrorCode::kType,
              "oar_infer: CopyFromCpu of " << DataTypeName(dtype) << " data into input '" << name_
                                           << "' which is " << DataTypeName(ToDataType(in.dtype)));
  std::vector<int64_t> shape = in.shape;
  if (!in.reshaped) {
    // Without Reshape, a fully declared shape is used as it is.
    bool fixed = in.has_decl;
    for (int64_t d : in.declared) fixed = fixed && d >= 0;
    OAR_ENFORCE(fixed, ErrorCode::kPrecondition,
                "oar_infer: CopyFromCpu into input '" << name_ << "' (declared " << shape_str(in.declared)
                                                      << "): call Reshape first");
    shape = in.declared;
  }
  oar::Dims dims(shape);
  OAR_ENFORCE(data != nullptr || dims.numel() == 0, ErrorCode::kInvalidArgument,
              "oar_infer: CopyFromCpu into input '" << name_ << "' from a null pointer");
  in.value = oar::Tensor::from_host(data, dims, in.dtype, state_->place);
}

void Tensor::CopyToCpuBytes(void* data, DataType dtype) const {
  oar::Tensor t;
  if (input_) {
    t = state_->input(name_).value;
    OAR_ENFORCE(t.defined(), ErrorCode::kPrecondition,
                "oar_infer: CopyToCpu of input '" << name_ << "': it has no data (call CopyFromCpu first)");
  } else {
    t = state_->outputs[state_->output(name_)];
    OAR_ENFORCE(t.defined(), ErrorCode::kPrecondition,
                "oar_infer: CopyToCpu of output '" << name_ << "': it has no value (call Run first)");
  }
  OAR_ENFORCE(ToDType(dtype) == t.dtype(), ErrorCode::kType,
              "oar_infer: CopyToCpu of " << (input_ ? "input '" : "output '") << name_ << "' which is "
                                         << DataTypeName(ToDataType(t.dtype())) << " into a "
                                         << DataTypeName(dtype) << " buffer");
  OAR_ENFORCE(data != nullptr || t.numel() == 0, ErrorCode::kInvalidArgument,
              "oar_infer: CopyToCpu of '" << name_ << "' into a null pointer");
  t.copy_to_host(data, static_cast<size_t>(t.numel() * oar::dtype_size(t.dtype())));
}

std::vector<int> Tensor::shape() const {
  if (input_) {
    const detail::InputSlot& in = state_->input(name_);
    if (in.value.defined()) return to_int_shape(in.value.dims().to_vector());
    return to_int_shape(in.reshaped ? in.shape : in.declared);
  }
  const oar::Tensor& t = state_->outputs[state_->output(name_)];
  if (t.defined()) return to_int_shape(t.dims().to_vector());
  const oar::ir::VarDesc* v = state_->var(name_);
  return v != nullptr ? to_int_shape(v->shape) : std::vector<int>{};
}

DataType Tensor::type() const {
  if (input_) return ToDataType(state_->input(name_).dtype);
  const oar::Tensor& t = state_->outputs[state_->output(name_)];
  if (t.defined()) return ToDataType(t.dtype());
  const oar::ir::VarDesc* v = state_->var(name_);
  return ToDataType(v != nullptr && v->has_tensor() ? v->dtype : DType::kFloat32);
}

PlaceType Tensor::place() const {
  if (state_->place.is_cpu()) return PlaceType::kCPU;
  return split_place(state_->place.to_string()).first == "gpu" ? PlaceType::kGPU : PlaceType::kCUSTOM;
}

bool Tensor::has_data() const {
  if (input_) return state_->input(name_).value.defined();
  return state_->outputs[state_->output(name_)].defined();
}

// ---- PredictorPool ----------------------------------------------------------------------------------

namespace services {

PredictorPool::PredictorPool(const Config& config, size_t size) {
  OAR_ENFORCE(size >= 1, ErrorCode::kInvalidArgument,
              "oar_infer::services::PredictorPool: size must be >= 1");
  preds_.push_back(CreatePredictor(config));
  for (size_t i = 1; i < size; ++i) preds_.push_back(std::shared_ptr<Predictor>(preds_[0]->Clone()));
}

Predictor* PredictorPool::Retrieve(size_t idx) {
  OAR_ENFORCE(idx < preds_.size(), ErrorCode::kOutOfRange,
              "oar_infer::services::PredictorPool: index " << idx << " out of range (pool of "
                                                           << preds_.size() << ")");
  return preds_[idx].get();
}

}  // namespace services

}  // namespace oar_infer
