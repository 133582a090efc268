// The fast simulator kernels against their references, to the bit: the packed u8 x s8 GEMM
// tile (AVX-512 VNNI or portable), the vector requantization epilogue, and the fast conv paths
// (packed GEMM with and without im2col, direct depthwise at any stride) on shapes larger than
// test_quant_sim.cc's, with extreme inputs and weights that push the accumulator bounds.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <map>
#include <random>
#include <sstream>
#include <tuple>
#include <utility>

#include "opset/eval.h"
#include "pass_test_util.h"
#include "quant/binary_requant.h"
#include "quant/graph/calibrator.h"
#include "quant/graph/quantizer.h"
#include "quant/int_limits.h"
#include "quant/qparams.h"
#include "quant/requant.h"
#include "quant/sim/int8_conv.h"
#include "quant/sim/int8_gemm_kernel.h"
#include "quant/sim/phase_plane.h"
#include "quant/sim/quantized_executor.h"
#include "quant/sim/requant_row.h"

namespace npuc::quant {
namespace {

int pick(std::mt19937& gen, int lo, int hi) {
  return std::uniform_int_distribution<int>(lo, hi)(gen);
}

std::vector<int8_t> randomBytes(size_t n, std::mt19937& gen, int lo, int hi) {
  std::vector<int8_t> v(n);
  for (auto& x : v) x = static_cast<int8_t>(pick(gen, lo, hi));
  return v;
}

TEST(QuantSimKernels, GemmTileMatchesPlainSum) {
  std::mt19937 gen(7);
  for (int trial = 0; trial < 50; ++trial) {
    const int64_t rows = pick(gen, 1, 2 * kGemmRows + 3);
    const int64_t depth = pick(gen, 1, 70);  // often not a multiple of 4
    const int64_t columns = pick(gen, 1, 3 * kGemmCols + 5);
    const std::vector<int8_t> w = randomBytes(static_cast<size_t>(rows * depth), gen, -127, 127);
    const std::vector<int8_t> x = randomBytes(static_cast<size_t>(depth * columns), gen, -128, 127);
    const PackedGemmWeights packed = packGemmWeights(w.data(), rows, depth);
    std::vector<const int8_t*> row_ptrs;
    for (int64_t k = 0; k < depth; ++k) row_ptrs.push_back(x.data() + k * columns);
    std::vector<uint8_t> b(packedActivationBytes(depth, columns));
    packGemmActivations(row_ptrs.data(), depth, columns, b.data());
    std::vector<int32_t> tile(static_cast<size_t>(kGemmRows * kGemmCols));
    for (int64_t r0 = 0; r0 < rows; r0 += kGemmRows) {
      for (int64_t p0 = 0; p0 < columns; p0 += kGemmCols) {
        gemmMicroTile(packed.rowBlock(r0 / kGemmRows),
                      b.data() + (p0 / kGemmCols) * packed.depth_groups * kGemmCols * 4, packed.depth_groups,
                      tile.data());
        for (int64_t m = 0; m < std::min(kGemmRows, rows - r0); ++m) {
          for (int64_t j = 0; j < std::min(kGemmCols, columns - p0); ++j) {
            int64_t want = 0;  // sum of (q_x + 128) * w
            for (int64_t k = 0; k < depth; ++k) {
              want += (int64_t{x[static_cast<size_t>(k * columns + p0 + j)]} + kUnsignedOffset) *
                      w[static_cast<size_t>((r0 + m) * depth + k)];
            }
            ASSERT_EQ(tile[static_cast<size_t>(m * kGemmCols + j)], want)
                << "trial " << trial << " row " << r0 + m << " column " << p0 + j << " depth " << depth;
          }
        }
      }
    }
  }
}

TEST(QuantSimKernels, RequantRowMatchesReferenceIncludingSaturation) {
  std::mt19937 gen(11);
  std::uniform_int_distribution<int32_t> any(kInt32Min, kInt32Max);
  std::uniform_real_distribution<double> log2m(-34.0, 29.5);  // zero multiplier .. near 2^30
  int64_t compared = 0;
  for (int trial = 0; trial < 400; ++trial) {
    const FixedPointMultiplier m = quantizeMultiplier(std::exp2(log2m(gen)));
    const int32_t zp = pick(gen, kActivationQMin, kActivationQMax);
    const int64_t n = pick(gen, 0, 70);  // vector body and scalar tail
    const bool small = trial % 2 == 0;   // typical accumulators, or the whole int32 range
    std::vector<int32_t> acc(static_cast<size_t>(n));
    for (auto& a : acc) a = small ? pick(gen, -3000000, 3000000) : any(gen);
    const int32_t bias = small ? pick(gen, -100000, 100000) : 0;
    // The int32 extremes only with no bias: acc + bias would overflow int32 (UB, found by UBSan).
    if (n > 1 && bias == 0) acc[0] = kInt32Min, acc[1] = kInt32Max;
    // Around the magnitude where |acc * M| reaches 512 (the vector path clamps magnitudes there):
    // 2^(r-21) +- 1 with either sign, when it is an int32.
    const int64_t edge = int64_t{1} << std::clamp(m.rightShift() - 21, 0, 31);
    for (int64_t i = 2, k = 0; i < n && k < 6 && bias == 0 && edge < kInt32Max; ++i, ++k) {
      acc[static_cast<size_t>(i)] = static_cast<int32_t>((k % 2 ? -1 : 1) * (edge + k / 2 - 1));
    }
    std::vector<int8_t> got(static_cast<size_t>(n));
    requantizeRowToInt8(acc.data(), n, bias, m, zp, got.data());
    for (int64_t i = 0; i < n; ++i) {
      ASSERT_EQ(got[static_cast<size_t>(i)], requantizeToInt8(acc[static_cast<size_t>(i)] + bias, m, zp))
          << "acc " << acc[static_cast<size_t>(i)] << " bias " << bias << " multiplier " << m.multiplier
          << " shift " << m.shift << " zp " << zp;
      ++compared;
    }
  }
  EXPECT_GT(compared, 10000);
}

// Geometries that take each fast path: dense (im2col), pointwise (no im2col), depthwise with a
// channel multiplier, at strides / dilations / paddings up to 3 and more than one GEMM tile.
ConvGeometry largerGeometry(std::mt19937& gen, int kind) {
  ConvGeometry g;
  g.batch = pick(gen, 1, 2);
  g.in_h = pick(gen, 1, 30);
  g.in_w = pick(gen, 1, 30);
  if (kind == 1) {  // pointwise
    g.groups = pick(gen, 1, 2);
    g.in_channels = g.groups * pick(gen, 1, 40);
    g.out_channels = g.groups * pick(gen, 1, 40);
    g.out_h = g.in_h;
    g.out_w = g.in_w;
    return g;
  }
  g.groups = kind == 2 ? pick(gen, 1, 12) : pick(gen, 1, 2);
  g.in_channels = g.groups * (kind == 2 ? 1 : pick(gen, 1, 20));
  g.out_channels = g.groups * (kind == 2 ? pick(gen, 1, 2) : pick(gen, 1, 40));
  g.kernel_h = pick(gen, 1, 5);
  g.kernel_w = pick(gen, 1, 5);
  g.stride_h = pick(gen, 1, 3);
  g.stride_w = pick(gen, 1, 3);
  g.dilation_h = pick(gen, 1, 2);
  g.dilation_w = pick(gen, 1, 2);
  g.pad_top = pick(gen, 0, g.kernel_h);
  g.pad_left = pick(gen, 0, g.kernel_w);
  const int64_t pad_bottom = pick(gen, 0, g.kernel_h), pad_right = pick(gen, 0, g.kernel_w);
  const int64_t eff_h = (g.kernel_h - 1) * g.dilation_h + 1, eff_w = (g.kernel_w - 1) * g.dilation_w + 1;
  g.out_h = g.in_h + g.pad_top + pad_bottom < eff_h
                ? 0
                : (g.in_h + g.pad_top + pad_bottom - eff_h) / g.stride_h + 1;
  g.out_w = g.in_w + g.pad_left + pad_right < eff_w
                ? 0
                : (g.in_w + g.pad_left + pad_right - eff_w) / g.stride_w + 1;
  return g;
}

std::string describe(const ConvGeometry& g, int32_t zx) {
  std::ostringstream os;
  os << "groups " << g.groups << " cin " << g.in_channels << " cout " << g.out_channels << " in " << g.in_h
     << "x" << g.in_w << " out " << g.out_h << "x" << g.out_w << " k " << g.kernel_h << "x" << g.kernel_w
     << " stride " << g.stride_h << "," << g.stride_w << " dilation " << g.dilation_h << "," << g.dilation_w
     << " pad " << g.pad_top << "," << g.pad_left << " zx " << zx;
  return os.str();
}

TEST(QuantSimKernels, FastConvPathsMatchReferenceOnLargerShapesAndExtremes) {
  std::mt19937 gen(99);
  std::uniform_real_distribution<double> log2m(-20.0, -4.0);
  int tested = 0;
  for (int trial = 0; trial < 240; ++trial) {
    Int8ConvParams p;
    p.geometry = largerGeometry(gen, trial % 3);
    const ConvGeometry& g = p.geometry;
    if (g.out_h <= 0 || g.out_w <= 0) continue;
    const size_t cout = static_cast<size_t>(g.out_channels);
    // Every fourth trial: saturated inputs and weights of one sign, the accumulator's extremes.
    const int extreme = trial % 4 == 3 ? (pick(gen, 0, 1) ? 1 : -1) : 0;
    p.weights = extreme ? std::vector<int8_t>(cout * static_cast<size_t>(g.reduction()),
                                              static_cast<int8_t>(127 * extreme))
                        : randomBytes(cout * static_cast<size_t>(g.reduction()), gen, -127, 127);
    for (size_t c = 0; c < cout; ++c) p.bias.push_back(pick(gen, -50000, 50000));
    p.input_zero_point = extreme ? (extreme > 0 ? -128 : 127) : pick(gen, -128, 127);
    p.output_zero_point = pick(gen, -128, 127);
    for (size_t c = 0; c < cout; ++c) p.multipliers.push_back(quantizeMultiplier(std::exp2(log2m(gen))));
    validateInt8Conv(p, "test");
    const size_t in_n = static_cast<size_t>(g.batch * g.in_channels * g.in_h * g.in_w);
    const std::vector<int8_t> x =
        extreme ? std::vector<int8_t>(in_n, static_cast<int8_t>(extreme > 0 ? 127 : -128))
                : randomBytes(in_n, gen, -128, 127);
    const size_t out_n = static_cast<size_t>(g.batch * g.out_channels * g.out_h * g.out_w);
    std::vector<int8_t> ref(out_n), fast(out_n, 0x55);
    int8ConvReference(p, x.data(), ref.data());
    Int8ConvFast kernel(p);
    std::vector<uint8_t> ws(kernel.workspaceBytes());
    kernel.run(x.data(), fast.data(), ws.data());
    ASSERT_EQ(ref, fast) << "trial " << trial << ": " << describe(g, p.input_zero_point);
    ++tested;
  }
  EXPECT_GT(tested, 180);
}

// The wide tile (32 channels x 8 positions) writes what the four row tiles over the same packed
// operands write, for every panel width, depth remainders, saturating extremes and a block with
// a zero multiplier (which takes the row tiles).
TEST(QuantSimKernels, WideTilesEqualTheRowTiles) {
  std::mt19937 gen(31);
  std::uniform_real_distribution<double> log2m(-22.0, -2.0);
  for (int trial = 0; trial < 160; ++trial) {
    const int64_t depth = pick(gen, 1, 300);
    const int64_t columns = 1 + trial % kGemmCols;
    const int extreme = trial % 5 == 4 ? (pick(gen, 0, 1) ? 1 : -1) : 0;
    const std::vector<int8_t> w =
        extreme ? std::vector<int8_t>(static_cast<size_t>(kGemmWideRows * depth),
                                      static_cast<int8_t>(127 * extreme))
                : randomBytes(static_cast<size_t>(kGemmWideRows * depth), gen, -127, 127);
    const std::vector<int8_t> x = extreme ? std::vector<int8_t>(static_cast<size_t>(depth * columns),
                                                                static_cast<int8_t>(extreme > 0 ? 127 : -128))
                                          : randomBytes(static_cast<size_t>(depth * columns), gen, -128, 127);
    const PackedGemmWeights packed = packGemmWeights(w.data(), kGemmWideRows, depth);
    std::vector<const int8_t*> row_ptrs;
    for (int64_t k = 0; k < depth; ++k) row_ptrs.push_back(x.data() + k * columns);
    std::vector<uint8_t> panel(packedActivationBytes(depth, kGemmCols));
    packGemmPanel(row_ptrs.data(), depth, 0, columns, panel.data());
    std::vector<int32_t> bias;
    std::vector<FixedPointMultiplier> multipliers;
    for (int64_t c = 0; c < kGemmWideRows; ++c) {
      bias.push_back(pick(gen, -100000, 100000));
      multipliers.push_back(quantizeMultiplier(std::exp2(log2m(gen))));
    }
    if (trial % 7 == 6)
      multipliers[static_cast<size_t>(pick(gen, 0, kGemmWideRows - 1))] = FixedPointMultiplier{};
    const int32_t zp = pick(gen, -128, 127);
    const int64_t stride = columns + pick(gen, 0, 5);
    std::vector<int8_t> wide(static_cast<size_t>(kGemmWideRows * stride), 0x55), rows = wide;
    std::vector<ChannelRequant> channels;
    for (int64_t c = 0; c < kGemmWideRows; ++c) {
      channels.emplace_back(bias[static_cast<size_t>(c)], multipliers[static_cast<size_t>(c)]);
    }
    gemmWideTilesToInt8(packed.rowBlock(0), packed.rowBlock(1) - packed.rowBlock(0), panel.data(),
                        packed.depth_groups, columns, channels.data(), zp, wide.data(), stride);
    for (int64_t r0 = 0; r0 < kGemmWideRows; r0 += kGemmRows) {
      gemmMicroTileToInt8(packed.rowBlock(r0 / kGemmRows), panel.data(), packed.depth_groups, kGemmRows,
                          columns, channels.data() + r0, zp, rows.data() + r0 * stride, stride);
    }
    ASSERT_EQ(wide, rows) << "trial " << trial << " depth " << depth << " columns " << columns;
  }
}

// Convs whose last column panel runs as wide tiles (channels per group a multiple of 32, 1-8 or
// 17-24 positions left over) against the reference, extremes included.
TEST(QuantSimKernels, FastConvWideTailMatchesReference) {
  std::mt19937 gen(5);
  std::uniform_real_distribution<double> log2m(-20.0, -4.0);
  const std::array<std::pair<int64_t, int64_t>, 6> outputs = {
      {{7, 7}, {14, 14}, {2, 2}, {1, 22}, {3, 7}, {6, 9}}};
  for (int trial = 0; trial < 36; ++trial) {
    Int8ConvParams p;
    ConvGeometry& g = p.geometry;
    g.groups = pick(gen, 1, 2);
    g.in_channels = g.groups * pick(gen, 1, 24);
    g.out_channels = g.groups * kGemmWideRows * pick(gen, 1, 3);
    g.kernel_h = g.kernel_w = trial % 2 ? 3 : 1;
    g.stride_h = g.stride_w = pick(gen, 1, 2);
    g.pad_top = g.pad_left = g.kernel_h / 2;
    std::tie(g.out_h, g.out_w) = outputs[static_cast<size_t>(trial) % outputs.size()];
    g.in_h = (g.out_h - 1) * g.stride_h + g.kernel_h - 2 * g.pad_top;
    g.in_w = (g.out_w - 1) * g.stride_w + g.kernel_w - 2 * g.pad_left;
    const size_t cout = static_cast<size_t>(g.out_channels);
    const int extreme = trial % 6 == 5 ? 1 : 0;
    p.weights = extreme ? std::vector<int8_t>(cout * static_cast<size_t>(g.reduction()), 127)
                        : randomBytes(cout * static_cast<size_t>(g.reduction()), gen, -127, 127);
    for (size_t c = 0; c < cout; ++c) {
      p.bias.push_back(pick(gen, -50000, 50000));
      p.multipliers.push_back(quantizeMultiplier(std::exp2(log2m(gen))));
    }
    p.input_zero_point = extreme ? -128 : pick(gen, -128, 127);
    p.output_zero_point = pick(gen, -128, 127);
    validateInt8Conv(p, "test");
    const size_t in_n = static_cast<size_t>(g.in_channels * g.in_h * g.in_w);
    const std::vector<int8_t> x =
        extreme ? std::vector<int8_t>(in_n, 127) : randomBytes(in_n, gen, -128, 127);
    std::vector<int8_t> ref(cout * static_cast<size_t>(g.out_h * g.out_w)), fast(ref.size(), 0x55);
    int8ConvReference(p, x.data(), ref.data());
    Int8ConvFast kernel(p);
    std::vector<uint8_t> ws(kernel.workspaceBytes());
    kernel.run(x.data(), fast.data(), ws.data());
    ASSERT_EQ(ref, fast) << "trial " << trial << ": " << describe(g, p.input_zero_point);
  }
}

// Every tap's run over the virtual output grid stays inside its own sub-plane (the spare row
// absorbs the overhang), for all small geometries: the fast conv paths never read past the
// split plane into the next workspace piece, which the bit-exactness tests could not notice.
TEST(QuantSimKernels, PhasePlaneTapRunsStayInTheirSubPlane) {
  int64_t checked = 0;
  for (int in = 1; in <= 16; ++in) {
    for (int k = 1; k <= 6; ++k) {
      for (int s = 1; s <= 4; ++s) {
        for (int d = 1; d <= 3; ++d) {
          for (int pad = 0; pad <= k; ++pad) {
            for (int pad_end = 0; pad_end <= k; ++pad_end) {
              ConvGeometry g;
              g.in_h = g.in_w = in;
              g.kernel_h = g.kernel_w = k;
              g.stride_h = g.stride_w = s;
              g.dilation_h = g.dilation_w = d;
              g.pad_top = g.pad_left = pad;
              const int64_t span = (k - 1) * d + 1;
              if (in + pad + pad_end < span) continue;
              g.out_h = g.out_w = (in + pad + pad_end - span) / s + 1;
              const PhasePlane plane = PhasePlane::forConv(g);
              for (int64_t offset : plane.tapOffsets(g)) {
                const int64_t sub_plane_end =
                    (offset / plane.subPlaneElements() + 1) * plane.subPlaneElements();
                ASSERT_LE(offset + plane.virtualOutputs(g), sub_plane_end)
                    << "in " << in << " k " << k << " stride " << s << " dilation " << d << " pad " << pad;
                ++checked;
              }
            }
          }
        }
      }
    }
  }
  EXPECT_GT(checked, 100000);
}

// quantizeTensor (the vectorizable loop every simulator input goes through) must equal
// quantizeValue on every value: random, exact halves of the step (the rounding ties), values
// around the saturation points, infinities and NaN.
TEST(QuantSimKernels, QuantizeTensorEqualsQuantizeValue) {
  std::mt19937 gen(5);
  std::uniform_real_distribution<float> wide(-300.0f, 300.0f);
  const float inf = std::numeric_limits<float>::infinity();
  for (int trial = 0; trial < 50; ++trial) {
    const QuantParams p{std::exp2(std::uniform_real_distribution<float>(-12.0f, 2.0f)(gen)),
                        pick(gen, -128, 127)};
    std::vector<float> x;
    for (int i = 0; i < 200; ++i) x.push_back(wide(gen) * p.scale);
    for (int k = -300; k <= 300; ++k) x.push_back((static_cast<float>(k) + 0.5f) * p.scale);  // ties
    for (float v : {0.0f, -0.0f, inf, -inf, std::numeric_limits<float>::quiet_NaN(), 1e30f, -1e30f})
      x.push_back(v);
    std::vector<int8_t> got(x.size());
    quantizeTensor(x.data(), static_cast<int64_t>(x.size()), p, got.data());
    for (size_t i = 0; i < x.size(); ++i) {
      ASSERT_EQ(got[i], quantizeValue(x[i], p))
          << "x " << x[i] << " scale " << p.scale << " zp " << p.zero_point;
    }
  }
}

// The simulator's Add (per-input tables + vector requantization when shapes match) must give
// addInt8's bytes for every element.
TEST(QuantSimKernels, AddStepEqualsAddInt8) {
  passtest::GraphBuilder b;
  const Shape shape{1, 4, 9, 9};
  Value* a = b.input("a", shape);
  Value* c = b.input("c", shape);
  Value* y = b.op("Add", {a, c});
  b.output(y);
  const Graph& g = b.graph();
  Calibrator cal(g);
  for (uint32_t i = 0; i < 4; ++i) {
    cal.addSample({passtest::randomTensor(shape, 60 + i, -3.0f, 3.0f),
                   passtest::randomTensor(shape, 70 + i, -0.5f, 1.0f)});
  }
  const QuantPlan plan = buildQuantPlan(g, cal.ranges({}), {});
  const QuantizedExecutor sim(g, plan);
  const std::map<std::string, Tensor> values = sim.runAllValues(
      {passtest::randomTensor(shape, 8, -4.0f, 4.0f), passtest::randomTensor(shape, 9, -1.0f, 1.5f)});
  const QuantParams pa = plan.at("a").params("a"), pc = plan.at("c").params("c");
  const QuantParams py = plan.at(y->name()).params(y->name());
  const AddRequant r = makeAddRequant(pa, pc, py);
  const Tensor& got = values.at(y->name());
  for (int64_t i = 0; i < got.numel(); ++i) {
    const int8_t qa = quantizeValue(values.at("a").data<float>()[i], pa);
    const int8_t qc = quantizeValue(values.at("c").data<float>()[i], pc);
    ASSERT_EQ(got.data<float>()[i], dequantizeValue(addInt8(qa, qc, r), py)) << "element " << i;
  }
}

// The int8 MaxPool must give the bytes of dequantize -> float MaxPool -> quantize (the generic
// shared-scale path it replaces), on both the row path (reference) and the split-plane path
// (fast), including windows that hang over asymmetric padding and non-square windows.
TEST(QuantSimKernels, Int8MaxPoolEqualsTheFloatRoundTrip) {
  using passtest::attrs;
  struct Case {
    std::vector<int64_t> kernel, strides, pads;
    Shape shape;
  };
  const std::vector<Case> cases{
      {{3, 3}, {2, 2}, {1, 1, 1, 1}, {1, 3, 11, 9}},   {{2, 2}, {2, 2}, {0, 0, 0, 0}, {1, 3, 11, 9}},
      {{3, 3}, {1, 1}, {2, 2, 2, 2}, {1, 3, 11, 9}},   {{5, 5}, {3, 3}, {2, 2, 2, 2}, {1, 3, 11, 9}},
      {{3, 2}, {2, 1}, {1, 0, 0, 1}, {2, 5, 13, 17}},  {{1, 4}, {1, 3}, {0, 2, 0, 1}, {1, 2, 6, 40}},
      {{3, 3}, {2, 2}, {1, 1, 1, 1}, {1, 4, 112, 112}}};
  for (const SimPath path : {SimPath::Reference, SimPath::Fast}) {
    for (const Case& c : cases) {
      passtest::GraphBuilder b;
      Value* x = b.input("x", c.shape);
      Value* y =
          b.op("MaxPool", {x}, attrs({{"kernel_shape", c.kernel}, {"strides", c.strides}, {"pads", c.pads}}));
      b.output(y);
      const Graph& g = b.graph();
      Calibrator cal(g);
      for (uint32_t i = 0; i < 4; ++i) cal.addSample({passtest::randomTensor(c.shape, 40 + i, -3.0f, 3.0f)});
      const QuantPlan plan = buildQuantPlan(g, cal.ranges({}), {});
      const QuantizedExecutor sim(g, plan, SimOptions{SimMode::Int8, path});
      ASSERT_NE(sim.describe().find("MaxPool -> int8"), std::string::npos) << sim.describe();
      const std::map<std::string, Tensor> values =
          sim.runAllValues({passtest::randomTensor(c.shape, 7, -4.0f, 4.0f)});
      const Tensor& x_deq = values.at("x");
      const Tensor want_float = evalNode(*y->producer(), {&x_deq})[0];
      const QuantParams py = plan.at(y->name()).params(y->name());
      const Tensor& got = values.at(y->name());
      ASSERT_EQ(got.numel(), want_float.numel());
      for (int64_t i = 0; i < got.numel(); ++i) {
        const float want = dequantizeValue(quantizeValue(want_float.data<float>()[i], py), py);
        ASSERT_EQ(got.data<float>()[i], want) << (path == SimPath::Fast ? "fast" : "reference") << " kernel "
                                              << c.kernel[0] << "x" << c.kernel[1] << " at " << i;
      }
    }
  }
}

}  // namespace
}  // namespace npuc::quant
