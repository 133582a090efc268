#include "opset/ops/dnnl_layout.h"

#include <cstring>

namespace npuc::dnnl_util {

LayoutAdapter::LayoutAdapter(const dnnl::memory::desc& plain, const dnnl::memory::desc& internal,
                             WorkspaceLayout& ws)
    : plain_(plain), internal_(internal) {
  if (plain == internal) return;
  offset_ = ws.reserve(internal.get_size());
  const dnnl::engine& eng = cpuEngine();
  to_internal_.emplace(dnnl::reorder::primitive_desc(eng, plain, eng, internal));
  to_plain_.emplace(dnnl::reorder::primitive_desc(eng, internal, eng, plain));
}

dnnl::memory LayoutAdapter::input(const void* plain_data, void* workspace) const {
  if (!reorders()) return wrap(plain_, plain_data);
  dnnl::memory internal = wrap(internal_, WorkspaceLayout::at(workspace, offset_));
  execute(*to_internal_, {{DNNL_ARG_FROM, wrap(plain_, plain_data)}, {DNNL_ARG_TO, internal}});
  return internal;
}

dnnl::memory LayoutAdapter::output(void* plain_data, void* workspace, const void* initial) const {
  if (!reorders()) {
    if (initial && initial != plain_data) std::memcpy(plain_data, initial, plain_.get_size());
    return wrap(plain_, plain_data);
  }
  dnnl::memory internal = wrap(internal_, WorkspaceLayout::at(workspace, offset_));
  if (initial) execute(*to_internal_, {{DNNL_ARG_FROM, wrap(plain_, initial)}, {DNNL_ARG_TO, internal}});
  return internal;
}

void LayoutAdapter::finishOutput(const dnnl::memory& internal, void* plain_data) const {
  if (!reorders()) return;
  execute(*to_plain_, {{DNNL_ARG_FROM, internal}, {DNNL_ARG_TO, wrap(plain_, plain_data)}});
}

PackedWeights::PackedWeights(const dnnl::memory::desc& user, const dnnl::memory::desc& internal,
                             const void* constant, WorkspaceLayout& ws)
    : user_(user), internal_(internal) {
  if (constant) {
    packed_.emplace(internal, cpuEngine());
    reorderNow(wrap(user, constant), *packed_);
    return;
  }
  if (user == internal) return;
  offset_ = ws.reserve(internal.get_size());
  reorder_.emplace(dnnl::reorder::primitive_desc(cpuEngine(), user, cpuEngine(), internal));
}

dnnl::memory PackedWeights::get(const void* user_data, void* workspace) const {
  if (packed_) return *packed_;
  if (!reorder_) return wrap(user_, user_data);
  dnnl::memory internal = wrap(internal_, WorkspaceLayout::at(workspace, offset_));
  execute(*reorder_, {{DNNL_ARG_FROM, wrap(user_, user_data)}, {DNNL_ARG_TO, internal}});
  return internal;
}

dnnl::primitive_attr userScratchpadAttr(const dnnl::post_ops& ops) {
  dnnl::primitive_attr attr;
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  attr.set_post_ops(ops);
  return attr;
}

}  // namespace npuc::dnnl_util
