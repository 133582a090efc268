#include "compile/packed_constants.h"

#include <fmt/format.h>

#include <cstring>
#include <memory>

#include "common/error.h"
#include "ir/dtype.h"
#include "lower/weight_packing.h"
#include "lower/weight_view.h"
#include "quant/graph/quantizer.h"
#include "quant/qparams.h"

namespace npuc {

namespace {

std::vector<const Node*> nodesByIndex(const Graph& graph) {
  std::vector<const Node*> nodes;
  for (const Node* n : graph.nodes()) nodes.push_back(n);
  return nodes;
}

// The node whose weight a task packed: its first node (the lowering's anchor).
const Node* anchorOf(const lower::Task& t, const std::vector<const Node*>& nodes) {
  if (t.kind != lower::TaskKind::Npu || !t.weights.present || t.nodes.empty() ||
      t.nodes.front() >= nodes.size())
    return nullptr;
  return nodes[t.nodes.front()];
}

// The w16a16i / w4a16 forms of rebuildWeight: int16 values, or int4 nibbles followed by the u8 group
// multipliers, times the plan's channel scale (times the group's multiplier): the float product
// scale[c] * m * q that the simulator divides by the same group scale and rounds back to q.
std::string rebuildWideOrNibbleWeight(const Node& anchor, const lower::NpuWeightView& view,
                                      const lower::PackedWeightRef& ref, const uint8_t* packed,
                                      const quant::QuantPlan& plan, float* dst) {
  const quant::TensorQuant& entry = plan.at(anchor.input(1)->name());
  const int64_t channels = view.depthwise ? ref.dims[1] : ref.dims[0];
  if (static_cast<int64_t>(entry.scales.size()) != channels)
    return fmt::format("QUNT gives it {} scales for {} output channels", entry.scales.size(), channels);
  const int64_t plane = ref.dims[2] * ref.dims[3];
  // Elements of one output channel's reduction, in the kernel's order (the view's row-major order).
  const int64_t reduction = view.depthwise ? plane : ref.dims[1] * plane;
  const int64_t view_n = ref.dims[0];
  auto weightIndex = [&](int64_t n, int64_t c, int64_t logical) {
    return view.transposed ? c * view_n + n : logical;
  };
  if (ref.elem == lower::ElemType::Int16) {
    lower::forEachPackedElement(ref.dims, ref.c2, [&](int64_t n, int64_t c, int64_t logical, int64_t at) {
      int16_t q;
      std::memcpy(&q, packed + at * 2, 2);
      const float scale = entry.scales[static_cast<size_t>(view.depthwise ? c : n)];
      dst[weightIndex(n, c, logical)] = scale * static_cast<float>(q);
    });
    return "";
  }
  const int64_t group = entry.group_size > 0 ? entry.group_size : reduction;
  const int64_t groups = (reduction + group - 1) / group;
  if (entry.group_size > 0 ? ref.multipliers != static_cast<uint64_t>(channels * groups)
                           : ref.multipliers != 0)
    return fmt::format("it holds {} group multipliers, expected {} channels x {} groups of {}",
                       ref.multipliers, channels, groups, group);
  const size_t elements = lower::packedBytes(ref.dims, ref.c2, 1);
  const uint8_t* mult = packed + (elements + 1) / 2;
  for (uint32_t k = 0; k < ref.multipliers; ++k)
    if (static_cast<int32_t>(mult[k]) != entry.group_multipliers.at(k))
      return fmt::format("its group multiplier {} is {}, QUNT says {}", k, mult[k],
                         entry.group_multipliers[k]);
  lower::forEachPackedElement(ref.dims, ref.c2, [&](int64_t n, int64_t c, int64_t logical, int64_t at) {
    const uint8_t byte = packed[at / 2];
    const int nibble = at % 2 ? byte >> 4 : byte & 0x0F;
    const int q = nibble >= 8 ? nibble - 16 : nibble;
    const int64_t channel = view.depthwise ? c : n;
    float scale = entry.scales[static_cast<size_t>(channel)];
    if (ref.multipliers) scale *= static_cast<float>(mult[channel * groups + (logical % reduction) / group]);
    dst[weightIndex(n, c, logical)] = scale * static_cast<float>(q);
  });
  return "";
}

// Writes the float32 weight of `anchor`, rebuilt from its task's NWGT entry, into `dst` (numel
// floats, the weight's shape); returns an error message instead when the entry does not fit.
std::string rebuildWeight(const Node& anchor, const lower::PackedWeightRef& ref, std::string_view nwgt,
                          const quant::QuantPlan* plan, float* dst) {
  const Value* w = anchor.input(1);
  const std::optional<lower::NpuWeightView> view = lower::npuWeightView(anchor);
  if (!view || view->dims != ref.dims)
    return fmt::format("its packed view [{}] is not the one node '{}' ({}) packs", fmt::join(ref.dims, ", "),
                       anchor.name(), anchor.opType());
  const bool int8 = ref.elem == lower::ElemType::Int8;
  const bool integer = int8 || ref.elem == lower::ElemType::Int16 || ref.elem == lower::ElemType::Int4;
  if (!integer && ref.elem != lower::ElemType::Float16)
    return std::string("its packed element type is ") + lower::elemTypeName(ref.elem);
  if (integer && (!plan || !plan->has(w->name())))
    return fmt::format("it is packed as {} but the quantization plan (QUNT) has no scales for it",
                       lower::elemTypeName(ref.elem));
  if (ref.offset > nwgt.size() || ref.size > nwgt.size() - ref.offset)
    return "its packed bytes lie outside NWGT";
  if (lower::packedWeightBytes(ref) != ref.size)
    return fmt::format("its packed size {} is not that of [{}] with C2 = {}", ref.size,
                       fmt::join(ref.dims, ", "), ref.c2);
  // Straight from the packed bytes (no unpacked copy): element (n, c) of the packed [N, C, H, W]
  // view is weight element `logical`, or (c, n) of a [K, N] weight packed transposed as [N, K].
  const uint8_t* packed = reinterpret_cast<const uint8_t*>(nwgt.data()) + ref.offset;
  const int64_t view_n = ref.dims[0];
  auto weightIndex = [&](int64_t n, int64_t c, int64_t logical) {
    return view->transposed ? c * view_n + n : logical;
  };
  if (integer && !int8) return rebuildWideOrNibbleWeight(anchor, *view, ref, packed, *plan, dst);
  if (int8) {
    // The output channel is the view's N (Conv, Gemm, MatMul) or, depthwise, its C; one scale
    // each. dst = quant::dequantizeValue(q, {scale, 0}) = scale * float(q).
    const std::vector<float>& scales = plan->at(w->name()).scales;
    const int64_t channels = view->depthwise ? ref.dims[1] : ref.dims[0];
    if (static_cast<int64_t>(scales.size()) != channels ||
        quant::weightLayoutOf(anchor).numChannels() != channels)
      return fmt::format("QUNT gives it {} scales for {} output channels", scales.size(), channels);
    const float* scale = scales.data();
    const int8_t* q = reinterpret_cast<const int8_t*>(packed);
    if (view->depthwise) {
      lower::forEachPackedElement(ref.dims, ref.c2, [&](int64_t, int64_t c, int64_t logical, int64_t at) {
        dst[logical] = scale[c] * static_cast<float>(q[at]);
      });
    } else {
      lower::forEachPackedElement(ref.dims, ref.c2, [&](int64_t n, int64_t c, int64_t logical, int64_t at) {
        dst[weightIndex(n, c, logical)] = scale[n] * static_cast<float>(q[at]);
      });
    }
  } else {
    lower::forEachPackedElement(ref.dims, ref.c2, [&](int64_t n, int64_t c, int64_t logical, int64_t at) {
      uint16_t h;
      std::memcpy(&h, packed + at * 2, 2);
      dst[weightIndex(n, c, logical)] = halfToFloat(h);
    });
  }
  return "";
}

// True when the simulator reads `rebuilt` exactly as it reads `anchor`'s own weight: the same int8
// values at the plan's scales (INT8 task, quantizeNodeWeights), the same half bits (FP16 task of a
// float build, whose MAC kernels read the half-rounded weight: QuantizedExecutor's FP16 mode).
// Int16 / Int4 weights are checked through quantizeNodeWeights itself, on a clone of the graph
// (`scratch`, made once) whose copy of the weight is the rebuilt tensor.
bool simulatorSeesTheSame(const Node& anchor, const Tensor& rebuilt, lower::ElemType elem,
                          const quant::QuantPlan* plan, const Graph& graph, std::unique_ptr<Graph>& scratch) {
  const Tensor& original = anchor.input(1)->constant();
  if (elem == lower::ElemType::Int16 || elem == lower::ElemType::Int4) {
    if (!scratch) scratch = graph.clone();
    Node* twin = scratch->findNode(anchor.name());
    if (!twin || twin->numInputs() < 2 || !twin->input(1)) return false;
    const quant::QuantizedWeights want = quant::quantizeNodeWeights(anchor, *plan);
    Value* w = twin->input(1);
    const Tensor kept = w->constant();
    w->setConstant(rebuilt);
    const quant::QuantizedWeights got = quant::quantizeNodeWeights(*twin, *plan);
    w->setConstant(kept);
    return want.values.dtype() == got.values.dtype() && want.values.nbytes() == got.values.nbytes() &&
           std::memcmp(want.values.raw(), got.values.raw(), want.values.nbytes()) == 0;
  }
  if (elem == lower::ElemType::Int8) {
    const quant::QuantizedWeights want = quant::quantizeNodeWeights(anchor, *plan);
    const quant::QuantizedWeights got = quant::quantizeWeightsWithScales(
        rebuilt, quant::weightLayoutOf(anchor), plan->at(anchor.input(1)->name()).scales,
        plan->weight_granularity, anchor.input(1)->name());
    return std::memcmp(want.values.raw(), got.values.raw(), want.values.nbytes()) == 0;
  }
  const float* a = original.data<float>();
  const float* b = rebuilt.data<float>();
  for (int64_t i = 0; i < original.numel(); ++i)
    if (floatToHalf(a[i]) != floatToHalf(b[i])) return false;
  return true;
}

}  // namespace

std::map<std::string, blob::PackedConstant> packedOnlyConstants(const Graph& graph,
                                                                const lower::LoweredProgram& program,
                                                                const quant::QuantPlan* plan) {
  std::map<std::string, blob::PackedConstant> out;
  const std::vector<const Node*> nodes = nodesByIndex(graph);
  std::unique_ptr<Graph> scratch;  // simulatorSeesTheSame's clone, made at the first int16/int4 weight
  for (const lower::Task& t : program.tasks) {
    const Node* anchor = anchorOf(t, nodes);
    if (!anchor || anchor->numInputs() < 2 || !anchor->input(1)) continue;
    const Value* w = anchor->input(1);
    // Only a weight nothing else reads: another reader (a CPU op, a graph output, a second task)
    // needs the float values themselves.
    if (!w->isConstant() || w->isGraphInput() || w->isGraphOutput() || w->uses().size() != 1 ||
        w->dtype() != DType::Float32)
      continue;
    // An INT8 build's FP16 (hybrid) layer keeps its FP32 weight: in INT8 mode the simulator's FP16
    // kernels read the node's unrounded constant, so half weights would change its outputs.
    if (plan && t.weights.elem == lower::ElemType::Float16) continue;
    Tensor rebuilt = Tensor::uninitialized(DType::Float32, w->shape());
    if (!rebuildWeight(*anchor, t.weights, program.packed_weights, plan, rebuilt.data<float>()).empty() ||
        !simulatorSeesTheSame(*anchor, rebuilt, t.weights.elem, plan, graph, scratch))
      continue;
    out[w->name()] = {w->name(), t.weights.offset, t.weights.size};
  }
  return out;
}

void restorePackedConstants(Graph& graph, const std::vector<blob::PackedConstant>& packed,
                            const lower::LoweredProgram* program, const quant::QuantPlan* plan,
                            const std::string& origin) {
  if (packed.empty()) return;
  auto fail = [&](const blob::PackedConstant& p, const std::string& why) {
    throw BlobError(
        fmt::format("blob '{}': constant '{}' is stored as NPU-packed weights at NWGT [{}, +{}), but {}",
                    origin, p.value, p.offset, p.size, why));
  };
  if (!program) fail(packed.front(), "the blob has no lowered program (TASK) that packs it");
  const std::vector<const Node*> nodes = nodesByIndex(graph);
  std::map<uint64_t, const lower::Task*> by_offset;  // NPU tasks with packed weights, by NWGT offset
  for (const lower::Task& t : program->tasks)
    if (anchorOf(t, nodes)) by_offset.emplace(t.weights.offset, &t);
  for (const blob::PackedConstant& p : packed) {
    auto it = by_offset.find(p.offset);
    if (it == by_offset.end() || it->second->weights.size != p.size)
      fail(p, "no NPU task packs weights there");
    const lower::Task& t = *it->second;
    const Node& anchor = *nodes[t.nodes.front()];
    if (anchor.numInputs() < 2 || !anchor.input(1) || anchor.input(1)->name() != p.value)
      fail(p, fmt::format("the task packing them (task {}) reads it not as the weight of its first node '{}'",
                          t.id, anchor.name()));
    // Written into the placeholder the GRAPH decoder allocated for it (zero-filled, ours alone:
    // the graph is not shared yet), so the weight costs one allocation.
    // (The decoder made it float32 of the recorded shape: anchor.input(1) is this very value.)
    const Tensor& placeholder = anchor.input(1)->constant();
    const std::string error = rebuildWeight(anchor, t.weights, program->packed_weights, plan,
                                            const_cast<float*>(placeholder.data<float>()));
    if (!error.empty()) fail(p, error);
  }
}

}  // namespace npuc
