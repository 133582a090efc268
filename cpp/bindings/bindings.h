// Shared declarations of the _npuc extension: one bind function per binding file, and the
// numpy <-> npuc type conversions they share.
#pragma once

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include "ir/dtype.h"
#include "ir/graph.h"
#include "ir/tensor.h"
#include "memory/memory_report.h"
#include "passes/core/pass_context.h"
#include "perf/cost_model.h"
#include "perf/perf_report.h"

namespace npuc::bindings {

namespace py = pybind11;

void bindModel(py::module_& m);    // model.cpp: Model (import, info, export)
void bindRuntime(py::module_& m);  // runtime.cpp: Runtime (planned FP32 executor)
void bindQuant(py::module_& m);    // bind_quant.cpp: Calibrator, QuantizedModel (INT8/FP16 simulator)
void bindQdq(py::module_& m);      // bind_qdq.cpp: QDQ model import and its INT8 build from given scales
void bindPerf(py::module_& m);     // bind_perf.cpp: eval_perf (simulated per-layer cycles)
void bindTarget(py::module_& m);   // bind_target.cpp: SoC profiles
void bindPasses(py::module_& m);   // bind_passes.cpp: optimize (graph optimizer)
void bindDataset(py::module_& m);  // bind_dataset.cpp: read_npy / parse_dataset_list (calibration lists)
void bindMemory(py::module_& m);   // bind_memory.cpp: eval_memory (NPU memory plan and report)
void bindCompile(py::module_& m);  // bind_compile.cpp: CompileOptions, CompiledModel (compile, blob I/O)
void bindCustomOps(py::module_& m);  // bind_custom_ops.cpp: CustomOpSet (reg_custom_op's Python ops)

// Report dicts shared by the functions that produce the reports (bind_perf.cpp, bind_memory.cpp).
py::dict perfReportDict(const perf::PerfReport& report, const perf::CostModel& model);
py::dict memoryReportDict(const memory::MemoryReport& report);

// The optimizer's target (PassContext::target) from the Python spellings: a SoC name, an NPU dtype
// name ("int8", "fp16", ...) and op_target; ConfigError for an unknown SoC or dtype.
PassTarget buildTarget(const std::string& soc, const std::string& dtype, const OpTargetMap& op_target);

// The numpy dtype holding `dtype` elements (native byte order).
py::dtype toNumpyDType(DType dtype);
// (npuc's dtypeName() strings are numpy's names too: "float32", "int64", "bool", ...)

// The npuc element type of a numpy dtype; Undefined for types npuc cannot hold (complex, object,
// strings, non-native byte order).
DType fromNumpyDType(const py::dtype& dtype);

// [{'name', 'dtype', 'shape'}] for graph inputs or outputs, as Model and QuantizedModel report them.
py::list valueInfoList(const std::vector<Value*>& values);

// A numpy array that owns a copy of `t`.
py::array tensorToNumpy(const Tensor& t);

}  // namespace npuc::bindings
