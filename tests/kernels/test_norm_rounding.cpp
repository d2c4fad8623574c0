// Batch norm's output rounds once per operation, (x − μ)·rstd·γ + β with no
// fused multiply-add (kernels/ops/norm.cpp: the bytes of the earlier scalar
// kernel, kept when its loop was vectorized), masked rows 0, at several widths.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>

#include "kernels/ops/norm.h"
#include "kernels/random.h"

namespace mare {
namespace {

TEST(BatchNormRounding, OutputIsOneRoundingPerOperation) {
  for (int64_t c : {1, 7, 16, 300, 1201}) {
    for (bool masked : {false, true}) {
      const int64_t rows = 37;
      Tensor x = Tensor::empty({rows, c}), g = Tensor::empty({c}), b = Tensor::empty({c});
      fill_uniform(x, 1, 1, -2, 2);
      fill_uniform(g, 2, 1, -1, 1);
      fill_uniform(b, 3, 1, -1, 1);
      Tensor mask = Tensor::full({rows}, 1.0f);
      if (masked)
        for (int64_t i = 0; i < rows; i += 5) mask.f32()[i] = 0.0f;
      Tensor rm = Tensor::zeros({c}), rv = Tensor::full({c}, 1.0f);
      NormResult r =
          batch_norm_forward(x, g, b, rm, rv, true, 0.1f, 1e-5f, masked ? mask : Tensor());
      for (int64_t i = 0; i < rows; ++i)
        for (int64_t j = 0; j < c; ++j) {
          float want = 0.0f;
          if (!masked || mask.f32()[i] != 0.0f) {
            // volatile: each product rounded and stored, never fused into an FMA
            volatile float t = (x.f32()[i * c + j] - r.mean.f32()[j]) * r.rstd.f32()[j];
            volatile float u = t * g.f32()[j];
            want = u + b.f32()[j];
          }
          const float got = r.out.f32()[i * c + j];
          ASSERT_EQ(std::memcmp(&got, &want, 4), 0)
              << "c " << c << (masked ? " masked" : "") << " at (" << i << ", " << j << "): " << got
              << " vs " << want;
        }
    }
  }
}

}  // namespace
}  // namespace mare
