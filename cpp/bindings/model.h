// The C++ side of the Python Model class: an immutable imported graph, shared with the Runtimes
// built from it.
#pragma once

#include <map>
#include <memory>
#include <string>

#include "frontend/onnx_import.h"
#include "frontend/tflite/tflite_import.h"
#include "ir/graph.h"
#include "quant/graph/qdq_import.h"
#include "runtime/model_stats.h"

namespace npuc::bindings {

class Model {
 public:
  explicit Model(std::shared_ptr<const Graph> graph)
      : graph_(std::move(graph)), stats_(computeModelStats(*graph_)) {}
  // Import with the GIL released (parsing and shape inference take a while on big models).
  static Model fromFile(const std::string& path, const ImportOptions& opts);
  static Model fromBytes(const std::string& bytes, const ImportOptions& opts);
  const Graph& graph() const { return *graph_; }
  const std::shared_ptr<const Graph>& sharedGraph() const { return graph_; }
  const ModelStats& stats() const { return stats_; }

  // What a quantized TFLite file declares (empty for every other model): the float range of each
  // activation and the scales of each weight. build(do_quantization=False) quantizes from them.
  std::map<std::string, TfliteQuantRange> imported_ranges;
  std::map<std::string, TfliteImport::WeightQuant> imported_weight_scales;
  // What an imported QDQ model's Q/DQ nodes carried (bind_qdq.cpp, quant/graph/qdq_import.h); its
  // graph member is empty (the float graph is this model's). Null for every other model.
  std::shared_ptr<const quant::QdqImport> qdq;

 private:
  std::shared_ptr<const Graph> graph_;
  ModelStats stats_;  // the graph never changes, so computed once
};

}  // namespace npuc::bindings
