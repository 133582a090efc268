// The compiled runtime (issue #6): runs a blob's lowered program (cpp/lower) over the activation
// arena its memory plan (cpp/memory) laid out, with the bit-exact simulator's per-node steps
// (quant/sim) as the kernels.
//
//   init  every task prepared once, in program order: the simulator steps of its nodes, where each
//         of its input and output tensors lives (arena offset from the plan, a separate I/O buffer,
//         or the caller's tensor) and how it is stored there; the plan is checked against the
//         program (each arena buffer live at every task that touches it, tasks in step order) and
//         every tensor against its planned size.
//   run   one arena (plan.arena_bytes) per concurrent run, allocated once and reused. Before a
//         task its inputs are bound from their planned bytes, its steps run, its outputs are
//         written to their planned bytes and the step's own buffers dropped, so every value a
//         later task reads comes out of the arena: two live values the plan overlapped would
//         corrupt each other. Values inside a fused task (never planned in DRAM) live only in
//         the steps' buffers of that task (the task's scratch).
//
// Storage in a planned buffer is the simulator's value representation: int8 bytes for a quantized
// activation, IEEE half bits for a half-rounded float planned as fp16 (exact: the simulator rounds
// every such value to half), the raw elements otherwise. A Convert task copies a value between its
// NPU and host buffers in that representation; the quantize (graph inputs), dequantize (graph
// outputs) and the host ops' own dequantize happen where the simulator does them, so outputs equal
// QuantizedExecutor::run bit for bit. A Concat the plan placed in place: its producers store into
// the slices of its buffer (the plan gives each input its slice as its offset), which then holds
// the concatenation, so it is not run; unless it requantizes an input, when it runs and its output
// is stored over the slices (the rescaled values where the input was, which nothing reads later). Convert
// tasks run right after the task producing their source (the hand-over point the memory plan assumes), not
// where the lowering listed them.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "lower/lowered_program.h"
#include "memory/npu_memory_plan.h"
#include "quant/sim/quantized_executor.h"
#include "runtime/run_memory.h"

namespace npuc::runtime {

class ProgramRuntime {
 public:
  // `sim` is the simulator of the graph `program` was lowered from (same node order); `plan` the
  // memory plan of that graph and partition. BlobError when the program and the plan do not fit
  // each other or the graph; ResourceError naming the value when a tensor does not fit its buffer.
  ProgramRuntime(std::shared_ptr<const quant::QuantizedExecutor> sim, lower::LoweredProgram program,
                 memory::NpuMemoryPlan plan);
  ~ProgramRuntime();

  // One tensor per graph input (as QuantizedExecutor::run takes them); the graph outputs as
  // float32. Thread-safe: each concurrent run takes its own arena from a pool. ResourceError,
  // before anything is allocated, when runFootprint() exceeds `limits` or the memory available.
  std::vector<Tensor> run(const std::vector<Tensor>& inputs, const RunMemoryLimits& limits = {}) const;
  // What one run holds (runtime/run_memory.h): the arena, the I/O buffers and the decode scratch
  // (pooled: reused by later runs), the step values of the largest task before they are stored,
  // and each graph output handed back as float32.
  const RunFootprint& runFootprint() const { return footprint_; }

  const quant::QuantizedExecutor& simulator() const { return *sim_; }
  uint64_t arenaBytes() const { return plan_.arena_bytes; }
  // Arenas allocated so far: 1 after any number of sequential runs, at most the number of runs
  // that were ever in flight at once.
  int64_t arenasAllocated() const { return arenas_allocated_.load(); }
  // Tasks in execution order: "3 npu Conv+Relu [2 step(s)]", for logs and tests.
  std::string describe() const;

  // Where one program tensor's bytes live during a run, and how.
  enum class Where : uint8_t {
    Arena,   // the planned offset in the arena
    Io,      // a planned graph input/output buffer (separate from the arena, as the plan says)
    Caller,  // no planned buffer: a graph input's host tensor or a graph output handed back
    Empty,   // zero elements: nothing to store
  };
  struct Placement {
    std::string value;
    lower::TensorDevice device = lower::TensorDevice::Host;
    Where where = Where::Empty;
    uint64_t offset = 0;          // in the arena or in the I/O block
    bool half = false;            // stored as IEEE half bits, decoded to float32 for the steps
    int64_t first = 0, last = 0;  // the planned live range (Arena)
    // The simulator's representation of the value.
    int slot = -1;
    DType dtype = DType::Undefined;
    Shape shape;
    int64_t numel = 0;
    bool quantized = false;
    quant::QuantParams params;
    int input_index = -1;   // graph input it holds (Caller), else -1
    int output_index = -1;  // graph output it holds (Caller), else -1
  };
  struct PreparedTask {
    uint32_t id = 0;  // in the program
    lower::TaskKind kind = lower::TaskKind::Npu;
    std::string pattern;
    int64_t step = 0;              // the memory plan's step it runs at
    std::vector<size_t> nodes;     // simulator steps (graph node indices)
    std::vector<uint32_t> inputs;  // program tensor ids
    std::vector<uint32_t> outputs;
    std::vector<uint64_t> decode_at;  // per input: its offset in the decode scratch (half inputs)
    std::vector<int> release_slots;   // emptied after the task: its inputs, outputs, inner values
    // An in-place Concat that rescales nothing (memory/concat_in_place.h, read from the plan):
    // its producers wrote its inputs into its output's buffer, so it runs nothing.
    bool in_place = false;
  };
  // What one run in flight owns: allocated when the pool is empty, then reused by later runs.
  struct RunContext {
    Tensor arena;   // plan.arena_bytes; the planned offsets index into it
    Tensor io;      // the planned graph input/output buffers
    Tensor decode;  // per-task scratch: half-stored inputs decoded to float32 for the steps
    quant::SimSlots slots;
    std::vector<quant::SimValue> caller;  // per program tensor placed Caller: its value this run
    std::vector<Tensor> results;          // per graph output
  };

 private:
  void prepare();
  std::unique_ptr<RunContext> acquire() const;
  void release(std::unique_ptr<RunContext> ctx) const;

  std::shared_ptr<const quant::QuantizedExecutor> sim_;
  lower::LoweredProgram program_;
  memory::NpuMemoryPlan plan_;
  std::vector<Placement> placements_;     // per program tensor
  std::vector<PreparedTask> tasks_;       // execution order
  uint64_t io_bytes_ = 0;                 // the I/O buffers' block, per run
  uint64_t decode_bytes_ = 0;             // largest per-task scratch of decoded (half -> float) inputs
  std::vector<uint32_t> output_tensors_;  // per graph output: its host program tensor (kNoIndex: constant)

  RunFootprint footprint_;  // decided in prepare()

  mutable std::mutex pool_mutex_;
  mutable std::vector<std::unique_ptr<RunContext>> pool_;
  mutable std::atomic<int64_t> arenas_allocated_{0};
};

}  // namespace npuc::runtime
