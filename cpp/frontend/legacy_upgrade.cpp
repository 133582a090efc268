#include "frontend/legacy_upgrade.h"

#include <string>
#include <vector>

namespace npuc {

namespace {

class Upgrader {
 public:
  Upgrader(Graph& g, int64_t opset) : g_(g), opset_(opset) {}

  void run() {
    for (Node* n : g_.nodeList()) {
      if (!n->domain().empty() && n->domain() != "ai.onnx") continue;
      // Pre-opset-6 bookkeeping attribute with no meaning for inference.
      n->attrs().erase("consumed_inputs");
      upgrade(n);
    }
  }

 private:
  void upgrade(Node* n) {
    const std::string& op = n->opType();
    if (op == "Slice" && opset_ < 10) return sliceInputs(n);
    if (op == "Pad" && opset_ < 11) return padInputs(n);
    if (op == "Split" && opset_ < 13) return attrToInput(n, "split", 1);
    if ((op == "Squeeze" || op == "Unsqueeze") && opset_ < 13) return attrToInput(n, "axes", 1);
    if (op == "ReduceSum" && opset_ < 13) return attrToInput(n, "axes", 1);
    if (op.rfind("Reduce", 0) == 0 && op != "ReduceSum" && opset_ < 18) return attrToInput(n, "axes", 1);
    if (op == "Clip" && opset_ < 11) return clipInputs(n);
    if (op == "TopK" && opset_ < 10) return topKInput(n);
    if (op == "Upsample") return upsampleToResize(n);
    if (op == "Resize" && opset_ < 11) return resize10(n);
    if ((op == "Softmax" || op == "LogSoftmax" || op == "Hardmax") && opset_ < 13) return softmaxAxis(n);
    if (op == "BatchNormalization") return batchNorm(n);
    if (op == "Dropout") return dropout(n);
  }

  // ---- constants

  Value* int64s(Node* n, const std::string& what, const std::vector<int64_t>& v) {
    Tensor t = Tensor::fromVector(v, {static_cast<int64_t>(v.size())});
    return g_.addConstant(std::move(t), n->name() + "_" + what);
  }

  // A scalar of `like`'s element type when that is already known (graph input or constant),
  // else float32: the legacy ops converted here (Clip-6, Pad-2) are defined for floats only.
  Value* floatScalar(Node* n, const std::string& what, float v, const Value* like) {
    Tensor t = Tensor::scalar(v);
    if (like && isFloating(like->dtype())) t = t.castTo(like->dtype());
    return g_.addConstant(std::move(t), n->name() + "_" + what);
  }

  // ---- attribute -> input moves

  void attrToInput(Node* n, const std::string& attr, size_t index) {
    const AttrValue* a = n->attrs().find(attr);
    if (!a) return;
    Value* c = int64s(n, attr, n->attrs().ints(attr));
    n->attrs().erase(attr);
    n->setInput(index, c);
  }

  void sliceInputs(Node* n) {
    const Attributes& at = n->attrs();
    n->setInput(1, int64s(n, "starts", at.ints("starts")));
    n->setInput(2, int64s(n, "ends", at.ints("ends")));
    if (at.has("axes")) n->setInput(3, int64s(n, "axes", at.ints("axes")));
    for (const char* name : {"starts", "ends", "axes"}) n->attrs().erase(name);
  }

  void padInputs(Node* n) {
    n->setInput(1, int64s(n, "pads", n->attrs().ints("pads")));
    const float value = n->attrs().f("value", 0.0f);
    if (value != 0.0f) n->setInput(2, floatScalar(n, "value", value, n->input(0)));
    n->attrs().erase("pads");
    n->attrs().erase("value");
  }

  void clipInputs(Node* n) {
    // Omitted bounds mean "unbounded" in both forms, so absent attributes stay absent inputs.
    if (n->attrs().has("min")) n->setInput(1, floatScalar(n, "min", n->attrs().f("min"), n->input(0)));
    if (n->attrs().has("max")) n->setInput(2, floatScalar(n, "max", n->attrs().f("max"), n->input(0)));
    n->attrs().erase("min");
    n->attrs().erase("max");
  }

  void topKInput(Node* n) {
    n->setInput(1, int64s(n, "k", {n->attrs().i("k")}));
    n->attrs().erase("k");
  }

  // ---- Resize family

  // Upsample and Resize-10 both map output pixel o to input o / scale ("asymmetric") and, for
  // nearest, round down; opset-11+ Resize must be told so explicitly.
  void setLegacyResizeModes(Node* n) {
    const std::string mode = n->attrs().s("mode", "nearest");
    n->attrs().set("mode", std::string(mode == "bilinear" ? "linear" : mode));
    n->attrs().set("coordinate_transformation_mode", std::string("asymmetric"));
    if (mode == "nearest") n->attrs().set("nearest_mode", std::string("floor"));
  }

  void upsampleToResize(Node* n) {
    Value* x = n->input(0);
    Value* scales = n->input(1);
    if (n->attrs().has("scales")) {
      const std::vector<float>& s = n->attrs().floats("scales");
      scales = g_.addConstant(Tensor::fromVector(s, {static_cast<int64_t>(s.size())}), n->name() + "_scales");
      n->attrs().erase("scales");
    }
    n->setOpType("Resize");
    n->removeAllInputs();
    n->setInput(0, x);
    n->setInput(2, scales);
    setLegacyResizeModes(n);
  }

  void resize10(Node* n) {
    Value* x = n->input(0);
    Value* scales = n->input(1);
    n->removeAllInputs();
    n->setInput(0, x);
    n->setInput(2, scales);
    setLegacyResizeModes(n);
  }

  // ---- Softmax family

  // Before opset 13 these ops coerced the input to 2-D at `axis` and normalized over the whole
  // trailing block. When `axis` is the last dim both semantics agree; otherwise spell out the
  // old one: Flatten(axis) -> op(axis=-1) -> Reshape back to Shape(X) (folded away later).
  void softmaxAxis(Node* n) {
    const int64_t axis = n->attrs().i("axis", 1);
    Value* x = n->input(0);
    const bool last_axis = axis == -1 || (x->hasShape() && axis == x->rank() - 1);
    n->attrs().set("axis", int64_t{-1});
    if (last_axis) return;
    Node* flat = g_.insertNodeBefore(n, "Flatten", {x}, 1, n->name() + "_flatten");
    flat->attrs().set("axis", axis);
    Node* shape = g_.insertNodeBefore(n, "Shape", {x}, 1, n->name() + "_shape");
    n->setInput(0, flat->output());
    Value* y = n->output();
    Node* reshape = g_.insertNodeAfter(n, "Reshape", {y, shape->output()}, 1, n->name() + "_reshape");
    redirectConsumers(y, reshape);
  }

  // Points every consumer of `v` except `by` (including graph-output slots) at by's output,
  // which takes over v's name so the model's tensor names stay visible.
  void redirectConsumers(Value* v, Node* by) {
    Value* out = by->output();
    v->replaceUsesWith(out, [by](const Use& u) { return u.user != by; });
    for (size_t i = 0; i < g_.outputs().size(); ++i) {
      if (g_.outputs()[i] == v) g_.setOutput(i, out);
    }
    const std::string name = v->name();
    v->setName(g_.uniqueName(name + "_pre"));
    out->setName(name);
  }

  // ---- training-only outputs and attributes

  void batchNorm(Node* n) {
    if (n->attrs().i("spatial", 1) == 0) {
      throw UnsupportedOpError("node '" + n->name() +
                               "' (BatchNormalization): spatial=0 (per-element statistics) " +
                               "is not supported");
    }
    n->attrs().erase("spatial");
    n->attrs().erase("is_test");
    dropUnusedOutputs(n, 1);
  }

  void dropout(Node* n) {
    n->attrs().erase("is_test");
    if (opset_ < 12) n->attrs().erase("ratio");
    dropUnusedOutputs(n, 1);
  }

  // Nodes cannot shed outputs in place, so a node with unused trailing outputs is rebuilt with
  // the first `keep` or more outputs; values keep their names.
  void dropUnusedOutputs(Node* n, size_t keep) {
    size_t count = n->numOutputs();
    while (count > keep && !n->output(count - 1)->numConsumers()) --count;
    if (count == n->numOutputs()) return;
    Node* fresh = g_.insertNodeBefore(n, n->opType(), n->inputs(), 0, n->name());
    fresh->setDomain(n->domain());
    fresh->attrs() = n->attrs();
    std::vector<std::string> names;
    for (size_t i = 0; i < count; ++i) {
      Value* old = n->output(i);
      names.push_back(old->name());
      Value* out = fresh->addOutput(g_.uniqueName(old->name() + "_new"));
      if (old->hasShape()) out->setType(old->dtype(), old->shape());
      old->replaceAllUsesWith(out);
    }
    g_.eraseNode(n);
    for (size_t i = 0; i < count; ++i) fresh->output(i)->setName(names[i]);
  }

  Graph& g_;
  int64_t opset_;
};

}  // namespace

void upgradeLegacyForms(Graph& graph, int64_t opset) {
  Upgrader(graph, opset).run();
}

}  // namespace npuc
