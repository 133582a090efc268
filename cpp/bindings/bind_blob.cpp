// write_blob / load_blob: the .npub container (cpp/blob) for Python. Toolkit.export_npub and
// Toolkit.load_blob (python/npuc/toolkit.py) are built on these.
#include <pybind11/stl.h>

#include "bindings/bindings.h"
#include "bindings/model.h"
#include "blob/blob.h"
#include "blob/blob_format.h"
#include "lower/program_sections.h"
#include "memory/memory_report.h"

namespace npuc::bindings {

namespace {

// Counts of the lowered program (TASK/PIPE/CPUO/NWGT), None for a blob without one; the names of
// the nodes it runs on the CPU (`graph`: the blob's graph, which the program indexes).
py::object programDict(const std::optional<lower::LoweredProgram>& program, const Graph& graph) {
  if (!program) return py::none();
  const lower::ProgramSummary s = lower::summarize(*program);
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
  const std::vector<Node*> nodes = graph.nodeList();
  py::list cpu_nodes;
  for (const lower::CpuOp& op : program->cpu_ops) cpu_nodes.append(nodes.at(op.node)->name());
  d["cpu_op_nodes"] = cpu_nodes;
  return d;
}

py::dict metaDict(const blob::LoadedBlob& b) {
  py::dict d;
  d["format_version"] = std::to_string(b.meta.format_major) + "." + std::to_string(b.meta.format_minor);
  d["producer"] = b.meta.producer;
  d["soc"] = b.meta.soc;
  d["options"] = b.meta.options;
  d["model_digest"] = blob::digestHex(b.meta.model_digest);
  py::list extra;
  for (const blob::ExtraSection& s : b.extra_sections) extra.append(blob::fourccName(s.kind));
  d["extra_sections"] = extra;
  return d;
}

}  // namespace

void bindBlob(py::module_& m) {
  m.def(
      "write_blob",
      [](const Model& model, const std::string& path, const std::string& soc,
         const std::map<std::string, std::string>& options) {
        blob::BlobWriteOptions opts;
        opts.soc = soc;
        opts.options = options;
        py::gil_scoped_release release;
        // The FP16 memory plan (optional MPLN section): eval_memory after load_blob reads it. Planned
        // for the partition the recorded options give (op_target), as the program below is lowered.
        opts.extra_sections.push_back({blob::kSectionMemoryPlan, false,
                                       memory::encodeMemoryPlanFor(model.graph(), nullptr, soc, opts.options)});
        lower::appendProgramSections(model.graph(), nullptr, &opts);  // TASK, PIPE, CPUO, NWGT
        blob::writeBlob(model.graph(), path, opts);
      },
      py::arg("model"), py::arg("path"), py::arg("soc"),
      py::arg("options") = std::map<std::string, std::string>{},
      "Writes `model` as a .npub blob for `soc`, recording the build options (str -> str). Identical inputs "
      "give byte-identical files.");
  m.def(
      "load_blob",
      [](const std::string& path, const std::optional<std::string>& expected_soc) {
        blob::LoadedBlob b;
        std::optional<lower::LoweredProgram> program;
        {
          py::gil_scoped_release release;
          b = blob::loadBlob(path, expected_soc);
          program = lower::readProgram(b);  // decoded and verified against the graph
        }
        py::dict meta = metaDict(b);
        meta["program"] = programDict(program, *b.graph);
        return py::make_tuple(Model(std::shared_ptr<const Graph>(std::move(b.graph))), meta);
      },
      py::arg("path"), py::arg("expected_soc") = py::none(),
      "Verifies and loads a .npub blob; returns (Model, meta dict with format_version, producer, soc, "
      "options, "
      "model_digest, extra_sections, program: task/pipeline counts, reuse rate and cpu_op_nodes, or None). Raises BlobError for a corrupt, truncated, newer-format or (with "
      "expected_soc) foreign-SoC blob.");
  m.attr("BLOB_FORMAT_VERSION") =
      std::to_string(blob::kFormatMajor) + "." + std::to_string(blob::kFormatMinor);
}

}  // namespace npuc::bindings
