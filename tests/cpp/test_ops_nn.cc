// nn op family: every kernel is compared with a naive loop written here, over random shapes and
// parameters; shape inference errors name the offending numbers.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <random>
#include <string>

#include "opset/eval.h"

namespace npuc {
namespace {

// ---------------------------------------------------------------- harness

Tensor randomTensor(const Shape& shape, std::mt19937& rng, float lo = -1.f, float hi = 1.f) {
  Tensor t(DType::Float32, shape);
  std::uniform_real_distribution<float> dist(lo, hi);
  for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = dist(rng);
  return t;
}

// One operand of a one-node graph: a graph input (activations) or a constant (weights).
struct Operand {
  Tensor tensor;
  bool constant = false;
  bool present = true;
};
Operand in(Tensor t) {
  return {std::move(t), false, true};
}
Operand weight(Tensor t) {
  return {std::move(t), true, true};
}
Operand absent() {
  return {Tensor(), false, false};
}

struct OneNode {
  Graph g;
  Node* node = nullptr;
  std::vector<Operand> operands;

  OneNode(const std::string& op, std::vector<Operand> ops, Attributes attrs = {}, size_t outputs = 1,
          const std::string& domain = "")
      : operands(std::move(ops)) {
    std::vector<Value*> values;
    for (size_t i = 0; i < operands.size(); ++i) {
      const Operand& o = operands[i];
      if (!o.present) {
        values.push_back(nullptr);
      } else if (o.constant) {
        values.push_back(g.addConstant(o.tensor, "c" + std::to_string(i)));
      } else {
        values.push_back(g.addInput("i" + std::to_string(i), o.tensor.dtype(), o.tensor.shape()));
      }
    }
    node = g.appendNode(op, values, outputs, "n");
    node->setDomain(domain);
    node->attrs() = std::move(attrs);
  }
  Shape infer() {
    inferNode(*node);
    return node->output(0)->shape();
  }
  std::vector<Tensor> run() {
    inferNode(*node);
    std::vector<const Tensor*> ptrs;
    for (const Operand& o : operands) ptrs.push_back(o.present ? &o.tensor : nullptr);
    return evalNode(*node, ptrs);
  }
};

void expectClose(const Tensor& got, const Tensor& want, const std::string& what, float tol = 1e-4f) {
  ASSERT_EQ(got.shape(), want.shape()) << what;
  int reported = 0;
  for (int64_t i = 0; i < want.numel(); ++i) {
    const float g = got.data<float>()[i], w = want.data<float>()[i];
    if (!(std::fabs(g - w) <= tol * std::max(1.f, std::fabs(w)))) {
      ADD_FAILURE() << what << ": element " << i << " is " << g << ", expected " << w;
      if (++reported == 5) return;
    }
  }
}

std::string str(const std::vector<int64_t>& v) {
  return shapeStr(v);
}

// Spatial geometry padded to three dims (unit dims in front) so one reference covers 1-D to 3-D.
struct Geo {
  int64_t in[3] = {1, 1, 1}, out[3] = {1, 1, 1}, k[3] = {1, 1, 1}, s[3] = {1, 1, 1}, d[3] = {1, 1, 1};
  int64_t pb[3] = {0, 0, 0}, pe[3] = {0, 0, 0};
  int64_t inSize() const { return in[0] * in[1] * in[2]; }
  int64_t outSize() const { return out[0] * out[1] * out[2]; }
  int64_t kSize() const { return k[0] * k[1] * k[2]; }
};

// Calls f(od, oh, ow, kd, kh, kw, input flat offset) for every in-range tap of the forward window.
template <typename F>
void forEachTap(const Geo& g, F f) {
  for (int64_t od = 0; od < g.out[0]; ++od)
    for (int64_t oh = 0; oh < g.out[1]; ++oh)
      for (int64_t ow = 0; ow < g.out[2]; ++ow)
        for (int64_t kd = 0; kd < g.k[0]; ++kd)
          for (int64_t kh = 0; kh < g.k[1]; ++kh)
            for (int64_t kw = 0; kw < g.k[2]; ++kw) {
              const int64_t id = od * g.s[0] - g.pb[0] + kd * g.d[0];
              const int64_t ih = oh * g.s[1] - g.pb[1] + kh * g.d[1];
              const int64_t iw = ow * g.s[2] - g.pb[2] + kw * g.d[2];
              if (id < 0 || id >= g.in[0] || ih < 0 || ih >= g.in[1] || iw < 0 || iw >= g.in[2]) continue;
              f((od * g.out[1] + oh) * g.out[2] + ow, (kd * g.k[1] + kh) * g.k[2] + kw,
                (id * g.in[1] + ih) * g.in[2] + iw);
            }
}

// ---------------------------------------------------------------- Conv reference

struct ConvCase {
  int64_t n, c, m, group;
  Geo geo;
  size_t rank;  // spatial dims
  bool bias, const_w;
};

Shape xShape(const ConvCase& cc) {
  Shape s{cc.n, cc.c};
  for (size_t i = 3 - cc.rank; i < 3; ++i) s.push_back(cc.geo.in[i]);
  return s;
}
Shape yShape(const ConvCase& cc) {
  Shape s{cc.n, cc.m};
  for (size_t i = 3 - cc.rank; i < 3; ++i) s.push_back(cc.geo.out[i]);
  return s;
}
std::vector<int64_t> tail(const int64_t* v, size_t rank) {
  return std::vector<int64_t>(v + 3 - rank, v + 3);
}

Tensor refConv(const ConvCase& cc, const Tensor& x, const Tensor& w, const Tensor* b) {
  Tensor y(DType::Float32, yShape(cc));
  const Geo& g = cc.geo;
  const int64_t cg = cc.c / cc.group, mg = cc.m / cc.group;
  const float* xp = x.data<float>();
  const float* wp = w.data<float>();
  float* yp = y.data<float>();
  for (int64_t n = 0; n < cc.n; ++n)
    for (int64_t m = 0; m < cc.m; ++m) {
      float* yo = yp + (n * cc.m + m) * g.outSize();
      for (int64_t o = 0; o < g.outSize(); ++o) yo[o] = b ? b->data<float>()[m] : 0.f;
      const int64_t grp = m / mg;
      for (int64_t c = 0; c < cg; ++c) {
        const float* xc = xp + (n * cc.c + grp * cg + c) * g.inSize();
        const float* wc = wp + (m * cg + c) * g.kSize();
        forEachTap(g, [&](int64_t o, int64_t k, int64_t i) { yo[o] += xc[i] * wc[k]; });
      }
    }
  return y;
}

Attributes convAttrs(const ConvCase& cc) {
  Attributes a;
  a.set("group", cc.group);
  a.set("strides", tail(cc.geo.s, cc.rank));
  a.set("dilations", tail(cc.geo.d, cc.rank));
  std::vector<int64_t> pads = tail(cc.geo.pb, cc.rank), pe = tail(cc.geo.pe, cc.rank);
  pads.insert(pads.end(), pe.begin(), pe.end());
  a.set("pads", pads);
  return a;
}

std::string describe(const ConvCase& cc) {
  const Shape w{cc.m, cc.c / cc.group};
  return "x" + str(xShape(cc)) + " m=" + std::to_string(cc.m) + " g=" + std::to_string(cc.group) + " k" +
         str(tail(cc.geo.k, cc.rank)) + " s" + str(tail(cc.geo.s, cc.rank)) + " d" +
         str(tail(cc.geo.d, cc.rank)) + " pads" + str(tail(cc.geo.pb, cc.rank)) + "/" +
         str(tail(cc.geo.pe, cc.rank)) + (cc.bias ? " bias" : "") + (cc.const_w ? " constW" : " inputW");
}

Shape wShape(const ConvCase& cc) {
  Shape s{cc.m, cc.c / cc.group};
  for (size_t i = 3 - cc.rank; i < 3; ++i) s.push_back(cc.geo.k[i]);
  return s;
}

// Fills out[] with floor((in + pads - extent) / stride) + 1; false if a dim would be empty.
bool forwardOut(Geo& g) {
  for (int i = 0; i < 3; ++i) {
    const int64_t span = g.in[i] + g.pb[i] + g.pe[i] - ((g.k[i] - 1) * g.d[i] + 1);
    if (span < 0) return false;
    g.out[i] = span / g.s[i] + 1;
  }
  return true;
}

ConvCase randomConvCase(std::mt19937& rng) {
  auto pick = [&](int64_t lo, int64_t hi) { return std::uniform_int_distribution<int64_t>(lo, hi)(rng); };
  for (;;) {
    ConvCase cc;
    cc.rank = static_cast<size_t>(pick(1, 3));
    cc.n = pick(1, 2);
    const int64_t variant = pick(0, 2);  // 0: dense, 1: grouped, 2: depthwise
    cc.group = variant == 0 ? 1 : variant == 1 ? pick(2, 3) : pick(2, 8);
    cc.c = cc.group * (variant == 2 ? 1 : pick(1, 4));
    cc.m = cc.group * (variant == 2 ? pick(1, 2) : pick(1, 4));
    for (size_t i = 3 - cc.rank; i < 3; ++i) {
      Geo& g = cc.geo;
      g.in[i] = pick(cc.rank == 3 ? 3 : 4, cc.rank == 3 ? 7 : 12);
      g.k[i] = pick(1, 3);
      g.s[i] = pick(1, 3);
      g.d[i] = pick(1, 2);
      g.pb[i] = pick(0, 2);
      g.pe[i] = pick(0, 2);
    }
    cc.bias = pick(0, 1) == 1;
    cc.const_w = pick(0, 3) != 0;
    if (forwardOut(cc.geo)) return cc;
  }
}

void checkConv(const ConvCase& cc, std::mt19937& rng) {
  const Tensor x = randomTensor(xShape(cc), rng), w = randomTensor(wShape(cc), rng),
               b = randomTensor({cc.m}, rng);
  OneNode node("Conv", {in(x), cc.const_w ? weight(w) : in(w), cc.bias ? weight(b) : absent()},
               convAttrs(cc));
  EXPECT_EQ(node.infer(), yShape(cc)) << describe(cc);
  expectClose(node.run()[0], refConv(cc, x, w, cc.bias ? &b : nullptr), describe(cc));
}

TEST(NnConv, RandomShapesMatchNaiveLoop) {
  std::mt19937 rng(1234);
  for (int i = 0; i < 60; ++i) checkConv(randomConvCase(rng), rng);
}

// The 1x1 convs that the matmul path takes (large spatial) and the direct path takes (small),
// with batch > 1 so the per-image loop of the matmul path is exercised.
TEST(NnConv, PointwiseBothPaths) {
  std::mt19937 rng(7);
  for (int64_t side : {4, 16, 20}) {
    for (bool const_w : {true, false}) {
      ConvCase cc{2, 24, 40, 1, Geo{}, 2, true, const_w};
      cc.geo.in[1] = cc.geo.in[2] = side;
      forwardOut(cc.geo);
      checkConv(cc, rng);
    }
  }
}

// 2-D depthwise convs take the NCHW stencil kernel: cover its border / interior column split.
TEST(NnConv, DepthwiseStencil) {
  std::mt19937 rng(77);
  for (int64_t k : {1, 3, 5})
    for (int64_t stride : {1, 2, 3})
      for (int64_t dil : {1, 2})
        for (int64_t pad : {0, 1, 2}) {
          ConvCase cc{2, 6, 6, 6, Geo{}, 2, true, stride != 2};
          cc.geo.in[1] = 9;
          cc.geo.in[2] = 13;
          cc.geo.k[1] = cc.geo.k[2] = k;
          cc.geo.s[1] = cc.geo.s[2] = stride;
          cc.geo.d[1] = cc.geo.d[2] = dil;
          cc.geo.pb[1] = cc.geo.pb[2] = pad;
          cc.geo.pe[2] = pad + 1;  // asymmetric along W
          if (forwardOut(cc.geo)) checkConv(cc, rng);
        }
}

TEST(NnConv, AutoPadModes) {
  std::mt19937 rng(11);
  struct Mode {
    const char* name;
    int64_t begin, end;  // expected pads for in=7, k=4, s=2: out=4, total pad = 3*2+4-7 = 3
  };
  for (const Mode& mode : {Mode{"SAME_UPPER", 1, 2}, Mode{"SAME_LOWER", 2, 1}, Mode{"VALID", 0, 0}}) {
    ConvCase cc{1, 3, 5, 1, Geo{}, 2, true, true};
    cc.geo.in[1] = cc.geo.in[2] = 7;
    cc.geo.k[1] = cc.geo.k[2] = 4;
    cc.geo.s[1] = cc.geo.s[2] = 2;
    cc.geo.pb[1] = cc.geo.pb[2] = mode.begin;
    cc.geo.pe[1] = cc.geo.pe[2] = mode.end;
    forwardOut(cc.geo);
    const Tensor x = randomTensor(xShape(cc), rng), w = randomTensor(wShape(cc), rng),
                 b = randomTensor({5}, rng);
    Attributes a;
    a.set("auto_pad", std::string(mode.name));
    a.set("strides", std::vector<int64_t>{2, 2});
    a.set("kernel_shape", std::vector<int64_t>{4, 4});
    OneNode node("Conv", {in(x), weight(w), weight(b)}, a);
    const Shape expect = std::string(mode.name) == "VALID" ? Shape{1, 5, 2, 2} : Shape{1, 5, 4, 4};
    EXPECT_EQ(node.infer(), expect) << mode.name;
    expectClose(node.run()[0], refConv(cc, x, w, &b), mode.name);
  }
}

TEST(NnConv, ShapeErrorsNameTheNumbers) {
  std::mt19937 rng(3);
  OneNode bad_c("Conv", {in(randomTensor({1, 16, 8, 8}, rng)), weight(randomTensor({32, 8, 3, 3}, rng))});
  try {
    bad_c.infer();
    FAIL() << "channel mismatch accepted";
  } catch (const ShapeError& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("16 channels"), std::string::npos) << msg;
    EXPECT_NE(msg.find("expects 8"), std::string::npos) << msg;
  }
  OneNode bad_bias("Conv", {in(randomTensor({1, 4, 8, 8}, rng)), weight(randomTensor({6, 4, 3, 3}, rng)),
                            weight(randomTensor({5}, rng))});
  EXPECT_THROW(bad_bias.infer(), ShapeError);
  Attributes group3;
  group3.set("group", int64_t{3});
  OneNode bad_group("Conv", {in(randomTensor({1, 6, 8, 8}, rng)), weight(randomTensor({4, 2, 3, 3}, rng))},
                    group3);
  EXPECT_THROW(bad_group.infer(), ShapeError);  // 4 output channels not divisible by 3
  OneNode too_big("Conv", {in(randomTensor({1, 2, 2, 2}, rng)), weight(randomTensor({1, 2, 3, 3}, rng))});
  EXPECT_THROW(too_big.infer(), ShapeError);
}

// ---------------------------------------------------------------- ConvAct

float refActivation(const std::string& act, float v, float alpha, float beta) {
  if (act == "Relu") return std::max(v, 0.f);
  if (act == "LeakyRelu") return v >= 0.f ? v : alpha * v;
  if (act == "Clip") return std::min(std::max(v, alpha), beta);
  if (act == "Sigmoid") return 1.f / (1.f + std::exp(-v));
  if (act == "Tanh") return std::tanh(v);
  if (act == "HardSwish") return v * std::min(std::max(v / 6.f + 0.5f, 0.f), 1.f);
  if (act == "SiLU") return v / (1.f + std::exp(-v));
  return v;
}

TEST(NnConvAct, EqualsConvThenAddThenActivation) {
  std::mt19937 rng(21);
  const std::vector<std::string> acts = {"",        "Relu", "LeakyRelu", "Clip",
                                         "Sigmoid", "Tanh", "HardSwish", "SiLU"};
  int idx = 0;
  for (const std::string& act : acts) {
    for (bool with_sum : {false, true}) {
      // Cycle through a 3x3 (direct path), a large 1x1 (matmul path) and a depthwise 3x3.
      const int path = idx++ % 3;
      const bool pointwise = path == 1;
      ConvCase cc{1, 8, path == 2 ? 8 : 12, path == 2 ? 8 : 1, Geo{}, 2, true, true};
      cc.geo.in[1] = cc.geo.in[2] = pointwise ? 16 : 9;
      cc.geo.k[1] = cc.geo.k[2] = pointwise ? 1 : 3;
      cc.geo.pb[1] = cc.geo.pb[2] = cc.geo.pe[1] = cc.geo.pe[2] = pointwise ? 0 : 1;
      forwardOut(cc.geo);
      const Tensor x = randomTensor(xShape(cc), rng, -3.f, 3.f), w = randomTensor(wShape(cc), rng);
      const Tensor b = randomTensor({cc.m}, rng), sum = randomTensor(yShape(cc), rng, -3.f, 3.f);
      Attributes a = convAttrs(cc);
      a.set("activation", act);
      const float alpha = act == "Clip" ? -0.5f : 0.2f, beta = 1.5f;
      a.set("act_alpha", alpha);
      a.set("act_beta", beta);
      std::vector<Operand> ops{in(x), weight(w), weight(b)};
      if (with_sum) ops.push_back(in(sum));
      OneNode node("ConvAct", ops, a, 1, kNpucDomain);
      Tensor want = refConv(cc, x, w, &b);
      for (int64_t i = 0; i < want.numel(); ++i) {
        float v = want.data<float>()[i] + (with_sum ? sum.data<float>()[i] : 0.f);
        want.data<float>()[i] = refActivation(act, v, alpha, beta);
      }
      expectClose(node.run()[0], want,
                  "ConvAct '" + act + "' sum=" + std::to_string(with_sum) + " " + describe(cc));
    }
  }
}

TEST(NnConvAct, SumWithoutBiasAndBadInputs) {
  std::mt19937 rng(5);
  const Tensor x = randomTensor({1, 4, 6, 6}, rng), w = randomTensor({4, 4, 3, 3}, rng);
  const Tensor sum = randomTensor({1, 4, 4, 4}, rng);
  Attributes relu;
  relu.set("activation", std::string("Relu"));
  OneNode node("ConvAct", {in(x), weight(w), absent(), in(sum)}, relu, 1, kNpucDomain);
  ConvCase cc{1, 4, 4, 1, Geo{}, 2, false, true};
  cc.geo.in[1] = cc.geo.in[2] = 6;
  cc.geo.k[1] = cc.geo.k[2] = 3;
  forwardOut(cc.geo);
  Tensor want = refConv(cc, x, w, nullptr);
  for (int64_t i = 0; i < want.numel(); ++i) {
    want.data<float>()[i] = std::max(0.f, want.data<float>()[i] + sum.data<float>()[i]);
  }
  expectClose(node.run()[0], want, "ConvAct without bias");

  OneNode bad_sum("ConvAct", {in(x), weight(w), absent(), in(randomTensor({1, 4, 6, 6}, rng))}, relu, 1,
                  kNpucDomain);
  EXPECT_THROW(bad_sum.infer(), ShapeError);
  Attributes gelu;
  gelu.set("activation", std::string("Gelu"));
  OneNode bad_act("ConvAct", {in(x), weight(w)}, gelu, 1, kNpucDomain);
  EXPECT_THROW(bad_act.infer(), UnsupportedOpError);
}

// ---------------------------------------------------------------- ConvTranspose

struct DeconvCase {
  int64_t n, c, m, group;  // m: output channels
  Geo geo;                 // in/out are the deconv's input/output; pe already net of output_padding
  std::vector<int64_t> output_padding;
  size_t rank;
  bool bias, const_w;
};

// Scatter form: every input cell adds x * w to the outputs its taps reach.
Tensor refConvTranspose(const DeconvCase& dc, const Tensor& x, const Tensor& w, const Tensor* b) {
  const Geo& g = dc.geo;
  Shape ys{dc.n, dc.m};
  for (size_t i = 3 - dc.rank; i < 3; ++i) ys.push_back(g.out[i]);
  Tensor y(DType::Float32, ys);
  const int64_t cg = dc.c / dc.group, mg = dc.m / dc.group;
  float* yp = y.data<float>();
  for (int64_t n = 0; n < dc.n; ++n) {
    for (int64_t m = 0; m < dc.m; ++m)
      for (int64_t o = 0; o < g.outSize(); ++o)
        yp[(n * dc.m + m) * g.outSize() + o] = b ? b->data<float>()[m] : 0.f;
    for (int64_t c = 0; c < dc.c; ++c) {
      const int64_t grp = c / cg;
      for (int64_t mo = 0; mo < mg; ++mo) {
        const float* wk = w.data<float>() + (c * mg + mo) * g.kSize();
        float* yo = yp + (n * dc.m + grp * mg + mo) * g.outSize();
        const float* xi = x.data<float>() + (n * dc.c + c) * g.inSize();
        for (int64_t id = 0; id < g.in[0]; ++id)
          for (int64_t ih = 0; ih < g.in[1]; ++ih)
            for (int64_t iw = 0; iw < g.in[2]; ++iw)
              for (int64_t kd = 0; kd < g.k[0]; ++kd)
                for (int64_t kh = 0; kh < g.k[1]; ++kh)
                  for (int64_t kw = 0; kw < g.k[2]; ++kw) {
                    const int64_t od = id * g.s[0] - g.pb[0] + kd * g.d[0];
                    const int64_t oh = ih * g.s[1] - g.pb[1] + kh * g.d[1];
                    const int64_t ow = iw * g.s[2] - g.pb[2] + kw * g.d[2];
                    if (od < 0 || od >= g.out[0] || oh < 0 || oh >= g.out[1] || ow < 0 || ow >= g.out[2])
                      continue;
                    yo[(od * g.out[1] + oh) * g.out[2] + ow] +=
                        xi[(id * g.in[1] + ih) * g.in[2] + iw] * wk[(kd * g.k[1] + kh) * g.k[2] + kw];
                  }
      }
    }
  }
  return y;
}

TEST(NnConvTranspose, RandomShapesMatchNaiveLoop) {
  std::mt19937 rng(99);
  auto pick = [&](int64_t lo, int64_t hi) { return std::uniform_int_distribution<int64_t>(lo, hi)(rng); };
  int done = 0;
  while (done < 40) {
    DeconvCase dc;
    dc.rank = static_cast<size_t>(pick(1, 3));
    dc.n = pick(1, 2);
    dc.group = pick(0, 2) == 0 ? pick(2, 3) : 1;
    dc.c = dc.group * pick(1, 3);
    dc.m = dc.group * pick(1, 3);
    dc.output_padding.clear();
    bool ok = true;
    Geo& g = dc.geo;
    for (size_t i = 3 - dc.rank; i < 3; ++i) {
      g.in[i] = pick(2, dc.rank == 3 ? 4 : 7);
      g.k[i] = pick(1, 3);
      g.s[i] = pick(1, 3);
      g.d[i] = pick(1, 2);
      g.pb[i] = pick(0, 2);
      g.pe[i] = pick(0, 2);
      const int64_t op = pick(0, std::max(g.s[i], g.d[i]) - 1);
      dc.output_padding.push_back(op);
      g.out[i] = (g.in[i] - 1) * g.s[i] + (g.k[i] - 1) * g.d[i] + 1 - g.pb[i] - g.pe[i] + op;
      if (g.out[i] < 1) ok = false;
    }
    if (!ok) continue;
    dc.bias = pick(0, 1) == 1;
    dc.const_w = pick(0, 3) != 0;
    Shape xs{dc.n, dc.c}, ws{dc.c, dc.m / dc.group}, ys{dc.n, dc.m};
    for (size_t i = 3 - dc.rank; i < 3; ++i) {
      xs.push_back(g.in[i]);
      ws.push_back(g.k[i]);
      ys.push_back(g.out[i]);
    }
    const Tensor x = randomTensor(xs, rng), w = randomTensor(ws, rng), b = randomTensor({dc.m}, rng);
    Attributes a;
    a.set("group", dc.group);
    a.set("strides", tail(g.s, dc.rank));
    a.set("dilations", tail(g.d, dc.rank));
    std::vector<int64_t> pads = tail(g.pb, dc.rank), pe = tail(g.pe, dc.rank);
    pads.insert(pads.end(), pe.begin(), pe.end());
    a.set("pads", pads);
    a.set("output_padding", dc.output_padding);
    const std::string what = "deconv x" + str(xs) + " w" + str(ws) + " g=" + std::to_string(dc.group) + " s" +
                             str(tail(g.s, dc.rank)) + " d" + str(tail(g.d, dc.rank)) + " pads" + str(pads) +
                             " op" + str(dc.output_padding);
    SCOPED_TRACE(what);
    OneNode node("ConvTranspose", {in(x), dc.const_w ? weight(w) : in(w), dc.bias ? weight(b) : absent()}, a);
    EXPECT_EQ(node.infer(), ys) << what;
    expectClose(node.run()[0], refConvTranspose(dc, x, w, dc.bias ? &b : nullptr), what);
    ++done;
  }
}

TEST(NnConvTranspose, OutputShapeAndAutoPad) {
  std::mt19937 rng(4);
  const Tensor x = randomTensor({1, 2, 3, 3}, rng), w = randomTensor({2, 3, 3, 3}, rng);
  Attributes a;
  a.set("strides", std::vector<int64_t>{2, 2});
  a.set("output_shape", std::vector<int64_t>{6, 7});
  OneNode node("ConvTranspose", {in(x), weight(w)}, a);
  EXPECT_EQ(node.infer(), (Shape{1, 3, 6, 7}));
  // Full size is 7: output_shape 6 drops one cell at the start (odd total padding goes to the
  // beginning for NOTSET), 7 keeps everything.
  DeconvCase dc{1, 2, 3, 1, Geo{}, {0, 0}, 2, false, true};
  dc.geo.in[1] = dc.geo.in[2] = 3;
  dc.geo.k[1] = dc.geo.k[2] = 3;
  dc.geo.s[1] = dc.geo.s[2] = 2;
  dc.geo.pb[1] = 1;
  dc.geo.out[1] = 6;
  dc.geo.out[2] = 7;
  expectClose(node.run()[0], refConvTranspose(dc, x, w, nullptr), "output_shape");

  Attributes same;
  same.set("strides", std::vector<int64_t>{2, 2});
  same.set("auto_pad", std::string("SAME_UPPER"));
  OneNode same_node("ConvTranspose", {in(x), weight(w)}, same);
  EXPECT_EQ(same_node.infer(), (Shape{1, 3, 6, 6}));

  OneNode bad("ConvTranspose", {in(randomTensor({1, 4, 3, 3}, rng)), weight(w)});
  EXPECT_THROW(bad.infer(), ShapeError);
}

// ---------------------------------------------------------------- Gemm / MatMul

Tensor refMatmul2d(const float* a, const float* b, int64_t m, int64_t k, int64_t n, bool ta, bool tb) {
  Tensor y(DType::Float32, {m, n});
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      double acc = 0.0;
      for (int64_t p = 0; p < k; ++p)
        acc += double(ta ? a[p * m + i] : a[i * k + p]) * (tb ? b[j * k + p] : b[p * n + j]);
      y.data<float>()[i * n + j] = static_cast<float>(acc);
    }
  return y;
}

TEST(NnGemm, TransposesAlphaBetaAndCBroadcast) {
  std::mt19937 rng(17);
  const int64_t m = 5, k = 7, n = 6;
  const std::vector<Shape> c_shapes = {{}, {1}, {n}, {1, n}, {m, 1}, {m, n}};
  int variant = 0;
  for (bool ta : {false, true})
    for (bool tb : {false, true})
      for (const Shape& cs : c_shapes) {
        const Tensor a = randomTensor(ta ? Shape{k, m} : Shape{m, k}, rng);
        const Tensor b = randomTensor(tb ? Shape{n, k} : Shape{k, n}, rng);
        const Tensor c = randomTensor(cs, rng);
        const float alpha = variant % 2 ? 0.5f : 1.f, beta = variant % 3 ? 2.f : 1.f;
        const bool const_b = variant % 4 != 0;
        ++variant;
        Attributes attrs;
        attrs.set("transA", int64_t{ta});
        attrs.set("transB", int64_t{tb});
        attrs.set("alpha", alpha);
        attrs.set("beta", beta);
        OneNode node("Gemm", {in(a), const_b ? weight(b) : in(b), in(c)}, attrs);
        EXPECT_EQ(node.infer(), (Shape{m, n}));
        Tensor want = refMatmul2d(a.data<float>(), b.data<float>(), m, k, n, ta, tb);
        for (int64_t i = 0; i < m; ++i)
          for (int64_t j = 0; j < n; ++j) {
            const int64_t ci = cs.size() == 2 ? (cs[0] == 1 ? 0 : i) * cs[1] + (cs[1] == 1 ? 0 : j)
                                              : (cs.empty() || cs[0] == 1 ? 0 : j);
            float& v = want.data<float>()[i * n + j];
            v = alpha * v + beta * c.data<float>()[ci];
          }
        expectClose(node.run()[0], want,
                    "Gemm tA=" + std::to_string(ta) + " tB=" + std::to_string(tb) + " C" + str(cs));
      }
  OneNode no_c("Gemm", {in(randomTensor({3, 4}, rng)), weight(randomTensor({4, 2}, rng))});
  EXPECT_EQ(no_c.infer(), (Shape{3, 2}));
  OneNode bad("Gemm", {in(randomTensor({3, 4}, rng)), weight(randomTensor({5, 2}, rng))});
  EXPECT_THROW(bad.infer(), ShapeError);
  OneNode bad_c("Gemm", {in(randomTensor({3, 4}, rng)), weight(randomTensor({4, 2}, rng)),
                         in(randomTensor({3, 3}, rng))});
  EXPECT_THROW(bad_c.infer(), ShapeError);
}

// numpy matmul reference: promote 1-D operands, broadcast batch dims, multiply each pair.
Tensor refMatMul(const Tensor& a, const Tensor& b) {
  Shape as = a.shape(), bs = b.shape();
  if (as.size() == 1) as.insert(as.begin(), 1);
  if (bs.size() == 1) bs.push_back(1);
  const size_t r = std::max(as.size(), bs.size());
  as.insert(as.begin(), r - as.size(), 1);
  bs.insert(bs.begin(), r - bs.size(), 1);
  const int64_t m = as[r - 2], k = as[r - 1], n = bs[r - 1];
  Shape batch(r - 2);
  for (size_t i = 0; i + 2 < r; ++i) batch[i] = std::max(as[i], bs[i]);
  Shape ys = batch;
  ys.push_back(m);
  ys.push_back(n);
  Tensor y(DType::Float32, ys);
  const int64_t nb = shapeNumel(batch);
  for (int64_t bi = 0; bi < nb; ++bi) {
    int64_t rem = bi, ao = 0, bo = 0, astride = m * k, bstride = k * n;
    for (int64_t d = static_cast<int64_t>(batch.size()) - 1; d >= 0; --d) {
      const int64_t idx = rem % batch[d];
      rem /= batch[d];
      ao += (as[d] == 1 ? 0 : idx) * astride;
      bo += (bs[d] == 1 ? 0 : idx) * bstride;
      astride *= as[d];
      bstride *= bs[d];
    }
    Tensor p = refMatmul2d(a.data<float>() + ao, b.data<float>() + bo, m, k, n, false, false);
    std::copy(p.data<float>(), p.data<float>() + m * n, y.data<float>() + bi * m * n);
  }
  Shape out = batch;
  if (a.rank() > 1) out.push_back(m);
  if (b.rank() > 1) out.push_back(n);
  return y.reshaped(out);
}

TEST(NnMatMul, BatchBroadcastingAndVectors) {
  std::mt19937 rng(23);
  const std::vector<std::pair<Shape, Shape>> cases = {
      {{3, 4}, {4, 5}},
      {{2, 3, 4}, {4, 5}},
      {{2, 3, 4}, {2, 4, 5}},
      {{2, 1, 3, 4}, {1, 3, 4, 5}},
      {{3, 4}, {2, 4, 5}},
      {{1, 3, 4}, {2, 4, 5}},
      {{4}, {4, 5}},
      {{2, 3, 4}, {4}},
      {{4}, {4}},
      {{4}, {2, 4, 5}},
      {{2, 2, 3, 4}, {1, 4, 5}},
      {{5, 1, 6}, {6, 7}},
  };
  for (const auto& [as, bs] : cases) {
    for (bool const_b : {false, true}) {
      const Tensor a = randomTensor(as, rng), b = randomTensor(bs, rng);
      OneNode node("MatMul", {in(a), const_b ? weight(b) : in(b)});
      const Tensor want = refMatMul(a, b);
      const std::string what = "MatMul " + str(as) + " x " + str(bs) + (const_b ? " constB" : "");
      EXPECT_EQ(node.infer(), want.shape()) << what;
      expectClose(node.run()[0], want, what);
    }
  }
  OneNode bad_k("MatMul", {in(randomTensor({3, 4}, rng)), in(randomTensor({5, 6}, rng))});
  EXPECT_THROW(bad_k.infer(), ShapeError);
  OneNode bad_batch("MatMul", {in(randomTensor({2, 3, 4}, rng)), in(randomTensor({3, 4, 5}, rng))});
  EXPECT_THROW(bad_batch.infer(), ShapeError);
}

// ---------------------------------------------------------------- pooling

struct PoolCase {
  Geo geo;
  size_t rank;
  int64_t n, c;
  bool ceil_mode, count_include_pad;
};

// Padded extent end of dim i: taps at or beyond it are not counted by count_include_pad.
Tensor refPool(const PoolCase& pc, const Tensor& x, bool is_max, Tensor* indices) {
  const Geo& g = pc.geo;
  Shape ys{pc.n, pc.c};
  for (size_t i = 3 - pc.rank; i < 3; ++i) ys.push_back(g.out[i]);
  Tensor y(DType::Float32, ys);
  if (indices) *indices = Tensor(DType::Int64, ys);
  for (int64_t p = 0; p < pc.n * pc.c; ++p) {
    const float* xp = x.data<float>() + p * g.inSize();
    for (int64_t od = 0; od < g.out[0]; ++od)
      for (int64_t oh = 0; oh < g.out[1]; ++oh)
        for (int64_t ow = 0; ow < g.out[2]; ++ow) {
          float best = -INFINITY, acc = 0.f;
          int64_t best_at = 0, valid = 0, padded = 0;
          for (int64_t kd = 0; kd < g.k[0]; ++kd)
            for (int64_t kh = 0; kh < g.k[1]; ++kh)
              for (int64_t kw = 0; kw < g.k[2]; ++kw) {
                const int64_t pos[3] = {od * g.s[0] - g.pb[0] + kd * g.d[0],
                                        oh * g.s[1] - g.pb[1] + kh * g.d[1],
                                        ow * g.s[2] - g.pb[2] + kw * g.d[2]};
                bool inside = true, in_padded = true;
                for (int i = 0; i < 3; ++i) {
                  inside = inside && pos[i] >= 0 && pos[i] < g.in[i];
                  in_padded = in_padded && pos[i] >= -g.pb[i] && pos[i] < g.in[i] + g.pe[i];
                }
                if (in_padded) ++padded;
                if (!inside) continue;
                const int64_t at = (pos[0] * g.in[1] + pos[1]) * g.in[2] + pos[2];
                ++valid;
                acc += xp[at];
                if (xp[at] > best) {
                  best = xp[at];
                  best_at = at;
                }
              }
          const int64_t o = p * g.outSize() + (od * g.out[1] + oh) * g.out[2] + ow;
          y.data<float>()[o] =
              is_max ? best : acc / static_cast<float>(pc.count_include_pad ? padded : valid);
          if (indices) indices->data<int64_t>()[o] = p * g.inSize() + best_at;
        }
  }
  return y;
}

TEST(NnPool, RandomMaxAndAveragePools) {
  std::mt19937 rng(31);
  auto pick = [&](int64_t lo, int64_t hi) { return std::uniform_int_distribution<int64_t>(lo, hi)(rng); };
  int done = 0;
  while (done < 60) {
    PoolCase pc;
    pc.rank = static_cast<size_t>(pick(1, 3));
    pc.n = pick(1, 2);
    pc.c = pick(1, 3);
    pc.ceil_mode = pick(0, 1) == 1;
    pc.count_include_pad = pick(0, 1) == 1;
    const bool is_max = done % 2 == 0;
    const bool dilated = is_max && pick(0, 1) == 1;
    Geo& g = pc.geo;
    bool ok = true;
    for (size_t i = 3 - pc.rank; i < 3; ++i) {
      g.in[i] = pick(3, pc.rank == 3 ? 6 : 10);
      g.k[i] = pick(1, 3);
      g.s[i] = pick(1, 3);
      g.d[i] = dilated ? pick(1, 2) : 1;
      g.pb[i] = pick(0, g.k[i] - 1);  // ONNX requires pads < kernel
      g.pe[i] = pick(0, g.k[i] - 1);
      const int64_t span = g.in[i] + g.pb[i] + g.pe[i] - ((g.k[i] - 1) * g.d[i] + 1);
      if (span < 0) ok = false;
      g.out[i] = (pc.ceil_mode ? (span + g.s[i] - 1) / g.s[i] : span / g.s[i]) + 1;
      if (pc.ceil_mode && (g.out[i] - 1) * g.s[i] >= g.in[i] + g.pb[i]) --g.out[i];
    }
    if (!ok) continue;
    Shape xs{pc.n, pc.c};
    for (size_t i = 3 - pc.rank; i < 3; ++i) xs.push_back(g.in[i]);
    const Tensor x = randomTensor(xs, rng);
    Attributes a;
    a.set("kernel_shape", tail(g.k, pc.rank));
    a.set("strides", tail(g.s, pc.rank));
    if (dilated) a.set("dilations", tail(g.d, pc.rank));
    std::vector<int64_t> pads = tail(g.pb, pc.rank), pe = tail(g.pe, pc.rank);
    pads.insert(pads.end(), pe.begin(), pe.end());
    a.set("pads", pads);
    a.set("ceil_mode", int64_t{pc.ceil_mode});
    if (!is_max) a.set("count_include_pad", int64_t{pc.count_include_pad});
    const bool with_indices = is_max && pick(0, 1) == 1;
    OneNode node(is_max ? "MaxPool" : "AveragePool", {in(x)}, a, with_indices ? 2 : 1);
    Tensor want_idx;
    const Tensor want = refPool(pc, x, is_max, with_indices ? &want_idx : nullptr);
    const std::string what =
        std::string(is_max ? "MaxPool" : "AveragePool") + " x" + str(xs) + " k" + str(tail(g.k, pc.rank)) +
        " s" + str(tail(g.s, pc.rank)) + " d" + str(tail(g.d, pc.rank)) + " pads" + str(pads) +
        " ceil=" + std::to_string(pc.ceil_mode) + " cip=" + std::to_string(pc.count_include_pad);
    EXPECT_EQ(node.infer(), want.shape()) << what;
    const std::vector<Tensor> got = node.run();
    expectClose(got[0], want, what);
    if (with_indices) {
      EXPECT_TRUE(got[1].bitwiseEqual(want_idx)) << what << " indices";
    }
    ++done;
  }
}

TEST(NnPool, AutoPadSameAndGlobalPools) {
  std::mt19937 rng(8);
  const Tensor x = randomTensor({2, 3, 7, 5}, rng);
  Attributes a;
  a.set("kernel_shape", std::vector<int64_t>{3, 3});
  a.set("strides", std::vector<int64_t>{2, 2});
  a.set("auto_pad", std::string("SAME_UPPER"));
  OneNode node("MaxPool", {in(x)}, a);
  EXPECT_EQ(node.infer(), (Shape{2, 3, 4, 3}));
  PoolCase pc{Geo{}, 2, 2, 3, false, false};
  pc.geo.in[1] = 7;
  pc.geo.in[2] = 5;
  pc.geo.k[1] = pc.geo.k[2] = 3;
  pc.geo.s[1] = pc.geo.s[2] = 2;
  pc.geo.pb[1] = pc.geo.pe[1] = 1;  // total 2 for H (out 4: 3*2+3-7)
  pc.geo.pb[2] = pc.geo.pe[2] = 1;  // total 2 for W (out 3: 2*2+3-5)
  pc.geo.out[1] = 4;
  pc.geo.out[2] = 3;
  expectClose(node.run()[0], refPool(pc, x, true, nullptr), "MaxPool SAME_UPPER");

  OneNode gap("GlobalAveragePool", {in(x)});
  OneNode gmp("GlobalMaxPool", {in(x)});
  EXPECT_EQ(gap.infer(), (Shape{2, 3, 1, 1}));
  const Tensor avg = gap.run()[0], mx = gmp.run()[0];
  for (int64_t p = 0; p < 6; ++p) {
    const float* xp = x.data<float>() + p * 35;
    double s = 0;
    float m = -INFINITY;
    for (int i = 0; i < 35; ++i) {
      s += xp[i];
      m = std::max(m, xp[i]);
    }
    EXPECT_NEAR(avg.data<float>()[p], s / 35, 1e-5);
    EXPECT_EQ(mx.data<float>()[p], m);
  }
  Attributes no_kernel;
  OneNode bad("MaxPool", {in(x)}, no_kernel);
  EXPECT_THROW(bad.infer(), ShapeError);
}

TEST(NnPool, ColumnMajorIndices) {
  std::mt19937 rng(13);
  const Tensor x = randomTensor({1, 2, 5, 4}, rng);
  Attributes a;
  a.set("kernel_shape", std::vector<int64_t>{2, 2});
  a.set("strides", std::vector<int64_t>{2, 2});
  a.set("storage_order", int64_t{1});
  OneNode node("MaxPool", {in(x)}, a, 2);
  PoolCase pc{Geo{}, 2, 1, 2, false, false};
  pc.geo.in[1] = 5;
  pc.geo.in[2] = 4;
  pc.geo.k[1] = pc.geo.k[2] = pc.geo.s[1] = pc.geo.s[2] = 2;
  pc.geo.out[1] = pc.geo.out[2] = 2;
  Tensor row_major;
  const Tensor want = refPool(pc, x, true, &row_major);
  const std::vector<Tensor> got = node.run();
  expectClose(got[0], want, "MaxPool storage_order=1 values");
  for (int64_t i = 0; i < row_major.numel(); ++i) {
    const int64_t flat = row_major.data<int64_t>()[i], plane = flat / 20, h = (flat % 20) / 4, w = flat % 4;
    EXPECT_EQ(got[1].data<int64_t>()[i], plane * 20 + w * 5 + h) << "index " << i;
  }
}

// ---------------------------------------------------------------- normalizations

TEST(NnNorm, BatchAndInstanceNormalization) {
  std::mt19937 rng(41);
  const Shape xs{2, 3, 4, 5};
  const Tensor x = randomTensor(xs, rng), scale = randomTensor({3}, rng), bias = randomTensor({3}, rng);
  const Tensor mean = randomTensor({3}, rng), var = randomTensor({3}, rng, 0.1f, 2.f);
  Attributes eps;
  eps.set("epsilon", 1e-3f);
  OneNode bn("BatchNormalization", {in(x), weight(scale), weight(bias), weight(mean), weight(var)}, eps);
  OneNode inorm("InstanceNormalization", {in(x), weight(scale), weight(bias)}, eps);
  Tensor want_bn(DType::Float32, xs), want_in(DType::Float32, xs);
  for (int64_t n = 0; n < 2; ++n)
    for (int64_t c = 0; c < 3; ++c) {
      const float* xp = x.data<float>() + (n * 3 + c) * 20;
      double s = 0, sq = 0;
      for (int i = 0; i < 20; ++i) s += xp[i];
      const double mu = s / 20;
      for (int i = 0; i < 20; ++i) sq += (xp[i] - mu) * (xp[i] - mu);
      const double sd = std::sqrt(sq / 20 + 1e-3);
      for (int i = 0; i < 20; ++i) {
        const float sc = scale.data<float>()[c], b = bias.data<float>()[c];
        want_bn.data<float>()[(n * 3 + c) * 20 + i] =
            sc * (xp[i] - mean.data<float>()[c]) / std::sqrt(var.data<float>()[c] + 1e-3f) + b;
        want_in.data<float>()[(n * 3 + c) * 20 + i] = static_cast<float>(sc * (xp[i] - mu) / sd + b);
      }
    }
  expectClose(bn.run()[0], want_bn, "BatchNormalization");
  expectClose(inorm.run()[0], want_in, "InstanceNormalization");
  OneNode bad("BatchNormalization",
              {in(x), weight(randomTensor({4}, rng)), weight(bias), weight(mean), weight(var)});
  EXPECT_THROW(bad.infer(), ShapeError);
  Attributes training;
  training.set("training_mode", int64_t{1});
  OneNode train("BatchNormalization", {in(x), weight(scale), weight(bias), weight(mean), weight(var)},
                training, 3);
  EXPECT_THROW(train.infer(), UnsupportedOpError);
}

TEST(NnNorm, LayerNormalizationAxesBiasAndStats) {
  std::mt19937 rng(43);
  const Shape xs{2, 3, 4};
  const Tensor x = randomTensor(xs, rng);
  for (int64_t axis : {-1, 1, 0}) {
    const int64_t a = axis < 0 ? axis + 3 : axis;
    const Shape ns(xs.begin() + a, xs.end());
    const int64_t cols = shapeNumel(ns), rows = x.numel() / cols;
    for (bool with_bias : {false, true}) {
      const Tensor scale = randomTensor(ns, rng), bias = randomTensor(ns, rng);
      Attributes attrs;
      attrs.set("axis", axis);
      attrs.set("epsilon", 1e-4f);
      std::vector<Operand> ops{in(x), weight(scale)};
      if (with_bias) ops.push_back(weight(bias));
      OneNode node("LayerNormalization", ops, attrs, 3);
      Tensor want(DType::Float32, xs);
      Shape stat_shape = xs;
      for (size_t i = static_cast<size_t>(a); i < 3; ++i) stat_shape[i] = 1;
      Tensor want_mean(DType::Float32, stat_shape), want_inv(DType::Float32, stat_shape);
      for (int64_t r = 0; r < rows; ++r) {
        const float* xr = x.data<float>() + r * cols;
        double s = 0, sq = 0;
        for (int64_t i = 0; i < cols; ++i) s += xr[i];
        const double mu = s / cols;
        for (int64_t i = 0; i < cols; ++i) sq += (xr[i] - mu) * (xr[i] - mu);
        const double inv = 1.0 / std::sqrt(sq / cols + 1e-4);
        want_mean.data<float>()[r] = static_cast<float>(mu);
        want_inv.data<float>()[r] = static_cast<float>(inv);
        for (int64_t i = 0; i < cols; ++i) {
          want.data<float>()[r * cols + i] = static_cast<float>((xr[i] - mu) * inv * scale.data<float>()[i] +
                                                                (with_bias ? bias.data<float>()[i] : 0.f));
        }
      }
      const std::vector<Tensor> got = node.run();
      const std::string what =
          "LayerNorm axis=" + std::to_string(axis) + " bias=" + std::to_string(with_bias);
      expectClose(got[0], want, what);
      expectClose(got[1], want_mean, what + " mean");
      expectClose(got[2], want_inv, what + " inv_std");
    }
  }
  OneNode bad("LayerNormalization", {in(x), weight(randomTensor({3}, rng))});
  EXPECT_THROW(bad.infer(), ShapeError);  // scale [3] is not X[-1:] = [4]
}

TEST(NnNorm, LpNormalization) {
  std::mt19937 rng(47);
  const Shape xs{2, 3, 4};
  const Tensor x = randomTensor(xs, rng);
  for (int64_t p : {1, 2}) {
    for (int64_t axis : {1, -1, 0}) {
      Attributes attrs;
      attrs.set("p", p);
      attrs.set("axis", axis);
      OneNode node("LpNormalization", {in(x)}, attrs);
      const int64_t a = axis < 0 ? axis + 3 : axis;
      const std::vector<int64_t> strides = shapeStrides(xs);
      Tensor want(DType::Float32, xs);
      for (int64_t i = 0; i < x.numel(); ++i) {
        const int64_t base = i - ((i / strides[a]) % xs[a]) * strides[a];  // same position, axis index 0
        double norm = 0;
        for (int64_t j = 0; j < xs[a]; ++j) {
          const float v = x.data<float>()[base + j * strides[a]];
          norm += p == 1 ? std::fabs(v) : v * v;
        }
        if (p == 2) norm = std::sqrt(norm);
        want.data<float>()[i] = static_cast<float>(x.data<float>()[i] / norm);
      }
      expectClose(node.run()[0], want,
                  "LpNormalization p=" + std::to_string(p) + " axis=" + std::to_string(axis));
    }
  }
}

}  // namespace
}  // namespace npuc
