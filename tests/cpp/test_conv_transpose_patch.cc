// The patch ConvTranspose kernel (stride == kernel, no padding: one matmul + interleave) against
// a direct loop over the definition, with odd channel counts, a bias, non-square kernels,
// batch 2 and weights that are a graph input (transposed on every run).
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "opset/eval.h"
#include "runtime/executor.h"
#include "tensor_test_util.h"

namespace npuc {
namespace {

using testutil::maxAbsDiff;
using testutil::randomTensor;

// Y[n, m, i*kh + a, j*kw + b] = bias[m] + sum_c X[n, c, i, j] * W[c, m, a, b].
Tensor naivePatchConvTranspose(const Tensor& x, const Tensor& w, const Tensor& bias) {
  const int64_t N = x.shape()[0], C = x.shape()[1], H = x.shape()[2], W = x.shape()[3];
  const int64_t M = w.shape()[1], KH = w.shape()[2], KW = w.shape()[3];
  Tensor y(DType::Float32, {N, M, H * KH, W * KW});
  const float* xd = x.data<float>();
  const float* wd = w.data<float>();
  for (int64_t n = 0; n < N; ++n)
    for (int64_t m = 0; m < M; ++m)
      for (int64_t i = 0; i < H; ++i)
        for (int64_t a = 0; a < KH; ++a)
          for (int64_t j = 0; j < W; ++j)
            for (int64_t b = 0; b < KW; ++b) {
              double acc = bias.data<float>()[m];
              for (int64_t c = 0; c < C; ++c)
                acc += double(xd[((n * C + c) * H + i) * W + j]) * wd[((c * M + m) * KH + a) * KW + b];
              y.data<float>()[((n * M + m) * H * KH + i * KH + a) * W * KW + j * KW + b] = float(acc);
            }
  return y;
}

void expectPatchMatchesDefinition(const Shape& x_shape, int64_t m, int64_t kh, int64_t kw,
                                  bool weights_as_input) {
  const Tensor w = randomTensor({x_shape[1], m, kh, kw}, 2);
  const Tensor bias = randomTensor({m}, 3);
  Graph g;
  Value* x = g.addInput("x", DType::Float32, x_shape);
  Value* wv = weights_as_input ? g.addInput("w", DType::Float32, w.shape()) : g.addConstant(w);
  Node* n = g.appendNode("ConvTranspose", {x, wv, g.addConstant(bias)}, 1);
  n->attrs().set("kernel_shape", std::vector<int64_t>{kh, kw});
  n->attrs().set("strides", std::vector<int64_t>{kh, kw});
  inferNode(*n);
  g.addOutput(n->output());
  g.verify();
  Executor ex(g);
  const Tensor xt = randomTensor(x_shape, 1);
  std::vector<Tensor> ins{xt};
  if (weights_as_input) ins.push_back(w);
  EXPECT_LE(maxAbsDiff(ex.run(ins)[0], naivePatchConvTranspose(xt, w, bias)), 1e-4);
}

TEST(PatchConvTranspose, MatchesTheDefinition) {
  expectPatchMatchesDefinition({1, 24, 9, 7}, 1, 2, 2, false);   // the DB head's last layer
  expectPatchMatchesDefinition({2, 5, 6, 11}, 19, 2, 3, false);  // odd channels, batch 2, 2x3
  expectPatchMatchesDefinition({1, 7, 5, 5}, 3, 3, 3, true);     // weights given at run time
}

}  // namespace
}  // namespace npuc
