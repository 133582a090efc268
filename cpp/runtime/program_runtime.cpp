// Running the prepared tasks over the arena (program_runtime.h); the preparation is in
// program_runtime_prepare.cpp.
#include "runtime/program_runtime.h"

#include <cstring>
#include <sstream>

#include "common/error.h"
#include "opset/bounded_output.h"
#include "runtime/half_codec.h"

namespace npuc::runtime {

using quant::SimValue;

namespace {

uint8_t* bytesOf(Tensor& t) {
  return static_cast<uint8_t*>(t.raw());
}

}  // namespace

ProgramRuntime::~ProgramRuntime() = default;

std::unique_ptr<ProgramRuntime::RunContext> ProgramRuntime::acquire() const {
  {
    std::lock_guard<std::mutex> lock(pool_mutex_);
    if (!pool_.empty()) {
      std::unique_ptr<RunContext> ctx = std::move(pool_.back());
      pool_.pop_back();
      return ctx;
    }
  }
  // Every buffer as one byte tensor: 64-byte aligned (kTensorAlignment = the plan's alignment).
  auto ctx = std::make_unique<RunContext>();
  ctx->arena = Tensor(DType::UInt8, {static_cast<int64_t>(plan_.arena_bytes)});
  ctx->io = Tensor(DType::UInt8, {static_cast<int64_t>(io_bytes_)});
  ctx->decode = Tensor(DType::UInt8, {static_cast<int64_t>(decode_bytes_)});
  ctx->caller.resize(placements_.size());
  arenas_allocated_.fetch_add(1);
  return ctx;
}

void ProgramRuntime::release(std::unique_ptr<RunContext> ctx) const {
  std::lock_guard<std::mutex> lock(pool_mutex_);
  pool_.push_back(std::move(ctx));
}

namespace {

uint8_t* storageOf(const ProgramRuntime::Placement& p, ProgramRuntime::RunContext& ctx) {
  switch (p.where) {
    case ProgramRuntime::Where::Arena: return bytesOf(ctx.arena) + p.offset;
    case ProgramRuntime::Where::Io: return bytesOf(ctx.io) + p.offset;
    default: return nullptr;
  }
}

// Writes a step's value into its planned bytes, in the representation the placement expects.
void store(const SimValue& v, const ProgramRuntime::Placement& p, ProgramRuntime::RunContext& ctx) {
  if (v.tensor.dtype() != p.dtype || v.tensor.numel() != p.numel || v.quantized != p.quantized ||
      (p.quantized && (v.params.scale != p.params.scale || v.params.zero_point != p.params.zero_point))) {
    throw GraphError("program runtime: value '" + p.value + "' was produced as " +
                     dtypeName(v.tensor.dtype()) + shapeStr(v.tensor.shape()) +
                     (v.quantized ? " (quantized)" : "") + ", its buffer holds " + dtypeName(p.dtype) +
                     shapeStr(p.shape) + (p.quantized ? " (quantized)" : ""));
  }
  switch (p.where) {
    case ProgramRuntime::Where::Empty: return;
    case ProgramRuntime::Where::Caller:  // prepare() refuses a task writing such a tensor
      throw GraphError("program runtime: value '" + p.value + "' has no planned buffer to write");
    default: break;
  }
  uint8_t* dst = storageOf(p, ctx);
  if (p.half) {
    encodeHalfRounded(v.tensor.data<float>(), reinterpret_cast<uint16_t*>(dst), p.numel);
  } else {
    // memmove: a step may hand back a view of its input (Reshape), which a corrupted plan could
    // overlap with this buffer; a sound plan never does.
    std::memmove(dst, v.tensor.raw(), v.tensor.nbytes());
  }
}

// The value as the steps read it: a view of its planned bytes (decoded into `scratch` when half).
SimValue load(const ProgramRuntime::Placement& p, uint32_t tensor, ProgramRuntime::RunContext& ctx,
              uint64_t decode_at) {
  switch (p.where) {
    case ProgramRuntime::Where::Caller: return ctx.caller[tensor];
    case ProgramRuntime::Where::Empty: return SimValue{Tensor(p.dtype, p.shape), p.quantized, p.params};
    default: break;
  }
  uint8_t* src = storageOf(p, ctx);
  if (p.half) {
    auto* out = reinterpret_cast<float*>(bytesOf(ctx.decode) + decode_at);
    decodeHalf(reinterpret_cast<const uint16_t*>(src), out, p.numel);
    src = reinterpret_cast<uint8_t*>(out);
  }
  return SimValue{Tensor::wrap(p.dtype, p.shape, src, nullptr), p.quantized, p.params};
}

// A graph output as run() hands it back: float32 (dequantized), owning its storage.
Tensor handBack(const SimValue& v) {
  return v.quantized ? quant::dequantize(v) : v.tensor.clone();
}

}  // namespace

std::vector<Tensor> ProgramRuntime::run(const std::vector<Tensor>& inputs,
                                        const RunMemoryLimits& limits) const {
  sim_->checkInputs(inputs);
  bool pooled = false;
  {
    std::lock_guard<std::mutex> lock(pool_mutex_);
    pooled = !pool_.empty();
  }
  footprint_.check(limits, pooled);
  std::unique_ptr<RunContext> owned = acquire();
  RunContext& ctx = *owned;
  ctx.slots = sim_->initialSlots();  // constants (shared storage); activations come from the arena
  ctx.results.assign(output_tensors_.size(), Tensor());

  // Graph inputs: converted as the simulator converts them, into their planned host buffer (or
  // kept as the caller's when the plan has none).
  for (uint32_t t = 0; t < placements_.size(); ++t) {
    const Placement& p = placements_[t];
    if (p.input_index < 0) continue;
    SimValue v =
        sim_->inputToSim(static_cast<size_t>(p.input_index), inputs[static_cast<size_t>(p.input_index)]);
    if (p.where == Where::Caller)
      ctx.caller[t] = std::move(v);
    else
      store(v, p, ctx);
  }

  for (const PreparedTask& task : tasks_) {
    if (task.kind == lower::TaskKind::Convert) {
      const Placement& dst = placements_[task.outputs[0]];
      const SimValue v = load(placements_[task.inputs[0]], task.inputs[0], ctx, task.decode_at[0]);
      if (dst.where == Where::Caller)
        ctx.results[static_cast<size_t>(dst.output_index)] = handBack(v);
      else
        store(v, dst, ctx);
      continue;
    }
    for (size_t i = 0; i < task.inputs.size(); ++i) {
      const Placement& p = placements_[task.inputs[i]];
      ctx.slots[static_cast<size_t>(p.slot)] = load(p, task.inputs[i], ctx, task.decode_at[i]);
    }
    for (size_t node : task.nodes) sim_->runStep(node, ctx.slots);
    for (uint32_t t : task.outputs) {
      const Placement& p = placements_[t];
      store(ctx.slots[static_cast<size_t>(p.slot)], p, ctx);
    }
    // Nothing outlives the task outside the arena: later tasks bind their inputs afresh from it.
    for (int slot : task.release_slots) ctx.slots[static_cast<size_t>(slot)] = SimValue{};
  }

  std::vector<Tensor> outputs(output_tensors_.size());
  for (size_t i = 0; i < outputs.size(); ++i) {
    if (ctx.results[i].defined()) {
      outputs[i] = std::move(ctx.results[i]);
    } else if (output_tensors_[i] == lower::kNoIndex) {  // a constant graph output
      const int slot = sim_->slotOf(sim_->graph().outputs()[i]->name());
      outputs[i] = handBack(sim_->initialSlots()[static_cast<size_t>(slot)]);
    } else {
      const uint32_t t = output_tensors_[i];
      outputs[i] = handBack(load(placements_[t], t, ctx, 0));
    }
  }
  for (SimValue& v : ctx.caller) v = SimValue{};  // do not keep the caller's inputs alive
  ctx.slots.clear();
  release(std::move(owned));
  trimBoundedOutputs(sim_->graph(), outputs);  // bounded outputs (NMS, NonZero) at their actual extent
  return outputs;
}

std::string ProgramRuntime::describe() const {
  std::ostringstream os;
  for (const PreparedTask& t : tasks_) {
    os << t.id << " " << lower::taskKindName(t.kind) << " " << t.pattern << " @" << t.step << " ["
       << t.nodes.size() << " step(s)]\n";
  }
  return os.str();
}

}  // namespace npuc::runtime
