#include "passes/core/pass_registry.h"

#include "common/error.h"

namespace npuc {

// Factories, each defined in its pass's file in passes/.
std::unique_ptr<Pass> createCanonicalizePass();
std::unique_ptr<Pass> createConstantFoldingPass();
std::unique_ptr<Pass> createDeadCodeEliminationPass();
std::unique_ptr<Pass> createCommonSubexpressionEliminationPass();
std::unique_ptr<Pass> createFoldBatchNormPass();
std::unique_ptr<Pass> createMergeReshapesPass();
std::unique_ptr<Pass> createComposeTransposesPass();
std::unique_ptr<Pass> createMergeSlicesPass();
std::unique_ptr<Pass> createExtractCommonFactorPass();
std::unique_ptr<Pass> createFuseLayerNormPass();
std::unique_ptr<Pass> createFuseActivationsPass();
std::unique_ptr<Pass> createFuseGluPass();
std::unique_ptr<Pass> createTransposeReorderPass();
std::unique_ptr<Pass> createAlignChannelsPass();  // target-specific: reads PassContext::target
std::unique_ptr<Pass> createChannelShuffleToConvPass();
std::unique_ptr<Pass> createFoldChannelPermutationsPass();
std::unique_ptr<Pass> createFoldFocusPass();
std::unique_ptr<Pass> createFuseMatMulBiasPass();
std::unique_ptr<Pass> createFuseHardSigmoidPass();
std::unique_ptr<Pass> createLegalizeConvStridePass();   // target-specific: reads PassContext::target
std::unique_ptr<Pass> createReduceTransposeRankPass();  // target-specific: reads PassContext::target
std::unique_ptr<Pass> createLegalizePoolWindowPass();   // target-specific: reads PassContext::target
std::unique_ptr<Pass> createUnrollRecurrentPass();      // target-specific: reads PassContext::target
std::unique_ptr<Pass> createAttentionCleanupPass();
std::unique_ptr<Pass> createPropagateReshapesPass();
std::unique_ptr<Pass> createHoistTransposesPass();
std::unique_ptr<Pass> createLowerEinsumPass();
std::unique_ptr<Pass> createLowerTriluPass();
std::unique_ptr<Pass> createScatterNdToConcatPass();
std::unique_ptr<Pass> createFoldQLinearPass();

const std::vector<PassInfo>& registeredPasses() {
  // Names must match Pass::name() of what the factory builds (checked by test_pass_manager).
  static const std::vector<PassInfo> kPasses = {
      {"canonicalize", createCanonicalizePass},
      {"constant_folding", createConstantFoldingPass},
      {"dead_code_elimination", createDeadCodeEliminationPass},
      {"common_subexpression_elimination", createCommonSubexpressionEliminationPass},
      {"fold_batchnorm", createFoldBatchNormPass},
      {"merge_reshapes", createMergeReshapesPass},
      {"compose_transposes", createComposeTransposesPass},
      {"merge_slices", createMergeSlicesPass},
      {"extract_common_factor", createExtractCommonFactorPass},
      {"fuse_layernorm", createFuseLayerNormPass},
      {"fuse_activations", createFuseActivationsPass},
      {"fuse_glu", createFuseGluPass},
      {"transpose_reorder", createTransposeReorderPass},
      {"align_channels", createAlignChannelsPass},
      {"channel_shuffle_to_conv", createChannelShuffleToConvPass},
      {"fold_channel_permutations", createFoldChannelPermutationsPass},
      {"fold_focus", createFoldFocusPass},
      {"fuse_matmul_bias", createFuseMatMulBiasPass},
      {"fuse_hardsigmoid", createFuseHardSigmoidPass},
      {"legalize_conv_stride", createLegalizeConvStridePass},
      {"reduce_transpose_rank", createReduceTransposeRankPass},
      {"legalize_pool_window", createLegalizePoolWindowPass},
      {"unroll_recurrent", createUnrollRecurrentPass},
      {"attention_cleanup", createAttentionCleanupPass},
      {"propagate_reshapes", createPropagateReshapesPass},
      {"scatter_nd_to_concat", createScatterNdToConcatPass},
      {"hoist_transposes", createHoistTransposesPass},
      {"lower_einsum", createLowerEinsumPass},
      {"lower_trilu", createLowerTriluPass},
      {"fold_qlinear", createFoldQLinearPass},
  };
  return kPasses;
}

std::vector<std::string> registeredPassNames() {
  std::vector<std::string> names;
  for (const PassInfo& p : registeredPasses()) names.emplace_back(p.name);
  return names;
}

bool isRegisteredPass(const std::string& name) {
  for (const PassInfo& p : registeredPasses()) {
    if (name == p.name) return true;
  }
  return false;
}

std::unique_ptr<Pass> createPass(const std::string& name) {
  for (const PassInfo& p : registeredPasses()) {
    if (name == p.name) return p.create();
  }
  std::string valid;
  for (const PassInfo& p : registeredPasses()) valid += (valid.empty() ? "" : ", ") + std::string(p.name);
  throw ConfigError("unknown pass '" + name + "'; valid pass names: " + valid);
}

}  // namespace npuc
