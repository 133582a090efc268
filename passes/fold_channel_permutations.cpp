// fold_channel_permutations: a connected region of channel data movement (Concat, channel Slice,
// Split and Gather on axis 1, and the Reshape-Transpose-Reshape channel shuffle) between Convs
// that can reorder their channels is rebuilt from scratch as at most one Split per producer and
// one Concat per consumer input, with every permutation folded into Conv weights.
//
// The region only moves channels, so every consumer reads a fixed list of (producer, channel)
// pairs, which the pass computes by walking the region (the "provenance" of each value):
//
//   * a source is a region input produced by a group-1 Conv with constant weights, optionally
//     followed by one-use elementwise unary ops (Relu, Clip with scalar bounds, ...). Those act on
//     each channel alone, so permuting or dropping the Conv's output rows (weight rows and bias)
//     permutes or drops the source's channels exactly;
//   * a sink is a region consumer that can read its input channels in any order: a group-1 Conv
//     or a Gemm with constant weights absorbs the order (its weight columns move with the
//     channels); a node whose output channel c depends on input channel c alone passes the order
//     on to its consumers, which must take it in turn (a depthwise Conv or LayerNormalization
//     over the channels, whose per-channel parameters move; pooling, channelwise ops, a Flatten
//     of [N, C, 1, 1]). ShuffleNetV2's downsampling branch (depthwise Conv -> 1x1 Conv) and a
//     classifier head (GlobalAveragePool -> Flatten -> LayerNorm -> Gemm) are such sinks.
//
// A channelwise unary op inside the region (extract_common_factor turns Concat(Relu(a), Relu(b))
// into Relu(Concat(a, b))) moves no channel; it is copied onto every source whose channels go
// through it, which must then all go through the same ops.
//
// Each source's channels are grouped by the set of sinks that read them (channels nobody reads
// are dropped from the Conv) and its rows are reordered so that every group is contiguous: one
// Split (none for a single group). Each sink then reads the Concat of the groups it needs
// (shared between sinks reading the same groups; none for a single group), with exactly the
// channels it read before. So no sink gains a weight column (MACs never grow: they shrink when
// channels were dropped), and the pass applies only when the rebuilt region has fewer
// data-movement nodes than the old one.
//
// ShuffleNetV2 is the case it was written for: in a stage, every channel of the identity path
// leaves it at exactly one block (its "exit"), so each branch's last Conv is split by exit block
// and each branch's first Conv reads one Concat: per stride-1 block one Split and one Concat, no
// shuffle, no gather Conv and no zero weight columns (channel_shuffle_to_conv leaves one gather
// Conv and a Slice with C/4 zero columns per block). A stage of n stride-1 blocks keeps 2n + 2
// Split/Concat nodes (the downsampling block's two branches are split apart), one more than the
// 2n + 1 Slice/Concat nodes channel_shuffle_to_conv leaves beside its n gather Convs.
//
// Numerics: moving producer rows and filters is exact; a sink Conv that reads its channels in
// another order sums them in another order, so the last bits may change: level 3.
#include <algorithm>
#include <map>
#include <numeric>
#include <set>
#include <unordered_map>

#include "opset/op_traits.h"
#include "passes/core/ir_helpers.h"
#include "passes/core/pattern_pass.h"
#include "passes/fusion_util.h"
#include "passes/slice_util.h"

namespace npuc {
namespace {

// A channel of a source: (source index, channel).
using Channel = std::pair<size_t, int64_t>;

// Where a region value's channel comes from: a source channel, and the channelwise ops of the
// region it went through on the way (an index into Region::chains_).
struct Provenance {
  Channel channel;
  size_t ops;
};

// One data-movement step of the region: its nodes (three for a shuffle), data input values and
// outputs, and for each output channel the (input slot, input channel) it copies.
struct Step {
  std::vector<Node*> nodes;
  std::vector<Value*> inputs;
  std::vector<Value*> outputs;
  std::vector<std::vector<std::pair<size_t, int64_t>>> reads;  // per output, per channel
  bool channelwise = false;  // a channelwise unary op (Relu, ...): computes, moves nothing
};

bool isChannelTensor(const Value* v) {
  return v && fusion::isStaticFloat32(v) && v->rank() >= 3;
}

int64_t channelsOf(const Value* v) {
  return v->shape()[1];
}

// Output channel i of a one-input step reads input channel index[i].
Step oneInputStep(std::vector<Node*> nodes, Value* in, Value* out, const std::vector<int64_t>& index) {
  Step s{std::move(nodes), {in}, {out}, {{}}};
  for (int64_t c : index) s.reads[0].emplace_back(0, c);
  return s;
}

std::optional<Step> concatStep(Node& n) {
  if (n.attrs().i("axis", 0) != 1) return std::nullopt;
  Step s{{&n}, n.inputs(), {n.output()}, {{}}};
  for (size_t k = 0; k < n.numInputs(); ++k) {
    if (!isChannelTensor(n.input(k))) return std::nullopt;
    for (int64_t c = 0; c < channelsOf(n.input(k)); ++c) s.reads[0].emplace_back(k, c);
  }
  return s;
}

// A Slice that cuts axis 1 only.
std::optional<Step> sliceStep(Node& n) {
  const auto maps = slicing::constantSliceMaps(n);
  if (!maps) return std::nullopt;
  const Shape& xs = n.input(0)->shape();
  for (size_t a = 0; a < maps->size(); ++a) {
    const slicing::AxisMap& m = (*maps)[a];
    if (a != 1 && (m.start != 0 || m.step != 1 || m.count != xs[a])) return std::nullopt;
  }
  return oneInputStep({&n}, n.input(0), n.output(), slicing::selectedIndices((*maps)[1]));
}

// A Split on axis 1: output k holds the next channelsOf(output k) channels.
std::optional<Step> splitStep(Node& n) {
  if (n.attrs().i("axis", 0) != 1) return std::nullopt;
  Step s{{&n}, {n.input(0)}, n.outputs(), {}};
  int64_t offset = 0;
  for (Value* out : n.outputs()) {
    if (!isChannelTensor(out)) return std::nullopt;
    s.reads.emplace_back();
    for (int64_t c = 0; c < channelsOf(out); ++c) s.reads.back().emplace_back(0, offset + c);
    offset += channelsOf(out);
  }
  if (offset != channelsOf(n.input(0))) return std::nullopt;
  return s;
}

// A Gather on axis 1 with constant 1-D indices.
std::optional<Step> gatherStep(Node& n) {
  const int64_t rank = n.input(0)->rank();
  int64_t axis = n.attrs().i("axis", 0);
  if (axis < 0) axis += rank;
  const auto idx = constantInts(n.input(1));
  if (axis != 1 || !idx || n.input(1)->rank() != 1) return std::nullopt;
  std::vector<int64_t> index = *idx;
  const int64_t c = channelsOf(n.input(0));
  for (int64_t& i : index) {
    if (i < 0) i += c;
    if (i < 0 || i >= c) return std::nullopt;
  }
  return oneInputStep({&n}, n.input(0), n.output(), index);
}

// Reshape [N, C, ...] -> [N, g, C/g, ...], Transpose swapping axes 1 and 2, Reshape back to the
// input shape: shuffled channel j reads channel (j % g) * (C / g) + j / g. `first` is the first
// Reshape; the two inner values must have no other user.
std::optional<Step> shuffleStep(Node& first) {
  Node* t = fusion::soleConsumer(first.output());
  Node* last = t ? fusion::soleConsumer(t->output()) : nullptr;
  if (!t || !last || t->opType() != "Transpose" || last->opType() != "Reshape" || !t->domain().empty() ||
      !last->domain().empty())
    return std::nullopt;
  const Value* x = first.input(0);
  const Shape& xs = x->shape();
  const Shape& s = first.output()->shape();
  const int64_t rank = x->rank();
  if (last->output()->shape() != xs || static_cast<int64_t>(s.size()) != rank + 1 || s[0] != xs[0] ||
      s[1] * s[2] != xs[1])
    return std::nullopt;
  for (int64_t a = 2; a < rank; ++a) {
    if (s[static_cast<size_t>(a + 1)] != xs[static_cast<size_t>(a)]) return std::nullopt;
  }
  std::vector<int64_t> swap(static_cast<size_t>(rank + 1));
  std::iota(swap.begin(), swap.end(), 0);
  std::swap(swap[1], swap[2]);
  if (transposePerm(*t, rank + 1) != swap) return std::nullopt;
  const int64_t groups = s[1], per_group = s[2];
  std::vector<int64_t> index(static_cast<size_t>(xs[1]));
  for (int64_t j = 0; j < xs[1]; ++j) index[static_cast<size_t>(j)] = (j % groups) * per_group + j / groups;
  return oneInputStep({&first, t, last}, first.input(0), last->output(), index);
}

// The shuffle `n` (a Reshape or Transpose) is the second or third node of, or nullopt.
std::optional<Step> shuffleEndingIn(Node& n) {
  Node* t = n.opType() == "Transpose" ? &n : fusion::producerIs(n.input(0), "Transpose");
  Node* first = t ? fusion::producerIs(t->input(0), "Reshape") : nullptr;
  if (!first || !isChannelTensor(first->input(0))) return std::nullopt;
  auto s = shuffleStep(*first);
  if (!s || std::find(s->nodes.begin(), s->nodes.end(), &n) == s->nodes.end()) return std::nullopt;
  return s;
}

// An elementwise unary op whose further inputs (Clip bounds) are scalar constants: it acts
// on every channel alike, so it commutes with any reordering of channels.
bool isChannelwiseUnary(const Node& n) {
  if (!opTraits(n).has(OpTrait::ElementwiseUnary) || n.numOutputs() != 1) return false;
  for (size_t i = 1; i < n.numInputs(); ++i) {
    if (n.input(i) && !fusion::floatScalar(n.input(i))) return false;
  }
  return true;
}

// A channelwise unary op inside the region (after a Concat, as extract_common_factor leaves
// Relu(Concat(a, b))): every channel passes through it, in place.
std::optional<Step> channelwiseStep(Node& n) {
  if (!isChannelwiseUnary(n) || !isChannelTensor(n.output())) return std::nullopt;
  std::vector<int64_t> same(static_cast<size_t>(channelsOf(n.input(0))));
  std::iota(same.begin(), same.end(), 0);
  Step s = oneInputStep({&n}, n.input(0), n.output(), same);
  s.channelwise = true;
  return s;
}

// The step `n` belongs to (for a shuffle, whichever of its three nodes `n` is), or nullopt.
std::optional<Step> stepOf(Node& n) {
  if (!n.domain().empty() || !n.input(0)) return std::nullopt;
  const std::string& op = n.opType();
  if (op == "Transpose") return shuffleEndingIn(n);
  if (op == "Reshape") {
    if (!isChannelTensor(n.input(0))) return std::nullopt;
    if (auto s = shuffleStep(n)) return s;
    return shuffleEndingIn(n);
  }
  if (!isChannelTensor(n.input(0))) return std::nullopt;
  if (op == "Concat") return concatStep(n);
  if (op == "Slice") return sliceStep(n);
  if (op == "Split") return splitStep(n);
  if (op == "Gather") return gatherStep(n);
  return channelwiseStep(n);
}

// True if `v` is a data input of step `s` (not a Slice's starts or a Gather's indices).
bool readsData(const Step& s, const Value* v) {
  return std::find(s.inputs.begin(), s.inputs.end(), v) != s.inputs.end();
}

bool hasConstantFloatWeights(const Node& conv) {
  const Value* w = conv.input(1);
  const Value* b = conv.input(2);
  return w && w->isConstant() && w->dtype() == DType::Float32 && w->rank() >= 3 &&
         (!b || (b->isConstant() && b->dtype() == DType::Float32));
}

bool isConv(const Node& n) {
  return n.opType() == "Conv" && n.domain().empty() && hasConstantFloatWeights(n);
}

bool isConstantFloat(const Value* v) {
  return v && v->isConstant() && v->dtype() == DType::Float32;
}

// A consumer that reads its input channels in any order, its weights moving with them: a group-1
// Conv (weight columns) or a Gemm on [N, C] (the rows or columns of its constant B).
bool absorbsOrder(const Node& n, size_t index) {
  if (index != 0 || !n.domain().empty()) return false;
  if (n.opType() == "Conv") return isConv(n) && n.attrs().i("group", 1) == 1;
  return n.opType() == "Gemm" && n.attrs().i("transA", 0) == 0 && n.input(0)->rank() == 2 &&
         isConstantFloat(n.input(1)) && n.input(1)->rank() == 2;
}

bool isDepthwiseConv(const Node& n) {
  if (!isConv(n)) return false;
  const int64_t c = channelsOf(n.input(0));
  const Shape& ws = n.input(1)->shape();
  return n.attrs().i("group", 1) == c && ws[0] == c && ws[1] == 1;
}

// [N, C, 1, ...] -> [N, C] (Flatten or Reshape after a global pool): the channel axis stays.
bool dropsUnitSpatialAxes(const Node& n) {
  const Value* in = n.input(0);
  const Value* out = n.output();
  return (n.opType() == "Flatten" || n.opType() == "Reshape") && in->shapeIsStatic() &&
         out->shapeIsStatic() && in->rank() >= 2 && out->rank() == 2 && out->shape()[0] == in->shape()[0] &&
         out->shape()[1] == in->shape()[1] && shapeNumel(in->shape()) == shapeNumel(out->shape());
}

// LayerNormalization over the channels of [N, C] with constant per-channel scale and bias.
bool isChannelLayerNorm(const Node& n) {
  const int64_t rank = n.input(0)->rank();
  const int64_t axis = n.attrs().i("axis", -1);
  return n.opType() == "LayerNormalization" && rank == 2 && (axis == 1 || axis == -1) &&
         isConstantFloat(n.input(1)) && n.input(1)->rank() == 1 &&
         (!n.input(2) || isConstantFloat(n.input(2)));
}

// A consumer whose output channel c depends on its input channel c alone (with per-channel
// parameters that can move along): a channel order passes through it to its consumers.
bool forwardsOrder(const Node& n, size_t index) {
  if (index != 0 || n.numOutputs() != 1 || n.output()->isGraphOutput() || !n.output()->hasUses())
    return false;
  static const std::set<std::string> kPools = {"GlobalAveragePool", "GlobalMaxPool", "MaxPool",
                                               "AveragePool"};
  if (isChannelwiseUnary(n)) return true;
  if (!n.domain().empty()) return false;
  return isDepthwiseConv(n) || kPools.count(n.opType()) || dropsUnitSpatialAxes(n) || isChannelLayerNorm(n);
}

// How a node takes a channel order it receives.
struct Follower {
  Node* node;
  bool absorbs;  // else it forwards the order to its consumers
};

// Appends the nodes a channel order reaching `user` (input `index`) passes through and ends at;
// returns why it cannot (empty if it can).
std::string followOrder(Node& user, size_t index, std::vector<Follower>& out) {
  if (absorbsOrder(user, index)) {
    out.push_back({&user, true});
    return "";
  }
  if (!forwardsOrder(user, index))
    return "'" + user.name() + "' (" + user.opType() +
           ") reads permuted channels but neither absorbs their order (group-1 Conv, Gemm) nor passes it on "
           "to "
           "such a consumer (depthwise Conv, pooling, channelwise op, flatten, LayerNormalization)";
  out.push_back({&user, false});
  for (const Use& u : user.output()->uses()) {
    if (std::string why = followOrder(*u.user, u.index, out); !why.empty()) return why;
  }
  return "";
}

// The producer chain of a source: a group-1 Conv, then channelwise unary ops (in order).
struct SourceChain {
  Node* conv = nullptr;
  std::vector<Node*> unary;
};

std::optional<SourceChain> sourceChain(Value* v) {
  SourceChain chain;
  Node* n = v->producer();
  while (n && isChannelwiseUnary(*n)) {
    chain.unary.insert(chain.unary.begin(), n);
    n = n->input(0)->producer();
    if (!n || fusion::soleConsumer(n->output()) == nullptr) return std::nullopt;
  }
  if (!n || !isConv(*n) || n->attrs().i("group", 1) != 1 || n->numOutputs() != 1) return std::nullopt;
  chain.conv = n;
  return chain;
}

// Conv weights (or bias) keeping rows `rows` (along axis 0), in that order.
Tensor selectRows(const Tensor& t, const std::vector<int64_t>& rows) {
  Shape shape = t.shape();
  shape[0] = static_cast<int64_t>(rows.size());
  Tensor r(DType::Float32, shape);
  const int64_t row = t.numel() / t.dim(0);
  for (size_t i = 0; i < rows.size(); ++i)
    std::copy_n(t.data<float>() + rows[i] * row, row, r.data<float>() + static_cast<int64_t>(i) * row);
  return r;
}

// Conv weights whose input-channel column j moves to column[j] (same number of columns).
Tensor moveColumns(const Tensor& w, const std::vector<int64_t>& column) {
  const int64_t out_ch = w.dim(0), in_ch = w.dim(1), taps = w.numel() / (out_ch * in_ch);
  Tensor r(DType::Float32, w.shape());
  for (int64_t o = 0; o < out_ch; ++o) {
    for (int64_t j = 0; j < in_ch; ++j)
      std::copy_n(w.data<float>() + (o * in_ch + j) * taps, taps,
                  r.data<float>() + (o * in_ch + column[static_cast<size_t>(j)]) * taps);
  }
  return r;
}

// `t` with row j moved to row dest[j].
Tensor moveRows(const Tensor& t, const std::vector<int64_t>& dest) {
  std::vector<int64_t> rows(dest.size());
  for (size_t j = 0; j < dest.size(); ++j) rows[static_cast<size_t>(dest[j])] = static_cast<int64_t>(j);
  return selectRows(t, rows);
}

// A consumer of the region, and the nodes that take the order of the channels it reads.
struct Sink {
  Node* node;
  std::vector<Follower> followers;  // node first
  std::vector<Channel> reads;       // its input channel j is reads[j]
  std::vector<Channel> pieces;      // the (source, group) pieces it reads, once grouped
};

struct Source {
  Value* value;
  SourceChain chain;
  std::vector<std::vector<int64_t>> groups;  // channels of each group, groups in output order
  std::optional<size_t> region_ops;          // the region's channelwise ops its channels go through
};

// The region around a root node, its analysis, and (if it pays) its rebuild.
class Region {
 public:
  explicit Region(Graph& g) : graph_(g) {}

  // Collects the steps connected to `root` through region values; false if `root` is no step or
  // not the region's leader (a data-movement node comes before it: that one acts for the region).
  // refusal() then says why the region cannot be rebuilt (empty if nothing stops it yet).
  bool collect(Node& root) {
    auto first = stepOf(root);
    if (!first) return false;
    size_t i = 0;  // graph positions, to order steps and sinks (only now: most roots are no step)
    for (Node* n : graph_.nodes()) position_[n] = i++;
    std::vector<Step> todo{*first};
    while (!todo.empty()) {
      Step s = std::move(todo.back());
      todo.pop_back();
      if (known_.count(s.nodes.front())) continue;
      if (!s.channelwise && pos(s.nodes.front()) < pos(&root)) return false;
      for (Node* n : s.nodes) known_.insert(n);
      for (Value* in : s.inputs) {
        if (Node* p = in->producer(); p && !known_.count(p)) {
          if (auto ps = stepOf(*p)) todo.push_back(*ps);
        }
        addConsumerSteps(in, todo);  // siblings: the other half of a split source, ...
      }
      for (Value* out : s.outputs) {
        if (out->isGraphOutput()) refusal_ = "'" + out->name() + "' is a graph output";
        addConsumerSteps(out, todo);
      }
      steps_.push_back(std::move(s));
    }
    std::sort(steps_.begin(), steps_.end(),
              [&](const Step& a, const Step& b) { return pos(a.nodes.front()) < pos(b.nodes.front()); });
    return true;
  }
  const std::string& refusal() const { return refusal_; }

  void addConsumerSteps(Value* v, std::vector<Step>& todo) const {
    for (const Use& u : v->uses()) {
      if (known_.count(u.user)) continue;
      if (auto us = stepOf(*u.user); us && readsData(*us, v)) todo.push_back(*us);
    }
  }

  bool hasPermutation() const {
    for (const Step& s : steps_) {
      if (s.nodes.size() == 3 || s.nodes.front()->opType() == "Gather") return true;
    }
    return false;
  }

  // Finds sources and sinks and each value's channels. Returns a refusal reason.
  std::string analyze() {
    for (const Step& s : steps_) {
      for (Value* in : s.inputs) {
        if (provenance_.count(in)) continue;
        if (std::string why = addSource(in); !why.empty()) return why;
      }
      for (size_t o = 0; o < s.outputs.size(); ++o) {
        std::vector<Provenance>& out = provenance_[s.outputs[o]];
        for (const auto& [slot, c] : s.reads[o]) {
          out.push_back(provenance_.at(s.inputs[slot])[static_cast<size_t>(c)]);
          if (s.channelwise) out.back().ops = afterOp(out.back().ops, s.nodes.front());
        }
      }
    }
    for (const auto& [v, channels] : provenance_) {
      for (const Use& u : v->uses()) {
        if (known_.count(u.user)) continue;
        if (std::string why = addSink(*u.user, u.index, channels); !why.empty()) return why;
      }
    }
    std::sort(sinks_.begin(), sinks_.end(),
              [&](const Sink& a, const Sink& b) { return pos(a.node) < pos(b.node); });
    groupSourceChannels();
    return "";
  }

  // Data-movement nodes now and after the rebuild.
  size_t nodesNow() const {
    size_t n = 0;
    for (const Step& s : steps_) n += s.channelwise ? 0 : s.nodes.size();
    return n;
  }
  size_t nodesAfter() const {
    size_t n = 0;
    for (const Source& s : sources_) n += s.groups.size() > 1;
    std::set<std::vector<Channel>> concats;
    for (const Sink& k : sinks_) {
      if (piecesOf(k).size() > 1) concats.insert(piecesOf(k));
    }
    return n + concats.size();
  }

  void rebuild(Rewriter& rw) {
    std::vector<Node*> terminal;
    for (const Step& s : steps_) {
      bool feeds_step = false;
      for (Value* out : s.outputs) {
        for (const Use& u : out->uses()) feeds_step = feeds_step || known_.count(u.user);
      }
      if (!feeds_step) terminal.push_back(s.nodes.back());
    }
    // Graph order: a source's Conv may itself read the region (a branch of one 1x1 Conv) or be
    // reached through a sink's followers; its input order is fixed (in place) before its rows are
    // copied.
    std::vector<size_t> order(sources_.size());
    std::iota(order.begin(), order.end(), 0);
    std::sort(order.begin(), order.end(),
              [&](size_t a, size_t b) { return pos(sources_[a].chain.conv) < pos(sources_[b].chain.conv); });
    std::map<std::vector<Channel>, Value*> concats;
    std::vector<bool> rewired(sinks_.size(), false);
    for (size_t i : order) {
      const Node& conv = *sources_[i].chain.conv;
      for (size_t k = 0; k < sinks_.size(); ++k) {
        const bool feeds = reaches(sinks_[k], conv);
        if (feeds && !rewired[k]) rewireSink(sinks_[k], concats, rw);
        rewired[k] = rewired[k] || feeds;
      }
      rebuildSource(i, rw);
    }
    for (size_t k = 0; k < sinks_.size(); ++k) {
      if (!rewired[k]) rewireSink(sinks_[k], concats, rw);
    }
    for (Node* n : terminal) rw.eraseNode(n);
  }

 private:
  size_t pos(const Node* n) const { return position_.at(n); }

  // The first sink in graph order that reads exactly `pieces` (its Concat must come before it).
  Node* firstSinkReading(const std::vector<Channel>& pieces) const {
    for (const Sink& k : sinks_) {
      if (piecesOf(k) == pieces) return k.node;
    }
    return nullptr;
  }

  static bool reaches(const Sink& k, const Node& conv) {
    for (const Follower& f : k.followers) {
      if (f.node == &conv) return true;
    }
    return false;
  }

  std::string addSource(Value* v) {
    if (v->isGraphOutput()) return "'" + v->name() + "' is a graph output";
    auto chain = sourceChain(v);
    if (!chain)
      return "'" + v->name() +
             "' enters the region but is not a group-1 Conv (with channelwise ops after it) " +
             "whose output channels can be reordered";
    std::vector<Provenance>& channels = provenance_[v];
    for (int64_t c = 0; c < channelsOf(v); ++c) channels.push_back({{sources_.size(), c}, 0});
    sources_.push_back(Source{v, *chain, {}, std::nullopt});
    return "";
  }

  // The ops list `ops` followed by `op` (interned: equal lists have one index).
  size_t afterOp(size_t ops, Node* op) {
    const auto [known, fresh] = after_op_.emplace(std::make_pair(ops, op), 0);
    if (!fresh) return known->second;
    known->second = internOps(ops, op);
    return known->second;
  }
  size_t internOps(size_t ops, Node* op) {
    std::vector<Node*> longer = chains_[ops];
    longer.push_back(op);
    const auto [it, inserted] = chain_index_.emplace(longer, chains_.size());
    if (inserted) chains_.push_back(std::move(longer));
    return it->second;
  }

  std::string addSink(Node& user, size_t index, const std::vector<Provenance>& provenance) {
    std::vector<Channel> reads;
    for (const Provenance& p : provenance) {
      Source& s = sources_[p.channel.first];
      if (!s.region_ops) s.region_ops = p.ops;
      if (*s.region_ops != p.ops)
        return "channels of '" + s.value->name() +
               "' reach their consumers through different channelwise ops";
      reads.push_back(p.channel);
    }
    std::vector<Follower> followers;
    if (std::string why = followOrder(user, index, followers); !why.empty()) return why;
    if (std::set<Channel>(reads.begin(), reads.end()).size() != reads.size())
      return "'" + user.name() + "' reads a channel twice";
    sinks_.push_back(Sink{&user, std::move(followers), reads, {}});
    return "";
  }

  // Groups each source's channels by the sinks reading them; unread channels are dropped.
  void groupSourceChannels() {
    std::vector<std::map<int64_t, std::vector<size_t>>> readers(sources_.size());
    for (size_t k = 0; k < sinks_.size(); ++k) {
      for (const Channel& c : sinks_[k].reads) readers[c.first][c.second].push_back(k);
    }
    for (size_t s = 0; s < sources_.size(); ++s) {
      std::map<std::vector<size_t>, std::vector<int64_t>> by_readers;  // ordered: deterministic
      for (const auto& [c, sinks] : readers[s]) by_readers[sinks].push_back(c);
      for (auto& [sinks, channels] : by_readers) {
        for (size_t i = 0; i < channels.size(); ++i) slot_[{s, channels[i]}] = {sources_[s].groups.size(), i};
        sources_[s].groups.push_back(std::move(channels));
      }
    }
    for (Sink& k : sinks_) k.pieces = findPieces(k);
  }

  // The groups sink `k` reads, as (source, group) pairs in source order: its new input is their
  // Concat.
  const std::vector<Channel>& piecesOf(const Sink& k) const { return k.pieces; }
  std::vector<Channel> findPieces(const Sink& k) const {
    std::set<Channel> pieces;
    for (const Channel& c : k.reads) pieces.insert({c.first, static_cast<int64_t>(slot_.at(c).first)});
    return {pieces.begin(), pieces.end()};
  }

  // True if the source keeps all its channels in their order (then its Conv stays as it is).
  bool orderUnchanged(const Source& s) const {
    if (s.groups.size() != 1 || static_cast<int64_t>(s.groups[0].size()) != channelsOf(s.value)) return false;
    for (size_t i = 0; i < s.groups[0].size(); ++i) {
      if (s.groups[0][i] != static_cast<int64_t>(i)) return false;
    }
    return true;
  }

  // A copy of channelwise op `op` reading `v`.
  static Value* copyUnary(const Node& op, Value* v, Rewriter& rw) {
    std::vector<Value*> args = op.inputs();
    args[0] = v;
    // Typed by hand, domain kept: the op may be npuc's own (SiLU), which ONNX inference does not
    // know; an elementwise op's output has its input's shape.
    Node* copy = rw.createTyped(op.output()->dtype(), v->shape(), op.opType(), args, op.attrs(), op.name());
    copy->setDomain(op.domain());
    return copy->output();
  }

  // The source's Conv with its rows in group order (unread rows dropped) and the channelwise ops
  // after it.
  Value* reorderedSource(const Source& s, Rewriter& rw) {
    std::vector<int64_t> rows;
    for (const auto& g : s.groups) rows.insert(rows.end(), g.begin(), g.end());
    Node& conv = *s.chain.conv;
    const std::string hint = conv.name();
    std::vector<Value*> in{conv.input(0),
                           rw.constant(selectRows(conv.input(1)->constant(), rows), hint + "_w")};
    if (conv.input(2)) in.push_back(rw.constant(selectRows(conv.input(2)->constant(), rows), hint + "_b"));
    Value* v = rw.create("Conv", in, conv.attrs(), hint)->output();
    for (Node* u : s.chain.unary) v = copyUnary(*u, v, rw);
    return v;
  }

  // The source reordered, then the region's channelwise ops its channels went through, then a
  // Split into the groups.
  void rebuildSource(size_t i, Rewriter& rw) {
    Source& s = sources_[i];
    if (s.groups.empty()) return;  // nothing reads it: it dies with the region
    const std::vector<Node*>& ops = chains_[s.region_ops.value_or(0)];
    rw.setInsertionPointBefore(s.chain.conv);
    Value* v = orderUnchanged(s) ? s.value : reorderedSource(s, rw);
    if (!ops.empty()) rw.setInsertionPointAfter(v->producer());
    for (Node* op : ops) v = copyUnary(*op, v, rw);
    if (s.groups.size() == 1) {
      pieces_[{i, 0}] = v;
      return;
    }
    std::vector<int64_t> sizes;
    for (const auto& g : s.groups) sizes.push_back(static_cast<int64_t>(g.size()));
    Attributes a;
    a.set("axis", int64_t{1});
    const std::string hint = s.chain.conv->name() + "_split";
    Node* split = rw.create("Split", {v, rw.constant(int64Vector(sizes), hint)}, a, hint, s.groups.size());
    for (size_t g = 0; g < s.groups.size(); ++g) pieces_[{i, static_cast<int64_t>(g)}] = split->output(g);
  }

  // Points the sink at the Concat of its groups (built once per group list); the weights and
  // per-channel parameters of its followers follow the new channel order.
  void rewireSink(const Sink& k, std::map<std::vector<Channel>, Value*>& concats, Rewriter& rw) {
    const std::vector<Channel>& pieces = piecesOf(k);
    std::map<Channel, int64_t> offset;  // first new channel of each piece
    int64_t total = 0;
    for (const Channel& p : pieces) {
      offset[p] = total;
      total += static_cast<int64_t>(sources_[p.first].groups[static_cast<size_t>(p.second)].size());
    }
    Value*& input = concats[pieces];
    if (!input) {
      if (pieces.size() == 1) {
        input = pieces_.at(pieces[0]);
      } else {
        std::vector<Value*> parts;
        for (const Channel& p : pieces) parts.push_back(pieces_.at(p));
        Attributes a;
        a.set("axis", int64_t{1});
        rw.setInsertionPointBefore(firstSinkReading(pieces));  // sinks are rewired out of order
        input = rw.create("Concat", parts, a, k.node->name() + "_in")->output();
      }
    }
    std::vector<int64_t> column;  // old input channel j -> new input channel
    for (const Channel& c : k.reads) {
      const auto [group, index] = slot_.at(c);
      column.push_back(offset.at({c.first, static_cast<int64_t>(group)}) + static_cast<int64_t>(index));
    }
    for (const Follower& f : k.followers) {
      if (f.absorbs) {
        absorb(*f.node, column, rw);
      } else {
        forward(*f.node, column, rw);
      }
    }
    k.node->setInput(0, input);
    rw.notifyModified(k.node);
  }

  // The weights of an absorbing node read input channel j at column[j].
  static void absorb(Node& n, const std::vector<int64_t>& column, Rewriter& rw) {
    const Tensor& w = n.input(1)->constant();
    const bool rows = n.opType() == "Gemm" && n.attrs().i("transB", 0) == 0;  // B is [C, out]
    n.setInput(1, rw.constant(rows ? moveRows(w, column) : moveColumns(w, column), n.name() + "_w"));
    rw.notifyModified(&n);
  }

  // The per-channel parameters of a forwarding node follow the channels (its output is then
  // permuted like its input).
  static void forward(Node& n, const std::vector<int64_t>& column, Rewriter& rw) {
    if (n.opType() != "Conv" && n.opType() != "LayerNormalization") return;  // nothing per channel
    for (size_t i = 1; i <= 2; ++i) {
      if (n.input(i)) n.setInput(i, rw.constant(moveRows(n.input(i)->constant(), column), n.name() + "_p"));
    }
    rw.notifyModified(&n);
  }

  Graph& graph_;
  std::unordered_map<const Node*, size_t> position_;
  std::string refusal_;
  std::set<const Node*> known_;
  std::vector<Step> steps_;
  std::map<Value*, std::vector<Provenance>> provenance_;
  std::vector<std::vector<Node*>> chains_{{}};  // lists of the region's channelwise ops; 0 is none
  std::map<std::vector<Node*>, size_t> chain_index_{{{}, 0}};
  std::map<std::pair<size_t, Node*>, size_t> after_op_;  // afterOp's answers (asked per channel)
  std::vector<Source> sources_;
  std::vector<Sink> sinks_;
  std::map<Channel, std::pair<size_t, size_t>> slot_;  // source channel -> (group, index in group)
  std::map<Channel, Value*> pieces_;                   // (source, group) -> its value after rebuild
};

// True if a data-movement step feeds `n`'s step (through channelwise ops, if any): that step
// comes first in graph order, so `n` does not lead its region. Most roots stop here, before the
// region is walked.
bool followsDataMovement(Node& n) {
  const auto step = stepOf(n);
  if (!step) return false;
  for (Value* in : step->inputs) {
    for (Node* p = in->producer(); p;) {
      const auto above = stepOf(*p);
      if (!above) break;
      if (!above->channelwise) return true;
      p = p->input(0)->producer();
    }
  }
  return step->nodes.front() != &n;  // a shuffle's Transpose or last Reshape: its first node leads
}

class FoldChannelPermutations : public RewritePattern {
 public:
  FoldChannelPermutations()
      : RewritePattern("fold_channel_permutations",
                       {"Concat", "Slice", "Split", "Gather", "Reshape", "Transpose"},
                       /*changes_numerics=*/true) {}

  LogicalResult matchAndRewrite(Node& root, Rewriter& rw) const override {
    if (followsDataMovement(root)) return failure();  // cheap: not the leader of its region
    Region region(rw.graph());
    if (!region.collect(root)) return failure();  // not a step, or not the region's leader
    if (!region.refusal().empty()) return refuse(region, root, region.refusal(), rw);
    if (std::string why = region.analyze(); !why.empty()) return refuse(region, root, why, rw);
    const size_t now = region.nodesNow(), after = region.nodesAfter();
    if (after >= now)
      return refuse(region, root,
                    "rebuilt, it would keep " + std::to_string(after) + " data-movement nodes of " +
                        std::to_string(now),
                    rw);
    region.rebuild(rw);
    return success();
  }

 private:
  // Reports a refusal only for regions that hold a permutation (a shuffle or a Gather): a region
  // of plain Slices and Concats that cannot be improved is the normal case, not news.
  static LogicalResult refuse(const Region& region, Node& root, const std::string& why, Rewriter& rw) {
    if (!region.hasPermutation()) return failure();
    return rw.notifyMatchFailure(root, "channel region at '" + root.name() + "' kept: " + why);
  }
};

class FoldChannelPermutationsPass : public PatternPass {
 public:
  const char* name() const override { return "fold_channel_permutations"; }
  const char* description() const override {
    return "channel shuffles, Gathers, Slices and Concats between Convs -> one Split per producer and one "
           "Concat per consumer, permutations folded into Conv weights";
  }

 protected:
  void populate(PatternSet& p) const override { p.add<FoldChannelPermutations>(); }
};

}  // namespace

std::unique_ptr<Pass> createFoldChannelPermutationsPass() {
  return std::make_unique<FoldChannelPermutationsPass>();
}

}  // namespace npuc
