#include "runtime/host_layout.h"

#include <unordered_set>

namespace npuc {

namespace {

constexpr const char* kConvActOp = "ConvAct";
// ConvAct's input slots: X, W, [B], [Sum] (opset/ops/nn_conv_kernel.h).
constexpr size_t kXSlot = 0;
constexpr size_t kSumSlot = 3;

bool isConv(const Node& n) {
  return (n.opType() == "Conv" && n.domain().empty()) ||
         (n.opType() == kConvActOp && n.domain() == kNpucDomain);
}

// A 2-D FP32 convolution with one output: what the oneDNN kernels run in NHWC.
bool isConv2d(const Node* n) {
  if (!n || !isConv(*n) || n->numOutputs() != 1 || !n->input(kXSlot)) return false;
  const Value* y = n->output();
  return y->dtype() == DType::Float32 && y->shapeIsStatic() && y->shape().size() == 4 &&
         n->input(kXSlot)->shape().size() == 4;
}

// Whether `v` may be stored NHWC given the current candidates (see host_layout.h).
bool qualifies(const Value* v, const std::unordered_set<const Value*>& nhwc) {
  if (v->isGraphOutput() || !v->hasUses() || !isConv2d(v->producer())) return false;
  // The producer adds its Sum operand in its output layout, so that operand must be NHWC too.
  const Value* sum = v->producer()->input(kSumSlot);
  if (sum && !nhwc.count(sum)) return false;
  for (const Use& u : v->uses()) {
    if (!isConv2d(u.user)) return false;
    if (u.index == kXSlot) continue;
    // The Sum operand is added in the consumer's output layout.
    if (u.index != kSumSlot || !nhwc.count(u.user->output())) return false;
  }
  return true;
}

void makeConvAct(Node& n) {
  if (n.opType() == kConvActOp) return;
  n.setOpType(kConvActOp);
  n.setDomain(kNpucDomain);
  n.attrs().set("activation", std::string());
}

}  // namespace

size_t assignChannelsLastLayouts(Graph& graph, const OpRegistry& registry) {
  if (!registry.find(kConvActOp, kNpucDomain)) return 0;
  std::unordered_set<const Value*> nhwc;
  for (Node* n : graph.nodes()) {
    if (isConv2d(n)) nhwc.insert(n->output());
  }
  // Demoting a value can only disqualify others (a Sum operand of its producer), so this ends.
  for (bool changed = true; changed;) {
    changed = false;
    for (auto it = nhwc.begin(); it != nhwc.end();) {
      if (qualifies(*it, nhwc)) {
        ++it;
      } else {
        it = nhwc.erase(it);
        changed = true;
      }
    }
  }
  for (const Value* v : nhwc) {
    Node* producer = v->producer();
    makeConvAct(*producer);
    producer->attrs().set("y_layout", std::string("NHWC"));
    for (const Use& u : v->uses()) {
      makeConvAct(*u.user);
      if (u.index == kXSlot) u.user->attrs().set("x_layout", std::string("NHWC"));
    }
  }
  return nhwc.size();
}

}  // namespace npuc
