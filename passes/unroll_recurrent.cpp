// unroll_recurrent (target stage): an LSTM, GRU or RNN becomes the program it computes, written in
// ops the NPU runs, one group of nodes per time step:
//
//   xw   = Gemm(Reshape(X, [T*B, I]), W^T, Wb + Rb)          all steps' input projections at once
//   x_t  = Split(xw, T pieces along axis 0)[t]                [B, G*H]
//   step = Add(x_t, Gemm(h, R^T)) -> Split into gates -> Sigmoid / Tanh / Relu -> Mul / Add
//   Y    = Reshape(Concat(h_0 .. h_T-1), [T, 1, B, H]), directions concatenated on axis 1
//
// (GRU keeps its h gate's recurrent product apart, as ONNX's linear_before_reset says; LSTM
// peepholes are Mul by a constant and Add; clip is a Clip; layout 1 adds a Transpose at each end.)
// The unrolled form reassociates the two bias additions, so it is a level-3 rewrite.
//
// It runs only with an NPU target (PassContext::target): on the CPU the host kernel is faster than
// hundreds of small nodes. Left alone, with the reason recorded, are recurrent ops whose steps are
// not all known at compile time or would make too large a graph:
//   * more than kMaxUnrollSteps steps;
//   * W, R, B or P not constant (the projections must be constant Gemm weights to get per-channel
//     INT8 weights and the NPU's MAC units);
//   * sequence_lens that is not a constant equal to the sequence length for every batch row (a
//     shorter row freezes its state mid-sequence: a data-dependent select the NPU program lacks);
//   * an activation the NPU has no op for (Affine, ScaledTanh, ThresholdedRelu);
//   * the user's op_target puts the node on the CPU, or the SoC lacks one of the ops used.
// INT8 needs nothing here: each unrolled piece is quantized by its own op's rule.
#include <set>

#include "passes/core/ir_helpers.h"
#include "passes/core/pattern_pass.h"
#include "passes/unroll_recurrent_cell.h"

namespace npuc {
namespace {

using unroll::Builder;
using unroll::DirectionResult;
using unroll::Weights;

// The largest sequence unrolled: a graph-size and compile-time budget. A step is 10-16 nodes per
// direction (LSTM with peepholes and clip the most), so 64 steps of a bidirectional LSTM are
// ~1550-2000 nodes (measured: 1551 for torch's hidden-64 BiLSTM, 615 at the CRNN's 25 steps), each
// shape-inferred, partitioned, calibrated and simulated on its own; the graph grows linearly past
// that with nothing new to gain. Text recognizers (CRNN: 25-40 steps) and keyword spotters (~50
// frames) fit; long audio/text sequences stay on the CPU.
// Latency is not what the bound protects: npuc's own cost model (rk3588) prices every unrolled op
// as an NPU task with 3200 cycles of overhead, which makes the unrolled form slower than the CPU
// kernel at any length for hidden sizes of 64 (CRNN: 4.2 ms unrolled vs 0.28 ms with the LSTMs on
// the CPU; docs/ops_rnn.md). What unrolling buys is the issue's ask (the layer in the NPU program,
// INT8, no hand-overs); disable_passes=["unroll_recurrent"] keeps the layer on the CPU.
constexpr int64_t kMaxUnrollSteps = 64;

// A constant input's tensor, or null when absent; sets `why` when present but not constant.
const Tensor* constantOrAbsent(const Node& n, size_t i, const char* what, std::string& why) {
  const Value* v = n.input(i);
  if (!v) return nullptr;
  if (!v->isConstant()) {
    if (why.empty()) why = std::string(what) + " is not a constant";
    return nullptr;
  }
  return &v->constant();
}

class UnrollRecurrent : public RewritePattern {
 public:
  UnrollRecurrent() : RewritePattern("unroll_recurrent", {"LSTM", "GRU", "RNN"}, /*changes_numerics=*/true) {}

  LogicalResult matchAndRewrite(Node& root, Rewriter& rw) const override {
    const PassContext& ctx = rw.context();
    if (!ctx.target || !ctx.target->soc)
      return rw.notifyMatchFailure(root, "no NPU target: it runs on the CPU kernel");
    if (const auto* e = userOpTargetEntry(root, ctx.target->op_target); e && e->second == "cpu")
      return rw.notifyMatchFailure(root, "op_target keeps it on the CPU");
    std::vector<const Shape*> shapes;
    for (size_t i = 0; i < root.numInputs(); ++i) {
      const Value* v = root.input(i);
      if (v && !v->shapeIsStatic())
        return rw.notifyMatchFailure(root, "input " + std::to_string(i) + " has no static shape");
      shapes.push_back(v ? &v->shape() : nullptr);
    }
    const rnn::RnnSpec s = rnn::resolveRnn(root, shapes);
    if (s.seq < 1 || s.seq > kMaxUnrollSteps)
      return rw.notifyMatchFailure(root, "sequence length " + std::to_string(s.seq) + " is outside [1, " +
                                             std::to_string(kMaxUnrollSteps) + "], the unroll bound");
    std::string why;
    Weights wt;
    wt.w = constantOrAbsent(root, 1, "W", why);
    wt.r = constantOrAbsent(root, 2, "R", why);
    wt.b = constantOrAbsent(root, 3, "B", why);
    if (s.cell == rnn::Cell::Lstm) wt.p = constantOrAbsent(root, 7, "P", why);
    if (!why.empty()) return rw.notifyMatchFailure(root, why + ": the unrolled steps need constant weights");
    if (root.input(4)) {
      const Value* sl = root.input(4);
      if (!sl->isConstant())
        return rw.notifyMatchFailure(
            root, "sequence_lens is not a constant: rows may stop early, which needs the CPU kernel");
      const Tensor& t = sl->constant();
      for (int64_t b = 0; b < t.numel(); ++b)
        if (t.intAt(b) != s.seq)
          return rw.notifyMatchFailure(root, "sequence_lens[" + std::to_string(b) +
                                                 "] = " + std::to_string(t.intAt(b)) +
                                                 " is shorter than the sequence (" + std::to_string(s.seq) +
                                                 "): rows stopping early need the CPU kernel");
    }
    for (const auto& dir : s.acts)
      for (const auto& a : dir)
        if (!unroll::npuActivation(a))
          return rw.notifyMatchFailure(root, "activation " + a.name + " has no NPU op");
    // The ops the program uses must all be NPU ops on this SoC, or unrolling only adds hand-overs.
    std::set<std::string> used = {"Gemm", "Add", "Mul", "Split", "Concat", "Reshape"};
    for (const auto& dir : s.acts)
      for (const auto& a : dir) used.insert(a.name);
    if (s.cell == rnn::Cell::Gru || s.input_forget) used.insert("Sub");
    if (s.has_clip) used.insert("Clip");
    if (s.layout == 1) used.insert("Transpose");
    if (root.input(5) || root.input(6)) used.insert("Gather");
    for (const std::string& op : used)
      if (!ctx.target->soc->opSupport(op))
        return rw.notifyMatchFailure(
            root, ctx.target->soc->name + "'s NPU does not run " + op + ", which the unrolled steps need");

    // ---- build (nothing can fail from here on)
    rw.setInsertionPointBefore(&root);
    Builder bld(rw, root, s);
    const int64_t T = s.seq, B = s.batch, H = s.hidden, D = s.dirs;
    Value* x = root.input(0);
    if (s.layout == 1) x = bld.transpose(x, {1, 0, 2});
    Value* x2d = bld.reshape(x, {T * B, s.input});
    auto initial = [&](size_t i, int64_t d) -> Value* {
      if (!root.input(i)) return nullptr;
      Attributes a;
      a.set("axis", s.layout == 0 ? int64_t{0} : int64_t{1});
      return bld.op("Gather", {root.input(i), bld.constant(Tensor::scalar<int64_t>(d))}, a);
    };
    std::vector<DirectionResult> dirs;
    for (int64_t d = 0; d < D; ++d)
      dirs.push_back(unroll::unrollDirection(bld, s, wt, d, x2d, initial(5, d),
                                             s.cell == rnn::Cell::Lstm ? initial(6, d) : nullptr));

    auto wanted = [&](size_t i) {
      return i < root.numOutputs() && (root.output(i)->hasUses() || root.output(i)->isGraphOutput());
    };
    std::vector<Value*> repl(root.numOutputs(), nullptr);
    if (wanted(0)) {
      std::vector<Value*> per_dir;
      for (const DirectionResult& r : dirs)
        per_dir.push_back(bld.reshape(bld.concat(r.h_at, 0), {T, 1, B, H}));
      Value* y = bld.concat(per_dir, 1);
      repl[0] = s.layout == 0 ? y : bld.transpose(y, {2, 0, 1, 3});
    }
    auto state = [&](Value* DirectionResult::*member) {
      std::vector<Value*> per_dir;
      for (const DirectionResult& r : dirs) per_dir.push_back(bld.reshape(r.*member, {1, B, H}));
      Value* st = bld.concat(per_dir, 0);
      return s.layout == 0 ? st : bld.transpose(st, {1, 0, 2});
    };
    if (wanted(1)) repl[1] = state(&DirectionResult::h_last);
    if (wanted(2)) repl[2] = state(&DirectionResult::c_last);
    rw.replaceOp(&root, repl);
    return success();
  }
};

class UnrollRecurrentPass : public PatternPass {
 public:
  const char* name() const override { return "unroll_recurrent"; }
  const char* description() const override {
    return "LSTM / GRU / RNN with a static sequence of <= 64 steps and constant weights -> per-step Gemm, "
           "activation and Mul/Add nodes the NPU runs (target stage only)";
  }

 protected:
  void populate(PatternSet& p) const override { p.add<UnrollRecurrent>(); }
};

}  // namespace

std::unique_ptr<Pass> createUnrollRecurrentPass() {
  return std::make_unique<UnrollRecurrentPass>();
}

}  // namespace npuc
