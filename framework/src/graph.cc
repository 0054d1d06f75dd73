// Device graph capture: oar/core/graph.h; docs/device_graph.md.
#include <glog/logging.h>
#include <oar/core/error.h>
#include <oar/core/graph.h>
#include <oar/core/op.h>
#include <oar/core/runtime.h>
#include <oar/core/tensor.h>

#include <cstring>

#include "internal.h"

namespace oar {

std::atomic<int32_t> g_graph_captures{0};

namespace {

const OarStreamTable& capture_table(Device& d) {
  const OarStreamTable& t = d.tables().stream;
  OAR_ENFORCE(t.begin_capture && t.end_capture && t.graph_launch && t.graph_destroy,
              ErrorCode::kUnimplemented,
              d.name() << ": the " << d.plugin_name()
                       << " plugin does not implement graph capture (ABI 1.3 OarStreamTable.begin_capture, "
                          "end_capture, graph_launch, graph_destroy)");
  return t;
}

// The device of `place` when it is capturing, else nullptr (the CPU never captures).
DeviceGraph* graph_on(Place place) {
  if (place.is_cpu()) return nullptr;
  return Runtime::get().device(place).capture_graph();
}

}  // namespace

DeviceGraph::DeviceGraph(Place place) : place_(place), device_(nullptr) {
  OAR_ENFORCE(
      !place.is_cpu(), ErrorCode::kUnimplemented,
      "cpu has no graph capture: its kernels run synchronously on the calling thread, so there is "
      "no stream whose work could be recorded (use a device whose plugin implements ABI 1.3 capture)");
  device_ = &Runtime::get().device(place);
  capture_table(*device_);
}

DeviceGraph::~DeviceGraph() {
  if (capturing_) capture_abort();
  try {
    reset();
  } catch (const std::exception& e) {
    LOG(WARNING) << place_.to_string() << ": releasing a device graph failed: " << e.what();
  }
}

DeviceGraph* DeviceGraph::capturing_on(const Device& device) { return device.capture_graph(); }

void DeviceGraph::capture_begin() {
  const OarStreamTable& t = capture_table(*device_);
  OAR_ENFORCE(!capturing_, ErrorCode::kPrecondition,
              place_.to_string() << ": capture_begin: this graph is already capturing");
  OAR_ENFORCE(graph_ == nullptr, ErrorCode::kPrecondition,
              place_.to_string() << ": capture_begin: this graph already holds a capture; reset() it first");
  OarStream s = device_->stream();
  OAR_ENFORCE(s != nullptr, ErrorCode::kPrecondition,
              place_.to_string() << ": capture_begin: the device's current stream is the synchronous (NULL) "
                                    "stream, which cannot be captured");
  DeviceGraph* expected = nullptr;
  OAR_ENFORCE(
      device_->capture_graph_.compare_exchange_strong(expected, this), ErrorCode::kPrecondition,
      place_.to_string() << ": capture_begin: another graph is capturing this device (one at a time)");
  // Work queued before the capture must not be waited for during it (a free of device memory waits for
  // the device); it is also not part of the graph.
  try {
    device_->synchronize();
    check_plugin_error(device_->plugin_name(), "begin_capture", t.begin_capture(place_.index, s));
  } catch (...) {
    device_->capture_graph_.store(nullptr, std::memory_order_release);
    throw;
  }
  stream_ = s;
  if (!pool_) pool_ = device_->new_graph_pool();
  device_->capture_pool_.store(pool_, std::memory_order_release);
  capturing_ = true;
  g_graph_captures.fetch_add(1, std::memory_order_relaxed);
}

void DeviceGraph::capture_end() {
  OAR_ENFORCE(capturing_, ErrorCode::kPrecondition,
              place_.to_string() << ": capture_end: this graph is not capturing (capture_begin first)");
  device_->capture_pool_.store(nullptr, std::memory_order_release);
  capturing_ = false;
  g_graph_captures.fetch_sub(1, std::memory_order_relaxed);
  device_->capture_graph_.store(nullptr, std::memory_order_release);
  OarGraph g = nullptr;
  check_plugin_error(device_->plugin_name(), "end_capture",
                     device_->tables().stream.end_capture(place_.index, stream_, &g));
  OAR_ENFORCE(
      g != nullptr, ErrorCode::kInternal,
      place_.to_string() << ": the " << device_->plugin_name() << " plugin's end_capture returned no graph");
  graph_ = g;
}

void DeviceGraph::capture_abort() noexcept {
  if (!capturing_) return;
  try {
    capture_end();
    std::lock_guard<std::mutex> lock(mu_);
    kept_.clear();
  } catch (const std::exception& e) {
    LOG(WARNING) << place_.to_string() << ": ending a failed capture: " << e.what();
  }
  if (graph_) {
    OarError* e = device_->tables().stream.graph_destroy(place_.index, graph_);
    if (e) {
      try {
        check_plugin_error(device_->plugin_name(), "graph_destroy", e);
      } catch (const std::exception& x) {
        LOG(WARNING) << x.what();
      }
    }
    graph_ = nullptr;
  }
}

void DeviceGraph::replay() {
  OAR_ENFORCE(graph_ != nullptr, ErrorCode::kPrecondition,
              place_.to_string() << ": replay: "
                                 << (capturing_ ? "the graph is still capturing (capture_end first)"
                                                : "nothing captured (capture_begin / capture_end first, or "
                                                  "the graph was reset)"));
  check_plugin_error(device_->plugin_name(), "graph_launch",
                     device_->tables().stream.graph_launch(place_.index, graph_, device_->stream()));
}

void DeviceGraph::reset() {
  OAR_ENFORCE(!capturing_, ErrorCode::kPrecondition,
              place_.to_string() << ": reset: the graph is capturing (capture_end first)");
  if (graph_) {
    OarGraph g = std::exchange(graph_, nullptr);
    check_plugin_error(device_->plugin_name(), "graph_destroy",
                       device_->tables().stream.graph_destroy(place_.index, g));
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    kept_.clear();
  }
  if (pool_) std::exchange(pool_, nullptr)->release();  // freed now, or when its last tensor dies
}

AllocatorStats DeviceGraph::pool_stats() const { return pool_ ? pool_->alloc.stats() : AllocatorStats{}; }

size_t DeviceGraph::num_kept() const {
  std::lock_guard<std::mutex> lock(mu_);
  return kept_.size();
}

void DeviceGraph::keep(const std::shared_ptr<Storage>& s) {
  if (!s || s->graph_pool() == pool_) return;
  std::lock_guard<std::mutex> lock(mu_);
  if (kept_.empty() || kept_.back() != s) kept_.push_back(s);
}

void DeviceGraph::check_op(const OpDef& op, const Tensor* inputs, int32_t n_in, Place place) {
  DeviceGraph* g = graph_on(place);
  if (!g) return;
  for (const AttrDef& a : op.attrs)
    OAR_ENFORCE(std::strcmp(a.name, "seed") != 0, ErrorCode::kPrecondition,
                op.name << ": a random op cannot be captured into a graph on " << place.to_string()
                        << " (its seed would be fixed at capture, so every replay would draw the same "
                           "numbers); draw it before capture_begin");
  for (int32_t i = 0; i < n_in; ++i)
    if (inputs[i].defined() && inputs[i].impl()->storage) g->keep(inputs[i].storage());
}

void DeviceGraph::check_fallback(const OpDef& op, Place place, const std::string& why) {
  OAR_ENFORCE(graph_on(place) == nullptr, ErrorCode::kPrecondition,
              op.name << ": " << why << ", and the CPU fallback cannot be captured into a graph on "
                      << place.to_string()
                      << " (it copies through the host, which a capture cannot wait for)");
}

void DeviceGraph::check_copy(Place dst, Place src) {
  if (src.is_cpu() || dst.is_cpu()) {
    const Place dev = src.is_cpu() ? dst : src;
    OAR_ENFORCE(
        graph_on(dev) == nullptr, ErrorCode::kPrecondition,
        (src.is_cpu() ? "a copy from the host to "
                      : "a copy to the host (numpy(), item(), printing) of a tensor on ")
            << dev.to_string() << " while it captures a graph: "
            << (src.is_cpu() ? "its bytes would be fixed in every replay; create the tensor on the device "
                               "before capture_begin and copy into it outside the capture"
                             : "the value does not exist before the graph is replayed; read it after "
                               "capture_end and replay()"));
    return;
  }
  if (src == dst) return;  // one device: a captured device-to-device copy
  OAR_ENFORCE(graph_on(src) == nullptr && graph_on(dst) == nullptr, ErrorCode::kPrecondition,
              "a copy between " << src.to_string() << " and " << dst.to_string()
                                << " while one of them captures a graph (it goes through the host)");
}

}  // namespace oar
