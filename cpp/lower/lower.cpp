#include "lower/lower.h"

#include <fmt/format.h>

#include <cstring>
#include <map>
#include <memory>
#include <optional>
#include <set>

#include "common/error.h"
#include "ir/dtype.h"
#include "lower/pipeline_dedup.h"
#include "lower/weight_packing.h"
#include "lower/weight_view.h"
#include "perf/mac_shape.h"
#include "perf/task_grouping.h"
#include "quant/graph/quantizer.h"
#include "target/fusion_groups.h"

namespace npuc::lower {

namespace {

// The packed element type of a quantized weight: its plan entry's dtype (Int8 / Int16 / Int4).
ElemType quantizedWeightElem(const quant::TensorQuant& entry, const std::string& weight) {
  switch (entry.dtype) {
    case quant::QuantDType::Int8: return ElemType::Int8;
    case quant::QuantDType::Int16: return ElemType::Int16;
    case quant::QuantDType::Int4: return ElemType::Int4;
    default:
      throw ConfigError(
          fmt::format("weight '{}': the plan stores it as {}, which is no weight type (int4, int8, "
                      "int16)",
                      weight, quant::quantDTypeName(entry.dtype)));
  }
}

// Row-major bytes of quantizeNodeWeights' values in `elem`: int8 and int4 (one value per byte until
// packInt4) from an Int8 tensor, int16 from an Int16 tensor (or widened from an Int8 one).
std::string quantizedWeightBytes(const Tensor& values, ElemType elem, const std::string& weight) {
  const auto n = static_cast<size_t>(values.numel());
  if (values.dtype() == DType::Int16 && elem == ElemType::Int16)
    return std::string(static_cast<const char*>(values.raw()), values.nbytes());
  if (values.dtype() != DType::Int8)
    throw ConfigError(fmt::format("weight '{}': quantized values of type {} cannot be stored as {}", weight,
                                  dtypeName(values.dtype()), elemTypeName(elem)));
  const int8_t* q = values.data<int8_t>();
  if (elem != ElemType::Int16) return std::string(reinterpret_cast<const char*>(q), n);
  std::string out(n * sizeof(int16_t), '\0');
  for (size_t i = 0; i < n; ++i) {
    const auto v = static_cast<int16_t>(q[i]);
    std::memcpy(&out[i * sizeof v], &v, sizeof v);
  }
  return out;
}

NpuDType npuDTypeOfElem(ElemType e) {
  if (e == ElemType::Int8) return NpuDType::Int8;
  return e == ElemType::Int16 ? NpuDType::Int16 : NpuDType::Float16;
}

bool isQuantizedElem(ElemType e) {
  return e == ElemType::Int8 || e == ElemType::Int16;
}

// The 16-bit float type an FP16 task really uses on this SoC (a profile without fp16 computes
// float ops in int16, as eval_perf does).
NpuDType computableDType(const SocProfile& soc, NpuDType want) {
  if (soc.supportsDtype(want)) return want;
  for (NpuDType t : {NpuDType::Float16, NpuDType::Int16, NpuDType::Int8})
    if (soc.supportsDtype(t)) return t;
  throw ConfigError("SoC '" + soc.name + "' lists no NPU dtype to lower to");
}

class Lowerer {
 public:
  Lowerer(const Graph& graph, const SocProfile& soc, const LowerOptions& options)
      : graph_(graph), soc_(soc), options_(options) {
    uint32_t i = 0;
    for (const Node* n : graph.nodes()) node_index_[n] = i++;
  }

  LoweredProgram run() {
    // The compile driver decided the placement once and passes it; standalone callers (tests,
    // tools) get the SoC's partition with their op_target.
    std::optional<PartitionReport> own;
    if (!options_.placement) own = partitionGraph(graph_, soc_, options_.op_target);
    const PartitionReport& placement = options_.placement ? *options_.placement : *own;
    std::vector<FusionGroup> groups = fusionGroups(graph_, soc_, placement);
    for (const Value* v : graph_.inputs())
      if (!v->isConstant()) tensorOn(*v, TensorDevice::Host, ElemType::Float32, true);
    for (const perf::TaskNodes& t : perf::groupTasks(graph_, placement, groups)) {
      if (t.device == Device::Npu)
        lowerNpu(t);
      else
        lowerCpu(t, placement);
    }
    for (const Value* v : graph_.outputs()) {  // results go back to the host
      if (v->isConstant()) continue;
      requireOn(*v, TensorDevice::Host, ElemType::Float32);
    }
    program_.pipelines = pipelines_.take();
    program_.packed_weights = std::move(packed_weights_);
    return std::move(program_);
  }

 private:
  ElemType computeOf(const Node& anchor) const {
    // The scheme's activation type: int8 (w8a8) or int16 (w8a16, w16a16i, w4a16).
    if (options_.plan && options_.plan->precisionOf(anchor.name()) == quant::NodePrecision::Int8)
      return options_.plan->scheme.activation_bits == 16 ? ElemType::Int16 : ElemType::Int8;
    return ElemType::Float16;
  }

  // A new tensor of `v` on `device` (`defining`: it exists from the start: a graph input).
  uint32_t tensorOn(const Value& v, TensorDevice device, ElemType compute, bool defining = false) {
    (void)defining;
    ProgramTensor t;
    t.value = v.name();
    t.device = device;
    const bool is_float = v.dtype() == DType::Float32;
    t.elem = !is_float ? ElemType::AsGraph : device == TensorDevice::Host ? ElemType::Float32 : compute;
    if (device == TensorDevice::Npu && is_float && v.rank() == 4) {
      t.layout = TensorLayout::Nc1hwc2;
      t.c2 = static_cast<uint32_t>(
          soc_.alignment(computableDType(soc_, npuDTypeOfElem(compute)), AlignmentRole::Other));
    }
    const auto id = static_cast<uint32_t>(program_.tensors.size());
    program_.tensors.push_back(std::move(t));
    where_[{&v, device}] = id;
    return id;
  }

  // The tensor of `v` on `device`, adding a Convert task from the other device when needed.
  uint32_t requireOn(const Value& v, TensorDevice device, ElemType compute) {
    auto it = where_.find({&v, device});
    if (it != where_.end()) return it->second;
    const TensorDevice other = device == TensorDevice::Npu ? TensorDevice::Host : TensorDevice::Npu;
    auto src = where_.find({&v, other});
    if (src == where_.end())
      throw GraphError("lowering: value '" + v.name() + "' is read before any task produces it");
    Task c;
    c.kind = TaskKind::Convert;
    c.pattern = "Convert";
    c.convert.direction = device == TensorDevice::Npu ? ConvertDirection::ToNpu : ConvertDirection::ToHost;
    c.inputs = {src->second};
    const ElemType src_elem = program_.tensors[src->second].elem;
    c.compute = device == TensorDevice::Npu     ? compute
                : src_elem == ElemType::AsGraph ? ElemType::Float32
                                                : src_elem;
    c.outputs = {tensorOn(v, device, compute)};
    push(std::move(c));
    return where_.at({&v, device});
  }

  void push(Task t) {
    t.id = static_cast<uint32_t>(program_.tasks.size());
    program_.tasks.push_back(std::move(t));
  }

  // Values of the task read outside it (or graph outputs), in node order.
  static std::vector<const Value*> escapingOutputs(const perf::TaskNodes& t) {
    std::set<const Node*> inside(t.nodes.begin(), t.nodes.end());
    std::vector<const Value*> out;
    for (const Node* n : t.nodes)
      for (const Value* v : n->outputs()) {
        bool escapes = v->isGraphOutput();
        for (const Use& u : v->uses()) escapes = escapes || !inside.count(u.user);
        if (escapes) out.push_back(v);
      }
    return out;
  }

  void bindIo(const perf::TaskNodes& t, TensorDevice device, Task& task) {
    for (const Value* v : perf::externalInputs(t))
      if (!v->isConstant()) task.inputs.push_back(requireOn(*v, device, task.compute));
    for (const Value* v : escapingOutputs(t)) task.outputs.push_back(tensorOn(*v, device, task.compute));
  }

  void lowerNpu(const perf::TaskNodes& t) {
    const Node& anchor = *t.nodes.front();
    Task task;
    task.kind = TaskKind::Npu;
    task.pattern = t.op_type;
    task.compute = computeOf(anchor);
    for (const Node* n : t.nodes) task.nodes.push_back(node_index_.at(n));
    const NpuDType dt = computableDType(soc_, npuDTypeOfElem(task.compute));
    if (perf::isMacOp(anchor)) {
      const perf::MacOpShape shape = perf::macOpShape(anchor);
      const perf::CostModel& model = costModel(dt);
      const perf::TilingDecision d = perf::chooseTiling(model, shape, dt, options_.tiling_cache);
      task.tile.tiled = true;
      task.tile.oc_block = d.tiling.oc_block;
      task.tile.tile_rows = d.tiling.tile_rows;
      task.tile.spatial_outer = d.tiling.spatial_outer;
      task.tile.tiles = model.macTask(shape, d.tiling, dt).tiles;
    }
    bindIo(t, TensorDevice::Npu, task);
    task.pipeline = pipelines_.intern(t.op_type, canonicalTaskEncoding(t.nodes, task.compute, task.tile));
    packWeights(anchor, dt, task);
    push(std::move(task));
  }

  void lowerCpu(const perf::TaskNodes& t, const PartitionReport& placement) {
    const Node& n = *t.nodes.front();
    Task task;
    task.kind = TaskKind::Cpu;
    task.pattern = n.opType();
    task.compute = ElemType::Float32;
    task.nodes = {node_index_.at(&n)};
    CpuOp op;
    op.node = node_index_.at(&n);
    op.op_type = n.opType();
    const NodePlacement& p = placement.placementOf(&n);
    op.reason = std::string(placementReasonName(p.reason)) + (p.detail.empty() ? "" : ": " + p.detail);
    task.cpu_op = static_cast<uint32_t>(program_.cpu_ops.size());
    program_.cpu_ops.push_back(std::move(op));
    bindIo(t, TensorDevice::Host, task);
    push(std::move(task));
  }

  // Constant weights of a MAC task in the NPU's NC1HWC2 layout: the integers the simulator
  // quantizes them to (quantized nodes; int8, int16, or int4 nibbles + group multipliers, per the
  // plan entry's dtype: quantizedWeightBytes), IEEE half otherwise, in the view npuWeightView gives (a
  // depthwise weight's channels are the vector lanes; a 2-D Gemm / MatMul weight is a 1x1 conv with K input
  // channels).
  void packWeights(const Node& anchor, NpuDType dt, Task& task) {
    const std::optional<NpuWeightView> view = npuWeightView(anchor);
    if (!view) return;
    const Value* w = anchor.input(1);
    const Shape& s = w->shape();
    PackedWeightRef ref;
    const bool transpose = view->transposed;  // the weight is [K, N]: lanes must run along K
    ref.dims = view->dims;
    ref.c2 = static_cast<uint32_t>(
        soc_.alignment(dt, view->depthwise ? AlignmentRole::Depthwise : AlignmentRole::ConvInput));
    ref.present = true;
    std::string logical;      // row-major weight bytes in the NPU element type, in `s` order
    std::string multipliers;  // int4: the u8 group multipliers, appended after the nibbles
    if (isQuantizedElem(task.compute)) {
      const quant::QuantizedWeights qw = quant::quantizeNodeWeights(anchor, *options_.plan);
      const quant::TensorQuant& entry = options_.plan->at(w->name());
      ref.elem = quantizedWeightElem(entry, w->name());
      logical = quantizedWeightBytes(qw.values, ref.elem, w->name());
      if (ref.elem == ElemType::Int4) {
        for (int32_t m : entry.group_multipliers) {
          if (m < 1 || m > 255)
            throw ConfigError(
                fmt::format("weight '{}': group multiplier {} is outside [1, 255]", w->name(), m));
          multipliers.push_back(static_cast<char>(static_cast<uint8_t>(m)));
        }
        ref.multipliers = static_cast<uint32_t>(multipliers.size());
      }
    } else {
      const Tensor& f = w->constant();
      const float* src = static_cast<const float*>(f.raw());
      logical.resize(static_cast<size_t>(f.numel()) * sizeof(uint16_t));
      for (int64_t i = 0; i < f.numel(); ++i) {
        const uint16_t h = floatToHalf(src[i]);
        std::memcpy(&logical[static_cast<size_t>(i) * sizeof h], &h, sizeof h);
      }
      ref.elem = ElemType::Float16;
    }
    const size_t elem_bytes = packedElemBytes(ref.elem);
    if (transpose) logical = transposeElements(logical, s[0], s[1], elem_bytes);
    std::string packed = packNc1hwc2(logical.data(), ref.dims, ref.c2, elem_bytes);
    if (ref.elem == ElemType::Int4)
      packed = packInt4(reinterpret_cast<const int8_t*>(packed.data()), packed.size()) + multipliers;
    std::string& section = packed_weights_;
    section.resize((section.size() + blob::kBlobAlignment - 1) / blob::kBlobAlignment * blob::kBlobAlignment,
                   '\0');
    ref.offset = section.size();
    ref.size = packed.size();
    section += packed;
    task.weights = ref;
  }

  const perf::CostModel& costModel(NpuDType dt) {
    auto it = models_.find(dt);
    if (it == models_.end()) {
      const int64_t cores = options_.single_core_mode ? 1 : soc_.npu.cores;
      it = models_.emplace(dt, std::make_unique<perf::CostModel>(soc_, dt, cores)).first;
      // The tiling weighs the weight bytes the scheme stores (eval_perf costs the same way).
      if (options_.plan) it->second->setWeightFormat(perf::WeightFormat::of(options_.plan->scheme));
    }
    return *it->second;
  }

  const Graph& graph_;
  const SocProfile& soc_;
  const LowerOptions& options_;
  std::map<const Node*, uint32_t> node_index_;
  std::map<std::pair<const Value*, TensorDevice>, uint32_t> where_;
  std::map<NpuDType, std::unique_ptr<perf::CostModel>> models_;
  PipelineTable pipelines_;
  LoweredProgram program_;
  std::string packed_weights_;  // NWGT as it grows; the program's (shared, immutable) bytes at the end
};

}  // namespace

LoweredProgram lowerGraph(const Graph& graph, const SocProfile& soc, const LowerOptions& options) {
  return Lowerer(graph, soc, options).run();
}

}  // namespace npuc::lower
