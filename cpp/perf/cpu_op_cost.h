// CPU FLOP counts for CPU-only ops whose work is not "one FLOP per output element" (the default
// CPU row of perf_eval.cpp): the detection ops NonMaxSuppression, RoiAlign and GridSample. Every
// figure is an ASSUMED operation count of npuc's own host kernels (opset/ops/detect_*.cpp), not a
// measurement of any device; CostModel::cpuSeconds turns it into time with the SoC's fp32_gflops.
#pragma once

#include "ir/graph.h"

namespace npuc::perf {

// FLOPs the CPU spends on `n`, or a negative value when no op-specific model exists.
//   NonMaxSuppression, per (batch, class) over N boxes keeping K = min(max_output_boxes_per_class,
//     N): N score tests + a sort of 2 N log2 N + the worst-case greedy pass, every candidate
//     against every kept box at kIouFlops each (no early exit assumed): N + 2 N log2 N + 15 N K.
//   RoiAlign: per output element, samples x (4 weighted taps = 8 FLOPs + 10 for the sample's
//     coordinates and weights); samples = sampling_ratio^2, or 4 when adaptive (the ROI sizes are
//     only known at run time: assumed 2 x 2).
//   GridSample: per output element, the coordinate transform (6) plus 2 FLOPs per tap: 1 tap
//     (nearest), 4 (bilinear) or 16 plus 28 for the cubic coefficients (bicubic).
double cpuOpFlops(const Node& n);

}  // namespace npuc::perf
