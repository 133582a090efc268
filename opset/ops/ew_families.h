// Sub-families of the elementwise op family, one source file each; registerElementwiseOps()
// (elementwise.cpp) calls them all.
#pragma once

#include "opset/registry.h"

namespace npuc {
namespace ew {

void registerUnaryMathOps(OpRegistry& reg);   // elementwise_unary.cpp: activations, math functions, Clip
void registerArithmeticOps(OpRegistry& reg);  // elementwise_binary.cpp: Add..Pow, PRelu, variadic Sum..Min
void registerLogicOps(
    OpRegistry& reg);  // elementwise_logic.cpp: comparisons, Not/And/Or/Xor, Where, IsNaN/IsInf
void registerCastOp(OpRegistry& reg);  // elementwise_cast.cpp: Cast, CastLike

}  // namespace ew
}  // namespace npuc
