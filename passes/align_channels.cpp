// align_channels: channel-alignment padding for a chosen SoC and NPU dtype.
//
// The NPU's MAC array works on channel blocks: the profile's channel_alignment table gives the
// block for Conv output channels, Conv input channels and depthwise channels. A layer whose
// channel count C is not a multiple of its block a already spends ceil(C/a)*a lanes, and the
// runtime must re-layout the misaligned tensor. This pass makes the padding explicit in the graph:
//
//   * a channel group is a set of tensors that must share one padded width: the output of a
//     padding source (Conv with group 1, Gemm's N) plus everything reached from it through ops
//     that work channel by channel (depthwise Conv, whitelisted unary activations, Add/Sub/Mul/Div/
//     PRelu with per-channel constants or with another tensor of a group). Add(a, b) with a and b
//     in two groups merges them;
//   * a padded group has width P = roundUp(C, lcm of the alignments its layers ask for): conv_out
//     for the sources, conv_in for Conv/Gemm layers reading the group, depthwise for depthwise
//     layers in it;
//   * channels [C, P) hold don't-care values. Sources get zero output weights and zero bias there,
//     layers reading the group get zero input weights there (so the don't-care values never reach
//     a real channel), depthwise layers get zero kernels, and per-channel constants are padded
//     with a value that keeps the don't-care channels finite (0, or 1 for a divisor): 0 * inf
//     would be NaN in the next Conv. Unary ops are whitelisted for the same reason (bounded on
//     finite inputs: no Exp, Log, Reciprocal);
//   * a use that cannot take padded channels (graph output, Reshape/Flatten, Concat, any op not
//     handled here, an op the partitioner places on the CPU) reads a Slice back to C channels,
//     one Slice per padded tensor, shared by all such uses. Output names are kept.
//
// Cost function (explicit and deliberately simple). Zero channels cost no NPU compute, since a
// misaligned layer already runs ceil(C/a)*a lanes; they cost DDR bytes (P/C more activation
// traffic for the group's tensors) and every Slice is one more low-efficiency data-movement task
// with its own per-task overhead. What padding buys is one aligned layer per Conv/Gemm/depthwise
// channel dimension in the group that was misaligned. A group is padded when
//     slices needed  <  layers that become aligned
// (or always with AlignOptions::force). A final Conv whose output is a graph output gains one
// aligned layer and needs one Slice: not padded. Conv -> Relu -> Conv gains two and needs none.
//
// Semantics are exact: every real output channel sums the same products plus exact zeros.
#include "passes/align_channels.h"

#include <algorithm>
#include <map>
#include <numeric>
#include <set>
#include <utility>
#include <vector>

#include "common/error.h"
#include "opset/eval.h"
#include "opset/op_traits.h"
#include "passes/core/ir_helpers.h"

namespace npuc {
namespace {

// ---------------------------------------------------------------- tensors

// `t` (float32) with dim `axis` grown to `size`; the new elements are `fill`.
Tensor padAxis(const Tensor& t, int64_t axis, int64_t size, float fill) {
  Shape shape = t.shape();
  const int64_t old_size = shape[static_cast<size_t>(axis)];
  if (old_size == size) return t;
  shape[static_cast<size_t>(axis)] = size;
  Tensor out(DType::Float32, shape);
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < axis; ++d) outer *= t.dim(d);
  for (int64_t d = axis + 1; d < t.rank(); ++d) inner *= t.dim(d);
  const float* src = t.data<float>();
  float* dst = out.data<float>();
  std::fill(dst, dst + out.numel(), fill);
  for (int64_t o = 0; o < outer; ++o) {
    std::copy(src + o * old_size * inner, src + (o + 1) * old_size * inner, dst + o * size * inner);
  }
  return out;
}

int64_t roundUp(int64_t x, int64_t multiple) {
  return (x + multiple - 1) / multiple * multiple;
}

// ---------------------------------------------------------------- node roles

enum class Role {
  Other,        // cannot take padded channels: its padded inputs are sliced
  Conv,         // group-1 Conv: zero input-channel weights for a padded input, pads its output
  Depthwise,    // group == Cin == Cout: joins its input's group
  Gemm,         // A [M, K] x B: zero K rows for a padded A, pads N
  Elementwise,  // channel by channel: joins its inputs' groups
};

bool isFloatTensor(const Value* v) {
  return v && v->dtype() == DType::Float32 && v->shapeIsStatic() && v->rank() >= 2;
}
bool isFloatConstant(const Value* v) {
  return v && v->isConstant() && v->dtype() == DType::Float32;
}

// Unary ops that map finite inputs to finite outputs (OpTrait::FiniteUnary, see the header
// comment) and binary ops that work channel by channel (OpTrait::ChannelwiseBinary). Div and
// PRelu take a tensor only as input 0 (a don't-care divisor could be 0).
bool takesTensorAt(const Node& n, size_t input) {
  return input == 0 || (n.opType() != "Div" && n.opType() != "PRelu");
}

// Value the channels [C, P) of a constant operand are padded with: 0 keeps them finite and, for
// PRelu, makes the slope 0; a divisor gets 1.
std::optional<float> constantFill(const Node& n, size_t input) {
  const std::string& op = n.opType();
  if (op == "Add" || op == "Sub" || op == "Mul") return 0.0f;
  if (op == "Div" && input == 1) return 1.0f;
  if (op == "PRelu" && input == 1) return 0.0f;
  return std::nullopt;
}

// Where a constant operand of an elementwise op of rank `out_rank` keeps the channel axis (axis 1
// of the output), or -1 when it is broadcast along it.
int64_t constantChannelAxis(const Tensor& c, int64_t out_rank) {
  const int64_t axis = c.rank() - (out_rank - 1);
  return axis >= 0 && c.dim(axis) != 1 ? axis : -1;
}

Role convRole(const Node& n) {
  const Value *x = n.input(0), *w = n.input(1), *b = n.input(2);
  if (!isFloatTensor(x) || !isFloatTensor(n.output()) || !isFloatConstant(w) || w->rank() != x->rank())
    return Role::Other;
  if (b && (!isFloatConstant(b) || b->rank() != 1)) return Role::Other;
  const int64_t group = n.attrs().i("group", 1);
  const int64_t cin = x->shape()[1], cout = w->shape()[0];
  if (group == 1) return Role::Conv;
  if (group == cin && cout == cin && w->shape()[1] == 1) return Role::Depthwise;
  return Role::Other;
}

Role gemmRole(const Node& n) {
  const Value *a = n.input(0), *b = n.input(1), *c = n.input(2);
  if (!isFloatTensor(a) || a->rank() != 2 || !isFloatTensor(n.output()) || !isFloatConstant(b) ||
      b->rank() != 2)
    return Role::Other;
  if (n.attrs().i("transA", 0) != 0) return Role::Other;
  if (c && !isFloatConstant(c)) return Role::Other;
  return Role::Gemm;
}

Role elementwiseRole(const Node& n) {
  const Value* out = n.output();
  if (n.numOutputs() != 1 || !isFloatTensor(out)) return Role::Other;
  if (opTraits(n).has(OpTrait::FiniteUnary)) {
    if (!n.input(0) || n.input(0)->isConstant() || n.input(0)->shape() != out->shape()) return Role::Other;
    for (size_t i = 1; i < n.numInputs(); ++i) {  // Clip's min / max
      if (n.input(i) && !(n.input(i)->isConstant() && n.input(i)->constant().numel() == 1))
        return Role::Other;
    }
    return Role::Elementwise;
  }
  if (n.numInputs() != 2 || !opTraits(n).has(OpTrait::ChannelwiseBinary)) return Role::Other;
  size_t tensors = 0;
  for (size_t i = 0; i < 2; ++i) {
    const Value* in = n.input(i);
    if (!in) return Role::Other;
    if (in->isConstant()) {
      if (!isFloatConstant(in) || in->rank() > out->rank() || !constantFill(n, i)) return Role::Other;
    } else {
      if (!takesTensorAt(n, i) || in->dtype() != DType::Float32 || in->shape() != out->shape())
        return Role::Other;
      ++tensors;
    }
  }
  return tensors > 0 ? Role::Elementwise : Role::Other;
}

Role classify(const Node& n) {
  if (!n.domain().empty()) return Role::Other;
  if (n.opType() == "Conv") return convRole(n);
  if (n.opType() == "Gemm") return gemmRole(n);
  if (n.numInputs() > 0 && n.input(0)) return elementwiseRole(n);
  return Role::Other;
}

// ---------------------------------------------------------------- channel groups

struct ChannelGroup {
  int64_t channels = 0;
  int64_t alignment = 1;   // lcm of what the group's layers ask for
  int aligned_layers = 0;  // layers whose channel count is misaligned now and aligned after padding
  std::vector<Value*> values;
  int64_t padded = 0;  // the decided width; 0 while undecided or not padded
};

// Union-find over channel groups.
class ChannelGroups {
 public:
  int create(int64_t channels) {
    parent_.push_back(static_cast<int>(groups_.size()));
    groups_.push_back(ChannelGroup{});
    groups_.back().channels = channels;
    return parent_.back();
  }
  int find(int g) {
    while (parent_[static_cast<size_t>(g)] != g) g = parent_[static_cast<size_t>(g)];
    return g;
  }
  int unite(int a, int b) {
    a = find(a), b = find(b);
    if (a == b) return a;
    ChannelGroup &ga = at(a), &gb = at(b);
    ga.alignment = std::lcm(ga.alignment, gb.alignment);
    ga.aligned_layers += gb.aligned_layers;
    ga.values.insert(ga.values.end(), gb.values.begin(), gb.values.end());
    gb.values.clear();
    parent_[static_cast<size_t>(b)] = a;
    return a;
  }
  // A layer of the group computes in blocks of `alignment` channels.
  void require(int g, int64_t alignment) {
    ChannelGroup& grp = at(find(g));
    grp.alignment = std::lcm(grp.alignment, alignment);
    if (grp.channels % alignment != 0) ++grp.aligned_layers;
  }
  void addValue(int g, Value* v) {
    g = find(g);
    at(g).values.push_back(v);
    of_[v] = g;
  }
  // The group of `v`, or -1.
  int groupOf(const Value* v) {
    auto it = of_.find(v);
    return it == of_.end() ? -1 : find(it->second);
  }
  // The padded width of `v`'s group, or 0 when `v` keeps its channels.
  int64_t paddedWidth(const Value* v) {
    const int g = groupOf(v);
    return g < 0 ? 0 : at(g).padded;
  }
  std::vector<int> roots() {
    std::vector<int> r;
    for (size_t g = 0; g < parent_.size(); ++g) {
      if (find(static_cast<int>(g)) == static_cast<int>(g)) r.push_back(static_cast<int>(g));
    }
    return r;
  }
  ChannelGroup& at(int g) { return groups_[static_cast<size_t>(g)]; }

 private:
  std::vector<int> parent_;
  std::vector<ChannelGroup> groups_;
  std::map<const Value*, int> of_;
};

using UseKey = std::pair<const Node*, size_t>;

// ---------------------------------------------------------------- the pass

class ChannelAligner {
 public:
  ChannelAligner(Graph& graph, const SocProfile& soc, NpuDType dtype, const AlignOptions& options)
      : graph_(graph),
        conv_in_(soc.alignment(dtype, AlignmentRole::ConvInput)),
        conv_out_(soc.alignment(dtype, AlignmentRole::ConvOutput)),
        depthwise_(soc.alignment(dtype, AlignmentRole::Depthwise)),
        force_(options.force) {
    for (const NodePlacement& p : partitionGraph(graph, soc, options.op_target).nodes) {
      if (p.device == Device::Cpu) cpu_nodes_.insert(p.node);
    }
  }

  size_t run() {
    for (Node* n : graph_.nodes()) analyze(*n);
    decide();
    size_t changes = 0;
    for (Node* n : graph_.nodes()) changes += rewrite(*n);
    changes += insertSlices();
    if (changes > 0) graph_.removeUnusedValues();
    return changes;
  }

 private:
  // Consumer side: `n` reads input `index` (in a group) and can take padded channels.
  void accept(const Node& n, size_t index, int64_t alignment) {
    handled_.insert({&n, index});
    if (alignment > 0) groups_.require(groups_.groupOf(n.input(index)), alignment);
  }

  // Starts a new group at `out` (a padding source) computing in blocks of `alignment`.
  void startGroup(Value* out, int64_t alignment) {
    const int g = groups_.create(out->shape()[1]);
    groups_.require(g, alignment);
    groups_.addValue(g, out);
  }

  void analyze(Node& n) {
    Role role = cpu_nodes_.count(&n) ? Role::Other : classify(n);
    const bool input_in_group = n.input(0) && groups_.groupOf(n.input(0)) >= 0;
    switch (role) {
      case Role::Conv:
        if (input_in_group) accept(n, 0, conv_in_);
        startGroup(n.output(), conv_out_);
        break;
      case Role::Gemm:
        if (input_in_group) accept(n, 0, conv_in_);
        startGroup(n.output(), conv_out_);
        break;
      case Role::Depthwise:
        if (!input_in_group) {  // padding it would need a Pad of its input: left alone
          role = Role::Other;
          break;
        }
        accept(n, 0, depthwise_);
        groups_.addValue(groups_.groupOf(n.input(0)), n.output());
        break;
      case Role::Elementwise:
        if (!joinElementwise(n)) role = Role::Other;
        break;
      case Role::Other: break;
    }
    roles_[&n] = role;
  }

  // Joins the groups of every tensor operand of elementwise `n` and adds its output; false (and
  // nothing recorded) when an operand tensor is in no group.
  bool joinElementwise(Node& n) {
    std::vector<size_t> tensor_inputs;
    for (size_t i = 0; i < n.numInputs(); ++i) {
      const Value* in = n.input(i);
      if (!in || in->isConstant()) continue;
      if (groups_.groupOf(in) < 0) return false;
      tensor_inputs.push_back(i);
    }
    int g = groups_.groupOf(n.input(tensor_inputs.front()));
    for (size_t i : tensor_inputs) {
      g = groups_.unite(g, groups_.groupOf(n.input(i)));
      accept(n, i, 0);
    }
    groups_.addValue(g, n.output());
    return true;
  }

  // A padded tensor's uses that need the original channels (graph output counts as one).
  bool needsSlice(const Value* v) const {
    if (v->isGraphOutput()) return true;
    for (const Use& u : v->uses()) {
      if (!handled_.count({u.user, u.index})) return true;
    }
    return false;
  }

  void decide() {
    for (int root : groups_.roots()) {
      ChannelGroup& g = groups_.at(root);
      const int64_t width = roundUp(g.channels, g.alignment);
      if (width == g.channels) continue;
      const int slices = static_cast<int>(
          std::count_if(g.values.begin(), g.values.end(), [&](Value* v) { return needsSlice(v); }));
      if (force_ || slices < g.aligned_layers) g.padded = width;
    }
  }

  // New constant for input `index` of `n`.
  void setConstant(Node& n, size_t index, Tensor t) {
    n.setInput(index, graph_.addConstant(std::move(t), n.input(index)->name() + "_aligned"));
  }

  void padBias(Node& n, size_t index, int64_t width) {
    if (n.input(index)) setConstant(n, index, padAxis(n.input(index)->constant(), 0, width, 0.0f));
  }

  // Rewrites `n` for its padded inputs / output; returns 1 if it changed.
  size_t rewrite(Node& n) {
    const Role role = roles_[&n];
    if (role == Role::Other) return 0;
    const int64_t in_width = groups_.paddedWidth(n.input(0));
    const int64_t out_width = groups_.paddedWidth(n.output());
    if (in_width == 0 && out_width == 0) return 0;
    switch (role) {
      case Role::Conv: {
        const Tensor& w = n.input(1)->constant();
        Tensor padded = padAxis(w, 0, out_width ? out_width : w.dim(0), 0.0f);
        setConstant(n, 1, padAxis(padded, 1, in_width ? in_width : w.dim(1), 0.0f));
        if (out_width) padBias(n, 2, out_width);
        break;
      }
      case Role::Depthwise:
        setConstant(n, 1, padAxis(n.input(1)->constant(), 0, out_width, 0.0f));
        padBias(n, 2, out_width);
        n.attrs().set("group", out_width);
        break;
      case Role::Gemm: rewriteGemm(n, in_width, out_width); break;
      case Role::Elementwise: rewriteElementwise(n, out_width); break;
      case Role::Other: break;
    }
    inferNode(n);
    return 1;
  }

  void rewriteGemm(Node& n, int64_t k_width, int64_t n_width) {
    const bool trans_b = n.attrs().i("transB", 0) != 0;
    const int64_t k_axis = trans_b ? 1 : 0, n_axis = trans_b ? 0 : 1;
    const Tensor& b = n.input(1)->constant();
    const int64_t channels = b.dim(n_axis);
    Tensor padded = padAxis(b, k_axis, k_width ? k_width : b.dim(k_axis), 0.0f);
    setConstant(n, 1, padAxis(padded, n_axis, n_width ? n_width : channels, 0.0f));
    const Value* c = n.input(2);
    if (n_width && c && c->rank() >= 1 && c->constant().dim(-1) == channels && channels != 1) {
      setConstant(n, 2, padAxis(c->constant(), c->rank() - 1, n_width, 0.0f));
    }
  }

  void rewriteElementwise(Node& n, int64_t width) {
    const int64_t channels = n.output()->shape()[1];
    for (size_t i = 0; i < n.numInputs(); ++i) {
      const Value* c = n.input(i);
      const std::optional<float> fill = constantFill(n, i);
      if (!c || !c->isConstant() || !fill) continue;
      const int64_t axis = constantChannelAxis(c->constant(), n.output()->rank());
      if (axis >= 0 && c->constant().dim(axis) == channels) {
        setConstant(n, i, padAxis(c->constant(), axis, width, *fill));
      }
    }
  }

  // One Slice back to the original channels per padded tensor with a use that needs them.
  size_t insertSlices() {
    size_t inserted = 0;
    for (int root : groups_.roots()) {
      const ChannelGroup& g = groups_.at(root);
      if (g.padded == 0) continue;
      for (Value* v : g.values) {
        if (!needsSlice(v)) continue;
        insertSlice(v, g.channels);
        ++inserted;
      }
    }
    return inserted;
  }

  void insertSlice(Value* v, int64_t channels) {
    Node* producer = v->producer();
    Node* slice = graph_.insertNodeAfter(
        producer, "Slice",
        {v, graph_.addConstant(int64Vector({0})), graph_.addConstant(int64Vector({channels})),
         graph_.addConstant(int64Vector({1}))},
        1, producer->name() + "_unaligned");
    inferNode(*slice);
    Value* sliced = slice->output();
    v->replaceUsesWith(sliced, [&](const Use& u) {
      return u.user != slice && !handled_.count({u.user, u.index});
    });
    if (!v->isGraphOutput()) return;
    const std::string name = v->name();  // output names are API: the Slice takes it over
    v->setName(graph_.uniqueName(name + "_aligned"));
    sliced->setName(name);
    for (size_t i = 0; i < graph_.outputs().size(); ++i) {
      if (graph_.outputs()[i] == v) graph_.setOutput(i, sliced);
    }
  }

  Graph& graph_;
  const int64_t conv_in_, conv_out_, depthwise_;
  const bool force_;
  std::set<const Node*> cpu_nodes_;
  std::map<const Node*, Role> roles_;
  std::set<UseKey> handled_;
  ChannelGroups groups_;
};

// The target comes from the PassContext (the registered pass) or is fixed at construction (tools
// and tests that align for one SoC without a pipeline).
class AlignChannelsPass : public Pass {
 public:
  explicit AlignChannelsPass(std::optional<PassTarget> fixed, AlignOptions options = {})
      : fixed_(std::move(fixed)), options_(std::move(options)) {}
  const char* name() const override { return "align_channels"; }
  const char* description() const override {
    return "pads Conv/depthwise/Gemm channels to the target SoC's channel alignment for its NPU dtype "
           "with zero weights (target stage only)";
  }
  // Exact zeros added to exact sums: results are unchanged (the tests find them bit-identical on
  // the host kernels), so the pass runs at every level.
  size_t run(Graph& graph, PassContext& ctx) override {
    const std::optional<PassTarget>& target = fixed_ ? fixed_ : ctx.target;
    if (!target || !target->soc) return 0;  // target-independent pipeline: nothing to align to
    AlignOptions options = options_;
    if (options.op_target.empty()) options.op_target = target->op_target;
    return ChannelAligner(graph, *target->soc, target->dtype, options).run();
  }

 private:
  std::optional<PassTarget> fixed_;
  AlignOptions options_;
};

}  // namespace

size_t alignChannels(Graph& graph, const SocProfile& soc, DType dtype, const AlignOptions& options) {
  const std::optional<NpuDType> npu_dtype = npuDTypeOf(dtype);
  if (!npu_dtype) {
    throw ConfigError(std::string("align_channels: dtype ") + dtypeName(dtype) +
                      " has no NPU counterpart on " + soc.name + " (use int8, int16 or float16)");
  }
  return ChannelAligner(graph, soc, *npu_dtype, options).run();
}

std::unique_ptr<Pass> createAlignChannelsPass(const std::string& soc_name, DType dtype,
                                              AlignOptions options) {
  const std::optional<NpuDType> npu_dtype = npuDTypeOf(dtype);
  if (!npu_dtype)
    throw ConfigError(std::string("align_channels: dtype ") + dtypeName(dtype) +
                      " has no NPU counterpart on " + soc_name + " (use int8, int16 or float16)");
  PassTarget target;
  target.soc = &socProfile(soc_name);
  target.dtype = *npu_dtype;
  return std::make_unique<AlignChannelsPass>(std::move(target), std::move(options));
}

// The registry's factory (pass_registry.cpp): aligns for PassContext::target, and does nothing
// without one.
std::unique_ptr<Pass> createAlignChannelsPass() {
  return std::make_unique<AlignChannelsPass>(std::nullopt);
}

}  // namespace npuc
