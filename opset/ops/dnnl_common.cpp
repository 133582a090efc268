#include "opset/ops/dnnl_common.h"

#include <string>

namespace npuc::dnnl_util {

const dnnl::engine& cpuEngine() {
  static const dnnl::engine engine(dnnl::engine::kind::cpu, 0);
  return engine;
}

dnnl::memory::dims toDims(const Shape& shape) {
  return dnnl::memory::dims(shape.begin(), shape.end());
}

dnnl::memory::desc plainDesc(const Shape& shape) {
  if (shape.empty()) return dnnl::memory::desc({1}, dnnl::memory::data_type::f32, dnnl::memory::dims{1});
  if (shape.size() > DNNL_MAX_NDIMS) {
    throw UnsupportedOpError("tensor of rank " + std::to_string(shape.size()) +
                             " exceeds oneDNN's limit of " + std::to_string(DNNL_MAX_NDIMS));
  }
  const std::vector<int64_t> strides = shapeStrides(shape);
  return dnnl::memory::desc(toDims(shape), dnnl::memory::data_type::f32,
                            dnnl::memory::dims(strides.begin(), strides.end()));
}

dnnl::memory wrap(const dnnl::memory::desc& desc, const void* data) {
  return dnnl::memory(desc, cpuEngine(), const_cast<void*>(data));
}

namespace {

// The calling thread's stream on cpuEngine(). A stream must not be used by two threads at once,
// but making one per execution cost a heap allocation and a oneDNN object per primitive call
// (~150 calls per ShuffleNet run), so each thread keeps its own for its lifetime.
dnnl::stream& threadStream() {
  thread_local dnnl::stream stream(cpuEngine());
  return stream;
}

}  // namespace

void execute(const dnnl::primitive& prim, const std::unordered_map<int, dnnl::memory>& args) {
  dnnl::stream& stream = threadStream();
  prim.execute(stream, args);
  stream.wait();
}

void reorderNow(const dnnl::memory& from, const dnnl::memory& to) {
  dnnl::reorder r(from, to);
  execute(r, {{DNNL_ARG_FROM, from}, {DNNL_ARG_TO, to}});
}

}  // namespace npuc::dnnl_util
