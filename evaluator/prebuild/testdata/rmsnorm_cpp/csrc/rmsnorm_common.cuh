// Shared by the row's translation units: the fp32 row kernel.
#pragma once
#include <cmath>
#include <cstdint>

namespace cacheon_rmsnorm {

// One row: y = x * rsqrt(mean(x^2) + eps) * w, accumulated in double so the
// mean of a long row loses nothing before the fp32 result.
inline void row(const float* x, const float* w, float* y, int64_t d, float eps) {
  double ss = 0;
  for (int64_t c = 0; c < d; ++c) {
    const double v = x[c];
    ss += v * v;
  }
  const float inv = 1.0f / std::sqrt(static_cast<float>(ss / static_cast<double>(d)) + eps);
  for (int64_t c = 0; c < d; ++c) y[c] = x[c] * inv * w[c];
}

}  // namespace cacheon_rmsnorm
