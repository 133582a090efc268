// Activation ranges for a graph built from a quantized TFLite file after npuc's passes changed it:
// the file names a range for each of its tensors, but values npuc created (an unfused activation's
// input, a value a fusion renamed) have none. Each such value takes the range of the nearest
// value upstream that has one (for the ops between, Transpose/Reshape/Pad/MaxPool, that is
// exact; elsewhere it is the file's grid of the op's input), so building needs no dataset.
#pragma once

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "ir/graph.h"

namespace npuc::tflite {

// Adds a (min, max) for every float activation of `g` that `ranges` lacks and that a chain of
// producers links to a value with one; returns the names it filled, in graph order.
std::vector<std::string> completeRanges(const Graph& g, std::map<std::string, std::pair<float, float>>& ranges);

}  // namespace npuc::tflite
