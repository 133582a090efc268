// verifyProgram (lower.h) and summarize / names (lowered_program.h).
#include <fmt/format.h>

#include <set>

#include "common/error.h"
#include "lower/lower.h"
#include "lower/pipeline_dedup.h"

namespace npuc::lower {

const char* taskKindName(TaskKind k) {
  switch (k) {
    case TaskKind::Npu: return "npu";
    case TaskKind::Cpu: return "cpu";
    case TaskKind::Convert: return "convert";
  }
  return "?";
}

const char* elemTypeName(ElemType t) {
  switch (t) {
    case ElemType::Float32: return "float32";
    case ElemType::Int8: return "int8";
    case ElemType::Float16: return "float16";
    case ElemType::AsGraph: return "as-graph";
    case ElemType::Int16: return "int16";
    case ElemType::Int4: return "int4";
  }
  return "?";
}

ProgramSummary summarize(const LoweredProgram& program) {
  ProgramSummary s;
  s.tasks = static_cast<int64_t>(program.tasks.size());
  for (const Task& t : program.tasks) {
    s.npu_tasks += t.kind == TaskKind::Npu;
    s.cpu_ops += t.kind == TaskKind::Cpu;
    s.converts += t.kind == TaskKind::Convert;
    if (t.kind == TaskKind::Npu) {
      s.total_tiles += t.tile.tiles;
      s.tiled_tasks += t.tile.tiles > 1;
    }
  }
  s.pipelines = static_cast<int64_t>(program.pipelines.size());
  s.reuse_rate = reuseRate(s.pipelines, s.npu_tasks);
  s.packed_weight_bytes = static_cast<int64_t>(program.packed_weights.size());
  return s;
}

namespace {

[[noreturn]] void fail(const Task& t, const std::string& message) {
  throw BlobError(
      fmt::format("lowered program, task {} ({} {}): {}", t.id, taskKindName(t.kind), t.pattern, message));
}

}  // namespace

void verifyProgram(const LoweredProgram& program, const Graph& graph) {
  const std::vector<Node*> nodes = graph.nodeList();
  for (const ProgramTensor& t : program.tensors)
    if (!graph.findValue(t.value))
      throw BlobError("lowered program: tensor of value '" + t.value + "' names no value of the graph");

  std::vector<bool> defined(program.tensors.size(), false);
  for (size_t i = 0; i < program.tensors.size(); ++i) {
    const Value* v = graph.findValue(program.tensors[i].value);
    if (v->isGraphInput() && program.tensors[i].device == TensorDevice::Host) defined[i] = true;
  }
  std::vector<int> covered(nodes.size(), 0);
  for (size_t i = 0; i < program.tasks.size(); ++i) {
    const Task& t = program.tasks[i];
    if (t.id != i) fail(t, fmt::format("its id is not its position {}", i));
    std::string pattern;
    for (uint32_t n : t.nodes) {
      if (n >= nodes.size()) fail(t, fmt::format("node index {} is past the graph's {}", n, nodes.size()));
      ++covered[n];
      pattern += (pattern.empty() ? "" : "+") + nodes[n]->opType();
    }
    if (t.kind != TaskKind::Convert && pattern != t.pattern) fail(t, "its nodes are " + pattern);
    if (t.kind == TaskKind::Npu && program.pipelines.at(t.pipeline).op_type != t.pattern)
      fail(t, "its pipeline is for " + program.pipelines[t.pipeline].op_type);
    if (t.kind == TaskKind::Cpu && program.cpu_ops.at(t.cpu_op).node != t.nodes.at(0))
      fail(t, "its CPU op entry is for another node");
    if (t.kind == TaskKind::Convert &&
        (t.inputs.size() != 1 || t.outputs.size() != 1 ||
         program.tensors[t.inputs[0]].value != program.tensors[t.outputs[0]].value))
      fail(t, "a convert must map one tensor to one copy of the same value");
    for (uint32_t in : t.inputs)
      if (!defined.at(in))
        fail(t, "reads tensor '" + program.tensors[in].value + "' before any task writes it");
    for (uint32_t out : t.outputs) {
      if (defined.at(out)) fail(t, "writes tensor '" + program.tensors[out].value + "' a second time");
      defined[out] = true;
    }
  }
  for (size_t n = 0; n < nodes.size(); ++n)
    if (covered[n] != 1)
      throw BlobError(fmt::format("lowered program: node '{}' ({}) is in {} tasks, expected exactly one",
                                  nodes[n]->name(), nodes[n]->opType(), covered[n]));
  for (const Value* v : graph.outputs()) {
    if (v->isConstant()) continue;
    bool on_host = false;
    for (size_t i = 0; i < program.tensors.size(); ++i)
      on_host = on_host || (defined[i] && program.tensors[i].value == v->name() &&
                            program.tensors[i].device == TensorDevice::Host);
    if (!on_host) throw BlobError("lowered program: graph output '" + v->name() + "' never reaches the host");
  }
}

}  // namespace npuc::lower

namespace npuc::lower {

void verifyProgramPlacement(const LoweredProgram& program, const Graph& graph,
                            const PartitionReport& placement) {
  const std::vector<Node*> nodes = graph.nodeList();
  for (const Task& t : program.tasks) {
    if (t.kind == TaskKind::Convert) continue;
    const Device device = t.kind == TaskKind::Npu ? Device::Npu : Device::Cpu;
    for (uint32_t n : t.nodes) {
      if (n >= nodes.size()) fail(t, fmt::format("node index {} is past the graph", n));
      // partitionGraph lists nodes in graph order; deviceOf (a scan) only if this one is not.
      const bool in_order = n < placement.nodes.size() && placement.nodes[n].node == nodes[n];
      if ((in_order ? placement.nodes[n].device : placement.deviceOf(nodes[n])) != device) {
        fail(t, "node '" + nodes[n]->name() + "' (" + nodes[n]->opType() + ") is placed on the " +
                    (device == Device::Npu ? "CPU" : "NPU") +
                    " by the blob's SoC and recorded op_target, but the program runs it on the " +
                    (device == Device::Npu ? "NPU" : "CPU"));
      }
    }
  }
}

}  // namespace npuc::lower
