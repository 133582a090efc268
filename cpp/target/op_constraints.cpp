#include "target/op_constraints.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "opset/op_traits.h"
#include "target/op_geometry.h"

namespace npuc {

bool LimitCheck::appliesTo(const std::string& op_type) const {
  return ops.empty() || std::find(ops.begin(), ops.end(), op_type) != ops.end();
}

namespace {

using Message = std::optional<std::string>;

// Ops with a kernel/stride/pad window (Conv, ConvTranspose, MaxPool, AveragePool), read when the
// checks are first built rather than at static initialization (the registry may not be ready).
const std::vector<std::string>& windowOps() {
  static const std::vector<std::string> ops = opTypesWith(OpTrait::SlidingWindow);
  return ops;
}
const std::vector<std::string> kConvOps = {"Conv", "ConvTranspose"};
const std::vector<std::string> kGemmOps = {"MatMul", "Gemm"};
const std::vector<std::string> kSoftmaxOps = {"Softmax", "LogSoftmax"};

std::string joined(const std::vector<std::string>& items, const char* sep = ", ") {
  std::string out;
  for (const std::string& s : items) out += (out.empty() ? "" : sep) + s;
  return out;
}

// "33x33" for a 2-D window, "33" for 1-D.
std::string dimsText(const std::vector<int64_t>& dims) {
  return fmt::format("{}", fmt::join(dims, "x"));
}

std::string rangeText(const IntRange& r) {
  return r.lo == r.hi ? fmt::format("{}", r.lo) : fmt::format("{}..{}", r.lo, r.hi);
}

// "in 1..31", or "equal to 2" for a one-value range.
std::string inRangeText(const IntRange& r) {
  return (r.lo == r.hi ? "equal to " : "in ") + rangeText(r);
}

// As a default std::ostream prints it (6 significant digits, %g).
std::string numberText(double v) {
  return fmt::format("{:g}", v);
}

// "<what> 33x33 exceeds 31x31" / "<what> 0x0 is below 1x1" when any dim leaves the range.
Message windowRangeViolation(const std::string& what, const std::vector<int64_t>& dims, const IntRange& r) {
  bool above = std::any_of(dims.begin(), dims.end(), [&](int64_t d) { return d > r.hi; });
  bool below = std::any_of(dims.begin(), dims.end(), [&](int64_t d) { return d < r.lo; });
  if (!above && !below) return std::nullopt;
  int64_t bound = above ? r.hi : r.lo;
  std::string limit = dimsText(std::vector<int64_t>(dims.size(), bound));
  return what + " " + dimsText(dims) + (above ? " exceeds " : " is below ") + limit;
}

// A check on one per-spatial-dim field of the window geometry.
LimitCheck windowFieldCheck(const std::string& name, const std::vector<std::string>& ops,
                            const std::string& words, std::vector<int64_t> WindowGeometry::*field) {
  LimitCheck c;
  c.name = name;
  c.kind = LimitKind::Range;
  c.ops = ops;
  c.describe = [words](const LimitValue& v) { return words + " " + inRangeText(std::get<IntRange>(v)); };
  c.violation = [name, field](const Node& n, const LimitValue& v) {
    return windowRangeViolation(n.opType() + " " + name, windowGeometry(n).*field, std::get<IntRange>(v));
  };
  return c;
}

LimitCheck spatialRankCheck() {
  LimitCheck c;
  c.name = "spatial_rank";
  c.kind = LimitKind::Range;
  c.ops = windowOps();
  c.describe = [](const LimitValue& v) {
    return "number of spatial dims " + inRangeText(std::get<IntRange>(v));
  };
  c.violation = [](const Node& n, const LimitValue& v) -> Message {
    size_t rank = windowGeometry(n).spatialRank();
    const IntRange& r = std::get<IntRange>(v);
    if (r.contains(static_cast<int64_t>(rank))) return std::nullopt;
    return fmt::format("{} with {} spatial dims is outside {}", n.opType(), rank, rangeText(r));
  };
  return c;
}

LimitCheck padCheck() {
  LimitCheck c;
  c.name = "pad";
  c.kind = LimitKind::Range;
  c.ops = windowOps();
  c.describe = [](const LimitValue& v) { return "padding per side " + inRangeText(std::get<IntRange>(v)); };
  c.violation = [](const Node& n, const LimitValue& v) -> Message {
    const IntRange& r = std::get<IntRange>(v);
    std::vector<int64_t> pads = windowGeometry(n).pads;
    auto [lo, hi] = std::minmax_element(pads.begin(), pads.end());
    if (pads.empty() || (*lo >= r.lo && *hi <= r.hi)) return std::nullopt;
    bool above = *hi > r.hi;
    return fmt::format("{} pad {} {} {} (pads [{}])", n.opType(), above ? *hi : *lo,
                       above ? "exceeds" : "is below", above ? r.hi : r.lo, fmt::join(pads, ","));
  };
  return c;
}

LimitCheck depthwiseKernelCheck() {
  LimitCheck c;
  c.name = "depthwise_kernel";
  c.kind = LimitKind::Range;
  c.ops = {"Conv"};
  c.describe = [](const LimitValue& v) {
    return "depthwise (group = input channels) kernel size in " + rangeText(std::get<IntRange>(v));
  };
  c.violation = [](const Node& n, const LimitValue& v) -> Message {
    if (!isDepthwiseConv(n)) return std::nullopt;
    return windowRangeViolation("depthwise kernel", windowGeometry(n).kernel, std::get<IntRange>(v));
  };
  return c;
}

// Resize: every dim must keep its size or grow by an integer factor within the range.
LimitCheck resizeScaleCheck() {
  LimitCheck c;
  c.name = "scale";
  c.kind = LimitKind::Range;
  c.ops = {"Resize"};
  c.describe = [](const LimitValue& v) {
    return "each dim unchanged or scaled up by an integer factor in " + rangeText(std::get<IntRange>(v));
  };
  c.violation = [](const Node& n, const LimitValue& v) -> Message {
    const IntRange& r = std::get<IntRange>(v);
    const Shape& in = n.input(0)->shape();
    const Shape& out = n.output(0)->shape();
    for (size_t d = 0; d < in.size() && d < out.size(); ++d) {
      if (in[d] == out[d] || in[d] == 0) continue;
      bool integer = out[d] % in[d] == 0;
      if (integer && r.contains(out[d] / in[d])) continue;
      double scale = static_cast<double>(out[d]) / static_cast<double>(in[d]);
      return fmt::format("Resize scale {} (dim {}: {} -> {}) is not an integer in {}", numberText(scale), d,
                         in[d], out[d], rangeText(r));
    }
    return std::nullopt;
  };
  return c;
}

LimitCheck resizeModeCheck() {
  LimitCheck c;
  c.name = "modes";
  c.kind = LimitKind::Names;
  c.ops = {"Resize"};
  c.allowed_names = {"nearest", "linear", "cubic"};
  c.describe = [](const LimitValue& v) {
    return "mode " + joined(std::get<std::vector<std::string>>(v), " or ");
  };
  c.violation = [](const Node& n, const LimitValue& v) -> Message {
    const auto& modes = std::get<std::vector<std::string>>(v);
    std::string mode = n.attrs().s("mode", "nearest");
    if (std::find(modes.begin(), modes.end(), mode) != modes.end()) return std::nullopt;
    return "Resize mode '" + mode + "' is not supported (only " + joined(modes) + ")";
  };
  return c;
}

LimitCheck softmaxAxisCheck() {
  LimitCheck c;
  c.name = "axis";
  c.kind = LimitKind::Names;
  c.ops = kSoftmaxOps;
  c.allowed_names = {"channel", "last"};
  c.describe = [](const LimitValue& v) {
    return "axis is the " + joined(std::get<std::vector<std::string>>(v), " or the ") + " axis";
  };
  c.violation = [](const Node& n, const LimitValue& v) -> Message {
    const auto& allowed = std::get<std::vector<std::string>>(v);
    int64_t rank = n.input(0)->rank();
    int64_t axis = n.attrs().i("axis", -1);
    if (axis < 0) axis += rank;
    auto allows = [&](const char* which) {
      return std::find(allowed.begin(), allowed.end(), which) != allowed.end();
    };
    if ((allows("channel") && axis == 1) || (allows("last") && axis == rank - 1)) return std::nullopt;
    return fmt::format("{} axis {} of a rank-{} input is not the {} axis", n.opType(), axis, rank,
                       joined(allowed, " or the "));
  };
  return c;
}

LimitCheck maxKCheck() {
  LimitCheck c;
  c.name = "max_k";
  c.kind = LimitKind::Int;
  c.ops = kGemmOps;
  c.describe = [](const LimitValue& v) {
    return fmt::format("reduction length K at most {}", std::get<int64_t>(v));
  };
  c.violation = [](const Node& n, const LimitValue& v) -> Message {
    int64_t k = gemmReductionLength(n);
    int64_t limit = std::get<int64_t>(v);
    if (k <= limit) return std::nullopt;
    return fmt::format("{} K={} exceeds {}", n.opType(), k, limit);
  };
  return c;
}

// Rank and dim limits look at every non-constant input and every output.
template <typename Fn>
Message firstTensorViolation(const Node& n, Fn fn) {
  for (const Value* v : n.inputs())
    if (v && !v->isConstant())
      if (Message m = fn(*v)) return m;
  for (const Value* v : n.outputs())
    if (Message m = fn(*v)) return m;
  return std::nullopt;
}

LimitCheck maxRankCheck() {
  LimitCheck c;
  c.name = "max_rank";
  c.kind = LimitKind::Int;
  c.describe = [](const LimitValue& v) {
    return fmt::format("tensor rank at most {}", std::get<int64_t>(v));
  };
  c.violation = [](const Node& n, const LimitValue& v) {
    int64_t limit = std::get<int64_t>(v);
    return firstTensorViolation(n, [&](const Value& t) -> Message {
      if (t.rank() <= limit) return std::nullopt;
      return fmt::format("{} tensor '{}' {} has rank {}, above {}", n.opType(), t.name(), shapeStr(t.shape()),
                         t.rank(), limit);
    });
  };
  return c;
}

LimitCheck maxDimCheck() {
  LimitCheck c;
  c.name = "max_dim";
  c.kind = LimitKind::Int;
  c.describe = [](const LimitValue& v) { return fmt::format("every dim at most {}", std::get<int64_t>(v)); };
  c.violation = [](const Node& n, const LimitValue& v) {
    int64_t limit = std::get<int64_t>(v);
    return firstTensorViolation(n, [&](const Value& t) -> Message {
      for (int64_t d : t.shape())
        if (d > limit)
          return fmt::format("{} tensor '{}' {} has dim {}, above {}", n.opType(), t.name(),
                             shapeStr(t.shape()), d, limit);
      return std::nullopt;
    });
  };
  return c;
}

std::vector<LimitCheck> buildLimitChecks() {
  return {spatialRankCheck(),
          windowFieldCheck("kernel", windowOps(), "kernel size per spatial dim", &WindowGeometry::kernel),
          windowFieldCheck("stride", windowOps(), "stride per spatial dim", &WindowGeometry::strides),
          padCheck(),
          windowFieldCheck("dilation", kConvOps, "dilation per spatial dim", &WindowGeometry::dilations),
          depthwiseKernelCheck(),
          resizeScaleCheck(),
          resizeModeCheck(),
          softmaxAxisCheck(),
          maxKCheck(),
          maxRankCheck(),
          maxDimCheck()};
}

// ---- always-on checks

Message opSupportViolation(const Node& n, const SocProfile& soc) {
  if (opTraits(n).has(OpTrait::UserDefined))
    return "custom op " + n.opType() + " (reg_custom_op): npuc runs the user's code on the CPU";
  if (soc.opSupport(n.opType())) return std::nullopt;
  const std::string& reason = opTraits(n).cpu_reason;
  if (!reason.empty()) return "op " + n.opType() + " runs on the CPU on every SoC: " + reason;
  return "op " + n.opType() + " is not supported by the NPU";
}

Message staticShapeViolation(const Node& n, const SocProfile&) {
  return firstTensorViolation(n, [&](const Value& t) -> Message {
    if (t.shapeIsStatic()) return std::nullopt;
    return "tensor '" + t.name() + "' has no static shape";
  });
}

// Float tensors are compiled to one of the SoC's NPU dtypes (int8 after quantization, or fp16);
// integer tensors must already be in an NPU dtype. int32/int64/bool (indices, shapes, masks) are not.
Message dtypeViolation(const Node& n, const SocProfile& soc) {
  return firstTensorViolation(n, [&](const Value& t) -> Message {
    if (t.dtype() == DType::Float32 || t.dtype() == DType::Float16) return std::nullopt;
    std::optional<NpuDType> npu = npuDTypeOf(t.dtype());
    if (npu && soc.supportsDtype(*npu)) return std::nullopt;
    return "tensor '" + t.name() + "' of dtype " + dtypeName(t.dtype()) + " has no NPU dtype on " + soc.name;
  });
}

std::vector<AlwaysOnCheck> buildAlwaysOnChecks() {
  return {
      {"op_support", "the op is listed for the SoC (ops not listed run on the CPU)", opSupportViolation},
      {"static_shape", "every non-constant input and every output has a static shape", staticShapeViolation},
      {"dtype",
       "tensors are float32/float16 (compiled to the SoC's NPU dtypes) or int8/int16 where the SoC computes "
       "in them",
       dtypeViolation},
  };
}

}  // namespace

const std::vector<LimitCheck>& limitChecks() {
  static const std::vector<LimitCheck> checks = buildLimitChecks();
  return checks;
}

const LimitCheck* findLimitCheck(const std::string& name) {
  for (const LimitCheck& c : limitChecks())
    if (c.name == name) return &c;
  return nullptr;
}

const std::vector<AlwaysOnCheck>& alwaysOnChecks() {
  static const std::vector<AlwaysOnCheck> checks = buildAlwaysOnChecks();
  return checks;
}

std::vector<Violation> npuViolations(const Node& node, const SocProfile& soc) {
  std::vector<Violation> out;
  for (const AlwaysOnCheck& c : alwaysOnChecks()) {
    if (Message m = c.violation(node, soc)) {
      out.push_back(Violation{c.name, *m, c.name == "op_support"});
      return out;  // later checks assume the earlier ones hold (op listed, shapes static)
    }
  }
  const OpSupport* op = soc.opSupport(node.opType());
  for (const OpLimit& limit : op->limits) {
    const LimitCheck* check = findLimitCheck(limit.name);  // the loader validated the name
    if (Message m = check->violation(node, limit.value))
      out.push_back(Violation{node.opType() + "." + limit.name, *m});
  }
  return out;
}

std::vector<std::string> describeOpLimits(const OpSupport& op) {
  std::vector<std::string> out;
  for (const LimitCheck& check : limitChecks()) {  // catalogue order, so docs read the same per SoC
    const OpLimit* limit = op.findLimit(check.name);
    if (limit) out.push_back(check.describe(limit->value) + (limit->assumed ? " (assumed)" : ""));
  }
  return out;
}

}  // namespace npuc
