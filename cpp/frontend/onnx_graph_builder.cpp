#include "frontend/onnx_graph_builder.h"

#include <algorithm>
#include <unordered_map>
#include <unordered_set>

#include "frontend/onnx_attribute.h"
#include "frontend/onnx_subgraph.h"
#include "opset/custom_ops.h"
#include "opset/registry.h"

namespace npuc {

namespace {

bool isOnnxDomain(const std::string& d) {
  return d.empty() || d == "ai.onnx";
}

std::string nodeTag(const onnx::NodeProto& n, const std::string& name) {
  return "node '" + name + "' (" + (isOnnxDomain(n.domain()) ? "" : n.domain() + ".") + n.op_type() + ")";
}

class GraphBuilder {
 public:
  GraphBuilder(onnx::ModelProto& model, const ExternalDataPolicy& policy,
               std::shared_ptr<const CustomOpSet> custom_ops)
      : model_(model), gp_(*model.mutable_graph()), policy_(policy), g_(std::make_unique<Graph>()) {
    g_->custom_ops = std::move(custom_ops);
  }

  std::unique_ptr<Graph> build() {
    readModelInfo();
    addInitializers();
    addInputs();
    nameNodes();
    addConstantNodes();
    addNodes();
    wireInputs();
    addOutputs();
    return std::move(g_);
  }

 private:
  void readModelInfo() {
    g_->opset_imports.clear();
    for (const auto& os : model_.opset_import()) {
      g_->opset_imports[isOnnxDomain(os.domain()) ? "" : os.domain()] = os.version();
    }
    const int64_t v = g_->opsetVersion("");
    if (v == 0) throw ModelLoadError("the model imports no default-domain (ai.onnx) opset");
    if (v < kMinImportOpset || v > kMaxImportOpset) {
      throw ModelLoadError("opset " + std::to_string(v) + " is not supported; npuc imports ai.onnx opsets " +
                           std::to_string(kMinImportOpset) + " to " + std::to_string(kMaxImportOpset) +
                           " (re-export the model or convert it with onnx.version_converter)");
    }
    g_->name = gp_.name();
    if (!model_.producer_name().empty()) g_->metadata["producer_name"] = model_.producer_name();
    if (!model_.producer_version().empty()) g_->metadata["producer_version"] = model_.producer_version();
    for (const auto& kv : model_.metadata_props()) g_->metadata[kv.key()] = kv.value();
  }

  void define(const std::string& name, Value* v, const std::string& what) {
    if (name.empty()) return;
    if (!by_name_.emplace(name, v).second) {
      throw ModelLoadError("tensor '" + name + "' is defined twice (again as " + what + ")");
    }
  }

  void addInitializers() {
    for (auto& init : *gp_.mutable_initializer()) {
      Tensor t = tensorFromProto(init, policy_);
      std::string().swap(*init.mutable_raw_data());  // drop the proto's copy of the weights
      if (by_name_.count(init.name()))
        throw ModelLoadError("initializer '" + init.name() + "' is defined twice");
      define(init.name(), g_->addConstant(std::move(t), init.name()), "an initializer");
    }
  }

  // Inputs that also have an initializer are constants, as ONNX Runtime treats them when the
  // caller does not override them.
  void addInputs() {
    for (const auto& in : gp_.input()) {
      if (by_name_.count(in.name()) && by_name_[in.name()]->isConstant()) continue;
      if (!in.type().has_tensor_type()) {
        throw ModelLoadError("graph input '" + in.name() +
                             "' is not a tensor (sequences and maps are not supported)");
      }
      const auto& tt = in.type().tensor_type();
      const DType dtype = dtypeFromOnnx(tt.elem_type());
      if (!isStorable(dtype)) {
        throw ModelLoadError("graph input '" + in.name() + "' has unsupported element type " +
                             std::to_string(tt.elem_type()));
      }
      Shape shape;
      for (const auto& d : tt.shape().dim()) shape.push_back(d.has_dim_value() ? d.dim_value() : -1);
      define(in.name(), g_->addInput(in.name(), dtype, shape, tt.has_shape()), "a graph input");
    }
  }

  // Keeps the file's node names; unnamed (or clashing) nodes get "<OpType>_<n>".
  void nameNodes() {
    std::unordered_set<std::string> taken;
    for (const auto& n : gp_.node()) taken.insert(n.name());
    std::unordered_set<std::string> used;
    std::unordered_map<std::string, int> counters;
    for (const auto& n : gp_.node()) {
      std::string name = n.name();
      while (name.empty() || used.count(name)) {
        name = n.op_type() + "_" + std::to_string(counters[n.op_type()]++);
        if (taken.count(name)) name.clear();
      }
      used.insert(name);
      node_names_.push_back(name);
    }
  }

  Tensor constantNodeValue(const onnx::NodeProto& n, const std::string& tag) {
    if (n.attribute_size() != 1 || n.output_size() != 1) {
      throw ModelLoadError(tag + ": a Constant needs exactly one value attribute and one output");
    }
    const auto& a = n.attribute(0);
    const AttrValue v = attrFromProto(a, policy_, tag);
    const std::string& k = a.name();
    if (k == "value" && attrKind(v) == AttrKind::Tensor) return std::get<Tensor>(v);
    if (k == "value_float" && attrKind(v) == AttrKind::Float) return Tensor::scalar(std::get<float>(v));
    if (k == "value_int" && attrKind(v) == AttrKind::Int) return Tensor::scalar(std::get<int64_t>(v));
    if (k == "value_floats" && attrKind(v) == AttrKind::Floats) {
      const auto& f = std::get<std::vector<float>>(v);
      return Tensor::fromVector(f, {static_cast<int64_t>(f.size())});
    }
    if (k == "value_ints" && attrKind(v) == AttrKind::Ints) {
      const auto& i = std::get<std::vector<int64_t>>(v);
      return Tensor::fromVector(i, {static_cast<int64_t>(i.size())});
    }
    throw ModelLoadError(tag + ": Constant attribute '" + k + "' of kind " + attrKindName(attrKind(v)) +
                         " is not supported (strings and sparse tensors cannot be held)");
  }

  void addConstantNodes() {
    for (int i = 0; i < gp_.node_size(); ++i) {
      const auto& n = gp_.node(i);
      if (n.op_type() != "Constant" || !isOnnxDomain(n.domain())) continue;
      const std::string tag = nodeTag(n, node_names_[i]);
      Tensor t = constantNodeValue(n, tag);
      const std::string& out = n.output(0);
      if (by_name_.count(out)) throw ModelLoadError(tag + ": output tensor '" + out + "' is defined twice");
      define(out, g_->addConstant(std::move(t), out), "a Constant output");
    }
  }

  void setAttributes(Node* node, const onnx::NodeProto& n, const std::string& tag) {
    for (const auto& a : n.attribute()) {
      if (!a.ref_attr_name().empty()) {
        throw ModelLoadError(tag + ": attribute '" + a.name() + "' refers to a function attribute");
      }
      AttrValue v = attrFromProto(a, policy_, tag);
      std::optional<AttrKind> want = expectedAttrKind(n.op_type(), a.name());
      // Cast-1's `to` is a type name; the legacy upgrade turns it into the opset-6+ number.
      if (n.op_type() == "Cast" && a.name() == "to" && g_->opsetVersion("") < 6) want = AttrKind::String;
      const AttrKind got = attrKind(v);
      // An int where a float is expected reads fine (Attributes::f accepts it).
      if (want && *want != got && !(*want == AttrKind::Float && got == AttrKind::Int)) {
        throw ModelLoadError(tag + ": attribute '" + a.name() + "' must be of kind " + attrKindName(*want) +
                             " but is " + attrKindName(got));
      }
      node->attrs().set(a.name(), std::move(v));
    }
    // Outer values the sub-graphs read become extra inputs (frontend/onnx_subgraph.h).
    std::vector<std::string> implicit;
    for (const auto& a : n.attribute()) {
      if (!a.has_g()) continue;
      for (const std::string& name : subgraphFreeNames(a.g())) {
        if (std::find(implicit.begin(), implicit.end(), name) == implicit.end()) implicit.push_back(name);
      }
    }
    if (!implicit.empty()) node->attrs().set(kImplicitInputsAttr, implicit);
  }

  void addNodes() {
    for (int i = 0; i < gp_.node_size(); ++i) {
      const auto& n = gp_.node(i);
      if (n.op_type() == "Constant" && isOnnxDomain(n.domain())) continue;
      const std::string tag = nodeTag(n, node_names_[i]);
      const bool custom = g_->custom_ops && g_->custom_ops->find(n.op_type());
      if (!isOnnxDomain(n.domain()) && n.domain() != kNpucDomain && !custom) {
        throw UnsupportedOpError("unsupported op '" + n.domain() + "." + n.op_type() + "' at " + tag +
                                 ": npuc supports the ai.onnx domain (and its own ai.npuc ops) only; " +
                                 "register the op with Toolkit.reg_custom_op to run it on the CPU");
      }
      Node* node = g_->appendNode(n.op_type(), {}, 0, node_names_[i]);
      if (!isOnnxDomain(n.domain())) node->setDomain(n.domain());
      setAttributes(node, n, tag);
      for (const auto& out : n.output()) {
        if (!out.empty() && by_name_.count(out)) {
          throw ModelLoadError(tag + ": output tensor '" + out + "' is already defined by another node, " +
                               "initializer or graph input");
        }
        Value* v = node->addOutput(out.empty() ? unusedOutputName(node->name()) : out);
        define(out, v, "an output of " + tag);
      }
      nodes_.emplace_back(node, i);
    }
  }

  // An omitted optional output still occupies its position; its placeholder name must not clash
  // with any tensor named in the file, including ones defined further down.
  std::string unusedOutputName(const std::string& node_name) {
    if (file_names_.empty()) {
      for (const auto& n : gp_.node()) file_names_.insert(n.output().begin(), n.output().end());
    }
    std::string name = g_->uniqueName(node_name + "_omitted");
    while (file_names_.count(name)) name = g_->uniqueName(name + "_");
    return name;
  }

  // Runs after every tensor is defined, so nodes may appear in any order in the file.
  void wireInputs() {
    for (auto& [node, i] : nodes_) {
      const auto& n = gp_.node(i);
      for (int k = 0; k < n.input_size(); ++k) {
        const std::string& name = n.input(k);
        if (name.empty()) {
          node->setInput(static_cast<size_t>(k), nullptr);
          continue;
        }
        auto it = by_name_.find(name);
        if (it == by_name_.end()) {
          throw GraphError(nodeTag(n, node->name()) + ": input " + std::to_string(k) + " '" + name +
                           "' is never defined (not a graph input, initializer or node output)");
        }
        node->setInput(static_cast<size_t>(k), it->second);
      }
      size_t k = static_cast<size_t>(n.input_size());
      for (const std::string& name : implicitInputNames(*node)) {
        auto it = by_name_.find(name);
        if (it == by_name_.end()) {
          throw GraphError(nodeTag(n, node->name()) + ": a sub-graph reads '" + name +
                           "', which is never defined (not a graph input, initializer or node output)");
        }
        node->setInput(k++, it->second);
      }
    }
  }

  void addOutputs() {
    if (gp_.output_size() == 0) {
      throw ModelLoadError("graph '" + gp_.name() + "' has no outputs: there is nothing to compute");
    }
    for (const auto& out : gp_.output()) {
      auto it = by_name_.find(out.name());
      if (it == by_name_.end()) throw GraphError("graph output '" + out.name() + "' is never defined");
      g_->addOutput(it->second);
    }
  }

  onnx::ModelProto& model_;
  onnx::GraphProto& gp_;
  ExternalDataPolicy policy_;
  std::unique_ptr<Graph> g_;
  std::unordered_map<std::string, Value*> by_name_;
  std::unordered_set<std::string> file_names_;  // node outputs named in the file
  std::vector<std::string> node_names_;         // per NodeProto index
  std::vector<std::pair<Node*, int>> nodes_;    // IR node and its NodeProto index
};

}  // namespace

std::unique_ptr<Graph> buildGraphFromOnnx(onnx::ModelProto& model, const ExternalDataPolicy& policy,
                                          std::shared_ptr<const CustomOpSet> custom_ops) {
  return GraphBuilder(model, policy, std::move(custom_ops)).build();
}

}  // namespace npuc
