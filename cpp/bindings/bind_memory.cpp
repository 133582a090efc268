// eval_memory for Python: the memory report of a .npub blob (cpp/memory) as plain dicts, for
// Toolkit.eval_memory (python/npuc/toolkit.py) and the memory-plan benchmark.
#include <pybind11/stl.h>

#include "bindings/bindings.h"
#include "bindings/model.h"
#include "common/error.h"
#include "compile/compiled_model_io.h"
#include "compile/compiled_reports.h"
#include "memory/arena_placement.h"
#include "memory/memory_report.h"
#include "memory/npu_memory_plan.h"
#include "runtime/memory_planner.h"
#include "target/soc_profile.h"

namespace npuc::bindings {

namespace {

using memory::MemoryReport;
using memory::NpuMemoryPlan;
using memory::PlannedBuffer;

py::list bufferList(const NpuMemoryPlan& plan) {
  py::list out;
  for (const PlannedBuffer& b : plan.buffers) {
    py::dict d;
    d["name"] = b.value;
    d["format"] = memory::bufferFormatName(b.format);
    d["home"] = memory::bufferHomeName(b.home);
    d["dtype"] = dtypeName(b.dtype);
    d["shape"] = py::tuple(py::cast(b.shape));
    d["bytes"] = b.bytes;
    d["offset"] = b.offset;
    d["first"] = b.first;
    d["last"] = b.last;
    // The buffer it is a slice of (an in-place Concat's output), else None.
    d["within"] = b.within >= 0 ? py::object(py::str(plan.buffers[static_cast<size_t>(b.within)].value))
                                : py::object(py::none());
    out.append(d);
  }
  return out;
}

py::dict planDict(const NpuMemoryPlan& plan) {
  py::dict d;
  d["alignment"] = plan.alignment;
  d["arena_bytes"] = plan.arena_bytes;
  d["lower_bound_bytes"] = plan.lower_bound_bytes;
  d["arena_ratio"] = plan.ratio();
  d["io_bytes"] = plan.ioBytes();
  d["strategy"] = plan.strategy;
  d["order"] = plan.order;
  d["exporter_order_bound_bytes"] = plan.exporter_order_bound_bytes;
  d["order_bound_ratio"] = plan.orderRatio();
  const std::set<std::string> containers = plan.containers();
  d["in_place_concats"] = py::cast(std::vector<std::string>(containers.begin(), containers.end()));
  d["tensors"] = bufferList(plan);
  return d;
}

}  // namespace

py::dict memoryReportDict(const MemoryReport& r) {
  py::dict d = planDict(r.plan);
  d["soc"] = r.soc;
  d["mode"] = r.mode;
  d["weight_bytes"] = r.weight_bytes;
  d["other_bytes"] = r.other_bytes;
  d["total_bytes"] = r.total_bytes;
  d["blob_bytes"] = r.blob_bytes;
  d["blob_weight_section_bytes"] = r.blob_weight_section_bytes;
  d["blob_packed_weight_section_bytes"] = r.blob_packed_weight_section_bytes;
  d["plan_from_blob"] = r.plan_from_blob;
  py::list weights;
  for (const memory::WeightRow& w : r.weights) {
    py::dict row;
    row["name"] = w.value;
    row["format"] = memory::bufferFormatName(w.format);
    row["dtype"] = w.element_bits == 4 ? "int4" : dtypeName(w.dtype);
    row["shape"] = py::tuple(py::cast(w.shape));
    row["bytes"] = w.bytes;
    weights.append(row);
  }
  d["weights"] = weights;
  d["text"] = r.toText();
  return d;
}

void bindMemory(py::module_& m) {
  m.def(
      "eval_memory_blob",
      [](const std::string& path, const std::optional<std::string>& expected_soc, bool use_stored_plan) {
        MemoryReport r;
        {
          py::gil_scoped_release release;
          CompiledModel compiled = loadCompiledModel(path, expected_soc);
          if (!use_stored_plan) compiled.memory_plan.reset();  // plan afresh from the placement
          r = compiledMemory(compiled);
        }
        return memoryReportDict(r);
      },
      py::arg("path"), py::arg("expected_soc") = py::none(), py::arg("use_stored_plan") = true,
      "Device memory of the model in a .npub blob: {'weight_bytes', 'arena_bytes', 'lower_bound_bytes', "
      "'arena_ratio', 'io_bytes', 'other_bytes', 'total_bytes', 'tensors' (per planned buffer), 'weights', "
      "'text', ...}. use_stored_plan=False re-plans instead of reading the MPLN section.");
  m.def(
      "memory_plan",
      [](const Model& model, const std::string& soc) {
        NpuMemoryPlan plan;
        {
          py::gil_scoped_release release;
          plan = memory::planNpuMemory(model.graph(), nullptr, socProfile(soc));
        }
        return planDict(plan);
      },
      py::arg("model"), py::arg("soc"),
      "The activation memory plan of a float model built for the NPU's FP16 on `soc`: {'arena_bytes', "
      "'lower_bound_bytes', 'arena_ratio', 'io_bytes', 'strategy', 'tensors'}.");
  m.def(
      "place_arena",
      [](const std::vector<std::tuple<size_t, int64_t, int64_t>>& buffers, size_t alignment, bool search) {
        if (alignment == 0 || (alignment & (alignment - 1)))
          throw ConfigError("place_arena: alignment " + std::to_string(alignment) + " is not a power of two");
        std::vector<BufferRequest> requests;
        for (const auto& [bytes, first, last] : buffers) {
          if (first > last)
            throw ConfigError("place_arena: live range " + std::to_string(first) + ".." +
                              std::to_string(last) + " is empty");
          requests.push_back({bytes, first, last});
        }
        py::dict d;
        if (search) {
          const memory::ArenaPlacement p = memory::placeArena(requests, alignment);
          d["arena_bytes"] = p.arena_bytes;
          d["lower_bound_bytes"] = p.lower_bound_bytes;
          d["strategy"] = p.strategy;
        } else {
          const MemoryPlan p = planMemory(requests, alignment);
          d["arena_bytes"] = p.arena_bytes;
          d["lower_bound_bytes"] = p.lower_bound_bytes;
          d["strategy"] = "size";
        }
        return d;
      },
      py::arg("buffers"), py::arg("alignment") = memory::kArenaAlignment, py::arg("search") = true,
      "Places (bytes, first_step, last_step) buffers in one arena: with search, the memory plan's order "
      "search "
      "and hill climb; without, the host runtime's plain largest-first best fit. {'arena_bytes', "
      "'lower_bound_bytes', 'strategy'}.");
}

}  // namespace npuc::bindings
