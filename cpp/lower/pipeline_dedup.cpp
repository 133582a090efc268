#include "lower/pipeline_dedup.h"

#include "blob/byte_io.h"
#include "blob/checksum.h"

namespace npuc::lower {

namespace {

void encodeShape(blob::ByteWriter& w, const Value& v) {
  w.i32(static_cast<int32_t>(v.dtype()));
  w.count(v.shape().size(), "dims");
  for (int64_t d : v.shape()) w.i64(d);
}

void encodeAttribute(blob::ByteWriter& w, const std::string& name, const AttrValue& value) {
  w.unboundedStr(name);
  w.u8(static_cast<uint8_t>(attrKind(value)));
  switch (attrKind(value)) {
    case AttrKind::Int: w.i64(std::get<int64_t>(value)); break;
    case AttrKind::Float: w.f32(std::get<float>(value)); break;
    case AttrKind::String: w.unboundedStr(std::get<std::string>(value)); break;
    case AttrKind::Ints: {
      const auto& v = std::get<std::vector<int64_t>>(value);
      w.count(v.size(), "ints");
      for (int64_t x : v) w.i64(x);
      break;
    }
    case AttrKind::Floats: {
      const auto& v = std::get<std::vector<float>>(value);
      w.count(v.size(), "floats");
      for (float x : v) w.f32(x);
      break;
    }
    case AttrKind::Strings: {
      const auto& v = std::get<std::vector<std::string>>(value);
      w.count(v.size(), "strings");
      for (const std::string& x : v) w.unboundedStr(x);
      break;
    }
    case AttrKind::Tensor: {  // a parameter of the op (rare): its bytes are part of the kernel
      const Tensor& t = std::get<Tensor>(value);
      w.i32(static_cast<int32_t>(t.dtype()));
      w.count(t.shape().size(), "dims");
      for (int64_t d : t.shape()) w.i64(d);
      w.raw(t.raw(), t.nbytes());
      break;
    }
  }
}

}  // namespace

std::string canonicalTaskEncoding(const std::vector<const Node*>& nodes, ElemType compute,
                                  const TileConfig& tile) {
  blob::ByteWriter w;
  w.u8(static_cast<uint8_t>(compute));
  w.count(nodes.size(), "nodes");
  for (const Node* n : nodes) {
    w.unboundedStr(n->opType());
    w.unboundedStr(n->domain());
    w.count(n->attrs().all().size(), "attributes");
    for (const auto& [name, value] : n->attrs().all()) encodeAttribute(w, name, value);
    w.count(n->inputs().size(), "inputs");
    for (const Value* v : n->inputs()) {
      w.u8(v ? (v->isConstant() ? 2 : 1) : 0);  // absent / activation / constant operand
      if (v) encodeShape(w, *v);
    }
    w.count(n->outputs().size(), "outputs");
    for (const Value* v : n->outputs()) encodeShape(w, *v);
  }
  w.u8(tile.tiled ? 1 : 0);
  w.i64(tile.oc_block);
  w.i64(tile.tile_rows);
  w.u8(tile.spatial_outer ? 1 : 0);
  return w.take();
}

std::array<uint8_t, 16> pipelineDigest(const std::string& params) {
  return blob::xxh128(params.data(), params.size());
}

uint32_t PipelineTable::intern(const std::string& op_type, const std::string& params) {
  Pipeline p;
  p.digest = pipelineDigest(params);
  auto it = index_.find(p.digest);
  if (it != index_.end()) return it->second;
  const auto index = static_cast<uint32_t>(pipelines_.size());
  p.op_type = op_type;
  p.params = params;
  index_.emplace(p.digest, index);
  pipelines_.push_back(std::move(p));
  return index;
}

double reuseRate(int64_t unique_pipelines, int64_t npu_tasks) {
  if (npu_tasks <= 0) return 0.0;
  return 1.0 - static_cast<double>(unique_pipelines) / static_cast<double>(npu_tasks);
}

}  // namespace npuc::lower
