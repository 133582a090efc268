#include "blob/graph_shape_check.h"

#include <fmt/format.h>

#include <string>
#include <vector>

#include "common/error.h"
#include "opset/eval.h"
#include "opset/registry.h"

namespace npuc::blob {

namespace {

std::string typeStr(DType dtype, const Shape& shape, bool has_shape) {
  return std::string(dtypeName(dtype)) + (has_shape ? shapeStr(shape) : "[?]");
}

// Inference agrees with the record: same dtype, same rank, and every dim it knows is the same.
bool agrees(const Value& inferred, DType dtype, const Shape& shape, bool has_shape) {
  if (inferred.dtype() != DType::Undefined && inferred.dtype() != dtype) return false;
  if (!inferred.hasShape() || !has_shape) return true;
  if (inferred.shape().size() != shape.size()) return false;
  for (size_t i = 0; i < shape.size(); ++i)
    if (inferred.shape()[i] >= 0 && inferred.shape()[i] != shape[i]) return false;
  return true;
}

}  // namespace

void checkRecordedShapes(const Graph& graph) {
  // On a clone (constants share storage), inference overwrites output types in place.
  const std::unique_ptr<Graph> g = graph.clone();
  for (Node* n : g->nodes()) {
    // Ops this npuc cannot infer (custom domains, ops of newer versions) keep their record; no
    // runtime here can run them, so none sizes a buffer from it.
    const OpSchema* schema = OpRegistry::instance().find(*n);
    if (!schema || !schema->infer) continue;
    struct Recorded {
      DType dtype;
      Shape shape;
      bool has_shape;
    };
    std::vector<Recorded> recorded;
    for (Value* out : n->outputs()) {
      recorded.push_back({out->dtype(), out->shape(), out->hasShape()});
      out->clearShape();
    }
    try {
      inferNode(*n);
    } catch (const Error& e) {
      throw BlobError(std::string("corrupt blob: GRAPH section: ") + e.what());
    }
    for (size_t i = 0; i < recorded.size(); ++i) {
      Value* out = n->output(i);
      const Recorded& r = recorded[i];
      if (!agrees(*out, r.dtype, r.shape, r.has_shape))
        throw BlobError(
            fmt::format("corrupt blob: GRAPH section: {}output {} '{}' is recorded as {} but its inputs and "
                        "attributes give {}",
                        nodeErrorPrefix(*n), i, out->name(), typeStr(r.dtype, r.shape, r.has_shape),
                        typeStr(out->dtype(), out->shape(), out->hasShape())));
      // Later nodes are inferred from the recorded type, as the runtimes will use it.
      if (r.has_shape) {
        out->setType(r.dtype, r.shape);
      } else {
        out->setDType(r.dtype);
        out->clearShape();
      }
    }
  }
}

}  // namespace npuc::blob
