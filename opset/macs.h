// Multiply-accumulate counts of the MAC-bound ops, shared by `npuc info`, the partitioner and the
// performance model so every report counts MACs the same way.
#pragma once

#include <cstdint>

#include "ir/graph.h"

namespace npuc {

// MACs of one run of the node for Conv, ConvTranspose, Gemm, MatMul, LSTM, GRU, RNN and ai.npuc
// ConvAct; 0 for every other op (their cost is not MAC-bound) and when the needed shapes are unknown.
int64_t nodeMacs(const Node& node);

}  // namespace npuc
