// The graph optimization pipeline Toolkit.build() runs between import and partitioning:
//   canonical  canonicalize                       (one spelling per computation)
//   fold       fold_qlinear, constant_folding     (QLinear/Integer ops -> DQ, float Conv/MatMul, Q; then
//                                                 everything computable at compile time)
//   rewrite    fold_batchnorm, merge_reshapes, compose_transposes, merge_slices,
//              common_subexpression_elimination, extract_common_factor, canonicalize
//   fuse       fuse_layernorm, fuse_activations, fuse_glu, transpose_reorder, channel_shuffle_to_conv,
//              fold_focus (NPU-oriented fusions; numerics-changing ones run at level 3 only)
//   cleanup    dead_code_elimination
//   target     unroll_recurrent, legalize_conv_stride, legalize_pool_window, reduce_transpose_rank,
//              align_channels (only with OptimizeOptions::target; rewrites that keep ops on the NPU,
//              then padding)
// each stage to its own fixed point, and the whole list again until nothing changes.
#pragma once

#include <string>
#include <vector>

#include "ir/graph.h"
#include "passes/core/pass_manager.h"
#include "passes/core/report.h"

namespace npuc {

struct OptimizeOptions {
  // RKNN meaning: 0 none, 1-2 only passes that cannot change numerics, 3 all (the default).
  int optimization_level = 3;
  // Pass names to skip; an unknown name is a ConfigError listing the valid ones.
  std::vector<std::string> disable_passes;
  int64_t fold_limit_bytes = kDefaultFoldLimitBytes;
  bool verify_each = kVerifyPassesByDefault;
  // Graph dumps after each stage (see StageCallback).
  StageCallback on_stage;
  // The SoC and NPU dtype to compile for: adds the target stage, whose passes read it from the
  // PassContext (legalizations that keep ops on the NPU, then channel padding).
  std::optional<PassTarget> target;
  // Whether the target stage pads channels (align_channels). Toolkit.build turns it off: the
  // padded graph changes every blob, and its benefit has not been measured against the cost model.
  bool align_channels = true;
};

OptimizationReport optimize(Graph& graph, const OptimizeOptions& options = {});

// The target-independent stages above, as (stage name, pass names), for documentation and tools.
const std::vector<std::pair<std::string, std::vector<std::string>>>& optimizationPipeline();

}  // namespace npuc
