// Checks of the block emulator itself (test_cuda_own_kernels_host.py runs it): a kernel that needs its
// barrier must give the wrong answer without it, and a barrier not every thread reaches must abort.
// Usage: block_emu_selftest reverse 1|0 (with or without the barrier; prints the number of wrong
// elements), block_emu_selftest diverge (aborts).
#include "block_emu.h"
// block_emu.h first
#include <string>

namespace {
constexpr int kN = 256;

// Reverses each block's kN values through shared memory.
__global__ void reverse(const int* in, int* out, bool sync) {
  __shared__ int s[kN];
  const int t = threadIdx.x, base = blockIdx.x * kN;
  s[t] = in[base + t];
  if (sync) __syncthreads();
  out[base + t] = s[kN - 1 - t];
}

// Half the threads return before the barrier.
__global__ void diverge(int* out) {
  if (threadIdx.x % 2) return;
  __syncthreads();
  out[threadIdx.x] = 1;
}
}  // namespace

int main(int argc, char** argv) {
  const std::string what = argc > 1 ? argv[1] : "";
  if (what == "reverse" && argc > 2) {
    constexpr int kBlocks = 3;
    std::vector<int> in(kN * kBlocks), out(kN * kBlocks, -1);
    for (int i = 0; i < kN * kBlocks; ++i) in[i] = i;
    OAR_LAUNCH(reverse, kBlocks, kN, nullptr)(in.data(), out.data(), std::string(argv[2]) == "1");
    int wrong = 0;
    for (int b = 0; b < kBlocks; ++b)
      for (int t = 0; t < kN; ++t) wrong += out[b * kN + t] != in[b * kN + kN - 1 - t];
    std::printf("%d\n", wrong);
    return 0;
  }
  if (what == "diverge") {
    std::vector<int> out(kN);
    OAR_LAUNCH(diverge, 1, kN, nullptr)(out.data());
    return 0;
  }
  std::fprintf(stderr, "usage: block_emu_selftest reverse 1|0 | diverge\n");
  return 1;
}
