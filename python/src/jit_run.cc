// to_static training runs without Python in the step (oar/jit/api.py, ConcreteProgram.run):
// the forward executor runs with autograd off, one autograd node stands for the whole program, and its
// backward feeds the output gradients to the backward executor and hands the fetched gradients to the
// node's inputs (parameters, then the differentiable inputs). Paddle's run_program op does the same.
// The Python form (a PyLayer node with a Python backward) cost ~40 us per step on a 16-layer MLP:
// wrapping and unwrapping one Python Tensor per gradient, the closure, the feeds dict.
#include <oar/core/autograd.h>
#include <oar/core/graph.h>
#include <oar/core/ops.h>
#include <oar/core/runtime.h>
#include <oar/ir/executor.h>

#include <atomic>
#include <memory>

#include "common.h"

namespace oarpy {
namespace {

using oar::ir::Executor;

// A Python object released with the GIL held (nodes may die on any thread, or after the interpreter).
struct PyRef {
  py::object o;
  explicit PyRef(py::object x) : o(std::move(x)) {}
  ~PyRef() {
    if (!Py_IsInitialized()) {
      o.release();
      return;
    }
    py::gil_scoped_acquire gil;
    o = py::object();
  }
};

// Forward runs whose backward has not run yet: a second forward before the first one's backward must
// not reuse the scope the first one's backward still reads (api.py replays under autograd then).
struct RunCounter {
  std::atomic<int> pending{0};
};

// One executor's run captured into a device graph on its first call and replayed on every later one
// (wrap_cuda_graph; docs/device_graph.md). The feeds are copied into the graph's own input buffers (made
// before the capture, so they are no graph memory) and the fetches are copied out of its output buffers,
// so a result the caller keeps is never overwritten by the next replay. Paddle hands out the graph's
// buffers themselves; a copy per output is cheap next to a launch, and no answer goes silently stale.
class GraphedRun {
 public:
  std::vector<oar::Tensor> run(Executor& exe, const std::vector<std::string>& names,
                               const std::vector<oar::Tensor>& feeds) {
    OAR_ENFORCE(names.size() == feeds.size(), oar::ErrorCode::kInvalidArgument,
                "graphed run: expected " << names.size() << " feeds, got " << feeds.size());
    const oar::Place place = exe.place();
    if (!graph_) {
      capture(exe, names, feeds, place);
    } else {
      for (size_t i = 0; i < feeds.size(); ++i) {
        const oar::Tensor& f = feeds[i];
        OAR_ENFORCE(
            f.dims() == in_[i].dims() && f.dtype() == in_[i].dtype(), oar::ErrorCode::kInvalidArgument,
            "graphed run: feed '" << names[i] << "' is " << oar::dtype_name(f.dtype()) << " "
                                  << f.dims().to_string() << ", the graph was captured for "
                                  << oar::dtype_name(in_[i].dtype()) << " " << in_[i].dims().to_string());
        copy_into(in_[i], f);
      }
    }
    graph_->replay();
    std::vector<oar::Tensor> outs(out_.size());
    for (size_t i = 0; i < out_.size(); ++i) {
      if (!out_[i].defined()) continue;
      outs[i] = oar::Tensor::empty(out_[i].dims(), out_[i].dtype(), place, "graphed run");
      copy_into(outs[i], out_[i]);
    }
    return outs;
  }
  bool captured() const { return graph_ != nullptr; }
  const oar::DeviceGraph* graph() const { return graph_.get(); }

 private:
  static void copy_into(const oar::Tensor& dst, const oar::Tensor& src) {
    const oar::Tensor c = src.contiguous();
    const size_t bytes = static_cast<size_t>(c.numel()) * oar::dtype_size(c.dtype());
    oar::Runtime::get().copy_bytes(dst.data_ptr(), dst.place(), c.data_ptr(), c.place(), bytes);
  }
  void capture(Executor& exe, const std::vector<std::string>& names, const std::vector<oar::Tensor>& feeds,
               oar::Place place) {
    auto graph = std::make_unique<oar::DeviceGraph>(place);  // refuses the CPU and plugins without capture
    in_.clear();
    std::map<std::string, oar::Tensor> fm;
    for (size_t i = 0; i < feeds.size(); ++i) {
      oar::Tensor t = oar::Tensor::empty(feeds[i].dims(), feeds[i].dtype(), place, "graphed run");
      copy_into(t, feeds[i]);
      in_.push_back(t);
      fm.emplace(names[i], t);
    }
    graph->capture_begin();
    try {
      oar::NoGradGuard no_grad;
      out_ = exe.run(fm);
      for (size_t i = 0; i < out_.size(); ++i)
        OAR_ENFORCE(!out_[i].defined() || out_[i].place() == place, oar::ErrorCode::kPrecondition,
                    "graphed run: fetch '" << exe.fetch_names()[i] << "' is on "
                                           << out_[i].place().to_string() << ", not on the captured device "
                                           << place.to_string()
                                           << ": it would be computed once, at capture, and never replayed");
      graph->capture_end();
    } catch (...) {
      graph->capture_abort();
      out_.clear();
      throw;
    }
    graph_ = std::move(graph);
  }
  std::unique_ptr<oar::DeviceGraph> graph_;
  std::vector<oar::Tensor> in_, out_;  // the graph's input and output buffers
};

// Everything a run needs, fixed when the training form is built.
struct TrainingRun {
  std::shared_ptr<PyRef> fexe_ref, bexe_ref;  // keep the executors alive while nodes use them
  Executor* fexe = nullptr;
  Executor* bexe = nullptr;
  std::vector<std::string> feed_names, seed_names;
  std::vector<int> diff_out;  // per seed: which fetch of the forward it is the gradient of
  std::vector<int> grad_pos;  // per node input: index into the backward's fetches, -1 for none
  std::shared_ptr<RunCounter> counter = std::make_shared<RunCounter>();
  // wrap_cuda_graph: the forward and the backward run through device graphs (null: plain runs).
  std::unique_ptr<GraphedRun> fgraph, bgraph;
  std::vector<void*> captured_inputs;  // the node inputs' addresses the graphs read (checked every run)
};

class RunProgramNode final : public oar::GradNode {
 public:
  RunProgramNode(std::shared_ptr<TrainingRun> run, std::vector<oar::TensorMeta> seed_meta,
                 std::vector<oar::Place> seed_place)
      : run_(std::move(run)), seed_meta_(std::move(seed_meta)), seed_place_(std::move(seed_place)) {
    run_->counter->pending.fetch_add(1);
  }
  ~RunProgramNode() override { done(); }
  std::string name() const override { return "run_program_backward"; }
  void release() override {
    released_ = true;
    done();
  }
  std::vector<oar::Tensor> apply(std::vector<oar::Tensor>&& grads) override {
    OAR_ENFORCE(
        !released_, oar::ErrorCode::kPrecondition,
        "run_program_backward: trying to run backward through the graph a second time (it was freed); "
        "pass retain_graph=True to the first backward");
    std::map<std::string, oar::Tensor> feeds;
    std::vector<oar::Tensor> seeds;
    for (size_t s = 0; s < run_->seed_names.size(); ++s) {
      const size_t i = static_cast<size_t>(run_->diff_out[s]);
      oar::Tensor g = i < grads.size() ? grads[i] : oar::Tensor();
      if (!g.defined()) g = oar::ops::zeros(seed_meta_[s].dims, seed_meta_[s].dtype, seed_place_[s]);
      seeds.push_back(g);
      feeds.emplace(run_->seed_names[s], std::move(g));
    }
    std::vector<oar::Tensor> got =
        run_->bgraph ? run_->bgraph->run(*run_->bexe, run_->seed_names, seeds) : run_->bexe->run(feeds);
    done();  // the scope's forward values are consumed: another forward may run
    std::vector<oar::Tensor> out(run_->grad_pos.size());
    for (size_t j = 0; j < out.size(); ++j)
      if (run_->grad_pos[j] >= 0 && next[j].valid()) out[j] = got[static_cast<size_t>(run_->grad_pos[j])];
    return out;
  }

 private:
  void done() {
    if (!done_) {
      done_ = true;
      run_->counter->pending.fetch_sub(1);
    }
  }
  std::shared_ptr<TrainingRun> run_;
  std::vector<oar::TensorMeta> seed_meta_;
  std::vector<oar::Place> seed_place_;
  bool done_ = false, released_ = false;
};

std::vector<oar::Tensor> tensors_of(py::handle list, const char* what) {
  std::vector<oar::Tensor> out;
  for (auto h : list) {
    OAR_ENFORCE(is_tensor(h), oar::ErrorCode::kType, "_TrainingRun.run: " << what << " must be Tensors");
    out.push_back(tensor_of(h).t);
  }
  return out;
}

}  // namespace

void init_jit_run(py::module_& m) {
  // wrap_cuda_graph without gradients: one executor's runs through a device graph.
  py::class_<GraphedRun, std::shared_ptr<GraphedRun>>(
      m, "_GraphedRun", "An executor run captured once, replayed after; private")
      .def(py::init([]() { return std::make_shared<GraphedRun>(); }))
      .def_property_readonly("captured", &GraphedRun::captured)
      .def("run", [](GraphedRun& g, Executor& exe, py::handle feeds) {
        std::vector<oar::Tensor> f = tensors_of(feeds, "feeds");
        std::vector<oar::Tensor> outs = g.run(exe, exe.feed_names(), f);
        py::list result;
        for (auto& t : outs) result.append(wrap(t));
        return result;
      });

  py::class_<TrainingRun, std::shared_ptr<TrainingRun>>(m, "_TrainingRun",
                                                        "to_static training: forward run + one node; private")
      .def(py::init([](py::object fexe, py::object bexe, std::vector<std::string> feed_names,
                       std::vector<std::string> seed_names, std::vector<int> diff_out,
                       std::vector<int> grad_pos) {
             OAR_ENFORCE(seed_names.size() == diff_out.size(), oar::ErrorCode::kInvalidArgument,
                         "_TrainingRun: one output position per seed needed");
             auto r = std::make_shared<TrainingRun>();
             r->fexe = &fexe.cast<Executor&>();
             r->bexe = &bexe.cast<Executor&>();
             r->fexe_ref = std::make_shared<PyRef>(std::move(fexe));
             r->bexe_ref = std::make_shared<PyRef>(std::move(bexe));
             r->feed_names = std::move(feed_names);
             r->seed_names = std::move(seed_names);
             r->diff_out = std::move(diff_out);
             r->grad_pos = std::move(grad_pos);
             const int n_fetch = static_cast<int>(r->fexe->fetch_names().size());
             for (int i : r->diff_out)
               OAR_ENFORCE(i >= 0 && i < n_fetch, oar::ErrorCode::kInvalidArgument,
                           "_TrainingRun: output position " << i << " out of range");
             return r;
           }),
           py::arg("fexe"), py::arg("bexe"), py::arg("feed_names"), py::arg("seed_names"),
           py::arg("diff_out"), py::arg("grad_pos"))
      .def_property_readonly("pending", [](const TrainingRun& r) { return r.counter->pending.load(); })
      // wrap_cuda_graph: capture the forward and backward runs into device graphs from the next run on.
      .def("enable_graphs",
           [](TrainingRun& r) {
             r.fgraph = std::make_unique<GraphedRun>();
             r.bgraph = std::make_unique<GraphedRun>();
           })
      .def_property_readonly("graphs_captured",
                             [](const TrainingRun& r) {
                               return r.fgraph && r.fgraph->captured() && r.bgraph && r.bgraph->captured();
                             })
      // Runs the forward with autograd off and records one node over `node_inputs` (what gradients
      // flow to, in grad_pos order); returns the fetched outputs, the differentiable ones as the
      // node's outputs.
      .def("run", [](std::shared_ptr<TrainingRun> r, py::handle feeds, py::handle node_inputs) {
        std::vector<oar::Tensor> f = tensors_of(feeds, "feeds");
        std::vector<oar::Tensor> ins = tensors_of(node_inputs, "node inputs");
        OAR_ENFORCE(f.size() == r->feed_names.size(), oar::ErrorCode::kInvalidArgument,
                    "_TrainingRun.run: expected " << r->feed_names.size() << " feeds, got " << f.size());
        OAR_ENFORCE(
            ins.size() == r->grad_pos.size(), oar::ErrorCode::kInvalidArgument,
            "_TrainingRun.run: expected " << r->grad_pos.size() << " node inputs, got " << ins.size());
        std::vector<oar::Tensor> outs;
        if (r->fgraph) {
          // The graphs read the node inputs (parameters) at the addresses of the capture: one replaced
          // since (set_value with a new storage, a dtype cast) would be silently ignored.
          if (!r->fgraph->captured()) {
            r->captured_inputs.clear();
            for (const oar::Tensor& t : ins)
              r->captured_inputs.push_back(t.defined() ? t.data_ptr() : nullptr);
          } else {
            for (size_t j = 0; j < ins.size(); ++j)
              OAR_ENFORCE(
                  (ins[j].defined() ? ins[j].data_ptr() : nullptr) == r->captured_inputs[j],
                  oar::ErrorCode::kPrecondition,
                  "wrap_cuda_graph: parameter "
                      << j
                      << " of the captured program was given new memory "
                         "since the capture (replaced rather than updated in place); the graph would "
                         "keep reading the old one. Update parameters in place, or rebuild the function");
          }
          outs = r->fgraph->run(*r->fexe, r->feed_names, f);
        } else {
          std::map<std::string, oar::Tensor> fm;
          for (size_t i = 0; i < f.size(); ++i) fm.emplace(r->feed_names[i], f[i]);
          oar::NoGradGuard no_grad;
          outs = r->fexe->run(fm);
        }
        std::vector<oar::Tensor> recorded(outs.size());
        std::vector<oar::TensorMeta> seed_meta;
        std::vector<oar::Place> seed_place;
        for (int i : r->diff_out) {
          const oar::Tensor& t = outs[static_cast<size_t>(i)];
          recorded[static_cast<size_t>(i)] = oar::autograd::detach(t);
          seed_meta.push_back({t.dtype(), t.dims()});
          seed_place.push_back(t.place());
        }
        auto node = std::make_shared<RunProgramNode>(r, std::move(seed_meta), std::move(seed_place));
        oar::autograd::record_custom(node, ins, recorded);
        py::list result;
        for (size_t i = 0; i < outs.size(); ++i)
          result.append(wrap(recorded[i].defined() ? recorded[i] : outs[i]));
        return result;
      });
}

}  // namespace oarpy
