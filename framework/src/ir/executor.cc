// Executor: lowering of block 0 to instructions, variable lifetimes, feeding and fetching.
#include <oar/core/error.h>
#include <oar/core/graph.h>
#include <oar/ir/executor.h>
#include <oar/ir/params.h>
#include <oar/ir/static_graph.h>

#include <algorithm>
#include <unordered_map>
#include <unordered_set>

namespace oar::ir {

// ---- Scope ------------------------------------------------------------------------------------------

Tensor* Scope::find(const std::string& name) {
  auto it = index_.find(name);
  return it == index_.end() ? nullptr : find(it->second);
}
const Tensor* Scope::find(const std::string& name) const {
  auto it = index_.find(name);
  return it == index_.end() || !present_[it->second] ? nullptr : &values_[it->second];
}
bool Scope::erase(const std::string& name) {
  auto it = index_.find(name);
  return it != index_.end() && erase(it->second);
}
bool Scope::erase(int32_t slot) {
  if (!present_[slot]) return false;
  values_[slot] = Tensor();
  present_[slot] = 0;
  --size_;
  return true;
}
int32_t Scope::slot(const std::string& name) {
  auto [it, added] = index_.emplace(name, static_cast<int32_t>(values_.size()));
  if (added) {
    values_.emplace_back();
    present_.push_back(0);
  }
  return it->second;
}
bool Scope::recycle(Tensor& t) {
  TensorImpl* impl = t.impl();
  if (impl == nullptr || t.impl_ptr().use_count() != 1 || impl->autograd || impl->symbol || impl->offset != 0)
    return false;
  const std::shared_ptr<Storage>& st = impl->storage;
  if (!st || st.use_count() != 1 || !st->owned()) return false;
  // Every element of the storage belongs to the tensor (a permuted view too): take() rewrites the strides.
  const size_t bytes = static_cast<size_t>(t.numel() * dtype_size(t.dtype()));
  if (st->bytes() != bytes) return false;
  for (Kept& k : kept_) {
    if (k.bytes != bytes || k.device != st->device()) continue;
    if (static_cast<int32_t>(k.free.size()) >= k.cap) return false;
    k.free.push_back(std::move(t));
    return true;
  }
  return false;  // no run asked for this size
}

int32_t Scope::add_pool_user() {
  if (free_users_.empty()) return users_++;
  const int32_t id = free_users_.back();
  free_users_.pop_back();
  return id;
}

void Scope::remove_pool_user(int32_t user) {
  const auto u = static_cast<size_t>(user);
  for (Kept& k : kept_) {
    if (u >= k.most.size()) continue;
    k.cap -= k.most[u];
    k.most[u] = k.demand[u] = k.last[u] = 0;
    while (static_cast<int32_t>(k.free.size()) > k.cap) k.free.pop_back();
  }
  free_users_.push_back(user);
}

void Scope::new_run(int32_t user) {
  current_user_ = user;
  const auto u = static_cast<size_t>(user);
  for (size_t i = 0; i < kept_.size();) {
    Kept& k = kept_[i];
    if (u < k.demand.size()) k.last[u] = k.demand[u], k.demand[u] = 0;
    bool wanted = false;
    for (size_t j = 0; j < k.demand.size(); ++j) wanted |= k.demand[j] > 0 || k.last[j] > 0;
    if (wanted) {
      ++i;
    } else {  // stale: its buffers go back to the allocator
      kept_[i] = std::move(kept_.back());
      kept_.pop_back();
    }
  }
}

Tensor Scope::take(size_t bytes, Device* device, const TensorMeta& meta) {
  Kept* k = nullptr;
  for (Kept& e : kept_)
    if (e.bytes == bytes && e.device == device) k = &e;
  if (k == nullptr) k = &kept_.emplace_back(Kept{bytes, device});
  const auto u = static_cast<size_t>(current_user_);
  if (k->demand.size() <= u) k->demand.resize(u + 1), k->last.resize(u + 1), k->most.resize(u + 1);
  if (++k->demand[u] > k->most[u]) ++k->most[u], ++k->cap;
  if (k->free.empty()) return Tensor();
  Tensor t = std::move(k->free.back());
  k->free.pop_back();
  TensorImpl* impl = t.impl();  // nobody else holds it (recycle)
  impl->dtype = meta.dtype;
  if (!(impl->dims == meta.dims) || !t.is_contiguous()) {
    impl->dims = meta.dims;
    impl->strides = contiguous_strides(meta.dims);
  }
  return t;
}

void Scope::clear_recycled() { kept_.clear(); }

size_t Scope::recycled_count() const {
  size_t n = 0;
  for (const Kept& k : kept_) n += k.free.size();
  return n;
}

std::vector<std::string> Scope::names() const {
  std::vector<std::string> out;
  out.reserve(size_);
  for (auto& kv : index_)
    if (present_[kv.second]) out.push_back(kv.first);
  std::sort(out.begin(), out.end());
  return out;
}

// ---- OpRunContext -----------------------------------------------------------------------------------

const Tensor& OpRunContext::in(const std::string& slot, size_t i) const {
  const auto& args = op->input(slot);
  OAR_ENFORCE(i < args.size(), ErrorCode::kNotFound,
              op->type << " (block " << block_idx << ", op " << op_idx << "): input slot " << slot
                       << " has no argument " << i);
  const Tensor* t = scope->find(args[i]);
  OAR_ENFORCE(t != nullptr && t->defined(), ErrorCode::kNotFound,
              op->type << " (block " << block_idx << ", op " << op_idx << "): input " << slot << " variable '"
                       << args[i] << "' has no value (not fed, not a loaded parameter, not computed)");
  return *t;
}

std::vector<Tensor> OpRunContext::in_list(const std::string& slot) const {
  std::vector<Tensor> out;
  for (size_t i = 0; i < op->input(slot).size(); ++i) out.push_back(in(slot, i));
  return out;
}

void OpRunContext::set_out(const std::string& slot, Tensor t, size_t i) const {
  const auto& args = op->output(slot);
  if (i >= args.size() || args[i] == kEmptyVarName) return;
  scope->set(args[i], std::move(t));
}

// ---- Executor ---------------------------------------------------------------------------------------

namespace {

std::string dims_str(const std::vector<int64_t>& d) {
  std::string s = "[";
  for (size_t i = 0; i < d.size(); ++i) s += (i ? ", " : "") + std::to_string(d[i]);
  return s + "]";
}

int32_t col_attr(const OpDesc& op, int32_t op_idx) {
  const Attribute* a = op.find_attr("col");
  OAR_ENFORCE(a != nullptr, ErrorCode::kInvalidArgument,
              op.type << " (block 0, op " << op_idx << "): missing attribute col");
  if (auto* v = std::get_if<int32_t>(a)) return *v;
  if (auto* v = std::get_if<int64_t>(a)) return static_cast<int32_t>(*v);
  OAR_THROW(ErrorCode::kInvalidArgument,
            op.type << " (block 0, op " << op_idx << "): attribute col is not an int");
}

// Names bound to slots by `col`: checks that the columns are 0..n-1 without gaps or repeats.
std::vector<std::string> by_col(const std::map<int32_t, std::string>& cols, const char* what) {
  std::vector<std::string> out;
  for (auto& [c, name] : cols) {
    OAR_ENFORCE(c == static_cast<int32_t>(out.size()), ErrorCode::kInvalidArgument,
                "executor: " << what << " columns must be 0.." << cols.size() - 1 << ", found col " << c);
    out.push_back(name);
  }
  return out;
}

}  // namespace

Executor::Executor(const Program& program, Place place, ExecutorOptions options)
    : program_(std::make_unique<Program>(program)),
      place_(place),
      options_(options),
      scope_(options.scope ? options.scope : std::make_shared<Scope>()) {
  reuse_ = options_.reuse_buffers && options_.garbage_collect && options_.gc_threshold_bytes == 0;
  if (reuse_) pool_user_ = scope_->add_pool_user();
  lower();
}

Executor::~Executor() {
  if (reuse_) scope_->remove_pool_user(pool_user_);
}

void Executor::lower() {
  const Block& b = program_->global_block();
  std::map<int32_t, std::string> feed_cols, fetch_cols;
  std::unordered_set<std::string> keep;  // never garbage collected
  for (const VarDesc& v : b.vars())
    if (v.persistable) keep.insert(v.name);
  keep.insert(kEmptyVarName);
  keep.insert(options_.keep.begin(), options_.keep.end());

  instrs_.clear();
  for (size_t i = 0; i < b.ops().size(); ++i) {
    const OpDesc& op = b.ops()[i];
    int32_t idx = static_cast<int32_t>(i);
    if (op.type == "conditional_block" || op.type == "while") {
      instrs_.push_back(Instr{&op, idx, control_flow(op, 0, idx), {}});
      continue;
    }
    OpTranslation tr = is_native_op_type(op.type) ? translate_native_op : find_op_translation(op.type);
    OAR_ENFORCE(tr != nullptr, ErrorCode::kUnimplemented,
                "executor: op type '"
                    << op.type << "' (block 0, op " << idx
                    << ") has no translation to oar ops; supported: see translated_op_types()");
    if (op.type == "feed") {
      OAR_ENFORCE(op.output("Out").size() == 1, ErrorCode::kInvalidArgument,
                  "feed (block 0, op " << idx << "): needs exactly one Out variable");
      int32_t c = col_attr(op, idx);
      OAR_ENFORCE(feed_cols.emplace(c, op.output("Out")[0]).second, ErrorCode::kInvalidArgument,
                  "feed (block 0, op " << idx << "): col " << c << " is used twice");
    } else if (op.type == "fetch") {
      OAR_ENFORCE(op.input("X").size() == 1, ErrorCode::kInvalidArgument,
                  "fetch (block 0, op " << idx << "): needs exactly one X variable");
      int32_t c = col_attr(op, idx);
      OAR_ENFORCE(fetch_cols.emplace(c, op.input("X")[0]).second, ErrorCode::kInvalidArgument,
                  "fetch (block 0, op " << idx << "): col " << c << " is used twice");
      keep.insert(op.input("X")[0]);
    }
    OpKernelFn fn;
    try {
      fn = tr(op);
    } catch (const Error& e) {
      throw Error(e.code(), "executor: lowering op " + std::to_string(idx) + " of block 0: " + e.what());
    }
    instrs_.push_back(Instr{&op, idx, std::move(fn), {}});
  }
  direct_feeds_ = !options_.feed_names.empty() || !options_.fetch_names.empty();
  if (direct_feeds_) {
    OAR_ENFORCE(feed_cols.empty() && fetch_cols.empty(), ErrorCode::kInvalidArgument,
                "executor: the program has feed/fetch ops; do not name feeds and fetches in the options too");
    feed_names_ = options_.feed_names;
    fetch_names_ = options_.fetch_names;
    for (auto& n : fetch_names_) keep.insert(n);
  } else {
    feed_names_ = by_col(feed_cols, "feed");
    fetch_names_ = by_col(fetch_cols, "fetch");
  }
  unknown_positions_.clear();
  for (auto& n : feed_names_) {
    const VarDesc* v = b.find_var(n);
    if (v == nullptr) continue;
    std::vector<size_t> pos;
    for (size_t i = 0; i < v->shape.size(); ++i)
      if (v->shape[i] < 0) pos.push_back(i);
    if (!pos.empty()) unknown_positions_.emplace_back(n, std::move(pos));
  }
  feed_col_.clear();
  for (size_t c = 0; c < feed_names_.size(); ++c) {
    OAR_ENFORCE(feed_col_.emplace(feed_names_[c], c).second, ErrorCode::kInvalidArgument,
                "executor: variable '" << feed_names_[c] << "' is fed twice");
  }

  // Lifetimes: a variable dies after the last instruction that names it (as input or output).
  if (!options_.garbage_collect) return;
  std::unordered_map<std::string, size_t> last;
  std::vector<std::string> order;  // first-seen order, so release lists are deterministic
  for (size_t i = 0; i < instrs_.size(); ++i) {
    for (const Slots* slots : {&instrs_[i].op->inputs, &instrs_[i].op->outputs})
      for (auto& [slot, names] : *slots)
        for (auto& n : names) {
          if (keep.count(n)) continue;
          if (last.emplace(n, i).second)
            order.push_back(n);
          else
            last[n] = i;
        }
  }
  for (auto& n : order) instrs_[last[n]].release.push_back(n);
}

std::vector<Executor::Instr> Executor::lower_block(int32_t idx) {
  const Block& b = program_->block(idx);
  std::vector<Instr> out;
  for (size_t i = 0; i < b.ops().size(); ++i) {
    const OpDesc& op = b.ops()[i];
    const auto op_idx = static_cast<int32_t>(i);
    if (op.type == "conditional_block" || op.type == "while") {
      out.push_back(Instr{&op, op_idx, control_flow(op, idx, op_idx), {}});
      continue;
    }
    OAR_ENFORCE(op.type != "feed" && op.type != "fetch", ErrorCode::kInvalidArgument,
                "executor: " << op.type << " op in sub-block " << idx);
    OpTranslation tr = is_native_op_type(op.type) ? translate_native_op : find_op_translation(op.type);
    OAR_ENFORCE(
        tr != nullptr, ErrorCode::kUnimplemented,
        "executor: op type '" << op.type << "' (block " << idx << ", op " << i << ") has no translation");
    try {
      out.push_back(Instr{&op, op_idx, tr(op), {}});
    } catch (const Error& e) {
      throw Error(e.code(), "executor: lowering op " + std::to_string(i) + " of block " +
                                std::to_string(idx) + ": " + e.what());
    }
  }
  return out;
}

namespace {
bool read_condition(const OpRunContext& c, const char* slot) {
  const Tensor& t = c.in(slot);
  OAR_ENFORCE(t.numel() == 1, ErrorCode::kInvalidArgument,
              c.op->type << ": the condition must have one element, got shape " << t.dims().to_string());
  OAR_ENFORCE(t.dtype() == DType::kBool, ErrorCode::kType,
              c.op->type << ": the condition must be bool, got " << dtype_name(t.dtype()));
  uint8_t v = 0;
  t.copy_to_host(&v, 1);
  return v != 0;
}
}  // namespace

OpKernelFn Executor::control_flow(const OpDesc& op, int32_t block_idx, int32_t op_idx) {
  const Attribute* a = op.find_attr("sub_block");
  OAR_ENFORCE(
      a != nullptr && std::holds_alternative<BlockRef>(*a), ErrorCode::kInvalidArgument,
      op.type << " (block " << block_idx << ", op " << op_idx << "): missing the sub_block attribute");
  const int32_t sub = std::get<BlockRef>(*a).idx;
  OAR_ENFORCE(sub > 0 && sub < program_->num_blocks() && sub != block_idx, ErrorCode::kInvalidArgument,
              op.type << " (block " << block_idx << ", op " << op_idx << "): sub_block " << sub
                      << " is not a valid block");
  auto body = std::make_shared<std::vector<Instr>>(lower_block(sub));
  std::vector<std::string> locals;  // erased after each run of the sub-block
  for (const VarDesc& v : program_->block(sub).vars())
    if (!v.persistable) locals.push_back(v.name);
  auto run_body = [body, locals, sub](OpRunContext& c) {
    OpRunContext inner = c;
    inner.block_idx = sub;
    for (Instr& ins : *body) {
      inner.op = ins.op;
      inner.op_idx = ins.op_idx;
      try {
        ins.fn(inner);
      } catch (const Error& e) {
        throw Error(e.code(), "running op " + std::to_string(ins.op_idx) + " (" + ins.op->type +
                                  ") of block " + std::to_string(sub) + ": " + e.what());
      }
    }
    for (auto& n : locals) c.scope->erase(n);
  };
  if (op.type == "conditional_block") {
    // Runs the sub-block when Cond (a one-element bool) is true; its writes to outer variables remain.
    const bool scalar = !op.find_attr("is_scalar_condition") ||
                        std::get_if<bool>(op.find_attr("is_scalar_condition")) == nullptr ||
                        std::get<bool>(*op.find_attr("is_scalar_condition"));
    OAR_ENFORCE(scalar, ErrorCode::kUnimplemented,
                "conditional_block: only is_scalar_condition=True is supported");
    return [run_body](OpRunContext& c) {
      if (read_condition(c, "Cond")) run_body(c);
    };
  }
  // while: runs the sub-block while Condition is true; the sub-block updates Condition.
  return [run_body](OpRunContext& c) {
    constexpr int64_t kMaxIterations = int64_t{1} << 40;
    for (int64_t i = 0; read_condition(c, "Condition"); ++i) {
      OAR_ENFORCE(i < kMaxIterations, ErrorCode::kInvalidArgument, "while: too many iterations");
      run_body(c);
    }
  };
}

void Executor::release(int32_t slot) {
  Tensor* t = scope_->find(slot);
  if (t == nullptr) return;
  ++stats_.released;
  if (run_reuse_ && t->defined()) {
    scope_->recycle(*t);
  } else if (options_.gc_threshold_bytes > 0 && t->defined()) {
    garbage_bytes_ += t->numel() * dtype_size(t->dtype());
    garbage_.push_back(std::move(*t));
    stats_.peak_garbage_bytes = std::max(stats_.peak_garbage_bytes, garbage_bytes_);
    if (garbage_bytes_ >= options_.gc_threshold_bytes) {
      garbage_.clear();
      garbage_bytes_ = 0;
    }
  }
  scope_->erase(slot);
}

const std::vector<std::string>& Executor::released_after(size_t i) const {
  OAR_ENFORCE(i < instrs_.size(), ErrorCode::kOutOfRange,
              "executor: instruction " << i << " out of range (" << instrs_.size() << " instructions)");
  return instrs_[i].release;
}

void Executor::load_params(const std::string& bytes) {
  auto params = load_combined_params(*program_, bytes);
  for (auto& [name, t] : params)
    scope_->set(name, Tensor::from_host(t.data.data(), Dims(t.dims), t.dtype, place_));
}

void Executor::load_params_file(const std::string& path) {
  load_params(read_file_bytes(path, uint64_t{64} << 30));
}

void Executor::check_feed(const std::string& name, const Tensor& t) const {
  OAR_ENFORCE(t.defined(), ErrorCode::kInvalidArgument,
              "executor: feed '" << name << "' is an undefined tensor");
  const VarDesc* v = program_->global_block().find_var(name);
  if (v == nullptr || !v->has_tensor()) return;
  OAR_ENFORCE(t.dtype() == v->dtype, ErrorCode::kInvalidArgument,
              "executor: feed '" << name << "' has dtype " << dtype_name(t.dtype())
                                 << " but the program declares " << dtype_name(v->dtype));
  std::vector<int64_t> got = t.dims().to_vector();
  bool ok = got.size() == v->shape.size();
  for (size_t i = 0; ok && i < got.size(); ++i) ok = v->shape[i] < 0 || v->shape[i] == got[i];
  OAR_ENFORCE(ok, ErrorCode::kInvalidArgument,
              "executor: feed '" << name << "' has shape " << dims_str(got) << " but the program declares "
                                 << dims_str(v->shape) << " (-1 = any)");
}

void Executor::update_stats() {
  const Block& b = program_->global_block();
  int64_t live = 0, bytes = 0;
  for (auto& n : scope_->names()) {
    const VarDesc* v = b.find_var(n);
    if (v == nullptr || v->persistable) continue;
    const Tensor* t = scope_->find(n);
    ++live;
    if (t->defined()) bytes += t->numel() * dtype_size(t->dtype());
  }
  stats_.live_tensors = live;
  stats_.peak_live_tensors = std::max(stats_.peak_live_tensors, live);
  stats_.peak_live_bytes = std::max(stats_.peak_live_bytes, bytes);
}

void Executor::clear_temporaries() {
  garbage_.clear();
  garbage_bytes_ = 0;
  scope_->clear_recycled();
  const Block& b = program_->global_block();
  for (auto& n : scope_->names()) {  // the scope may be shared: only this program's variables
    const VarDesc* v = b.find_var(n);
    if (v != nullptr && !v->persistable) scope_->erase(n);
  }
}

// The scope is fixed for the executor's lifetime: variable names become scope slots once.
void Executor::resolve_slots() {
  for (Instr& ins : instrs_) {
    ins.release_slots.clear();
    for (auto& n : ins.release) ins.release_slots.push_back(scope_->slot(n));
  }
  fetch_slots_.clear();
  fetch_erase_slots_.clear();
  for (auto& n : fetch_names_) {
    fetch_slots_.push_back(scope_->slot(n));
    // The fetched values belong to the caller after the run (unless another program reads them:
    // options.keep).
    const VarDesc* v = program_->global_block().find_var(n);
    const bool kept = std::find(options_.keep.begin(), options_.keep.end(), n) != options_.keep.end();
    if ((v == nullptr || !v->persistable) && !kept) fetch_erase_slots_.push_back(fetch_slots_.back());
  }
  slots_resolved_ = true;
}

std::vector<Tensor> Executor::run(const std::map<std::string, Tensor>& feeds) {
  std::vector<Tensor> feed_list(feed_names_.size()), fetch_list(fetch_names_.size());
  for (auto& [name, t] : feeds) {
    auto it = feed_col_.find(name);
    if (it == feed_col_.end()) {
      std::string known;
      for (auto& n : feed_names_) known += (known.empty() ? "" : ", ") + n;
      OAR_THROW(ErrorCode::kInvalidArgument,
                "executor: '" << name << "' is not a feed target of the program (feeds: " << known << ")");
    }
    check_feed(name, t);
    feed_list[it->second] = t.to(place_);
  }
  for (size_t c = 0; c < feed_names_.size(); ++c)
    OAR_ENFORCE(feed_list[c].defined(), ErrorCode::kInvalidArgument,
                "executor: feed '" << feed_names_[c] << "' (col " << c << ") is missing");

  // The size of the unknown extents in this run, when every -1 of the fed variables agrees (-1 when
  // they differ: only native ops that captured the sentinel need it, and they refuse then).
  int64_t extent = 0;
  for (auto& [name, pos] : unknown_positions_) {
    const Tensor& t = feed_list[feed_col_.at(name)];
    for (size_t p : pos) {
      const int64_t e = t.dims()[static_cast<int32_t>(p)];
      extent = (extent == 0 || extent == e) ? e : -1;
    }
  }
  if (direct_feeds_)
    for (size_t c = 0; c < feed_names_.size(); ++c) scope_->set(feed_names_[c], feed_list[c]);

  if (!slots_resolved_) resolve_slots();
  stats_.peak_live_tensors = stats_.peak_live_bytes = stats_.released = stats_.peak_garbage_bytes = 0;
  stats_.reused = 0;
  bool track = options_.collect_stats;
  int64_t extents[kNumUnknownDims] = {};
  extents[0] = extent > 0 ? extent : 0;
  OpRunContext ctx{scope_.get(), place_, nullptr, 0, 0, &feed_list, &fetch_list, extent, extents};
  // No buffer reuse while a device graph captures: the pool's buffers come from the device's allocator,
  // not the graph's private pool, so a captured kernel writing into one would write, at every replay,
  // into memory the pool may have handed on or given back (docs/device_graph.md).
  run_reuse_ = reuse_ && g_graph_captures.load(std::memory_order_relaxed) == 0;
  if (run_reuse_) {
    scope_->new_run(pool_user_);
    ctx.reused = &stats_.reused;
  }
  for (Instr& ins : instrs_) {
    ctx.op = ins.op;
    ctx.op_idx = ins.op_idx;
    try {
      ins.fn(ctx);
    } catch (const Error& e) {
      clear_temporaries();  // a failed run leaves only the persistables behind
      throw Error(e.code(), "executor: running op " + std::to_string(ins.op_idx) + " (" + ins.op->type +
                                ") of block 0: " + e.what());
    } catch (...) {
      clear_temporaries();
      throw;
    }
    if (track) update_stats();
    for (int32_t slot : ins.release_slots) release(slot);
  }
  if (direct_feeds_) {
    for (size_t c = 0; c < fetch_names_.size(); ++c) {
      const Tensor* t = scope_->find(fetch_slots_[c]);
      OAR_ENFORCE(t != nullptr && t->defined(), ErrorCode::kNotFound,
                  "executor: fetch '" << fetch_names_[c]
                                      << "' has no value after the run (not computed by the program)");
      fetch_list[c] = *t;
    }
  }
  if (options_.garbage_collect)
    for (int32_t slot : fetch_erase_slots_) scope_->erase(slot);
  garbage_.clear();
  garbage_bytes_ = 0;
  if (track) update_stats();
  ++stats_.runs;
  for (size_t c = 0; c < fetch_list.size(); ++c)
    OAR_ENFORCE(fetch_list[c].defined(), ErrorCode::kInternal,
                "executor: fetch col " << c << " was not produced");
  return fetch_list;
}

}  // namespace oar::ir
