// The depthwise fast path (four-tap groups on the u8 plane, depthwise_groups.h, with AVX-512
// VNNI; the int8 loop otherwise) against int8ConvReference, to the bit, on mobile-net sized
// planes (several 64-output blocks and a tail), kernels 3 to 7, strides and dilations up to 2,
// channel multipliers, weights at -128 and 127, zero points at both ends, and a zero multiplier
// in some groups (which keep the int8 loop for the whole group).
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <sstream>

#include "quant/sim/depthwise_groups.h"
#include "quant/sim/int8_conv.h"

namespace npuc::quant {
namespace {

int pick(std::mt19937& gen, int lo, int hi) {
  return std::uniform_int_distribution<int>(lo, hi)(gen);
}

TEST(QuantSimDepthwise, TapGroupsHoldEveryTapOnceWithinFourBytes) {
  const std::vector<int64_t> offsets{9, 0, 1, 2, 5, 4, 100, 3, 103};
  const DepthwiseTapGroups g = DepthwiseTapGroups::of(offsets);
  ASSERT_EQ(g.offsets, (std::vector<int64_t>{0, 4, 9, 100}));
  const int8_t w[] = {1, 2, 3, 4, 5, 6, 7, 8, -128};
  const std::vector<int32_t> packed = g.pack(w);
  for (size_t t = 0; t < offsets.size(); ++t) {
    const int group = g.first_tap[t];
    EXPECT_EQ(offsets[t], g.offsets[static_cast<size_t>(group)] + g.lane[t]);
    EXPECT_EQ(
        static_cast<int8_t>(static_cast<uint32_t>(packed[static_cast<size_t>(group)]) >> (8 * g.lane[t])),
        w[t]);
  }
  EXPECT_EQ(static_cast<uint32_t>(packed[1]) >> 16, 0u) << "a group's missing taps weigh 0";
}

TEST(QuantSimDepthwise, FastPathEqualsReferenceOnMobileNetSizedPlanes) {
  std::mt19937 gen(2024);
  std::uniform_real_distribution<double> log2m(-14.0, -5.0);
  for (int trial = 0; trial < 60; ++trial) {
    Int8ConvParams p;
    ConvGeometry& g = p.geometry;
    g.groups = pick(gen, 1, 5);
    g.in_channels = g.groups;
    g.out_channels = g.groups * pick(gen, 1, 2);
    g.in_h = pick(gen, 5, 60);
    g.in_w = pick(gen, 60, 130);
    g.kernel_h = g.kernel_w = 3 + 2 * pick(gen, 0, 2);
    g.stride_h = g.stride_w = pick(gen, 1, 2);
    g.dilation_h = g.dilation_w = pick(gen, 1, 2);
    g.pad_top = g.pad_left = g.kernel_h / 2 * g.dilation_h;
    const int64_t extent = (g.kernel_h - 1) * g.dilation_h + 1;
    g.out_h = (g.in_h + 2 * g.pad_top - extent) / g.stride_h + 1;
    g.out_w = (g.in_w + 2 * g.pad_left - extent) / g.stride_w + 1;
    if (g.out_h <= 0 || g.out_w <= 0) continue;
    const size_t cout = static_cast<size_t>(g.out_channels), k = static_cast<size_t>(g.reduction());
    for (size_t i = 0; i < cout * k; ++i) {
      const int r = pick(gen, 0, 9);  // a tenth of the weights at each extreme
      p.weights.push_back(static_cast<int8_t>(r == 0 ? -128 : r == 1 ? 127 : pick(gen, -127, 127)));
    }
    for (size_t c = 0; c < cout; ++c) {
      p.bias.push_back(pick(gen, -30000, 30000));
      p.multipliers.push_back(trial % 5 == 4 && c == 0 ? FixedPointMultiplier{}
                                                       : quantizeMultiplier(std::exp2(log2m(gen))));
    }
    p.input_zero_point = trial % 3 == 0 ? -128 : trial % 3 == 1 ? 127 : pick(gen, -128, 127);
    p.output_zero_point = pick(gen, -128, 127);
    validateInt8Conv(p, "test");
    std::vector<int8_t> x(static_cast<size_t>(g.in_channels * g.in_h * g.in_w));
    for (auto& v : x) v = static_cast<int8_t>(pick(gen, -128, 127));
    const size_t out_n = static_cast<size_t>(g.out_channels * g.out_h * g.out_w);
    std::vector<int8_t> ref(out_n), fast(out_n, 0x55);
    int8ConvReference(p, x.data(), ref.data());
    Int8ConvFast kernel(p);
    std::vector<uint8_t> ws(kernel.workspaceBytes(), 0xAB);  // stale bytes, as a reused scratch has
    kernel.run(x.data(), fast.data(), ws.data());
    std::ostringstream what;
    what << "trial " << trial << ": groups " << g.groups << " cout " << g.out_channels << " in " << g.in_h
         << "x" << g.in_w << " k " << g.kernel_h << " stride " << g.stride_h << " dilation " << g.dilation_h
         << " zx " << p.input_zero_point;
    ASSERT_EQ(ref, fast) << what.str();
  }
}

}  // namespace
}  // namespace npuc::quant
