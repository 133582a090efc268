#include "quant/graph/qdq_export.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <map>
#include <utility>
#include <vector>

#include "common/error.h"
#include "frontend/onnx_export.h"
#include "quant/graph/op_quant_class.h"
#include "quant/graph/quantizer.h"
#include "quant/graph/standard_op_expansion.h"
#include "quant/int_limits.h"

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

QuantConstants perTensorInt16(QuantParams p) {
  return {Tensor::scalar<float>(p.scale), Tensor::scalar<int16_t>(static_cast<int16_t>(p.zero_point)), -1};
}

// An activation's parameters and whether it is int16 (the a16 schemes) rather than int8.
struct ActivationQuant {
  QuantParams params;
  bool int16 = false;
};

// q = saturate(round_half_away(x / scale) + zero_point) to int16, as quantizeValue does for int8.
int16_t quantizeInt16(float x, QuantParams p) {
  const double scaled = static_cast<double>(x) / static_cast<double>(p.scale);
  if (std::isnan(scaled)) return static_cast<int16_t>(std::clamp(p.zero_point, -32768, 32767));
  const int64_t r = roundHalfAwayClamped(scaled, -(int64_t{1} << 40), int64_t{1} << 40, 0);
  return static_cast<int16_t>(std::clamp<int64_t>(r + p.zero_point, -32768, 32767));
}

// An Int16 tensor of `values` (an Int16 tensor as it is, an Int8 one widened).
Tensor asInt16(const Tensor& values) {
  if (values.dtype() == DType::Int16) return values;
  Tensor out(DType::Int16, values.shape());
  for (int64_t i = 0; i < values.numel(); ++i) out.data<int16_t>()[i] = values.data<int8_t>()[i];
  return out;
}

class QdqBuilder {
 public:
  QdqBuilder(const Graph& graph, const QuantPlan& plan, const QdqExportOptions& options)
      : g_(graph.clone()), plan_(plan), options_(options) {}

  // What the ONNX writer needs beyond the graph: opset 21 once an int16 or int4 tensor is
  // emitted, and which int8 constants are int4 initializers.
  const OnnxExportOptions& onnxOptions() const { return onnx_; }

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
      if (!isFloat(v) || !plan_.has(v->name())) return;
      const TensorQuant& q = plan_.at(v->name());
      activations_.emplace_back(v, ActivationQuant{q.params(v->name()), q.dtype == QuantDType::Int16});
      if (q.dtype == QuantDType::Int16) needOpset21();
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
    const QuantDType dtype = plan_.has(w->name()) ? plan_.at(w->name()).dtype : QuantDType::Int8;
    if (dtype == QuantDType::Int4) return dequantizedInt4Weights(n, qw);
    if (dtype == QuantDType::Int16) return dequantizedInt16Weights(n, qw);
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

  // w16a16i: int16 values + DequantizeLinear with int16 zero points (0), per channel or tensor.
  Value* dequantizedInt16Weights(Node& n, const QuantizedWeights& qw) {
    const Value* w = n.input(1);
    const TensorQuant& planned = plan_.at(w->name());
    needOpset21();
    QuantConstants qc;
    if (planned.isPerTensor()) {
      qc.scale = Tensor::scalar<float>(qw.scales.at(0));
      qc.zero_point = Tensor::scalar<int16_t>(0);
    } else {
      qc.axis = planned.axis;
      qc.scale = Tensor::fromVector(qw.scales, {static_cast<int64_t>(qw.scales.size())});
      qc.zero_point = Tensor(DType::Int16, {static_cast<int64_t>(qw.scales.size())});
    }
    Value* q = g_->addConstant(asInt16(qw.values), w->name() + "_quantized");
    return dequantizeBefore(n, q, std::move(qc));
  }

  // w4a16: an INT4 initializer + DequantizeLinear. Grouped weights use opset 21's blocked form
  // (block_size along the reduction axis, one scale per block: the float product scales[c] * m);
  // a Conv whose groups do not fall on whole kernel windows (group % (kh * kw) != 0, e.g. 3x3)
  // has no blocked form and is written as the float constant DequantizeLinear would compute.
  Value* dequantizedInt4Weights(Node& n, const QuantizedWeights& qw) {
    const Value* w = n.input(1);
    const TensorQuant& planned = plan_.at(w->name());
    const Shape& s = w->shape();
    const Tensor& values = qw.values;
    if (values.dtype() != DType::Int8)
      throw ConfigError(fmt::format("QDQ export: int4 weight '{}' of {} has {} values", w->name(),
                                    nodeLabel(n), dtypeName(values.dtype())));
    for (int64_t i = 0; i < values.numel(); ++i)
      if (values.data<int8_t>()[i] < -8 || values.data<int8_t>()[i] > 7)
        throw ConfigError(fmt::format("QDQ export: int4 weight '{}' of {} holds {} at element {}", w->name(),
                                      nodeLabel(n), values.data<int8_t>()[i], i));
    needOpset21();
    const int64_t channels = static_cast<int64_t>(qw.scales.size());
    if (planned.group_size == 0) {  // one scale per channel (or tensor): plain int4 DequantizeLinear
      QuantConstants qc;
      if (planned.isPerTensor()) {
        qc.scale = Tensor::scalar<float>(qw.scales.at(0));
      } else {
        qc.axis = planned.axis;
        qc.scale = Tensor::fromVector(qw.scales, {channels});
      }
      return int4Dequantize(n, values, std::move(qc), 0);
    }
    // The reduction axis and its extent per block: Conv [O, I, kh, kw] blocks axis 1 in
    // group / (kh * kw) input channels; Gemm / MatMul [K, N] blocks axis 0, Gemm transB [N, K] axis 1.
    const std::string& op = n.opType();
    const bool trans_b = op == "Gemm" && n.attrs().i("transB", 0) != 0;
    int64_t axis = 0, block = planned.group_size, window = 1;
    if (op == "Conv" && s.size() >= 3) {
      axis = 1;
      for (size_t d = 2; d < s.size(); ++d) window *= s[d];
      if (planned.group_size % window != 0) return floatWeights(n, values, planned, qw.scales);
      block = planned.group_size / window;
    } else if (trans_b) {
      axis = 1;
    } else if (s.size() != 2) {
      return floatWeights(n, values, planned, qw.scales);
    }
    const int64_t reduction = s[static_cast<size_t>(axis)] * window;
    const int64_t groups = (reduction + planned.group_size - 1) / planned.group_size;
    if (static_cast<int64_t>(planned.group_multipliers.size()) != channels * groups)
      throw ConfigError(
          fmt::format("QDQ export: weight '{}' of {} has {} group multipliers, expected {} x {}", w->name(),
                      nodeLabel(n), planned.group_multipliers.size(), channels, groups));
    // scale has x's shape with dim `axis` = number of blocks; element [.., b on axis, ..] of
    // output channel c is scales[c] * m[c * G + b] (rounded to float once).
    Shape scale_shape = s;
    scale_shape[static_cast<size_t>(axis)] = (s[static_cast<size_t>(axis)] + block - 1) / block;
    Tensor scale(DType::Float32, scale_shape);
    const int64_t channel_axis = op == "Conv" || trans_b ? 0 : 1;
    int64_t inner_after_axis = 1, inner_after_channel = 1;
    for (size_t d = static_cast<size_t>(axis) + 1; d < scale_shape.size(); ++d)
      inner_after_axis *= scale_shape[d];
    for (size_t d = static_cast<size_t>(channel_axis) + 1; d < scale_shape.size(); ++d)
      inner_after_channel *= scale_shape[d];
    for (int64_t i = 0; i < scale.numel(); ++i) {
      const int64_t b = (i / inner_after_axis) % scale_shape[static_cast<size_t>(axis)];
      const int64_t c = (i / inner_after_channel) % scale_shape[static_cast<size_t>(channel_axis)];
      scale.data<float>()[i] =
          qw.scales[static_cast<size_t>(c)] * static_cast<float>(planned.group_multipliers[c * groups + b]);
    }
    return int4Dequantize(n, values, {std::move(scale), Tensor(), axis}, block);
  }

  Value* int4Dequantize(Node& n, const Tensor& values, QuantConstants qc, int64_t block) {
    const Value* w = n.input(1);
    Value* q = g_->addConstant(values, w->name() + "_quantized");
    onnx_.int4_initializers.insert(q->name());
    Value* dq = dequantizeBefore(n, q, std::move(qc));
    if (block > 0) dq->producer()->attrs().set("block_size", block);
    return dq;
  }

  // The weight DequantizeLinear would produce, as a float constant: q * float(scales[c] * m).
  Value* floatWeights(Node& n, const Tensor& values, const TensorQuant& planned,
                      const std::vector<float>& scales) {
    const Value* w = n.input(1);
    const WeightChannelLayout layout = weightLayoutOf(n);
    const int64_t channels = static_cast<int64_t>(scales.size());
    const int64_t per_channel = values.numel() / channels;  // the reduction of one output channel
    const int64_t groups = (per_channel + planned.group_size - 1) / planned.group_size;
    std::vector<int64_t> seen(static_cast<size_t>(channels), 0);  // reduction index so far, per channel
    Tensor out(DType::Float32, values.shape());
    for (int64_t i = 0; i < values.numel(); ++i) {
      const int64_t c = layout.channelOf(i);
      const int64_t k = seen[static_cast<size_t>(c)]++;
      const float scale =
          scales[static_cast<size_t>(c)] * static_cast<float>(planned.group_multipliers.at(
                                               static_cast<size_t>(c * groups + k / planned.group_size)));
      out.data<float>()[i] = static_cast<float>(values.data<int8_t>()[i]) * scale;
    }
    return g_->addConstant(std::move(out), w->name() + "_dequantized");
  }

  // int32 at s_in * s_w[c], from nodeBiasIntegers (as the simulator reads them).
  // Schemes with a wide accumulator (every one but w8a8) have int64 biases, which ONNX's
  // DequantizeLinear cannot read: those are written as the float q * s_in * s_w[c] (wideBias).
  Value* dequantizedBias(Node& n, float s_in, const std::vector<float>& s_w) {
    const Value* b = n.input(2);
    const Tensor& bias = b->constant();
    if (plan_.scheme.wideAccumulator() ||
        (plan_.has(b->name()) && plan_.at(b->name()).dtype == QuantDType::Int64))
      return wideBias(n, s_in, s_w);
    // The plan's integers (an imported file's, kept so a second round trip is exact too).
    const std::vector<int64_t> ints = nodeBiasIntegers(n, plan_, s_in, s_w);
    Tensor values(DType::Int32, bias.shape());
    std::transform(ints.begin(), ints.end(), values.data<int32_t>(),
                   [](int64_t v) { return static_cast<int32_t>(v); });
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

  // int64 at s_in * s_w[c] (nodeBiasIntegers: quantizeBiasWide), written as the float32 of q * scale.
  Value* wideBias(Node& n, float s_in, const std::vector<float>& s_w) {
    const Value* b = n.input(2);
    const Tensor& bias = b->constant();
    if (static_cast<size_t>(bias.numel()) != s_w.size())
      throw ConfigError(fmt::format("QDQ export: bias '{}' of {} has {} elements for {} channels", b->name(),
                                    nodeLabel(n), bias.numel(), s_w.size()));
    const std::vector<int64_t> ints = nodeBiasIntegers(n, plan_, s_in, s_w);
    Tensor out(DType::Float32, bias.shape());
    for (int64_t c = 0; c < bias.numel(); ++c) {
      const double scale = static_cast<double>(s_in) * s_w[static_cast<size_t>(c)];
      out.data<float>()[c] = static_cast<float>(static_cast<double>(ints[static_cast<size_t>(c)]) * scale);
    }
    return g_->addConstant(std::move(out), b->name() + "_dequantized");
  }

  // A float constant read as an activation: its own int8 (int16) copy with the plan's parameters.
  Value* dequantizedConstant(Node& n, Value* c) {
    auto it = constant_copies_.find(c);
    if (it != constant_copies_.end()) return it->second;
    const QuantParams p = plan_.at(c->name()).params(c->name());
    const Tensor& t = c->constant();
    if (plan_.at(c->name()).dtype == QuantDType::Int16) {
      needOpset21();
      Tensor values(DType::Int16, t.shape());
      for (int64_t i = 0; i < t.numel(); ++i)
        values.data<int16_t>()[i] = quantizeInt16(t.data<float>()[i], p);
      Value* q = g_->addConstant(std::move(values), c->name() + "_quantized");
      Node* first = g_->firstNode();
      Value* dq = dequantizeBefore(first ? *first : n, q, perTensorInt16(p));
      constant_copies_[c] = dq;
      return dq;
    }
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

  void insertQuantDequant(Value* v, ActivationQuant a) {
    const QuantParams p = a.params;
    auto it = rounded_.find(v);
    Value* tail = it == rounded_.end() ? v : it->second;  // after an FP16 node's half rounding
    const std::string base = tail->name();
    // int16 activations (opset 21): the zero point's type makes QuantizeLinear saturate to int16.
    Tensor zero_point = a.int16 ? Tensor::scalar<int16_t>(static_cast<int16_t>(p.zero_point))
                                : Tensor::scalar<int8_t>(static_cast<int8_t>(p.zero_point));
    Node* q = g_->createNode("QuantizeLinear",
                             {tail, g_->addConstant(Tensor::scalar<float>(p.scale), base + "_scale"),
                              g_->addConstant(std::move(zero_point), base + "_zero_point")},
                             1, base + "_quantize");
    q->output()->setName(g_->uniqueName(base + "_quantized"));
    q->output()->setType(a.int16 ? DType::Int16 : DType::Int8, tail->shape());
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

  void needOpset21() { onnx_.min_opset = std::max<int64_t>(onnx_.min_opset, 21); }

  std::unique_ptr<Graph> g_;
  const QuantPlan& plan_;
  QdqExportOptions options_;
  OnnxExportOptions onnx_;
  std::vector<NodeRole> roles_;
  std::vector<std::pair<Value*, ActivationQuant>> activations_;
  std::map<const Value*, Value*> constant_copies_;  // float constant -> its dequantized int8 copy
  std::map<const Value*, Value*> rounded_;          // FP16 node output -> after Cast-Cast
};

}  // namespace

std::unique_ptr<Graph> buildQdqGraph(const Graph& graph, const QuantPlan& plan,
                                     const QdqExportOptions& options) {
  return QdqBuilder(graph, plan, options).build();
}

std::string exportQdqOnnxBytes(const Graph& graph, const QuantPlan& plan, const QdqExportOptions& options) {
  QdqBuilder builder(graph, plan, options);
  const std::unique_ptr<Graph> qdq = builder.build();
  return exportOnnxBytes(*qdq, builder.onnxOptions());
}

void exportQdqOnnxFile(const Graph& graph, const QuantPlan& plan, const std::string& path,
                       const QdqExportOptions& options) {
  QdqBuilder builder(graph, plan, options);
  const std::unique_ptr<Graph> qdq = builder.build();
  exportOnnxFile(*qdq, path, builder.onnxOptions());
}

}  // namespace npuc::quant
