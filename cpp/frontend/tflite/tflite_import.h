// TFLite (.tflite flatbuffer) -> npuc IR: verify the flatbuffer (tflite_file), convert the main
// subgraph's operators in order (tflite_ops_*.cpp) to canonical NCHW nodes (tflite_builder.h says
// how layouts are kept), then the tail every frontend shares (frontend/import_tail.h).
// docs/frontend_tflite.md describes the supported ops, layout rules and quantized models.
#pragma once

#include <map>
#include <memory>
#include <string>

#include "frontend/import_tail.h"
#include "ir/graph.h"

namespace npuc {

struct TfliteImportOptions {
  ImportOptions base;
  // RKNN's input_is_nchw: false (default) means a 4-D input is NHWC as TFLite declares it and
  // becomes an NCHW graph input [N,C,H,W] of the same name; true keeps the file's dims as the
  // graph input's (the data is taken as NCHW already).
  bool input_is_nchw = false;
};

// The float range of one activation of a quantized TFLite model, from its scale and zero point.
struct TfliteQuantRange {
  float min = 0, max = 0;
  float scale = 0;
  int64_t zero_point = 0;
  std::string dtype;  // "int8", "uint8", "int16"
};

struct TfliteImport {
  std::unique_ptr<Graph> graph;
  // By value name: the ranges the file's quantized activations declare (empty for a float model).
  // Building with do_quantization=False quantizes from these instead of calibrating.
  std::map<std::string, TfliteQuantRange> ranges;
  // By weight constant name: how the file quantized it (scales along `axis` of the npuc layout,
  // -1 per tensor), to compare with npuc's own per-channel scales.
  struct WeightQuant {
    std::vector<float> scales;
    int axis = -1;
  };
  std::map<std::string, WeightQuant> weight_scales;
};

// Throws ModelLoadError (unreadable, truncated or foreign file, verifier failure, bad indices or
// buffer sizes, naming the file and the record), UnsupportedOpError (an op npuc does not build,
// naming it and its operator index), or the tail's errors prefixed with the file name.
TfliteImport importTfliteFile(const std::string& path, const TfliteImportOptions& opts = {});
TfliteImport importTfliteBytes(const std::string& bytes, const TfliteImportOptions& opts = {},
                               const std::string& name = "<tflite>");

}  // namespace npuc
