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

}  // namespace npuc::perf
