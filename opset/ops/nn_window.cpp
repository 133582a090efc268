#include "opset/ops/nn_window.h"

#include <algorithm>

#include "common/error.h"

namespace npuc::nn {

namespace {

std::string listStr(const std::vector<int64_t>& v) {
  return shapeStr(v);
}

// Reads an ints attribute of `n` entries (or `def` repeated when absent).
std::vector<int64_t> perDim(const Attributes& attrs, const char* name, size_t n, int64_t def,
                            const std::string& op) {
  std::vector<int64_t> v = attrs.ints(name, std::vector<int64_t>(n, def));
  if (v.size() != n) {
    throw ShapeError(op + " attribute '" + name + "' has " + std::to_string(v.size()) + " entries " +
                     listStr(v) + ", expected " + std::to_string(n) + " (one per spatial dim)");
  }
  return v;
}

void requirePositive(const std::vector<int64_t>& v, const char* name, const std::string& op) {
  for (int64_t x : v) {
    if (x < 1) throw ShapeError(op + " attribute '" + name + "' must be >= 1, got " + listStr(v));
  }
}

int64_t ceilDiv(int64_t a, int64_t b) {
  return a >= 0 ? (a + b - 1) / b : -((-a) / b);
}

// Splits a total SAME padding between begin and end: SAME_UPPER puts the odd cell at the end.
void splitSamePad(AutoPad mode, int64_t total, int64_t* begin, int64_t* end) {
  *begin = mode == AutoPad::SameUpper ? total / 2 : total - total / 2;
  *end = total - *begin;
}

// Reads strides/dilations/pads common to every windowed op.
void readCommon(const Attributes& attrs, size_t n, const std::string& op, Window* w) {
  w->strides = perDim(attrs, "strides", n, 1, op);
  w->dilations = perDim(attrs, "dilations", n, 1, op);
  requirePositive(w->kernel, "kernel_shape", op);
  requirePositive(w->strides, "strides", op);
  requirePositive(w->dilations, "dilations", op);
  const std::vector<int64_t> pads = perDim(attrs, "pads", 2 * n, 0, op);
  for (int64_t p : pads) {
    if (p < 0) throw ShapeError(op + " attribute 'pads' must be non-negative, got " + listStr(pads));
  }
  w->pads_begin.assign(pads.begin(), pads.begin() + n);
  w->pads_end.assign(pads.begin() + n, pads.end());
}

}  // namespace

AutoPad parseAutoPad(const Attributes& attrs) {
  const std::string s = attrs.s("auto_pad", "NOTSET");
  if (s == "NOTSET" || s.empty()) return AutoPad::NotSet;
  if (s == "SAME_UPPER") return AutoPad::SameUpper;
  if (s == "SAME_LOWER") return AutoPad::SameLower;
  if (s == "VALID") return AutoPad::Valid;
  throw ShapeError("unknown auto_pad '" + s + "' (expected NOTSET, SAME_UPPER, SAME_LOWER or VALID)");
}

Window forwardWindow(const Attributes& attrs, const std::vector<int64_t>& in,
                     const std::vector<int64_t>& kernel, bool ceil_mode, const std::string& op) {
  const size_t n = in.size();
  Window w;
  w.kernel = kernel;
  if (w.kernel.size() != n) {
    throw ShapeError(op + " kernel " + listStr(w.kernel) + " has " + std::to_string(w.kernel.size()) +
                     " spatial dims but the input has " + std::to_string(n) + " " + listStr(in));
  }
  readCommon(attrs, n, op, &w);
  const AutoPad mode = parseAutoPad(attrs);
  w.out.resize(n);
  for (size_t i = 0; i < n; ++i) {
    const int64_t ext = w.extent(i);
    if (mode == AutoPad::SameUpper || mode == AutoPad::SameLower) {
      w.out[i] = ceilDiv(in[i], w.strides[i]);
      const int64_t total = std::max<int64_t>(0, (w.out[i] - 1) * w.strides[i] + ext - in[i]);
      splitSamePad(mode, total, &w.pads_begin[i], &w.pads_end[i]);
      continue;
    }
    if (mode == AutoPad::Valid) w.pads_begin[i] = w.pads_end[i] = 0;
    const int64_t span = in[i] + w.pads_begin[i] + w.pads_end[i] - ext;
    if (span < 0) {
      throw ShapeError(op + " window of extent " + std::to_string(ext) + " (kernel " + listStr(w.kernel) +
                       ", dilations " + listStr(w.dilations) + ") does not fit spatial dim " +
                       std::to_string(i) + " of size " + std::to_string(in[i]) + " plus pads");
    }
    w.out[i] = (ceil_mode ? ceilDiv(span, w.strides[i]) : span / w.strides[i]) + 1;
    // A last window that would start inside the end padding is dropped.
    if (ceil_mode && (w.out[i] - 1) * w.strides[i] >= in[i] + w.pads_begin[i]) --w.out[i];
  }
  return w;
}

TransposedWindow transposedWindow(const Attributes& attrs, const std::vector<int64_t>& in,
                                  const std::vector<int64_t>& kernel, const std::string& op) {
  const size_t n = in.size();
  TransposedWindow w;
  w.kernel = kernel;
  readCommon(attrs, n, op, &w);
  w.output_padding = perDim(attrs, "output_padding", n, 0, op);
  std::vector<int64_t> output_shape = attrs.ints("output_shape", {});
  if (output_shape.size() == n + 2) output_shape.erase(output_shape.begin(), output_shape.begin() + 2);
  if (!output_shape.empty() && output_shape.size() != n) {
    throw ShapeError(op + " attribute 'output_shape' " + listStr(output_shape) + " does not have " +
                     std::to_string(n) + " spatial entries");
  }
  const AutoPad mode = parseAutoPad(attrs);
  w.out.resize(n);
  for (size_t i = 0; i < n; ++i) {
    if (w.output_padding[i] < 0 || w.output_padding[i] >= std::max(w.strides[i], w.dilations[i])) {
      throw ShapeError(op + " output_padding " + listStr(w.output_padding) +
                       " must be non-negative and smaller than the stride or the dilation");
    }
    const int64_t full = w.strides[i] * (in[i] - 1) + w.output_padding[i] + w.extent(i);
    int64_t target = -1;
    if (!output_shape.empty()) {
      target = output_shape[i];
    } else if (mode == AutoPad::SameUpper || mode == AutoPad::SameLower) {
      target = in[i] * w.strides[i];
    } else if (mode == AutoPad::Valid) {
      w.pads_begin[i] = w.pads_end[i] = 0;
    }
    if (target >= 0) {
      // Pads follow the ONNX spec: SAME_UPPER puts the odd cell at the end, everything else at the
      // beginning. A target larger than the natural size becomes extra end cells (pads_end < 0).
      const int64_t total = full - target;
      w.pads_begin[i] = mode == AutoPad::SameUpper ? total / 2 : total - total / 2;
      if (w.pads_begin[i] < 0) w.pads_begin[i] = 0;
      w.pads_end[i] = total - w.pads_begin[i];
    }
    w.out[i] = full - w.pads_begin[i] - w.pads_end[i];
    if (w.out[i] < 1) {
      throw ShapeError(op + " output spatial dim " + std::to_string(i) + " would be " +
                       std::to_string(w.out[i]) + " (input " + listStr(in) + ", pads " +
                       listStr(w.pads_begin) + "/" + listStr(w.pads_end) + ")");
    }
  }
  return w;
}

}  // namespace npuc::nn
