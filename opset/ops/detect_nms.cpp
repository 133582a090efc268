// NonMaxSuppression(boxes [B,N,4], scores [B,C,N], max_output_boxes_per_class?, iou_threshold?,
// score_threshold?) -> selected_indices [num_selected, 3] int64 rows (batch, class, box).
//
// Greedy suppression per (batch, class): candidates whose score is above score_threshold (when
// given), by descending score (ties: lower box index first), each kept unless its IoU with an
// already kept box is above iou_threshold, until max_output_boxes_per_class are kept. Boxes are
// corners [y1,x1,y2,x2] in either diagonal order (center_point_box=0) or [xc,yc,w,h] (=1). A box
// with zero area overlaps nothing; a NaN score is never selected. Rows come batch by batch,
// class by class, in selection order.
//
// The output size depends on the data. With constant boxes and scores, shape inference runs the
// suppression and gives the exact row count (the node then folds). Otherwise dim 0 is the upper
// bound B * C * min(max_output_boxes_per_class, N) and the kernel fills the rows past the
// selection with -1: a bounded output (opset/bounded_output.h) that the runtimes trim.
#include <algorithm>
#include <cmath>
#include <utility>

#include "opset/bounded_output.h"
#include "opset/ops/detect_ops.h"

namespace npuc {
namespace detect {
namespace {

struct NmsParams {
  int64_t max_per_class = 0;
  float iou_threshold = 0.0f;
  bool has_score_threshold = false;
  float score_threshold = 0.0f;
  bool center_point_box = false;
};

struct Corners {
  float ymin, xmin, ymax, xmax;
};

Corners cornersOf(const float* b, bool center) {
  if (center) {
    const float hw = b[2] / 2.0f, hh = b[3] / 2.0f;
    return {b[1] - hh, b[0] - hw, b[1] + hh, b[0] + hw};
  }
  return {std::min(b[0], b[2]), std::min(b[1], b[3]), std::max(b[0], b[2]), std::max(b[1], b[3])};
}

// True when IoU(a, b) > threshold; boxes with no area or no overlap never suppress.
bool suppresses(const Corners& a, const Corners& b, float threshold) {
  const float iw = std::min(a.xmax, b.xmax) - std::max(a.xmin, b.xmin);
  const float ih = std::min(a.ymax, b.ymax) - std::max(a.ymin, b.ymin);
  if (iw <= 0.0f || ih <= 0.0f) return false;
  const float area_a = (a.xmax - a.xmin) * (a.ymax - a.ymin);
  const float area_b = (b.xmax - b.xmin) * (b.ymax - b.ymin);
  if (area_a <= 0.0f || area_b <= 0.0f) return false;
  const float inter = iw * ih;
  const float uni = area_a + area_b - inter;
  if (uni <= 0.0f) return false;
  return inter / uni > threshold;
}

// Runs the suppression; writes up to `capacity` rows to `out` (may be null to only count) and
// returns the row count. `cand` holds N (score, index) pairs and `kept` N indices: scratch.
int64_t runNms(const float* boxes, const float* scores, int64_t B, int64_t C, int64_t N, const NmsParams& p,
               int64_t* out, int64_t capacity, std::pair<float, int64_t>* cand, int64_t* kept) {
  int64_t rows = 0;
  const int64_t limit = std::min(p.max_per_class, N);
  for (int64_t b = 0; b < B; ++b) {
    const float* bb = boxes + b * N * 4;
    for (int64_t c = 0; c < C; ++c) {
      const float* sc = scores + (b * C + c) * N;
      int64_t n = 0;
      for (int64_t i = 0; i < N; ++i) {
        // A NaN score is never a candidate (it would also break the sort's ordering).
        if (!std::isnan(sc[i]) && (!p.has_score_threshold || sc[i] > p.score_threshold))
          cand[n++] = {sc[i], i};
      }
      // A total order (score descending, then box index), so std::sort is deterministic and,
      // unlike std::stable_sort, needs no temporary buffer: Kernel::run must not allocate.
      std::sort(cand, cand + n, [](const auto& x, const auto& y) {
        return x.first != y.first ? x.first > y.first : x.second < y.second;
      });
      int64_t nk = 0;
      for (int64_t k = 0; k < n && nk < limit; ++k) {
        const Corners box = cornersOf(bb + cand[k].second * 4, p.center_point_box);
        bool drop = false;
        for (int64_t j = 0; j < nk && !drop; ++j) {
          drop = suppresses(cornersOf(bb + kept[j] * 4, p.center_point_box), box, p.iou_threshold);
        }
        if (drop) continue;
        kept[nk++] = cand[k].second;
        if (out && rows < capacity) {
          out[rows * 3 + 0] = b;
          out[rows * 3 + 1] = c;
          out[rows * 3 + 2] = cand[k].second;
        }
        ++rows;
      }
    }
  }
  return rows;
}

// The scalar parameters, which must be constants (absent ones take the ONNX defaults).
NmsParams readParams(const Node& node, const Tensor* max_out, const Tensor* iou, const Tensor* score) {
  NmsParams p;
  p.center_point_box = node.attrs().i("center_point_box", 0) != 0;
  if (max_out) {
    if (max_out->numel() != 1)
      throw ShapeError("NonMaxSuppression max_output_boxes_per_class must hold one value, got shape " +
                       shapeStr(max_out->shape()));
    p.max_per_class = std::max<int64_t>(0, max_out->intAt(0));
  }
  if (iou) {
    if (iou->numel() != 1)
      throw ShapeError("NonMaxSuppression iou_threshold must hold one value, got shape " +
                       shapeStr(iou->shape()));
    p.iou_threshold = static_cast<float>(iou->doubleAt(0));
    // ONNX defines IoU thresholds in [0, 1] (and ONNX Runtime refuses others): outside it every
    // box or no box would be suppressed, almost surely a wrong input.
    if (!(p.iou_threshold >= 0.0f && p.iou_threshold <= 1.0f)) {
      throw ShapeError("NonMaxSuppression iou_threshold must be in [0, 1], got " +
                       std::to_string(iou->doubleAt(0)));
    }
  }
  if (score) {
    if (score->numel() != 1)
      throw ShapeError("NonMaxSuppression score_threshold must hold one value, got shape " +
                       shapeStr(score->shape()));
    p.has_score_threshold = true;
    p.score_threshold = static_cast<float>(score->doubleAt(0));
  }
  return p;
}

const Tensor* paramInput(const InferContext& ctx, size_t i, const char* what) {
  return ctx.hasInput(i) ? &ctx.requireConstInput(i, what) : nullptr;
}

void checkShapes(const Shape& boxes, const Shape& scores) {
  if (boxes.size() != 3 || boxes[2] != 4) {
    throw ShapeError("NonMaxSuppression boxes must be [batches, boxes, 4], got " + shapeStr(boxes));
  }
  if (scores.size() != 3 || scores[0] != boxes[0] || scores[2] != boxes[1]) {
    throw ShapeError("NonMaxSuppression scores must be [batches, classes, boxes] = [" +
                     std::to_string(boxes[0]) + ", C, " + std::to_string(boxes[1]) + "] for boxes " +
                     shapeStr(boxes) + ", got " + shapeStr(scores));
  }
}

void inferNms(InferContext& ctx) {
  const Shape& bs = ctx.inputShape(0);
  const Shape& ss = ctx.inputShape(1);
  checkShapes(bs, ss);
  const NmsParams p =
      readParams(ctx.node(), paramInput(ctx, 2, "NonMaxSuppression max_output_boxes_per_class"),
                 paramInput(ctx, 3, "NonMaxSuppression iou_threshold"),
                 paramInput(ctx, 4, "NonMaxSuppression score_threshold"));
  const int64_t B = bs[0], N = bs[1], C = ss[1];
  const Tensor* boxes = ctx.constInput(0);
  const Tensor* scores = ctx.constInput(1);
  int64_t rows = B * C * std::min(p.max_per_class, N);  // the bound when the data is not known
  if (boxes && scores) {
    std::vector<std::pair<float, int64_t>> cand(static_cast<size_t>(N));
    std::vector<int64_t> kept(static_cast<size_t>(N));
    const Tensor bf = boxes->castTo(DType::Float32), sf = scores->castTo(DType::Float32);
    rows = runNms(bf.data<float>(), sf.data<float>(), B, C, N, p, nullptr, 0, cand.data(), kept.data());
  }
  ctx.setOutput(0, DType::Int64, {rows, 3});
}

class NmsKernel : public Kernel {
 public:
  explicit NmsKernel(const KernelContext& ctx)
      : params_(readParams(ctx.node, ctx.constInput(2), ctx.constInput(3), ctx.constInput(4))) {
    for (size_t i = 2; i < ctx.input_types.size(); ++i) {
      if (ctx.input_types[i].present() && !ctx.constInput(i)) {
        throw ShapeError("NonMaxSuppression input " + std::to_string(i) + " must be a constant");
      }
    }
    const Shape& bs = ctx.input_types.at(0).shape;
    checkShapes(bs, ctx.input_types.at(1).shape);
    if (ctx.input_types[1].dtype != DType::Float32) {
      throw UnsupportedOpError("NonMaxSuppression scores must be float32 like boxes, got " +
                               std::string(dtypeName(ctx.input_types[1].dtype)));
    }
    B_ = bs[0];
    N_ = bs[1];
    C_ = ctx.input_types[1].shape[1];
    capacity_ = ctx.output_types.at(0).shape.at(0);
  }
  size_t workspaceBytes() const override {
    return static_cast<size_t>(N_) * (sizeof(std::pair<float, int64_t>) + sizeof(int64_t));
  }
  void run(const KernelIO& io) const override {
    auto* cand = static_cast<std::pair<float, int64_t>*>(io.workspace);
    auto* kept = reinterpret_cast<int64_t*>(cand + N_);
    int64_t* out = io.outputs[0].as<int64_t>();
    const int64_t rows = runNms(io.inputs[0].as<const float>(), io.inputs[1].as<const float>(), B_, C_, N_,
                                params_, out, capacity_, cand, kept);
    // Never more rows than the bound (shape inference and the kernel count alike); the rest are
    // the -1 padding a bounded output carries.
    std::fill(out + std::min(rows, capacity_) * 3, out + capacity_ * 3, int64_t{-1});
  }

 private:
  NmsParams params_;
  int64_t B_ = 0, N_ = 0, C_ = 0, capacity_ = 0;
};

}  // namespace

void registerNmsOp(OpRegistry& reg) {
  reg.add("NonMaxSuppression")
      .quantClass(QuantClass::Float)
      .inputs(2, 5)
      .infer(inferNms)
      .kernel([](const KernelContext& c) { return std::make_unique<NmsKernel>(c); })
      .types({DType::Float32})
      .since(11)
      .cpuOnly("its output size depends on the data and greedy suppression is sequential")
      // Rows depend on the scores unless boxes and scores are constants (then it folds).
      .boundedOutput([](const Node& n) { return inputIsConstant(n, 0) && inputIsConstant(n, 1) ? -1 : 0; })
      .doc(
          "int64 [num_selected, 3] (batch, class, box) rows of greedy per-class suppression; "
          "max_output_boxes_per_class / iou_threshold / score_threshold must be constants; with computed "
          "boxes "
          "the output is bounded (B*C*max rows, trimmed by the runtimes) and must be a graph output");
}

}  // namespace detect
}  // namespace npuc
