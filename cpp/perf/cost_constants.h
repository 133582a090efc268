// The structural constants of the cost model (docs/perf_model.md): figures of the NPU design that
// are not per SoC and not published. One set is shared by every SoC. Each default says whether it
// was fitted (bench/perf_fit.py, against rknn_model_zoo's FPS table) or is assumed. They can be
// overridden by name, for the fit only (eval_perf's `overrides`).
#pragma once

#include <cstdint>
#include <string>

namespace npuc::perf {

// Input channels above which a conv's utilization drops (published in DESIGN.md).
constexpr int64_t kDeepCinThreshold = 512;

struct CostConstants {
  // The defaults (fitted or assumed) live in cost_constants.cpp, next to the fit's record, so a
  // re-fit recompiles one file.
  CostConstants();

  // NPU cycles the vector unit spends per `other`-aligned channel vector, per op class. An
  // elementwise op (Add, Mul, Relu, ReduceSum, ...) takes 1 (assumed: one vector per cycle).
  //
  // Data movement and size change (Concat, Split, Slice, Reshape, Resize, Pad, Tile): DESIGN.md
  // lists them as low efficiency without a figure. Fitted, as one figure with the LUT rate below
  // (DESIGN.md's one low-efficiency class; bench/perf_fit.py ties them).
  double move_cycles_per_vector;
  // Transpose moves elements across the channel vector (NC1HWC2 keeps 16 channels together), so it
  // is this many times slower than the other data movement. Assumed: no calibration model has one.
  double transpose_factor;
  // A LUT activation (Sigmoid, SiLU, Tanh, HardSwish, Gelu, Exp, ...): standalone, and as the rate
  // of the output stage when fused behind a Conv (the task then takes at least output vectors x
  // this). Fitted, tied to move_cycles_per_vector.
  double lut_cycles_per_vector;
  // Passes a normalizing op makes over its tensor: Softmax (max, sum of exp, scale), LayerNorm /
  // InstanceNorm (mean, variance, normalize). Each pass re-reads the input from DDR when the input
  // exceeds the on-chip buffer. Assumed.
  double normalize_passes;
  // Fraction of the array's rate a conv keeps when it reduces over more than kDeepCinThreshold
  // input channels per group: DESIGN.md publishes that utilization drops there, without a figure
  // (the partial sums of each 512-channel slice go through the accumulators again). Fitted.
  double deep_cin_efficiency;
  // 1: a conv with fewer input channels than the conv_in alignment packs kernel columns into the
  // array's input lanes (KW * Cin per row of taps, as im2col does for an RGB stem) instead of
  // padding every tap's channels to conv_in. 0: pad every tap. Assumed (structural choice, 1).
  double pack_small_cin;

  // Sets the constant called `name` (the field name). ConfigError for an unknown name or a value
  // that is not positive (pack_small_cin: 0 or 1).
  void set(const std::string& name, double value);
  // "name=value,..." of every field: part of the tiling cache key.
  std::string signature() const;
};

}  // namespace npuc::perf
