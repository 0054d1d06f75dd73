// A host block emulator for the gpu plugin's kernels: include it first, then a .cu file whose kernels are
// launched through OAR_LAUNCH (own_blas.cu), and compile the lot with a plain C++ compiler. The kernels'
// own source then runs on the host, where tests/python/test_cuda_own_kernels_host.py compares it with the
// CPU plugin, with no GPU.
//
// What a kernel may rely on, and what it gets here:
// - The grid runs block by block. The threads of a block are fibers (ucontext) on one OS thread, each with
//   its own stack, so each keeps its locals across barriers. threadIdx, blockIdx, blockDim and gridDim
//   hold what the kernel expects.
// - A __shared__ array is one per kernel instantiation (a static), seen by all the threads of the block
//   that runs; it keeps what the previous block left (uninitialised memory on a GPU too).
// - __syncthreads() is a barrier: a thread stops there until every thread of its block has reached it.
//   Between two barriers the threads run one after another, in an order shuffled at every phase (a fixed
//   seed: runs repeat). So a thread that reads what another writes in the same phase (a missing barrier)
//   reads the old value in some phase, and the result is wrong.
// - A barrier that some threads reach while others have exited is reported and aborts the program (on a
//   GPU it is undefined behaviour: a hang or garbage).
// It cannot see: races inside one phase that need instructions of two threads to interleave (a phase runs
// each thread to its next barrier in one go), warp or wavefront width, scheduling, device memory, and the
// launch limits of real hardware (docs/rocm.md, "What is verified").
//
// Why fibers and not one std::thread per GPU thread: a 256-thread std::barrier cost about 1 ms per phase on
// the 2-core development machine, and the order the OS picks is not repeatable; the fibers cost about 0.6 us
// of CPU per thread and phase, and the order is ours to shuffle (decision 130).
#pragma once

#define OAR_GPU_HOST_EMULATION 1
#include <ucontext.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <random>
#include <tuple>
#include <vector>

#include "gpu_runtime.h"  // the vendor headers first: the names below replace theirs

// ---- the CUDA names kernels use, with host meanings ------------------------------------------------------
#undef __global__
#define __global__
#undef __device__
#define __device__
#undef __host__
#define __host__
#undef __shared__
#define __shared__ static

inline thread_local uint3 threadIdx, blockIdx;
inline thread_local dim3 blockDim, gridDim;

// The runtime calls the launching code makes, on host memory.
#undef gpuMemsetAsync
#define gpuMemsetAsync(ptr, value, bytes, stream) \
  ((void)(stream), std::memset((ptr), (value), (bytes)), gpuSuccess)
#undef gpuGetLastError
#define gpuGetLastError() gpuSuccess

namespace oar_emu {

enum State { kRunning, kAtBarrier, kDone };

struct Fiber {
  ucontext_t ctx;
  std::unique_ptr<char[]> stack;
  State state;
};

// The block being run (one at a time).
struct Block {
  std::vector<Fiber> fibers;
  ucontext_t scheduler;
  int current = 0;
  const std::function<void()>* body = nullptr;
  std::mt19937 rng{20261127};
};
inline Block& block() {
  static Block b;
  return b;
}

inline uint3 thread_index(int t) {
  const unsigned x = blockDim.x, y = blockDim.y;
  return uint3{t % x, (t / x) % y, t / (x * y)};
}

inline void fiber_entry() {
  Block& b = block();
  (*b.body)();
  b.fibers[b.current].state = kDone;
}  // returns to uc_link: the scheduler

inline void barrier() {
  Block& b = block();
  Fiber& f = b.fibers[b.current];
  f.state = kAtBarrier;
  swapcontext(&f.ctx, &b.scheduler);
}

// Runs `body` (the kernel call) as every thread of block `idx`.
inline void run_block(uint3 idx, const std::function<void()>& body) {
  Block& b = block();
  constexpr size_t kStack = 128 * 1024;
  const int n = static_cast<int>(b.fibers.size());
  b.body = &body;
  blockIdx = idx;
  for (Fiber& f : b.fibers) {
    if (!f.stack) f.stack.reset(new char[kStack]);
    getcontext(&f.ctx);
    f.ctx.uc_stack.ss_sp = f.stack.get();
    f.ctx.uc_stack.ss_size = kStack;
    f.ctx.uc_link = &b.scheduler;
    makecontext(&f.ctx, fiber_entry, 0);
    f.state = kRunning;
  }
  std::vector<int> order(n);
  for (int t = 0; t < n; ++t) order[t] = t;
  for (;;) {  // one phase: every thread runs to its next barrier or to its end
    std::shuffle(order.begin(), order.end(), b.rng);
    for (int t : order) {
      if (b.fibers[t].state != kRunning) continue;
      b.current = t;
      threadIdx = thread_index(t);
      swapcontext(&b.scheduler, &b.fibers[t].ctx);
    }
    int waiting = 0;
    for (Fiber& f : b.fibers) waiting += f.state == kAtBarrier;
    if (waiting == 0) return;
    if (waiting != n) {
      std::fprintf(stderr,
                   "block_emu: block (%u,%u,%u): %d of %d threads wait at __syncthreads, the others exited\n",
                   idx.x, idx.y, idx.z, waiting, n);
      std::abort();
    }
    for (Fiber& f : b.fibers) f.state = kRunning;
  }
}

inline void run_grid(dim3 grid, dim3 threads, const std::function<void()>& body) {
  gridDim = grid;
  blockDim = threads;
  block().fibers.resize(static_cast<size_t>(threads.x) * threads.y * threads.z);
  for (unsigned z = 0; z < grid.z; ++z)
    for (unsigned y = 0; y < grid.y; ++y)
      for (unsigned x = 0; x < grid.x; ++x) run_block(uint3{x, y, z}, body);
}

// OAR_LAUNCH(kernel, grid, block, stream) is launcher(kernel, grid, block): called with the kernel's
// arguments, it runs the grid before it returns (a synchronous stream).
template <typename... P>
struct Launcher {
  void (*kernel)(P...);
  dim3 grid, threads;
  template <typename... A>
  void operator()(A&&... args) const {
    std::tuple<P...> params(std::forward<A>(args)...);  // converted once, as a launch copies them
    run_grid(grid, threads, [&] { std::apply(kernel, params); });
  }
};
template <typename... P>
Launcher<P...> launcher(void (*kernel)(P...), dim3 grid, dim3 threads) {
  return {kernel, grid, threads};
}

}  // namespace oar_emu

inline void __syncthreads() { oar_emu::barrier(); }

#define OAR_LAUNCH(kernel, grid, block, stream) \
  ((void)(stream), ::oar_emu::launcher(kernel, dim3(grid), dim3(block)))
