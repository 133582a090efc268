// How large a tensor constant folding may create, shared by the importer's folding
// (frontend/shape_inference.h, frontend/import_tail.h) and the constant_folding pass
// (passes/core/pass_context.h): beyond it the op is kept and computed at run time, so a model
// that expands a small constant into a huge one (ConstantOfShape, Tile, Expand) cannot blow up
// the compiler's memory or the blob.
#pragma once

#include <cstdint>

namespace npuc {

class Node;

constexpr int64_t kDefaultFoldLimitBytes = int64_t{256} << 20;  // 256 MiB

// The bytes folding `n` would allocate, from its outputs' inferred types, before anything is
// evaluated: what both folders compare with the limit. -1 when an output shape is not static;
// INT64_MAX when the count does not fit (it never wraps to a small size that would pass).
int64_t foldOutputBytes(const Node& n);

}  // namespace npuc
