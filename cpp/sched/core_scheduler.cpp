#include "sched/core_scheduler.h"

#include <fmt/format.h>

#include <algorithm>
#include <numeric>

#include "blob/byte_io.h"
#include "common/error.h"

namespace npuc::sched {

namespace {

constexpr uint32_t kMaxCores = 32;

// A task part placed on a core: its interval and the fraction of the DDR bandwidth it uses then.
struct Interval {
  double start = 0, end = 0, ddr_share = 0;
};

// The per-core timeline as tasks are placed in program order. Contention is charged to the part
// placed later: its DDR time grows by the bandwidth the parts already placed on other cores use
// over its interval (so a DDR-bound part next to another DDR-bound one takes twice as long, and the
// pair moves its bytes at the shared rate).
class TimelineBuilder {
 public:
  TimelineBuilder(const std::vector<TaskWork>& work, uint32_t cores, double sync_cycles)
      : work_(work), sync_(sync_cycles), core_free_(cores, 0.0), placed_(cores), mask_of_(work.size(), 0) {
    t_.tasks.resize(work.size());
    t_.core_busy.assign(cores, 0.0);
  }

  // The earliest a task may start: after everything it reads, and after the last CPU op.
  double ready(const TaskWork& w) const {
    double r = last_barrier_end_;
    for (uint32_t d : w.reads) r = std::max(r, t_.tasks.at(d).end);
    return r;
  }

  // Places task `id` as `entry` says; returns its end.
  double place(uint32_t id, const TaskOnCores& entry) {
    const TaskWork& w = work_[id];
    TaskTiming& tt = t_.tasks[id];
    double start = ready(w);
    mask_of_[id] = entry.core_mask;
    if (!w.on_npu) {
      if (w.barrier) start = std::max(start, t_.makespan);
      tt.start = start;
      tt.end = start + w.serial_cycles + w.whole.busy();
      if (w.barrier) last_barrier_end_ = tt.end;
      t_.makespan = std::max(t_.makespan, tt.end);
      return tt.end;
    }
    const std::vector<uint32_t> cores = coresOf(entry.core_mask);
    for (uint32_t c : cores) start = std::max(start, core_free_[c]);
    // One synchronization per other core waited on, however many of its tasks are waited for: a
    // core signals its progress in order, so the latest of them stands for the rest.
    uint32_t waited_cores = 0;
    for (uint32_t d : entry.waits_for) waited_cores |= mask_of_.at(d);
    tt.sync_cycles = sync_ * static_cast<double>(maskCores(waited_cores));
    tt.start = start;
    double parts_start = start + tt.sync_cycles + w.serial_cycles;
    PartCost part = w.whole;
    if (entry.split != CoreSplit::Whole)
      part = splitPart(id, w, entry.split, static_cast<uint32_t>(cores.size()));
    double end = parts_start;
    std::vector<Interval> added;
    for (uint32_t c : cores) {
      // The sibling parts of a split are alike and start together, so their DDR phases coincide:
      // all their bytes go through the one DDR port (a DDR-bound task gains nothing from a split,
      // and each part still pays its own fixed overhead). Parts already running on other cores
      // take their average share of the bandwidth over this part's interval.
      double siblings = static_cast<double>(cores.size() - 1);
      double others = otherCoresShare(c, parts_start, part.busy());
      double ddr = part.ddr_cycles * (1.0 + siblings + others);
      double dur = std::max(part.compute_cycles, ddr) + part.overhead_cycles;
      tt.contention_cycles += dur - part.busy();
      t_.core_busy[c] += dur;
      added.push_back({parts_start, parts_start + dur, dur > 0 ? std::min(1.0, part.ddr_cycles / dur) : 0});
      end = std::max(end, parts_start + dur);
    }
    if (entry.split != CoreSplit::Whole) {
      tt.sync_cycles += sync_;  // the barrier closing the split
      end += sync_;
    }
    for (size_t i = 0; i < cores.size(); ++i) {
      placed_[cores[i]].push_back(added[i]);
      core_free_[cores[i]] = end;
    }
    tt.end = end;
    t_.sync_cycles += tt.sync_cycles;
    t_.contention_cycles += tt.contention_cycles;
    t_.makespan = std::max(t_.makespan, end);
    return end;
  }

  double coreFree(uint32_t c) const { return core_free_[c]; }
  const Timeline& timeline() const { return t_; }
  Timeline take() { return std::move(t_); }

  static std::vector<uint32_t> coresOf(uint32_t mask) {
    std::vector<uint32_t> out;
    for (uint32_t c = 0; c < kMaxCores; ++c)
      if (mask & (1u << c)) out.push_back(c);
    return out;
  }

 private:
  PartCost splitPart(uint32_t id, const TaskWork& w, CoreSplit split, uint32_t parts) const {
    for (const SplitOption& o : w.splits)
      if (o.split == split && o.parts == parts) return o.part;
    throw InputError(
        fmt::format("core schedule: task {} is split by {} over {} cores, which its cost does not "
                    "offer (a schedule for another build?)",
                    id, splitName(split), parts));
  }

  // The DDR bandwidth share the parts on cores other than `core` use over [start, start + len),
  // averaged over the interval.
  double otherCoresShare(uint32_t core, double start, double len) const {
    if (len <= 0) return 0;
    double share = 0;
    for (uint32_t c = 0; c < placed_.size(); ++c) {
      if (c == core) continue;
      for (auto it = placed_[c].rbegin(); it != placed_[c].rend() && it->end > start; ++it) {
        double overlap = std::min(it->end, start + len) - std::max(it->start, start);
        if (overlap > 0) share += it->ddr_share * overlap / len;
      }
    }
    return share;
  }

  const std::vector<TaskWork>& work_;
  double sync_;
  std::vector<double> core_free_;
  std::vector<std::vector<Interval>> placed_;
  std::vector<uint32_t> mask_of_;  // per task placed so far: its cores
  double last_barrier_end_ = 0;
  Timeline t_;
};

// Cross-core waits of `entry`: the NPU tasks it reads that ran whole on a different core set (a
// split's barrier already tells every core).
std::vector<uint32_t> waitsOf(const std::vector<TaskWork>& work, const std::vector<TaskOnCores>& placed,
                              const TaskWork& w, uint32_t mask) {
  std::vector<uint32_t> out;
  for (uint32_t d : w.reads) {
    const TaskOnCores& e = placed.at(d);
    if (!work[d].on_npu || e.split != CoreSplit::Whole || e.core_mask == mask) continue;
    if (std::find(out.begin(), out.end(), d) == out.end()) out.push_back(d);
  }
  std::sort(out.begin(), out.end());
  return out;
}

CoreSchedule greedySchedule(const std::vector<TaskWork>& work, uint32_t cores, double sync_cycles) {
  CoreSchedule s;
  s.cores = cores;
  TimelineBuilder tl(work, cores, sync_cycles);
  for (uint32_t id = 0; id < work.size(); ++id) {
    const TaskWork& w = work[id];
    TaskOnCores best;
    best.task = id;
    if (!w.on_npu) {
      best.core_mask = 0;
      s.tasks.push_back(best);
      tl.place(id, best);
      continue;
    }
    std::vector<TaskOnCores> candidates;
    for (uint32_t c = 0; c < cores; ++c) {
      TaskOnCores e;
      e.task = id;
      e.core_mask = 1u << c;
      candidates.push_back(e);
    }
    std::vector<uint32_t> by_free(cores);
    std::iota(by_free.begin(), by_free.end(), 0u);
    std::stable_sort(by_free.begin(), by_free.end(),
                     [&](uint32_t a, uint32_t b) { return tl.coreFree(a) < tl.coreFree(b); });
    for (const SplitOption& o : w.splits) {
      if (o.parts < 2 || o.parts > cores) continue;
      TaskOnCores e;
      e.task = id;
      e.split = o.split;
      e.core_mask = 0;
      for (uint32_t i = 0; i < o.parts; ++i) e.core_mask |= 1u << by_free[i];
      candidates.push_back(e);
    }
    double best_end = 0;
    bool have = false;
    for (TaskOnCores& e : candidates) {
      s.tasks.push_back(e);
      e.waits_for = waitsOf(work, s.tasks, w, e.core_mask);
      s.tasks.back() = e;
      TimelineBuilder trial = tl;
      double end = trial.place(id, e);
      s.tasks.pop_back();
      // Ties go to the first candidate: whole before split, lower cores first.
      if (!have || end < best_end - 1e-9) {
        best = e;
        best_end = end;
        have = true;
      }
    }
    s.tasks.push_back(best);
    tl.place(id, best);
  }
  return s;
}

}  // namespace

CoreSchedule scheduleCores(const std::vector<TaskWork>& work, uint32_t cores, double sync_cycles,
                           const CoreSchedule* fewer_given) {
  if (cores < 1 || cores > kMaxCores)
    throw ConfigError(fmt::format("core schedule: {} cores requested (1 .. {})", cores, kMaxCores));
  CoreSchedule s = greedySchedule(work, cores, sync_cycles);
  if (cores == 1) return s;
  // A greedy choice can be worse than using fewer cores (list scheduling anomalies): keep the
  // fewer-core schedule then, so adding a core never slows the model down.
  CoreSchedule fewer = fewer_given ? *fewer_given : scheduleCores(work, cores - 1, sync_cycles);
  fewer.cores = cores;
  if (timeSchedule(work, fewer, sync_cycles).makespan < timeSchedule(work, s, sync_cycles).makespan)
    return fewer;
  return s;
}

Timeline timeSchedule(const std::vector<TaskWork>& work, const CoreSchedule& schedule, double sync_cycles) {
  std::vector<bool> on_npu;
  for (const TaskWork& w : work) on_npu.push_back(w.on_npu);
  checkSchedule(schedule, on_npu, kMaxCores);
  TimelineBuilder tl(work, schedule.cores, sync_cycles);
  for (uint32_t id = 0; id < work.size(); ++id) tl.place(id, schedule.tasks[id]);
  return tl.take();
}

void checkSchedule(const CoreSchedule& s, const std::vector<bool>& on_npu, uint32_t soc_cores) {
  if (s.cores < 1 || s.cores > soc_cores)
    throw InputError(fmt::format("core schedule for {} cores, but the SoC has {}", s.cores, soc_cores));
  if (s.tasks.size() != on_npu.size())
    throw InputError(fmt::format("core schedule for {} cores has {} tasks, the program {}", s.cores,
                                 s.tasks.size(), on_npu.size()));
  const uint32_t allowed = s.cores >= kMaxCores ? ~0u : (1u << s.cores) - 1;
  for (uint32_t i = 0; i < s.tasks.size(); ++i) {
    const TaskOnCores& e = s.tasks[i];
    auto fail = [&](const std::string& why) {
      throw InputError(fmt::format("core schedule for {} cores, task {}: {}", s.cores, i, why));
    };
    if (e.task != i) fail(fmt::format("entry names task {}", e.task));
    if (e.core_mask & ~allowed)
      fail(fmt::format("core mask {:#x} names a core beyond core {}", e.core_mask, s.cores - 1));
    if (!on_npu[i] && e.core_mask != 0) fail("a host task (CPU op or Convert) placed on NPU cores");
    if (on_npu[i] && e.core_mask == 0) fail("an NPU task on no core");
    const uint32_t n = maskCores(e.core_mask);
    if (on_npu[i] && (e.split == CoreSplit::Whole) != (n == 1))
      fail(fmt::format("split '{}' over {} cores", splitName(e.split), n));
    if (static_cast<uint8_t>(e.split) > static_cast<uint8_t>(CoreSplit::Batch)) fail("unknown split kind");
    for (uint32_t d : e.waits_for)
      if (d >= i) fail(fmt::format("waits for task {}, which is not earlier", d));
  }
}

uint32_t maskCores(uint32_t mask) {
  uint32_t n = 0;
  for (; mask; mask &= mask - 1) ++n;
  return n;
}

std::string coreMaskName(uint32_t mask) {
  if (mask == 0) return "-";
  std::string out;
  for (uint32_t c = 0; c < kMaxCores; ++c)
    if (mask & (1u << c)) out += (out.empty() ? "" : "_") + std::to_string(c);
  return out;
}

const char* splitName(CoreSplit s) {
  switch (s) {
    case CoreSplit::Whole: return "whole";
    case CoreSplit::OutputChannels: return "oc";
    case CoreSplit::Rows: return "rows";
    case CoreSplit::Batch: return "batch";
  }
  return "?";
}

// CSCH: u32 schedule count, then per schedule: u32 cores, u32 task count, then per task: u32 task,
// u32 core_mask, u8 split, u32 wait count, u32 waits.
std::string encodeCoreSchedules(const std::vector<CoreSchedule>& schedules) {
  blob::ByteWriter w;
  w.count(schedules.size(), "core schedules");
  for (const CoreSchedule& s : schedules) {
    w.u32(s.cores);
    w.count(s.tasks.size(), "core schedule tasks");
    for (const TaskOnCores& t : s.tasks) {
      w.u32(t.task);
      w.u32(t.core_mask);
      w.u8(static_cast<uint8_t>(t.split));
      w.count(t.waits_for.size(), "core schedule waits");
      for (uint32_t d : t.waits_for) w.u32(d);
    }
  }
  return w.take();
}

std::vector<CoreSchedule> decodeCoreSchedules(std::string_view bytes) {
  blob::ByteReader r(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size(), 0, "CSCH section");
  std::vector<CoreSchedule> out(r.count("core schedules", 8));
  for (CoreSchedule& s : out) {
    s.cores = r.u32("cores");
    s.tasks.resize(r.count("core schedule tasks", 13));
    for (TaskOnCores& t : s.tasks) {
      t.task = r.u32("task");
      t.core_mask = r.u32("core mask");
      const uint8_t split = r.u8("split");
      if (split > static_cast<uint8_t>(CoreSplit::Batch)) r.fail(fmt::format("unknown split kind {}", split));
      t.split = static_cast<CoreSplit>(split);
      t.waits_for.resize(r.count("core schedule waits", 4));
      for (uint32_t& d : t.waits_for) d = r.u32("wait");
    }
  }
  r.expectEnd();
  return out;
}

}  // namespace npuc::sched
