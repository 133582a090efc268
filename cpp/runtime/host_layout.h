// Channels-last regions for the FP32 host runtime (applied by the executor after host fusion).
//
// oneDNN's fast convolutions (brgconv, brdgmm_dw) work on channels-last (NHWC) activations; a
// convolution reading and writing NCHW pays a reorder on each side, which on MobileNetV2 cost
// more than the convolutions themselves. Like ONNX Runtime's NCHWc layout transformer, this step
// lets chains of convolutions hand their activations to each other in NHWC and converts only at
// the edges of such a region: a value is stored NHWC when its producer and every consumer are
// 2-D FP32 convolutions (as input X, or as the Sum operand of a ConvAct whose own output is
// NHWC) and it is not a graph output. NHWC takes the bytes NCHW takes, so the memory plan is
// unchanged; the IR keeps the logical NCHW shapes.
//
// Every convolution touching such a value becomes an ai.npuc ConvAct (a Conv is a ConvAct
// without activation) with the string attributes x_layout / y_layout ("NHWC"; absent means
// NCHW), which its kernel reads; X and Sum share the layout y_layout names for Sum.
#pragma once

#include <cstddef>

#include "ir/graph.h"
#include "opset/registry.h"

namespace npuc {

// Marks channels-last regions in `graph`; returns how many values are stored NHWC. Does nothing
// (returns 0) when `registry` has no ConvAct.
size_t assignChannelsLastLayouts(Graph& graph, const OpRegistry& registry);

}  // namespace npuc
