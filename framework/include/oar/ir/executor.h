// Executor: runs block 0 of a Program on one Place, with the sub-blocks of its control-flow ops
// (conditional_block, while).
//
// The program is lowered once, at construction, to an instruction list: each OpDesc goes through the
// translation function registered for its Paddle op type (framework/src/ir/paddle_ops.cc), which reads
// the op's slots and attributes and returns a closure calling oar ops through the normal dispatch.
// Variables live in a Scope (name -> Tensor). Each non-persistable variable that is not a fetch target
// is released right after the last instruction that reads or writes it (Paddle's eager deletion).
#pragma once

#include <oar/core/op.h>
#include <oar/core/tensor.h>
#include <oar/ir/program.h>

#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

namespace oar::ir {

// Variables by name. Each name seen gets a slot, an index that stays valid for the scope's lifetime
// (erase empties the slot, a later set fills it again): executors resolve their variables' names to
// slots once and then run without hashing names. Pointers returned by find stay valid until that
// variable is erased (slots live in a deque).
class Scope {
 public:
  Tensor* find(const std::string& name);
  const Tensor* find(const std::string& name) const;
  bool has(const std::string& name) const { return find(name) != nullptr; }
  void set(const std::string& name, Tensor t) { set(slot(name), std::move(t)); }
  bool erase(const std::string& name);
  size_t size() const { return size_; }
  std::vector<std::string> names() const;  // sorted

  int32_t slot(const std::string& name);  // the name's slot, made (empty) when new
  Tensor* find(int32_t slot) { return present_[slot] ? &values_[slot] : nullptr; }
  void set(int32_t slot, Tensor t) {
    values_[slot] = std::move(t);
    if (!present_[slot]) present_[slot] = 1, ++size_;
  }
  bool erase(int32_t slot);

  // Buffer reuse (decision 145). Executors running in this scope hand the values they release to
  // `recycle`; it keeps one only when nobody else can see it (the scope held the last reference to the
  // tensor and to its storage, which came from the allocator and holds exactly the tensor's elements, no
  // autograd state) and a run asked for a buffer of that size before. `take` gives such a buffer back,
  // reshaped to `meta`, for an instruction's output (undefined when none is kept); the kernel writes
  // into it instead of allocating. Per size at most as many buffers are kept as the executors on the
  // scope took (or asked for) of that size in one run each (a to_static step: the forward's and the
  // backward's outputs), so the kept memory is bounded by one run of each program. A size no user
  // asked for in its current or previous run (the shapes changed) is given back to the allocator.
  int32_t add_pool_user();              // an executor's id for new_run
  void remove_pool_user(int32_t user);  // the executor is gone: its demand no longer keeps buffers
  void new_run(int32_t user);           // a run of that executor starts: its demand counts restart
  bool recycle(Tensor& t);
  Tensor take(size_t bytes, Device* device, const TensorMeta& meta);
  void clear_recycled();
  size_t recycled_count() const;  // buffers kept now

 private:
  std::unordered_map<std::string, int32_t> index_;
  std::deque<Tensor> values_;
  std::vector<char> present_;
  size_t size_ = 0;
  struct Kept {
    size_t bytes;
    Device* device;
    // Per pool user: takes in its current run, in its previous run, the most in one run.
    std::vector<int32_t> demand, last, most;
    int32_t cap = 0;  // the sum of `most`
    std::vector<Tensor> free;
  };
  std::vector<Kept> kept_;  // few distinct sizes per program: a linear search
  int32_t users_ = 0, current_user_ = 0;
  std::vector<int32_t> free_users_;  // ids of removed users, given to the next ones
};

// What an instruction sees when it runs: the scope and the place. Missing inputs throw kNotFound naming
// the op and the variable.
struct OpRunContext {
  Scope* scope;
  Place place;
  const OpDesc* op;
  int32_t block_idx, op_idx;
  const std::vector<Tensor>* feed_list;  // by feed `col`
  std::vector<Tensor>* fetch_list;       // by fetch `col`
  // The run's size of the program's unknown (-1) extents, taken from the feeds (0: none). Native ops
  // whose attributes captured the unknown-extent sentinel substitute it (static_graph.h).
  int64_t unknown_extent = 0;
  // The run's value of each sentinel (kUnknownDims; 0: not known yet): [0] from the feeds, the others
  // measured on the results of the ops with run-time attributes (decision 96). Null: none.
  int64_t* extents = nullptr;
  // Non-null: native instructions may write their outputs into the scope's recycled buffers
  // (ExecutorOptions::reuse_buffers); counts those outputs.
  int64_t* reused = nullptr;

  // The tensor bound to input slot `slot` (argument i).
  const Tensor& in(const std::string& slot, size_t i = 0) const;
  // Whether the slot is bound to at least i+1 variables.
  bool has_in(const std::string& slot, size_t i = 0) const { return op->input(slot).size() > i; }
  std::vector<Tensor> in_list(const std::string& slot) const;
  // Stores `t` as output slot `slot` (argument i); an unbound optional output is ignored.
  void set_out(const std::string& slot, Tensor t, size_t i = 0) const;
};

using OpKernelFn = std::function<void(OpRunContext&)>;
// A translation: called once at lowering with the op description; returns what runs each time.
// Throws (kInvalidArgument / kUnimplemented) for attribute values it does not support.
using OpTranslation = OpKernelFn (*)(const OpDesc& op);

// The table of Paddle op types the executor can run (paddle_ops.cc); nullptr when unknown.
OpTranslation find_op_translation(const std::string& paddle_op_type);
std::vector<std::string> translated_op_types();  // sorted
// The translation of native ops ("oar.<op>", recorded in static mode; static_graph.cc).
OpKernelFn translate_native_op(const OpDesc& op);
// The translation of ops from custom op libraries, recorded under their own type (static_graph.cc).
OpKernelFn translate_custom_op(const OpDesc& op);

struct ExecutorOptions {
  bool garbage_collect = true;  // release variables after their last use
  // Paddle's FLAGS_eager_delete_tensor_gb: released variables are kept as garbage until it holds at
  // least this many bytes, then freed together (0: free each at once; the end of a run frees the rest).
  int64_t gc_threshold_bytes = 0;
  bool collect_stats = false;  // fill ExecutorStats' live/peak counts (walks the scope per instruction)
  // The scope to run in, shared with other executors (a startup and a main program); a new one when null.
  std::shared_ptr<Scope> scope;
  // Programs without feed/fetch ops (built in static mode) name their feeds and fetches here: feeds are
  // set into the scope before the run, fetches read from it after, both in this order.
  std::vector<std::string> feed_names, fetch_names;
  // Variables never garbage collected (read later by another program on the same scope, e.g. the
  // backward part of a to_static program).
  std::vector<std::string> keep;
  // Released values go to the scope's buffer pool (Scope::recycle) and native instructions write their
  // outputs into those buffers instead of allocating (decision 145). Only with garbage_collect and
  // gc_threshold_bytes 0.
  bool reuse_buffers = true;
};

struct ExecutorStats {
  int64_t live_tensors = 0;       // non-persistable variables in the scope now
  int64_t peak_live_tensors = 0;  // the maximum during the last run
  int64_t peak_live_bytes = 0;    // sum of numel * dtype size of those, at its maximum
  int64_t released = 0;           // variables released by garbage collection in the last run
  int64_t runs = 0;
  int64_t peak_garbage_bytes = 0;  // the most bytes held as garbage (gc_threshold_bytes) in the last run
  int64_t reused = 0;              // outputs written into a recycled buffer in the last run (reuse_buffers)
};

class Executor {
 public:
  // Lowers block 0; throws kUnimplemented naming the op type and its block/op index for an op type
  // without a translation.
  Executor(const Program& program, Place place = cpu_place(), ExecutorOptions options = {});
  ~Executor();
  Executor(const Executor&) = delete;
  Executor& operator=(const Executor&) = delete;

  // Loads a combined .pdiparams (bytes / path) into the scope, on the executor's place: records are
  // matched to the program's persistable variables sorted by name (see params.h).
  void load_params(const std::string& pdiparams_bytes);
  void load_params_file(const std::string& path);

  // Feed targets (the Out of each feed op) and fetch sources (the X of each fetch op), by `col`.
  const std::vector<std::string>& feed_names() const { return feed_names_; }
  const std::vector<std::string>& fetch_names() const { return fetch_names_; }

  // Runs block 0 with one tensor per feed name (moved to the executor's place when elsewhere); returns
  // the fetched tensors in `col` order, on the executor's place. Throws kInvalidArgument for a missing
  // or unknown feed name or a feed whose dtype or shape disagrees with the variable's description.
  std::vector<Tensor> run(const std::map<std::string, Tensor>& feeds);

  Scope& scope() { return *scope_; }
  const std::shared_ptr<Scope>& scope_ptr() const { return scope_; }
  Place place() const { return place_; }
  const ExecutorStats& stats() const { return stats_; }
  size_t num_instructions() const { return instrs_.size(); }
  // The variables released after instruction i (for tests and debugging).
  const std::vector<std::string>& released_after(size_t i) const;

 private:
  struct Instr {
    const OpDesc* op;
    int32_t op_idx;
    OpKernelFn fn;
    std::vector<std::string> release;    // garbage collected after this instruction
    std::vector<int32_t> release_slots;  // their scope slots (resolved at the first run)
  };
  void lower();
  // The instructions of sub-block `idx` (control flow): no garbage collection inside; the block's own
  // variables are erased after each run of it.
  std::vector<Instr> lower_block(int32_t idx);
  OpKernelFn control_flow(const OpDesc& op, int32_t block_idx, int32_t op_idx);
  void check_feed(const std::string& name, const Tensor& t) const;
  void update_stats();
  void clear_temporaries();  // erases every non-persistable variable from the scope

  std::unique_ptr<Program> program_;
  Place place_;
  ExecutorOptions options_;
  std::shared_ptr<Scope> scope_;
  std::vector<Tensor> garbage_;  // released, not yet freed (gc_threshold_bytes)
  int64_t garbage_bytes_ = 0;
  void release(int32_t slot);
  void resolve_slots();
  bool reuse_ = false;      // options_.reuse_buffers, when garbage collection frees at once
  bool run_reuse_ = false;  // reuse_ in this run (off while a device graph captures)
  int32_t pool_user_ = 0;   // this executor's id in the scope's buffer pool
  bool slots_resolved_ = false;
  std::vector<int32_t> fetch_slots_;        // scope slots of fetch_names_
  std::vector<int32_t> fetch_erase_slots_;  // fetches erased after the run (given to the caller)
  bool direct_feeds_ = false;  // feeds/fetches by name (options.feed_names), not by feed/fetch ops
  // Positions of -1 extents in the fed variables, for unknown_extent.
  std::vector<std::pair<std::string, std::vector<size_t>>> unknown_positions_;
  std::vector<Instr> instrs_;
  std::vector<std::string> feed_names_, fetch_names_;
  std::map<std::string, size_t> feed_col_;
  ExecutorStats stats_;
};

}  // namespace oar::ir
