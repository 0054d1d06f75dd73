// The inference API (oar_infer, framework/include/oar/inference/predictor.h) for oar.inference, with
// Paddle's paddle.inference names: Config, Predictor, Tensor (handles), PredictorPool, DataType,
// PrecisionType, PlaceType. The classes live in oar._C under private names; oar/inference re-exports them.
#include <oar/inference/predictor.h>

#include <cstring>

#include "common.h"

namespace oarpy {

namespace {

using oar_infer::Config;
using oar_infer::DataType;
using oar_infer::Predictor;
using HandleT = oar_infer::Tensor;

std::vector<int> shape_of(const py::array& a) {
  std::vector<int> s;
  for (py::ssize_t i = 0; i < a.ndim(); ++i) s.push_back(static_cast<int>(a.shape(i)));
  return s;
}

// Paddle's copy_from_cpu: the array's shape becomes the input's shape; its dtype must be the input's.
void copy_from_numpy(HandleT& h, py::handle obj) {
  if (!py::isinstance<py::array>(obj))
    throw py::type_error("copy_from_cpu: expected a numpy.ndarray for input '" + h.name() + "', got " +
                         std::string(py::str(py::type::of(obj))));
  py::array a = py::array::ensure(obj, py::array::c_style);
  oar::DType d;
  if (!numpy_to_dtype(a.dtype(), &d))
    throw py::type_error("copy_from_cpu: numpy dtype " + std::string(py::str(a.dtype())) + " of input '" +
                         h.name() + "' is not supported");
  h.Reshape(shape_of(a));
  h.CopyFromCpuBytes(a.data(), oar_infer::ToDataType(d));
}

py::array copy_to_numpy(const HandleT& h) {
  oar::Tensor v = h.value();
  if (!v.defined()) {
    // Let the C++ API give its message (no value yet).
    float dummy;
    h.CopyToCpuBytes(&dummy, h.type());
  }
  std::vector<py::ssize_t> shape(v.dims().data(), v.dims().data() + v.ndim());
  py::array out(numpy_dtype(v.dtype()), shape);
  if (v.numel() > 0) h.CopyToCpuBytes(out.mutable_data(), oar_infer::ToDataType(v.dtype()));
  return out;
}

// Predictor.run(inputs): numpy arrays (-> numpy outputs) or oar Tensors (-> oar Tensors, no copy
// through the host), one per input name in order.
py::object run_with(Predictor& p, py::handle inputs) {
  if (inputs.is_none()) {
    py::gil_scoped_release nogil;
    p.Run();
    return py::none();
  }
  py::list items = py::list(py::reinterpret_borrow<py::object>(inputs));
  std::vector<std::string> names = p.GetInputNames();
  if (items.size() != names.size())
    throw py::value_error("Predictor.run: the model has " + std::to_string(names.size()) + " inputs, got " +
                          std::to_string(items.size()));
  bool tensors = items.size() > 0;
  for (size_t i = 0; i < items.size(); ++i) {
    auto h = p.GetInputHandle(names[i]);
    if (is_tensor(items[i])) {
      h->SetValue(tensor_of(items[i]).t);
    } else {
      tensors = false;
      copy_from_numpy(*h, items[i]);
    }
  }
  {
    py::gil_scoped_release nogil;
    p.Run();
  }
  py::list out;
  for (const std::string& n : p.GetOutputNames()) {
    auto h = p.GetOutputHandle(n);
    if (tensors)
      out.append(wrap(h->value()));
    else
      out.append(copy_to_numpy(*h));
  }
  return std::move(out);
}

std::string bytes_arg(py::handle b, const char* what) {
  if (py::isinstance<py::bytes>(b)) return std::string(py::reinterpret_borrow<py::bytes>(b));
  if (py::isinstance<py::str>(b)) return std::string(py::reinterpret_borrow<py::str>(b));
  throw py::type_error(std::string("set_model_buffer: ") + what + " must be bytes");
}

}  // namespace

void init_inference(py::module_& m) {
  py::enum_<DataType>(m, "_InferDataType", "paddle.inference.DataType")
      .value("FLOAT32", DataType::FLOAT32)
      .value("INT64", DataType::INT64)
      .value("INT32", DataType::INT32)
      .value("UINT8", DataType::UINT8)
      .value("INT8", DataType::INT8)
      .value("FLOAT16", DataType::FLOAT16)
      .value("BOOL", DataType::BOOL)
      .value("FLOAT64", DataType::FLOAT64)
      .value("BFLOAT16", DataType::BFLOAT16)
      .value("INT16", DataType::INT16)
      .value("COMPLEX64", DataType::COMPLEX64)
      .value("COMPLEX128", DataType::COMPLEX128);
  py::enum_<oar_infer::PrecisionType>(m, "_InferPrecisionType", "paddle.inference.PrecisionType")
      .value("Float32", oar_infer::PrecisionType::kFloat32)
      .value("Int8", oar_infer::PrecisionType::kInt8)
      .value("Half", oar_infer::PrecisionType::kHalf)
      .value("Bfloat16", oar_infer::PrecisionType::kBf16);
  py::enum_<oar_infer::PlaceType>(m, "_InferPlaceType", "paddle.inference.PlaceType")
      .value("UNK", oar_infer::PlaceType::kUNK)
      .value("CPU", oar_infer::PlaceType::kCPU)
      .value("GPU", oar_infer::PlaceType::kGPU)
      .value("XPU", oar_infer::PlaceType::kXPU)
      .value("CUSTOM", oar_infer::PlaceType::kCUSTOM);
  m.def("_infer_get_num_bytes_of_data_type", &oar_infer::GetDataTypeSize, py::arg("dtype"));
  m.def("_infer_get_version", &oar_infer::GetVersion);

  using P = oar_infer::PrecisionType;
  py::class_<Config>(m, "_InferConfig", "paddle.inference.Config: where the model is and how to run it")
      .def(py::init<>())
      .def(py::init<const std::string&>(), py::arg("model_dir"))
      .def(py::init<const std::string&, const std::string&>(), py::arg("prog_file"), py::arg("params_file"))
      .def("set_model", py::overload_cast<const std::string&>(&Config::SetModel), py::arg("model_dir"))
      .def("set_model", py::overload_cast<const std::string&, const std::string&>(&Config::SetModel),
           py::arg("prog_file"), py::arg("params_file"))
      .def("set_prog_file", &Config::SetProgFile, py::arg("path"))
      .def("set_params_file", &Config::SetParamsFile, py::arg("path"))
      .def(
          "set_model_buffer",
          [](Config& c, py::handle prog, py::object a, py::object b, py::object d) {
            // Paddle's (prog, prog_size, params, params_size), or just (prog, params).
            std::string pb = bytes_arg(prog, "the program"), qb;
            if (d.is_none()) {
              qb = bytes_arg(a, "the parameters");
            } else {
              pb.resize(std::min(pb.size(), a.cast<size_t>()));
              qb = bytes_arg(b, "the parameters");
              qb.resize(std::min(qb.size(), d.cast<size_t>()));
            }
            c.SetModelBuffer(pb.data(), pb.size(), qb.data(), qb.size());
          },
          py::arg("prog_buffer"), py::arg("prog_size_or_params"), py::arg("params_buffer") = py::none(),
          py::arg("params_size") = py::none())
      .def("model_from_memory", &Config::model_from_memory)
      .def("model_dir", &Config::model_dir)
      .def("prog_file", &Config::prog_file)
      .def("params_file", &Config::params_file)
      .def("set_device", &Config::SetDevice, py::arg("device"), "oar: 'cpu', 'sim:0', ...")
      .def("device", &Config::device)
      .def("disable_gpu", &Config::DisableGpu)
      .def("enable_use_gpu", &Config::EnableUseGpu, py::arg("memory_pool_init_size_mb") = 100,
           py::arg("device_id") = 0, py::arg("precision_mode") = P::kFloat32)
      .def("enable_custom_device", &Config::EnableCustomDevice, py::arg("device_type"),
           py::arg("device_id") = 0, py::arg("precision") = P::kFloat32)
      .def("use_gpu", &Config::use_gpu)
      .def("gpu_device_id", &Config::gpu_device_id)
      .def("use_custom_device", &Config::use_custom_device)
      .def("custom_device_type", &Config::custom_device_type)
      .def("custom_device_id", &Config::custom_device_id)
      .def("set_cpu_math_library_num_threads", &Config::SetCpuMathLibraryNumThreads, py::arg("num_threads"))
      .def("cpu_math_library_num_threads", &Config::cpu_math_library_num_threads)
      .def("load_custom_op_library", &Config::LoadCustomOpLibrary, py::arg("path"))
      .def("custom_op_libraries", &Config::custom_op_libraries)
      .def("switch_ir_optim", &Config::SwitchIrOptim, py::arg("x") = true)
      .def("ir_optim", &Config::ir_optim)
      .def("enable_memory_optim", &Config::EnableMemoryOptim, py::arg("x") = true)
      .def("memory_optim_enabled", &Config::enable_memory_optim)
      .def("switch_use_feed_fetch_ops", &Config::SwitchUseFeedFetchOps, py::arg("x") = true)
      .def("switch_specify_input_names", &Config::SwitchSpecifyInputNames, py::arg("x") = true)
      .def("disable_glog_info", &Config::DisableGlogInfo)
      .def("enable_mkldnn", &Config::EnableMKLDNN)
      .def("summary", &Config::Summary)
      .def("__repr__", &Config::Summary);

  py::class_<HandleT>(m, "_InferTensor", "paddle.inference.Tensor: an input or output of a Predictor")
      .def(
          "reshape", [](HandleT& h, const std::vector<int>& shape) { h.Reshape(shape); }, py::arg("shape"))
      .def("copy_from_cpu", &copy_from_numpy, py::arg("data"),
           "Copies a numpy array in (its shape becomes the input's shape; its dtype must be the input's)")
      .def("copy_to_cpu", &copy_to_numpy, "The value as a new numpy array")
      .def(
          "share_external_data",
          [](HandleT& h, py::handle t) {
            if (!is_tensor(t)) throw py::type_error("share_external_data: expected an oar.Tensor");
            h.SetValue(tensor_of(t).t);
          },
          py::arg("tensor"), "Uses an oar.Tensor as the input's data, without a copy on the same device")
      .def(
          "to_tensor",
          [](const HandleT& h) {
            oar::Tensor v = h.value();
            return v.defined() ? wrap(v) : py::none();
          },
          "oar: the value as an oar.Tensor (no copy; None before it has one)")
      .def("shape", &HandleT::shape)
      .def("type", &HandleT::type)
      .def("name", &HandleT::name)
      .def("place", &HandleT::place)
      .def("lod", [](const HandleT&) { return std::vector<std::vector<size_t>>{}; });

  py::class_<Predictor, std::shared_ptr<Predictor>>(m, "_InferPredictor", "paddle.inference.Predictor")
      .def(py::init([](const Config& c) { return oar_infer::CreatePredictor(c); }), py::arg("config"))
      .def("get_input_names", &Predictor::GetInputNames)
      .def("get_output_names", &Predictor::GetOutputNames)
      .def("get_input_tensor_shape", &Predictor::GetInputTensorShape)
      .def("get_output_tensor_shape", &Predictor::GetOutputTensorShape)
      .def("get_input_types", &Predictor::GetInputTypes)
      .def("get_output_types", &Predictor::GetOutputTypes)
      .def("get_input_handle", &Predictor::GetInputHandle, py::arg("name"))
      .def("get_output_handle", &Predictor::GetOutputHandle, py::arg("name"))
      .def("run", &run_with, py::arg("inputs") = py::none(),
           "run(): with the handles' data. run(inputs): numpy arrays (or oar Tensors), one per input in "
           "order; returns the outputs as numpy arrays (oar Tensors)")
      .def("clone", [](Predictor& p) { return std::shared_ptr<Predictor>(p.Clone()); })
      .def("clear_intermediate_tensor", &Predictor::ClearIntermediateTensor)
      .def("try_shrink_memory", &Predictor::TryShrinkMemory)
      .def(
          "get_variable",
          [](const Predictor& p, const std::string& name) {
            oar::Tensor v = p.GetVariable(name);
            return v.defined() ? wrap(v) : py::none();
          },
          py::arg("name"), "oar: a variable of the predictor's scope as an oar.Tensor (None when absent)")
      .def("device", &Predictor::device);

  py::class_<oar_infer::services::PredictorPool>(m, "_InferPredictorPool", "paddle.inference.PredictorPool")
      .def(py::init<const Config&, size_t>(), py::arg("config"), py::arg("size") = 1)
      .def("retrive", &oar_infer::services::PredictorPool::Retrive, py::arg("idx"),
           py::return_value_policy::reference_internal)
      .def("retrieve", &oar_infer::services::PredictorPool::Retrieve, py::arg("idx"),
           py::return_value_policy::reference_internal)
      .def("__len__", &oar_infer::services::PredictorPool::size);
}

}  // namespace oarpy
