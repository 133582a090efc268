// Hand-made plans of issue #17's quantized dtypes (w8a16, w16a16i, w4a16) for the consumers of a
// plan (blob, lowering, QDQ export, eval_perf, eval_memory), built without the quantizer: a w8a8
// plan calibrated as usual is rewritten to the scheme with a test-local rule that follows the
// agreed quantizeNodeWeights spec (quant/graph/quantizer.h):
//   activations  int16 per tensor over the int8 entry's clip range (asymmetric);
//   weights      int16: scale max|w_c| / 100, int4: scale max|w_c| / 7 (so that the values, |q|
//                <= 100 or <= 7, are the same whichever quantizer reads the plan);
//   groups       w4a16: multiplier 1 + (c + g) % 3 (group 0: 1) on a group whose weights are all zero
//                (zeroGroupsWithMultipliers zeroes them), 1 elsewhere: again the same values for
//                every reader, while the blob still carries multipliers > 1;
//   biases       int64 at s_in * s_w[c].
#pragma once

#include <algorithm>
#include <cmath>
#include <memory>
#include <random>

#include "compile/compile_options.h"
#include "ir/graph.h"
#include "quant/graph/quant_plan.h"
#include "quant/graph/quantizer.h"
#include "quant_test_util.h"
#include "target/soc_profile.h"

namespace npuc::testing {

// rk3588's profile with every quantized dtype in its quantized_dtypes (the real one lists w8a8 only),
// so that one SoC's rates compare every scheme; the compile driver accepts it because it checks the
// profile it is given. `soc` other than rk3588: the catalogue's profile as is.
inline const SocProfile& dtypeTestSoc(const std::string& soc = "rk3588") {
  static const SocProfile every_dtype = [] {
    for (size_t i = 0; i < kEmbeddedSocProfiles_count; ++i) {
      if (!kEmbeddedSocProfiles[i].text) continue;
      std::string text = kEmbeddedSocProfiles[i].text;
      const std::string line = "quantized_dtypes: [w8a8]\n";
      const size_t at = text.find(line);
      if (!kEmbeddedSocProfiles[i].name || std::string(kEmbeddedSocProfiles[i].name) != "rk3588.yaml" ||
          at == std::string::npos)
        continue;
      text.replace(at, line.size(), "quantized_dtypes: [w8a8, w8a16, w16a16i, w16a16i_dfp, w4a16]\n");
      return parseSocProfile(text, "rk3588-every-dtype.yaml");
    }
    throw Error("the embedded rk3588 profile no longer lists quantized_dtypes: [w8a8]");
  }();
  return soc == "rk3588" ? every_dtype : socProfile(soc);
}

// Compile options that record `scheme` (the compile driver refuses options that disagree with the
// plan's scheme).
inline CompileOptions quantizedOptions(const quant::QuantScheme& scheme) {
  CompileOptions o;
  o.quantized = true;
  o.quantized_dtype = scheme.dtype;
  switch (scheme.weight_group) {
    case 32: o.quantized_method = QuantMethod::Group32; break;
    case 64: o.quantized_method = QuantMethod::Group64; break;
    case 128: o.quantized_method = QuantMethod::Group128; break;
    case 256: o.quantized_method = QuantMethod::Group256; break;
    default: break;
  }
  return o;
}

// x [1, 64, 4, 4] -> Conv c1 1x1 (+bias, 32 out) -> Relu -> Conv c2 3x3 (64 out) ->
// GlobalAveragePool -> Flatten -> Gemm fc [64, 10] (+bias). Reductions: 64, 288, 64.
inline std::shared_ptr<Graph> dtypeTestGraph(uint32_t seed = 5) {
  auto g = std::make_shared<Graph>();
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.f, 0.1f);
  auto random = [&](Shape s) {
    Tensor t(DType::Float32, std::move(s));
    for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = normal(rng);
    return t;
  };
  Value* x = g->addInput("x", DType::Float32, {1, 64, 4, 4});
  Node* c1 = g->appendNode(
      "Conv", {x, g->addConstant(random({32, 64, 1, 1}), "c1_w"), g->addConstant(random({32}), "c1_b")}, 1,
      "c1");
  c1->attrs().set("kernel_shape", std::vector<int64_t>{1, 1});
  c1->output()->setType(DType::Float32, {1, 32, 4, 4});
  Node* r = g->appendNode("Relu", {c1->output()}, 1, "r");
  r->output()->setType(DType::Float32, {1, 32, 4, 4});
  Node* c2 = g->appendNode("Conv", {r->output(), g->addConstant(random({64, 32, 3, 3}), "c2_w")}, 1, "c2");
  c2->attrs().set("kernel_shape", std::vector<int64_t>{3, 3});
  c2->attrs().set("pads", std::vector<int64_t>{1, 1, 1, 1});
  c2->output()->setType(DType::Float32, {1, 64, 4, 4});
  Node* gap = g->appendNode("GlobalAveragePool", {c2->output()}, 1, "gap");
  gap->output()->setType(DType::Float32, {1, 64, 1, 1});
  Node* flat = g->appendNode("Flatten", {gap->output()}, 1, "flat");
  flat->output()->setType(DType::Float32, {1, 64});
  Node* fc = g->appendNode(
      "Gemm",
      {flat->output(), g->addConstant(random({64, 10}), "fc_w"), g->addConstant(random({10}), "fc_b")}, 1,
      "fc");
  fc->output()->setType(DType::Float32, {1, 10});
  g->addOutput(fc->output());
  return g;
}

// Multiplier of channel c, group g in the hand-made w4a16 plans.
// Group 0 keeps 1, so that every channel keeps some weights (an all-zero channel with a bias
// would need a huge bias at its floor scale).
inline int32_t handMultiplier(int64_t c, int64_t g) {
  return g == 0 ? 1 : 1 + static_cast<int32_t>((c + g) % 3);
}

// Reduction elements of output channel c of `node`'s weight, in the kernel's order.
template <typename F>
void forEachReductionElement(const Node& node, F f) {
  const Tensor& w = node.input(1)->constant();
  const quant::WeightChannelLayout layout = quant::weightLayoutOf(node);
  std::vector<int64_t> seen(static_cast<size_t>(layout.numChannels()), 0);
  for (int64_t i = 0; i < w.numel(); ++i) {
    const int64_t c = layout.channelOf(i);
    f(i, c, seen[static_cast<size_t>(c)]++);
  }
}

// Zeroes the weights of every (channel, group) whose hand multiplier is > 1 (see the header).
inline void zeroGroupsWithMultipliers(Graph& g, int64_t group) {
  for (Node* n : g.nodes()) {
    if (n->opType() != "Conv" && n->opType() != "Gemm") continue;
    Tensor w = n->input(1)->constant().clone();
    forEachReductionElement(*n, [&](int64_t i, int64_t c, int64_t k) {
      if (handMultiplier(c, k / group) > 1) w.data<float>()[i] = 0.0f;
    });
    n->input(1)->setConstant(std::move(w));
  }
}

// `q8` (a w8a8 plan of `g`) rewritten to `scheme` by the rules in the header.
inline quant::QuantPlan handPlan(const Graph& g, const quant::QuantPlan& q8,
                                 const quant::QuantScheme& scheme) {
  quant::QuantPlan plan = q8;
  plan.scheme = scheme;
  if (scheme.activation_bits == 16) {
    for (auto& [name, t] : plan.tensors) {
      if (t.dtype != quant::QuantDType::Int8 || !t.isPerTensor()) continue;
      const Value* v = g.findValue(name);
      if (!v || v->isConstant()) continue;
      const float s8 = t.scales[0];
      const double lo = s8 * (-128.0 - t.zero_points[0]), hi = s8 * (127.0 - t.zero_points[0]);
      const double s16 = (hi - lo) / 65535.0;
      t.scales[0] = static_cast<float>(s16);
      t.zero_points[0] = static_cast<int32_t>(std::clamp(std::lround(-32768.0 - lo / s16), -32768L, 32767L));
      t.dtype = quant::QuantDType::Int16;
    }
  }
  for (Node* n : g.nodes()) {
    if (n->opType() != "Conv" && n->opType() != "Gemm") continue;
    quant::TensorQuant& w = plan.tensors.at(n->input(1)->name());
    std::vector<float> max_abs(w.scales.size(), 0.0f);
    int64_t reduction = 0;
    forEachReductionElement(*n, [&](int64_t i, int64_t c, int64_t k) {
      max_abs[static_cast<size_t>(c)] =
          std::max(max_abs[static_cast<size_t>(c)], std::fabs(n->input(1)->constant().data<float>()[i]));
      reduction = std::max(reduction, k + 1);
    });
    const float qmax = scheme.weight_bits == 16 ? 100.0f : scheme.weight_bits == 4 ? 7.0f : 0.0f;
    if (qmax > 0)
      for (size_t c = 0; c < w.scales.size(); ++c) w.scales[c] = std::max(max_abs[c], 1e-6f) / qmax;
    w.dtype = scheme.weight_bits == 16  ? quant::QuantDType::Int16
              : scheme.weight_bits == 4 ? quant::QuantDType::Int4
                                        : quant::QuantDType::Int8;
    if (scheme.weight_group > 0) {
      w.group_size = scheme.weight_group;
      const int64_t groups = (reduction + scheme.weight_group - 1) / scheme.weight_group;
      w.group_multipliers.clear();
      for (size_t c = 0; c < w.scales.size(); ++c)
        for (int64_t gi = 0; gi < groups; ++gi)
          w.group_multipliers.push_back(handMultiplier(static_cast<int64_t>(c), gi));
    }
    if (n->numInputs() > 2 && n->input(2)) {
      quant::TensorQuant& b = plan.tensors.at(n->input(2)->name());
      const float s_in = plan.tensors.at(n->input(0)->name()).scales[0];
      for (size_t c = 0; c < b.scales.size(); ++c) b.scales[c] = s_in * w.scales[c];
      if (scheme.wideAccumulator()) b.dtype = quant::QuantDType::Int64;
    }
  }
  return plan;
}

}  // namespace npuc::testing
