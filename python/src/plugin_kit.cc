// Private helpers for oar.testing.plugin_conformance (the vendor plugin kit): op schemas to generate
// kernel inputs from, the core's Stream/Event objects, raw memset/copy on a chosen stream, and a driver
// that runs one collective of a plugin's collective table with in-process ranks (one thread each).
// Everything here goes through the runtime's loaded plugins, never around them.
#include <oar/core/op.h>
#include <oar/core/runtime.h>
#include <oar/core/tensor.h>

#include <cstring>
#include <memory>
#include <thread>
#include <utility>

#include "common.h"

namespace oar {
// Exported by liboar_core (declared in framework/src/internal.h): turns a plugin's OarError into
// oar::Error "plugin <name>: <what>: <message>" (the Python layer maps its code to an exception type).
void check_plugin_error(const std::string& plugin, const char* what, OarError* err);
}  // namespace oar

namespace oarpy {
namespace {

py::object attr_value(const oar::AttrValue& v) {
  if (auto p = std::get_if<int64_t>(&v)) return py::int_(*p);
  if (auto p = std::get_if<double>(&v)) return py::float_(*p);
  if (auto p = std::get_if<std::vector<int64_t>>(&v)) return py::cast(*p);
  if (auto p = std::get_if<std::vector<double>>(&v)) return py::cast(*p);
  return py::str(std::get<std::string>(v));
}

const char* attr_type_name(oar::AttrType t) {
  switch (t) {
    case oar::AttrType::kInt:
      return "int";
    case oar::AttrType::kFloat:
      return "float";
    case oar::AttrType::kInts:
      return "ints";
    case oar::AttrType::kFloats:
      return "floats";
    case oar::AttrType::kString:
      return "string";
  }
  return "?";
}

// The device (and so the plugin tables) of a tensor; the host's CPU is the cpu plugin's device like any other.
oar::Device& device_of_tensor(const oar::Tensor& t) { return oar::Runtime::get().device(t.place()); }

// Device address of a contiguous tensor's first element.
void* address(const oar::Tensor& t, const char* what) {
  if (!t.is_contiguous()) throw py::value_error(std::string(what) + ": expects a contiguous tensor");
  return static_cast<char*>(t.storage()->data()) + t.offset() * oar::dtype_size(t.dtype());
}

OarStream stream_handle(oar::Device& d, py::handle s) {
  if (s.is_none()) return d.stream();  // the device's current stream
  return s.cast<oar::Stream&>().handle();
}

// ---- collectives with in-process ranks ------------------------------------------------------------
struct RankResult {
  std::vector<float> out;
  std::string error;
};

void throw_if(const std::string& plugin, const char* what, OarError* err) {
  oar::check_plugin_error(plugin, what, err);
}

// Element count of collective `kind`'s result for `n` input elements on `nranks` ranks.
uint64_t recv_count(const std::string& kind, uint64_t n, int32_t nranks) {
  if (kind == "all_gather") return n * nranks;
  if (kind == "reduce_scatter" || kind == "all_to_all") {
    if (n % nranks) throw py::value_error("run_collective: count must divide by the number of ranks");
    return kind == "reduce_scatter" ? n / nranks : n;
  }
  if (kind != "all_reduce" && kind != "broadcast" && kind != "reduce" && kind != "send_recv")
    throw py::value_error("run_collective: unknown collective '" + kind + "'");
  return n;
}

// Frees a cleanup step's error: the first failure is the one reported.
void drop_error(OarError* e) {
  try {
    oar::check_plugin_error("", "", e);
  } catch (const std::exception&) {
  }
}

// One collective on one rank of an initialised communicator: copies `in` to device `dev`, runs `kind`
// (sums for the reductions; send_recv: a ring, send to rank + 1 and receive from rank - 1), waits for the
// stream and copies the result back (empty: no result, a non-root rank of reduce). Device buffers are
// freed on every path. `call`, when not empty, is what this rank calls instead of `kind` (ranks that
// disagree must get an error, not garbage): the buffers are sized for `kind`, recv for any kind.
std::vector<float> collective_on_rank(const oar::PluginTables& tb, const std::string& plugin, int32_t dev,
                                      OarComm comm, OarStream stream, const std::string& kind, int32_t nranks,
                                      int32_t rank, int32_t root, const std::vector<float>& in,
                                      const std::string& call = "") {
  const OarCollectiveTable& c = tb.collective;
  const OarMemLocation dloc{OAR_MEM_DEVICE, dev}, hloc{OAR_MEM_HOST, 0};
  const uint64_t n = in.size(), recv_n = recv_count(kind, n, nranks);
  struct Buffers {
    const oar::PluginTables& tb;
    int32_t dev;
    void *send = nullptr, *recv = nullptr;
    ~Buffers() {  // errors dropped: the collective's own failure is what matters
      if (send) drop_error(tb.memory.free(dev, OAR_MEM_DEVICE, send));
      if (recv) drop_error(tb.memory.free(dev, OAR_MEM_DEVICE, recv));
    }
  } b{tb, dev};
  throw_if(plugin, "allocate",
           tb.memory.allocate(dev, OAR_MEM_DEVICE, std::max<uint64_t>(n, 1) * 4, &b.send));
  throw_if(plugin, "allocate",
           tb.memory.allocate(dev, OAR_MEM_DEVICE, std::max<uint64_t>(n * nranks, 1) * 4, &b.recv));
  throw_if(plugin, "memcpy", tb.memory.memcpy(dev, b.send, dloc, in.data(), hloc, n * 4, nullptr));
  auto missing = [&](const char* what) {
    throw oar::Error(oar::ErrorCode::kUnimplemented, "plugin " + plugin + " has no " + what);
  };
  OarError* e = nullptr;
  const int32_t f32 = OAR_DTYPE_FLOAT32;
  void* result = b.recv;
  const std::string& my_kind = call.empty() ? kind : call;
  if (my_kind == "all_reduce") {
    if (!c.all_reduce) missing("all_reduce");
    e = c.all_reduce(b.send, b.recv, n, f32, OAR_REDUCE_SUM, comm, stream);
  } else if (my_kind == "broadcast") {
    if (!c.broadcast) missing("broadcast");
    e = c.broadcast(b.send, n, f32, root, comm, stream);
    result = b.send;  // the result is in the buffer broadcast wrote
  } else if (my_kind == "reduce") {
    if (!c.reduce) missing("reduce");
    e = c.reduce(b.send, b.recv, n, f32, OAR_REDUCE_SUM, root, comm, stream);
  } else if (my_kind == "all_gather") {
    if (!c.all_gather) missing("all_gather");
    e = c.all_gather(b.send, b.recv, n, f32, comm, stream);
  } else if (my_kind == "reduce_scatter") {
    if (!c.reduce_scatter) missing("reduce_scatter");
    e = c.reduce_scatter(b.send, b.recv, recv_n, f32, OAR_REDUCE_SUM, comm, stream);
  } else if (my_kind == "send_recv") {
    if (!c.send || !c.recv) missing("send/recv");
    if (nranks < 2) throw py::value_error("run_collective: send_recv needs two ranks");
    // Even ranks send first, odd ranks receive first: a plugin whose send blocks until the matching recv
    // starts (unbuffered) still completes the ring.
    auto send_next = [&] { return c.send(b.send, n, f32, (rank + 1) % nranks, comm, stream); };
    auto recv_prev = [&] { return c.recv(b.recv, n, f32, (rank + nranks - 1) % nranks, comm, stream); };
    e = rank % 2 == 0 ? send_next() : recv_prev();
    throw_if(plugin, rank % 2 == 0 ? "send" : "recv", e);
    e = rank % 2 == 0 ? recv_prev() : send_next();
  } else {
    if (!c.all_to_all) missing("all_to_all");
    e = c.all_to_all(b.send, b.recv, n / nranks, f32, comm, stream);
  }
  throw_if(plugin, my_kind.c_str(), e);
  if (stream)
    throw_if(plugin, "stream synchronize", tb.stream.synchronize(dev, stream));
  else if (tb.device.synchronize)
    throw_if(plugin, "device synchronize", tb.device.synchronize(dev));
  std::vector<float> out;
  if (kind != "reduce" || rank == root) {
    out.resize(recv_n);
    throw_if(plugin, "memcpy", tb.memory.memcpy(dev, out.data(), hloc, result, dloc, recv_n * 4, nullptr));
  }
  return out;
}

// Runs collective `kind` over len(inputs) ranks (threads); rank r uses device r % count of the type and
// its own stream. float32 only: the point is the plugin's data movement and reduction, not dtypes.
std::vector<py::array_t<float>> run_collective(
    const std::string& type, const std::string& kind,
    const std::vector<py::array_t<float, py::array::c_style | py::array::forcecast>>& inputs, int32_t root,
    const std::vector<std::string>& rank_kinds) {
  const oar::DeviceType* t = oar::Runtime::get().find_device_type(type);
  if (!t || !t->plugin || t->count < 1)
    throw py::value_error("unknown or unavailable device type '" + type + "'");
  const int32_t nranks = static_cast<int32_t>(inputs.size());
  if (nranks < 1) throw py::value_error("run_collective: needs at least one rank");
  if (!rank_kinds.empty() && static_cast<int32_t>(rank_kinds.size()) != nranks)
    throw py::value_error("run_collective: rank_kinds needs one kind per rank");
  for (const auto& k : rank_kinds)
    if (k != "all_reduce" && k != "all_gather" && k != "broadcast")  // buffers sized for any of these
      throw py::value_error("run_collective: rank_kinds may hold all_reduce, all_gather, broadcast, not '" + k +
                            "'");
  oar::Device& d0 = oar::Runtime::get().device(oar::Place{t->id, 0});
  const oar::PluginTables& tb = d0.tables();
  const std::string plugin = d0.plugin_name();
  const OarCollectiveTable& c = tb.collective;
  if (!c.get_unique_id || !c.comm_init || !c.comm_destroy)
    throw py::value_error("plugin " + plugin + " has no communicator functions");
  std::vector<std::vector<float>> host(nranks);
  for (int32_t r = 0; r < nranks; ++r) host[r].assign(inputs[r].data(), inputs[r].data() + inputs[r].size());
  const uint64_t n = host[0].size();
  for (const auto& h : host)
    if (h.size() != n) throw py::value_error("run_collective: every rank needs the same number of elements");
  recv_count(kind, n, nranks);  // validates kind and count before any thread starts
  OarCommUniqueId id{};
  {
    py::gil_scoped_release nogil;
    throw_if(plugin, "get_unique_id", c.get_unique_id(&id));
  }
  std::vector<RankResult> res(nranks);
  auto rank_body = [&](int32_t r) {
    const int32_t dev = r % t->count;
    OarStream stream = nullptr;
    OarComm comm = nullptr;
    try {
      oar::Runtime::get().device(oar::Place{t->id, dev});  // opens it
      if (tb.stream.create) throw_if(plugin, "stream create", tb.stream.create(dev, 0, &stream));
      throw_if(plugin, "comm_init", c.comm_init(dev, nranks, r, &id, &comm));
      res[r].out = collective_on_rank(tb, plugin, dev, comm, stream, kind, nranks, r, root, host[r],
                                      rank_kinds.empty() ? std::string() : rank_kinds[r]);
    } catch (const std::exception& ex) {
      res[r].error = ex.what();
      if (comm && c.abort) c.abort(comm);  // let the other ranks out of a rendezvous
    }
    // Cleanup errors are dropped (check_plugin_error frees them): the first failure is what matters.
    auto quietly = [&](const char* what, OarError* err) {
      try {
        oar::check_plugin_error(plugin, what, err);
      } catch (const std::exception&) {
      }
    };
    if (comm) quietly("comm_destroy", c.comm_destroy(comm));
    if (stream && tb.stream.destroy) quietly("stream destroy", tb.stream.destroy(dev, stream));
  };
  {
    py::gil_scoped_release nogil;
    std::vector<std::thread> threads;
    for (int32_t r = 0; r < nranks; ++r) threads.emplace_back(rank_body, r);
    for (auto& th : threads) th.join();
  }
  // Every failing rank's error: the one that failed first (say, on a mismatch) aborts the others, and
  // which of them reports first depends on timing.
  std::string errors;
  for (int32_t r = 0; r < nranks; ++r)
    if (!res[r].error.empty())
      errors += (errors.empty() ? "" : "; ") + ("rank " + std::to_string(r) + ": " + res[r].error);
  if (!errors.empty()) throw std::runtime_error(errors);
  std::vector<py::array_t<float>> out;
  for (int32_t r = 0; r < nranks; ++r) {
    py::array_t<float> a(static_cast<py::ssize_t>(res[r].out.size()));
    if (!res[r].out.empty()) std::memcpy(a.mutable_data(), res[r].out.data(), res[r].out.size() * 4);
    out.push_back(std::move(a));
  }
  return out;
}

// ---- one rank of a multi-process job --------------------------------------------------------------
// The communicator of this process's rank: the caller (a conformance child process) got the unique id
// from rank 0 through the store and runs collectives one at a time.
struct KitComm {
  const oar::PluginTables* tb = nullptr;
  std::string plugin;
  int32_t dev = 0, nranks = 0, rank = 0;
  OarStream stream = nullptr;
  OarComm comm = nullptr;

  KitComm(const std::string& type, int32_t local_device, int32_t nranks_, int32_t rank_,
          const std::string& id_bytes) {
    const oar::DeviceType* t = oar::Runtime::get().find_device_type(type);
    if (!t || !t->plugin || t->count < 1)
      throw py::value_error("unknown or unavailable device type '" + type + "'");
    if (local_device < 0 || local_device >= t->count)
      throw py::value_error("_KitComm: local device " + std::to_string(local_device) + " out of range (" +
                            type + " has " + std::to_string(t->count) + ")");
    if (nranks_ < 1 || rank_ < 0 || rank_ >= nranks_)
      throw py::value_error("_KitComm: rank " + std::to_string(rank_) + " of " + std::to_string(nranks_) +
                            " is out of range");
    OarCommUniqueId id{};
    if (id_bytes.size() != sizeof(id.bytes))
      throw py::value_error("_KitComm: the unique id must be " + std::to_string(sizeof(id.bytes)) +
                            " bytes (from _kit_get_unique_id), got " + std::to_string(id_bytes.size()));
    std::memcpy(id.bytes, id_bytes.data(), sizeof(id.bytes));
    oar::Device& d = oar::Runtime::get().device(oar::Place{t->id, local_device});  // opens it
    tb = &d.tables();
    plugin = d.plugin_name();
    dev = local_device, nranks = nranks_, rank = rank_;
    const OarCollectiveTable& c = tb->collective;
    if (!c.comm_init || !c.comm_destroy)
      throw py::value_error("plugin " + plugin + " has no communicator functions");
    py::gil_scoped_release nogil;  // comm_init waits for the other ranks
    if (tb->stream.create) throw_if(plugin, "stream create", tb->stream.create(dev, 0, &stream));
    try {
      throw_if(plugin, "comm_init", c.comm_init(dev, nranks, rank, &id, &comm));
    } catch (...) {
      release();
      throw;
    }
  }
  ~KitComm() { release(); }

  py::object run(const std::string& kind, py::array_t<float, py::array::c_style | py::array::forcecast> input,
                 int32_t root) {
    if (!comm) throw py::value_error("_KitComm: the communicator was destroyed");
    if (root < 0 || root >= nranks)
      throw py::value_error("_KitComm.run: root " + std::to_string(root) + " out of range");
    std::vector<float> in(input.data(), input.data() + input.size());
    recv_count(kind, in.size(), nranks);
    std::vector<float> out;
    {
      py::gil_scoped_release nogil;
      try {
        out = collective_on_rank(*tb, plugin, dev, comm, stream, kind, nranks, rank, root, in);
      } catch (...) {
        if (tb->collective.abort) drop_error(tb->collective.abort(comm));  // let the peers out
        throw;
      }
    }
    if (kind == "reduce" && rank != root) return py::none();
    py::array_t<float> a(static_cast<py::ssize_t>(out.size()));
    if (!out.empty()) std::memcpy(a.mutable_data(), out.data(), out.size() * 4);
    return std::move(a);
  }

  // Destroys the communicator and the stream; errors of comm_destroy are raised (once).
  void destroy() {
    OarComm c = std::exchange(comm, nullptr);
    OarError* e = nullptr;
    if (c) {
      py::gil_scoped_release nogil;
      e = tb->collective.comm_destroy(c);
    }
    release();
    throw_if(plugin, "comm_destroy", e);
  }

 private:
  void release() {
    if (comm) drop_error(tb->collective.comm_destroy(std::exchange(comm, nullptr)));
    if (stream && tb->stream.destroy) drop_error(tb->stream.destroy(dev, std::exchange(stream, nullptr)));
    stream = nullptr;
  }
};

}  // namespace

void init_plugin_kit(py::module_& m) {
  // {name, inputs, variadic, outputs, attrs: [(name, type, required, default)], dispatch_input,
  //  inplace_input, version} of one op definition (framework/src/op_defs.cc).
  m.def("_kit_op_schema", [](const std::string& name) {
    const oar::OpDef& def = oar::OpRegistry::get().at(name);
    py::dict d;
    d["name"] = std::string(def.name);
    d["version"] = def.version;
    d["inputs"] = std::vector<std::string>(def.inputs.begin(), def.inputs.end());
    d["variadic"] = def.variadic;
    d["outputs"] = std::vector<std::string>(def.outputs.begin(), def.outputs.end());
    py::list attrs;
    for (const auto& a : def.attrs)
      attrs.append(py::make_tuple(a.name, attr_type_name(a.type), a.required,
                                  a.required ? py::object(py::none()) : attr_value(a.default_value)));
    d["attrs"] = attrs;
    d["dispatch_input"] = def.dispatch_input;
    d["inplace_input"] = def.inplace_input;
    d["writes_inputs"] = def.inplace_input >= 0 || def.inplace_mask != 0;
    return d;
  });

  // The core's extra streams and events on a device: the classes of streams.cc (oar.device's too).
  m.attr("_KitStream") = m.attr("_Stream");
  m.attr("_KitEvent") = m.attr("_Event");

  // Raw memory-table calls on a chosen stream (None: the device's default stream), so stream-ordering
  // checks can put work on streams other than the default one. Tensors must be contiguous device tensors.
  m.def(
      "_kit_memset",
      [](py::handle dst, int32_t value, py::handle stream) {
        const oar::Tensor& t = tensor_of(dst).t;
        oar::Device& d = device_of_tensor(t);
        if (!d.tables().memory.memset) throw py::value_error("plugin " + d.plugin_name() + " has no memset");
        oar::check_plugin_error(
            d.plugin_name(), "memset",
            d.tables().memory.memset(t.place().index, address(t, "_kit_memset"), value,
                                     t.numel() * oar::dtype_size(t.dtype()), stream_handle(d, stream)));
      },
      py::arg("dst"), py::arg("value"), py::arg("stream") = py::none());
  m.def(
      "_kit_copy",
      [](py::handle dst, py::handle src, py::handle stream) {
        const oar::Tensor& a = tensor_of(dst).t;
        const oar::Tensor& b = tensor_of(src).t;
        oar::Device& d = device_of_tensor(a);
        if (b.place() != a.place()) throw py::value_error("_kit_copy: both tensors must be on one device");
        const int64_t bytes = a.numel() * oar::dtype_size(a.dtype());
        if (bytes != b.numel() * oar::dtype_size(b.dtype())) throw py::value_error("_kit_copy: sizes differ");
        const OarMemLocation loc{OAR_MEM_DEVICE, a.place().index};
        oar::check_plugin_error(
            d.plugin_name(), "memcpy",
            d.tables().memory.memcpy(a.place().index, address(a, "_kit_copy"), loc, address(b, "_kit_copy"),
                                     loc, bytes, stream_handle(d, stream)));
      },
      py::arg("dst"), py::arg("src"), py::arg("stream") = py::none());

  // Allocates `bytes` through the device's allocator (the one tensors use) and frees it again: the
  // out-of-memory check asks for more than the device has without touching host memory first.
  m.def(
      "_kit_allocate",
      [](py::handle place, uint64_t bytes) {
        oar::Device& d = oar::Runtime::get().device(to_place(place));
        void* p = d.allocator().allocate(bytes, d.stream());
        d.allocator().free(p);
      },
      py::arg("place"), py::arg("bytes"));
  // Names of the collective functions a device type's plugin implements (non-NULL entries).
  m.def("_kit_collectives_of", [](const std::string& type) {
    const oar::DeviceType* t = oar::Runtime::get().find_device_type(type);
    if (!t || !t->plugin || t->count < 1)
      throw py::value_error("unknown or unavailable device type '" + type + "'");
    const OarCollectiveTable& c = oar::Runtime::get().device(oar::Place{t->id, 0}).tables().collective;
    std::vector<std::string> out;
    if (c.get_unique_id && c.comm_init && c.comm_destroy) {
      if (c.all_reduce) out.push_back("all_reduce");
      if (c.broadcast) out.push_back("broadcast");
      if (c.reduce) out.push_back("reduce");
      if (c.all_gather) out.push_back("all_gather");
      if (c.reduce_scatter) out.push_back("reduce_scatter");
      if (c.all_to_all) out.push_back("all_to_all");
      if (c.send && c.recv) out.push_back("send_recv");
    }
    return out;
  });
  // {table: [function, ...]}: the functions of each table a device type's plugin implements (non-NULL), by
  // their field names in device_api.h. The suite skips, with the reason, what a plugin leaves out.
  m.def("_kit_functions_of", [](const std::string& type) {
    const oar::DeviceType* t = oar::Runtime::get().find_device_type(type);
    if (!t || !t->plugin || t->count < 1)
      throw py::value_error("unknown or unavailable device type '" + type + "'");
    const oar::PluginTables& tb = oar::Runtime::get().device(oar::Place{t->id, 0}).tables();
    py::dict out;
    auto add = [&](const char* table, std::initializer_list<std::pair<const char*, bool>> fns) {
      py::list names;
      for (const auto& [name, present] : fns)
        if (present) names.append(name);
      out[table] = names;
    };
    const auto& d = tb.device;
    add("device", {{"count", d.count != nullptr},
                   {"open", d.open != nullptr},
                   {"close", d.close != nullptr},
                   {"properties", d.properties != nullptr},
                   {"synchronize", d.synchronize != nullptr},
                   {"memory_info", d.memory_info != nullptr}});
    const auto& mt = tb.memory;
    add("memory", {{"allocate", mt.allocate != nullptr},
                   {"free", mt.free != nullptr},
                   {"memset", mt.memset != nullptr},
                   {"memcpy", mt.memcpy != nullptr}});
    const auto& s = tb.stream;
    add("stream", {{"create", s.create != nullptr},
                   {"destroy", s.destroy != nullptr},
                   {"synchronize", s.synchronize != nullptr},
                   {"query", s.query != nullptr},
                   {"wait_event", s.wait_event != nullptr},
                   {"launch_host_func", s.launch_host_func != nullptr},
                   {"begin_capture", s.begin_capture != nullptr},  // ABI 1.3: graph capture
                   {"end_capture", s.end_capture != nullptr},
                   {"graph_launch", s.graph_launch != nullptr},
                   {"graph_destroy", s.graph_destroy != nullptr}});
    const auto& e = tb.event;
    add("event", {{"create", e.create != nullptr},
                  {"destroy", e.destroy != nullptr},
                  {"record", e.record != nullptr},
                  {"synchronize", e.synchronize != nullptr},
                  {"query", e.query != nullptr},
                  {"elapsed_ms", e.elapsed_ms != nullptr}});
    const auto& p = tb.profiler;
    add("profiler",
        {{"start", p.start != nullptr}, {"stop", p.stop != nullptr}, {"flush", p.flush != nullptr}});
    return out;
  });
  // Profiling through the plugins' profiler tables: whether a device type's plugin has one, and
  // start / stop returning the trace events collected in between as (name, category, start_ns, end_ns,
  // device, stream_id) tuples.
  m.def("_kit_has_profiler", [](const std::string& type) {
    const oar::DeviceType* t = oar::Runtime::get().find_device_type(type);
    if (!t || !t->plugin || t->count < 1)
      throw py::value_error("unknown or unavailable device type '" + type + "'");
    const OarProfilerTable& p = oar::Runtime::get().device(oar::Place{t->id, 0}).tables().profiler;
    return p.start && p.stop && p.flush;
  });
  m.def("_kit_start_profiling", [] { oar::Runtime::get().start_profiling(); });
  m.def("_kit_stop_profiling", [] {
    py::list out;
    for (const auto& e : oar::Runtime::get().stop_profiling())
      out.append(py::make_tuple(e.name, e.category, e.start_ns, e.end_ns, e.device, e.stream_id));
    return out;
  });
  m.def("_kit_run_collective", &run_collective, py::arg("device_type"), py::arg("kind"), py::arg("inputs"),
        py::arg("root") = 0, py::arg("rank_kinds") = std::vector<std::string>{});
  // One rank of a multi-process job (collectives.two_processes): a unique id made by the plugin (bytes,
  // rank 0 publishes it through the store), and a communicator of this process running one collective
  // at a time on float32 numpy input (sums for reductions). Plugin errors raise, naming the plugin.
  m.def("_kit_get_unique_id", [](const std::string& type) {
    const oar::DeviceType* t = oar::Runtime::get().find_device_type(type);
    if (!t || !t->plugin || t->count < 1)
      throw py::value_error("unknown or unavailable device type '" + type + "'");
    oar::Device& d = oar::Runtime::get().device(oar::Place{t->id, 0});
    const OarCollectiveTable& c = d.tables().collective;
    if (!c.get_unique_id) throw py::value_error("plugin " + d.plugin_name() + " has no get_unique_id");
    OarCommUniqueId id{};
    throw_if(d.plugin_name(), "get_unique_id", c.get_unique_id(&id));
    return py::bytes(reinterpret_cast<const char*>(id.bytes), sizeof(id.bytes));
  });
  py::class_<KitComm>(m, "_KitComm")
      .def(py::init(
               [](const std::string& type, int32_t local_device, int32_t nranks, int32_t rank, py::bytes id) {
                 return std::make_unique<KitComm>(type, local_device, nranks, rank, id);
               }),
           py::arg("device_type"), py::arg("local_device"), py::arg("nranks"), py::arg("rank"),
           py::arg("unique_id"))
      .def("run", &KitComm::run, py::arg("kind"), py::arg("input"), py::arg("root") = 0)
      .def("destroy", &KitComm::destroy);
}

}  // namespace oarpy
