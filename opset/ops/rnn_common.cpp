// RnnSpec: the recurrent ops' attributes and input shapes, read and checked in one place.
#include "opset/ops/rnn_common.h"

#include <algorithm>
#include <cctype>
#include <cmath>

namespace npuc::rnn {
namespace {

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
  return s;
}

// ONNX's activation names, with whether each takes alpha / beta and the defaults of the ONNX op
// of that name. activation_alpha/beta are consumed in order by the activations that take them
// (ONNX Runtime's reading of "consumed in the order of activation functions").
struct ActInfo {
  const char* name;
  bool takes_alpha, takes_beta;
  float alpha, beta;
};
constexpr ActInfo kActs[] = {
    {"Sigmoid", false, false, 0.f, 0.f},    {"Tanh", false, false, 0.f, 0.f},
    {"Relu", false, false, 0.f, 0.f},       {"Affine", true, true, 1.f, 0.f},
    {"LeakyRelu", true, false, 0.01f, 0.f}, {"ThresholdedRelu", true, false, 1.f, 0.f},
    {"ScaledTanh", true, true, 1.f, 1.f},   {"HardSigmoid", true, true, 0.2f, 0.5f},
    {"Elu", true, false, 1.f, 0.f},         {"Softsign", false, false, 0.f, 0.f},
    {"Softplus", false, false, 0.f, 0.f},
};

const ActInfo* findAct(const std::string& name) {
  const std::string l = lower(name);
  for (const ActInfo& a : kActs)
    if (lower(a.name) == l) return &a;
  return nullptr;
}

void requireShape(const Node& node, const Shape* s, const Shape& want, const char* what) {
  if (*s != want) {
    throw ShapeError(where(node) + ": " + what + " has shape " + shapeStr(*s) + ", expected " +
                     shapeStr(want));
  }
}

}  // namespace

std::string where(const Node& node) {
  return node.opType() + " node '" + node.name() + "'";
}

float Activation::apply(float x) const {
  // Names are canonical (resolveRnn), so the first letters decide.
  switch (name[0]) {
    case 'S':
      if (name == "Sigmoid") return 1.f / (1.f + std::exp(-x));
      if (name == "ScaledTanh") return alpha * std::tanh(beta * x);
      if (name == "Softsign") return x / (1.f + std::fabs(x));
      return std::log1p(std::exp(x));  // Softplus
    case 'T':
      if (name == "Tanh") return std::tanh(x);
      return x > alpha ? x : 0.f;  // ThresholdedRelu
    case 'R': return x > 0.f ? x : 0.f;
    case 'A': return alpha * x + beta;
    case 'L': return x >= 0.f ? x : alpha * x;
    case 'H': return std::max(0.f, std::min(1.f, alpha * x + beta));
    default:  // Elu
      return x >= 0.f ? x : alpha * (std::exp(x) - 1.f);
  }
}

RnnSpec resolveRnn(const Node& node, const std::vector<const Shape*>& in) {
  RnnSpec s;
  s.op = node.opType();
  s.cell = s.op == "LSTM" ? Cell::Lstm : s.op == "GRU" ? Cell::Gru : Cell::Rnn;
  const Attributes& a = node.attrs();
  const std::string direction = a.s("direction", "forward");
  if (direction == "bidirectional") {
    s.dirs = 2;
  } else if (direction == "reverse") {
    s.reverse_only = true;
  } else if (direction != "forward") {
    throw UnsupportedOpError(where(node) + ": direction '" + direction +
                             "' is not one of forward, reverse, bidirectional");
  }
  s.layout = a.i("layout", 0);
  if (s.layout != 0 && s.layout != 1) {
    throw UnsupportedOpError(where(node) + ": layout " + std::to_string(s.layout) + " must be 0 or 1");
  }
  if (a.has("clip")) {
    s.has_clip = true;
    s.clip = a.f("clip");
    if (!(s.clip > 0.f))
      throw UnsupportedOpError(where(node) + ": clip " + std::to_string(s.clip) + " must be > 0");
  }
  s.linear_before_reset = a.i("linear_before_reset", 0) != 0;
  s.input_forget = a.i("input_forget", 0) != 0;

  // ---- activations, per direction
  const int64_t per = s.actsPerDirection();
  std::vector<std::string> names;
  if (a.has("activations")) {
    names = a.strings("activations");
    if (static_cast<int64_t>(names.size()) != per * s.dirs) {
      throw UnsupportedOpError(where(node) + ": activations lists " + std::to_string(names.size()) +
                               " functions, expected " + std::to_string(per * s.dirs) + " (" +
                               std::to_string(per) + " per direction)");
    }
  } else {
    const std::vector<std::string> def = s.cell == Cell::Lstm
                                             ? std::vector<std::string>{"Sigmoid", "Tanh", "Tanh"}
                                         : s.cell == Cell::Gru ? std::vector<std::string>{"Sigmoid", "Tanh"}
                                                               : std::vector<std::string>{"Tanh"};
    for (int64_t d = 0; d < s.dirs; ++d) names.insert(names.end(), def.begin(), def.end());
  }
  const std::vector<float> alphas = a.floats("activation_alpha", {});
  const std::vector<float> betas = a.floats("activation_beta", {});
  size_t ai = 0, bi = 0;
  s.acts.assign(s.dirs, {});
  for (size_t k = 0; k < names.size(); ++k) {
    const ActInfo* info = findAct(names[k]);
    if (!info)
      throw UnsupportedOpError(where(node) + ": activation '" + names[k] + "' is not an ONNX RNN activation");
    Activation act{info->name, info->alpha, info->beta};
    if (info->takes_alpha && ai < alphas.size()) act.alpha = alphas[ai++];
    if (info->takes_beta && bi < betas.size()) act.beta = betas[bi++];
    s.acts[k / per].push_back(act);
  }

  // ---- shapes
  auto shape = [&](size_t i) -> const Shape* { return i < in.size() ? in[i] : nullptr; };
  const Shape* x = shape(0);
  const Shape* w = shape(1);
  const Shape* r = shape(2);
  if (!x || !w || !r) throw ShapeError(where(node) + ": X, W and R are required");
  if (x->size() != 3) throw ShapeError(where(node) + ": X has shape " + shapeStr(*x) + ", expected rank 3");
  s.seq = s.layout == 0 ? (*x)[0] : (*x)[1];
  s.batch = s.layout == 0 ? (*x)[1] : (*x)[0];
  s.input = (*x)[2];
  if (r->size() != 3) throw ShapeError(where(node) + ": R has shape " + shapeStr(*r) + ", expected rank 3");
  s.hidden = a.i("hidden_size", (*r)[2]);
  const int64_t gh = s.gates() * s.hidden, d = s.dirs, b = s.batch, h = s.hidden;
  requireShape(node, w, {d, gh, s.input}, "W");
  requireShape(node, r, {d, gh, h}, "R");
  if (const Shape* bias = shape(3)) requireShape(node, bias, {d, 2 * gh}, "B");
  if (const Shape* sl = shape(4)) requireShape(node, sl, {b}, "sequence_lens");
  const Shape state = s.layout == 0 ? Shape{d, b, h} : Shape{b, d, h};
  if (const Shape* ih = shape(5)) requireShape(node, ih, state, "initial_h");
  if (s.cell == Cell::Lstm) {
    if (const Shape* ic = shape(6)) requireShape(node, ic, state, "initial_c");
    if (const Shape* p = shape(7)) requireShape(node, p, {d, 3 * h}, "P");
  }
  return s;
}

void inferRnn(InferContext& ctx) {
  std::vector<const Shape*> shapes;
  for (size_t i = 0; i < ctx.numInputs(); ++i)
    shapes.push_back(ctx.hasInput(i) ? &ctx.inputShape(i) : nullptr);
  const RnnSpec s = resolveRnn(ctx.node(), shapes);
  const DType t = ctx.inputDType(0);
  if (t != DType::Float32) throw UnsupportedOpError(where(ctx.node()) + ": X must be float32");
  const int64_t d = s.dirs, b = s.batch, h = s.hidden;
  const Shape state = s.layout == 0 ? Shape{d, b, h} : Shape{b, d, h};
  ctx.setOutput(0, t, s.layout == 0 ? Shape{s.seq, d, b, h} : Shape{b, s.seq, d, h});
  if (ctx.numOutputs() > 1) ctx.setOutput(1, t, state);
  if (ctx.numOutputs() > 2) ctx.setOutput(2, t, state);
}

}  // namespace npuc::rnn
