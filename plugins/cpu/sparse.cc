// sparse_coo_matmul (oar.sparse's sparse x dense product): out[rows[k], :] += values[k] * y[cols[k], :].
#include <algorithm>
#include <vector>

#include "elementwise.h"

namespace oar_cpu {

void register_sparse_kernels(Registry& r);  // called from plugin.cc

namespace {

using oar::sdk::kElementwiseGrain;
using oar::sdk::parallel_for;

void sparse_coo_matmul_kernel(KernelContext& ctx) {
  TensorView v = ctx.input(0), rows = ctx.input(1), cols = ctx.input(2), y = ctx.input(3),
             out = ctx.output(0);
  const int64_t nnz = v.numel(), k = y.dim(0), n = y.dim(1), m = out.dim(0);
  const int64_t* pr = rows.data<int64_t>();
  const int64_t* pc = cols.data<int64_t>();
  for (int64_t i = 0; i < nnz; ++i)
    OAR_SDK_CHECK(pr[i] >= 0 && pr[i] < m && pc[i] >= 0 && pc[i] < k, OAR_ERR_OUT_OF_RANGE,
                  "sparse_coo_matmul: entry " << i << " at (" << pr[i] << ", " << pc[i]
                                              << ") is out of range for a [" << m << ", " << k << "] matrix");
  dispatch<FloatType>("sparse_coo_matmul", v.dtype(), [&](auto tag) {
    using T = decltype(tag);
    using C = oar::sdk::compute_t<T>;
    const T* pv = v.data<T>();
    const T* py = y.data<T>();
    T* po = out.data<T>();
    // Column blocks in parallel: each block reads every entry and owns its output columns (no races).
    // A block gets at least ~4M multiply-adds: below that, waking a second thread cost more than the
    // work on the shared 2-core machine (0.6 ms single-threaded against ~12 ms with 2 threads for
    // 42K entries x 64 columns).
    const int64_t grain = std::max<int64_t>(1, (int64_t{1} << 22) / std::max<int64_t>(nnz, 1));
    parallel_for(0, n, grain, [&](int64_t lo, int64_t hi) {
      const int64_t w = hi - lo;
      std::vector<C> acc(static_cast<size_t>(m * w), C(0));
      for (int64_t i = 0; i < nnz; ++i) {
        const C a = static_cast<C>(pv[i]);
        const T* src = py + pc[i] * n + lo;
        C* dst = acc.data() + pr[i] * w;
        for (int64_t j = 0; j < w; ++j) dst[j] += a * static_cast<C>(src[j]);
      }
      for (int64_t r = 0; r < m; ++r)
        for (int64_t j = 0; j < w; ++j) po[r * n + lo + j] = T(acc[static_cast<size_t>(r * w + j)]);
    });
  });
}

}  // namespace

void register_sparse_kernels(Registry& r) {
  r.add("sparse_coo_matmul", oar::sdk::float_dtypes(), &sparse_coo_matmul_kernel);
}

}  // namespace oar_cpu
