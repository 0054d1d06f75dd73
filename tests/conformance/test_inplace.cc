// In-place writes (the assign op) on every place: into views with any strides, with broadcasting and
// casting, with overlapping source and destination, through the CPU fallback on sim (the host copy
// must be written back), the version counter, and the errors.
#include <oar/core/autograd.h>
#include <oar/core/error.h>
#include <oar/core/ops.h>
#include <oar/core/runtime.h>

#include <gtest/gtest.h>

#include <numeric>

using oar::Dims;
using oar::DType;
using oar::Place;
using oar::Tensor;
namespace ops = oar::ops;

namespace {

std::vector<std::string> places() {
  std::vector<std::string> out;
  for (Place p : oar::Runtime::get().all_places()) out.push_back(p.to_string());
  return out;
}

class InPlace : public ::testing::TestWithParam<std::string> {
 protected:
  Place place() const { return Place::parse(GetParam()); }
  Tensor iota(const Dims& d, DType t = DType::kFloat32) {
    return ops::cast(ops::arange(0, static_cast<double>(d.numel()), 1, DType::kInt64, place()).reshape(d), t);
  }
};

TEST_P(InPlace, WholeTensor) {
  Tensor x = iota({2, 3});
  ops::assign(x, ops::full({2, 3}, 7, DType::kFloat32, place()));
  EXPECT_EQ(x.to_vector<float>(), std::vector<float>(6, 7.0f));
}

TEST_P(InPlace, BroadcastAndCast) {
  Tensor x = iota({2, 3});
  Tensor row = Tensor::from_vector(std::vector<int64_t>{1, 2, 3}, {3}, DType::kInt64, place());
  ops::assign(x, row);  // int64 -> float32, [3] -> [2, 3]
  EXPECT_EQ(x.to_vector<float>(), (std::vector<float>{1, 2, 3, 1, 2, 3}));
}

TEST_P(InPlace, IntoStridedViewsSharesWithTheBase) {
  Tensor x = iota({4, 5});
  Tensor col = x.slice(1, 1, 5, 2);  // columns 1 and 3
  ops::assign(col, ops::full({}, -1, DType::kFloat32, place()));
  Tensor t = x.transpose({1, 0}).slice(1, 3, 4);  // row 3 of x, seen as a column
  ops::assign(t, ops::full({5, 1}, 9, DType::kFloat32, place()));
  std::vector<float> want(20);
  std::iota(want.begin(), want.end(), 0.0f);
  for (int r = 0; r < 4; ++r) want[r * 5 + 1] = want[r * 5 + 3] = -1;
  for (int c = 0; c < 5; ++c) want[3 * 5 + c] = 9;
  EXPECT_EQ(x.to_vector<float>(), want);
}

TEST_P(InPlace, OverlappingSourceIsReadFirst) {
  Tensor x = iota({6});
  ops::assign(x.slice(0, 1, 6), x.slice(0, 0, 5));  // shift right by one, numpy semantics
  EXPECT_EQ(x.to_vector<float>(), (std::vector<float>{0, 0, 1, 2, 3, 4}));
}

TEST_P(InPlace, BumpsTheVersionOfTheStorage) {
  Tensor x = iota({3});
  Tensor view = x.slice(0, 0, 2);
  uint32_t v = x.storage()->version();
  ops::assign(view, ops::full({}, 1, DType::kFloat32, place()));
  EXPECT_EQ(x.storage()->version(), v + 1) << "every alias of the storage sees the new version";
}

TEST_P(InPlace, Errors) {
  Tensor x = iota({2, 3});
  try {
    ops::assign(x, ops::full({4}, 1, DType::kFloat32, place()));
    FAIL() << "a non-broadcastable source must be refused";
  } catch (const oar::Error& e) {
    EXPECT_EQ(e.code(), oar::ErrorCode::kInvalidArgument);
    EXPECT_NE(std::string(e.what()).find("assign"), std::string::npos) << e.what();
  }
  Tensor small = iota({1, 3});
  EXPECT_THROW(ops::assign(small.expand({2, 3}), x), oar::Error) << "an expanded view aliases its elements";
  EXPECT_THROW(ops::assign(x, ops::full({1, 3}, 1, DType::kFloat32, place()).expand({2, 3}).reshape({6})),
               oar::Error);
}

TEST_P(InPlace, RefusedWhereAutogradWouldSeeIt) {
  Tensor w = iota({3}, DType::kFloat64);
  oar::autograd::set_requires_grad(w, true);
  try {
    ops::assign(w, ops::full({}, 0, DType::kFloat64, place()));
    FAIL() << "writing into a leaf that requires grad must be refused";
  } catch (const oar::Error& e) {
    EXPECT_EQ(e.code(), oar::ErrorCode::kPrecondition);
  }
  {
    oar::NoGradGuard no_grad;  // an optimizer update
    ops::assign(w, ops::full({}, 5, DType::kFloat64, place()));
  }
  EXPECT_EQ(w.to_vector<double>(), std::vector<double>(3, 5.0));
}

INSTANTIATE_TEST_SUITE_P(Places, InPlace, ::testing::ValuesIn(places()), [](const auto& info) {
  std::string n = info.param;
  for (char& c : n)
    if (c == ':') c = '_';
  return n;
});

}  // namespace
