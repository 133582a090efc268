#include "quant/graph/qdq_export.h"

#include <fmt/format.h>

#include <algorithm>
#include <fstream>
#include <map>
#include <utility>
#include <vector>

#include "common/error.h"
#include "frontend/onnx_export.h"
#include "quant/graph/op_quant_class.h"
#include "quant/graph/quantizer.h"
#include "quant/graph/standard_op_expansion.h"

namespace npuc::quant {

namespace {

std::string nodeLabel(const Node& n) {
  return "node '" + n.name() + "' (" + n.opType() + ")";
}

bool isFloat(const Value* v) {
  return v && v->dtype() == DType::Float32;
}

bool hasConstantWeights(QuantOpKind kind) {
  return kind == QuantOpKind::Conv || kind == QuantOpKind::Gemm || kind == QuantOpKind::MatMulConst;
}

// How one node of the graph is exported, decided on the unmodified graph (classification reads
// shapes and constant inputs, which the rewrite replaces).
struct NodeRole {
  Node* node;
  QuantOpKind kind;
  bool int8;  // integer kernel in the simulator
  bool fp16;  // FP16 fallback: float inputs and outputs rounded to half
};

// A quantization scale (per tensor: a scalar; per channel: 1-D) and its zero point.
struct QuantConstants {
  Tensor scale;
  Tensor zero_point;  // undefined: omitted (int32 biases, whose zero point is 0 by definition)
  int64_t axis = -1;  // -1: per tensor (no axis attribute)
};

QuantConstants perTensorInt8(QuantParams p) {
  return {Tensor::scalar<float>(p.scale), Tensor::scalar<int8_t>(static_cast<int8_t>(p.zero_point)), -1};
}

class QdqBuilder {
 public:
  QdqBuilder(const Graph& graph, const QuantPlan& plan, const QdqExportOptions& options)
      : g_(graph.clone()), plan_(plan), options_(options) {}

  std::unique_ptr<Graph> build() {
    classifyNodes();
    collectActivations();
    for (const NodeRole& r : roles_)
      if (r.int8) quantizeConstantInputs(r);
    if (options_.emulate_fp16_rounding) {
      for (const NodeRole& r : roles_)
        if (r.fp16) roundThroughHalf(*r.node);
    }
    for (const auto& [value, params] : activations_) insertQuantDequant(value, params);
    expandToStandardOps(*g_);
    g_->verify();
    return std::move(g_);
  }

 private:
  void classifyNodes() {
    for (Node* n : g_->nodes()) {
      const QuantOpKind kind = classifyForInt8(*n);
      const bool computes = kind != QuantOpKind::NonFloat;
      const bool int8 =
          computes && !options_.float16_model && plan_.precisionOf(n->name()) == NodePrecision::Int8;
      roles_.push_back({n, kind, int8, computes && !int8});
    }
  }

  // Every float activation the plan quantizes: graph inputs and node outputs (in INT8 mode the
  // simulator holds all of them as int8; FP16 mode quantizes nothing).
  void collectActivations() {
    if (options_.float16_model) return;
    if (!g_->firstNode()) return;  // inputs passed straight through: nothing computes on them
    auto add = [&](Value* v) {
      if (isFloat(v) && plan_.has(v->name()))
        activations_.emplace_back(v, plan_.at(v->name()).params(v->name()));
    };
    for (Value* in : g_->inputs()) add(in);
    for (const NodeRole& r : roles_)
      for (Value* out : r.node->outputs()) add(out);
  }

  // ---------------------------------------------------------------- constants of int8 nodes

  void quantizeConstantInputs(const NodeRole& r) {
    Node& n = *r.node;
    if (hasConstantWeights(r.kind)) {
      const QuantizedWeights qw = quantizeNodeWeights(n, plan_);
      const Value* x = n.input(0);
      const float s_in = plan_.at(x->name()).params(x->name()).scale;
      if (n.hasInput(2)) n.setInput(2, dequantizedBias(n, s_in, qw.scales));
      n.setInput(1, dequantizedWeights(n, qw));
    }
    for (size_t i = 0; i < n.numInputs(); ++i) {
      Value* v = n.input(i);
      if (v && v->isConstant() && isFloat(v) && readsAsActivation(r.kind, i))
        n.setInput(i, dequantizedConstant(n, v));
    }
  }

  Value* dequantizedWeights(Node& n, const QuantizedWeights& qw) {
    const Value* w = n.input(1);
    QuantConstants qc;
    if (plan_.weight_granularity == WeightGranularity::PerTensor) {
      qc.scale = Tensor::scalar<float>(qw.scales.at(0));
      qc.zero_point = Tensor::scalar<int8_t>(0);
    } else {
      const TensorQuant& planned = plan_.at(w->name());
      if (planned.isPerTensor() || planned.scales.size() != qw.scales.size()) {
        throw ConfigError(fmt::format(
            "QDQ export: weight '{}' of {} has a plan entry that is not per channel with {} scales",
            w->name(), nodeLabel(n), qw.scales.size()));
      }
      qc.axis = planned.axis;
      qc.scale = Tensor::fromVector(qw.scales, {static_cast<int64_t>(qw.scales.size())});
      qc.zero_point = Tensor(DType::Int8, {static_cast<int64_t>(qw.scales.size())});
    }
    Value* q = g_->addConstant(qw.values, w->name() + "_quantized");
    return dequantizeBefore(n, q, std::move(qc));
  }

  // int32 at s_in * s_w[c], computed by the quantizer's quantizeBias (as the simulator does).
  Value* dequantizedBias(Node& n, float s_in, const std::vector<float>& s_w) {
    const Value* b = n.input(2);
    const Tensor& bias = b->constant();
    const QuantizedBias qb = quantizeBias(bias.data<float>(), bias.numel(), s_in, s_w, b->name());
    Tensor values(DType::Int32, bias.shape());
    std::copy(qb.values.begin(), qb.values.end(), values.data<int32_t>());
    std::vector<float> scales;
    for (float s : s_w) scales.push_back(static_cast<float>(static_cast<double>(s_in) * s));
    QuantConstants qc;
    if (plan_.weight_granularity == WeightGranularity::PerTensor) {
      qc.scale = Tensor::scalar<float>(scales.at(0));
    } else {
      qc.axis = bias.rank() - 1;  // 1-D for Conv, [N] or [1, N] for Gemm: channels are the last axis
      qc.scale = Tensor::fromVector(scales, {static_cast<int64_t>(scales.size())});
    }
    Value* q = g_->addConstant(std::move(values), b->name() + "_quantized");
    return dequantizeBefore(n, q, std::move(qc));
  }

  // A float constant read as an activation: its own int8 copy with the plan's parameters.
  Value* dequantizedConstant(Node& n, Value* c) {
    auto it = constant_copies_.find(c);
    if (it != constant_copies_.end()) return it->second;
    const QuantParams p = plan_.at(c->name()).params(c->name());
    const Tensor& t = c->constant();
    Tensor values(DType::Int8, t.shape());
    quantizeTensor(t.data<float>(), t.numel(), p, values.data<int8_t>());
    Value* q = g_->addConstant(std::move(values), c->name() + "_quantized");
    // Placed before the first node of the graph, so every later reader can share it.
    Node* first = g_->firstNode();
    Value* dq = dequantizeBefore(first ? *first : n, q, perTensorInt8(p));
    constant_copies_[c] = dq;
    return dq;
  }

  // DequantizeLinear(q) placed right before `pos`.
  Value* dequantizeBefore(Node& pos, Value* q, QuantConstants qc) {
    std::vector<Value*> inputs = {q, g_->addConstant(std::move(qc.scale), q->name() + "_scale")};
    if (qc.zero_point.defined())
      inputs.push_back(g_->addConstant(std::move(qc.zero_point), q->name() + "_zero_point"));
    Node* dq = g_->createNode("DequantizeLinear", inputs, 1, q->name() + "_dequantize");
    if (qc.axis >= 0) dq->attrs().set("axis", qc.axis);
    dq->moveBefore(&pos);
    dq->output()->setName(g_->uniqueName(q->name() + "_dequantized"));
    dq->output()->setType(DType::Float32, q->shape());
    return dq->output();
  }

  // ---------------------------------------------------------------- FP16 nodes

  // Each float input and output of `n` goes through Cast(float16) -> Cast(float).
  void roundThroughHalf(Node& n) {
    for (size_t i = 0; i < n.numInputs(); ++i) {
      Value* v = n.input(i);
      if (!isFloat(v)) continue;
      Node* to_half = castNode(v, DType::Float16, n.name() + "/input" + std::to_string(i) + "_to_half");
      Node* back = castNode(to_half->output(), DType::Float32, to_half->name() + "_back");
      to_half->moveBefore(&n);
      back->moveBefore(&n);
      n.setInput(i, back->output());
    }
    Node* pos = &n;
    for (Value* out : n.outputs()) {
      if (!isFloat(out)) continue;
      Node* to_half = castNode(out, DType::Float16, n.name() + "/" + out->name() + "_to_half");
      Node* back = castNode(to_half->output(), DType::Float32, to_half->name() + "_back");
      to_half->moveAfter(pos);
      back->moveAfter(to_half);
      pos = back;
      takeOver(out, back->output(), to_half);
      rounded_[out] = back->output();
    }
  }

  Node* castNode(Value* v, DType to, const std::string& name) {
    Node* c = g_->createNode("Cast", {v}, 1, name);
    c->attrs().set("to", static_cast<int64_t>(to));
    c->output()->setType(to, v->shape());
    return c;
  }

  // ---------------------------------------------------------------- activations

  void insertQuantDequant(Value* v, QuantParams p) {
    auto it = rounded_.find(v);
    Value* tail = it == rounded_.end() ? v : it->second;  // after an FP16 node's half rounding
    const std::string base = tail->name();
    Node* q = g_->createNode(
        "QuantizeLinear",
        {tail, g_->addConstant(Tensor::scalar<float>(p.scale), base + "_scale"),
         g_->addConstant(Tensor::scalar<int8_t>(static_cast<int8_t>(p.zero_point)), base + "_zero_point")},
        1, base + "_quantize");
    q->output()->setName(g_->uniqueName(base + "_quantized"));
    q->output()->setType(DType::Int8, tail->shape());
    Node* dq =
        g_->createNode("DequantizeLinear", {q->output(), q->input(1), q->input(2)}, 1, base + "_dequantize");
    dq->output()->setName(g_->uniqueName(base + "_dequantized"));
    dq->output()->setType(DType::Float32, tail->shape());
    if (Node* producer = tail->producer()) {
      q->moveAfter(producer);
    } else {
      q->moveBefore(g_->firstNode());
    }
    dq->moveAfter(q);
    takeOver(tail, dq->output(), q);
  }

  // `replacement` takes over every use of `v` except by `except`, and v's graph-output slots
  // together with its name (the graph's output names are its API; inputs keep theirs).
  void takeOver(Value* v, Value* replacement, const Node* except) {
    v->replaceUsesWith(replacement, [&](const Use& u) { return u.user != except; });
    if (!v->isGraphOutput()) return;
    const auto& outs = g_->outputs();
    for (size_t i = 0; i < outs.size(); ++i)
      if (outs[i] == v) g_->setOutput(i, replacement);
    if (v->isGraphInput()) return;
    const std::string name = v->name();
    v->setName(g_->uniqueName(name + "_float"));
    replacement->setName(name);
  }

  std::unique_ptr<Graph> g_;
  const QuantPlan& plan_;
  QdqExportOptions options_;
  std::vector<NodeRole> roles_;
  std::vector<std::pair<Value*, QuantParams>> activations_;
  std::map<const Value*, Value*> constant_copies_;  // float constant -> its dequantized int8 copy
  std::map<const Value*, Value*> rounded_;          // FP16 node output -> after Cast-Cast
};

}  // namespace

std::unique_ptr<Graph> buildQdqGraph(const Graph& graph, const QuantPlan& plan,
                                     const QdqExportOptions& options) {
  return QdqBuilder(graph, plan, options).build();
}

std::string exportQdqOnnxBytes(const Graph& graph, const QuantPlan& plan, const QdqExportOptions& options) {
  return exportOnnxBytes(*buildQdqGraph(graph, plan, options));
}

void exportQdqOnnxFile(const Graph& graph, const QuantPlan& plan, const std::string& path,
                       const QdqExportOptions& options) {
  exportOnnxFile(*buildQdqGraph(graph, plan, options), path);
}

}  // namespace npuc::quant
