// Integer conv and matmul loops of quantized_mac.h.
#include "opset/ops/quantized_mac.h"

#include <algorithm>

namespace npuc::qops {

void subtractZeroPoint(const TensorView& src, const TensorView* zero_point, ParamIndex idx, int32_t* dst) {
  const int64_t n = src.numel();
  for (int64_t i = 0; i < n; ++i) dst[i] = intAt(src, i) - (zero_point ? intAt(*zero_point, idx(i)) : 0);
}

namespace {

// The window padded to three spatial dims (leading dims of size 1), so one loop nest serves 1-D to
// 3-D convolutions.
struct Geom3 {
  int64_t in[3], out[3], k[3], stride[3], dil[3], pad[3];
};

Geom3 toGeom3(const nn::ConvSpec& s) {
  Geom3 g{};
  const size_t r = s.window.rank();
  for (size_t d = 0; d < 3; ++d) {
    const bool real = d >= 3 - r;
    const size_t j = real ? d - (3 - r) : 0;
    g.in[d] = real ? s.x[2 + j] : 1;
    g.out[d] = real ? s.window.out[j] : 1;
    g.k[d] = real ? s.window.kernel[j] : 1;
    g.stride[d] = real ? s.window.strides[j] : 1;
    g.dil[d] = real ? s.window.dilations[j] : 1;
    g.pad[d] = real ? s.window.pads_begin[j] : 0;
  }
  return g;
}

}  // namespace

// First output index o with o * stride + off >= 0, and one past the last with o * stride + off < in.
struct OutRange {
  int64_t lo = 0, hi = 0;
};
OutRange validOutputs(int64_t off, int64_t stride, int64_t in, int64_t out) {
  OutRange r;
  r.lo = off >= 0 ? 0 : (-off + stride - 1) / stride;
  r.hi = in - 1 - off < 0 ? 0 : std::min(out, (in - 1 - off) / stride + 1);
  r.hi = std::max(r.hi, r.lo);
  return r;
}

void intConv(const nn::ConvSpec& s, const int32_t* x, const int32_t* w, int32_t* acc) {
  if (s.window.rank() < 1 || s.window.rank() > 3) {
    throw ShapeError("integer convolution supports 1 to 3 spatial dims, got X " + shapeStr(s.x));
  }
  const Geom3 g = toGeom3(s);
  const int64_t batch = s.x[0], c_in = s.x[1], m_out = s.w[0];
  const int64_t cg = c_in / s.group, mg = m_out / s.group;
  const int64_t in_plane = g.in[0] * g.in[1] * g.in[2];
  const int64_t out_plane = g.out[0] * g.out[1] * g.out[2];
  const int64_t k_plane = g.k[0] * g.k[1] * g.k[2];
  // Scatter form: each weight tap adds weight * (a shifted input row) to an output row, so the
  // innermost loop runs along the output width and vectorizes. Sums are kept in uint32 so an
  // overflow wraps (defined) like an int32 accumulator; int32 and uint32 may alias.
  uint32_t* out = reinterpret_cast<uint32_t*>(acc);
  std::fill(out, out + batch * m_out * out_plane, 0u);
  for (int64_t b = 0; b < batch; ++b) {
    for (int64_t m = 0; m < m_out; ++m) {
      const int64_t grp = m / mg;
      uint32_t* dst = out + (b * m_out + m) * out_plane;
      for (int64_t c = 0; c < cg; ++c) {
        const int32_t* xc = x + (b * c_in + grp * cg + c) * in_plane;
        const int32_t* wc = w + (m * cg + c) * k_plane;
        for (int64_t k0 = 0; k0 < g.k[0]; ++k0)
          for (int64_t k1 = 0; k1 < g.k[1]; ++k1)
            for (int64_t k2 = 0; k2 < g.k[2]; ++k2) {
              const uint32_t wv = static_cast<uint32_t>(wc[(k0 * g.k[1] + k1) * g.k[2] + k2]);
              if (wv == 0) continue;
              const OutRange r0 = validOutputs(k0 * g.dil[0] - g.pad[0], g.stride[0], g.in[0], g.out[0]);
              const OutRange r1 = validOutputs(k1 * g.dil[1] - g.pad[1], g.stride[1], g.in[1], g.out[1]);
              const int64_t off2 = k2 * g.dil[2] - g.pad[2];
              const OutRange r2 = validOutputs(off2, g.stride[2], g.in[2], g.out[2]);
              const int64_t s2 = g.stride[2];
              for (int64_t o0 = r0.lo; o0 < r0.hi; ++o0) {
                const int64_t i0 = o0 * g.stride[0] + k0 * g.dil[0] - g.pad[0];
                for (int64_t o1 = r1.lo; o1 < r1.hi; ++o1) {
                  const int64_t i1 = o1 * g.stride[1] + k1 * g.dil[1] - g.pad[1];
                  const int32_t* xr = xc + (i0 * g.in[1] + i1) * g.in[2];
                  uint32_t* dr = dst + (o0 * g.out[1] + o1) * g.out[2];
                  if (s2 == 1) {
                    for (int64_t o2 = r2.lo; o2 < r2.hi; ++o2)
                      dr[o2] += wv * static_cast<uint32_t>(xr[o2 + off2]);
                  } else {
                    for (int64_t o2 = r2.lo; o2 < r2.hi; ++o2)
                      dr[o2] += wv * static_cast<uint32_t>(xr[o2 * s2 + off2]);
                  }
                }
              }
            }
      }
    }
  }
}

IntMatMulSpec resolveIntMatMul(const std::string& op, const Shape& a_in, const Shape& b_in) {
  if (a_in.empty() || b_in.empty()) {
    throw ShapeError(op + " operands must have rank >= 1, got A " + shapeStr(a_in) + " and B " +
                     shapeStr(b_in));
  }
  Shape a = a_in.size() == 1 ? Shape{1, a_in[0]} : a_in;
  Shape b = b_in.size() == 1 ? Shape{b_in[0], 1} : b_in;
  const size_t rank = std::max(a.size(), b.size());
  a.insert(a.begin(), rank - a.size(), 1);
  b.insert(b.begin(), rank - b.size(), 1);
  IntMatMulSpec s;
  s.m = a[rank - 2];
  s.k = a[rank - 1];
  s.n = b[rank - 1];
  if (b[rank - 2] != s.k) {
    throw ShapeError(op + " inner dims differ: A " + shapeStr(a_in) + " has K=" + std::to_string(s.k) +
                     ", B " + shapeStr(b_in) + " has K=" + std::to_string(b[rank - 2]));
  }
  // Walk the broadcast batch index, tracking each operand's matrix offset.
  Shape batch(rank - 2);
  for (size_t d = 0; d + 2 < rank; ++d) {
    if (a[d] != b[d] && a[d] != 1 && b[d] != 1) {
      throw ShapeError(op + " batch dims of A " + shapeStr(a_in) + " and B " + shapeStr(b_in) +
                       " do not broadcast");
    }
    batch[d] = std::max(a[d], b[d]);
  }
  const int64_t total = shapeNumel(batch);
  std::vector<int64_t> idx(batch.size(), 0);
  for (int64_t t = 0; t < total; ++t) {
    int64_t ao = 0, bo = 0;
    for (size_t d = 0; d < batch.size(); ++d) {
      ao = ao * a[d] + (a[d] == 1 ? 0 : idx[d]);
      bo = bo * b[d] + (b[d] == 1 ? 0 : idx[d]);
    }
    s.a_off.push_back(ao * s.m * s.k);
    s.b_off.push_back(bo * s.k * s.n);
    for (size_t d = batch.size(); d-- > 0;) {
      if (++idx[d] < batch[d]) break;
      idx[d] = 0;
    }
  }
  s.out = batch;
  if (a_in.size() > 1) s.out.push_back(s.m);
  if (b_in.size() > 1) s.out.push_back(s.n);
  return s;
}

void intMatMul(const IntMatMulSpec& s, const int32_t* a, const int32_t* b, int32_t* acc) {
  // Row form: y[i, :] += a[i, q] * b[q, :], so the inner loop runs along a row of B and vectorizes.
  // uint32 sums wrap like an int32 accumulator.
  uint32_t* out = reinterpret_cast<uint32_t*>(acc);
  for (size_t t = 0; t < s.a_off.size(); ++t) {
    const int32_t* at = a + s.a_off[t];
    const int32_t* bt = b + s.b_off[t];
    uint32_t* yt = out + static_cast<int64_t>(t) * s.m * s.n;
    for (int64_t i = 0; i < s.m; ++i) {
      uint32_t* yr = yt + i * s.n;
      std::fill(yr, yr + s.n, 0u);
      for (int64_t q = 0; q < s.k; ++q) {
        const uint32_t av = static_cast<uint32_t>(at[i * s.k + q]);
        const int32_t* br = bt + q * s.n;
        for (int64_t j = 0; j < s.n; ++j) yr[j] += av * static_cast<uint32_t>(br[j]);
      }
    }
  }
}

}  // namespace npuc::qops
