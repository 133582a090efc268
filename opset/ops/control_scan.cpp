// Scan (opset 9+): N state values plus M scan inputs, sliced along their scan axes, feed the body
// once per step; the body returns the next states and K per-step slices stacked into the scan
// outputs. The sequence length is a static dimension, so a Scan is always static; a short one is
// unrolled at import (passes/inline_control_flow.cpp), a long one runs here on the host.
// Scan-8 (a batch axis first, optional sequence_lens) runs on the host, full-length sequences only.
#include <cstring>

#include "opset/ops/control_subgraph.h"

namespace npuc {

namespace control {

namespace {

// Scan-8's sequence_lens may only say what the static shape says: every sequence is full length.
void requireFullSequences(const Node& node, const ScanLayout& L) {
  if (!node.hasInput(0)) return;
  const Value* v = node.input(0);
  if (!v->isConstant()) {
    throw ShapeError(tag(node) + ": sequence_lens must be a constant (variable-length sequences are not supported)");
  }
  const Tensor& t = v->constant();
  for (int64_t i = 0; i < t.numel(); ++i) {
    if (t.intAt(i) != L.length) {
      throw ShapeError(tag(node) + ": sequence_lens[" + std::to_string(i) + "] = " + std::to_string(t.intAt(i)) +
                       " is shorter than the sequence length " + std::to_string(L.length) +
                       "; npuc supports full-length sequences only");
    }
  }
}

}  // namespace

ScanLayout scanLayout(const Node& node) {
  ScanLayout L;
  L.batched = node.graph() && node.graph()->opsetVersion("") < 9;
  L.first_state = L.batched ? 1 : 0;
  const size_t explicit_inputs = numExplicitInputs(node);
  const int64_t m = node.attrs().i("num_scan_inputs");
  if (m < 1 || static_cast<size_t>(m) + L.first_state > explicit_inputs) {
    throw ShapeError(tag(node) + ": num_scan_inputs = " + std::to_string(m) + " does not fit its " +
                     std::to_string(explicit_inputs) + " inputs");
  }
  L.n_scan_in = static_cast<size_t>(m);
  L.n_state = explicit_inputs - L.first_state - L.n_scan_in;
  if (node.numOutputs() < L.n_state) {
    throw ShapeError(tag(node) + ": Scan has " + std::to_string(L.n_state) + " states but only " +
                     std::to_string(node.numOutputs()) + " outputs");
  }
  L.n_scan_out = node.numOutputs() - L.n_state;
  auto list = [&](const char* name, size_t n) {
    std::vector<int64_t> v = node.attrs().ints(name, std::vector<int64_t>(n, 0));
    if (v.size() != n) {
      throw ShapeError(tag(node) + ": attribute " + name + " has " + std::to_string(v.size()) +
                       " entries, expected " + std::to_string(n));
    }
    return v;
  };
  if (L.batched) {
    L.in_axes.assign(L.n_scan_in, 1);
    L.in_reverse = list("directions", L.n_scan_in);
    L.out_axes.assign(L.n_scan_out, 1);
    L.out_reverse.assign(L.n_scan_out, 0);
  } else {
    L.in_axes = list("scan_input_axes", L.n_scan_in);
    L.in_reverse = list("scan_input_directions", L.n_scan_in);
    L.out_axes = list("scan_output_axes", L.n_scan_out);
    L.out_reverse = list("scan_output_directions", L.n_scan_out);
  }
  for (size_t j = 0; j < L.n_scan_in; ++j) {
    const Value* v = node.input(L.scanInput(j));
    if (!v || !v->hasShape()) throw ShapeError(tag(node) + ": scan input " + std::to_string(j) + " has no shape");
    if (L.batched && v->rank() < 2) {
      throw ShapeError(tag(node) + ": Scan-8 scan input " + std::to_string(j) + " has shape " + shapeStr(v->shape()) +
                       "; it needs [batch, sequence, ...]");
    }
    L.in_axes[j] = normalizeAxis(L.in_axes[j], v->rank(), "Scan scan_input_axes");
    const int64_t len = v->shape()[L.in_axes[j]];
    if (j == 0) L.length = len;
    if (len != L.length) {
      throw ShapeError(tag(node) + ": scan inputs have different sequence lengths (" + std::to_string(L.length) +
                       " and " + std::to_string(len) + " in " + shapeStr(v->shape()) + ")");
    }
    if (L.batched) {
      if (j == 0) L.batch = v->shape()[0];
      if (v->shape()[0] != L.batch) throw ShapeError(tag(node) + ": scan inputs have different batch sizes");
    }
  }
  if (L.batched) {
    for (size_t i = 0; i < L.n_state; ++i) {
      const Value* v = node.input(L.stateInput(i));
      if (!v || !v->hasShape() || v->rank() < 1 || v->shape()[0] != L.batch) {
        throw ShapeError(tag(node) + ": Scan-8 state " + std::to_string(i) + " must have the batch size " +
                         std::to_string(L.batch) + " first");
      }
    }
    requireFullSequences(node, L);
  }
  return L;
}

std::vector<SubgraphBinding> scanBodyBindings(const Node& node, const ScanLayout& L) {
  std::vector<SubgraphBinding> b;
  for (size_t i = 0; i < L.n_state; ++i) {
    b.push_back(bindInput(node, L.stateInput(i)));
    b.back().constant = nullptr;
    if (L.batched) b.back().shape.erase(b.back().shape.begin());
  }
  for (size_t j = 0; j < L.n_scan_in; ++j) {
    b.push_back(bindInput(node, L.scanInput(j)));
    b.back().constant = nullptr;
    b.back().shape.erase(b.back().shape.begin() + L.in_axes[j]);
    if (L.batched) b.back().shape.erase(b.back().shape.begin());
  }
  return b;
}

}  // namespace control

namespace {

using namespace control;

void inferScan(InferContext& ctx) {
  Node& node = ctx.node();
  ScanLayout L = scanLayout(node);
  std::unique_ptr<Graph> body = buildSubgraph(node, "body", scanBodyBindings(node, L), implicitBindings(node));
  if (body->outputs().size() != L.n_state + L.n_scan_out) {
    throw ShapeError(tag(node) + ": the body has " + std::to_string(body->outputs().size()) +
                     " outputs; the node needs " + std::to_string(L.n_state) + " states + " +
                     std::to_string(L.n_scan_out) + " scan outputs");
  }
  for (const Value* v : body->outputs()) requireStatic(node, "body", *v);
  const std::vector<SubgraphBinding> formal = scanBodyBindings(node, L);
  for (size_t i = 0; i < L.n_state; ++i) {
    requireSameType(node, "body output of state " + std::to_string(i), *body->outputs()[i], formal[i].dtype,
                    formal[i].shape);
    ctx.setOutput(i, ctx.inputDType(L.stateInput(i)), ctx.inputShape(L.stateInput(i)));
  }
  for (size_t k = 0; k < L.n_scan_out; ++k) {
    const Value& v = *body->outputs()[L.n_state + k];
    Shape out = v.shape();
    if (L.batched) {
      out.insert(out.begin(), {L.batch, L.length});
    } else {
      const int64_t axis = normalizeAxis(L.out_axes[k], v.rank() + 1, "Scan scan_output_axes");
      out.insert(out.begin() + axis, L.length);
    }
    ctx.setOutput(L.n_state + k, v.dtype(), out);
  }
}

constexpr size_t kAlign = 64;
size_t alignUp(size_t n) { return (n + kAlign - 1) / kAlign * kAlign; }

// A tensor split around its scan axis: outer blocks, each `len` steps of `inner_bytes`.
struct Strided {
  size_t outer = 1, len = 1, inner_bytes = 0;
};
Strided splitAt(const Shape& s, int64_t axis, DType t) {
  Strided r;
  r.inner_bytes = dtypeSize(t);
  for (int64_t d = 0; d < static_cast<int64_t>(s.size()); ++d) {
    if (d < axis) r.outer *= static_cast<size_t>(s[d]);
    else if (d == axis) r.len = static_cast<size_t>(s[d]);
    else r.inner_bytes *= static_cast<size_t>(s[d]);
  }
  return r;
}

class ScanKernel : public Kernel {
 public:
  explicit ScanKernel(const KernelContext& ctx) : L_(scanLayout(ctx.node)) {
    body_ = std::make_unique<SubgraphRunner>(
        ctx.node, buildSubgraph(ctx.node, "body", scanBodyBindings(ctx.node, L_), implicitBindings(ctx.node)));
    const std::vector<SubgraphBinding> formal = scanBodyBindings(ctx.node, L_);
    size_t off = 0;
    auto slot = [&](DType t, Shape s) {
      Slot x{t, std::move(s), off, 0, {}};
      off += alignUp(static_cast<size_t>(shapeNumel(x.shape)) * dtypeSize(t));
      return x;
    };
    for (size_t i = 0; i < L_.n_state; ++i) states_.push_back(slot(formal[i].dtype, formal[i].shape));
    for (auto& st : states_) {
      st.off_b = off;
      off += alignUp(static_cast<size_t>(shapeNumel(st.shape)) * dtypeSize(st.dtype));
    }
    for (size_t j = 0; j < L_.n_scan_in; ++j) {
      const SubgraphBinding& b = formal[L_.n_state + j];
      ins_.push_back(slot(b.dtype, b.shape));
      ins_.back().split = splitAt(ctx.input_types[L_.scanInput(j)].shape, L_.in_axes[j], b.dtype);
    }
    for (size_t k = 0; k < L_.n_scan_out; ++k) {
      const TensorView& o = ctx.output_types[L_.n_state + k];
      const int64_t axis = normalizeAxis(L_.out_axes[k], o.rank(), "Scan scan_output_axes");
      Shape s = o.shape;
      s.erase(s.begin() + axis);
      if (L_.batched) s.erase(s.begin());
      outs_.push_back(slot(o.dtype, s));
      outs_.back().split = splitAt(o.shape, axis, o.dtype);
    }
    ws_bytes_ = off;
  }
  size_t workspaceBytes() const override { return ws_bytes_; }

  void run(const KernelIO& io) const override {
    // Scan-8 runs the sequence once per batch entry; Scan-9+ once (batch == 1, every outer block).
    for (int64_t b = 0; b < L_.batch; ++b) runSequence(io, static_cast<size_t>(b));
  }

 private:
  void runSequence(const KernelIO& io, size_t b) const {
    char* ws = static_cast<char*>(io.workspace);
    auto stateBytes = [&](size_t i) { return static_cast<size_t>(shapeNumel(states_[i].shape)) * dtypeSize(states_[i].dtype); };
    for (size_t i = 0; i < L_.n_state; ++i) {
      std::memcpy(ws + states_[i].off_a, static_cast<const char*>(io.inputs[L_.stateInput(i)].data) + b * stateBytes(i),
                  stateBytes(i));
    }
    bool in_a = true;
    std::vector<TensorView> formal(L_.n_state + L_.n_scan_in), outs(L_.n_state + L_.n_scan_out);
    const size_t T = static_cast<size_t>(L_.length);
    auto blocks = [&](const Strided& s) {
      return L_.batched ? std::pair<size_t, size_t>{b, b + 1} : std::pair<size_t, size_t>{0, s.outer};
    };
    for (size_t t = 0; t < T; ++t) {
      for (size_t i = 0; i < L_.n_state; ++i) {
        const Slot& s = states_[i];
        formal[i] = TensorView(ws + (in_a ? s.off_a : s.off_b), s.dtype, s.shape);
        outs[i] = TensorView(ws + (in_a ? s.off_b : s.off_a), s.dtype, s.shape);
      }
      for (size_t j = 0; j < L_.n_scan_in; ++j) {
        const Slot& s = ins_[j];
        const size_t step = L_.in_reverse[j] ? T - 1 - t : t;
        const char* src = static_cast<const char*>(io.inputs[L_.scanInput(j)].data);
        const auto [o0, o1] = blocks(s.split);
        for (size_t o = o0; o < o1; ++o) {
          std::memcpy(ws + s.off_a + (o - o0) * s.split.inner_bytes,
                      src + (o * s.split.len + step) * s.split.inner_bytes, s.split.inner_bytes);
        }
        formal[L_.n_state + j] = TensorView(ws + s.off_a, s.dtype, s.shape);
      }
      for (size_t k = 0; k < L_.n_scan_out; ++k) {
        outs[L_.n_state + k] = TensorView(ws + outs_[k].off_a, outs_[k].dtype, outs_[k].shape);
      }
      body_->run(formal, io.inputs, outs);
      for (size_t k = 0; k < L_.n_scan_out; ++k) {
        const Slot& s = outs_[k];
        const size_t step = L_.out_reverse[k] ? T - 1 - t : t;
        char* dst = static_cast<char*>(io.outputs[L_.n_state + k].data);
        const auto [o0, o1] = blocks(s.split);
        for (size_t o = o0; o < o1; ++o) {
          std::memcpy(dst + (o * s.split.len + step) * s.split.inner_bytes,
                      ws + s.off_a + (o - o0) * s.split.inner_bytes, s.split.inner_bytes);
        }
      }
      in_a = !in_a;
    }
    for (size_t i = 0; i < L_.n_state; ++i) {
      std::memcpy(static_cast<char*>(io.outputs[i].data) + b * stateBytes(i),
                  ws + (in_a ? states_[i].off_a : states_[i].off_b), stateBytes(i));
    }
  }

 private:
  struct Slot {
    DType dtype;
    Shape shape;
    size_t off_a, off_b;
    Strided split;
  };
  ScanLayout L_;
  std::unique_ptr<SubgraphRunner> body_;
  std::vector<Slot> states_, ins_, outs_;
  size_t ws_bytes_ = 0;
};

}  // namespace

void registerScanOp(OpRegistry& reg) {
  reg.add("Scan")
      .inputs(1, -1)
      .outputs(1, kMaxControlOutputs)
      .infer(inferScan)
      .kernel([](const KernelContext& c) { return std::make_unique<ScanKernel>(c); })
      .quantClass(QuantClass::Float)
      .since(9)
      .cpuOnly("it iterates a sub-graph over a sequence too long to unroll (short Scans are unrolled)")
      .doc("iterates the body over slices of the scan inputs along their axes, carrying states and stacking "
           "per-step outputs; short sequences are unrolled at import, long ones run on the CPU (opset 9+)");
}

}  // namespace npuc
