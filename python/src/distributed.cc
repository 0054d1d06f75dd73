// oar._C._ProcessGroup: one communicator of a device plugin's collective table, bootstrapped through the
// core's TCPStore, running collectives in place on oar tensors (oar.distributed, docs/distributed.md).
#include <oar/core/runtime.h>
#include <oar/core/store.h>
#include <oar/core/tensor.h>

#include <cstring>
#include <memory>
#include <tuple>
#include <utility>
#include <vector>

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

  // `tensor` is reduced into rank `root`'s `tensor`; the other ranks' tensors are left as they were.
  void reduce(py::handle tensor, int32_t op, int32_t root) {
    if (op < OAR_REDUCE_SUM || op > OAR_REDUCE_AVG)
      throw py::value_error("reduce: unknown reduce op " + std::to_string(op));
    root_ok(root, "reduce", "dst");
    const oar::Tensor& t = checked(tensor, "reduce", "tensor");
    if (rank_ == root) written(t);
    void* p = address(t);
    auto f = need(table().reduce, "reduce");
    call("reduce", [&] { return f(p, p, t.numel(), abi(t), op, root, comm_, device_->stream()); });
  }

  // `in` holds world_size blocks, block r for rank r; `out` gets block `rank` of every rank, in rank order.
  void all_to_all(py::handle out, py::handle in) {
    const oar::Tensor& o = checked(out, "alltoall", "out");
    const oar::Tensor& i = checked(in, "alltoall", "in");
    if (o.dtype() != i.dtype()) throw py::value_error("alltoall: out and in have different dtypes");
    if (o.numel() != i.numel() || i.numel() % world_size_ != 0)
      throw py::value_error("alltoall: in and out must have the same number of elements, a multiple of the " +
                            std::string("world size ") + std::to_string(world_size_) + " (in has " +
                            std::to_string(i.numel()) + ", out " + std::to_string(o.numel()) + ")");
    written(o);
    void *op = address(o), *ip = address(i);
    const uint64_t per_rank = i.numel() / world_size_;
    auto f = need(table().all_to_all, "all_to_all");
    call("alltoall", [&] { return f(ip, op, per_rank, abi(i), comm_, device_->stream()); });
  }

  // Point-to-point messages, each (is_send, tensor, peer), posted together between group_start and group_end
  // so their order on either side cannot deadlock (send, recv, scatter, batch_isend_irecv).
  void p2p(const std::vector<std::tuple<bool, py::handle, int32_t>>& ops, const char* what) {
    auto s = need(table().send, "send");
    auto r = need(table().recv, "recv");
    struct Op {
      bool is_send;
      void* p;
      uint64_t n;
      int32_t dtype, peer;
    };
    std::vector<Op> todo;
    for (const auto& [is_send, h, peer] : ops) {
      if (peer < 0 || peer >= world_size_ || peer == rank_)
        throw py::value_error(std::string(what) + ": peer " + std::to_string(peer) +
                              " is not another rank of " + std::to_string(world_size_) + " (this is rank " +
                              std::to_string(rank_) + ")");
      const oar::Tensor& t = checked(h, what, "tensor");
      if (!is_send) written(t);
      todo.push_back({is_send, address(t), static_cast<uint64_t>(t.numel()), abi(t), peer});
    }
    const OarCollectiveTable& c = table();
    const bool grouped = todo.size() > 1 && c.group_start && c.group_end;
    call(what, [&]() -> OarError* {
      if (grouped)
        if (OarError* e = c.group_start()) return e;
      OarError* first = nullptr;
      for (const Op& op : todo) {
        first = op.is_send ? s(op.p, op.n, op.dtype, op.peer, comm_, device_->stream())
                           : r(op.p, op.n, op.dtype, op.peer, comm_, device_->stream());
        if (first) break;
      }
      if (grouped) {  // always closed, so this thread's next calls are not swallowed by a dangling group
        OarError* e = c.group_end();
        if (!first) return e;
        drop(e);
      }
      return first;
    });
  }

  // Refuses what a collective would refuse (not a contiguous tensor of this group's device), before the
  // ranks' calls are compared.
  void check(py::handle tensor, const char* what, const char* arg) const { checked(tensor, what, arg); }

  bool has(const std::string& name) const {
    const OarCollectiveTable& c = table();
    if (name == "send" || name == "recv") return c.send && c.recv;
    if (name == "reduce") return c.reduce;
    if (name == "all_to_all") return c.all_to_all;
    throw py::value_error("ProcessGroup.has: unknown call '" + name + "'");
  }

  // Waits for this rank's queued collectives (and everything else on the current stream). A collective
  // that failed on the stream raises here, naming the plugin, the collective and the peer; the
  // communicator is aborted first so the other ranks fail instead of waiting for this one.
  void synchronize() {
    ensure_open("synchronize");
    try {
      py::gil_scoped_release nogil;
      device_->synchronize_stream();
    } catch (...) {
      if (table().abort) drop(table().abort(comm_));
      throw;
    }
  }

  // Marks the communicator failed and wakes this rank's waits in it (the peers then fail too).
  void abort() {
    if (comm_ && table().abort) oar::check_plugin_error(plugin_, "abort", table().abort(comm_));
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
    if (!t.is_contiguous())
      throw py::value_error(std::string(what) + ": " + arg +
                            " must be contiguous (call .contiguous() first)");
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
      .def("reduce", &ProcessGroup::reduce, py::arg("tensor"), py::arg("op"), py::arg("root"))
      .def("all_to_all", &ProcessGroup::all_to_all, py::arg("out"), py::arg("in"))
      .def(
          "p2p",
          [](ProcessGroup& g, const std::vector<std::tuple<bool, py::handle, int32_t>>& ops,
             const std::string& what) { g.p2p(ops, what.c_str()); },
          py::arg("ops"), py::arg("what"))
      .def("has", &ProcessGroup::has, py::arg("call"))
      .def(
          "check",
          [](const ProcessGroup& g, py::handle t, const std::string& what, const std::string& arg) {
            g.check(t, what.c_str(), arg.c_str());
          },
          py::arg("tensor"), py::arg("what"), py::arg("arg"))
      .def("abort", &ProcessGroup::abort)
      .def("synchronize", &ProcessGroup::synchronize)
      .def("destroy", &ProcessGroup::destroy)
      .def_property_readonly("rank", &ProcessGroup::rank)
      .def_property_readonly("world_size", &ProcessGroup::world_size)
      .def_property_readonly("plugin", &ProcessGroup::plugin)
      .def_property_readonly("place", &ProcessGroup::place);
}

}  // namespace oarpy
