// norm.rmsnorm on the CPU as a torch operator. Host C++ only: the cpu
// prebuild target compiles this translation unit with the host compiler.
#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <torch/library.h>

#include "rmsnorm_common.cuh"

namespace {

void rmsnorm(const at::Tensor& x, const at::Tensor& weight, at::Tensor& out, double eps) {
  TORCH_CHECK(x.dim() >= 1 && x.size(-1) == weight.numel(), "rmsnorm: weight must match the last dim of x");
  TORCH_CHECK(out.sizes() == x.sizes(), "rmsnorm: out must have x's shape");
  const at::Tensor xf = x.to(at::kFloat).contiguous();
  const at::Tensor wf = weight.to(at::kFloat).contiguous();
  const int64_t d = xf.size(-1);
  const int64_t rows = d == 0 ? 0 : xf.numel() / d;
  at::Tensor yf = at::empty_like(xf);
  const float* px = xf.data_ptr<float>();
  const float* pw = wf.data_ptr<float>();
  float* py = yf.data_ptr<float>();
  const float e = static_cast<float>(eps);
  at::parallel_for(0, rows, 16, [&](int64_t lo, int64_t hi) {
    for (int64_t r = lo; r < hi; ++r) cacheon_rmsnorm::row(px + r * d, pw, py + r * d, d, e);
  });
  out.copy_(yf);
}

}  // namespace

TORCH_LIBRARY(cacheon_rmsnorm_cpp, m) {
  m.def("rmsnorm(Tensor x, Tensor weight, Tensor(a!) out, float eps) -> ()");
}

TORCH_LIBRARY_IMPL(cacheon_rmsnorm_cpp, CompositeExplicitAutograd, m) {
  m.impl("rmsnorm", &rmsnorm);
}
