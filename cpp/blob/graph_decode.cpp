// GRAPH + WEIGHTS decoding. Two phases: parse every record into plain structs while checking each
// field against the bytes that remain and against the format's ranges, then check the records
// against each other (indices, roles, topological order, weight extents) and only then build the
// IR. Nothing is allocated from a length that was not first bounded by the remaining bytes.
#include <fmt/format.h>
#include <sys/mman.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <set>
#include <unordered_set>

#include "blob/blob_format.h"
#include "blob/graph_section.h"
#include "common/error.h"

namespace npuc::blob {

namespace {

// Names (values, nodes, ops, domains, attribute and metadata keys) longer than kMaxNameBytes and
// text (string attributes, metadata values) longer than kMaxTextBytes are corrupt (blob_limits.h).
// Bytes each element of a list takes at least, to bound counts before allocating.
constexpr size_t kMinValueRecordBytes = 4 + 1 + 1 + 4 + 4;  // empty name, flags, layout, dtype, rank
constexpr size_t kMinNodeRecordBytes = 4 * 3 + 4 * 3;       // three empty strings, three counts
constexpr size_t kMinAttrRecordBytes = 4 + 1;               // empty name, kind

struct TensorRef {
  DType dtype = DType::Undefined;
  Shape shape;
  uint64_t offset = 0;
  uint64_t size = 0;
};

struct RawValue {
  std::string name;
  uint8_t flags = 0;
  DType dtype = DType::Undefined;
  Shape shape;
  TensorRef weight;     // constants only: in WEIGHTS, or in NWGT when `packed`
  bool packed = false;  // layout tag NpuPacked (2.0)
  std::optional<QuantParams> quant;
  uint64_t record_offset = 0;
};

struct RawNode {
  std::string op_type, domain, name;
  std::vector<uint32_t> inputs, outputs;
  std::vector<std::pair<std::string, AttrValue>> attrs;
  uint64_t record_offset = 0;
};

class GraphDecoder {
 public:
  GraphDecoder(ByteReader r, const GraphSources& src)
      : r_(std::move(r)),
        weights_(src.weights),
        weights_size_(src.weights_size),
        weights_offset_(src.weights_offset),
        owner_(src.owner),
        src_(src) {}

  DecodedGraph decode();

 private:
  void parseHeader();
  DType readDType(const char* what, bool storable);
  Shape readShape(bool known_dims_only);
  TensorRef readTensorRef(const char* what);
  TensorRef readPackedRef(const std::string& value);
  void checkPackedExtents() const;
  Tensor wrapTensor(const TensorRef& t) const;
  Tensor placeholder(const TensorRef& t) const;
  RawValue readValue();
  QuantParams readQuant(const RawValue& v);
  RawNode readNode();
  AttrValue readAttr(uint8_t kind);
  std::vector<uint32_t> readIndices(const char* what, bool allow_missing);
  void checkRoles();
  DecodedGraph build();
  [[noreturn]] void failAt(uint64_t offset, const std::string& msg) const;

  ByteReader r_;
  const uint8_t* weights_;
  size_t weights_size_;
  uint64_t weights_offset_;
  std::shared_ptr<void> owner_;
  GraphSources src_;

  std::string name_;
  std::map<std::string, int64_t> opsets_;
  std::map<std::string, std::string> metadata_;
  std::vector<RawValue> values_;
  std::vector<uint32_t> inputs_, outputs_;
  std::vector<RawNode> nodes_;
};

void GraphDecoder::failAt(uint64_t offset, const std::string& msg) const {
  throw BlobError(fmt::format("corrupt blob: GRAPH section at offset {}: {}", offset, msg));
}

// Reads `count` key/value pairs whose keys must be strictly ascending (the writer's map order), so
// duplicates are refused and the encoding stays canonical.
template <typename ReadValue>
void readSortedMap(ByteReader& r, const char* what, size_t min_entry_bytes, ReadValue read_value) {
  const uint32_t n = r.count(what, min_entry_bytes);
  std::string prev;
  for (uint32_t i = 0; i < n; ++i) {
    std::string key = r.str("key", kMaxNameBytes);
    if (i > 0 && !(prev < key)) r.fail(fmt::format("{}: key '{}' is duplicated or out of order", what, key));
    read_value(key);
    prev = std::move(key);
  }
}

void GraphDecoder::parseHeader() {
  name_ = r_.str("graph name", kMaxNameBytes);
  readSortedMap(r_, "opset imports", 4 + 8, [&](const std::string& domain) {
    const int64_t v = r_.i64("opset version");
    if (v < 1) r_.fail(fmt::format("opset version {} for domain '{}' is not positive", v, domain));
    opsets_[domain] = v;
  });
  readSortedMap(r_, "metadata entries", 4 + 4,
                [&](const std::string& key) { metadata_[key] = r_.str("metadata value", kMaxTextBytes); });
}

DType GraphDecoder::readDType(const char* what, bool storable) {
  const int32_t code = r_.i32(what);
  const DType t = static_cast<DType>(code);
  const bool known = code == 0 || dtypeFromOnnx(code) != DType::Undefined;
  if (!known || (storable && !isStorable(t)))
    r_.fail(fmt::format("{} {} is not a {}npuc dtype", what, code, storable ? "storable " : ""));
  return t;
}

Shape GraphDecoder::readShape(bool known_dims_only) {
  const uint32_t rank = r_.count("rank", 8);
  if (rank > kMaxRank) r_.fail(fmt::format("rank {} exceeds {}", rank, kMaxRank));
  Shape s(rank);
  for (uint32_t i = 0; i < rank; ++i) {
    s[i] = r_.i64("dim");
    if (s[i] < (known_dims_only ? 0 : kUnknownDim)) r_.fail(fmt::format("dim {} is {}", i, s[i]));
  }
  return s;
}

TensorRef GraphDecoder::readTensorRef(const char* what) {
  TensorRef t;
  t.dtype = readDType("tensor dtype", true);
  t.shape = readShape(true);
  const uint64_t at = r_.absolute();
  t.offset = r_.u64("weight offset");
  t.size = r_.u64("weight size");
  // Element count with overflow checks (shapeNumel would throw ShapeError/ResourceError instead).
  uint64_t bytes = dtypeSize(t.dtype);
  for (int64_t d : t.shape) {
    if (d != 0 && bytes > std::numeric_limits<uint64_t>::max() / static_cast<uint64_t>(d))
      failAt(at, fmt::format("{} {} overflows", what, shapeStr(t.shape)));
    bytes *= static_cast<uint64_t>(d);
  }
  if (bytes != t.size)
    failAt(at, fmt::format("{} {}{} needs {} bytes but its weight record says {}", what, dtypeName(t.dtype),
                           shapeStr(t.shape), bytes, t.size));
  if (t.offset % kBlobAlignment)
    failAt(at, fmt::format("{} weight offset {} is not {}-byte aligned", what, t.offset, kBlobAlignment));
  if (t.offset > weights_size_ || t.size > weights_size_ - t.offset)
    failAt(at, fmt::format("{} weight bytes [{}, +{}) lie outside the {}-byte WEIGHTS section at offset {}",
                           what, t.offset, t.size, weights_size_, weights_offset_));
  if (static_cast<int64_t>(t.size) > kMaxTensorBytes)
    failAt(at, std::string(what) + " exceeds the tensor size limit");
  return t;
}

// An NpuPacked constant's record: float32, its shape, and its extent in NWGT. At least half an
// NWGT byte per element (int4 nibbles; int8 lanes take one, int16 and half two) bounds the
// placeholder allocated for it.
TensorRef GraphDecoder::readPackedRef(const std::string& value) {
  const uint64_t record = r_.absolute();
  if (!src_.packed_allowed)
    failAt(record, "constant '" + value +
                       "' has layout tag 1 (NPU-packed weights), which blob format 1.x does not have");
  TensorRef t;
  t.dtype = readDType("tensor dtype", true);
  if (t.dtype != DType::Float32)
    failAt(record, "NPU-packed constant '" + value + "' is " + dtypeName(t.dtype) + ", not float32");
  t.shape = readShape(true);
  const uint64_t at = r_.absolute();
  t.offset = r_.u64("packed weight offset");
  t.size = r_.u64("packed weight size");
  if (!src_.has_packed)
    failAt(at, "NPU-packed constant '" + value + "' refers to NWGT, but the blob has no NWGT section");
  uint64_t elements = 1;
  const uint64_t capacity = 2 * t.size;  // t.size <= NWGT's size, far below 2^63
  for (int64_t d : t.shape) {
    if (d != 0 && elements > capacity / static_cast<uint64_t>(d))
      failAt(at, fmt::format("NPU-packed constant '{}' {} has more elements than its {} packed bytes", value,
                             shapeStr(t.shape), t.size));
    elements *= static_cast<uint64_t>(d);
  }
  if (t.offset % kBlobAlignment)
    failAt(at, fmt::format("NPU-packed constant '{}': NWGT offset {} is not {}-byte aligned", value, t.offset,
                           kBlobAlignment));
  if (t.offset > src_.packed_size || t.size > src_.packed_size - t.offset)
    failAt(at, fmt::format("NPU-packed constant '{}': bytes [{}, +{}) lie outside the {}-byte NWGT section",
                           value, t.offset, t.size, src_.packed_size));
  return t;
}

// Two NpuPacked constants never share NWGT bytes (each is one task's entry), which also keeps
// their placeholders within 8 x the NWGT size in total (float32 of int4 nibbles).
void GraphDecoder::checkPackedExtents() const {
  std::vector<const RawValue*> packed;
  for (const RawValue& v : values_)
    if (v.packed) packed.push_back(&v);
  std::sort(packed.begin(), packed.end(),
            [](const RawValue* a, const RawValue* b) { return a->weight.offset < b->weight.offset; });
  for (size_t i = 1; i < packed.size(); ++i)
    if (packed[i]->weight.offset < packed[i - 1]->weight.offset + packed[i - 1]->weight.size)
      failAt(packed[i]->record_offset, "NPU-packed constants '" + packed[i - 1]->name + "' and '" +
                                           packed[i]->name + "' overlap in NWGT");
}

// A zero-filled float32 tensor for an NpuPacked constant. Large ones are mapped anonymous memory
// populated by the kernel in one call: zero pages without a memset, and without one page fault per
// 4 KiB when the weights are written (100 MB for resnet50; on a VM those faults tripled
// _npuc.load_compiled). Small ones are ordinary tensors.
Tensor GraphDecoder::placeholder(const TensorRef& t) const {
  constexpr size_t kMappedFrom = size_t{1} << 20;
  const size_t bytes = static_cast<size_t>(shapeNumel(t.shape)) * dtypeSize(t.dtype);
  if (bytes < kMappedFrom) return Tensor(t.dtype, t.shape);
  void* p = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
  if (p == MAP_FAILED) return Tensor(t.dtype, t.shape);  // the ordinary allocation reports failure
  return Tensor::wrap(t.dtype, t.shape, p,
                      std::shared_ptr<void>(p, [bytes](void* q) { ::munmap(q, bytes); }));
}

Tensor GraphDecoder::wrapTensor(const TensorRef& t) const {
  // Constants are immutable by convention (ir/graph.h), so sharing the blob's bytes is safe.
  return Tensor::wrap(t.dtype, t.shape, const_cast<uint8_t*>(weights_ + t.offset), owner_);
}

QuantParams GraphDecoder::readQuant(const RawValue& v) {
  QuantParams q;
  q.axis = r_.i32("quantization axis");
  const uint32_t n = r_.count("quantization scale count", 8);
  if (n == 0) r_.fail("value '" + v.name + "' has quantization parameters with no scales");
  if (q.axis < -1 || (v.flags & kValueHasShape && q.axis >= static_cast<int64_t>(v.shape.size())))
    r_.fail(fmt::format("value '{}': quantization axis {} out of range", v.name, q.axis));
  if (q.axis == -1 && n != 1)
    r_.fail(fmt::format("value '{}': per-tensor quantization with {} scales", v.name, n));
  q.scales.resize(n);
  q.zero_points.resize(n);
  for (float& s : q.scales) {
    s = r_.f32("scale");
    if (!std::isfinite(s) || s <= 0)
      r_.fail(fmt::format("value '{}': quantization scale {:f}", v.name, s));  // "%f", as std::to_string
  }
  for (int32_t& z : q.zero_points) z = r_.i32("zero point");
  return q;
}

RawValue GraphDecoder::readValue() {
  RawValue v;
  v.record_offset = r_.absolute();
  v.name = r_.str("value name", kMaxNameBytes);
  v.flags = r_.u8("value flags");
  if (v.flags & ~kKnownValueFlags) r_.fail(fmt::format("value '{}' has unknown flags {}", v.name, v.flags));
  const uint8_t layout = r_.u8("layout tag");
  if (layout > kMaxLayoutTag) r_.fail(fmt::format("value '{}' has unknown layout tag {}", v.name, layout));
  const bool constant = v.flags & kValueConstant;
  v.packed = layout == static_cast<uint8_t>(Layout::NpuPacked);
  if (v.packed && !constant)
    r_.fail(fmt::format("value '{}' is no constant but has layout tag {}", v.name, layout));
  if (constant) {
    if (!(v.flags & kValueHasShape)) r_.fail("constant '" + v.name + "' without a shape");
    v.weight = v.packed ? readPackedRef(v.name) : readTensorRef("constant");
    v.dtype = v.weight.dtype;
    v.shape = v.weight.shape;
  } else {
    v.dtype = readDType("value dtype", false);
    v.shape = readShape(false);
    if (!(v.flags & kValueHasShape) && !v.shape.empty())
      r_.fail("value '" + v.name + "' has dims but no shape flag");
  }
  if (v.flags & kValueHasQuant) v.quant = readQuant(v);
  return v;
}

std::vector<uint32_t> GraphDecoder::readIndices(const char* what, bool allow_missing) {
  const uint32_t n = r_.count(what, 4);
  std::vector<uint32_t> out(n);
  for (uint32_t& i : out) {
    i = r_.u32("value index");
    if (i >= values_.size() && !(allow_missing && i == kNoValue))
      r_.fail(fmt::format("{}: value index {} out of range ({} values)", what, i, values_.size()));
  }
  return out;
}

AttrValue GraphDecoder::readAttr(uint8_t kind) {
  switch (static_cast<AttrKind>(kind)) {
    case AttrKind::Int: return r_.i64("int attribute");
    case AttrKind::Float: return r_.f32("float attribute");
    case AttrKind::String: return r_.str("string attribute", kMaxTextBytes);
    case AttrKind::Ints: {
      std::vector<int64_t> v(r_.count("ints attribute length", 8));
      for (int64_t& x : v) x = r_.i64("ints element");
      return v;
    }
    case AttrKind::Floats: {
      std::vector<float> v(r_.count("floats attribute length", 4));
      for (float& x : v) x = r_.f32("floats element");
      return v;
    }
    case AttrKind::Strings: {
      std::vector<std::string> v(r_.count("strings attribute length", 4));
      for (std::string& x : v) x = r_.str("strings element", kMaxTextBytes);
      return v;
    }
    case AttrKind::Tensor: return wrapTensor(readTensorRef("tensor attribute"));
  }
  r_.fail(fmt::format("unknown attribute kind {}", kind));
}

RawNode GraphDecoder::readNode() {
  RawNode n;
  n.record_offset = r_.absolute();
  n.op_type = r_.str("op type", kMaxNameBytes);
  n.domain = r_.str("domain", kMaxNameBytes);
  n.name = r_.str("node name", kMaxNameBytes);
  n.inputs = readIndices("node inputs", true);
  n.outputs = readIndices("node outputs", false);
  const uint32_t num_attrs = r_.count("attribute count", kMinAttrRecordBytes);
  for (uint32_t i = 0; i < num_attrs; ++i) {
    std::string name = r_.str("attribute name", kMaxNameBytes);
    if (i > 0 && !(n.attrs.back().first < name))
      r_.fail("node '" + n.name + "': attribute '" + name + "' is duplicated or out of order");
    const uint8_t kind = r_.u8("attribute kind");
    n.attrs.emplace_back(std::move(name), readAttr(kind));
  }
  return n;
}

// Every value must have exactly one origin (graph input, constant, or one node output), and a node
// may read only values defined before it (the IR keeps nodes in topological order).
void GraphDecoder::checkRoles() {
  constexpr int64_t kUndefined = -2, kInputOrConstant = -1;
  std::vector<int64_t> defined_by(values_.size(), kUndefined);
  std::unordered_set<std::string> names;
  for (const RawValue& v : values_) {
    if (!names.insert(v.name).second) failAt(v.record_offset, "duplicate value name '" + v.name + "'");
    if (v.flags & kValueConstant) defined_by[&v - values_.data()] = kInputOrConstant;
  }
  for (uint32_t i : inputs_) {
    if (defined_by[i] == kInputOrConstant && !(values_[i].flags & kValueConstant))
      failAt(values_[i].record_offset, "value '" + values_[i].name + "' is listed twice as a graph input");
    defined_by[i] = kInputOrConstant;
  }
  std::set<uint32_t> input_set(inputs_.begin(), inputs_.end());
  for (size_t k = 0; k < nodes_.size(); ++k) {
    const RawNode& n = nodes_[k];
    for (uint32_t i : n.inputs) {
      if (i == kNoValue) continue;
      if (defined_by[i] == kUndefined || defined_by[i] >= static_cast<int64_t>(k))
        failAt(n.record_offset, "node '" + n.name + "' (" + n.op_type + ") reads value '" + values_[i].name +
                                    "' before it is defined");
    }
    for (uint32_t o : n.outputs) {
      if (defined_by[o] != kUndefined)
        failAt(n.record_offset, "node '" + n.name + "' output '" + values_[o].name +
                                    "' is already a graph input, constant or another node's output");
      defined_by[o] = static_cast<int64_t>(k);
    }
  }
  for (size_t i = 0; i < values_.size(); ++i)
    if (defined_by[i] == kUndefined)
      failAt(values_[i].record_offset,
             "value '" + values_[i].name + "' is no graph input, constant or node output");
}

DecodedGraph GraphDecoder::decode() {
  parseHeader();
  const uint32_t num_values = r_.count("value count", kMinValueRecordBytes);
  values_.reserve(num_values);
  for (uint32_t i = 0; i < num_values; ++i) values_.push_back(readValue());
  inputs_ = readIndices("graph inputs", false);
  outputs_ = readIndices("graph outputs", false);
  const uint32_t num_nodes = r_.count("node count", kMinNodeRecordBytes);
  nodes_.reserve(num_nodes);
  for (uint32_t i = 0; i < num_nodes; ++i) nodes_.push_back(readNode());
  r_.expectEnd();
  checkRoles();
  checkPackedExtents();
  return build();
}

// Builds the IR from validated records. Values are first created under temporary names (the IR
// names node outputs itself, and those names could collide with names read later), then renamed.
DecodedGraph GraphDecoder::build() {
  std::string tmp = "__npub_tmp";
  auto clashes = [&](const std::string& p) {
    for (const RawValue& v : values_)
      if (v.name.compare(0, p.size(), p) == 0) return true;
    return false;
  };
  while (clashes(tmp)) tmp += '_';

  DecodedGraph out;
  out.graph = std::make_unique<Graph>();
  Graph& g = *out.graph;
  g.name = name_;
  g.opset_imports = opsets_;
  g.metadata = metadata_;
  std::vector<Value*> made(values_.size(), nullptr);
  auto tmpName = [&](size_t i) { return tmp + std::to_string(i); };
  // Plain constants point into WEIGHTS; NpuPacked ones get a zero-filled tensor to be filled later.
  auto constantOf = [&](const RawValue& v) {
    return v.packed ? placeholder(v.weight) : wrapTensor(v.weight);
  };
  try {
    for (uint32_t i : inputs_) {
      const RawValue& v = values_[i];
      made[i] = g.addInput(tmpName(i), v.dtype, v.shape, v.flags & kValueHasShape);
      if (v.flags & kValueConstant) made[i]->setConstant(constantOf(v));
    }
    for (size_t i = 0; i < values_.size(); ++i)
      if (!made[i] && (values_[i].flags & kValueConstant))
        made[i] = g.addConstant(constantOf(values_[i]), tmpName(i));
    for (const RawNode& rn : nodes_) {
      std::vector<Value*> ins;
      for (uint32_t i : rn.inputs) ins.push_back(i == kNoValue ? nullptr : made[i]);
      Node* n = g.appendNode(rn.op_type, ins, rn.outputs.size(), rn.name);
      n->setName(rn.name);
      n->setDomain(rn.domain);
      for (const auto& [k, a] : rn.attrs) n->attrs().set(k, a);
      for (size_t j = 0; j < rn.outputs.size(); ++j) {
        const RawValue& v = values_[rn.outputs[j]];
        Value* val = n->output(j);
        val->setName(tmpName(rn.outputs[j]));
        if (v.flags & kValueHasShape) {
          val->setType(v.dtype, v.shape);
        } else {
          val->setDType(v.dtype);
          val->clearShape();
        }
        made[rn.outputs[j]] = val;
      }
    }
    for (size_t i = 0; i < values_.size(); ++i) made[i]->setName(values_[i].name);
    for (uint32_t o : outputs_) g.addOutput(made[o]);
    g.verify();
  } catch (const BlobError&) {
    throw;
  } catch (const Error& e) {
    throw BlobError(std::string("corrupt blob: GRAPH section does not form a valid graph: ") + e.what());
  }
  for (size_t i = 0; i < values_.size(); ++i) {
    if (values_[i].quant) out.quant[values_[i].name] = *values_[i].quant;
    if (values_[i].packed)
      out.packed_constants.push_back({values_[i].name, values_[i].weight.offset, values_[i].weight.size});
  }
  return out;
}

}  // namespace

DecodedGraph decodeGraph(ByteReader graph, const GraphSources& sources) {
  return GraphDecoder(std::move(graph), sources).decode();
}

}  // namespace npuc::blob
