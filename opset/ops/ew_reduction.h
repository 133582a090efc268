// Sub-families of the reduction op family, one source file each; registerReductionOps()
// (reduction.cpp) calls them all.
#pragma once

#include "opset/registry.h"

namespace npuc {
namespace ew {

void registerReduceOps(OpRegistry& reg);   // reduction_reduce.cpp: Reduce{Sum,Mean,Max,Min,Prod,L1,L2,...}
void registerArgOps(OpRegistry& reg);      // reduction_arg.cpp: ArgMax, ArgMin, Hardmax
void registerSoftmaxOps(OpRegistry& reg);  // reduction_softmax.cpp: Softmax, LogSoftmax
void registerTopKOp(OpRegistry& reg);      // reduction_topk.cpp
void registerCumSumOp(OpRegistry& reg);    // reduction_cumsum.cpp
void registerTfIdfOp(OpRegistry& reg);     // reduction_tfidf.cpp: TfIdfVectorizer (n-gram counts)

}  // namespace ew
}  // namespace npuc
