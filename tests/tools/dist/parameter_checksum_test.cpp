// The checksum ranks compare to show they hold the same parameters: any single change, a swap of
// tensors and a shift of elements must move it; equal tensors in new storage must not.
#include <gtest/gtest.h>

#include "tools/dist/data_parallel.h"

namespace dist = crosstrain::dist;

namespace {

std::vector<at::Tensor> model_like() {
  at::manual_seed(3);
  return {at::randn({64, 3, 7, 7}) * 0.05, at::randn({64}), at::randn({100, 512}) * 0.01,
          at::zeros({}, at::kLong) + 120};  // a BatchNorm step counter
}

std::vector<at::Tensor> cloned(const std::vector<at::Tensor>& ts) {
  std::vector<at::Tensor> out;
  for (const auto& t : ts) out.push_back(t.clone());
  return out;
}

}  // namespace

TEST(ParameterChecksum, EqualTensorsInOtherStorageAgree) {
  const auto a = model_like();
  EXPECT_EQ(dist::parameter_checksum(a), dist::parameter_checksum(cloned(a)));
  auto strided = cloned(a);
  strided[2] = a[2].t().contiguous().t();  // same values, transposed layout
  EXPECT_EQ(dist::parameter_checksum(a), dist::parameter_checksum(strided));
}

TEST(ParameterChecksum, OneUlpInAnyElementChangesIt) {
  const auto a = model_like();
  const auto base = dist::parameter_checksum(a);
  for (int64_t index : {int64_t{0}, int64_t{1}, int64_t{51199}}) {  // even, odd, last of the big one
    auto b = cloned(a);
    auto flat = b[2].view({-1});
    const float v = flat[index].item<float>();
    flat[index] = std::nextafter(v, 1.0f);
    EXPECT_NE(dist::parameter_checksum(b), base) << index;
  }
  auto c = cloned(a);
  c[3] += 1;  // an integer buffer
  EXPECT_NE(dist::parameter_checksum(c), base);
}

TEST(ParameterChecksum, TensorsOrElementsInOtherPlacesChangeIt) {
  auto a = model_like();
  a[1] = at::arange(64, at::kFloat);
  const auto base = dist::parameter_checksum(a);
  auto swapped = a;
  std::swap(swapped[0], swapped[1]);
  EXPECT_NE(dist::parameter_checksum(swapped), base);
  auto shifted = a;
  shifted[1] = at::roll(a[1], 1);  // same elements, each one place on
  EXPECT_EQ(dist::parameter_checksum(shifted)[0], base[0]);
  EXPECT_NE(dist::parameter_checksum(shifted)[1], base[1]);
}
