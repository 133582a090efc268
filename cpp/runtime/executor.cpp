// Executor: compile (clone, host fusion, kernels, storage assignment, arena plan) once, then run
// many times on pooled per-run contexts.
#include "runtime/executor.h"

#include <algorithm>
#include <cstring>
#include <unordered_map>

#include "runtime/host_fusion.h"
#include "runtime/memory_planner.h"
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

std::string nodeTag(const Node& node) {
  return "node '" + node.name() + "' (" + node.opType() + "): ";
}

// Re-throws the active npuc error as the same type with the node named in front.
[[noreturn]] void rethrowWithNode(const Node& node) {
  try {
    throw;
  } catch (const UnsupportedOpError&) {
    throw;  // the registry already names the node
  } catch (const ShapeError& e) {
    throw ShapeError(nodeTag(node) + e.what());
  } catch (const ResourceError& e) {
    throw ResourceError(nodeTag(node) + e.what());
  } catch (const GraphError& e) {
    throw GraphError(nodeTag(node) + e.what());
  } catch (const Error& e) {
    throw Error(nodeTag(node) + e.what());
  }
}

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
  std::unique_ptr<ObjectPool<RunContext>> pool;

  Impl(const Graph& g, const ExecutorOptions& options);
  void compileKernels();
  void assignStorage();
  void collectCallerSlots();
  std::unique_ptr<RunContext> makeContext() const;
  void bindCaller(RunContext& ctx, const std::vector<TensorView>& in,
                  const std::vector<TensorView>& out) const;
  void copyOutputs(const std::vector<TensorView>& in, const std::vector<TensorView>& out) const;
};

Executor::Impl::Impl(const Graph& g, const ExecutorOptions& options) : graph(g.clone()) {
  if (options.host_fusion && hostFusionEnabledByEnv()) fuseConvActivations(*graph, OpRegistry::instance());
  graph->renumber();
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
  compileKernels();
  assignStorage();
  collectCallerSlots();
  pool = std::make_unique<ObjectPool<RunContext>>([this] { return makeContext(); });
}

void Executor::Impl::compileKernels() {
  const OpRegistry& registry = OpRegistry::instance();
  for (Node* n : graph->nodes()) {
    Step step;
    step.node = n;
    try {
      const OpSchema& schema = registry.require(*n);
      if (!schema.make_kernel) throw UnsupportedOpError(nodeTag(*n) + "op has no host kernel");
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
      if (!step.kernel) throw UnsupportedOpError(nodeTag(*n) + "the kernel factory refused the node");
      step.input_types = std::move(kctx.input_types);
      step.output_types = std::move(kctx.output_types);
    } catch (const Error&) {
      rethrowWithNode(*n);
    }
    stats.workspace_bytes = std::max(stats.workspace_bytes, step.kernel->workspaceBytes());
    steps.push_back(std::move(step));
  }
}

// Decides where every value lives, then places the arena values from their live ranges.
void Executor::Impl::assignStorage() {
  std::unordered_map<const Value*, Location> where;
  std::unordered_map<const Value*, size_t> buffer_of;  // arena values -> index into `requests`
  std::vector<BufferRequest> requests;
  for (size_t i = 0; i < graph->inputs().size(); ++i)
    where[graph->inputs()[i]] = {Storage::Input, i, nullptr};
  for (const Value* v : graph->values()) {
    if (v->isConstant()) where[v] = {Storage::Constant, 0, v->constant().raw()};
  }
  for (size_t i = 0; i < graph->outputs().size(); ++i) {
    const Value* v = graph->outputs()[i];
    if (where.count(v)) {
      output_copies.push_back({i, where[v]});  // a constant, a graph input, or listed twice
    } else {
      where[v] = {Storage::Output, i, nullptr};
    }
  }
  auto lookup = [&](const Value* v) { return v ? where.at(v) : Location{}; };

  for (size_t s = 0; s < steps.size(); ++s) {
    Step& step = steps[s];
    const Node& n = *step.node;
    for (Value* in : n.inputs()) {
      step.inputs.push_back(lookup(in));
      auto b = in ? buffer_of.find(in) : buffer_of.end();
      if (b != buffer_of.end()) requests[b->second].last = static_cast<int64_t>(s);
    }
    const int alias = step.kernel->aliasInput();
    Value* out0 = n.output(0);
    const Value* src = alias >= 0 ? n.input(static_cast<size_t>(alias)) : nullptr;
    // A pure reinterpretation whose result is not a graph output reads its input's bytes where
    // they are; skipping the kernel is then exact.
    if (src && n.numOutputs() == 1 && !where.count(out0) &&
        step.input_types[alias].nbytes() == step.output_types[0].nbytes()) {
      where[out0] = where.at(src);
      auto b = buffer_of.find(src);
      if (b != buffer_of.end()) {
        buffer_of[out0] = b->second;
        plan[b->second].values.push_back(out0->name());
      }
      step.aliased = true;
      ++aliased_steps;
    }
    for (size_t o = 0; o < n.numOutputs(); ++o) {
      Value* out = n.output(o);
      if (!where.count(out)) {
        buffer_of[out] = requests.size();
        where[out] = {Storage::Arena, 0, nullptr};  // offset filled in once planned
        requests.push_back({step.output_types[o].nbytes(), static_cast<int64_t>(s), static_cast<int64_t>(s)});
        plan.push_back({{out->name()},
                        0,
                        step.output_types[o].nbytes(),
                        static_cast<int64_t>(s),
                        static_cast<int64_t>(s)});
      }
      step.outputs.push_back(where.at(out));
    }
  }

  const MemoryPlan placed = planMemory(requests, kTensorAlignment);
  stats.arena_bytes = placed.arena_bytes;
  stats.lower_bound_bytes = placed.lower_bound_bytes;
  for (size_t b = 0; b < requests.size(); ++b) {
    plan[b].offset = placed.offsets[b];
    plan[b].last_step = requests[b].last;
  }
  // Patch the offsets into the steps' locations.
  for (Step& step : steps) {
    const Node& n = *step.node;
    for (size_t i = 0; i < n.numInputs(); ++i) {
      auto b = n.input(i) ? buffer_of.find(n.input(i)) : buffer_of.end();
      if (b != buffer_of.end()) step.inputs[i].index = placed.offsets[b->second];
    }
    for (size_t o = 0; o < n.numOutputs(); ++o) {
      auto b = buffer_of.find(n.output(o));
      if (b != buffer_of.end()) step.outputs[o].index = placed.offsets[b->second];
    }
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

void Executor::run(const std::vector<TensorView>& inputs, const std::vector<TensorView>& outputs) const {
  const Impl& im = *impl_;
  if (inputs.size() != im.inputs.size()) {
    throw InputError("the model has " + std::to_string(im.inputs.size()) + " input(s), got " +
                     std::to_string(inputs.size()));
  }
  if (outputs.size() != im.outputs.size()) {
    throw InputError("the model has " + std::to_string(im.outputs.size()) + " output(s), got " +
                     std::to_string(outputs.size()) + " output buffer(s)");
  }
  for (size_t i = 0; i < inputs.size(); ++i) checkView("input", im.inputs[i], inputs[i]);
  for (size_t i = 0; i < outputs.size(); ++i) checkView("output", im.outputs[i], outputs[i]);

  auto ctx = im.pool->acquire();
  im.bindCaller(*ctx, inputs, outputs);
  for (size_t s = 0; s < im.steps.size(); ++s) {
    const Step& step = im.steps[s];
    if (step.aliased) continue;
    step.kernel->run(KernelIO{ctx->inputs[s], ctx->outputs[s], ctx->workspace});
  }
  im.copyOutputs(inputs, outputs);
}

std::vector<Tensor> Executor::run(const std::vector<Tensor>& inputs) const {
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
  return outs;
}

}  // namespace npuc
