// The attention-helper, signal and small numeric op family (issue #22): one registration
// function per opset/ops/attn_*.cpp file; registerAttnOps (attn.cpp) calls them all.
#pragma once

#include "opset/registry.h"

namespace npuc {

namespace attn {
void registerEinsumOp(OpRegistry& reg);
void registerTriluOp(OpRegistry& reg);
void registerNormOps(OpRegistry& reg);  // MeanVarianceNormalization, LRN
void registerDetOp(OpRegistry& reg);
void registerWindowOps(OpRegistry& reg);  // Blackman/Hamming/HannWindow, MelWeightMatrix
void registerSignalOps(OpRegistry& reg);  // DFT, STFT
void registerRandomOps(OpRegistry& reg);  // Bernoulli, RandomUniformLike
}  // namespace attn

}  // namespace npuc
