// oar._C._ProcessGroup: one communicator of a device plugin's collective table, bootstrapped through the
// core's TCPStore, running collectives in place on oar tensors (oar.distributed, docs/distributed.md).
#include <oar/core/runtime.h>
#include <oar/core/store.h>
#include <oar/core/tensor.h>

#include <cstring>
#include <memory>
#include <utility>

#include "common.h"

namespace oar {
// Exported by liboar_core (framework/src/internal.h): a plugin's OarError as oar::Error naming the plugin.
void check_plugin_error(const std::string& plugin, const char* what, OarError* err);
}  // namespace oar

namespace oarpy {
namespace {

// The communicator of this process's rank on (device type, local device). Rank 0 makes the unique id and
// publishes it under `key` in the store; the others read it. The store also becomes the plugin services'
// store (the cpu plugin's Gloo rendezvous goes through it).
class ProcessGroup {
 public:
  ProcessGroup(const std::string& type, int32_t local_device, int32_t world_size, int32_t rank,
               std::shared_ptr<oar::TCPStore> store, const std::string& key) {
    const oar::DeviceType* t = oar::Runtime::get().find_device_type(type);
    if (!t || !t->plugin || t->count < 1)
      throw py::value_error("ProcessGroup: unknown or unavailable device type '" + type + "'");
    if (local_device < 0 || local_device >= t->count)
      throw py::value_error("ProcessGroup: local device " + std::to_string(local_device) + " out of range (" +
                            type + " has " + std::to_string(t->count) + ")");
    if (world_size < 1 || rank < 0 || rank >= world_size)
      throw py::value_error("ProcessGroup: rank " + std::to_string(rank) + " of world size " +
                            std::to_string(world_size) + " is out of range");
    if (!store) throw py::value_error("ProcessGroup: needs a TCPStore");
    oar::Device& d = oar::Runtime::get().device(oar::Place{t->id, local_device});
    device_ = &d;
    place_ = d.place();
    plugin_ = d.plugin_name();
    world_size_ = world_size, rank_ = rank;
    const OarCollectiveTable& c = d.tables().collective;
    if (!c.get_unique_id || !c.comm_init || !c.comm_destroy)
      throw py::value_error("ProcessGroup: plugin " + plugin_ + " (device type '" + type +
                            "') has no communicator functions");
    oar::set_global_store(store);
    py::gil_scoped_release nogil;  // the store and comm_init wait for the other ranks
    OarCommUniqueId id{};
    if (rank == 0) {
      oar::check_plugin_error(plugin_, "get_unique_id", c.get_unique_id(&id));
      store->set(key, std::string(reinterpret_cast<const char*>(id.bytes), sizeof(id.bytes)));
    } else {
      const std::string v = store->get(key);
      if (v.size() != sizeof(id.bytes))
        throw std::runtime_error("ProcessGroup: the unique id under store key '" + key + "' has " +
                                 std::to_string(v.size()) + " bytes, expected " +
                                 std::to_string(sizeof(id.bytes)));
      std::memcpy(id.bytes, v.data(), sizeof(id.bytes));
    }
    oar::check_plugin_error(plugin_, "comm_init", c.comm_init(local_device, world_size, rank, &id, &comm_));
  }
  ~ProcessGroup() {
    if (comm_) drop(table().comm_destroy(std::exchange(comm_, nullptr)));
  }

  void all_reduce(py::handle tensor, int32_t op) {
    if (op < OAR_REDUCE_SUM || op > OAR_REDUCE_AVG)
      throw py::value_error("all_reduce: unknown reduce op " + std::to_string(op));
    const oar::Tensor& t = checked(tensor, "all_reduce", "tensor");
    written(t);
    void* p = address(t);
    auto f = need(table().all_reduce, "all_reduce");
    call("all_reduce", [&] { return f(p, p, t.numel(), abi(t), op, comm_, device_->stream()); });
  }

  void broadcast(py::handle tensor, int32_t src) {
    root_ok(src, "broadcast", "src");
    const oar::Tensor& t = checked(tensor, "broadcast", "tensor");
    written(t);
    void* p = address(t);
    auto f = need(table().broadcast, "broadcast");
    call("broadcast", [&] { return f(p, t.numel(), abi(t), src, comm_, device_->stream()); });
  }

  // `out` holds world_size blocks of `in`'s size, rank r's in block r.
  void all_gather(py::handle out, py::handle in) {
    const oar::Tensor& o = checked(out, "all_gather", "out");
    const oar::Tensor& i = checked(in, "all_gather", "tensor");
    if (o.dtype() != i.dtype()) throw py::value_error("all_gather: out and tensor have different dtypes");
    if (o.numel() != i.numel() * world_size_)
      throw py::value_error("all_gather: out has " + std::to_string(o.numel()) + " elements, expected " +
                            std::to_string(i.numel() * world_size_) + " (world size x tensor's)");
    written(o);
    void *op = address(o), *ip = address(i);
    auto f = need(table().all_gather, "all_gather");
    call("all_gather", [&] { return f(ip, op, i.numel(), abi(i), comm_, device_->stream()); });
  }

  // `out` gets this rank's block of the reduction of `in` (world_size blocks of out's size).
  void reduce_scatter(py::handle out, py::handle in, int32_t op) {
    if (op < OAR_REDUCE_SUM || op > OAR_REDUCE_AVG)
      throw py::value_error("reduce_scatter: unknown reduce op " + std::to_string(op));
    const oar::Tensor& o = checked(out, "reduce_scatter", "out");
    const oar::Tensor& i = checked(in, "reduce_scatter", "tensor");
    if (o.dtype() != i.dtype()) throw py::value_error("reduce_scatter: out and tensor have different dtypes");
    if (i.numel() != o.numel() * world_size_)
      throw py::value_error("reduce_scatter: tensor has " + std::to_string(i.numel()) +
                            " elements, expected " + std::to_string(o.numel() * world_size_) +
                            " (world size x out's)");
    written(o);
    void *op_ = address(o), *ip = address(i);
    auto f = need(table().reduce_scatter, "reduce_scatter");
    call("reduce_scatter", [&] { return f(ip, op_, o.numel(), abi(i), op, comm_, device_->stream()); });
  }

  // Waits for this rank's queued collectives (and everything else on the current stream).
  void synchronize() {
    ensure_open("synchronize");
    py::gil_scoped_release nogil;
    device_->synchronize_stream();
  }

  void destroy() {
    OarComm c = std::exchange(comm_, nullptr);
    if (!c) return;
    OarError* e = nullptr;
    {
      py::gil_scoped_release nogil;
      e = table().comm_destroy(c);
    }
    oar::check_plugin_error(plugin_, "comm_destroy", e);
  }

  int32_t rank() const { return rank_; }
  int32_t world_size() const { return world_size_; }
  const std::string& plugin() const { return plugin_; }
  py::object place() const { return place_object(place_); }

 private:
  const OarCollectiveTable& table() const { return device_->tables().collective; }

  static void drop(OarError* e) {
    try {
      oar::check_plugin_error("", "", e);
    } catch (const std::exception&) {
    }
  }

  void ensure_open(const char* what) const {
    if (!comm_) throw py::value_error(std::string(what) + ": the process group was destroyed");
  }

  void root_ok(int32_t root, const char* what, const char* arg) const {
    if (root < 0 || root >= world_size_)
      throw py::value_error(std::string(what) + ": " + arg + "=" + std::to_string(root) +
                            " is out of range for world size " + std::to_string(world_size_));
  }

  template <class F>
  F need(F f, const char* what) const {
    if (!f)
      throw oar::Error(oar::ErrorCode::kUnimplemented,
                       "plugin " + plugin_ + " has no " + what + " collective");
    return f;
  }

  // The tensor behind `h`, refused unless it is a contiguous oar tensor on this group's device.
  const oar::Tensor& checked(py::handle h, const char* what, const char* arg) const {
    ensure_open(what);
    if (!is_tensor(h))
      throw py::type_error(std::string(what) + ": " + arg + " must be an oar Tensor, got " +
                           std::string(py::str(py::type::of(h).attr("__name__"))));
    const oar::Tensor& t = tensor_of(h).t;
    if (t.place() != place_)
      throw py::value_error(std::string(what) + ": " + arg + " is on " + t.place().to_string() +
                            " but the process group's device is " + place_.to_string() +
                            " (backend of plugin " + plugin_ + ")");
    if (!t.is_contiguous()) throw py::value_error(std::string(what) + ": " + arg + " must be contiguous");
    return t;
  }

  static void* address(const oar::Tensor& t) {
    if (t.numel() == 0) return nullptr;
    return static_cast<char*>(t.storage()->data()) + t.offset() * oar::dtype_size(t.dtype());
  }
  // An in-place write: autograd's saved-tensor check must see it.
  static void written(const oar::Tensor& t) { t.storage()->bump_version(); }
  static int32_t abi(const oar::Tensor& t) { return static_cast<int32_t>(t.dtype()); }

  // Enqueues one collective on the current stream without the GIL; a failure aborts the communicator
  // (so the peers are let out) and raises naming the plugin and the collective.
  template <class F>
  void call(const char* what, F&& f) {
    OarError* e = nullptr;
    {
      py::gil_scoped_release nogil;
      e = f();
    }
    if (e) {
      if (table().abort) drop(table().abort(comm_));
      oar::check_plugin_error(plugin_, what, e);
    }
  }

  oar::Device* device_ = nullptr;
  oar::Place place_{};
  std::string plugin_;
  int32_t world_size_ = 0, rank_ = 0;
  OarComm comm_ = nullptr;
};

}  // namespace

void init_distributed(py::module_& m) {
  py::class_<ProcessGroup>(m, "_ProcessGroup")
      .def(py::init<const std::string&, int32_t, int32_t, int32_t, std::shared_ptr<oar::TCPStore>,
                    const std::string&>(),
           py::arg("device_type"), py::arg("local_device"), py::arg("world_size"), py::arg("rank"),
           py::arg("store"), py::arg("key"))
      .def("all_reduce", &ProcessGroup::all_reduce, py::arg("tensor"), py::arg("op"))
      .def("broadcast", &ProcessGroup::broadcast, py::arg("tensor"), py::arg("src"))
      .def("all_gather", &ProcessGroup::all_gather, py::arg("out"), py::arg("tensor"))
      .def("reduce_scatter", &ProcessGroup::reduce_scatter, py::arg("out"), py::arg("tensor"), py::arg("op"))
      .def("synchronize", &ProcessGroup::synchronize)
      .def("destroy", &ProcessGroup::destroy)
      .def_property_readonly("rank", &ProcessGroup::rank)
      .def_property_readonly("world_size", &ProcessGroup::world_size)
      .def_property_readonly("plugin", &ProcessGroup::plugin)
      .def_property_readonly("place", &ProcessGroup::place);
}

}  // namespace oarpy
