#include "quant/graph/qdq_import.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstring>

#include "common/error.h"
#include "frontend/shape_inference.h"
#include "opset/eval.h"
#include "passes/core/pass_manager.h"

namespace npuc::quant {

namespace {

std::string label(const Node& n) {
  return "node '" + n.name() + "' (" + n.opType() + ")";
}

[[noreturn]] void refuse(const Node& n, const std::string& pattern, const std::string& detail) {
  throw UnsupportedOpError(
      fmt::format("QDQ import: {}: {} (pattern: {}); npuc imports int8/uint8 Q -> DQ pairs on "
                  "activations and DQ on constant int8/uint8 weights and int32 biases",
                  label(n), detail, pattern));
}

bool isQ(const Node* n) {
  return n && n->opType() == "QuantizeLinear" && n->domain().empty();
}
bool isDQ(const Node* n) {
  return n && n->opType() == "DequantizeLinear" && n->domain().empty();
}

// The scale and zero point of a Q or DQ node, as stored: both must be constants.
struct Params {
  std::vector<float> scales;
  std::vector<int32_t> zero_points;  // as stored (uint8 not yet shifted)
  DType qtype = DType::UInt8;        // the integer type (zero point's, else uint8 as ONNX defaults)
  int64_t axis = -1;                 // normalized against `rank`; -1 per tensor
};

Params readParams(const Node& n, int64_t rank) {
  const Value* s = n.input(1);
  const Value* z = n.hasInput(2) ? n.input(2) : nullptr;
  if (!s || !s->isConstant())
    refuse(n, "Q/DQ with a computed scale",
           "scale '" + (s ? s->name() : std::string("?")) + "' is not a constant");
  if (z && !z->isConstant())
    refuse(n, "Q/DQ with a computed zero point", "zero point '" + z->name() + "' is not a constant");
  if (n.attrs().i("block_size", 0) != 0) refuse(n, "blocked quantization (opset 21)", "block_size is set");
  if (n.attrs().has("output_dtype") && !z) refuse(n, "Q with output_dtype (opset 21)", "output_dtype is set");
  if (s->constant().dtype() != DType::Float32)
    refuse(n, "non-float32 scale", std::string("scale dtype ") + dtypeName(s->constant().dtype()));
  Params p;
  const Tensor& st = s->constant();
  p.scales.assign(st.data<float>(), st.data<float>() + st.numel());
  if (z) {
    const Tensor& zt = z->constant();
    p.qtype = zt.dtype();
    for (int64_t i = 0; i < zt.numel(); ++i) {
      if (p.qtype == DType::Int8)
        p.zero_points.push_back(zt.data<int8_t>()[i]);
      else if (p.qtype == DType::UInt8)
        p.zero_points.push_back(zt.data<uint8_t>()[i]);
      else if (p.qtype == DType::Int32)
        p.zero_points.push_back(zt.data<int32_t>()[i]);
      else
        refuse(n, std::string(dtypeName(p.qtype)) + " QDQ",
               std::string("zero point dtype ") + dtypeName(p.qtype) +
                   " (int16 / int4 QDQ is not imported yet)");
    }
  } else {
    // No zero point: DQ takes its input's type, Q defaults to uint8.
    if (isDQ(&n) && n.input(0)) p.qtype = n.input(0)->dtype();
    p.zero_points.assign(p.scales.size(), 0);
  }
  if (p.scales.empty() || p.zero_points.size() != p.scales.size())
    refuse(n, "mismatched scale and zero point", "scale and zero point differ in size");
  for (float v : p.scales)
    if (!(v > 0.0f) || !std::isfinite(v)) refuse(n, "non-positive scale", fmt::format("scale {}", v));
  if (p.scales.size() > 1 || st.rank() == 1) {
    int64_t axis = n.attrs().i("axis", 1);
    if (axis < 0) axis += rank;
    if (p.scales.size() > 1 || rank > 0) p.axis = axis;
  }
  if (p.scales.size() == 1) p.axis = -1;
  if (p.qtype != DType::Int8 && p.qtype != DType::UInt8 && p.qtype != DType::Int32)
    refuse(n, std::string(dtypeName(p.qtype)) + " QDQ",
           std::string("quantized dtype ") + dtypeName(p.qtype) + " (int16 / int4 QDQ is not imported yet)");
  return p;
}

bool sameParams(const Params& a, const Params& b) {
  return a.scales == b.scales && a.zero_points == b.zero_points && a.qtype == b.qtype && a.axis == b.axis;
}

// The plan's form: int8 domain (uint8 shifted by -128), Int32 for int32 values.
TensorQuant toTensorQuant(const Params& p) {
  TensorQuant t;
  t.scales = p.scales;
  t.axis = p.axis;
  t.dtype = p.qtype == DType::Int32 ? QuantDType::Int32 : QuantDType::Int8;
  for (int32_t z : p.zero_points) t.zero_points.push_back(p.qtype == DType::UInt8 ? z - 128 : z);
  return t;
}

// Channel of flat element i along `axis` of `shape` (0 per tensor).
struct ChannelIndex {
  int64_t inner = 1, channels = 1;
  ChannelIndex(const Shape& shape, int64_t axis) {
    if (axis < 0) return;
    channels = shape.at(static_cast<size_t>(axis));
    for (size_t d = static_cast<size_t>(axis) + 1; d < shape.size(); ++d) inner *= shape[d];
  }
  size_t operator()(int64_t i) const { return static_cast<size_t>((i / inner) % channels); }
};

class Importer {
 public:
  explicit Importer(Graph& g) : g_(&g) {}

  QdqImport run() {
    g_->removeUnusedValues();  // dead initializers would take the names the float constants get back
    foldQLinear();
    foldParameterChains();
    stripHalfCasts();
    // Collected first: stripping a pair erases its DQ nodes.
    std::vector<Node*> qs, dqs;
    for (Node* n : g_->nodes())
      if (isQ(n)) qs.push_back(n);
    for (Node* n : qs) stripPair(*n);
    for (Node* n : g_->nodes())
      if (isDQ(n)) dqs.push_back(n);
    for (Node* n : dqs) stripConstant(*n);
    g_->removeUnusedValues();
    g_->verify();
    return std::move(out_);
  }

 private:
  // QLinearConv / QLinearMatMul become DQ -> float op -> Q, which the rules below strip.
  void foldQLinear() {
    bool any = false;
    for (const Node* n : g_->nodes()) any |= n->opType() == "QLinearConv" || n->opType() == "QLinearMatMul";
    if (!any) return;
    // The raw import is untyped and the pass infers the nodes it creates. Folding first is harmless
    // here: QLinear ops read their int8 weights directly, not through DQ.
    inferShapesAndFold(*g_);
    PassManagerOptions o;
    o.optimization_level = 3;
    o.record_match_failures = false;
    PassManager pm(o);
    pm.addStage("qdq_import", {"fold_qlinear"});
    pm.run(*g_);
    for (const Node* n : g_->nodes())
      if (n->opType() == "QLinearConv" || n->opType() == "QLinearMatMul")
        refuse(*n, n->opType() + " that fold_qlinear cannot rewrite",
               "its scales or zero points are not constants of matching shapes");
  }

  // Exporters compute some scales and zero points with small constant chains (PyTorch 1.13:
  // Identity of an initializer, ConstantOfShape -> Cast for a bias zero point) and put a Cast to
  // the same type between Q and DQ. Those are evaluated / dropped here; nothing else is folded
  // (constant folding would turn DQ(weights) into float and lose the integers).
  void foldParameterChains() {
    for (Node* n : g_->nodeList()) {
      const std::string& op = n->opType();
      if (!n->domain().empty() || (op != "Identity" && op != "Cast" && op != "ConstantOfShape")) continue;
      Value* out = n->output(0);
      if (out->isGraphOutput() || !n->input(0)) continue;
      Value* in = n->input(0);
      // Before shape inference a Q output is untyped: its type is the zero point's (uint8 without one).
      DType in_type = in->dtype();
      if (const Node* p = in->producer(); p && isQ(p))
        in_type =
            p->hasInput(2) && p->input(2)->isConstant() ? p->input(2)->constant().dtype() : DType::UInt8;
      if (op == "Cast" && !in->isConstant() && n->attrs().i("to", 0) == static_cast<int64_t>(in_type) &&
          (in_type == DType::Int8 || in_type == DType::UInt8)) {
        out->replaceAllUsesWith(in);  // the identity Cast between Q and DQ
        g_->eraseNode(n);
        continue;
      }
      if (!in || !in->isConstant()) continue;
      // A float constant's Cast(float16) -> Cast(float) pair marks its reader FP16 (npuc's export of
      // an FP16 node's weights): stripHalfCasts drops it, so the reader keeps the float32 constant
      // the exporting build computed with instead of a half-rounded copy.
      if (isCastTo(n, DType::Float16) && in->dtype() == DType::Float32 && out->hasUses() &&
          std::all_of(out->uses().begin(), out->uses().end(),
                      [](const Use& u) { return isCastTo(u.user, DType::Float32); }))
        continue;
      inferNode(*n);  // the raw import has not typed the outputs yet
      std::vector<Tensor> results = evalNode(*n, {&in->constant()});
      Value* c = g_->addConstant(std::move(results.at(0)), g_->uniqueName(out->name() + "_folded"));
      out->replaceAllUsesWith(c);
      g_->eraseNode(n);
    }
  }

  static bool isCastTo(const Node* n, DType to) {
    return n && n->opType() == "Cast" && n->domain().empty() &&
           n->attrs().i("to", 0) == static_cast<int64_t>(to);
  }

  // X (float) -> Cast(float16) -> Cast(float) -> readers: the readers read X. A pair after a node's
  // output marks that node FP16; a pair before a reader marks the reader (Q and DQ are not nodes
  // the plan computes; a pair reading a DQ output is an input-side pair).
  void stripHalfCasts() {
    std::vector<Node*> halves;
    for (Node* n : g_->nodes()) {
      // (Before shape inference intermediate values are untyped: Undefined counts as float.)
      const DType in_type = n->input(0) ? n->input(0)->dtype() : DType::Undefined;
      if (!isCastTo(n, DType::Float16) || (in_type != DType::Float32 && in_type != DType::Undefined) ||
          n->output(0)->isGraphOutput() || !n->output(0)->hasUses())
        continue;
      bool pair = true;
      for (const Use& u : n->output(0)->uses()) pair &= isCastTo(u.user, DType::Float32);
      if (pair) halves.push_back(n);
    }
    for (Node* half : halves) {
      Value* x = half->input(0);
      if (Node* p = x->producer(); p && !isQ(p) && !isDQ(p)) out_.fp16_nodes.insert(p->name());
      std::vector<Node*> backs;
      for (const Use& u : half->output(0)->uses()) backs.push_back(u.user);
      for (Node* back : backs) {
        for (const Use& u : back->output(0)->uses())
          if (!isQ(u.user) && !isDQ(u.user)) out_.fp16_nodes.insert(u.user->name());
        back->output(0)->replaceAllUsesWith(x);
        g_->eraseNode(back);
      }
      g_->eraseNode(half);
    }
  }

  // X -> Q -> DQ...: every reader of the DQs reads X, which takes the given parameters.
  void stripPair(Node& q) {
    Value* x = q.input(0);
    Value* qv = q.output(0);
    const Params p = readParams(q, x->rank());
    if (p.qtype == DType::Int32) refuse(q, "int32 QuantizeLinear", "output is int32");
    if (qv->isGraphOutput())
      refuse(q, "Q as a graph output", "the model's output '" + qv->name() + "' is integer");
    std::vector<Node*> dqs;
    for (const Use& u : qv->uses()) {
      if (!isDQ(u.user) || u.index != 0)
        refuse(q, "an op between Q and DQ: Q -> " + u.user->opType(),
               "output '" + qv->name() + "' is read by " + label(*u.user));
      if (!sameParams(readParams(*u.user, x->rank()), p))
        refuse(*u.user, "Q -> DQ with different parameters (a requantization)",
               "its scale / zero point differ from those of " + label(q));
      dqs.push_back(u.user);
    }
    if (x->isConstant()) {
      fakeQuantizedConstant(q, p, dqs);
      return;
    }
    if (p.axis >= 0) refuse(q, "per-channel activation quantization", "activation '" + x->name() + "'");
    for (Node* dq : dqs) {
      Value* y = dq->output(0);
      y->replaceAllUsesWith(x);  // includes graph-output slots
      g_->eraseNode(dq);
    }
    // (A graph output read through the pair: replaceAllUsesWith gave X the output's name.)
    g_->eraseNode(&q);
    const TensorQuant t = toTensorQuant(p);
    if (auto it = out_.given.find(x->name()); it != out_.given.end()) {
      if (it->second.scales != t.scales || it->second.zero_points != t.zero_points)
        refuse(q, "two Q -> DQ pairs with different parameters on one activation",
               "activation '" + x->name() + "'");
    }
    out_.given[x->name()] = t;
    ++out_.activations;
    if (p.qtype == DType::UInt8) ++out_.uint8_shifted;
  }

  // W (float constant) -> Q -> DQ: the constant on its grid, given like a DQ'd integer constant.
  void fakeQuantizedConstant(Node& q, const Params& p, const std::vector<Node*>& dqs) {
    const Tensor& w = q.input(0)->constant();
    if (w.dtype() != DType::Float32) refuse(q, "Q of a non-float constant", "input dtype not float32");
    const ChannelIndex ch(w.shape(), p.axis);
    const int32_t lo = p.qtype == DType::Int8 ? -128 : 0, hi = p.qtype == DType::Int8 ? 127 : 255;
    Tensor ints(DType::Int32, w.shape());
    for (int64_t i = 0; i < w.numel(); ++i) {
      const size_t c = ch(i);
      const double v =
          std::nearbyint(static_cast<double>(w.data<float>()[i]) / p.scales[c]) + p.zero_points[c];
      ints.data<int32_t>()[i] = static_cast<int32_t>(std::min<double>(hi, std::max<double>(lo, v)));
    }
    Value* c = addDequantized(ints, p, q.input(0)->name());
    for (Node* dq : dqs) {
      dq->output(0)->replaceAllUsesWith(c);
      g_->eraseNode(dq);
    }
    g_->eraseNode(&q);
  }

  // Integer constant -> DQ: the float constant it stands for.
  void stripConstant(Node& dq) {
    Value* c = dq.input(0);
    if (!c->isConstant()) {
      refuse(dq, "DQ on an activation without a Q",
             "input '" + c->name() + "' is " +
                 (c->producer() ? "computed by " + label(*c->producer()) : "a graph input") +
                 ", not the output of a QuantizeLinear");
    }
    const Params p = readParams(dq, c->rank());
    if (dq.output(0)->isGraphOutput())
      refuse(dq, "DQ of a constant as a graph output", "output is a constant");
    const Tensor& t = c->constant();
    if (t.dtype() != p.qtype)
      refuse(dq, "DQ whose input and zero point differ in type", "input " + c->name());
    Tensor ints(DType::Int32, t.shape());
    for (int64_t i = 0; i < t.numel(); ++i) {
      int32_t v = 0;
      if (t.dtype() == DType::Int8)
        v = t.data<int8_t>()[i];
      else if (t.dtype() == DType::UInt8)
        v = t.data<uint8_t>()[i];
      else
        v = t.data<int32_t>()[i];
      ints.data<int32_t>()[i] = v;
    }
    std::string base = c->name();
    constexpr const char* kSuffix = "_quantized";  // npuc's export names int values <float name>_quantized
    if (base.size() > std::strlen(kSuffix) &&
        base.compare(base.size() - std::strlen(kSuffix), std::string::npos, kSuffix) == 0)
      base.resize(base.size() - std::strlen(kSuffix));
    Value* f = addDequantized(ints, p, base);
    dq.output(0)->replaceAllUsesWith(f);
    g_->eraseNode(&dq);
    // The float constant takes the integer one's name once that has no other reader.
    if (g_->eraseIfUnusedConstant(c) && !g_->findValue(base)) rename(f, base);
  }

  void rename(Value* v, const std::string& name) {
    const std::string old = v->name();
    v->setName(name);
    out_.given[name] = std::move(out_.given.at(old));
    out_.given.erase(old);
    out_.integers[name] = std::move(out_.integers.at(old));
    out_.integers.erase(old);
  }

  // A float constant (q - z) * s and its given entry; `ints` holds q as stored.
  Value* addDequantized(const Tensor& ints, const Params& p, const std::string& base) {
    const ChannelIndex ch(ints.shape(), p.axis);
    Tensor f(DType::Float32, ints.shape());
    Tensor stored(p.qtype == DType::Int32 ? DType::Int32 : DType::Int8, ints.shape());
    for (int64_t i = 0; i < ints.numel(); ++i) {
      const size_t c = ch(i);
      const int32_t q = ints.data<int32_t>()[i];
      // As ONNX Runtime computes it: (q - z) in integers, times the scale in float.
      f.data<float>()[i] = static_cast<float>(q - p.zero_points[c]) * p.scales[c];
      if (p.qtype == DType::Int32)
        stored.data<int32_t>()[i] = q;
      else
        stored.data<int8_t>()[i] = static_cast<int8_t>(p.qtype == DType::UInt8 ? q - 128 : q);
    }
    Value* v = g_->addConstant(std::move(f), g_->uniqueName(base));
    out_.given[v->name()] = toTensorQuant(p);
    out_.integers[v->name()] = std::move(stored);
    ++out_.constants;
    if (p.qtype == DType::UInt8) ++out_.uint8_shifted;
    return v;
  }

  Graph* g_;
  QdqImport out_;
};

}  // namespace

bool isQdqModel(const Graph& graph) {
  for (const Node* n : graph.nodes()) {
    const std::string& op = n->opType();
    if (n->domain().empty() &&
        (op == "QuantizeLinear" || op == "DequantizeLinear" || op == "QLinearConv" || op == "QLinearMatMul"))
      return true;
  }
  return false;
}

QdqImport importQdq(const Graph& graph) {
  std::unique_ptr<Graph> copy = graph.clone();
  QdqImport out = Importer(*copy).run();
  out.graph = std::move(copy);
  return out;
}

QdqImport stripQdq(Graph& graph) {
  return Importer(graph).run();
}

}  // namespace npuc::quant
