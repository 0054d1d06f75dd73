// The op registry (no fixed capacity, lookups by name and id), typed op handles, gradient rules held by
// the op definitions, and the dispatcher's hooks.
#include <gtest/gtest.h>
#include <oar/core/autograd.h>
#include <oar/core/dispatch.h>
#include <oar/core/dispatch_hooks.h>
#include <oar/core/error.h>
#include <oar/core/ops.h>
#include <oar/core/stable_table.h>
#include <oar/ir/static_graph.h>

#include <atomic>
#include <string>
#include <thread>
#include <vector>

namespace oar {
namespace {

TEST(StableTable, GrowsWithoutMovingElements) {
  StableTable<int64_t> t;
  EXPECT_FALSE(t.has(0));
  t.grow_to(1);
  ASSERT_TRUE(t.has(0));
  EXPECT_EQ(t[0], 0);  // value-initialised
  int64_t* first = &t[0];
  const size_t n = StableTable<int64_t>::kFirstChunk * 37 + 5;  // spans several chunks
  t.grow_to(n);
  for (size_t i = 0; i < n; ++i) t[i] = static_cast<int64_t>(i) * 3;
  EXPECT_EQ(first, &t[0]);  // earlier elements never move
  for (size_t i = 0; i < n; ++i) ASSERT_EQ(t[i], static_cast<int64_t>(i) * 3) << i;
  EXPECT_TRUE(t.has(n - 1));
}

OpDef make_def(const std::string& name) {
  static std::vector<std::string>* names = new std::vector<std::string>();
  names->reserve(8192);  // OpDef::name points into this storage: it must never move
  names->push_back(name);
  OpDef d;
  d.name = names->back().c_str();
  d.inputs = {"x"};
  d.outputs = {"out"};
  d.infer = [](InferContext& c) { c.outputs[0] = c.inputs[0]; };
  return d;
}

// The old registry stopped at 512 ops (dispatch) and 1024 (kernel table); ops beyond both work now,
// including the fallback flags and the kernel lookup for them.
TEST(OpRegistry, HasNoFixedCapacity) {
  OpRegistry& r = OpRegistry::get();
  const int32_t before = r.size();
  std::vector<const OpDef*> added;
  for (int i = 0; i < 1500; ++i) added.push_back(&r.add(make_def("test_registry_op_" + std::to_string(i))));
  EXPECT_EQ(r.size(), before + 1500);
  for (int i = 0; i < 1500; ++i) {
    const OpDef* d = r.find("test_registry_op_" + std::to_string(i));
    ASSERT_EQ(d, added[i]);
    EXPECT_EQ(&r.at(d->id), d);
  }
  EXPECT_GT(added.back()->id, 1024);
  // No kernel anywhere: a clear error, not a read past a table.
  Tensor x = ops::full({2}, 1.0, DType::kFloat32, cpu_place());
  try {
    call_op(*added.back(), {x});
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("test_registry_op_1499"), std::string::npos) << e.what();
  }
  // The fallback configuration accepts the new ops' names.
  FallbackConfig c = fallback_config();
  FallbackConfig more = c;
  more.force.push_back("test_registry_op_1499");
  set_fallback_config(more);
  set_fallback_config(c);
}

TEST(OpRegistry, UnknownNameIsNotFound) {
  EXPECT_EQ(OpRegistry::get().find("no_such_op_at_all"), nullptr);
  try {
    OpRegistry::get().at("no_such_op_at_all");
    FAIL() << "expected kNotFound";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kNotFound);
  }
}

// By-name lookups take no lock: a reader keeps finding the built-in ops, and never a wrong one, while
// another thread adds ops (enough to replace the name index by a larger one).
TEST(OpRegistry, FindsByNameWhileOpsAreAdded) {
  OpRegistry& r = OpRegistry::get();
  const OpDef* matmul = &r.at("matmul");
  std::atomic<bool> stop{false};
  std::atomic<int> wrong{0};
  std::thread reader([&] {
    while (!stop.load()) {
      if (r.find("matmul") != matmul) ++wrong;
      if (r.find("test_concurrent_op_missing") != nullptr) ++wrong;
    }
  });
  std::vector<const OpDef*> added;
  for (int i = 0; i < 2000; ++i) added.push_back(&r.add(make_def("test_concurrent_op_" + std::to_string(i))));
  stop = true;
  reader.join();
  EXPECT_EQ(wrong.load(), 0);
  for (int i = 0; i < 2000; ++i) ASSERT_EQ(r.find("test_concurrent_op_" + std::to_string(i)), added[i]);
}

TEST(OpRegistry, DefiningAnOpTwiceIsRefused) { EXPECT_THROW(OpRegistry::get().add(make_def("add")), Error); }

TEST(OpHandle, IsLookedUpOnceAndIsTheRegisteredOp) {
  const OpDef& a = OAR_OP("matmul");
  EXPECT_EQ(&a, &OpRegistry::get().at("matmul"));
  auto same_site = [] { return &OAR_OP("softmax"); };
  EXPECT_EQ(same_site(), same_site());
}

// Gradient rules live in the op definitions: every op autograd can differentiate has one there, and
// the non-differentiable ones have none.
TEST(OpRegistry, GradientRulesAreHeldByTheDefinitions) {
  for (const char* op :
       {"add", "multiply", "matmul", "softmax", "exp", "sum", "conv", "layer_norm", "cumsum"}) {
    const OpDef& d = OpRegistry::get().at(op);
    EXPECT_NE(d.grad.fn, nullptr) << op;
    EXPECT_EQ(grad_rule(d), &d.grad) << op;
  }
  for (const char* op : {"equal", "argmax", "fill", "isnan"})
    EXPECT_EQ(grad_rule(OpRegistry::get().at(op)), nullptr) << op;
  // multiply keeps an input only for the other input's gradient.
  EXPECT_EQ(OpRegistry::get().at("multiply").grad.saved_for_others, 3u);
}

TEST(DispatchHooks, AutogradAndStaticGraphAreInstalledInSlotOrder) {
  const DispatchHook* ag = dispatch_hook(HookSlot::kAutograd);
  const DispatchHook* sg = dispatch_hook(HookSlot::kStaticGraph);
  ASSERT_NE(ag, nullptr);
  ASSERT_NE(sg, nullptr);
  EXPECT_NE(ag->after, nullptr);   // records gradient nodes
  EXPECT_NE(sg->before, nullptr);  // takes calls over while a program is built
  EXPECT_NE(sg->view, nullptr);
  // Through the hook, eager ops still record gradients.
  Tensor x = ops::full({3}, 2.0, DType::kFloat32, cpu_place());
  autograd::set_requires_grad(x, true);
  Tensor y = ops::sum(ops::multiply(x, x), {}, false);
  std::vector<Tensor> g = autograd::grad({y}, {x});
  ASSERT_EQ(g.size(), 1u);
  const float* p = static_cast<const float*>(g[0].data_ptr());
  for (int i = 0; i < 3; ++i) EXPECT_FLOAT_EQ(p[i], 4.0f);
}

// A hook that counts its calls and passes them on to the autograd hook it replaces.
struct CountingAutogradHook {
  static inline const DispatchHook* real = nullptr;
  static inline int before_calls = 0, after_calls = 0;
  static bool before(OpCall& c) {
    ++before_calls;
    return real->before(c);
  }
  static void after(OpCall& c) {
    ++after_calls;
    real->after(c);
  }
  static constexpr DispatchHook kHook{before, after, nullptr, nullptr, /*before_writes_only=*/true};
  CountingAutogradHook() {
    real = dispatch_hook(HookSlot::kAutograd);
    install_dispatch_hook(HookSlot::kAutograd, &kHook);
  }
  ~CountingAutogradHook() { install_dispatch_hook(HookSlot::kAutograd, real); }
};

// The dispatcher calls a hook only where it can matter: a `before_writes_only` hook on in-place calls,
// and any hook only while its slot is engaged on the calling thread (grad mode for autograd, a program
// being built for the static graph).
TEST(DispatchHooks, RunOnlyWhereTheyCanMatter) {
  Tensor x = ops::full({2}, 1.0, DType::kFloat32, cpu_place());
  Tensor y = ops::full({2}, 2.0, DType::kFloat32, cpu_place());
  const OpDef& assign = OpRegistry::get().at("assign");  // writes its first input in place
  {
    CountingAutogradHook counting;
    ops::add(x, y);
    EXPECT_EQ(CountingAutogradHook::before_calls, 0);
    EXPECT_EQ(CountingAutogradHook::after_calls, 1);
    call_op(assign, {x, y});
    EXPECT_EQ(CountingAutogradHook::before_calls, 1);
    EXPECT_EQ(CountingAutogradHook::after_calls, 2);
    EXPECT_FLOAT_EQ(static_cast<const float*>(x.data_ptr())[1], 2.0f);
    {
      NoGradGuard no_grad;
      EXPECT_FALSE(dispatch_hook_engaged(HookSlot::kAutograd));
      ops::add(x, y);
      call_op(assign, {x, y});
      EXPECT_EQ(CountingAutogradHook::before_calls, 1);
      EXPECT_EQ(CountingAutogradHook::after_calls, 2);
    }
  }
  EXPECT_TRUE(grad_enabled());
  EXPECT_TRUE(dispatch_hook_engaged(HookSlot::kAutograd));
  // The static-graph slot is engaged exactly while a program is being built on this thread.
  EXPECT_FALSE(dispatch_hook_engaged(HookSlot::kStaticGraph));
  auto prev = ir::set_current_builder(std::make_shared<ir::ProgramBuilder>());
  EXPECT_TRUE(dispatch_hook_engaged(HookSlot::kStaticGraph));
  bool other_thread_static = true, other_thread_grad = false;
  std::thread([&] {  // a new thread starts in grad mode, with no program being built
    other_thread_static = dispatch_hook_engaged(HookSlot::kStaticGraph);
    other_thread_grad = grad_enabled();
  })
      .join();
  ir::set_current_builder(prev);
  EXPECT_FALSE(dispatch_hook_engaged(HookSlot::kStaticGraph));
  EXPECT_FALSE(other_thread_static);
  EXPECT_TRUE(other_thread_grad);
}

}  // namespace
}  // namespace oar
