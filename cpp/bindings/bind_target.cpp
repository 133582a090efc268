// SoC profiles for Python: the list `npuc socs` prints and the checks behind config(target_platform).
#include <pybind11/stl.h>

#include "bindings/bindings.h"
#include "bindings/model.h"
#include "common/error.h"
#include "target/partition.h"
#include "target/soc_profile.h"

namespace npuc::bindings {

namespace {

py::dict profileSummary(const SocProfile& p) {
  py::dict d;
  d["name"] = p.name;
  d["aliases"] = p.aliases;
  d["description"] = p.description;
  d["npu_cores"] = p.npu.cores;
  d["clock_mhz"] = p.npu.clock_mhz;
  d["onchip_buffer_bytes"] = p.npu.onchip_buffer_bytes;
  d["ddr_bytes_per_cycle"] = p.npu.ddr_bytes_per_cycle;
  py::list quantized_dtypes;
  for (quant::SchemeDType t : p.quantized_dtypes) quantized_dtypes.append(quant::schemeDTypeName(t));
  d["quantized_dtypes"] = quantized_dtypes;
  py::list dtypes;
  py::dict tops;
  for (NpuDType t : p.dtypes) {
    dtypes.append(npuDTypeName(t));
    tops[npuDTypeName(t)] = p.peakTops(t);
  }
  d["dtypes"] = dtypes;
  d["peak_tops"] = tops;
  d["cpu_cores"] = p.cpu.cores;
  d["cpu_fp32_gflops"] = p.cpu.fp32_gflops;
  d["file"] = p.file;
  return d;
}

py::dict partitionSummary(const PartitionReport& r) {
  py::dict d;
  d["soc"] = r.soc;
  d["handovers"] = r.handovers;
  d["npu_mac_share"] = r.npuMacShare();
  d["total_macs"] = r.total_macs;
  py::list cpu;
  for (const NodePlacement& p : r.nodes) {
    if (p.device != Device::Cpu) continue;
    py::dict n;
    n["node"] = p.label;
    n["op_type"] = p.node ? p.node->opType() : std::string();
    n["reason"] = placementReasonName(p.reason);
    n["detail"] = p.detail;
    n["cpu_runtime_lacks"] = p.cpu_runtime_lacks;
    cpu.append(n);
  }
  d["cpu_nodes"] = cpu;
  d["text"] = r.toText();
  return d;
}

}  // namespace

void bindTarget(py::module_& m) {
  m.def("soc_names", &socNames, "Canonical names of every SoC profile (built-in and $NPUC_SOC_DIR).");
  m.def(
      "soc_profile", [](const std::string& name) { return profileSummary(socProfile(name)); },
      py::arg("name"),
      "Summary of one SoC profile (name or alias); ConfigError listing the valid names if unknown.");
  m.def(
      "require_quantized_dtype",
      [](const std::string& soc, const std::string& dtype) {
        const std::optional<quant::SchemeDType> t = quant::schemeDTypeFromName(dtype);
        if (!t) throw ConfigError("quantized_dtype '" + dtype + "' is unknown");
        requireQuantizedDtype(socProfile(soc), *t);
      },
      py::arg("soc"), py::arg("dtype"),
      "ConfigError naming the SoCs that have `dtype` (an RKNN quantized_dtype) when `soc` does not.");
  m.def(
      "partition",
      [](const Model& model, const std::string& soc, const OpTargetMap& op_target) {
        return partitionSummary(partitionGraph(model.graph(), socProfile(soc), op_target));
      },
      py::arg("model"), py::arg("soc"), py::arg("op_target") = OpTargetMap{},
      "NPU/CPU placement of every node on `soc`: hand-overs, NPU MAC share, and each CPU node with the "
      "reason it fell back (unsupported op, which limit, forced by op_target).");
}

}  // namespace npuc::bindings
