// Bounded outputs: how npuc runs an op whose output size depends on the data (NonMaxSuppression,
// NonZero) in a graph compiled with static shapes.
//
// When such a node's data input is computed at run time, shape inference gives the data-dependent
// axis its upper bound (NMS: batches * classes * min(max_output_boxes_per_class, boxes) rows;
// NonZero: numel columns) and the kernel fills the slices past the actual result with -1, which
// no real index is. The value may then ONLY be a graph output: no node may read it, since every
// consumer would see the padding (checkBoundedOutputs refuses such a graph when it is compiled,
// naming the node and the consumer). The runtimes (FP32 executor, INT8/FP16 simulator, program
// runtime, Python Runtime) hand the output back trimmed to its actual extent.
#pragma once

#include <vector>

#include "ir/graph.h"

namespace npuc {

// The axis of output `o` of `node` whose extent is only known at run time, or -1: what the op's
// registration says (OpSchema::bounded_axis). Nodes whose inputs are constant have exact shapes.
int boundedOutputAxis(const Node& node, size_t o);
// For the registrations' bounded_axis functions: input i is present and constant.
bool inputIsConstant(const Node& n, size_t i);

// The actual extent of a padded bounded output along `axis` (0 or 1 of a 2-D int64 tensor): the
// number of leading slices whose first element is not -1.
int64_t boundedExtent(const TensorView& padded, int axis);

// Throws UnsupportedOpError naming the node, the value and its first consumer when a bounded
// value is read by a node or is not a graph output.
void checkBoundedOutputs(const Graph& graph);

// Replaces each bounded graph output in `outputs` (graph output order) by its leading actual
// extent. A no-op for graphs without bounded outputs.
void trimBoundedOutputs(const Graph& graph, std::vector<Tensor>& outputs);

// Per graph output: its bounded axis or -1 (for callers that trim their own buffers).
std::vector<int> boundedAxesOfOutputs(const Graph& graph);

}  // namespace npuc
