// Executor: compile (clone, host fusion, kernels, storage assignment, arena plan) once, then run
// many times on pooled per-run contexts.
#include "runtime/executor.h"

#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <unordered_map>

#include "opset/bounded_output.h"
#include "opset/eval.h"
#include "runtime/host_fusion.h"
#include "runtime/host_layout.h"
#include "runtime/memory_planner.h"
#include "runtime/model_stats.h"
#include "runtime/object_pool.h"

namespace npuc {

namespace {

// Where a value's bytes live during a run.
enum class Storage {
  Arena,     // `index` is a byte offset into the activation arena
  Input,     // `index` is a graph input position: the caller's input buffer
  Output,    // `index` is a graph output position: the caller's output buffer
  Constant,  // `data` points at the constant tensor
  Absent,    // an omitted optional input
};

struct Location {
  Storage kind = Storage::Absent;
  size_t index = 0;
  const void* data = nullptr;
};

// One node, compiled.
struct Step {
  const Node* node = nullptr;
  std::unique_ptr<Kernel> kernel;
  std::vector<TensorView> input_types;  // dtype/shape (data filled per context)
  std::vector<TensorView> output_types;
  std::vector<Location> inputs;
  std::vector<Location> outputs;
  bool aliased = false;  // output 0 shares input storage; run() is skipped
};

// A copy done after the steps: graph outputs that are constants, graph inputs, or a value listed
// twice among the outputs.
struct OutputCopy {
  size_t output_slot;
  Location from;
};

// A kernel view slot that points into a caller buffer, patched at the start of every run.
struct CallerSlot {
  size_t step;
  size_t slot;
  bool is_output;  // of the step
  Location from;   // Storage::Input or Storage::Output
};

std::string typeStr(DType dtype, const Shape& shape) {
  return std::string(dtypeName(dtype)) + shapeStr(shape);
}

void requireStaticType(const Value& v) {
  if (!v.shapeIsStatic()) {
    throw ShapeError("value '" + v.name() +
                     "' has no static shape; fix input sizes at load (input_size_list)");
  }
  if (!isStorable(v.dtype())) {
    throw ShapeError("value '" + v.name() + "' has unsupported element type " + dtypeName(v.dtype()));
  }
}

// Checks one caller buffer against what the graph expects; `what` is "input" or "output".
void checkView(const char* what, const IoInfo& info, const TensorView& view) {
  if (view.dtype != info.dtype || view.shape != info.shape) {
    throw InputError(std::string(what) + " '" + info.name + "' expects " + typeStr(info.dtype, info.shape) +
                     ", got " + typeStr(view.dtype, view.shape));
  }
  if (!view.data && shapeNumel(view.shape) > 0) {
    throw InputError(std::string(what) + " '" + info.name + "' has no data (null buffer)");
  }
}

// Heap memory aligned to kTensorAlignment.
struct AlignedDelete {
  void operator()(uint8_t* p) const { std::free(p); }
};
using AlignedBuffer = std::unique_ptr<uint8_t, AlignedDelete>;
AlignedBuffer allocAligned(size_t bytes) {
  const size_t n = alignUp(std::max<size_t>(bytes, 1), kTensorAlignment);
  auto* p = static_cast<uint8_t*>(std::aligned_alloc(kTensorAlignment, n));
  if (!p) throw ResourceError("cannot allocate " + std::to_string(n) + " bytes for the activation arena");
  return AlignedBuffer(p);
}

// Limits the calling thread's OpenMP team (the one oneDNN and npuc's kernels use) to one thread
// for its lifetime when `serial`; the thread's previous setting comes back afterwards.
class SerialOpenMpScope {
 public:
  explicit SerialOpenMpScope(bool serial) : serial_(serial) {
    if (!serial_) return;
    previous_ = omp_get_max_threads();
    omp_set_num_threads(1);
  }
  ~SerialOpenMpScope() {
    if (serial_) omp_set_num_threads(previous_);
  }
  SerialOpenMpScope(const SerialOpenMpScope&) = delete;
  SerialOpenMpScope& operator=(const SerialOpenMpScope&) = delete;

 private:
  bool serial_;
  int previous_ = 1;
};

}  // namespace

// Everything one run needs for itself: the arena (activations, then kernel workspace) and the
// kernel views with every arena and constant pointer already resolved. Only the caller's
// input/output pointers are patched per run.
struct RunContext {
  AlignedBuffer memory;
  void* workspace = nullptr;
  std::vector<std::vector<TensorView>> inputs;   // per step
  std::vector<std::vector<TensorView>> outputs;  // per step
};

struct Executor::Impl {
  std::unique_ptr<Graph> graph;
  std::vector<IoInfo> inputs, outputs;
  std::vector<Step> steps;
  std::vector<OutputCopy> output_copies;
  std::vector<PlannedBuffer> plan;
  MemoryPlanStats stats;
  std::vector<CallerSlot> caller_slots;
  size_t aliased_steps = 0;
  bool serial = false;  // kernels built and run on one OpenMP thread (serial_below_macs)
  std::unique_ptr<ObjectPool<RunContext>> pool;
  RunFootprint footprint;

  Impl(const Graph& g, const ExecutorOptions& options);
  void compileKernels();
  void assignStorage();
  void collectCallerSlots();
  std::unique_ptr<RunContext> makeContext() const;
  void bindCaller(RunContext& ctx, const std::vector<TensorView>& in,
                  const std::vector<TensorView>& out) const;
  void copyOutputs(const std::vector<TensorView>& in, const std::vector<TensorView>& out) const;
  void checkCaller(const std::vector<TensorView>& in, const std::vector<TensorView>& out) const;
  // One run on caller buffers already checked. With `step_ms`, adds each step's wall time to it
  // (a separate loop, so unprofiled runs read no clock).
  void runSteps(const std::vector<TensorView>& in, const std::vector<TensorView>& out,
                std::vector<double>* step_ms) const;
};

Executor::Impl::Impl(const Graph& g, const ExecutorOptions& options) : graph(g.clone()) {
  if (options.host_fusion) {
    simplifyForHost(*graph);
    fuseConvActivations(*graph, OpRegistry::instance());
    if (options.channels_last) assignChannelsLastLayouts(*graph, OpRegistry::instance());
  }
  graph->renumber();
  checkBoundedOutputs(*graph);  // a data-dependent size may only reach a graph output
  for (Value* v : graph->inputs()) {
    requireStaticType(*v);
    inputs.push_back({v->name(), v->dtype(), v->shape()});
  }
  for (Value* v : graph->outputs()) {
    requireStaticType(*v);
    outputs.push_back({v->name(), v->dtype(), v->shape()});
  }
  for (const Value* v : graph->values()) {
    if (v->isConstant()) stats.constant_bytes += v->constant().nbytes();
  }
  serial = computeModelStats(*graph).macs < options.serial_below_macs;
  {
    // Kernels size their thread split when built (oneDNN primitives, per-thread workspaces).
    SerialOpenMpScope scope(serial);
    compileKernels();
  }
  assignStorage();
  collectCallerSlots();
  pool = std::make_unique<ObjectPool<RunContext>>([this] { return makeContext(); });
  for (const IoInfo& o : outputs) footprint.addTensor("output", o.name, o.dtype, o.shape);
  footprint.add("activation arena and kernel workspace",
                alignUp(stats.arena_bytes, kTensorAlignment) + stats.workspace_bytes, /*pooled=*/true);
}

void Executor::Impl::compileKernels() {
  const OpRegistry& registry = OpRegistry::instance();
  for (Node* n : graph->nodes()) {
    Step step;
    step.node = n;
    try {
      const OpSchema& schema = registry.require(*n);
      if (!schema.make_kernel) throw UnsupportedOpError(nodeErrorPrefix(*n) + "op has no host kernel");
      KernelContext kctx{*n, {}, {}};
      for (Value* in : n->inputs()) {
        if (!in) {
          kctx.input_types.emplace_back();
          continue;
        }
        requireStaticType(*in);
        void* data = in->isConstant() ? const_cast<void*>(in->constant().raw()) : nullptr;
        kctx.input_types.emplace_back(data, in->dtype(), in->shape());
      }
      for (Value* out : n->outputs()) {
        requireStaticType(*out);
        kctx.output_types.emplace_back(nullptr, out->dtype(), out->shape());
      }
      step.kernel = schema.make_kernel(kctx);
      if (!step.kernel) throw UnsupportedOpError(nodeErrorPrefix(*n) + "the kernel factory refused the node");
      step.input_types = std::move(kctx.input_types);
      step.output_types = std::move(kctx.output_types);
    } catch (const Error&) {
      rethrowWithNodeContext(*n);
    }
    stats.workspace_bytes = std::max(stats.workspace_bytes, step.kernel->workspaceBytes());
    steps.push_back(std::move(step));
  }
}

namespace {

// Where every value lives, built node by node in topological order; arena values get their
// offsets once all live ranges are known.
class StorageAssignment {
 public:
  explicit StorageAssignment(const Graph& g) {
    for (size_t i = 0; i < g.inputs().size(); ++i) where_[g.inputs()[i]] = {Storage::Input, i, nullptr};
    for (const Value* v : g.values()) {
      if (v->isConstant()) where_[v] = {Storage::Constant, 0, v->constant().raw()};
    }
  }

  bool assigned(const Value* v) const { return where_.count(v) != 0; }
  Location at(const Value* v) const { return v ? where_.at(v) : Location{}; }
  void set(const Value* v, Location l) { where_[v] = l; }

  // `step` reads `v`: an arena value's live range extends to it.
  void noteRead(const Value* v, int64_t step) {
    auto b = v ? buffer_of_.find(v) : buffer_of_.end();
    if (b != buffer_of_.end()) requests_[b->second].last = step;
  }
  // `v` gets a fresh arena buffer written at `step`.
  void placeInArena(const Value* v, size_t bytes, int64_t step) {
    buffer_of_[v] = requests_.size();
    where_[v] = {Storage::Arena, 0, nullptr};  // the offset is known once planned
    requests_.push_back({bytes, step, step});
    buffers_.push_back({{v->name()}, 0, bytes, step, step});
  }
  // `alias` shares the storage of `src` (and, in the arena, its buffer and live range).
  void alias(const Value* alias, const Value* src) {
    where_[alias] = where_.at(src);
    auto b = buffer_of_.find(src);
    if (b == buffer_of_.end()) return;
    buffer_of_[alias] = b->second;
    buffers_[b->second].values.push_back(alias->name());
  }

  // Places the arena buffers; returns the plan with final offsets and live ranges.
  std::vector<PlannedBuffer> plan(MemoryPlanStats& stats) {
    const MemoryPlan placed = planMemory(requests_, kTensorAlignment);
    stats.arena_bytes = placed.arena_bytes;
    stats.lower_bound_bytes = placed.lower_bound_bytes;
    offsets_ = placed.offsets;
    for (size_t b = 0; b < buffers_.size(); ++b) {
      buffers_[b].offset = offsets_[b];
      buffers_[b].last_step = requests_[b].last;
    }
    return buffers_;
  }
  // `l` (the location of `v`) with its arena offset filled in; call after plan().
  Location resolved(const Value* v, Location l) const {
    auto b = v ? buffer_of_.find(v) : buffer_of_.end();
    if (b != buffer_of_.end()) l.index = offsets_[b->second];
    return l;
  }

 private:
  std::unordered_map<const Value*, Location> where_;
  std::unordered_map<const Value*, size_t> buffer_of_;  // arena values -> buffer index
  std::vector<BufferRequest> requests_;
  std::vector<PlannedBuffer> buffers_;
  std::vector<size_t> offsets_;
};

// A node may skip its kernel and let output 0 share input `aliasInput()`'s storage when the
// kernel is a pure reinterpretation (same bytes), it has a single output, and that output is not
// a graph output (which must land in the caller's buffer).
const Value* aliasSource(const Step& step, const StorageAssignment& storage) {
  const int alias = step.kernel->aliasInput();
  const Node& n = *step.node;
  if (alias < 0 || static_cast<size_t>(alias) >= n.numInputs() || n.numOutputs() != 1) return nullptr;
  const Value* src = n.input(static_cast<size_t>(alias));
  if (!src || storage.assigned(n.output(0))) return nullptr;
  if (step.input_types[alias].nbytes() != step.output_types[0].nbytes()) return nullptr;
  return src;
}

}  // namespace

void Executor::Impl::assignStorage() {
  StorageAssignment storage(*graph);
  for (size_t i = 0; i < graph->outputs().size(); ++i) {
    const Value* v = graph->outputs()[i];
    if (storage.assigned(v)) {
      output_copies.push_back({i, storage.at(v)});  // a constant, a graph input, or listed twice
    } else {
      storage.set(v, {Storage::Output, i, nullptr});
    }
  }
  for (size_t s = 0; s < steps.size(); ++s) {
    Step& step = steps[s];
    const Node& n = *step.node;
    const auto t = static_cast<int64_t>(s);
    for (Value* in : n.inputs()) storage.noteRead(in, t);
    if (const Value* src = aliasSource(step, storage)) {
      storage.alias(n.output(0), src);
      step.aliased = true;
      ++aliased_steps;
    }
    for (size_t o = 0; o < n.numOutputs(); ++o) {
      if (!storage.assigned(n.output(o))) storage.placeInArena(n.output(o), step.output_types[o].nbytes(), t);
    }
  }
  plan = storage.plan(stats);
  for (Step& step : steps) {
    for (Value* in : step.node->inputs()) step.inputs.push_back(storage.resolved(in, storage.at(in)));
    for (Value* out : step.node->outputs()) step.outputs.push_back(storage.resolved(out, storage.at(out)));
  }
}

void Executor::Impl::collectCallerSlots() {
  auto isCaller = [](const Location& l) { return l.kind == Storage::Input || l.kind == Storage::Output; };
  for (size_t s = 0; s < steps.size(); ++s) {
    for (size_t i = 0; i < steps[s].inputs.size(); ++i) {
      if (isCaller(steps[s].inputs[i])) caller_slots.push_back({s, i, false, steps[s].inputs[i]});
    }
    for (size_t o = 0; o < steps[s].outputs.size(); ++o) {
      if (isCaller(steps[s].outputs[o])) caller_slots.push_back({s, o, true, steps[s].outputs[o]});
    }
  }
}

std::unique_ptr<RunContext> Executor::Impl::makeContext() const {
  auto ctx = std::make_unique<RunContext>();
  const size_t activations = alignUp(stats.arena_bytes, kTensorAlignment);
  ctx->memory = allocAligned(activations + stats.workspace_bytes);
  ctx->workspace = ctx->memory.get() + activations;
  auto resolve = [&](const Location& l, TensorView& view) {
    if (l.kind == Storage::Arena) view.data = ctx->memory.get() + l.index;
    if (l.kind == Storage::Constant) view.data = const_cast<void*>(l.data);
  };
  ctx->inputs.reserve(steps.size());
  ctx->outputs.reserve(steps.size());
  for (const Step& step : steps) {
    ctx->inputs.push_back(step.input_types);
    ctx->outputs.push_back(step.output_types);
    for (size_t i = 0; i < step.inputs.size(); ++i) resolve(step.inputs[i], ctx->inputs.back()[i]);
    for (size_t o = 0; o < step.outputs.size(); ++o) resolve(step.outputs[o], ctx->outputs.back()[o]);
  }
  return ctx;
}

void Executor::Impl::bindCaller(RunContext& ctx, const std::vector<TensorView>& in,
                                const std::vector<TensorView>& out) const {
  for (const CallerSlot& c : caller_slots) {
    void* data = (c.from.kind == Storage::Input ? in : out)[c.from.index].data;
    (c.is_output ? ctx.outputs : ctx.inputs)[c.step][c.slot].data = data;
  }
}

void Executor::Impl::copyOutputs(const std::vector<TensorView>& in,
                                 const std::vector<TensorView>& out) const {
  for (const OutputCopy& c : output_copies) {
    const void* src = c.from.kind == Storage::Constant ? c.from.data
                      : c.from.kind == Storage::Input  ? in[c.from.index].data
                                                       : out[c.from.index].data;
    const TensorView& dst = out[c.output_slot];
    if (dst.data != src) std::memcpy(dst.data, src, dst.nbytes());
  }
}

// ---------------------------------------------------------------- Executor

Executor::Executor(const Graph& graph) : Executor(graph, ExecutorOptions{}) {}
Executor::Executor(const Graph& graph, const ExecutorOptions& options)
    : impl_(std::make_unique<Impl>(graph, options)) {}
Executor::~Executor() = default;

const std::vector<IoInfo>& Executor::inputs() const {
  return impl_->inputs;
}
const std::vector<IoInfo>& Executor::outputs() const {
  return impl_->outputs;
}
const MemoryPlanStats& Executor::memoryStats() const {
  return impl_->stats;
}
const std::vector<PlannedBuffer>& Executor::memoryPlan() const {
  return impl_->plan;
}
const Graph& Executor::compiledGraph() const {
  return *impl_->graph;
}
size_t Executor::numAliasedSteps() const {
  return impl_->aliased_steps;
}

void Executor::Impl::checkCaller(const std::vector<TensorView>& in,
                                 const std::vector<TensorView>& out) const {
  if (in.size() != inputs.size()) {
    throw InputError("the model has " + std::to_string(inputs.size()) + " input(s), got " +
                     std::to_string(in.size()));
  }
  if (out.size() != outputs.size()) {
    throw InputError("the model has " + std::to_string(outputs.size()) + " output(s), got " +
                     std::to_string(out.size()) + " output buffer(s)");
  }
  for (size_t i = 0; i < in.size(); ++i) checkView("input", inputs[i], in[i]);
  for (size_t i = 0; i < out.size(); ++i) checkView("output", outputs[i], out[i]);
}

void Executor::Impl::runSteps(const std::vector<TensorView>& in, const std::vector<TensorView>& out,
                              std::vector<double>* step_ms) const {
  auto ctx = pool->acquire();
  bindCaller(*ctx, in, out);
  SerialOpenMpScope scope(serial);
  if (!step_ms) {
    for (size_t s = 0; s < steps.size(); ++s) {
      if (steps[s].aliased) continue;
      steps[s].kernel->run(KernelIO{ctx->inputs[s], ctx->outputs[s], ctx->workspace});
    }
  } else {
    using Clock = std::chrono::steady_clock;
    for (size_t s = 0; s < steps.size(); ++s) {
      if (steps[s].aliased) continue;
      const Clock::time_point t0 = Clock::now();
      steps[s].kernel->run(KernelIO{ctx->inputs[s], ctx->outputs[s], ctx->workspace});
      (*step_ms)[s] += std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
    }
  }
  copyOutputs(in, out);
}

void Executor::run(const std::vector<TensorView>& inputs, const std::vector<TensorView>& outputs) const {
  impl_->checkCaller(inputs, outputs);
  impl_->runSteps(inputs, outputs, nullptr);
}

std::vector<NodeTiming> Executor::profile(const std::vector<TensorView>& inputs,
                                          const std::vector<TensorView>& outputs, int runs) const {
  if (runs < 1) throw InputError("profile needs runs >= 1, got " + std::to_string(runs));
  const Impl& im = *impl_;
  im.checkCaller(inputs, outputs);
  std::vector<double> step_ms(im.steps.size(), 0.0);
  for (int r = 0; r < runs; ++r) im.runSteps(inputs, outputs, &step_ms);
  std::vector<NodeTiming> rows;
  rows.reserve(im.steps.size());
  for (size_t s = 0; s < im.steps.size(); ++s) {
    const Node& n = *im.steps[s].node;
    rows.push_back({n.name(), n.opType(), step_ms[s] / runs});
  }
  return rows;
}

const RunFootprint& Executor::runFootprint() const {
  return impl_->footprint;
}

void Executor::checkRunMemory(const RunMemoryLimits& limits) const {
  impl_->footprint.check(limits, impl_->pool->idle() > 0);
}

std::vector<Tensor> Executor::run(const std::vector<Tensor>& inputs, const RunMemoryLimits& limits) const {
  checkRunMemory(limits);
  std::vector<TensorView> in_views;
  in_views.reserve(inputs.size());
  for (const Tensor& t : inputs) in_views.emplace_back(t);
  std::vector<Tensor> outs;
  std::vector<TensorView> out_views;
  for (const IoInfo& o : impl_->outputs) {
    outs.emplace_back(o.dtype, o.shape);
    out_views.emplace_back(outs.back());
  }
  run(in_views, out_views);
  trimBoundedOutputs(*impl_->graph, outs);  // bounded outputs (NMS, NonZero) at their actual extent
  return outs;
}

}  // namespace npuc
