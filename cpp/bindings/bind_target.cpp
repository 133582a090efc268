// SoC profiles for Python: the list `npuc socs` prints and the checks behind config(target_platform).
#include <pybind11/stl.h>

#include "bindings/bindings.h"
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

}  // namespace

void bindTarget(py::module_& m) {
  m.def("soc_names", &socNames, "Canonical names of every SoC profile (built-in and $NPUC_SOC_DIR).");
  m.def(
      "soc_profile", [](const std::string& name) { return profileSummary(socProfile(name)); }, py::arg("name"),
      "Summary of one SoC profile (name or alias); ConfigError listing the valid names if unknown.");
}

}  // namespace npuc::bindings
