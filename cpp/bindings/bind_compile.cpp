// The compiled model for Python: typed CompileOptions, compile_model (the one compile driver),
// load_compiled (the one blob reader) and the CompiledModel they give, whose write() is the one blob
// writer and whose eval_perf / eval_memory read it. Toolkit.build / export_blob / load_blob /
// eval_perf / eval_memory (python/npuc/toolkit.py) are built on these.
#include <pybind11/stl.h>

#include <memory>

#include "bindings/bindings.h"
#include "bindings/model.h"
#include "bindings/quantized_model.h"
#include "blob/blob.h"
#include "blob/blob_format.h"
#include "blob/blob_limits.h"
#include "blob/checksum.h"
#include "common/error.h"
#include "compile/compiled_model.h"
#include "compile/compiled_model_io.h"
#include "compile/compiled_reports.h"
#include "compile/options_codec.h"
#include "compile/shape_variants.h"
#include "memory/memory_aware_order.h"
#include "opset/custom_ops.h"
#include "runtime/program_runtime_loader.h"

namespace npuc::bindings {

namespace {

// The compiled model and, once asked for, the simulator that runs it (shared by every caller).
class PyCompiledModel {
 public:
  PyCompiledModel(CompiledModel model, std::shared_ptr<const QuantizedExecutor> sim)
      : model_(std::make_shared<const CompiledModel>(std::move(model))), sim_(std::move(sim)) {}
  PyCompiledModel(std::shared_ptr<const CompiledModel> model, std::shared_ptr<const QuantizedExecutor> sim)
      : model_(std::move(model)), sim_(std::move(sim)) {}
  const CompiledModel& get() const { return *model_; }

  // config(dynamic_input): this model (set 0) with `variants` as its other shape sets; each keeps
  // the simulator it was compiled from.
  PyCompiledModel withShapeVariants(const std::vector<PyCompiledModel>& variants) const {
    CompiledModel m = *model_;
    m.shape_variants.clear();
    std::vector<std::shared_ptr<const QuantizedExecutor>> sims;
    for (const PyCompiledModel& v : variants) {
      m.shape_variants.push_back(v.get());
      sims.push_back(v.sim_);
    }
    PyCompiledModel out(std::move(m), sim_);
    out.variant_sims_ = std::move(sims);
    return out;
  }
  // The other shape sets, sharing this object's memory.
  std::vector<PyCompiledModel> shapeVariants() const {
    std::vector<PyCompiledModel> out;
    for (size_t i = 0; i < model_->shape_variants.size(); ++i)
      out.emplace_back(std::shared_ptr<const CompiledModel>(model_, &model_->shape_variants[i]),
                       i < variant_sims_.size() ? variant_sims_[i] : nullptr);
    return out;
  }

  // The model on the NPU simulator (INT8 with the plan, else FP16); a loaded blob's program runs it.
  PyQuantizedModel simulator() {
    if (!sim_) {  // built under the GIL, so two threads asking at once cannot both build it
      sim_ = model_->quant_plan
                 ? std::make_shared<const QuantizedExecutor>(*model_->graph, *model_->quant_plan)
                 : std::make_shared<const QuantizedExecutor>(*model_->graph);
    }
    PyQuantizedModel q(sim_, model_->quant_plan ? *model_->quant_plan : quant::QuantPlan{});
    if (model_->origin) {
      std::string why_not;
      auto program = runtime::programRuntimeFor(*model_, sim_, &why_not);
      q.setProgram(std::move(program), why_not);
    }
    return q;
  }

 private:
  std::shared_ptr<const CompiledModel> model_;
  std::shared_ptr<const QuantizedExecutor> sim_;
  std::vector<std::shared_ptr<const QuantizedExecutor>> variant_sims_;
};

py::dict reuseDict(const ShapeVariantReuse& r) {
  py::dict d;
  d["sets"] = r.sets;
  d["packed_weight_bytes_stored"] = r.packed_weight_bytes_stored;
  d["packed_weight_bytes_per_program"] = r.packed_weight_bytes_per_program;
  d["programs_sharing_packed_weights"] = r.programs_sharing_packed_weights;
  d["weight_bytes_stored"] = r.weight_bytes_stored;
  d["weight_bytes_per_program"] = r.weight_bytes_per_program;
  d["variant_payload_bytes"] = r.variant_payload_bytes;
  d["variant_referenced_bytes"] = r.variant_referenced_bytes;
  d["shpv_bytes"] = r.shpv_bytes;
  d["pipelines"] = r.pipelines;
  d["pipelines_shared"] = r.pipelines_shared;
  return d;
}

template <typename E>
E enumFromName(const std::string& key, const std::string& name,
               std::optional<E> (*fromName)(const std::string&)) {
  if (std::optional<E> v = fromName(name)) return *v;
  throw ConfigError("CompileOptions." + key + " = '" + name + "' is not a known value");
}

// Counts of the lowered program, None without one; the names of the nodes it runs on the CPU.
py::object programDict(const CompiledModel& m) {
  if (!m.program) return py::none();
  const lower::ProgramSummary s = lower::summarize(*m.program);
  py::dict d;
  d["tasks"] = s.tasks;
  d["npu_tasks"] = s.npu_tasks;
  d["cpu_ops"] = s.cpu_ops;
  d["converts"] = s.converts;
  d["pipelines"] = s.pipelines;
  d["reuse_rate"] = s.reuse_rate;
  d["tiled_tasks"] = s.tiled_tasks;
  d["total_tiles"] = s.total_tiles;
  d["packed_weight_bytes"] = s.packed_weight_bytes;
  const std::vector<Node*> nodes = m.graph->nodeList();
  py::list cpu_nodes;
  for (const lower::CpuOp& op : m.program->cpu_ops) cpu_nodes.append(nodes.at(op.node)->name());
  d["cpu_op_nodes"] = cpu_nodes;
  return d;
}

// What `npuc info` and Toolkit.blob_meta show of a loaded blob.
py::dict metaDict(const CompiledModel& m) {
  const BlobOrigin& o = *m.origin;
  py::dict d;
  d["format_version"] = std::to_string(o.format_major) + "." + std::to_string(o.format_minor);
  d["producer"] = o.producer;
  d["soc"] = m.soc->name;
  d["options"] = o.recorded_options;
  d["compile_options"] = m.options;
  d["model_digest"] = blob::digestHex(o.model_digest);
  py::list extra;
  for (uint32_t kind : o.extra_sections) extra.append(blob::fourccName(kind));
  d["extra_sections"] = extra;
  py::list sections;  // the section table as the reader checked it
  for (const BlobOrigin::Section& s : o.sections) {
    py::dict e;
    e["kind"] = blob::fourccName(s.kind);
    e["required"] = s.required;
    e["offset"] = s.offset;
    e["size"] = s.size;
    sections.append(e);
  }
  d["sections"] = sections;
  d["program"] = programDict(m);
  return d;
}

void bindOptions(py::module_& m) {
  py::class_<CompileOptions>(m, "CompileOptions",
                             "Typed build options of one compile (what config() and build() decided).")
      .def(py::init<>())
      .def_readwrite("optimization_level", &CompileOptions::optimization_level)
      .def_readwrite("quantized", &CompileOptions::quantized, "False: a float build, run in FP16 on the NPU")
      .def_property(
          "quantized_dtype", [](const CompileOptions& o) { return quantDTypeName(o.quantized_dtype); },
          [](CompileOptions& o, const std::string& v) {
            o.quantized_dtype = enumFromName("quantized_dtype", v, quantDTypeFromName);
          })
      .def_property(
          "quantized_algorithm",
          [](const CompileOptions& o) { return quantAlgorithmName(o.quantized_algorithm); },
          [](CompileOptions& o, const std::string& v) {
            o.quantized_algorithm = enumFromName("quantized_algorithm", v, quantAlgorithmFromName);
          })
      .def_property(
          "quantized_method", [](const CompileOptions& o) { return quantMethodName(o.quantized_method); },
          [](CompileOptions& o, const std::string& v) {
            o.quantized_method = enumFromName("quantized_method", v, quantMethodFromName);
          })
      .def_readwrite("single_core_mode", &CompileOptions::single_core_mode)
      .def_property(
          "node_order", [](const CompileOptions& o) { return nodeOrderName(o.node_order); },
          [](CompileOptions& o, const std::string& v) {
            o.node_order = enumFromName("node_order", v, nodeOrderFromName);
          })
      .def_readwrite("concat_in_place", &CompileOptions::concat_in_place)
      .def_readwrite("custom_string", &CompileOptions::custom_string)
      .def_readwrite("disable_passes", &CompileOptions::disable_passes)
      .def_readwrite("hybrid_layers", &CompileOptions::hybrid_layers)
      .def_readwrite("op_target", &CompileOptions::op_target)
      .def_readwrite("mean_values", &CompileOptions::mean_values)
      .def_readwrite("std_values", &CompileOptions::std_values)
      .def("recorded", &encodeCompileOptions,
           "The options as the blob's META section records them (str -> str).")
      .def(
          "check_blob_limits",
          [](const CompileOptions& o) { checkRecordedOptionLimits(encodeCompileOptions(o)); },
          "ConfigError naming the option when its recorded text exceeds what a blob may hold (BLOB_LIMITS).")
      .def("__eq__", [](const CompileOptions& a, const CompileOptions& b) { return a == b; })
      .def("__repr__", [](const CompileOptions& o) {
        std::string out = "CompileOptions(";
        bool first = true;
        for (const auto& [key, value] : encodeCompileOptions(o)) {
          out += (first ? "" : ", ") + key + "=" + value;
          first = false;
        }
        return out + ")";
      });
}

}  // namespace

void bindCompile(py::module_& m) {
  bindOptions(m);
  py::class_<PyCompiledModel>(m, "CompiledModel",
                              "Every decision of one compile: graph, quantization plan, placement, program, "
                              "memory plan. The blob is its serialization.")
      .def_property_readonly("soc", [](const PyCompiledModel& c) { return c.get().soc->name; })
      .def_property_readonly("options", [](const PyCompiledModel& c) { return c.get().options; })
      .def_property_readonly(
          "model", [](const PyCompiledModel& c) { return Model(c.get().graph); },
          "The compiled graph as a Model.")
      .def_property_readonly("quantized",
                             [](const PyCompiledModel& c) { return c.get().quant_plan.has_value(); })
      .def_property_readonly(
          "program", [](const PyCompiledModel& c) { return programDict(c.get()); },
          "Counts of the lowered program (None for an old blob without one).")
      .def_property_readonly(
          "tasks",
          [](const PyCompiledModel& c) {
            py::list out;
            const CompiledModel& m = c.get();
            if (!m.program) return out;
            for (const lower::Task& t : m.program->tasks) {
              py::dict d;
              d["kind"] = lower::taskKindName(t.kind);
              d["pattern"] = t.pattern;
              d["compute"] = lower::elemTypeName(t.compute);
              py::list names;
              for (uint32_t i : t.nodes) names.append(m.placement.nodes.at(i).label);
              d["nodes"] = names;
              out.append(d);
            }
            return out;
          },
          "The program's tasks in execution order: {'kind': 'npu'|'cpu'|'convert', 'pattern', 'compute', "
          "'nodes': node labels}.")
      .def_property_readonly(
          "meta",
          [](const PyCompiledModel& c) -> py::object {
            return c.get().origin ? py::object(metaDict(c.get())) : py::none();
          },
          "For a loaded blob: format_version, producer, soc, options (as recorded), compile_options, "
          "model_digest, extra_sections, program. None for a model compiled in memory.")
      .def_property_readonly(
          "cpu_nodes",
          [](const PyCompiledModel& c) {
            std::vector<std::string> out;
            for (const NodePlacement& p : c.get().placement.nodes)
              if (p.device == Device::Cpu) out.push_back(p.label);
            return out;
          },
          "Labels of the nodes the placement runs on the CPU.")
      .def("with_shape_variants", &PyCompiledModel::withShapeVariants, py::arg("variants"),
           "config(dynamic_input): this compiled model (set 0) with `variants` (CompiledModels of the "
           "same model, SoC and options at the other input-shape sets) as its shape variants.")
      .def_property_readonly("shape_variants", &PyCompiledModel::shapeVariants,
                             "The other input-shape sets' compiled models (empty without dynamic_input).")
      .def(
          "shape_variant_reuse",
          [](const PyCompiledModel& c) {
            ShapeVariantReuse r;
            {
              py::gil_scoped_release release;
              r = shapeVariantReuse(c.get());
            }
            return reuseDict(r);
          },
          "What the shape sets share in the blob: weight / packed-weight bytes stored vs per program, "
          "SHPV bytes, pipelines shared (measured from the bytes the blob holds).")
      .def("simulator", &PyCompiledModel::simulator,
           "The model on the NPU simulator (QuantizedModel); a loaded blob's program runs it.")
      .def(
          "write",
          [](const PyCompiledModel& c, const std::string& path) {
            py::gil_scoped_release release;
            writeCompiledModel(c.get(), path);
          },
          py::arg("path"), "Writes the .npub blob (byte-identical for equal compiled models).")
      .def(
          "eval_perf",
          [](const PyCompiledModel& c, const std::string& tuning_cache, uint32_t cores) {
            const CompiledModel& cm = c.get();
            perf::TilingCache cache;
            perf::PerfReport report;
            {
              py::gil_scoped_release release;
              if (!tuning_cache.empty()) cache.load(tuning_cache);
              report = compiledPerf(cm, &cache, cores);
              if (!tuning_cache.empty()) cache.save(tuning_cache);
            }
            perf::CostModel model(*cm.soc, compiledDType(cm), report.cores);
            return perfReportDict(report, model);
          },
          py::arg("tuning_cache") = "", py::arg("cores") = 0,
          "The per-task performance report of the compiled program, each task in its own dtype, placed on "
          "`cores` NPU cores (0: all the SoC's, or one for a single_core_mode build) by its core schedule.")
      .def_property_readonly(
          "core_schedules",
          [](const PyCompiledModel& c) {
            py::list out;
            for (const sched::CoreSchedule& s : c.get().core_schedules) {
              py::list tasks;
              for (const sched::TaskOnCores& t : s.tasks) {
                py::dict d;
                d["task"] = t.task;
                d["cores"] = sched::coreMaskName(t.core_mask);
                d["core_mask"] = t.core_mask;
                d["split"] = sched::splitName(t.split);
                d["waits_for"] = t.waits_for;
                tasks.append(d);
              }
              py::dict d;
              d["cores"] = s.cores;
              d["tasks"] = tasks;
              out.append(d);
            }
            return out;
          },
          "The multi-core schedules decided at compile (or read from the blob's CSCH section), one per "
          "usable core count: {'cores', 'tasks': [{'task', 'cores', 'core_mask', 'split', 'waits_for'}]}.")
      .def(
          "eval_memory",
          [](const PyCompiledModel& c) {
            memory::MemoryReport r;
            {
              py::gil_scoped_release release;
              r = compiledMemory(c.get());
            }
            return memoryReportDict(r);
          },
          "The memory report of the compiled model (its memory plan, its blob's sizes).");

  m.def(
      "compile_model",
      [](const py::object& model, const std::string& soc, const CompileOptions& options) {
        std::shared_ptr<const Graph> graph;
        std::shared_ptr<const QuantizedExecutor> sim;
        const quant::QuantPlan* plan = nullptr;
        if (py::isinstance<PyQuantizedModel>(model)) {
          const auto& q = model.cast<const PyQuantizedModel&>();
          sim = q.sharedSim();
          graph = std::shared_ptr<const Graph>(sim, &sim->graph());  // kept alive by the simulator
          if (sim->mode() == quant::SimMode::Int8) plan = &q.plan();
        } else {
          graph = model.cast<const Model&>().sharedGraph();
        }
        py::gil_scoped_release release;
        return PyCompiledModel(compileModel(graph, plan, socProfile(soc), options), plan ? sim : nullptr);
      },
      py::arg("model"), py::arg("soc"), py::arg("options"),
      "Compiles `model` (a Model: a float build, run in FP16; a QuantizedModel in int8 mode: an INT8 "
      "build with its plan) for SoC `soc`: placement, lowering and memory plan, decided once.");
  m.def(
      "memory_order",
      [](const py::object& model, const std::string& soc, const CompileOptions& options) {
        std::shared_ptr<const Graph> graph;
        const quant::QuantPlan* plan = nullptr;
        std::shared_ptr<const QuantizedExecutor> sim;
        if (py::isinstance<PyQuantizedModel>(model)) {
          const auto& q = model.cast<const PyQuantizedModel&>();
          sim = q.sharedSim();
          graph = std::shared_ptr<const Graph>(sim, &sim->graph());
          if (sim->mode() == quant::SimMode::Int8) plan = &q.plan();
        } else {
          graph = model.cast<const Model&>().sharedGraph();
        }
        memory::MemoryOrder order;
        uint64_t floor = 0;
        {
          py::gil_scoped_release release;
          const SocProfile& profile = socProfile(soc);
          const PartitionReport placement = partitionGraph(*graph, profile, options.op_target);
          order = memory::chooseMemoryOrder(*graph, plan, profile, placement);
          floor = memory::orderFloorBytes(*graph, plan, profile, placement);
        }
        py::dict d;
        d["order"] = order.name;
        d["bound_bytes"] = order.bound_bytes;
        d["exporter_order_bound_bytes"] = order.exporter_bound_bytes;
        d["floor_bytes"] = floor;
        py::list candidates;
        for (const memory::OrderCandidate& c : order.candidates) {
          py::dict row;
          row["name"] = c.name;
          row["bound_bytes"] = c.bound_bytes;
          row["device_switches"] = c.device_switches;
          row["rejected"] = c.rejected;
          candidates.append(row);
        }
        d["candidates"] = candidates;
        return d;
      },
      py::arg("model"), py::arg("soc"), py::arg("options"),
      "The memory-aware node order's choice for `model` on `soc` (as compile_model makes it, before "
      "its fusion-group check): {'order', 'bound_bytes', 'exporter_order_bound_bytes', "
      "'floor_bytes' (no order goes below it), 'candidates': [{'name', 'bound_bytes', 'device_switches', "
      "'rejected'}]}.");
  m.def(
      "load_compiled",
      [](const std::string& path, const std::optional<std::string>& expected_soc,
         std::shared_ptr<CustomOpSet> custom_ops) {
        py::gil_scoped_release release;
        return PyCompiledModel(loadCompiledModel(path, expected_soc, custom_ops), nullptr);
      },
      py::arg("path"), py::arg("expected_soc") = py::none(), py::arg("custom_ops") = nullptr,
      "Verifies and loads a .npub blob as the CompiledModel it serializes. BlobError for a corrupt, "
      "truncated, newer-format, inconsistent or (with expected_soc) foreign-SoC blob.");
  m.def(
      "load_blob",
      [](const std::string& path, const std::optional<std::string>& expected_soc,
         std::shared_ptr<CustomOpSet> custom_ops) {
        std::optional<CompiledModel> m;
        {
          py::gil_scoped_release release;
          m = loadCompiledModel(path, expected_soc, custom_ops);
        }
        py::dict meta = metaDict(*m);
        return py::make_tuple(Model(m->graph), meta);
      },
      py::arg("path"), py::arg("expected_soc") = py::none(), py::arg("custom_ops") = nullptr,
      "Verifies and loads a .npub blob; returns (Model, meta dict: format_version, producer, soc, options, "
      "compile_options, model_digest, extra_sections, program). BlobError as load_compiled.");
  m.attr("BLOB_FORMAT_VERSION") =
      std::to_string(blob::kFormatMajor) + "." + std::to_string(blob::kFormatMinor);
  // The reader's limits (blob/blob_limits.h), the numbers the writer and Toolkit.config refuse with.
  py::dict limits;
  limits["name_bytes"] = blob::kMaxNameBytes;
  limits["text_bytes"] = blob::kMaxTextBytes;
  limits["rank"] = blob::kMaxRank;
  limits["sections"] = blob::kMaxSections;
  m.attr("BLOB_LIMITS") = limits;
  m.def(
      "xxh3_128",
      [](const py::bytes& data) {
        const std::string v = data;
        const blob::Digest d = blob::xxh128(v.data(), v.size());
        return py::bytes(reinterpret_cast<const char*>(d.data()), d.size());
      },
      py::arg("data"),
      "XXH3-128 (seed 0) of `data` as the blob stores digests: low 64 bits then high 64 bits, each "
      "little-endian (docs/blob_format.md).");
}

}  // namespace npuc::bindings
