// The lowered program: what the NPU runtime executes, in order. NPU tasks (one per fusion group
// or single NPU node, with its tiling and its shared pipeline), CPU ops (host kernels), and the
// explicit Convert steps at every NPU<->host boundary (quantize + NCHW -> NC1HWC2 on the way in,
// dequantize + NC1HWC2 -> NCHW on the way out). It refers to the graph it was lowered from by node
// index (graph order) and value name; the blob stores it in the TASK, PIPE, CPUO and NWGT sections
// (docs/blob_format.md).
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "blob/blob_format.h"
#include "common/shared_bytes.h"

namespace npuc::lower {

// Packed NPU weights (conv weights in NC1HWC2, each 64-byte aligned). Required when the graph
// stores weights only here (blob format 2.0, NpuPacked constants), else optional.
constexpr uint32_t kSectionNpuWeights = blob::kSectionNpuWeights;
// "No entry" in a u32 index field (no pipeline, no CPU op, no tensor).
constexpr uint32_t kNoIndex = 0xFFFFFFFFu;

enum class TaskKind : uint8_t { Npu = 0, Cpu = 1, Convert = 2 };
const char* taskKindName(TaskKind k);

// Where a tensor lives and how its elements are laid out there.
enum class TensorDevice : uint8_t { Npu = 0, Host = 1 };
enum class TensorLayout : uint8_t {
  Nchw = 0,     // plain row-major, the IR's layout
  Nc1hwc2 = 1,  // channels split into C1 blocks of C2 (zero padded): [N, C1, H, W, C2]
};
// Storage element type of a tensor or of packed weights. Int16: the activations of the a16 schemes
// (w8a16, w16a16i, w4a16) and w16a16i's weights. Int4: w4a16's weights, two per byte (low nibble =
// even element, two's complement) followed by the u8 group multipliers (docs/blob_format.md).
enum class ElemType : uint8_t { Float32 = 0, Int8 = 1, Float16 = 2, AsGraph = 3, Int16 = 4, Int4 = 5 };
const char* elemTypeName(ElemType t);

struct ProgramTensor {
  std::string value;  // the graph value it holds
  TensorDevice device = TensorDevice::Host;
  TensorLayout layout = TensorLayout::Nchw;
  ElemType elem = ElemType::Float32;
  uint32_t c2 = 0;  // block size when layout is Nc1hwc2, else 0
  bool operator==(const ProgramTensor& o) const {
    return value == o.value && device == o.device && layout == o.layout && elem == o.elem && c2 == o.c2;
  }
};

// How a MAC task is split: output-channel blocks x row bands (perf/tiling.h chose it).
struct TileConfig {
  bool tiled = false;  // false: not a MAC task (no tiling)
  int64_t oc_block = 0;
  int64_t tile_rows = 0;
  bool spatial_outer = false;
  int64_t tiles = 1;
  bool operator==(const TileConfig& o) const {
    return tiled == o.tiled && oc_block == o.oc_block && tile_rows == o.tile_rows &&
           spatial_outer == o.spatial_outer && tiles == o.tiles;
  }
};

enum class ConvertDirection : uint8_t { ToNpu = 0, ToHost = 1 };

// A boundary step: one tensor re-laid out (and re-typed: quantize / dequantize) for the device
// that reads it next.
struct ConvertStep {
  ConvertDirection direction = ConvertDirection::ToNpu;
  bool operator==(const ConvertStep& o) const { return direction == o.direction; }
};

// Where a task's packed weights sit in the NWGT section.
struct PackedWeightRef {
  bool present = false;
  uint64_t offset = 0;  // from the section start, a multiple of 64
  uint64_t size = 0;
  TensorLayout layout = TensorLayout::Nc1hwc2;
  ElemType elem = ElemType::Int8;
  uint32_t c2 = 0;
  std::array<int64_t, 4> dims{};  // the logical [N, C, H, W] view that was packed
  // Int4 only: the u8 group multipliers after the nibbles (output channel major: [c * G + g]).
  uint32_t multipliers = 0;
  bool operator==(const PackedWeightRef& o) const {
    return present == o.present && offset == o.offset && size == o.size && layout == o.layout &&
           elem == o.elem && c2 == o.c2 && dims == o.dims && multipliers == o.multipliers;
  }
};

struct Task {
  uint32_t id = 0;  // position in the program
  TaskKind kind = TaskKind::Npu;
  std::vector<uint32_t> nodes;           // graph node indices (graph order); empty for a Convert
  std::string pattern;                   // "Conv+Relu+Add", the op type, or "Convert"
  ElemType compute = ElemType::Float32;  // Int8 / Int16 / Float16 on the NPU, Float32 on the host
  TileConfig tile;
  uint32_t pipeline = kNoIndex;  // NPU tasks: index into LoweredProgram::pipelines
  uint32_t cpu_op = kNoIndex;    // CPU tasks: index into LoweredProgram::cpu_ops
  std::vector<uint32_t> inputs;  // tensor ids (activations only; weights are bound per task)
  std::vector<uint32_t> outputs;
  ConvertStep convert;  // meaningful for kind Convert
  PackedWeightRef weights;
  bool operator==(const Task& o) const {
    return id == o.id && kind == o.kind && nodes == o.nodes && pattern == o.pattern && compute == o.compute &&
           tile == o.tile && pipeline == o.pipeline && cpu_op == o.cpu_op && inputs == o.inputs &&
           outputs == o.outputs && convert == o.convert && weights == o.weights;
  }
};

// A compiled NPU kernel configuration shared by every task whose canonical description is equal.
struct Pipeline {
  std::array<uint8_t, 16> digest{};  // XXH3-128 of `params`
  std::string op_type;               // the task pattern
  std::string params;                // canonical encoding (pipeline_dedup.h)
  bool operator==(const Pipeline& o) const {
    return digest == o.digest && op_type == o.op_type && params == o.params;
  }
};

// A node the host runs, with why it is not on the NPU.
struct CpuOp {
  uint32_t node = 0;
  std::string op_type;
  std::string reason;
  bool operator==(const CpuOp& o) const {
    return node == o.node && op_type == o.op_type && reason == o.reason;
  }
};

struct LoweredProgram {
  std::vector<ProgramTensor> tensors;
  std::vector<Task> tasks;  // execution order
  std::vector<Pipeline> pipelines;
  std::vector<CpuOp> cpu_ops;
  // The NWGT section payload; a loaded blob's is a view of its file mapping, shared by every copy.
  SharedBytes packed_weights;

  bool operator==(const LoweredProgram& o) const {
    return tensors == o.tensors && tasks == o.tasks && pipelines == o.pipelines && cpu_ops == o.cpu_ops &&
           packed_weights == o.packed_weights;
  }
};

// Counts a user (and `npuc info`) wants to see.
struct ProgramSummary {
  int64_t tasks = 0;
  int64_t npu_tasks = 0;
  int64_t cpu_ops = 0;
  int64_t converts = 0;
  int64_t pipelines = 0;    // unique
  double reuse_rate = 0;    // 1 - unique pipelines / NPU tasks (0 without NPU tasks)
  int64_t tiled_tasks = 0;  // NPU tasks split into more than one tile
  int64_t total_tiles = 0;
  int64_t packed_weight_bytes = 0;
};
ProgramSummary summarize(const LoweredProgram& program);

}  // namespace npuc::lower
