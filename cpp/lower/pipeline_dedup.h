// Pipeline deduplication: NPU tasks whose canonical description — op types and attributes of the
// fused nodes, operand shapes and dtypes, compute type, tile configuration — is equal compile to
// one pipeline, keyed by the XXH3-128 digest of that description. Weights, quantization scales and
// node names are per-task data bound at run time, so they are not part of the key.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "lower/lowered_program.h"

namespace npuc::lower {

// The canonical bytes of an NPU task (deterministic; equal for equal descriptions).
std::string canonicalTaskEncoding(const std::vector<const Node*>& nodes, ElemType compute,
                                  const TileConfig& tile);

// Collects unique pipelines in first-use order.
class PipelineTable {
 public:
  // The pipeline index for this description (a new entry the first time it is seen).
  uint32_t intern(const std::string& op_type, const std::string& params);
  std::vector<Pipeline> take() { return std::move(pipelines_); }
  size_t size() const { return pipelines_.size(); }

 private:
  std::vector<Pipeline> pipelines_;
  std::map<std::array<uint8_t, 16>, uint32_t> index_;
};

// XXH3-128 of a pipeline's params (the digest PIPE stores and the decoder re-checks).
std::array<uint8_t, 16> pipelineDigest(const std::string& params);

// 1 - unique / npu_tasks; 0 when there are no NPU tasks.
double reuseRate(int64_t unique_pipelines, int64_t npu_tasks);

}  // namespace npuc::lower
