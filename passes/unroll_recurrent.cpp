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

#include "opset/ops/rnn_common.h"
#include "passes/core/ir_helpers.h"
#include "passes/core/pattern_pass.h"

namespace npuc {
namespace {

// The largest sequence unrolled. A step is 10-16 nodes per direction (LSTM with peepholes and clip
// the most), so 64 steps of a bidirectional LSTM are ~2000 nodes: a graph-size and compile-time
// budget (every node is shape-inferred, partitioned, calibrated and simulated on its own), and
// beyond it the NPU's per-op task overhead (rk3588: 3200 cycles per task) for T*16 tiny ops
// outweighs what the MAC array saves on a hidden size of 64-256. Text recognizers (CRNN: 25-40
// steps) and keyword spotters (~50 frames) fit; long audio/text sequences stay on the CPU.
constexpr int64_t kMaxUnrollSteps = 64;

// Activations the unrolled program can write as one ONNX op, with that op's attributes.
bool npuActivation(const rnn::Activation& a) {
  static const std::set<std::string> kOps = {"Sigmoid",     "Tanh", "Relu",     "LeakyRelu",
                                             "HardSigmoid", "Elu",  "Softplus", "Softsign"};
  return kOps.count(a.name) != 0;
}

Tensor floats(const Shape& shape) { return Tensor(DType::Float32, shape); }

// Direction d's [rows, cols] block of a [D, rows, cols] weight, transposed to [cols, rows]; only
// rows [row0, row0 + nrows).
Tensor transposedBlock(const Tensor& w, int64_t d, int64_t row0, int64_t nrows) {
  const int64_t rows = w.dim(1), cols = w.dim(2);
  Tensor t = floats({cols, nrows});
  const float* src = w.data<float>() + d * rows * cols;
  float* dst = t.data<float>();
  for (int64_t r = 0; r < nrows; ++r)
    for (int64_t c = 0; c < cols; ++c) dst[c * nrows + r] = src[(row0 + r) * cols + c];
  return t;
}

// Elements [off, off + n) of row d of a [D, N] tensor.
Tensor rowPart(const Tensor& t, int64_t d, int64_t off, int64_t n) {
  Tensor out = floats({n});
  const float* src = t.data<float>() + d * t.dim(1) + off;
  std::copy(src, src + n, out.data<float>());
  return out;
}

// Builds the nodes of one unrolling, all named after the recurrent node.
class Builder {
 public:
  Builder(Rewriter& rw, const Node& node, const rnn::RnnSpec& s) : rw_(rw), base_(node.name()), s_(s) {}

  Value* op(const std::string& type, const std::vector<Value*>& in, const Attributes& a = {}) {
    return rw_.create(type, in, a, base_)->output();
  }
  std::vector<Value*> split(Value* x, int64_t axis, size_t n) {
    if (n == 1) return {x};
    Attributes a;
    a.set("axis", axis);
    Node* sp = rw_.create("Split", {x}, a, base_, n);
    return sp->outputs();
  }
  Value* concat(const std::vector<Value*>& parts, int64_t axis) {
    if (parts.size() == 1) return parts[0];
    Attributes a;
    a.set("axis", axis);
    return op("Concat", parts, a);
  }
  Value* reshape(Value* x, const Shape& shape) { return op("Reshape", {x, ints(shape)}); }
  Value* transpose(Value* x, const std::vector<int64_t>& perm) {
    Attributes a;
    a.set("perm", perm);
    return op("Transpose", {x}, a);
  }
  Value* gemm(Value* a, Value* b, Value* c = nullptr) {
    std::vector<Value*> in{a, b};
    if (c) in.push_back(c);
    return op("Gemm", in);
  }
  Value* constant(Tensor t) { return rw_.constant(std::move(t), base_ + "_c"); }
  Value* one() {
    if (!one_) one_ = constant(Tensor::scalar<float>(1.f));
    return one_;
  }
  // act(clip(x)), as the cell applies them.
  Value* activate(const rnn::Activation& act, Value* x) {
    if (s_.has_clip) {
      if (!clip_lo_) {
        clip_lo_ = constant(Tensor::scalar<float>(-s_.clip));
        clip_hi_ = constant(Tensor::scalar<float>(s_.clip));
      }
      x = op("Clip", {x, clip_lo_, clip_hi_});
    }
    return activateNoClip(act, x);
  }
  Value* activateNoClip(const rnn::Activation& act, Value* x) {
    Attributes a;
    if (act.name == "LeakyRelu" || act.name == "Elu" || act.name == "HardSigmoid") a.set("alpha", act.alpha);
    if (act.name == "HardSigmoid") a.set("beta", act.beta);
    return op(act.name, {x}, a);
  }
  Value* ints(const std::vector<int64_t>& v) {
    Tensor t(DType::Int64, {static_cast<int64_t>(v.size())});
    std::copy(v.begin(), v.end(), t.data<int64_t>());
    return rw_.constant(std::move(t), base_ + "_shape");
  }

 private:
  Rewriter& rw_;
  std::string base_;
  const rnn::RnnSpec& s_;
  Value* one_ = nullptr;
  Value* clip_lo_ = nullptr;
  Value* clip_hi_ = nullptr;
};

struct Weights {
  const Tensor* w = nullptr;
  const Tensor* r = nullptr;
  const Tensor* b = nullptr;  // null: no bias
  const Tensor* p = nullptr;  // null: no peepholes
};

// One direction's time steps. Returns the hidden state after each time position (in time order)
// and the final h (and c).
struct DirectionResult {
  std::vector<Value*> h_at;  // h_at[t]: hidden state written at time position t
  Value* h_last = nullptr;
  Value* c_last = nullptr;
};

DirectionResult unrollDirection(Builder& bld, const rnn::RnnSpec& s, const Weights& wt, int64_t d, Value* x2d,
                                Value* h, Value* c) {
  const int64_t H = s.hidden, G = s.gates(), T = s.seq;
  const auto& act = s.acts[static_cast<size_t>(d)];
  const bool gru = s.cell == rnn::Cell::Gru;
  // Input projection of every step in one Gemm; the biases that simply add go in with it.
  std::optional<Tensor> xbias;
  if (wt.b) {
    xbias = floats({G * H});
    float* xb = xbias->data<float>();
    const float* b = wt.b->data<float>() + d * 2 * G * H;
    for (int64_t k = 0; k < G * H; ++k) xb[k] = b[k] + (gru && k >= 2 * H ? 0.f : b[G * H + k]);
  }
  Value* xw = bld.gemm(x2d, bld.constant(transposedBlock(*wt.w, d, 0, G * H)),
                       xbias ? bld.constant(std::move(*xbias)) : nullptr);
  // The recurrent weights, made once and read by every step: R^T ([H, G*H]); GRU splits it into
  // the z,r part and the h part, whose bias Rbh stays inside the reset gate's product.
  Value* rt = nullptr;
  Value* rt_zr = nullptr;
  Value* rt_h = nullptr;
  Value* rbh = nullptr;
  if (gru) {
    rt_zr = bld.constant(transposedBlock(*wt.r, d, 0, 2 * H));
    rt_h = bld.constant(transposedBlock(*wt.r, d, 2 * H, H));
    if (wt.b) rbh = bld.constant(rowPart(*wt.b, d, G * H + 2 * H, H));
  } else {
    rt = bld.constant(transposedBlock(*wt.r, d, 0, G * H));
  }
  const std::vector<Value*> xs = bld.split(xw, 0, static_cast<size_t>(T));

  DirectionResult res;
  res.h_at.assign(static_cast<size_t>(T), nullptr);
  Value* pi = nullptr;
  Value* po = nullptr;
  Value* pf = nullptr;
  if (wt.p) {
    pi = bld.constant(rowPart(*wt.p, d, 0, H));
    po = bld.constant(rowPart(*wt.p, d, H, H));
    pf = bld.constant(rowPart(*wt.p, d, 2 * H, H));
  }
  for (int64_t step = 0; step < T; ++step) {
    const int64_t t = s.backwards(d) ? T - 1 - step : step;
    Value* xt = xs[static_cast<size_t>(t)];
    if (gru) {
      const std::vector<Value*> xg = bld.split(xt, 1, 3);
      Value* zp = xg[0];
      Value* rp = xg[1];
      if (h) {
        const std::vector<Value*> rg = bld.split(bld.gemm(h, rt_zr), 1, 2);
        zp = bld.op("Add", {zp, rg[0]});
        rp = bld.op("Add", {rp, rg[1]});
      }
      Value* z = bld.activate(act[0], zp);
      Value* r = bld.activate(act[0], rp);
      Value* hh = nullptr;  // the recurrent part of the h gate
      if (h && !s.linear_before_reset) {
        hh = bld.gemm(bld.op("Mul", {r, h}), rt_h, rbh);
      } else if (h) {
        hh = bld.op("Mul", {r, bld.gemm(h, rt_h, rbh)});
      } else if (rbh) {  // h = 0: only the recurrent bias is left
        hh = s.linear_before_reset ? bld.op("Mul", {r, rbh}) : rbh;
      }
      Value* ht = bld.activate(act[1], hh ? bld.op("Add", {xg[2], hh}) : xg[2]);
      Value* keep = bld.op("Mul", {bld.op("Sub", {bld.one(), z}), ht});
      h = h ? bld.op("Add", {keep, bld.op("Mul", {z, h})}) : keep;
    } else {
      Value* pre = h ? bld.op("Add", {xt, bld.gemm(h, rt)}) : xt;
      if (s.cell == rnn::Cell::Rnn) {
        h = bld.activate(act[0], pre);
      } else {
        const std::vector<Value*> g = bld.split(pre, 1, 4);  // i, o, f, c
        Value* gi = g[0];
        Value* go = g[1];
        Value* gf = g[2];
        if (pi && c) {
          gi = bld.op("Add", {gi, bld.op("Mul", {c, pi})});
          gf = bld.op("Add", {gf, bld.op("Mul", {c, pf})});
        }
        Value* i = bld.activate(act[0], gi);
        Value* cand = bld.activate(act[1], g[3]);
        Value* ic = bld.op("Mul", {i, cand});
        if (c) {  // with c = 0 the forget gate has nothing to forget
          Value* f = s.input_forget ? bld.op("Sub", {bld.one(), i}) : bld.activate(act[0], gf);
          c = bld.op("Add", {bld.op("Mul", {f, c}), ic});
        } else {
          c = ic;
        }
        if (po) go = bld.op("Add", {go, bld.op("Mul", {c, po})});
        h = bld.op("Mul", {bld.activate(act[0], go), bld.activateNoClip(act[2], c)});
      }
    }
    res.h_at[static_cast<size_t>(t)] = h;
  }
  res.h_last = h;
  res.c_last = c;
  return res;
}

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
    if (!ctx.target || !ctx.target->soc) return rw.notifyMatchFailure(root, "no NPU target: it runs on the CPU kernel");
    if (const auto* e = userOpTargetEntry(root, ctx.target->op_target); e && e->second == "cpu")
      return rw.notifyMatchFailure(root, "op_target keeps it on the CPU");
    std::vector<const Shape*> shapes;
    for (size_t i = 0; i < root.numInputs(); ++i) {
      const Value* v = root.input(i);
      if (v && !v->shapeIsStatic()) return rw.notifyMatchFailure(root, "input " + std::to_string(i) + " has no static shape");
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
        return rw.notifyMatchFailure(root, "sequence_lens is not a constant: rows may stop early, which needs the CPU kernel");
      const Tensor& t = sl->constant();
      for (int64_t b = 0; b < t.numel(); ++b)
        if (t.intAt(b) != s.seq)
          return rw.notifyMatchFailure(root, "sequence_lens[" + std::to_string(b) + "] = " + std::to_string(t.intAt(b)) +
                                                 " is shorter than the sequence (" + std::to_string(s.seq) +
                                                 "): rows stopping early need the CPU kernel");
    }
    for (const auto& dir : s.acts)
      for (const auto& a : dir)
        if (!npuActivation(a)) return rw.notifyMatchFailure(root, "activation " + a.name + " has no NPU op");
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
        return rw.notifyMatchFailure(root, ctx.target->soc->name + "'s NPU does not run " + op + ", which the unrolled steps need");

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
      dirs.push_back(unrollDirection(bld, s, wt, d, x2d, initial(5, d),
                                     s.cell == rnn::Cell::Lstm ? initial(6, d) : nullptr));

    auto wanted = [&](size_t i) { return i < root.numOutputs() && (root.output(i)->hasUses() || root.output(i)->isGraphOutput()); };
    std::vector<Value*> repl(root.numOutputs(), nullptr);
    if (wanted(0)) {
      std::vector<Value*> per_dir;
      for (const DirectionResult& r : dirs) per_dir.push_back(bld.reshape(bld.concat(r.h_at, 0), {T, 1, B, H}));
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

std::unique_ptr<Pass> createUnrollRecurrentPass() { return std::make_unique<UnrollRecurrentPass>(); }

}  // namespace npuc
