// Layout adapters between npuc's plain (NCHW, row-major) tensors and the layouts oneDNN picks
// for a primitive created with format_tag::any.
//
// On this generation of oneDNN (2.6, AVX-512) the fast convolution implementations (brgconv,
// brdgmm_dw, brgdeconv) only accept channels-last activations; with plain nchw src/dst the library
// falls back to im2col + gemm, 2-17x slower. So the nn kernels let oneDNN choose, and reorder at
// the kernel boundary when the choice differs from plain. Every reorder primitive is built once;
// the reordered copies live in the kernel's workspace.
#pragma once

#include <optional>

#include "opset/ops/dnnl_common.h"

namespace npuc::dnnl_util {

// One activation tensor that crosses a kernel boundary in plain layout but is consumed or produced
// by a primitive in `internal` layout.
class LayoutAdapter {
 public:
  LayoutAdapter() = default;
  // Reserves the internal copy in `ws` when the layouts differ.
  LayoutAdapter(const dnnl::memory::desc& plain, const dnnl::memory::desc& internal, WorkspaceLayout& ws);

  bool reorders() const { return to_internal_.has_value(); }
  const dnnl::memory::desc& internalDesc() const { return internal_; }
  // The memory the primitive reads: `plain_data` itself, or its reordered copy in the workspace.
  dnnl::memory input(const void* plain_data, void* workspace) const;
  // The memory the primitive writes: `plain_data` itself or the workspace copy. When `initial`
  // is given (a sum post-op operand in plain layout) its values are loaded into that memory first.
  dnnl::memory output(void* plain_data, void* workspace, const void* initial = nullptr) const;
  // Moves a primitive's result back into plain layout (no-op when no reorder is needed).
  void finishOutput(const dnnl::memory& internal, void* plain_data) const;

 private:
  dnnl::memory::desc plain_;
  dnnl::memory::desc internal_;
  size_t offset_ = 0;
  std::optional<dnnl::reorder> to_internal_;
  std::optional<dnnl::reorder> to_plain_;
};

// Weights in the layout a primitive wants. Constant weights are reordered once at construction;
// weights that are graph inputs are reordered into the workspace on every run.
class PackedWeights {
 public:
  PackedWeights() = default;
  // `user` describes the weights as stored in the graph; `constant` is their data or null.
  PackedWeights(const dnnl::memory::desc& user, const dnnl::memory::desc& internal, const void* constant,
                WorkspaceLayout& ws);
  dnnl::memory get(const void* user_data, void* workspace) const;

 private:
  dnnl::memory::desc user_;
  dnnl::memory::desc internal_;
  std::optional<dnnl::memory> packed_;  // set for constant weights
  std::optional<dnnl::reorder> reorder_;
  size_t offset_ = 0;
};

// The user scratchpad of a primitive, carved from the workspace.
class Scratchpad {
 public:
  Scratchpad() = default;
  Scratchpad(const dnnl::memory::desc& desc, WorkspaceLayout& ws)
      : desc_(desc), offset_(ws.reserve(desc.get_size())) {}
  dnnl::memory get(void* workspace) const { return wrap(desc_, WorkspaceLayout::at(workspace, offset_)); }

 private:
  dnnl::memory::desc desc_;
  size_t offset_ = 0;
};

// A primitive_attr with a user-managed scratchpad and the given post-ops.
dnnl::primitive_attr userScratchpadAttr(const dnnl::post_ops& ops = dnnl::post_ops());

}  // namespace npuc::dnnl_util
