#include "frontend/onnx_export.h"

#include <algorithm>
#include <fstream>
#include <set>

#include "frontend/onnx_attribute.h"
#include "frontend/onnx_subgraph.h"
#include "frontend/onnx_tensor.h"
#include "opset/registry.h"

namespace npuc {

namespace {

// The default-domain opset npuc writes unless an op needs a newer one. 13 is what most
// exporters and runtimes agree on, and where npuc's canonical forms (parameters as inputs) hold
// for every op except the Reduce* family (see downgradeNode).
constexpr int64_t kBaseExportOpset = 13;
// IR version 8 goes with opsets up to 17 (onnx 1.12).
constexpr int64_t kExportIrVersion = 8;
// IR version 10 goes with opset 21 (onnx 1.16) and is the first with INT4 tensors.
constexpr int64_t kExportIrVersionOpset21 = 10;
constexpr int64_t kOnnxInt4 = 22;  // TensorProto.DataType.INT4
constexpr int64_t kNpucDomainVersion = 1;

// The default-domain opset `n` needs: its op's (OpSchema::since_opset), or 14 for Reshape's
// allowzero attribute, and never below kBaseExportOpset.
int64_t opsetNeeded(const Node& n) {
  if (!n.domain().empty()) return 0;
  if (n.opType() == "Reshape" && n.attrs().has("allowzero")) return 14;
  const OpSchema* schema = OpRegistry::instance().find(n);
  return std::max<int64_t>(kBaseExportOpset, schema ? schema->since_opset : 1);
}

bool isReduceWithAxesAttr(const Node& n) {
  return n.domain().empty() && n.opType().rfind("Reduce", 0) == 0 && n.opType() != "ReduceSum";
}

std::string exportTag(const Node& n) {
  return "export: node '" + n.name() + "' (" + n.opType() + ")";
}

void setValueInfo(const Value& v, onnx::ValueInfoProto* info) {
  info->set_name(v.name());
  auto* tt = info->mutable_type()->mutable_tensor_type();
  tt->set_elem_type(static_cast<int32_t>(v.dtype()));
  if (!v.hasShape()) return;
  auto* shape = tt->mutable_shape();
  for (int64_t d : v.shape()) {
    auto* dim = shape->add_dim();
    if (d >= 0) dim->set_dim_value(d);  // an unknown dim stays unset
  }
}

class Exporter {
 public:
  Exporter(const Graph& g, const OnnxExportOptions& options) : g_(g), options_(options) {}

  onnx::ModelProto run() {
    onnx::ModelProto model;
    model.set_ir_version(options_.min_opset >= 21 ? kExportIrVersionOpset21 : kExportIrVersion);
    model.set_producer_name("npuc");
    model.set_producer_version(NPUC_VERSION);
    for (const auto& [k, v] : g_.metadata) {
      auto* kv = model.add_metadata_props();
      kv->set_key(k);
      kv->set_value(v);
    }
    onnx::GraphProto* gp = model.mutable_graph();
    gp->set_name(g_.name.empty() ? "npuc_graph" : g_.name);
    int64_t opset = std::max(kBaseExportOpset, options_.min_opset);
    bool uses_npuc = false;
    for (const Node* n : g_.nodes()) {
      writeNode(*n, gp->add_node());
      opset = std::max(opset, opsetNeeded(*n));
      uses_npuc |= n->domain() == kNpucDomain;
    }
    writeValues(gp);
    addOpset(model, "", opset);
    if (uses_npuc) addOpset(model, kNpucDomain, kNpucDomainVersion);
    return model;
  }

 private:
  static void addOpset(onnx::ModelProto& model, const std::string& domain, int64_t version) {
    auto* os = model.add_opset_import();
    os->set_domain(domain);
    os->set_version(version);
  }

  // The IR allows equal node names (rewrites name copies after their original); ONNX Runtime
  // refuses a model with two nodes of one name, so a repeated name gets a "_<k>" suffix.
  std::string uniqueNodeName(const std::string& name) {
    if (name.empty() || node_names_.insert(name).second) return name;
    for (int k = 2;; ++k) {
      std::string candidate = name + "_" + std::to_string(k);
      if (node_names_.insert(candidate).second) return candidate;
    }
  }

  void writeNode(const Node& n, onnx::NodeProto* np) {
    np->set_name(uniqueNodeName(n.name()));
    np->set_op_type(n.opType());
    if (!n.domain().empty()) np->set_domain(n.domain());
    Attributes attrs = n.attrs();
    std::vector<Value*> inputs = n.inputs();
    downgradeNode(n, attrs, inputs);
    // The outer values a sub-graph reads are node inputs in the IR only (frontend/onnx_subgraph.h);
    // the constants among them must still be written as initializers.
    if (n.attrs().has(kImplicitInputsAttr)) {
      const size_t first = numExplicitInputs(n);
      for (size_t i = first; i < inputs.size(); ++i) {
        if (inputs[i] && inputs[i]->isConstant()) used_constants_.insert(inputs[i]);
      }
      inputs.resize(first);
    }
    while (!inputs.empty() && !inputs.back()) inputs.pop_back();
    for (const Value* in : inputs) {
      np->add_input(in ? in->name() : "");
      if (in && in->isConstant()) used_constants_.insert(in);
    }
    for (const Value* out : n.outputs()) np->add_output(out->name());
    for (const auto& [name, value] : attrs.all()) {
      // Control flow: sub-graphs go back to GRAPH attributes; outer reads stay implicit.
      if (isSubgraphAttr(n, name)) {
        subgraphAttrToProto(n, name, np->add_attribute());
      } else if (name != kImplicitInputsAttr) {
        attrToProto(name, value, np->add_attribute());
      }
    }
  }

  // Converts npuc's canonical forms back where opset 13/17 differs.
  void downgradeNode(const Node& n, Attributes& attrs, std::vector<Value*>& inputs) {
    if (options_.min_opset >= 18) return;  // the canonical forms are opset 18's
    if (isReduceWithAxesAttr(n)) {
      // Before opset 18 these ops take axes as an attribute.
      if (inputs.size() > 1 && inputs[1]) {
        if (!inputs[1]->isConstant()) {
          throw Error(exportTag(n) + ": axes input '" + inputs[1]->name() +
                      "' is not a constant; opset 13 needs it as an attribute");
        }
        attrs.set("axes", inputs[1]->constant().toInt64Vector());
        inputs.resize(1);
      }
      if (attrs.i("noop_with_empty_axes", 0) != 0) {
        throw Error(exportTag(n) + ": noop_with_empty_axes=1 cannot be expressed before opset 18");
      }
      attrs.erase("noop_with_empty_axes");
    }
    if (n.domain().empty() && n.opType() == "Split") attrs.erase("num_outputs");  // implied by the outputs
    if (n.domain().empty() && n.opType() == "Pad" && inputs.size() > 3 && inputs[3]) {
      throw Error(exportTag(n) + ": the axes input of Pad needs opset 18, which npuc does not export");
    }
  }

  void writeValues(onnx::GraphProto* gp) {
    for (const Value* in : g_.inputs()) setValueInfo(*in, gp->add_input());
    for (const Value* out : g_.outputs()) {
      setValueInfo(*out, gp->add_output());
      if (out->isConstant()) used_constants_.insert(out);
    }
    // Initializers in creation order (deterministic), only those something still reads.
    for (const Value* v : g_.values()) {
      if (!v->isConstant() || !used_constants_.count(v)) continue;
      onnx::TensorProto* t = gp->add_initializer();
      t->set_name(v->name());
      tensorToProto(v->constant(), t);
      if (options_.int4_initializers.count(v->name())) toInt4(*v, t);
    }
    for (const Node* n : g_.nodes()) {
      for (const Value* v : n->outputs()) {
        if (v->isGraphOutput() || v->dtype() == DType::Undefined) continue;
        setValueInfo(*v, gp->add_value_info());
      }
    }
  }

  // Rewrites the int8 initializer of `v` as INT4: two's-complement nibbles, element 2k low.
  void toInt4(const Value& v, onnx::TensorProto* t) const {
    const Tensor& c = v.constant();
    if (c.dtype() != DType::Int8 || options_.min_opset < 21)
      throw Error("export: INT4 initializer '" + v.name() + "' must be int8 values and opset >= 21");
    const int8_t* q = c.data<int8_t>();
    std::string raw(static_cast<size_t>(c.numel() + 1) / 2, '\0');
    for (int64_t i = 0; i < c.numel(); ++i) {
      if (q[i] < -8 || q[i] > 7)
        throw Error("export: INT4 initializer '" + v.name() + "' holds " + std::to_string(q[i]));
      const auto nibble = static_cast<uint8_t>(static_cast<uint8_t>(q[i]) & 0x0F);
      raw[static_cast<size_t>(i / 2)] |= static_cast<char>(i % 2 ? nibble << 4 : nibble);
    }
    t->clear_int32_data();
    t->set_data_type(kOnnxInt4);
    t->set_raw_data(raw);
  }

  const Graph& g_;
  OnnxExportOptions options_;
  std::set<const Value*> used_constants_;
  std::set<std::string> node_names_;
};

}  // namespace

std::string exportOnnxBytes(const Graph& graph, const OnnxExportOptions& options) {
  const onnx::ModelProto model = Exporter(graph, options).run();
  std::string bytes;
  if (!model.SerializeToString(&bytes)) {
    throw ResourceError("export: the model does not fit in one protobuf (2 GiB limit)");
  }
  return bytes;
}

void exportOnnxFile(const Graph& graph, const std::string& path, const OnnxExportOptions& options) {
  const std::string bytes = exportOnnxBytes(graph, options);
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  out.close();
  if (!out) throw Error("export: cannot write '" + path + "'");
}

}  // namespace npuc
