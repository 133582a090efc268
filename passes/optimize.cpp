#include "passes/optimize.h"

namespace npuc {

const std::vector<std::pair<std::string, std::vector<std::string>>>& optimizationPipeline() {
  static const std::vector<std::pair<std::string, std::vector<std::string>>> kPipeline = {
      {"canonical", {"canonicalize"}},
      {"fold", {"fold_qlinear", "constant_folding"}},
      {"rewrite",
       {"lower_einsum", "lower_trilu", "fold_batchnorm", "fuse_matmul_bias", "attention_cleanup",
        "propagate_reshapes", "merge_reshapes", "compose_transposes", "hoist_transposes", "scatter_nd_to_concat",
        "merge_slices", "common_subexpression_elimination", "extract_common_factor", "canonicalize"}},
      {"fuse",
       {"fuse_layernorm", "fuse_activations", "fuse_hardsigmoid", "fuse_glu", "transpose_reorder",
        "fold_channel_permutations", "channel_shuffle_to_conv", "fold_focus"}},
      {"cleanup", {"dead_code_elimination"}},
  };
  return kPipeline;
}

OptimizationReport optimize(Graph& graph, const OptimizeOptions& options) {
  PassManagerOptions pm_options;
  pm_options.optimization_level = options.optimization_level;
  pm_options.disable_passes = options.disable_passes;
  pm_options.fold_limit_bytes = options.fold_limit_bytes;
  pm_options.verify_each = options.verify_each;
  pm_options.on_stage = options.on_stage;
  pm_options.target = options.target;
  PassManager pm(std::move(pm_options));
  for (const auto& [stage, passes] : optimizationPipeline()) pm.addStage(stage, passes);
  if (options.target) {
    std::vector<std::string> target_passes{"unroll_recurrent", "legalize_conv_stride", "legalize_pool_window",
                                           "reduce_transpose_rank"};
    if (options.align_channels) target_passes.emplace_back("align_channels");
    pm.addStage("target", target_passes);
  }
  return pm.run(graph);
}

}  // namespace npuc
