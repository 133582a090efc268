// How many bytes one tensor takes where it is stored: on the NPU side (its NPU dtype, channels
// padded to the SoC's alignment as in the NC1HWC2 layout) or on the host (the IR's plain layout
// and dtype, FP32 for float data). The memory plan and the memory report size tensors with these.
#pragma once

#include <cstdint>
#include <optional>

#include "ir/graph.h"
#include "quant/graph/quant_plan.h"
#include "target/soc_profile.h"

namespace npuc::memory {

// Where a copy of a tensor lives and in which format.
enum class BufferFormat : uint8_t { Npu = 0, Host = 1 };
const char* bufferFormatName(BufferFormat f);  // "npu" / "host"

// What the NPU stores `v` as. With a QuantPlan (INT8 build): the plan's dtype for the value
// (int8 activations, int32 biases, fp16 where the plan says), the IR dtype for values the plan
// leaves alone (shape tensors, indices). Without one (float build, run in FP16): float32 -> fp16,
// other dtypes unchanged.
DType npuStorageDType(const Value& v, const quant::QuantPlan* plan);

// Elements of `shape` once dim 1 (channels, as the cost model reads NCHW and [N, C, ...]) is
// padded to the SoC's "other" alignment for `dtype` (C2 of NC1HWC2: C1 = ceil(C / C2)). No
// padding for rank < 2, for dtypes the NPU has no alignment for (int32, int64, ...) and for
// dtypes this SoC does not compute in.
int64_t npuStoredElements(const Shape& shape, DType dtype, const SocProfile& soc);

// Bytes of an activation `v` in `format` (not yet rounded to any alignment). ShapeError naming
// the value when its shape is not static.
uint64_t activationBytes(const Value& v, BufferFormat format, const quant::QuantPlan* plan,
                         const SocProfile& soc);

// The NPU dtype (for the alignment table) of a storage dtype, if the NPU computes in it.
std::optional<NpuDType> alignmentDType(DType storage);

}  // namespace npuc::memory
