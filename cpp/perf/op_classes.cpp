#include "perf/op_classes.h"

#include "opset/op_traits.h"

namespace npuc::perf {

// The cost model sees op-type names only, so these read the traits of the op of that name
// (opset/op_traits.h); the facts themselves are set at each op's registration.

bool isLowEfficiencyOp(const std::string& op_type) {
  return opTraitsOfType(op_type).lowEfficiencyOnNpu();
}

bool runsInFloat(const std::string& op_type) {
  return opTraitsOfType(op_type).runsInFloat();
}

bool isTranscendental(const std::string& op_type) {
  return opTraitsOfType(op_type).has(OpTrait::Transcendental);
}

bool isWindowPooling(const std::string& op_type) {
  return opTraitsOfType(op_type).has(OpTrait::WindowPooling);
}

StreamClass streamClass(const std::string& op_type) {
  // Transpose and the normalizing ops share traits with cheaper ops (DataMovement; Float), so
  // they are named here: the traits do not say how many passes an op makes.
  if (op_type == "Transpose") return StreamClass::Transpose;
  if (op_type == "Softmax" || op_type == "LogSoftmax" || op_type == "LayerNormalization" ||
      op_type == "InstanceNormalization" || op_type == "GroupNormalization")
    return StreamClass::Normalize;
  const OpTraits& t = opTraitsOfType(op_type);
  if (t.has(OpTrait::SlowActivation)) return StreamClass::Lut;
  if (t.has(OpTrait::WindowPooling)) return StreamClass::Pool;
  if (t.hasAny(OpTrait::DataMovement | OpTrait::SizeChange)) return StreamClass::DataMovement;
  return StreamClass::Elementwise;
}

}  // namespace npuc::perf
