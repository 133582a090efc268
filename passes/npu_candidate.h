// What the target NPU would say about a node a rewrite has not built yet. Target-stage passes
// (legalize_conv_stride, reduce_transpose_rank) try a form and keep it only if the same checks the
// partitioner applies (target/op_constraints.h) accept it, so a legalization never trades one CPU
// fallback for another and the limits are written once, in the SoC profile.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "passes/core/pass_context.h"
#include "target/op_constraints.h"

namespace npuc {

// One input of the candidate node: its type, and whether it is a constant (weights). A constant
// carries its shape but no values: the partition checks read shapes only, and nothing is allocated.
struct CandidateInput {
  DType dtype = DType::Float32;
  Shape shape;
  bool constant = false;
};

// The violations of an `op_type` node with these inputs, attributes and output type on `soc`
// (empty: it would run on the NPU). Built in a scratch graph; the real graph is not touched.
std::vector<Violation> candidateViolations(const std::string& op_type,
                                           const std::vector<CandidateInput>& inputs, const Attributes& attrs,
                                           DType out_dtype, const Shape& out_shape, const SocProfile& soc,
                                           const std::string& domain = "");

// For a fusion that replaces `parts` by one `op_type` node: why the fused node would move work from
// the target's NPU to its CPU (the NPU refuses it while it runs every part), or "" when the fusion
// is fine for the target (or there is no target). A fusion must not make the target's program
// worse: one CPU op and two NPU<->CPU hand-overs cost more than the parts on the NPU.
std::string fusionLeavesNpu(const PassContext& ctx, const std::vector<const Node*>& parts,
                            const std::string& op_type, const std::string& domain,
                            const std::vector<CandidateInput>& inputs, const Attributes& attrs,
                            DType out_dtype, const Shape& out_shape);

// What a target-stage rewrite knows about `node` before it tries anything: the SoC, the NPU checks
// the node fails, and whether the user placed it (op_target; then the rewrite leaves it, saying so).
struct LegalizationSubject {
  const SocProfile* soc = nullptr;
  std::vector<Violation> violations;  // never empty
  bool placed_by_user = false;
};

// nullopt when there is nothing for the rewrite to do: no target in `ctx`, an op of another domain,
// a node the NPU already runs, or one that fails a check not named in `fixable` (e.g. "Conv.stride"):
// its CPU placement has a reason this rewrite does not remove.
std::optional<LegalizationSubject> legalizationSubject(const Node& node, const PassContext& ctx,
                                                       const std::vector<std::string>& fixable);

}  // namespace npuc
