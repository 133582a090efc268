#include "passes/npu_candidate.h"

#include <string>

namespace npuc {

std::vector<Violation> candidateViolations(const std::string& op_type, const std::vector<CandidateInput>& inputs,
                                           const Attributes& attrs, DType out_dtype, const Shape& out_shape,
                                           const SocProfile& soc) {
  Graph scratch;
  std::vector<Value*> values;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const CandidateInput& in = inputs[i];
    const std::string name = "in" + std::to_string(i);
    if (!in.constant) {
      values.push_back(scratch.addInput(name, in.dtype, in.shape));
      continue;
    }
    values.push_back(scratch.addConstant(Tensor(in.dtype, in.shape), name));  // zero-filled
  }
  Node* node = scratch.appendNode(op_type, values, 1);
  node->attrs() = attrs;
  node->output()->setType(out_dtype, out_shape);
  return npuViolations(*node, soc);
}

}  // namespace npuc
