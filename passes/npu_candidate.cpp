#include "passes/npu_candidate.h"

#include <algorithm>
#include <string>

#include "target/partition.h"

namespace npuc {

std::vector<Violation> candidateViolations(const std::string& op_type,
                                           const std::vector<CandidateInput>& inputs, const Attributes& attrs,
                                           DType out_dtype, const Shape& out_shape, const SocProfile& soc,
                                           const std::string& domain) {
  Graph scratch;
  std::vector<Value*> values;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const CandidateInput& in = inputs[i];
    const std::string name = "in" + std::to_string(i);
    if (!in.constant) {
      values.push_back(scratch.addInput(name, in.dtype, in.shape));
      continue;
    }
    // Shape only, no storage: the checks read shapes, and a candidate's weights can be large.
    values.push_back(scratch.addConstant(Tensor::wrap(in.dtype, in.shape, nullptr, nullptr), name));
  }
  Node* node = scratch.appendNode(op_type, values, 1);
  node->attrs() = attrs;
  node->setDomain(domain);
  node->output()->setType(out_dtype, out_shape);
  return npuViolations(*node, soc);
}

std::string fusionLeavesNpu(const PassContext& ctx, const std::vector<const Node*>& parts,
                            const std::string& op_type, const std::string& domain,
                            const std::vector<CandidateInput>& inputs, const Attributes& attrs,
                            DType out_dtype, const Shape& out_shape) {
  if (!ctx.target || !ctx.target->soc) return "";
  const SocProfile& soc = *ctx.target->soc;
  for (const Node* part : parts)
    if (!npuViolations(*part, soc).empty()) return "";  // some of it is on the CPU anyway
  const std::vector<Violation> fused =
      candidateViolations(op_type, inputs, attrs, out_dtype, out_shape, soc, domain);
  if (fused.empty()) return "";
  return soc.name + "'s NPU runs the " + std::to_string(parts.size()) + " ops it would replace but not " +
         op_type + " (" + fused.front().message + ")";
}

std::optional<LegalizationSubject> legalizationSubject(const Node& node, const PassContext& ctx,
                                                       const std::vector<std::string>& fixable) {
  if (!ctx.target || !ctx.target->soc || !node.domain().empty()) return std::nullopt;
  LegalizationSubject s;
  s.soc = ctx.target->soc;
  s.violations = npuViolations(node, *s.soc);
  if (s.violations.empty()) return std::nullopt;
  for (const Violation& v : s.violations)
    if (std::find(fixable.begin(), fixable.end(), v.check) == fixable.end()) return std::nullopt;
  s.placed_by_user = userOpTargetEntry(node, ctx.target->op_target) != nullptr;
  return s;
}

}  // namespace npuc
