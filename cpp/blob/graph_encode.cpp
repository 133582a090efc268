// GRAPH + WEIGHTS encoding (layout in docs/blob_format.md, "GRAPH section").
#include <fmt/format.h>

#include <map>
#include <variant>

#include "blob/blob_format.h"
#include "blob/graph_section.h"
#include "common/error.h"

namespace npuc::blob {

namespace {

// Appends tensor bytes to WEIGHTS, each at a multiple of kBlobAlignment.
class WeightsWriter {
 public:
  uint64_t add(const Tensor& t) {
    w_.padTo(kBlobAlignment);
    const uint64_t offset = w_.size();
    w_.raw(t.raw(), t.nbytes());
    return offset;
  }
  std::string finish() {
    w_.padTo(kBlobAlignment);
    return w_.take();
  }

 private:
  ByteWriter w_;
};

// `describe()` names the shape's owner; called only for the message (this runs once per value).
template <typename Describe>
void writeShape(ByteWriter& w, const Shape& shape, Describe describe) {
  if (shape.size() > kMaxRank)
    throw BlobError(fmt::format("cannot write blob: {} has rank {}, more than the .npub limit of {}",
                                describe(), shape.size(), kMaxRank));
  w.count(shape.size(), "dims");
  for (int64_t d : shape) w.i64(d);
}

// dtype, shape, then where the bytes sit in WEIGHTS.
void writeTensor(ByteWriter& w, WeightsWriter& weights, const Tensor& t, const std::string& what) {
  if (!isStorable(t.dtype()) || !t.defined())
    throw BlobError("cannot write blob: " + what + " holds no storable tensor (dtype " +
                    dtypeName(t.dtype()) + ")");
  w.i32(static_cast<int32_t>(t.dtype()));
  writeShape(w, t.shape(), [&] { return what; });
  w.u64(weights.add(t));
  w.u64(t.nbytes());
}

void writeQuant(ByteWriter& w, const QuantParams& q, const std::string& value) {
  if (q.scales.size() != q.zero_points.size() || q.scales.empty())
    throw BlobError(
        fmt::format("cannot write blob: quantization parameters of '{}' have {} scales and {} zero points",
                    value, q.scales.size(), q.zero_points.size()));
  w.i32(q.axis);
  w.count(q.scales.size(), "quantization scales");
  for (float s : q.scales) w.f32(s);
  for (int32_t z : q.zero_points) w.i32(z);
}

void writeAttr(ByteWriter& w, WeightsWriter& weights, const std::string& name, const AttrValue& a,
               const Node& node) {
  w.str(name, kMaxNameBytes, "attribute name");
  w.u8(static_cast<uint8_t>(attrKind(a)));
  struct Visitor {
    ByteWriter& w;
    WeightsWriter& weights;
    std::string where;
    void operator()(int64_t v) const { w.i64(v); }
    void operator()(float v) const { w.f32(v); }
    void operator()(const std::string& v) const { w.str(v, kMaxTextBytes, "string attribute"); }
    void operator()(const std::vector<int64_t>& v) const {
      w.count(v.size(), "ints");
      for (int64_t x : v) w.i64(x);
    }
    void operator()(const std::vector<float>& v) const {
      w.count(v.size(), "floats");
      for (float x : v) w.f32(x);
    }
    void operator()(const std::vector<std::string>& v) const {
      w.count(v.size(), "strings");
      for (const std::string& x : v) w.str(x, kMaxTextBytes, "strings attribute element");
    }
    void operator()(const Tensor& t) const { writeTensor(w, weights, t, where); }
  };
  std::visit(Visitor{w, weights, "attribute '" + name + "' of node '" + node.name() + "'"}, a);
}

// Graph inputs, then constants, then node outputs: the order the reader rebuilds them in, so a
// loaded graph re-encodes to the same bytes.
std::vector<const Value*> canonicalValueOrder(const Graph& graph) {
  std::vector<const Value*> order(graph.inputs().begin(), graph.inputs().end());
  for (const Value* v : graph.values())
    if (v->isConstant() && !v->isGraphInput()) order.push_back(v);
  for (const Node* n : graph.nodes())
    for (const Value* out : n->outputs()) order.push_back(out);
  return order;
}

// An NpuPacked constant: dtype and shape as a Plain one, but the (offset, size) name its NWGT entry.
void writePackedConstant(ByteWriter& w, const Value& v, const PackedConstant& p) {
  const Tensor& t = v.constant();
  if (t.dtype() != DType::Float32)
    throw BlobError("cannot write blob: constant '" + v.name() + "' is " + dtypeName(t.dtype()) +
                    "; only float32 constants can be stored as NPU-packed weights");
  w.i32(static_cast<int32_t>(t.dtype()));
  writeShape(w, t.shape(), [&] { return "constant '" + v.name() + "'"; });
  w.u64(p.offset);
  w.u64(p.size);
}

void writeValue(ByteWriter& w, WeightsWriter& weights, const Value& v, const QuantParams* quant,
                const PackedConstant* packed) {
  w.str(v.name(), kMaxNameBytes, "value name");
  uint8_t flags = 0;
  if (v.hasShape() || v.isConstant()) flags |= kValueHasShape;
  if (v.isConstant()) flags |= kValueConstant;
  if (quant) flags |= kValueHasQuant;
  if (packed) {
    w.u8(flags);
    w.u8(static_cast<uint8_t>(Layout::NpuPacked));
    writePackedConstant(w, v, *packed);
  } else if (v.isConstant()) {
    w.u8(flags);
    w.u8(static_cast<uint8_t>(Layout::Plain));
    writeTensor(w, weights, v.constant(), "constant '" + v.name() + "'");
  } else {
    w.u8(flags);
    w.u8(static_cast<uint8_t>(Layout::Plain));
    w.i32(static_cast<int32_t>(v.dtype()));
    writeShape(w, v.hasShape() ? v.shape() : Shape{}, [&] { return "value '" + v.name() + "'"; });
  }
  if (quant) writeQuant(w, *quant, v.name());
}

void writeStringMap(ByteWriter& w, const std::map<std::string, std::string>& m, const char* what) {
  w.count(m.size(), what);
  for (const auto& [k, v] : m) {
    w.str(k, kMaxNameBytes, "metadata key");
    w.str(v, kMaxTextBytes, "metadata value");
  }
}

}  // namespace

EncodedGraph encodeGraph(const Graph& graph, const std::map<std::string, QuantParams>& quant,
                         const std::map<std::string, PackedConstant>& packed) {
  ByteWriter w;
  WeightsWriter weights;
  w.str(graph.name, kMaxNameBytes, "graph name");
  w.count(graph.opset_imports.size(), "opset imports");
  for (const auto& [domain, version] : graph.opset_imports) {
    w.str(domain, kMaxNameBytes, "opset import domain");
    w.i64(version);
  }
  writeStringMap(w, graph.metadata, "metadata entries");

  const std::vector<const Value*> order = canonicalValueOrder(graph);
  std::map<const Value*, uint32_t> index;  // lookup only; never iterated
  for (const Value* v : order) index.emplace(v, static_cast<uint32_t>(index.size()));
  for (const auto& [name, q] : quant) {
    const Value* v = graph.findValue(name);
    if (!v || !index.count(v))
      throw BlobError("cannot write blob: quantization parameters given for unknown value '" + name + "'");
  }
  for (const auto& [name, p] : packed) {
    const Value* v = graph.findValue(name);
    if (!v || !v->isConstant())
      throw BlobError("cannot write blob: NPU-packed weights given for '" + name + "', which is no constant");
  }
  w.count(order.size(), "values");
  for (const Value* v : order) {
    auto q = quant.find(v->name());
    auto p = packed.find(v->name());
    writeValue(w, weights, *v, q == quant.end() ? nullptr : &q->second,
               p == packed.end() ? nullptr : &p->second);
  }
  auto indexOf = [&](const Value* v, const std::string& where) -> uint32_t {
    if (!v) return kNoValue;
    auto it = index.find(v);
    if (it == index.end())
      throw BlobError("cannot write blob: " + where + " reads '" + v->name() +
                      "', which is no graph input, constant or node output");
    return it->second;
  };

  w.count(graph.inputs().size(), "graph inputs");
  for (const Value* v : graph.inputs()) w.u32(indexOf(v, "graph input list"));
  w.count(graph.outputs().size(), "graph outputs");
  for (const Value* v : graph.outputs()) w.u32(indexOf(v, "graph output list"));

  w.count(graph.numNodes(), "nodes");
  for (const Node* n : graph.nodes()) {
    w.str(n->opType(), kMaxNameBytes, "op type");
    w.str(n->domain(), kMaxNameBytes, "node domain");
    w.str(n->name(), kMaxNameBytes, "node name");
    const std::string where = "node '" + n->name() + "' (" + n->opType() + ")";
    w.count(n->numInputs(), "node inputs");
    for (const Value* in : n->inputs()) w.u32(indexOf(in, where));
    w.count(n->numOutputs(), "node outputs");
    for (const Value* out : n->outputs()) w.u32(indexOf(out, where));
    w.count(n->attrs().all().size(), "attributes");
    for (const auto& [name, a] : n->attrs().all()) writeAttr(w, weights, name, a, *n);
  }
  return {w.take(), weights.finish()};
}

}  // namespace npuc::blob
