// Loop(M, cond, v_initial...) with a body (iter_num, cond, v...) -> (cond, v..., scan_outputs...).
// A Loop with a constant trip count and a condition that stays true is unrolled at import
// (passes/inline_control_flow.cpp); what reaches this file runs on the host, iterating the body's
// own Executor. Loop-carried values keep one static type across iterations; scan outputs (one
// slice per iteration, stacked) need the trip count at compile time, so a Loop with scan outputs
// needs a constant M and a body whose condition folds to true.
#include <cstring>
#include <limits>

#include "opset/ops/control_subgraph.h"

namespace npuc {

namespace {

using namespace control;

// Largest trip count npuc sizes scan outputs for; past it the stacked output is refused.
constexpr int64_t kMaxScanTrips = int64_t{1} << 24;

struct LoopShape {
  size_t n_carried = 0;
  size_t n_scan = 0;
};

LoopShape loopShape(const Node& node) {
  const size_t explicit_inputs = numExplicitInputs(node);
  if (explicit_inputs < 2) {
    throw ShapeError(tag(node) + ": Loop takes (M, cond, v_initial...), got " + std::to_string(explicit_inputs) +
                     " inputs");
  }
  LoopShape s;
  s.n_carried = explicit_inputs - 2;
  if (node.numOutputs() < s.n_carried) {
    throw ShapeError(tag(node) + ": Loop has " + std::to_string(s.n_carried) + " loop-carried values but only " +
                     std::to_string(node.numOutputs()) + " outputs");
  }
  s.n_scan = node.numOutputs() - s.n_carried;
  return s;
}

// The body's formal bindings: iter_num, cond, then the carried values typed as v_initial.
std::vector<SubgraphBinding> bodyBindings(const Node& node, const LoopShape& s, const Tensor* cond_value) {
  std::vector<SubgraphBinding> b(2);
  b[0].dtype = DType::Int64;
  b[1].dtype = DType::Bool;
  b[1].constant = cond_value;
  for (size_t i = 0; i < s.n_carried; ++i) {
    b.push_back(bindInput(node, 2 + i));
    b.back().constant = nullptr;  // carried values change across iterations
  }
  return b;
}

void checkBody(const Node& node, const Graph& body, const LoopShape& s) {
  if (body.outputs().size() != 1 + s.n_carried + s.n_scan) {
    throw ShapeError(tag(node) + ": the body has " + std::to_string(body.outputs().size()) +
                     " outputs; the node needs 1 (cond) + " + std::to_string(s.n_carried) + " carried + " +
                     std::to_string(s.n_scan) + " scan outputs");
  }
  for (size_t i = 0; i < body.outputs().size(); ++i) requireStatic(node, "body", *body.outputs()[i]);
  const Value& c = *body.outputs()[0];
  if (shapeNumel(c.shape()) != 1) {
    throw ShapeError(tag(node) + ": the body's condition output has shape " + shapeStr(c.shape()) +
                     "; it must hold one value");
  }
  for (size_t i = 0; i < s.n_carried; ++i) {
    const Value* init = node.input(2 + i);
    requireSameType(node, "body output of loop-carried value " + std::to_string(i), *body.outputs()[1 + i],
                    init->dtype(), init->shape());
  }
}

void inferLoop(InferContext& ctx) {
  Node& node = ctx.node();
  const LoopShape s = loopShape(node);
  if (!ctx.hasInput(0) && !ctx.hasInput(1)) {
    throw ShapeError(tag(node) + ": a Loop with neither a trip count M nor a condition never ends");
  }
  const Tensor* cond = ctx.constInput(1);
  const bool cond_true = !ctx.hasInput(1) || (cond && cond->intAt(0) != 0);
  // With the incoming condition known true, a body whose condition folds to true never stops early.
  const Tensor always = Tensor::scalar(true);
  std::unique_ptr<Graph> body =
      buildSubgraph(node, "body", bodyBindings(node, s, cond_true ? &always : nullptr), implicitBindings(node));
  checkBody(node, *body, s);
  for (size_t i = 0; i < s.n_carried; ++i) ctx.setOutput(i, ctx.inputDType(2 + i), ctx.inputShape(2 + i));
  if (s.n_scan == 0) return;
  // Scan outputs stack one slice per iteration: their size needs the trip count now.
  const Tensor& m = ctx.requireConstInput(0, "the trip count M of a Loop with scan outputs");
  if (ctx.hasInput(1)) ctx.requireConstInput(1, "the condition of a Loop with scan outputs");
  const Value& c = *body->outputs()[0];
  if (!cond_true || !c.isConstant() || c.constant().intAt(0) == 0) {
    throw ShapeError(tag(node) + ": its scan outputs grow with the iterations and the loop condition is not "
                     "known to stay true, so their size is not static; npuc needs a constant trip count and a "
                     "condition that folds to true");
  }
  const int64_t trips = m.intAt(0);
  if (trips < 0 || trips > kMaxScanTrips) {
    throw ShapeError(tag(node) + ": trip count " + std::to_string(trips) + " is outside [0, " +
                     std::to_string(kMaxScanTrips) + "] for a Loop with scan outputs");
  }
  for (size_t k = 0; k < s.n_scan; ++k) {
    const Value& v = *body->outputs()[1 + s.n_carried + k];
    Shape out{trips};
    out.insert(out.end(), v.shape().begin(), v.shape().end());
    ctx.setOutput(s.n_carried + k, v.dtype(), out);
  }
}

constexpr size_t kAlign = 64;
size_t alignUp(size_t n) { return (n + kAlign - 1) / kAlign * kAlign; }

class LoopKernel : public Kernel {
 public:
  explicit LoopKernel(const KernelContext& ctx) : tag_(tag(ctx.node)), s_(loopShape(ctx.node)) {
    has_m_ = ctx.node.hasInput(0);
    has_cond_ = ctx.node.hasInput(1);
    body_ = std::make_unique<SubgraphRunner>(
        ctx.node, buildSubgraph(ctx.node, "body", bodyBindings(ctx.node, s_, nullptr), implicitBindings(ctx.node)));
    // Workspace: iter_num, cond in, cond out, then two copies of the carried values (ping-pong).
    size_t off = 3 * kAlign;
    for (size_t i = 0; i < s_.n_carried; ++i) {
      const TensorView& t = ctx.input_types[2 + i];
      carried_.push_back({t.dtype, t.shape, off, 0});
      off += alignUp(t.nbytes());
    }
    for (auto& c : carried_) {
      c.off_b = off;
      off += alignUp(shapeNumel(c.shape) * dtypeSize(c.dtype));
    }
    ws_bytes_ = off;
    for (size_t k = 0; k < s_.n_scan; ++k) {
      const TensorView& o = ctx.output_types[s_.n_carried + k];
      Shape slice(o.shape.begin() + 1, o.shape.end());
      scan_.push_back({o.dtype, slice, 0, 0});
    }
  }
  size_t workspaceBytes() const override { return ws_bytes_; }

  void run(const KernelIO& io) const override {
    auto* ws = static_cast<char*>(io.workspace);
    const int64_t m = has_m_ ? *io.inputs[0].as<const int64_t>() : std::numeric_limits<int64_t>::max();
    bool cond = has_cond_ ? readCond(io.inputs[1], tag_, "cond") : true;
    auto* iter = reinterpret_cast<int64_t*>(ws);
    auto* cond_in = reinterpret_cast<bool*>(ws + kAlign);
    auto* cond_out = reinterpret_cast<bool*>(ws + 2 * kAlign);
    bool in_a = true;  // whether the current carried values are in copy A
    for (size_t i = 0; i < s_.n_carried; ++i) {
      std::memcpy(ws + carried_[i].off_a, io.inputs[2 + i].data, io.inputs[2 + i].nbytes());
    }
    std::vector<TensorView> formal(2 + s_.n_carried), outs(1 + s_.n_carried + s_.n_scan);
    for (int64_t t = 0; t < m && cond; ++t) {
      *iter = t;
      *cond_in = cond;
      formal[0] = TensorView(iter, DType::Int64, {});
      formal[1] = TensorView(cond_in, DType::Bool, {});
      outs[0] = TensorView(cond_out, DType::Bool, {});
      for (size_t i = 0; i < s_.n_carried; ++i) {
        const Slot& c = carried_[i];
        formal[2 + i] = TensorView(ws + (in_a ? c.off_a : c.off_b), c.dtype, c.shape);
        outs[1 + i] = TensorView(ws + (in_a ? c.off_b : c.off_a), c.dtype, c.shape);
      }
      for (size_t k = 0; k < s_.n_scan; ++k) {
        const Slot& sc = scan_[k];
        const size_t bytes = static_cast<size_t>(shapeNumel(sc.shape)) * dtypeSize(sc.dtype);
        outs[1 + s_.n_carried + k] =
            TensorView(static_cast<char*>(io.outputs[s_.n_carried + k].data) + t * bytes, sc.dtype, sc.shape);
      }
      body_->run(formal, io.inputs, outs);
      cond = *cond_out;
      in_a = !in_a;
    }
    for (size_t i = 0; i < s_.n_carried; ++i) {
      const Slot& c = carried_[i];
      std::memcpy(io.outputs[i].data, ws + (in_a ? c.off_a : c.off_b), io.outputs[i].nbytes());
    }
  }

 private:
  struct Slot {
    DType dtype;
    Shape shape;
    size_t off_a, off_b;
  };
  std::string tag_;
  LoopShape s_;
  bool has_m_ = false, has_cond_ = false;
  std::unique_ptr<SubgraphRunner> body_;
  std::vector<Slot> carried_, scan_;
  size_t ws_bytes_ = 0;
};

}  // namespace

void registerLoopOp(OpRegistry& reg) {
  reg.add("Loop")
      .inputs(2, -1)
      .outputs(1, kMaxControlOutputs)
      .infer(inferLoop)
      .kernel([](const KernelContext& c) { return std::make_unique<LoopKernel>(c); })
      .quantClass(QuantClass::Float)
      .cpuOnly("its trip count or condition depends on the data (a Loop with a constant trip count is unrolled)")
      .doc("runs the body while i < M and cond; constant short loops are unrolled at import, the rest run on "
           "the CPU; scan outputs need a constant trip count");
}

}  // namespace npuc
