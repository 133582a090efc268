// Registration entry points of the nn op family's files; registerNnOps (nn.cpp) calls them all.
#pragma once

#include "opset/registry.h"

namespace npuc::nn {

void registerConvOps(OpRegistry& reg);           // Conv, ai.npuc ConvAct (nn_conv.cpp)
void registerConvTransposeOps(OpRegistry& reg);  // ConvTranspose (nn_conv_transpose.cpp)
void registerMatmulOps(OpRegistry& reg);         // Gemm, MatMul (nn_matmul.cpp)
void registerPoolOps(OpRegistry& reg);           // MaxPool, AveragePool, Global*Pool (nn_pool.cpp)
void registerNormOps(OpRegistry& reg);           // BatchNormalization, Instance/Layer/LpNormalization

}  // namespace npuc::nn
