// How large a tensor constant folding may create, shared by the importer's folding
// (frontend/shape_inference.h, frontend/import_tail.h) and the constant_folding pass
// (passes/core/pass_context.h): beyond it the op is kept and computed at run time, so a model
// that expands a small constant into a huge one (ConstantOfShape, Tile, Expand) cannot blow up
// the compiler's memory or the blob.
#pragma once

#include <cstdint>

namespace npuc {

constexpr int64_t kDefaultFoldLimitBytes = int64_t{256} << 20;  // 256 MiB

}  // namespace npuc
