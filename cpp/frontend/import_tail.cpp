#include "frontend/import_tail.h"

#include "common/error.h"
#include "frontend/import_options.h"
#include "frontend/shape_inference.h"
#include "frontend/weight_value_check.h"

namespace npuc {

namespace {

// Shape inference failing on a model with dynamic inputs is almost always the missing
// input_size_list; say so next to the op's own message.
void inferWithHint(Graph& g, const ImportOptions& opts) {
  try {
    inferShapesAndFold(g, opts.fold_limit_bytes);
  } catch (const ShapeError& e) {
    throw ShapeError(e.what() + dynamicInputHint(g));
  }
}

}  // namespace

void finishImport(Graph& g, const ImportOptions& opts) {
  checkWeightValues(g);  // NaN weights, Inf in Conv/Gemm/MatMul/BN parameters
  applyInputSizes(g, opts);
  g.topoSort();
  if (!opts.output_names.empty()) cutAtOutputs(g, opts.output_names);
  g.verify();
  if (opts.infer_shapes) {
    inferWithHint(g, opts);
    requireStaticShapes(g);
    checkOpsSupported(g);
  }
}

}  // namespace npuc
