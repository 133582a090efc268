// Host-only graph rewrites the executor applies before planning, for speed on the CPU:
// Conv (+ Add of a same-shape tensor) (+ Relu/LeakyRelu/Clip/Sigmoid/Tanh/HardSwish) chains become one
// ai.npuc "ConvAct" node, which the host kernel runs as a single oneDNN convolution with post-ops.
//
// These rewrites are not part of the compiler's pass pipeline: they only change how the FP32
// host runtime executes a graph, never what it computes (a differential test checks fusion on vs
// off). They apply only when the registry has the ConvAct op.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "opset/registry.h"

namespace npuc {

// Environment switch read at the Python edge (npuc.Runtime with host_fusion=None), never by the
// executor itself: NPUC_HOST_FUSION=0 disables host fusion.
constexpr const char* kHostFusionEnvVar = "NPUC_HOST_FUSION";

// True unless the environment variable above is set to "0", "off" or "false".
bool hostFusionEnabledByEnv();

// The graph passes the executor runs before fusing Conv chains: folding of per-channel affine
// maps (BatchNormalization, Mul / Add by constants) into Conv / Gemm weights and recognition of
// activations exporters spell out (x * Clip(x + 3, 0, 6) / 6 -> HardSwish, ...), so that what
// follows a Conv becomes a oneDNN post-op instead of a pass over memory per op. ONNX Runtime's
// graph optimizer does the same at its default level. They reassociate float arithmetic: results
// change in the last bits only (tests compare fused and unfused runs).
const std::vector<std::string>& hostSimplifyPasses();

// Runs hostSimplifyPasses() to a fixed point; returns how many rewrites they made.
size_t simplifyForHost(Graph& graph);

// Rewrites every fusable Conv chain of `graph` in place; returns how many ConvAct nodes it made.
// A chain is fused only when each intermediate value has a single use and is not a graph output,
// and only when `registry` knows ConvAct (otherwise nothing changes and 0 is returned).
size_t fuseConvActivations(Graph& graph, const OpRegistry& registry);

}  // namespace npuc
