// ProgramRuntime's init: places every program tensor (arena offset, I/O buffer, caller's tensor),
// checks it fits its planned bytes, orders the tasks and checks the plan's live ranges cover
// every task that touches a buffer. Everything a run needs is decided here, once.
#include <algorithm>
#include <map>
#include <set>

#include "common/error.h"
#include "memory/concat_in_place.h"
#include "runtime/program_runtime.h"

namespace npuc::runtime {

namespace {

constexpr uint64_t kAlign = kTensorAlignment;  // I/O buffers and decode scratch, as the arena

uint64_t alignUp(uint64_t x) {
  return (x + kAlign - 1) / kAlign * kAlign;
}

memory::BufferFormat formatOf(lower::TensorDevice d) {
  return d == lower::TensorDevice::Npu ? memory::BufferFormat::Npu : memory::BufferFormat::Host;
}

const char* deviceName(lower::TensorDevice d) {
  return d == lower::TensorDevice::Npu ? "npu" : "host";
}

std::string taskLabel(const lower::Task& t) {
  return "task " + std::to_string(t.id) + " (" + std::string(lower::taskKindName(t.kind)) + " " + t.pattern +
         ")";
}

}  // namespace

ProgramRuntime::ProgramRuntime(std::shared_ptr<const quant::QuantizedExecutor> sim,
                               lower::LoweredProgram program, memory::NpuMemoryPlan plan)
    : sim_(std::move(sim)), program_(std::move(program)), plan_(std::move(plan)) {
  prepare();
}

void ProgramRuntime::prepare() {
  const Graph& graph = sim_->graph();
  std::map<std::pair<std::string, memory::BufferFormat>, const memory::PlannedBuffer*> planned;
  for (const memory::PlannedBuffer& b : plan_.buffers) planned[{b.value, b.format}] = &b;

  // ---- placements: one per program tensor
  for (const lower::ProgramTensor& pt : program_.tensors) {
    Placement p;
    p.value = pt.value;
    p.device = pt.device;
    const Value* v = graph.findValue(pt.value);
    p.slot = sim_->slotOf(pt.value);
    if (!v || p.slot < 0)
      throw BlobError("program runtime: tensor '" + pt.value + "' is not a value of the graph");
    // The simulator's representation (QuantizedExecutor::simDType: a float value with a plan entry
    // is int8 in INT8 mode, int16 with a 16-bit-activation dtype; other floats are half-rounded
    // float32; non-float values as they are).
    p.dtype = sim_->simDType(*v);
    p.quantized = v->dtype() == DType::Float32 && (p.dtype == DType::Int8 || p.dtype == DType::Int16);
    if (p.quantized) p.params = sim_->plan().at(pt.value).params(pt.value);
    p.shape = v->shape();
    p.numel = shapeNumel(p.shape);
    for (size_t i = 0; i < graph.inputs().size(); ++i)
      if (graph.inputs()[i] == v && pt.device == lower::TensorDevice::Host)
        p.input_index = static_cast<int>(i);

    auto it = planned.find({pt.value, formatOf(pt.device)});
    if (it != planned.end()) {
      const memory::PlannedBuffer& b = *it->second;
      p.half = p.dtype == DType::Float32 && b.dtype == DType::Float16;
      const uint64_t needed = static_cast<uint64_t>(p.numel) * (p.half ? 2 : dtypeSize(p.dtype));
      if (needed > b.bytes) {
        throw ResourceError("program runtime: value '" + pt.value + "' (" + deviceName(pt.device) +
                            ") needs " + std::to_string(needed) + " bytes as " +
                            (p.half ? "float16" : dtypeName(p.dtype)) + shapeStr(p.shape) +
                            ", the memory plan gives it " + std::to_string(b.bytes));
      }
      if (b.home == memory::BufferHome::Arena) {
        p.where = Where::Arena;
        p.offset = b.offset;
        p.first = b.first;
        p.last = b.last;
        if (b.offset + b.bytes > plan_.arena_bytes)
          throw BlobError("program runtime: buffer of '" + pt.value + "' ends past the arena");
      } else {
        p.where = Where::Io;
        p.offset = io_bytes_;
        io_bytes_ += alignUp(b.bytes);
      }
    } else if (p.numel == 0) {
      p.where = Where::Empty;
    } else if (p.input_index >= 0) {
      p.where = Where::Caller;  // the caller's input, converted as the simulator converts it
    } else if (v->isGraphOutput() && pt.device == lower::TensorDevice::Host) {
      p.where = Where::Caller;  // the result handed back
      for (size_t i = 0; i < graph.outputs().size(); ++i)
        if (graph.outputs()[i] == v) p.output_index = static_cast<int>(i);
    } else {
      throw BlobError("program runtime: the memory plan has no " + std::string(deviceName(pt.device)) +
                      " buffer for '" + pt.value +
                      "' (the plan was made for another partition than the program's: op_target?)");
    }
    placements_.push_back(std::move(p));
  }

  // ---- the tasks: the memory plan's step of each, Converts moved to their hand-over point
  std::vector<int64_t> producer(program_.tensors.size(), -1);  // program task writing each tensor
  std::vector<int64_t> step(program_.tasks.size(), 0);
  std::vector<const Node*> nodes;
  for (const Node* n : graph.nodes()) nodes.push_back(n);
  if (nodes.size() != sim_->numSteps()) throw BlobError("program runtime: simulator and graph disagree");
  for (const lower::Task& t : program_.tasks) {
    for (uint32_t id : t.inputs)
      if (id >= program_.tensors.size())
        throw BlobError("program runtime: " + taskLabel(t) + " reads no tensor");
    for (uint32_t id : t.outputs) {
      if (id >= program_.tensors.size())
        throw BlobError("program runtime: " + taskLabel(t) + " writes no tensor");
      producer[id] = t.id;
    }
    if (t.kind == lower::TaskKind::Convert) {
      if (t.inputs.size() != 1 || t.outputs.size() != 1)
        throw BlobError("program runtime: " + taskLabel(t) + " must convert one tensor");
      continue;
    }
    if (t.nodes.empty()) throw BlobError("program runtime: " + taskLabel(t) + " has no node");
    for (uint32_t n : t.nodes) {
      if (n >= nodes.size()) throw BlobError("program runtime: " + taskLabel(t) + " names no node");
      step[t.id] = std::max<int64_t>(step[t.id], n);
    }
  }
  std::vector<uint32_t> order;
  std::vector<std::vector<uint32_t>> converts_after(program_.tasks.size());
  for (const lower::Task& t : program_.tasks) {
    if (t.kind != lower::TaskKind::Convert) continue;
    const int64_t from = producer[t.inputs[0]];
    if (from < 0) {
      order.push_back(t.id);  // a graph input: converted before anything runs
    } else if (program_.tasks[static_cast<size_t>(from)].kind == lower::TaskKind::Convert) {
      throw BlobError("program runtime: " + taskLabel(t) + " converts the output of another Convert");
    } else {
      step[t.id] = step[static_cast<size_t>(from)];
      converts_after[static_cast<size_t>(from)].push_back(t.id);
    }
  }
  for (const lower::Task& t : program_.tasks) {
    if (t.kind == lower::TaskKind::Convert) continue;
    order.push_back(t.id);
    for (uint32_t c : converts_after[t.id]) order.push_back(c);
  }

  // ---- prepared tasks, checked against the plan
  const std::set<std::string> containers = plan_.containers();
  int64_t previous_step = 0;
  uint64_t largest_task_values = 0;  // a task's step outputs, held until they are stored
  for (uint32_t id : order) {
    const lower::Task& t = program_.tasks[id];
    PreparedTask pt;
    pt.id = t.id;
    pt.kind = t.kind;
    pt.pattern = t.pattern;
    pt.step = step[id];
    if (pt.step < previous_step) {
      throw BlobError("program runtime: " + taskLabel(t) + " runs at step " + std::to_string(pt.step) +
                      " after a task at step " + std::to_string(previous_step) +
                      ": the memory plan's live ranges assume tasks in step order");
    }
    previous_step = pt.step;
    pt.inputs = t.inputs;
    pt.outputs = t.outputs;
    for (uint32_t n : t.nodes) pt.nodes.push_back(n);
    std::sort(pt.nodes.begin(), pt.nodes.end());  // graph order: producers before readers
    // A Concat that rescales some slice runs (its step reads the slices and its output is stored
    // over them, the rescaled values where they were); one that copies nothing is skipped.
    pt.in_place = t.kind == lower::TaskKind::Npu && pt.nodes.size() == 1 &&
                  memory::concatIsInPlace(*nodes[pt.nodes[0]], containers) &&
                  memory::concatCopiesNothing(*nodes[pt.nodes[0]],
                                              sim_->mode() == quant::SimMode::Int8 ? &sim_->plan() : nullptr);
    for (uint32_t in : pt.in_place ? pt.inputs : std::vector<uint32_t>{})
      if (placements_[in].where != Where::Arena)
        throw BlobError("program runtime: " + taskLabel(t) + " is planned in place but its input '" +
                        placements_[in].value + "' is not in the arena");
    uint64_t scratch = 0;
    for (uint32_t in : pt.inputs) {
      const Placement& p = placements_[in];
      pt.decode_at.push_back(scratch);
      if (p.half) scratch += alignUp(static_cast<uint64_t>(p.numel) * sizeof(float));
      pt.release_slots.push_back(p.slot);
    }
    decode_bytes_ = std::max(decode_bytes_, scratch);
    for (uint32_t out : pt.outputs) {
      const Placement& p = placements_[out];
      if (p.where == Where::Caller && t.kind != lower::TaskKind::Convert)
        throw BlobError("program runtime: " + taskLabel(t) + " writes '" + p.value +
                        "', which has no buffer");
    }
    uint64_t step_values = 0;
    for (uint32_t n : pt.nodes) {
      for (const Value* v : nodes[n]->outputs()) {
        if (!v) continue;
        pt.release_slots.push_back(sim_->slotOf(v->name()));
        step_values += tensorBufferBytes(sim_->simDType(*v), v->shape());
      }
    }
    largest_task_values = std::max(largest_task_values, step_values);
    for (const std::vector<uint32_t>* ids : {&pt.inputs, &pt.outputs}) {
      for (uint32_t tensor : *ids) {
        const Placement& p = placements_[tensor];
        if (p.where == Where::Arena && (pt.step < p.first || pt.step > p.last)) {
          throw BlobError("program runtime: " + taskLabel(t) + " at step " + std::to_string(pt.step) +
                          " touches '" + p.value + "' (" + deviceName(p.device) +
                          "), planned live only in steps " + std::to_string(p.first) + ".." +
                          std::to_string(p.last));
        }
      }
    }
    tasks_.push_back(std::move(pt));
  }

  // ---- graph outputs: read from their planned output buffer (live to the end of the run),
  // else from the host tensor the last Convert hands back.
  for (const Value* v : graph.outputs()) {
    uint32_t chosen = lower::kNoIndex;
    for (uint32_t t = 0; t < placements_.size(); ++t) {
      const Placement& p = placements_[t];
      if (p.value != v->name()) continue;
      if (p.where == Where::Io || p.where == Where::Caller || p.where == Where::Empty) {
        if (chosen == lower::kNoIndex || p.where == Where::Io) chosen = t;
      }
    }
    if (chosen == lower::kNoIndex && !v->isConstant())
      throw BlobError("program runtime: graph output '" + v->name() + "' has no buffer to be read from");
    output_tensors_.push_back(chosen);
  }

  footprint_.add("program activation arena", plan_.arena_bytes, /*pooled=*/true);
  footprint_.add("graph input/output buffers", io_bytes_, /*pooled=*/true);
  footprint_.add("half-decode scratch", decode_bytes_, /*pooled=*/true);
  footprint_.add("largest task's step values", largest_task_values);
  for (const Value* v : graph.outputs())
    footprint_.addTensor("output", v->name(), DType::Float32, v->shape());
}

}  // namespace npuc::runtime
