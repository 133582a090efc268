#include "perf/cpu_op_cost.h"

#include <algorithm>
#include <cmath>

namespace npuc::perf {

namespace {

constexpr double kIouFlops = 15.0;           // corners, intersection, two areas, union, divide, compare
constexpr double kSampleFlops = 8.0 + 10.0;  // 4 taps + coordinates/weights of one bilinear sample
constexpr double kGridCoordFlops = 6.0;      // denormalize x and y

double numelOf(const Value* v) {
  return v && v->hasShape() ? static_cast<double>(shapeNumel(v->shape())) : 0.0;
}

double nmsFlops(const Node& n) {
  if (!n.input(0) || !n.input(1) || !n.input(0)->hasShape() || !n.input(1)->hasShape()) return -1;
  const Shape& boxes = n.input(0)->shape();
  const Shape& scores = n.input(1)->shape();
  if (boxes.size() != 3 || scores.size() != 3) return -1;
  const auto N = static_cast<double>(boxes[1]);
  const double pairs = static_cast<double>(boxes[0] * scores[1]);
  double K = N;
  if (n.numInputs() > 2 && n.input(2) && n.input(2)->isConstant() && n.input(2)->constant().numel() == 1) {
    K = std::min(N, static_cast<double>(std::max<int64_t>(0, n.input(2)->constant().intAt(0))));
  }
  return pairs * (N + 2.0 * N * std::log2(std::max(N, 2.0)) + kIouFlops * N * K);
}

}  // namespace

double cpuOpFlops(const Node& n) {
  if (!n.domain().empty()) return -1;
  const std::string& op = n.opType();
  if (op == "NonMaxSuppression") return nmsFlops(n);
  if (op == "RoiAlign") {
    const int64_t s = n.attrs().i("sampling_ratio", 0);
    const double samples = s > 0 ? static_cast<double>(s * s) : 4.0;
    return numelOf(n.output(0)) * samples * kSampleFlops;
  }
  if (op == "GridSample") {
    const std::string mode = n.attrs().s("mode", "bilinear");
    const double per = mode == "nearest" ? 2.0 : (mode == "bicubic" || mode == "cubic") ? 32.0 + 28.0 : 8.0;
    return numelOf(n.output(0)) * (kGridCoordFlops + per);
  }
  return -1;
}

}  // namespace npuc::perf
