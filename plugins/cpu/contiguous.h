// A contiguous copy of a strided input, made inside a kernel registered for strided inputs, for the
// layouts it cannot read in place (the copy the core makes for kernels that take contiguous inputs only).
#pragma once

#include <cstdlib>
#include <memory>
#include <new>

#include "cpu_common.h"

namespace oar_cpu {

class ContiguousCopy {
 public:
  ContiguousCopy() = default;
  explicit ContiguousCopy(const TensorView& t) {
    const std::vector<int64_t> dims = t.shape(), st = contiguous_strides(dims);
    const size_t bytes = static_cast<size_t>(t.numel()) * oar::sdk::dtype_size(t.dtype());
    buf_.reset(static_cast<char*>(std::aligned_alloc(64, (bytes + 63) / 64 * 64 + 64)));
    if (!buf_) throw std::bad_alloc();
    const int32_t bits = bits_dtype(t.dtype());  // moved bit for bit
    OarTensorDesc d = *t.desc();
    d.struct_size = sizeof(d);
    d.data = buf_.get();
    d.dtype = bits;
    d.dims = dims.data();
    d.strides = st.data();
    d.offset = 0;
    const Retyped in(t, bits);
    visit_bits(t.dtype(),
               [&](auto tag) { oar::sdk::strided_copy<decltype(tag)>(TensorView(&d), in.view()); });
  }
  const void* data() const { return buf_.get(); }

 private:
  struct Free {
    void operator()(char* p) const { std::free(p); }
  };
  std::unique_ptr<char, Free> buf_;
};

}  // namespace oar_cpu
