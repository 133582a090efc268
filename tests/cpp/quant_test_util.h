// Helpers for tests that quantize a graph: seeded standard-normal inputs, a plan calibrated on
// one such sample, and a shared model imported and optimized as build() does.
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "frontend/onnx_import.h"
#include "ir/graph.h"
#include "onnx_test_util.h"
#include "passes/optimize.h"
#include "quant/graph/calibrator.h"
#include "quant/graph/quantizer.h"

namespace npuc::testing {

// One standard-normal float tensor per graph input, reproducible from `seed`.
inline std::vector<Tensor> randomNormalInputs(const Graph& g, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal;
  std::vector<Tensor> inputs;
  for (const Value* in : g.inputs()) {
    Tensor t(in->dtype(), in->shape());
    for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = normal(rng);
    inputs.push_back(std::move(t));
  }
  return inputs;
}

// The INT8 plan of `g` (min/max, per channel) calibrated on randomNormalInputs(g, seed).
inline quant::QuantPlan calibratedPlan(const Graph& g, uint32_t seed = 0) {
  quant::Calibrator calibrator(g);
  calibrator.addSample(randomNormalInputs(g, seed));
  return quant::buildQuantPlan(g, calibrator.ranges({}), {});
}

// shared/models/<file> imported, optimized and with its shared parameters separated, as the
// calibrator prepares the graph it quantizes; null when the shared models are absent.
inline std::unique_ptr<Graph> optimizedSharedModel(const std::string& file) {
  const std::filesystem::path dir = sharedModelsDir();
  if (dir.empty() || !std::filesystem::exists(dir / file)) return nullptr;
  std::unique_ptr<Graph> g = importOnnxFile((dir / file).string());
  optimize(*g);
  quant::separateSharedParameters(*g);
  return g;
}

}  // namespace npuc::testing
