// Refuses models whose weights hold values no correct export produces: a NaN in any floating
// constant (initializer or Constant node), and +/-Inf in a weight or bias of the ops whose output
// it would turn entirely into Inf/NaN (Conv, ConvTranspose, Gemm, MatMul, BatchNormalization).
// Inf elsewhere is legitimate and kept: attention masks are built from -inf constants, and
// Clip/Min/Max bounds may be +/-inf.
#pragma once

#include "ir/graph.h"

namespace npuc {

// Throws ModelLoadError "tensor 'w' ... NaN at index i" (or "... Inf at index i (weight of Conv
// 'conv1')") for the first offending element of the first offending constant.
void checkWeightValues(const Graph& graph);

}  // namespace npuc
