// The per-step program of one direction of a recurrent op (see unroll_recurrent_cell.h).
#include "passes/unroll_recurrent_cell.h"

#include <algorithm>
#include <set>

namespace npuc::unroll {
namespace {

Tensor floats(const Shape& shape) {
  return Tensor(DType::Float32, shape);
}

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

}  // namespace

// Activations the unrolled program can write as one ONNX op, with that op's attributes.
bool npuActivation(const rnn::Activation& a) {
  static const std::set<std::string> kOps = {"Sigmoid",     "Tanh", "Relu",     "LeakyRelu",
                                             "HardSigmoid", "Elu",  "Softplus", "Softsign"};
  return kOps.count(a.name) != 0;
}

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

}  // namespace npuc::unroll
