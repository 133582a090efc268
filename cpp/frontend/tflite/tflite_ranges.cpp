#include "frontend/tflite/tflite_ranges.h"

namespace npuc::tflite {

std::vector<std::string> completeRanges(const Graph& g, std::map<std::string, std::pair<float, float>>& ranges) {
  std::vector<std::string> filled;
  auto known = [&](const Value* v) { return v && ranges.count(v->name()); };
  // Graph order: a producer's outputs are settled before its consumers look upstream.
  for (const Node* n : g.nodes()) {
    for (const Value* out : n->outputs()) {
      if (!out || out->dtype() != DType::Float32 || known(out)) continue;
      const Value* from = nullptr;
      for (const Value* in : n->inputs())
        if (in && !in->isConstant() && known(in)) {
          from = in;
          break;
        }
      if (!from) {  // no upstream range: the first consumer's output (e.g. a graph input's Transpose)
        for (const Use& u : out->uses())
          for (const Value* o : u.user->outputs())
            if (known(o)) from = o;
      }
      if (!from) continue;
      ranges[out->name()] = ranges.at(from->name());
      filled.push_back(out->name());
    }
  }
  // Graph inputs nobody named (only when the file's input was float): their consumer's range.
  for (const Value* in : g.inputs()) {
    if (known(in)) continue;
    for (const Use& u : in->uses())
      for (const Value* o : u.user->outputs())
        if (known(o) && !known(in)) {
          ranges[in->name()] = ranges.at(o->name());
          filled.push_back(in->name());
        }
  }
  return filled;
}

}  // namespace npuc::tflite
