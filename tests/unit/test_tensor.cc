// Tensors, views, places, dtypes and the error mechanism of the core.
#include <oar/core/dtype.h>
#include <oar/core/error.h>
#include <oar/core/place.h>
#include <oar/core/runtime.h>
#include <oar/core/shape.h>
#include <oar/core/tensor.h>

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <numeric>
#include <string>
#include <vector>

namespace {

using oar::DType;
using oar::Dims;
using oar::ErrorCode;
using oar::Tensor;

std::vector<float> iota_f(int n, float start = 0) {
  std::vector<float> v(static_cast<size_t>(n));
  std::iota(v.begin(), v.end(), start);
  return v;
}

Tensor arange_f(int n) { return Tensor::from_vector(iota_f(n), Dims{n}, DType::kFloat32); }

// Runs fn, expects an oar::Error with `code`, returns its message.
template <typename Fn> std::string expect_error(Fn&& fn, ErrorCode code) {
  try {
    fn();
  } catch (const oar::Error& e) {
    EXPECT_EQ(static_cast<int>(e.code()), static_cast<int>(code))
        << "code " << oar::error_code_name(e.code()) << ", message: " << e.what();
    return e.what();
  } catch (const std::exception& e) {
    ADD_FAILURE() << "expected oar::Error, got another exception: " << e.what();
    return e.what();
  }
  ADD_FAILURE() << "expected oar::Error(" << oar::error_code_name(code) << "), nothing was thrown";
  return "";
}

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

// ---- Dims ------------------------------------------------------------------------------------------

TEST(Dims, Basics) {
  Dims d{2, 3, 4};
  EXPECT_EQ(d.size(), 3);
  EXPECT_FALSE(d.empty());
  EXPECT_EQ(d[0], 2);
  EXPECT_EQ(d[2], 4);
  EXPECT_EQ(d.numel(), 24);
  EXPECT_EQ(d.to_string(), "[2, 3, 4]");
  EXPECT_EQ(d.to_vector(), (std::vector<int64_t>{2, 3, 4}));
  EXPECT_EQ(d, Dims(std::vector<int64_t>{2, 3, 4}));
  EXPECT_NE(d, (Dims{2, 3}));
  EXPECT_NE(d, (Dims{2, 3, 5}));

  Dims scalar;
  EXPECT_TRUE(scalar.empty());
  EXPECT_EQ(scalar.numel(), 1);
  EXPECT_EQ(scalar.to_string(), "[]");

  Dims grown;
  grown.push_back(5);
  grown.push_back(7);
  EXPECT_EQ(grown, (Dims{5, 7}));
  grown.resize(3, 1);
  EXPECT_EQ(grown, (Dims{5, 7, 1}));
  EXPECT_EQ((Dims{4, 0, 3}).numel(), 0);
}

TEST(Dims, AtMostMaxDims) {
  Dims d;
  for (int i = 0; i < oar::kMaxDims; ++i) d.push_back(1);
  EXPECT_EQ(d.size(), oar::kMaxDims);
  expect_error([&] { d.push_back(1); }, ErrorCode::kInvalidArgument);
  expect_error([&] { Dims(std::vector<int64_t>(oar::kMaxDims + 1, 1)); }, ErrorCode::kInvalidArgument);
}

TEST(Dims, ContiguousStrides) {
  EXPECT_EQ(oar::contiguous_strides(Dims{2, 3, 4}), (Dims{12, 4, 1}));
  EXPECT_EQ(oar::contiguous_strides(Dims{5}), (Dims{1}));
  EXPECT_EQ(oar::contiguous_strides(Dims{}), (Dims{}));
  EXPECT_EQ(oar::contiguous_strides(Dims{1, 3}), (Dims{3, 1}));
  EXPECT_EQ(oar::contiguous_strides(Dims{7, 1, 2}), (Dims{2, 2, 1}));
}

TEST(Dims, NumelThrowsInsteadOfWrapping) {
  constexpr int64_t k2_40 = int64_t{1} << 40, k2_30 = int64_t{1} << 30;
  EXPECT_EQ((Dims{k2_40, int64_t{1} << 22}).numel(), int64_t{1} << 62);  // still fits
  std::string msg = expect_error([&] { (Dims{k2_40, k2_30}).numel(); }, ErrorCode::kInvalidArgument);
  EXPECT_NE(msg.find("[1099511627776, 1073741824] has more than 2^63-1 elements"), std::string::npos) << msg;
  EXPECT_EQ((Dims{k2_40, k2_30, 0}).numel(), 0);  // the true count
}

TEST(Dims, CheckedArithmetic) {
  EXPECT_EQ(oar::checked_mul(int64_t{1} << 31, int64_t{1} << 31, "op"), int64_t{1} << 62);
  EXPECT_EQ(oar::checked_add(INT64_MAX - 1, 1, "op"), INT64_MAX);
  std::string msg =
      expect_error([] { oar::checked_mul(int64_t{1} << 32, int64_t{1} << 31, "tile", "the output size"); },
                   ErrorCode::kInvalidArgument);
  EXPECT_EQ(msg, "tile: the output size overflows int64 (4294967296 * 2147483648)");
  expect_error([] { oar::checked_add(INT64_MAX, 1, "pad"); }, ErrorCode::kInvalidArgument);
  expect_error([] { oar::checked_mul(INT64_MIN, -1, "op"); }, ErrorCode::kInvalidArgument);

  EXPECT_EQ(oar::checked_numel(Dims{2, 3}, "zeros"), 6);
  EXPECT_EQ(oar::checked_numel(Dims{}, "zeros"), 1);
  EXPECT_EQ(oar::checked_numel(Dims{0, int64_t{1} << 62}, "zeros"), 0);
  msg = expect_error(
      [] {
        oar::checked_numel(Dims{int64_t{1} << 40, int64_t{1} << 30}, "zeros");
      },
      ErrorCode::kInvalidArgument);
  EXPECT_EQ(msg, "zeros: shape [1099511627776, 1073741824] has more than 2^63-1 elements");
  // Zero elements, but a contiguous stride would still overflow: refused, as numpy does.
  expect_error(
      [] {
        oar::checked_numel(Dims{0, int64_t{1} << 40, int64_t{1} << 30}, "zeros");
      },
      ErrorCode::kInvalidArgument);
  msg = expect_error([] { oar::checked_numel(Dims{3, -2}, "zeros"); }, ErrorCode::kInvalidArgument);
  EXPECT_EQ(msg, "zeros: shape [3, -2] has a negative dimension at axis 1");
}

TEST(Tensor, SizesAreCheckedBeforeAllocating) {
  std::string msg = expect_error(
      [] {
        Tensor::empty(Dims{int64_t{1} << 40, int64_t{1} << 30}, DType::kFloat32);
      },
      ErrorCode::kInvalidArgument);
  EXPECT_NE(msg.find("2^63-1 elements"), std::string::npos) << msg;
  // 2^62 float32 elements: the count fits, the byte size does not.
  msg = expect_error([] { Tensor::empty(Dims{int64_t{1} << 62}, DType::kFloat32); },
                     ErrorCode::kInvalidArgument);
  EXPECT_NE(msg.find("has more than 2^63-1 bytes"), std::string::npos) << msg;
  // 4 TiB: representable, but more than the CPU has.
  msg = expect_error([] { Tensor::empty(Dims{int64_t{1} << 40}, DType::kFloat32); }, ErrorCode::kOutOfMemory);
  EXPECT_NE(msg.find("needs 4398046511104 bytes, but cpu has"), std::string::npos) << msg;
  expect_error([] { Tensor::empty(Dims{2, -1}, DType::kFloat32); }, ErrorCode::kInvalidArgument);
}

TEST(TensorView, ViewSizesAreChecked) {
  Tensor one = Tensor::from_vector(std::vector<float>{1.f}, Dims{1}, DType::kFloat32);
  expect_error([&] { one.expand(Dims{int64_t{1} << 40, int64_t{1} << 30}); }, ErrorCode::kInvalidArgument);
  expect_error([&] { one.expand(Dims{-2}); }, ErrorCode::kInvalidArgument);
  EXPECT_EQ(one.expand(Dims{int64_t{1} << 40}).dims(), (Dims{int64_t{1} << 40}));  // a stride-0 view is fine
  Tensor four = arange_f(4);
  // (2^62 + 1) * 4 wraps to 4 in int64: must not pass for four's 4 elements.
  expect_error([&] { four.reshape(Dims{(int64_t{1} << 62) + 1, 4}); }, ErrorCode::kInvalidArgument);
  // Steps near the int64 limits take one element, without overflowing.
  EXPECT_EQ(four.slice(0, 0, 4, INT64_MAX).dims(), (Dims{1}));
  EXPECT_EQ(four.slice(0, 3, INT64_MIN, INT64_MIN).dims(), (Dims{1}));
  EXPECT_EQ(four.slice(0, -1, -5, -2).dims(), (Dims{2}));
}

// ---- creation and round trips ---------------------------------------------------------------------------

TEST(Tensor, EmptyIsContiguousOnCpu) {
  Tensor t = Tensor::empty(Dims{2, 3}, DType::kFloat32);
  ASSERT_TRUE(t.defined());
  EXPECT_EQ(t.dtype(), DType::kFloat32);
  EXPECT_EQ(t.dims(), (Dims{2, 3}));
  EXPECT_EQ(t.strides(), (Dims{3, 1}));
  EXPECT_EQ(t.offset(), 0);
  EXPECT_EQ(t.ndim(), 2);
  EXPECT_EQ(t.numel(), 6);
  EXPECT_EQ(t.dim(0), 2);
  EXPECT_EQ(t.dim(-1), 3);
  EXPECT_TRUE(t.is_contiguous());
  EXPECT_TRUE(t.place().is_cpu());
  ASSERT_NE(t.storage(), nullptr);
  EXPECT_GE(t.storage()->bytes(), 6 * sizeof(float));
  EXPECT_NE(t.data_ptr(), nullptr);

  Tensor scalar = Tensor::empty(Dims{}, DType::kInt64);
  EXPECT_EQ(scalar.ndim(), 0);
  EXPECT_EQ(scalar.numel(), 1);

  Tensor none = Tensor::empty(Dims{0, 4}, DType::kFloat32);
  EXPECT_EQ(none.numel(), 0);
  EXPECT_TRUE(none.to_vector<float>().empty());
}

TEST(Tensor, FromHostRoundTrip) {
  std::vector<float> f = {1.5f, -2.f, 3.25f, 0.f, 1e30f, -0.f};
  EXPECT_EQ(Tensor::from_vector(f, Dims{2, 3}, DType::kFloat32).to_vector<float>(), f);

  std::vector<double> d = {1e-300, 2.5, -7};
  EXPECT_EQ(Tensor::from_vector(d, Dims{3}, DType::kFloat64).to_vector<double>(), d);

  std::vector<int64_t> i64 = {INT64_MIN, -1, 0, 1, INT64_MAX, 42};
  Tensor ti = Tensor::from_vector(i64, Dims{3, 2}, DType::kInt64);
  EXPECT_EQ(ti.dtype(), DType::kInt64);
  EXPECT_EQ(ti.to_vector<int64_t>(), i64);

  std::vector<int32_t> i32 = {7, -8, 9, -10};
  EXPECT_EQ(Tensor::from_vector(i32, Dims{2, 2}, DType::kInt32).to_vector<int32_t>(), i32);

  std::vector<uint8_t> u8 = {0, 1, 254, 255};
  EXPECT_EQ(Tensor::from_vector(u8, Dims{4}, DType::kUInt8).to_vector<uint8_t>(), u8);

  std::vector<uint8_t> b = {1, 0, 1};
  EXPECT_EQ(Tensor::from_vector(b, Dims{3}, DType::kBool).to_vector<uint8_t>(), b);

  std::vector<float> one = {3.f};
  Tensor s = Tensor::from_vector(one, Dims{}, DType::kFloat32);
  EXPECT_EQ(s.ndim(), 0);
  EXPECT_EQ(s.to_vector<float>(), one);
}

TEST(Tensor, FromHostCopiesTheData) {
  std::vector<float> src = {1, 2, 3};
  Tensor t = Tensor::from_host(src.data(), Dims{3}, DType::kFloat32);
  src[0] = 100;
  EXPECT_EQ(t.to_vector<float>(), (std::vector<float>{1, 2, 3}));
  std::vector<float> dst(3, -1);
  t.copy_to_host(dst.data(), dst.size() * sizeof(float));
  EXPECT_EQ(dst, (std::vector<float>{1, 2, 3}));
}

TEST(Tensor, ToSamePlaceIsTheSameTensor) {
  Tensor t = arange_f(4);
  Tensor u = t.to(oar::cpu_place());
  EXPECT_TRUE(u.shares_storage(t));
  EXPECT_TRUE(t.cpu().shares_storage(t));
}

// ---- views ------------------------------------------------------------------------------------------

TEST(TensorView, ReshapeInfersMinusOne) {
  Tensor t = Tensor::from_vector(iota_f(24), Dims{2, 3, 4}, DType::kFloat32);
  Tensor r = t.reshape(Dims{-1, 4});
  EXPECT_EQ(r.dims(), (Dims{6, 4}));
  EXPECT_EQ(r.strides(), (Dims{4, 1}));
  EXPECT_TRUE(r.shares_storage(t));
  EXPECT_EQ(r.to_vector<float>(), iota_f(24));

  EXPECT_EQ(t.reshape(Dims{2, -1, 3}).dims(), (Dims{2, 4, 3}));
  EXPECT_EQ(t.reshape(Dims{-1}).dims(), (Dims{24}));
  EXPECT_EQ(t.reshape(Dims{24, 1}).dims(), (Dims{24, 1}));
  Tensor one = Tensor::from_vector(std::vector<float>{5}, Dims{1, 1}, DType::kFloat32);
  EXPECT_EQ(one.reshape(Dims{}).ndim(), 0);

  expect_error([&] { t.reshape(Dims{-1, -1}); }, ErrorCode::kInvalidArgument);
  expect_error([&] { t.reshape(Dims{5, 5}); }, ErrorCode::kInvalidArgument);
  expect_error([&] { t.reshape(Dims{-1, 5}); }, ErrorCode::kInvalidArgument);
}

TEST(TensorView, ViewSharesAndRefusesWhenACopyIsNeeded) {
  Tensor t = Tensor::from_vector(iota_f(6), Dims{2, 3}, DType::kFloat32);
  Tensor v = t.view(Dims{3, 2});
  EXPECT_TRUE(v.shares_storage(t));
  EXPECT_EQ(v.dims(), (Dims{3, 2}));

  Tensor tt = t.transpose({1, 0});  // [3, 2], strides [1, 3]
  EXPECT_THROW(tt.view(Dims{6}), oar::Error);

  // reshape makes the copy view refused: values in the transposed (logical) order.
  Tensor flat = tt.reshape(Dims{6});
  EXPECT_EQ(flat.dims(), (Dims{6}));
  EXPECT_EQ(flat.to_vector<float>(), (std::vector<float>{0, 3, 1, 4, 2, 5}));
  EXPECT_FALSE(flat.shares_storage(t));
  EXPECT_TRUE(flat.is_contiguous());
}

TEST(TensorView, Transpose) {
  Tensor t = Tensor::from_vector(iota_f(24), Dims{2, 3, 4}, DType::kFloat32);
  Tensor p = t.transpose({2, 0, 1});
  EXPECT_EQ(p.dims(), (Dims{4, 2, 3}));
  EXPECT_EQ(p.strides(), (Dims{1, 12, 4}));
  EXPECT_EQ(p.offset(), 0);
  EXPECT_TRUE(p.shares_storage(t));
  EXPECT_FALSE(p.is_contiguous());
  std::vector<float> got = p.to_vector<float>();
  ASSERT_EQ(got.size(), 24u);
  for (int k = 0; k < 4; ++k)
    for (int i = 0; i < 2; ++i)
      for (int j = 0; j < 3; ++j) EXPECT_EQ(got[k * 6 + i * 3 + j], i * 12 + j * 4 + k);

  Tensor back = p.transpose({1, 2, 0});
  EXPECT_EQ(back.dims(), t.dims());
  EXPECT_TRUE(back.is_contiguous());
  EXPECT_EQ(back.to_vector<float>(), iota_f(24));

  expect_error([&] { t.transpose({0, 0, 1}); }, ErrorCode::kInvalidArgument);
  expect_error([&] { t.transpose({0, 1}); }, ErrorCode::kInvalidArgument);
}

TEST(TensorView, SliceWithStepsAndNegativeIndices) {
  Tensor x = arange_f(10);
  Tensor s = x.slice(0, 1, 8, 3);
  EXPECT_EQ(s.dims(), (Dims{3}));
  EXPECT_EQ(s.strides(), (Dims{3}));
  EXPECT_EQ(s.offset(), 1);
  EXPECT_TRUE(s.shares_storage(x));
  EXPECT_FALSE(s.is_contiguous());
  EXPECT_EQ(s.to_vector<float>(), (std::vector<float>{1, 4, 7}));

  EXPECT_EQ(x.slice(0, -3, 10).to_vector<float>(), (std::vector<float>{7, 8, 9}));
  EXPECT_EQ(x.slice(0, 0, -1).to_vector<float>(), iota_f(9));
  EXPECT_EQ(x.slice(-1, -4, -1, 2).to_vector<float>(), (std::vector<float>{6, 8}));
  EXPECT_EQ(x.slice(0, 2, 5).offset(), 2);
  EXPECT_TRUE(x.slice(0, 2, 5).is_contiguous());
  EXPECT_EQ(x.slice(0, 4, 4).numel(), 0);

  // A 2-D slice along the inner axis keeps the outer stride.
  Tensor m = Tensor::from_vector(iota_f(20), Dims{4, 5}, DType::kFloat32);
  Tensor c = m.slice(1, 1, 5, 2);
  EXPECT_EQ(c.dims(), (Dims{4, 2}));
  EXPECT_EQ(c.strides(), (Dims{5, 2}));
  EXPECT_EQ(c.offset(), 1);
  EXPECT_EQ(c.to_vector<float>(), (std::vector<float>{1, 3, 6, 8, 11, 13, 16, 18}));
  // Slicing a slice composes offsets and strides.
  Tensor cc = c.slice(0, 1, 4, 2);
  EXPECT_EQ(cc.dims(), (Dims{2, 2}));
  EXPECT_EQ(cc.offset(), 6);
  EXPECT_EQ(cc.to_vector<float>(), (std::vector<float>{6, 8, 16, 18}));

  expect_error([&] { x.slice(1, 0, 1); }, ErrorCode::kOutOfRange);  // no axis 1
  expect_error([&] { x.slice(0, 0, 5, 0); }, ErrorCode::kInvalidArgument);
}

TEST(TensorView, SliceClampsOutOfRangeBounds) {
  // As in numpy and PaddlePaddle: bounds past either end are clamped.
  Tensor x = arange_f(10);
  EXPECT_EQ(x.slice(0, 7, 100).to_vector<float>(), (std::vector<float>{7, 8, 9}));
  EXPECT_EQ(x.slice(0, -100, 2).to_vector<float>(), (std::vector<float>{0, 1}));
}

TEST(TensorView, SqueezeUnsqueeze) {
  Tensor t = Tensor::from_vector(iota_f(6), Dims{1, 3, 1, 2}, DType::kFloat32);
  Tensor all = t.squeeze();
  EXPECT_EQ(all.dims(), (Dims{3, 2}));
  EXPECT_TRUE(all.shares_storage(t));
  EXPECT_EQ(all.to_vector<float>(), iota_f(6));
  EXPECT_EQ(t.squeeze({0}).dims(), (Dims{3, 1, 2}));
  EXPECT_EQ(t.squeeze({-2}).dims(), (Dims{1, 3, 2}));
  EXPECT_EQ(t.squeeze({0, 2}).dims(), (Dims{3, 2}));

  Tensor u = all.unsqueeze(0);
  EXPECT_EQ(u.dims(), (Dims{1, 3, 2}));
  EXPECT_TRUE(u.shares_storage(t));
  EXPECT_EQ(all.unsqueeze(1).dims(), (Dims{3, 1, 2}));
  EXPECT_EQ(all.unsqueeze(2).dims(), (Dims{3, 2, 1}));
  EXPECT_EQ(all.unsqueeze(-1).dims(), (Dims{3, 2, 1}));
  EXPECT_EQ(all.unsqueeze(1).to_vector<float>(), iota_f(6));
  expect_error([&] { all.unsqueeze(4); }, ErrorCode::kOutOfRange);
}

TEST(TensorView, ExpandUsesStrideZero) {
  Tensor x = Tensor::from_vector(std::vector<float>{1, 2, 3}, Dims{3, 1}, DType::kFloat32);
  Tensor e = x.expand(Dims{2, 3, 4});
  EXPECT_EQ(e.dims(), (Dims{2, 3, 4}));
  EXPECT_EQ(e.strides()[0], 0);
  EXPECT_EQ(e.strides()[2], 0);
  EXPECT_EQ(e.strides()[1], 1);
  EXPECT_TRUE(e.shares_storage(x));
  EXPECT_FALSE(e.is_contiguous());
  std::vector<float> got = e.to_vector<float>();
  ASSERT_EQ(got.size(), 24u);
  for (int b = 0; b < 2; ++b)
    for (int i = 0; i < 3; ++i)
      for (int j = 0; j < 4; ++j) EXPECT_EQ(got[b * 12 + i * 4 + j], i + 1);

  Tensor c = e.contiguous();
  EXPECT_TRUE(c.is_contiguous());
  EXPECT_EQ(c.to_vector<float>(), got);

  EXPECT_EQ(x.expand(Dims{3, 5}).dims(), (Dims{3, 5}));
  expect_error([&] { x.expand(Dims{4, 4}); }, ErrorCode::kInvalidArgument);  // 3 does not broadcast to 4
  expect_error([&] { x.expand(Dims{3}); }, ErrorCode::kInvalidArgument);     // fewer dims
  Tensor y = Tensor::from_vector(iota_f(6), Dims{3, 2}, DType::kFloat32);
  expect_error([&] { y.expand(Dims{3, 4}); }, ErrorCode::kInvalidArgument);
}

TEST(TensorView, ViewsShareStorageAndSeeWrites) {
  Tensor base = Tensor::from_vector(iota_f(6), Dims{2, 3}, DType::kFloat32);
  Tensor tr = base.transpose({1, 0});
  Tensor col = base.slice(1, 1, 3);  // [[1, 2], [4, 5]]
  Tensor flat = base.reshape(Dims{6});
  EXPECT_TRUE(tr.shares_storage(base));
  EXPECT_TRUE(col.shares_storage(base));
  EXPECT_TRUE(flat.shares_storage(base));

  // Write through the base: every view sees it.
  static_cast<float*>(base.data_ptr())[4] = 100;  // base[1][1]
  EXPECT_EQ(tr.to_vector<float>(), (std::vector<float>{0, 3, 1, 100, 2, 5}));
  EXPECT_EQ(col.to_vector<float>(), (std::vector<float>{1, 2, 100, 5}));
  EXPECT_EQ(flat.to_vector<float>()[4], 100);

  // Write through a view (data_ptr is its element 0, base[0][1]): the base sees it.
  EXPECT_EQ(static_cast<char*>(col.data_ptr()) - static_cast<char*>(base.data_ptr()),
            static_cast<std::ptrdiff_t>(sizeof(float)));
  static_cast<float*>(col.data_ptr())[0] = -1;
  EXPECT_EQ(base.to_vector<float>(), (std::vector<float>{0, -1, 2, 3, 100, 5}));

  // A view outlives its base: the storage is shared, not owned by the base.
  Tensor survivor;
  {
    Tensor tmp = Tensor::from_vector(iota_f(4), Dims{4}, DType::kFloat32);
    survivor = tmp.slice(0, 2, 4);
  }
  EXPECT_EQ(survivor.to_vector<float>(), (std::vector<float>{2, 3}));
}

TEST(TensorView, IsContiguous) {
  Tensor t = Tensor::from_vector(iota_f(24), Dims{2, 3, 4}, DType::kFloat32);
  EXPECT_TRUE(t.is_contiguous());
  EXPECT_FALSE(t.transpose({0, 2, 1}).is_contiguous());
  EXPECT_TRUE(t.slice(0, 1, 2).is_contiguous());       // one whole outer row
  EXPECT_FALSE(t.slice(2, 0, 2).is_contiguous());      // part of each inner row
  EXPECT_FALSE(t.slice(2, 0, 4, 2).is_contiguous());   // a step
  EXPECT_TRUE(t.unsqueeze(1).is_contiguous());
  EXPECT_TRUE(t.reshape(Dims{6, 4}).is_contiguous());
  EXPECT_TRUE(t.transpose({0, 2, 1}).contiguous().is_contiguous());
  EXPECT_EQ(t.contiguous().data_ptr(), t.data_ptr());  // already contiguous: no copy
}

TEST(Tensor, VersionCounterIsSharedByViews) {
  Tensor base = arange_f(6);
  Tensor view = base.slice(0, 1, 4);
  Tensor other = arange_f(6);
  uint32_t v0 = base.storage()->version();
  uint32_t o0 = other.storage()->version();
  view.storage()->bump_version();
  EXPECT_EQ(base.storage()->version(), v0 + 1);
  EXPECT_EQ(view.storage()->version(), v0 + 1);
  base.storage()->bump_version();
  EXPECT_EQ(view.storage()->version(), v0 + 2);
  EXPECT_EQ(other.storage()->version(), o0);
}

// ---- places ------------------------------------------------------------------------------------------

TEST(Place, CpuParsesAndPrints) {
  oar::Place cpu = oar::Place::parse("cpu");
  EXPECT_TRUE(cpu.is_cpu());
  EXPECT_EQ(cpu.index, 0);
  EXPECT_EQ(cpu, oar::cpu_place());
  EXPECT_EQ(oar::Place::parse("cpu:0"), oar::cpu_place());
  EXPECT_EQ(oar::cpu_place().to_string(), "cpu");
  EXPECT_EQ(oar::Place::parse(oar::cpu_place().to_string()), oar::cpu_place());
}

TEST(Place, PluginDeviceTypeParsesAndPrints) {
  const oar::DeviceType* sim = oar::Runtime::get().find_device_type("sim");
  ASSERT_NE(sim, nullptr) << "the sim plugin did not load";
  oar::Place p = oar::Place::parse("sim:1");
  EXPECT_EQ(p.type, sim->id);
  EXPECT_EQ(p.index, 1);
  EXPECT_FALSE(p.is_cpu());
  EXPECT_EQ(p.to_string(), "sim:1");
  EXPECT_EQ(oar::Place::parse(p.to_string()), p);
  oar::Place p0 = oar::Place::parse("sim");
  EXPECT_EQ(p0.type, sim->id);
  EXPECT_EQ(p0.index, 0);
  EXPECT_EQ(p0.to_string(), "sim:0");
  EXPECT_NE(p0, p);
}

TEST(Place, UnknownDeviceTypeIsNotFound) {
  std::string msg = expect_error([] { oar::Place::parse("nosuchdevice:0"); }, ErrorCode::kNotFound);
  EXPECT_TRUE(contains(msg, "nosuchdevice")) << msg;
  expect_error([] { oar::Place::parse("nosuchdevice"); }, ErrorCode::kNotFound);
}

TEST(Place, MalformedIsInvalidArgument) {
  for (const char* text : {"", "cpu:", "cpu:x", "cpu:1x", ":0", "cpu:-1", "cpu:0:0"}) {
    SCOPED_TRACE(std::string("parsing \"") + text + "\"");
    expect_error([&] { oar::Place::parse(text); }, ErrorCode::kInvalidArgument);
  }
}

// ---- dtypes ------------------------------------------------------------------------------------------

TEST(DTypes, NamesSizesAndParse) {
  struct Row {
    DType t;
    const char* name;
    int64_t size;
  };
  const Row rows[] = {
      {DType::kBool, "bool", 1},         {DType::kInt8, "int8", 1},           {DType::kUInt8, "uint8", 1},
      {DType::kInt16, "int16", 2},       {DType::kInt32, "int32", 4},         {DType::kInt64, "int64", 8},
      {DType::kFloat16, "float16", 2},   {DType::kBFloat16, "bfloat16", 2},   {DType::kFloat32, "float32", 4},
      {DType::kFloat64, "float64", 8},   {DType::kComplex64, "complex64", 8}, {DType::kComplex128, "complex128", 16},
  };
  static_assert(sizeof(rows) / sizeof(rows[0]) == oar::kNumDTypes, "every dtype is listed");
  for (const Row& r : rows) {
    SCOPED_TRACE(r.name);
    EXPECT_STREQ(oar::dtype_name(r.t), r.name);
    EXPECT_EQ(oar::dtype_size(r.t), r.size);
    EXPECT_EQ(oar::parse_dtype(r.name), r.t);
    EXPECT_TRUE(oar::is_valid_dtype(static_cast<int32_t>(r.t)));
  }
  expect_error([] { oar::parse_dtype("float128"); }, ErrorCode::kType);
  expect_error([] { oar::parse_dtype(""); }, ErrorCode::kType);
  EXPECT_FALSE(oar::is_valid_dtype(-1));
  EXPECT_FALSE(oar::is_valid_dtype(oar::kNumDTypes));
}

TEST(DTypes, Categories) {
  for (DType t : {DType::kFloat16, DType::kBFloat16, DType::kFloat32, DType::kFloat64}) {
    EXPECT_TRUE(oar::is_floating(t)) << oar::dtype_name(t);
    EXPECT_FALSE(oar::is_integral(t)) << oar::dtype_name(t);
    EXPECT_FALSE(oar::is_complex(t)) << oar::dtype_name(t);
  }
  for (DType t : {DType::kInt8, DType::kUInt8, DType::kInt16, DType::kInt32, DType::kInt64}) {
    EXPECT_TRUE(oar::is_integral(t)) << oar::dtype_name(t);
    EXPECT_FALSE(oar::is_floating(t)) << oar::dtype_name(t);
  }
  EXPECT_FALSE(oar::is_integral(DType::kBool));
  EXPECT_FALSE(oar::is_floating(DType::kBool));
  EXPECT_TRUE(oar::is_complex(DType::kComplex64));
  EXPECT_TRUE(oar::is_complex(DType::kComplex128));
  EXPECT_FALSE(oar::is_floating(DType::kComplex64));
}

// ---- errors ------------------------------------------------------------------------------------------

TEST(Errors, EnforceThrowsWithCodeAndMessage) {
  int index = 5, bound = 3;
  try {
    OAR_ENFORCE(index < bound, ErrorCode::kOutOfRange, "index " << index << " is out of range [0, " << bound << ")");
    FAIL() << "OAR_ENFORCE did not throw";
  } catch (const oar::Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kOutOfRange);
    EXPECT_TRUE(contains(e.what(), "index 5 is out of range [0, 3)")) << e.what();
    EXPECT_EQ(e.native_code(), 0);
  }
  // oar::Error is a std::runtime_error.
  EXPECT_THROW(OAR_THROW(ErrorCode::kUnimplemented, "not yet"), std::runtime_error);
  expect_error([] { OAR_THROW(ErrorCode::kOutOfMemory, "no memory"); }, ErrorCode::kOutOfMemory);
  expect_error([] { OAR_THROW(ErrorCode::kType, "bad dtype"); }, ErrorCode::kType);
}

TEST(Errors, EnforceBuildsTheMessageOnlyOnFailure) {
  int evaluated = 0;
  auto side_effect = [&] {
    ++evaluated;
    return "message";
  };
  OAR_ENFORCE(true, ErrorCode::kInternal, side_effect());
  EXPECT_EQ(evaluated, 0);
  EXPECT_THROW(OAR_ENFORCE(false, ErrorCode::kInternal, side_effect()), oar::Error);
  EXPECT_EQ(evaluated, 1);
}

TEST(Errors, CodesMatchTheAbiAndHaveNames) {
  EXPECT_EQ(static_cast<int>(ErrorCode::kInvalidArgument), OAR_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(static_cast<int>(ErrorCode::kOutOfMemory), OAR_ERR_OUT_OF_MEMORY);
  EXPECT_EQ(static_cast<int>(ErrorCode::kExternal), OAR_ERR_EXTERNAL);
  std::vector<std::string> names;
  for (ErrorCode c : {ErrorCode::kInvalidArgument, ErrorCode::kType, ErrorCode::kOutOfRange, ErrorCode::kOutOfMemory,
                      ErrorCode::kNotFound, ErrorCode::kUnimplemented, ErrorCode::kUnavailable,
                      ErrorCode::kPrecondition, ErrorCode::kAbiMismatch, ErrorCode::kInternal, ErrorCode::kExternal}) {
    const char* n = oar::error_code_name(c);
    ASSERT_NE(n, nullptr);
    EXPECT_GT(std::strlen(n), 0u);
    for (const std::string& seen : names) EXPECT_NE(seen, n) << "two codes share the name " << n;
    names.push_back(n);
  }
  oar::Error e(ErrorCode::kExternal, "vendor failed", 719);
  EXPECT_EQ(e.native_code(), 719);
  EXPECT_STREQ(e.what(), "vendor failed");
}

}  // namespace
