// The forward pass's constants (models/layers.h): the position signal and the
// masks' broadcasts come from a cache and from device-made index grids
// (grid_ids); they must be the same floats as building them on the host, at
// every shape, on either device, and a cached tensor that something wrote into
// is not handed out again.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <vector>

#include "kernels/ops.h"
#include "models/layers.h"
#include "tests/gpu_required.h"

namespace mare {
namespace {

bool same_bytes(const Tensor& a, const Tensor& b) {
  const std::vector<float> x = a.to_vector(), y = b.to_vector();
  return x.size() == y.size() && std::memcmp(x.data(), y.data(), x.size() * sizeof(float)) == 0;
}

TEST(Constants, GridIdsRepeatRowsOrColumns) {
  const Tensor rows = grid_ids(3, 4, true, Device::cpu), cols = grid_ids(3, 4, false, Device::cpu);
  EXPECT_EQ(rows.shape(), Shape({3, 4}));
  EXPECT_EQ(rows.to_index_vector(), (std::vector<int32_t>{0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2}));
  EXPECT_EQ(cols.to_index_vector(), (std::vector<int32_t>{0, 1, 2, 3, 0, 1, 2, 3, 0, 1, 2, 3}));
  EXPECT_EQ(grid_ids(0, 5, true, Device::cpu).numel(), 0);
  EXPECT_THROW(grid_ids(-1, 2, true, Device::cpu), std::invalid_argument);
  EXPECT_THROW(grid_ids(int64_t{1} << 31, 2, true, Device::cpu), std::invalid_argument);
}

// Shorter and longer than the table's first 512 rows, in both orders, and the
// iteration term (t ≥ 1).
TEST(Constants, PositionSignalIsTheHostBuiltSignal) {
  for (int64_t T : {7, 96, 700, 5, 398})
    for (int64_t t : {0, 3}) {
      const Tensor cached = nn::position_signal(3, T, 10, t, Device::cpu);
      EXPECT_EQ(cached.shape(), Shape({3, T, 10}));
      EXPECT_TRUE(same_bytes(cached, nn::position_signal_uncached(3, T, 10, t, Device::cpu)))
          << "T " << T << ", t " << t;
    }
}

// The values, from the formulas: bran's plain signal (t = 0) counts positions from 0,
// the position-iteration signal P_t (t ≥ 1, thesis eq. 3-6) from 1.
TEST(Constants, PositionSignalValues) {
  const int64_t T = 3, D = 4;
  for (int64_t t : {0, 2}) {
    const Tensor p = nn::position_signal(1, T, D, t, Device::cpu);
    for (int64_t r = 0; r < T; ++r)
      for (int64_t j = 0; j < D; ++j) {
        const double i = t == 0 ? r : r + 1, f = std::pow(10000.0, -double(j - j % 2) / D);
        double want = j % 2 == 0 ? std::sin(i * f) : std::cos(i * f);
        if (t > 0) want += j % 2 == 0 ? std::sin(t * f) : std::cos(t * f);
        EXPECT_NEAR(p.f32()[r * D + j], want, 1e-6) << "t " << t << ", token " << r << ", " << j;
      }
  }
}

TEST(Constants, AWrittenSignalIsBuiltAnew) {
  Tensor first = nn::position_signal(2, 4, 6, 1, Device::cpu);
  const Tensor again = nn::position_signal(2, 4, 6, 1, Device::cpu);
  EXPECT_EQ(first.f32(), again.f32());  // the same tensor, handed out again
  first.f32()[0] = 42.0f;               // a mutable pointer: the cache lets it go
  const Tensor fresh = nn::position_signal(2, 4, 6, 1, Device::cpu);
  EXPECT_NE(fresh.f32(), first.f32());
  EXPECT_TRUE(same_bytes(fresh, nn::position_signal_uncached(2, 4, 6, 1, Device::cpu)));
}

TEST(ConstantsCuda, TheGpuMakesTheSameConstants) {
  MARE_NEEDS_GPU();
  for (bool by_row : {true, false}) {
    const Tensor g = grid_ids(37, 11, by_row, Device::cuda);
    EXPECT_EQ(g.device(), Device::cuda);
    EXPECT_EQ(g.to_index_vector(), grid_ids(37, 11, by_row, Device::cpu).to_index_vector());
    int32_t lo = -1, hi = -1;
    ASSERT_TRUE(g.known_index_range(lo, hi));  // vouched by its kernel: no device scan
    EXPECT_EQ(lo, 0);
    EXPECT_EQ(hi, by_row ? 36 : 10);
  }
  for (int64_t T : {9, 600})
    EXPECT_TRUE(same_bytes(nn::position_signal(4, T, 12, 2, Device::cuda),
                           nn::position_signal_uncached(4, T, 12, 2, Device::cpu)))
        << "T " << T;
}

}  // namespace
}  // namespace mare
