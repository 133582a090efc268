#include "perf/perf_eval.h"

#include <algorithm>
#include <map>
#include <set>

#include "common/error.h"
#include "perf/cpu_op_cost.h"
#include "perf/op_classes.h"
#include "perf/task_grouping.h"
#include "target/fusion_groups.h"
#include "target/op_geometry.h"

namespace npuc::perf {

namespace {

int64_t numel(const Value& v) {
  int64_t n = 1;
  for (int64_t d : v.shape()) n *= d;
  return n;
}

std::string upperDTypeName(NpuDType t) {
  switch (t) {
    case NpuDType::Int8: return "INT8";
    case NpuDType::Int16: return "INT16";
    case NpuDType::Float16: return "FP16";
    case NpuDType::BFloat16: return "BF16";
    case NpuDType::TFloat32: return "TF32";
  }
  return "?";
}

using Task = TaskNodes;  // one row's worth of work: a fusion group, or one node

Shape firstActivationShape(const Task& t) {
  for (const Value* v : externalInputs(t))
    if (!v->isConstant()) return v->shape();
  return {};
}

class Evaluator {
 public:
  Evaluator(const Graph& graph, const SocProfile& soc, const PerfOptions& options, TilingCache* cache)
      : graph_(graph),
        soc_(soc),
        options_(options),
        model_(soc, options.dtype, options.single_core_mode ? 1 : soc.npu.cores, options.constants),
        cache_(cache) {
    if (options.scheme) model_.setWeightFormat(WeightFormat::of(*options.scheme));
  }

  // The model as it would compile: the SoC's partition and fusion groups, per-op dtypes.
  PerfReport run(std::vector<sched::TaskWork>* work) {
    PartitionReport placement = partitionGraph(graph_, soc_, options_.op_target);
    std::vector<FusionGroup> groups = fusionGroups(graph_, soc_, placement);
    work_ = work;
    return cost(placement, groupTasks(graph_, placement, groups));
  }

  // A compiled program's tasks, each in the dtype it was compiled to.
  PerfReport run(const PartitionReport& placement, const std::vector<CostedTask>& tasks,
                 std::vector<sched::TaskWork>* work) {
    work_ = work;
    std::vector<Task> plain;
    for (const CostedTask& t : tasks) {
      for (const Node* n : t.task.nodes) task_dtype_[n] = t.dtype;
      if (t.in_place && !t.task.nodes.empty()) in_place_.insert(t.task.nodes.front());
      plain.push_back(t.task);
    }
    return cost(placement, plain);
  }

 private:
  PerfReport cost(const PartitionReport& placement, const std::vector<Task>& tasks) {
    placement_ = &placement;
    PerfReport report;
    report.soc = soc_.name;
    report.dtype = npuDTypeName(options_.dtype);
    // A scheme other than w8a8 is named too: "int16 (w4a16 group128)".
    if (options_.scheme && options_.scheme->dtype != quant::SchemeDType::W8A8)
      report.dtype += " (" + quant::describeScheme(*options_.scheme) + ")";
    report.cores = model_.cores();
    report.clock_mhz = static_cast<double>(soc_.npu.clock_mhz);
    report.warnings = placement.warnings;
    int64_t hits0 = cache_ ? cache_->hits() : 0, misses0 = cache_ ? cache_->misses() : 0;
    if (work_) work_->clear();
    for (const Task& t : tasks) {
      splits_.clear();
      PerfRow row = in_place_.count(t.nodes.front()) ? inPlaceRow(t)
                    : t.device == Device::Npu        ? costNpu(t, report.warnings)
                                                     : costCpu(t);
      row.id = static_cast<int64_t>(report.rows.size()) + 1;
      row.op_type = t.op_type;
      row.target = t.device;
      row.input_shape = firstActivationShape(t);
      row.output_shape = t.nodes.back()->output(0)->shape();
      row.full_name = t.full_name;
      addHandovers(t, row);
      if (work_) work_->push_back(taskWork(t, row, report.rows.size()));
      report.rows.push_back(std::move(row));
    }
    if (cache_) {
      report.tiling_cache_hits = cache_->hits() - hits0;
      report.tiling_cache_misses = cache_->misses() - misses0;
    }
    report.finalize();
    return report;
  }

  // The dtype a node computes in: its compiled task's, else the model's, or the 16-bit format for
  // float-only ops.
  NpuDType opDType(const Node& n) const {
    if (auto it = task_dtype_.find(&n); it != task_dtype_.end()) return it->second;
    if (options_.dtype != NpuDType::Int8 || !runsInFloat(n.opType())) return options_.dtype;
    for (NpuDType t : {NpuDType::Float16, NpuDType::Int16})
      if (soc_.supportsDtype(t)) return t;
    return options_.dtype;
  }

  double storedBytes(const Value& v, NpuDType t) const {
    return static_cast<double>(model_.storedElements(v.shape(), t) * npuDTypeBytes(t));
  }

  static void setNpuCycles(PerfRow& row, const TaskCost& c, double clock_mhz) {
    row.ddr_cycles = c.ddr_cycles;
    row.npu_cycles = c.compute_cycles;
    row.total_cycles = c.total();
    row.time_us = c.total() / clock_mhz;
    row.rw_kb = c.ddr_bytes / 1024.0;
    row.task_number = 1;
    row.tiles = c.tiles;
    row.bottleneck = c.compute_cycles >= c.ddr_cycles ? "NPU" : "DDR";
  }

  // An in-place Concat: no NPU task runs (task_number 0), no byte moves.
  PerfRow inPlaceRow(const Task& t) {
    PerfRow row;
    row.data_type = upperDTypeName(opDType(*t.nodes.front()));
    row.bottleneck = "in place";
    whole_overhead_ = 0;
    return row;
  }

  PerfRow costNpu(const Task& t, std::vector<std::string>& warnings) {
    const Node& anchor = *t.nodes.front();
    NpuDType dt = opDType(anchor);
    PerfRow row;
    row.data_type = upperDTypeName(dt);
    TaskCost cost;
    if (isMacOp(anchor)) {
      MacOpShape shape = macOpShape(anchor);
      double extra = 0;  // the fused residual Add reads its other operand
      for (const Node* n : t.nodes)
        if (n != &anchor && n->opType() == "Add")
          for (const Value* v : n->inputs())
            if (v && v->producer() != t.nodes[1] && v->producer() != &anchor) extra += storedBytes(*v, dt);
      bool lut = false;  // a fused non-Relu activation runs through the output stage's LUT
      for (const Node* n : t.nodes)
        if (n != &anchor && streamClass(n->opType()) == StreamClass::Lut) lut = true;
      TilingDecision d = chooseTiling(model_, shape, dt, cache_);
      if (!d.fits_buffer)
        warnings.push_back(t.full_name + ": no tile of " + anchor.opType() + " fits the " +
                           std::to_string(soc_.npu.onchip_buffer_bytes) +
                           "-byte on-chip buffer; costed with the smallest");
      cost = model_.macTask(shape, d.tiling, dt, extra, lut);
      addActivationOperandRelayout(anchor, dt, cost);
      row.macs = shape.usefulMacs();
      if (work_) addMacSplits(anchor, shape, dt, extra, lut);
    } else {
      cost = streamCost(t, dt);
      row.macs = usefulMacs(anchor);
      if (work_) addBatchSplits(*t.nodes.back()->output(0), cost);
    }
    whole_overhead_ = cost.overhead_cycles;
    setNpuCycles(row, cost, model_.clockHz() / 1e6);
    double array_cycles = cost.total();
    row.mac_usage_pct = array_cycles > 0
                            ? 100.0 * static_cast<double>(row.macs) / (array_cycles * model_.macsPerCycle(dt))
                            : 0;
    return row;
  }

  static sched::PartCost partCost(const TaskCost& c) {
    return {c.compute_cycles, c.ddr_cycles, c.overhead_cycles};
  }

  // The ways a MAC task divides over 2..cores cores, each part costed (and tiled) on one core:
  // output-channel blocks (every part reads the whole input), row bands (every part reads all the
  // weights and its input rows with the halo), batch items.
  void addMacSplits(const Node& anchor, const MacOpShape& s, NpuDType dt, double extra, bool lut) {
    const PaddedMacShape p = model_.padded(s, dt);
    for (uint32_t m = 2; m <= static_cast<uint32_t>(soc_.npu.cores); ++m) {
      const int64_t n = m;
      auto add = [&](sched::CoreSplit kind, const MacOpShape& part) {
        TaskCost c = model_.macTask(part, chooseTiling(model_, part, dt, cache_).tiling, dt, extra / n, lut);
        addActivationOperandRelayout(anchor, dt, c);
        splits_.push_back({kind, m, partCost(c)});
      };
      // Output channels: whole alignment blocks per core (whole groups of a grouped conv).
      if (s.depthwise && p.out_c_compute >= n * p.oc_align) {
        MacOpShape part = s;
        part.out_c = part.in_c = part.group = roundUp(ceilDiv(s.out_c, n), p.oc_align);
        add(sched::CoreSplit::OutputChannels, part);
      } else if (!s.depthwise && s.group > 1 && s.group % n == 0) {
        MacOpShape part = s;
        part.group /= n, part.in_c /= n, part.out_c /= n;
        add(sched::CoreSplit::OutputChannels, part);
      } else if (!s.depthwise && s.group == 1 && p.out_c_compute >= n * p.oc_align) {
        MacOpShape part = s;
        part.out_c = roundUp(ceilDiv(s.out_c, n), p.oc_align);
        add(sched::CoreSplit::OutputChannels, part);
      }
      if (s.out_h >= 2 * n) {  // at least two rows a core
        MacOpShape part = s;
        part.out_h = ceilDiv(s.out_h, n);
        part.in_h = s.inputRows(part.out_h);
        add(sched::CoreSplit::Rows, part);
      }
      if (s.batch >= n) {
        MacOpShape part = s;
        part.batch = ceilDiv(s.batch, n);
        add(sched::CoreSplit::Batch, part);
      }
    }
  }

  // A streaming task divides only by batch items (its other splits would share the same DDR
  // traffic it is usually bound by): each core does its items' share of the work and bytes.
  void addBatchSplits(const Value& out, const TaskCost& c) {
    const int64_t batch = out.shape().size() >= 2 ? out.shape()[0] : 1;
    for (uint32_t m = 2; m <= static_cast<uint32_t>(soc_.npu.cores) && batch >= m; ++m) {
      const double share = static_cast<double>(ceilDiv(batch, m)) / static_cast<double>(batch);
      splits_.push_back(
          {sched::CoreSplit::Batch, m, {c.compute_cycles * share, c.ddr_cycles * share, c.overhead_cycles}});
    }
  }

  // The scheduler's view of a costed row: its one-core cost, hand-overs, splits and the earlier
  // rows it reads.
  sched::TaskWork taskWork(const Task& t, const PerfRow& row, size_t index) {
    const double hz = model_.clockHz() / 1e6;
    sched::TaskWork w;
    w.on_npu = t.device == Device::Npu;
    w.barrier = !w.on_npu;
    w.serial_cycles = row.handover_us * hz;
    if (w.on_npu) {
      w.whole = {row.npu_cycles, row.ddr_cycles, whole_overhead_};
      w.splits = splits_;
    } else {
      w.whole.overhead_cycles = (row.time_us - row.handover_us) * hz;
    }
    for (const Value* v : externalInputs(t))
      if (auto it = row_of_.find(v->producer()); v->producer() && it != row_of_.end()) {
        if (std::find(w.reads.begin(), w.reads.end(), it->second) == w.reads.end())
          w.reads.push_back(it->second);
      }
    std::sort(w.reads.begin(), w.reads.end());
    for (const Node* n : t.nodes) row_of_[n] = static_cast<uint32_t>(index);
    return w;
  }

  // A MatMul whose B operand is an activation (attention's Q x K^T, scores x V): the array reads
  // B as weights, packed per output-channel block, so B is first rewritten into that layout, a
  // transpose-class pass that reads and writes B once more.
  void addActivationOperandRelayout(const Node& anchor, NpuDType dt, TaskCost& cost) const {
    if (anchor.opType() != "MatMul") return;
    const Value* b = anchor.input(1);
    if (!b || b->isConstant()) return;
    double elements = static_cast<double>(model_.storedElements(b->shape(), dt));
    cost.compute_cycles += model_.vectors(elements, dt) * model_.vectorCycles(StreamClass::Transpose);
    cost.ddr_bytes += 2.0 * storedBytes(*b, dt);
    cost.ddr_cycles = cost.ddr_bytes / model_.sustainedDdrBytesPerCycle();
  }

  // A non-MAC NPU task: the bytes of its external inputs and its output, and the elements its
  // vector unit processes.
  TaskCost streamCost(const Task& t, NpuDType dt) const {
    const Node& n = *t.nodes.front();
    double bytes = storedBytes(*t.nodes.back()->output(0), dt);
    for (const Value* v : externalInputs(t)) bytes += storedBytes(*v, dt);
    if (n.opType() == "ConvTranspose")
      return model_.untiledMacTask(static_cast<double>(usefulMacs(n)), bytes, dt);
    double elements = 0;
    double input_bytes = n.input(0) ? storedBytes(*n.input(0), dt) : 0;
    for (const Node* m : t.nodes) {
      double out = static_cast<double>(model_.storedElements(m->output(0)->shape(), dt));
      double in = m->input(0) ? static_cast<double>(model_.storedElements(m->input(0)->shape(), dt)) : 0;
      double work = std::max(in, out);
      if (isWindowPooling(m->opType())) {
        WindowGeometry g = windowGeometry(*m);
        double window = 1;
        for (int64_t k : g.kernel) window *= static_cast<double>(k);
        work = out * window;
      }
      elements += work;
    }
    return model_.streamTask(elements, bytes, streamClass(n.opType()), dt, input_bytes);
  }

  PerfRow costCpu(const Task& t) const {
    const Node& n = *t.nodes.front();
    double out_elements = static_cast<double>(numel(*n.output(0)));
    double flops = isMacOp(n) || usefulMacs(n) > 0
                       ? 2.0 * static_cast<double>(usefulMacs(n))
                       : out_elements * (isTranscendental(n.opType()) ? kTranscendentalFlops : 1.0);
    if (const double own = cpuOpFlops(n); own >= 0) flops = own;  // detection ops: their assumed count
    double elements = out_elements;
    for (const Value* v : n.inputs())
      if (v) elements += static_cast<double>(numel(*v));
    PerfRow row;
    row.data_type = "FP32";
    row.macs = usefulMacs(n);
    row.time_us = model_.cpuSeconds(flops, elements * 4.0) * 1e6;
    row.total_cycles = row.time_us * model_.clockHz() / 1e6;
    row.bottleneck = "CPU";
    return row;
  }

  // Tensors this task reads from the other device: each crosses once per reading device.
  void addHandovers(const Task& t, PerfRow& row) {
    for (const Value* v : externalInputs(t)) {
      if (v->isConstant() || !v->producer()) continue;
      if (placement_->deviceOf(v->producer()) == t.device) continue;
      if (!handed_over_.insert({v, t.device}).second) continue;
      NpuDType dt = opDType(t.device == Device::Npu ? *t.nodes.front() : *v->producer());
      double us = model_.handoverSeconds(static_cast<double>(numel(*v)), dt) * 1e6;
      row.handover_us += us;
      ++row.handovers;
    }
    row.time_us += row.handover_us;
    row.total_cycles = row.time_us * model_.clockHz() / 1e6;
  }

  const Graph& graph_;
  const SocProfile& soc_;
  const PerfOptions& options_;
  CostModel model_;
  TilingCache* cache_;
  const PartitionReport* placement_ = nullptr;
  std::map<const Node*, NpuDType> task_dtype_;  // compiled tasks only
  std::set<const Node*> in_place_;              // first nodes of in-place Concat tasks
  std::set<std::pair<const Value*, Device>> handed_over_;
  // Core scheduler input (evaluateTasks' `work`): the current row's splits and overhead, and the
  // row of every node costed so far.
  std::vector<sched::TaskWork>* work_ = nullptr;
  std::vector<sched::SplitOption> splits_;
  double whole_overhead_ = 0;
  std::map<const Node*, uint32_t> row_of_;
};

}  // namespace

PerfReport evaluatePerf(const Graph& graph, const SocProfile& soc, const PerfOptions& options,
                        TilingCache* cache) {
  if (options.cores < 0 || options.cores > soc.npu.cores)
    throw ConfigError(soc.name + ": " + std::to_string(options.cores) + " NPU cores requested, the SoC has " +
                      std::to_string(soc.npu.cores));
  const auto cores = static_cast<uint32_t>(options.cores > 0 ? options.cores : soc.npu.cores);
  // Every row is costed on one core; on more, the core scheduler places the rows.
  PerfOptions one = options;
  one.single_core_mode = true;
  if (options.single_core_mode || cores == 1) return Evaluator(graph, soc, one, cache).run(nullptr);
  std::vector<sched::TaskWork> work;
  PerfReport report = Evaluator(graph, soc, one, cache).run(&work);
  const double sync = static_cast<double>(soc.npu.core_sync_cycles);
  const sched::CoreSchedule schedule = sched::scheduleCores(work, cores, sync);
  std::vector<uint32_t> task_of_row(report.rows.size());
  for (uint32_t i = 0; i < task_of_row.size(); ++i) task_of_row[i] = i;
  report.applySchedule(schedule, sched::timeSchedule(work, schedule, sync), task_of_row,
                       "decided afresh (a model not compiled)");
  return report;
}

PerfReport evaluateTasks(const Graph& graph, const SocProfile& soc, const PartitionReport& placement,
                         const std::vector<CostedTask>& tasks, const PerfOptions& options, TilingCache* cache,
                         std::vector<sched::TaskWork>* work) {
  if (work && !options.single_core_mode)
    throw ConfigError("evaluateTasks: the core scheduler's work is costed on one core (single_core_mode)");
  return Evaluator(graph, soc, options, cache).run(placement, tasks, work);
}

}  // namespace npuc::perf
