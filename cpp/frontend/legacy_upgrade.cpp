#include "frontend/legacy_upgrade.h"

#include <onnx/onnx_pb.h>

#include <string>
#include <vector>

#include "opset/registry.h"

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
    if (isLegacyBroadcastOp(op) && opset_ < 7) return legacyBroadcast(n);
    if (op == "Gemm" && opset_ < 7) return gemmBroadcast(n);
    if (op == "PRelu" && opset_ < 7) return preluPerChannelSlope(n);
    if (op == "Concat" && opset_ < 4) return concatDefaultAxis(n);
    if (op == "Reshape" && opset_ < 5) return reshapeShapeAttr(n);
    if (op == "Cast" && opset_ < 6) return castTypeName(n);
    if (op == "Tile" && opset_ < 6) return tileAlongAxis(n);
    if (op == "Gelu" && opset_ >= 20) return geluToNpuc(n);
    if (op == "Slice" && opset_ < 10) return sliceInputs(n);
    if (op == "Pad" && opset_ < 2) padPaddingsName(n);
    if (op == "Pad" && opset_ < 11) return padInputs(n);
    if (op == "Split" && opset_ < 13) return attrToInput(n, "split", 1);
    if ((op == "Squeeze" || op == "Unsqueeze") && opset_ < 13) return attrToInput(n, "axes", 1);
    if (op == "ReduceSum" && opset_ < 13) return attrToInput(n, "axes", 1);
    if (op.rfind("Reduce", 0) == 0 && op != "ReduceSum" && opset_ < 18) return attrToInput(n, "axes", 1);
    if (op == "Clip" && opset_ < 11) return clipInputs(n);
    if (op == "TopK" && opset_ < 10) return topKInput(n);
    if (op == "Upsample" && opset_ < 7) upsampleHeightWidthScales(n);
    if (op == "Upsample") return upsampleToResize(n);
    if (op == "Resize" && opset_ < 11) return resize10(n);
    if ((op == "Softmax" || op == "LogSoftmax" || op == "Hardmax") && opset_ < 13) return softmaxAxis(n);
    if (op == "BatchNormalization") return batchNorm(n);
    if (op == "Dropout") return dropout(n);
    if (op == "RoiAlign" && opset_ < 16) return roiAlign10(n);
  }

  // The typed refusal for a legacy form npuc cannot express: names the node, op and opset.
  [[noreturn]] void refuse(const Node* n, const std::string& what) const {
    throw UnsupportedOpError("node '" + n->name() + "' (" + n->opType() + ", opset " + std::to_string(opset_) +
                             "): " + what);
  }

  // ---- opset 1..6 forms

  static bool isLegacyBroadcastOp(const std::string& op) {
    for (const char* o : {"Add", "Sub", "Mul", "Div", "Pow", "And", "Or", "Xor", "Equal", "Greater", "Less"}) {
      if (op == o) return true;
    }
    return false;
  }

  // Opset 7 replaced `broadcast=1, axis=k` (B's dims line up with A's from dim k on) by numpy
  // broadcasting (B's dims line up with A's last ones). Without `axis` both agree; with it, B
  // gets trailing 1-dims so that numpy lines it up at k. broadcast=0 demanded equal shapes,
  // which numpy broadcasting accepts as they are.
  void legacyBroadcast(Node* n) {
    const bool broadcast = n->attrs().i("broadcast", 0) != 0;
    const bool has_axis = n->attrs().has("axis");
    const int64_t axis = n->attrs().i("axis", 0);
    n->attrs().erase("broadcast");
    n->attrs().erase("axis");
    if (broadcast && has_axis) n->setInput(1, alignAt(n, n->input(1), n->input(0), axis));
  }

  // Gemm-1/6's `broadcast` allowed C to broadcast; opset 7 always broadcasts C (unidirectionally).
  void gemmBroadcast(Node* n) { n->attrs().erase("broadcast"); }

  // Before opset 7 PRelu's slope was per channel (dim 1) or a single value; opset 7 broadcasts
  // it numpy-style from the last dim. A 1-D slope [C] is lined up with dim 1 again.
  void preluPerChannelSlope(Node* n) {
    Value* slope = n->input(1);
    if (slope->hasShape() && slope->rank() != 1) return;  // a scalar or already full-rank slope
    if (n->input(0)->hasShape() && n->input(0)->rank() < 2) return;  // no channel dim: one value
    n->setInput(1, alignAt(n, slope, n->input(0), 1));
  }

  // Concat's `axis` became required in opset 4; before it defaulted to 1.
  void concatDefaultAxis(Node* n) {
    if (!n->attrs().has("axis")) n->attrs().set("axis", int64_t{1});
  }

  // Opset 5 moved Reshape's target shape from the `shape` attribute to an input.
  void reshapeShapeAttr(Node* n) {
    if (!n->attrs().has("shape")) refuse(n, "the target shape (attribute 'shape') is missing");
    attrToInput(n, "shape", 1);
  }

  // Opset 6 changed Cast's `to` from a type name ("FLOAT") to the TensorProto data type number.
  void castTypeName(Node* n) {
    const AttrValue* to = n->attrs().find("to");
    if (!to || attrKind(*to) != AttrKind::String) return;
    const std::string name = std::get<std::string>(*to);
    onnx::TensorProto::DataType type = onnx::TensorProto::UNDEFINED;
    if (!onnx::TensorProto::DataType_Parse(name, &type) || type == onnx::TensorProto::UNDEFINED) {
      refuse(n, "'to' names the unknown element type '" + name + "'");
    }
    n->attrs().set("to", static_cast<int64_t>(type));
  }

  // Tile-1 took (input, tiles, axis): `tiles` copies along one axis. Opset 6 takes one repeat
  // count per dim, so the two scalars become [1, .., tiles at axis, .., 1]; that needs both to be
  // constants and the input's rank to be known.
  void tileAlongAxis(Node* n) {
    Value* x = n->input(0);
    const Value* tiles = n->input(1);
    const Value* axis = n->numInputs() > 2 ? n->input(2) : nullptr;
    if (!tiles || !axis || !tiles->isConstant() || !axis->isConstant() || !x->hasShape()) {
      refuse(n, "Tile-1 (tiles, axis) needs constant tiles and axis and an input of known rank");
    }
    const int64_t rank = x->rank();
    const int64_t a = normalizeAxis(static_cast<int64_t>(axis->constant().doubleAt(0)), rank, "Tile axis");
    std::vector<int64_t> repeats(static_cast<size_t>(rank), 1);
    repeats[static_cast<size_t>(a)] = static_cast<int64_t>(tiles->constant().doubleAt(0));
    n->removeAllInputs();
    n->setInput(0, x);
    n->setInput(1, int64s(n, "repeats", repeats));
  }

  // Pad-2 renamed Pad-1's `paddings` to `pads` (same layout: all begins, then all ends).
  void padPaddingsName(Node* n) {
    if (!n->attrs().has("paddings")) return;
    n->attrs().set("pads", n->attrs().ints("paddings"));
    n->attrs().erase("paddings");
  }

  // Upsample-1 had `height_scale` and `width_scale` for NCHW input; opset 7 has one `scales`
  // entry per dim.
  void upsampleHeightWidthScales(Node* n) {
    if (n->attrs().has("scales")) return;
    const float h = n->attrs().f("height_scale", 1.0f);
    const float w = n->attrs().f("width_scale", 1.0f);
    n->attrs().set("scales", std::vector<float>{1.0f, 1.0f, h, w});
    n->attrs().erase("height_scale");
    n->attrs().erase("width_scale");
  }

  // Lines up `b`'s first dim with dim `axis` of `a` under numpy broadcasting, by appending
  // (rank(a) - axis - rank(b)) 1-dims to b. With both ranks known that is an Unsqueeze (or a
  // reshaped constant); else it is spelled with Shape ops, which fold once shapes are inferred.
  Value* alignAt(Node* n, Value* b, Value* a, int64_t axis) {
    if (a->hasShape() && b->hasShape()) {
      const int64_t rank_a = a->rank();
      const int64_t rank_b = b->rank();
      const int64_t given = axis;
      if (axis < 0) axis += rank_a;
      const int64_t trailing = rank_a - axis - rank_b;
      if (axis < 0 || trailing < 0) {
        refuse(n, "broadcast axis " + std::to_string(given) + " does not fit a rank-" + std::to_string(rank_b) +
                      " operand into a rank-" + std::to_string(rank_a) + " one");
      }
      if (trailing == 0) return b;
      Shape shape = b->shape();
      shape.insert(shape.end(), static_cast<size_t>(trailing), 1);
      if (b->isConstant()) return g_.addConstant(b->constant().reshaped(shape), b->name() + "_aligned");
      std::vector<int64_t> axes;
      for (int64_t i = 0; i < trailing; ++i) axes.push_back(rank_b + i);
      Node* u = g_.insertNodeBefore(n, "Unsqueeze", {b, int64s(n, "align_axes", axes)}, 1, n->name() + "_align");
      return u->output();
    }
    // trailing = rank(a) - axis - rank(b), or -axis - rank(b) for a negative axis.
    Value* rank_b = op1(n, "Shape", {op1(n, "Shape", {b})});
    Value* lead = axis < 0 ? int64s(n, "neg_axis", {-axis})
                           : op1(n, "Sub", {op1(n, "Shape", {op1(n, "Shape", {a})}), int64s(n, "axis", {axis})});
    Value* trailing = op1(n, "Max", {op1(n, "Sub", {lead, rank_b}), int64s(n, "zero", {0})});
    Node* ones = g_.insertNodeBefore(n, "ConstantOfShape", {trailing}, 1, n->name() + "_align_ones");
    ones->attrs().set("value", Tensor::fromVector<int64_t>({1}, {1}));
    Node* shape = g_.insertNodeBefore(n, "Concat", {op1(n, "Shape", {b}), ones->output()}, 1,
                                      n->name() + "_align_shape");
    shape->attrs().set("axis", int64_t{0});
    return op1(n, "Reshape", {b, shape->output()});
  }

  // A one-output helper node placed before `n`.
  Value* op1(Node* n, const std::string& op, const std::vector<Value*>& inputs) {
    return g_.insertNodeBefore(n, op, inputs, 1, n->name() + "_align_" + op)->output();
  }

  // ---- opset 20+ forms

  // Gelu joined the default domain in opset 20 with npuc's own ai.npuc Gelu's definition
  // (same `approximate` attribute), so the node moves to npuc's domain.
  void geluToNpuc(Node* n) { n->setDomain(kNpucDomain); }

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
    if (n->attrs().i("spatial", 1) == 0) refuse(n, "spatial=0 (per-element statistics) is not supported");
    n->attrs().erase("spatial");
    n->attrs().erase("is_test");
    dropUnusedOutputs(n, 1);
  }

  void dropout(Node* n) {
    n->attrs().erase("is_test");
    if (opset_ < 12) n->attrs().erase("ratio");
    dropUnusedOutputs(n, 1);
  }

  // RoiAlign-10 had no coordinate_transformation_mode and behaved as opset 16's
  // output_half_pixel; opset 16's default is half_pixel, so the old behaviour is spelled out.
  void roiAlign10(Node* n) {
    if (!n->attrs().has("coordinate_transformation_mode"))
      n->attrs().set("coordinate_transformation_mode", std::string("output_half_pixel"));
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
