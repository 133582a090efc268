#include "memory/concat_in_place.h"

#include <fmt/format.h>

#include <algorithm>
#include <set>

#include "memory/npu_buffer_sizes.h"
#include "opset/registry.h"

namespace npuc::memory {

namespace {

// Why `v` cannot be a slice written in place by its producer, "" when it can.
std::string inputProblem(const Value* v, const PartitionReport& placement) {
  if (!v) return "an input is missing";
  if (v->isConstant()) return fmt::format("input '{}' is a constant", v->name());
  if (v->isGraphInput()) return fmt::format("input '{}' is a graph input", v->name());
  if (v->isGraphOutput()) return fmt::format("input '{}' is a graph output (its own I/O buffer)", v->name());
  const Node* p = v->producer();
  if (!p) return fmt::format("input '{}' has no producer", v->name());
  if (placement.deviceOf(p) != Device::Npu)
    return fmt::format("input '{}' is written by '{}' on the CPU", v->name(), p->name());
  if (p->opType() == "Concat")  // its buffer may itself contain slices: nesting is not planned
    return fmt::format("input '{}' is another Concat's output", v->name());
  return "";
}

// The quantization parameters as the Concat step compares them (identical: the step is a copy).
std::string quantProblem(const Node& concat, const quant::QuantPlan& plan) {
  if (plan.precisionOf(concat.name()) != quant::NodePrecision::Int8)
    return "the Concat runs in FP16 inside a quantized build";
  const Value* out = concat.output(0);
  if (!plan.has(out->name())) return fmt::format("output '{}' is not quantized", out->name());
  const quant::TensorQuant& q = plan.at(out->name());
  for (const Value* v : concat.inputs()) {
    if (!plan.has(v->name())) return fmt::format("input '{}' is not quantized", v->name());
    const quant::TensorQuant& in = plan.at(v->name());
    if (!in.isPerTensor() || !q.isPerTensor() || in.dtype != q.dtype)
      return fmt::format("input '{}' is not quantized per tensor in the output's dtype", v->name());
  }
  return "";
}

}  // namespace

std::string concatInPlaceProblem(const Node& concat, const quant::QuantPlan* quant_plan,
                                 const SocProfile& soc, const PartitionReport& placement, uint64_t alignment,
                                 std::vector<uint64_t>* offsets) {
  if (concat.opType() != "Concat") return "not a Concat";
  if (placement.deviceOf(&concat) != Device::Npu) return "the Concat runs on the CPU";
  const Value* out = concat.output(0);
  if (!out || out->isGraphOutput()) return "its output is a graph output (its own I/O buffer)";
  if (!out->hasShape() || !out->shapeIsStatic()) return "its output shape is not static";
  const Shape& shape = out->shape();
  if (shape.size() < 2 || shape[0] != 1) return "not a batch-1 tensor of rank >= 2";
  if (normalizeAxis(concat.attrs().i("axis"), static_cast<int64_t>(shape.size())) != 1)
    return "not along the channel dim (1)";
  std::set<const Value*> seen;
  for (const Value* v : concat.inputs()) {
    if (std::string p = inputProblem(v, placement); !p.empty()) return p;
    if (!seen.insert(v).second) return fmt::format("input '{}' is read twice", v->name());
  }
  if (quant_plan) {
    if (std::string p = quantProblem(concat, *quant_plan); !p.empty()) return p;
  }
  const DType storage = npuStorageDType(*out, quant_plan);
  const std::optional<NpuDType> npu = alignmentDType(storage);
  if (!npu || !soc.supportsDtype(*npu))
    return fmt::format("the NPU does not store {} in blocks", dtypeName(storage));
  for (const Value* v : concat.inputs())
    if (npuStorageDType(*v, quant_plan) != storage)
      return fmt::format("input '{}' is stored as another dtype", v->name());
  const int64_t c2 = soc.alignment(*npu, AlignmentRole::Other);
  int64_t inner = 1;
  for (size_t d = 2; d < shape.size(); ++d) inner *= shape[d];
  const uint64_t channel_bytes = static_cast<uint64_t>(inner) * dtypeSize(storage);
  std::vector<uint64_t> starts;
  int64_t channel = 0;
  for (const Value* v : concat.inputs()) {
    const uint64_t start = static_cast<uint64_t>(channel) * channel_bytes;
    if (channel % c2 != 0)
      return fmt::format("input '{}' starts at channel {}, not on a block of {}", v->name(), channel, c2);
    if (start % alignment != 0)
      return fmt::format("input '{}' starts at byte {}, not on {} bytes", v->name(), start, alignment);
    starts.push_back(start);
    channel += v->shape().size() == shape.size() ? v->shape()[1] : -1;
    if (channel < 0) return fmt::format("input '{}' has another rank", v->name());
  }
  if (offsets) *offsets = std::move(starts);
  return "";
}

std::vector<bool> rescaledInputs(const Node& concat, const quant::QuantPlan* plan) {
  std::vector<bool> out(concat.inputs().size(), false);
  const Value* y = concat.output(0);
  if (!plan || !y || !plan->has(y->name())) return out;
  const quant::TensorQuant& q = plan->at(y->name());
  for (size_t i = 0; i < out.size(); ++i) {
    const Value* v = concat.inputs()[i];
    if (!v || !plan->has(v->name())) continue;
    const quant::TensorQuant& in = plan->at(v->name());
    out[i] = in.scales != q.scales || in.zero_points != q.zero_points;
  }
  return out;
}

bool concatCopiesNothing(const Node& concat, const quant::QuantPlan* plan) {
  const std::vector<bool> r = rescaledInputs(concat, plan);
  return std::none_of(r.begin(), r.end(), [](bool b) { return b; });
}

bool concatIsInPlace(const Node& node, const std::set<std::string>& containers) {
  return node.opType() == "Concat" && node.output(0) && containers.count(node.output(0)->name()) != 0;
}

}  // namespace npuc::memory
