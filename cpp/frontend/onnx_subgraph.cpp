#include "frontend/onnx_subgraph.h"

#include <algorithm>
#include <map>
#include <unordered_set>

#include "frontend/error_prefix.h"
#include "frontend/legacy_upgrade.h"
#include "frontend/onnx_graph_builder.h"
#include "frontend/shape_inference.h"

namespace npuc {

namespace {

// Free names of `g` relative to the names its enclosing scopes already handed it: collected into
// `out` (first use order) unless already there.
void collectFree(const onnx::GraphProto& g, std::vector<std::string>& out, std::unordered_set<std::string>& seen) {
  std::unordered_set<std::string> defined;
  for (const auto& i : g.input()) defined.insert(i.name());
  for (const auto& t : g.initializer()) defined.insert(t.name());
  for (const auto& n : g.node()) defined.insert(n.output().begin(), n.output().end());
  auto use = [&](const std::string& name) {
    if (name.empty() || defined.count(name) || seen.count(name)) return;
    seen.insert(name);
    out.push_back(name);
  };
  for (const auto& n : g.node()) {
    for (const auto& in : n.input()) use(in);
    for (const auto& a : n.attribute()) {
      std::vector<const onnx::GraphProto*> subs;
      if (a.has_g()) subs.push_back(&a.g());
      for (const auto& sg : a.graphs()) subs.push_back(&sg);
      for (const onnx::GraphProto* sg : subs) {
        std::vector<std::string> inner;
        std::unordered_set<std::string> inner_seen;
        collectFree(*sg, inner, inner_seen);
        for (const auto& name : inner) use(name);  // what `g` defines is not free for `g`
      }
    }
  }
  for (const auto& o : g.output()) use(o.name());
}

std::string nodeTag(const Node& node) { return "node '" + node.name() + "' (" + node.opType() + ")"; }

onnx::GraphProto decode(const Node& node, const std::string& attr) {
  const AttrValue* v = node.attrs().find(attr);
  if (!v || attrKind(*v) != AttrKind::String) {
    throw GraphError(nodeTag(node) + ": sub-graph attribute '" + attr + "' is missing");
  }
  onnx::GraphProto g;
  if (!g.ParseFromString(std::get<std::string>(*v))) {
    throw ModelLoadError(nodeTag(node) + ": sub-graph attribute '" + attr + "' does not decode as a GraphProto");
  }
  return g;
}

void setValueInfo(onnx::ValueInfoProto* vi, const SubgraphBinding& b) {
  vi->set_name(b.name);
  auto* tt = vi->mutable_type()->mutable_tensor_type();
  tt->set_elem_type(static_cast<int32_t>(b.dtype));  // npuc's DType codes are ONNX's
  auto* shape = tt->mutable_shape();
  for (int64_t d : b.shape) shape->add_dim()->set_dim_value(d);
}

// Renames the free reads of `g` (and of its nested sub-graphs) by `renames`. A name the graph
// defines itself shadows the outer one and is left alone.
void renameFree(onnx::GraphProto& g, const std::map<std::string, std::string>& renames) {
  std::unordered_set<std::string> defined;
  for (const auto& i : g.input()) defined.insert(i.name());
  for (const auto& t : g.initializer()) defined.insert(t.name());
  for (const auto& n : g.node()) defined.insert(n.output().begin(), n.output().end());
  std::map<std::string, std::string> live;
  for (const auto& [from, to] : renames) {
    if (!defined.count(from)) live.emplace(from, to);
  }
  if (live.empty()) return;
  auto fix = [&](std::string* name) {
    auto it = live.find(*name);
    if (it != live.end()) *name = it->second;
  };
  for (auto& n : *g.mutable_node()) {
    for (auto& in : *n.mutable_input()) fix(&in);
    for (auto& a : *n.mutable_attribute()) {
      if (a.has_g()) renameFree(*a.mutable_g(), live);
    }
  }
  for (auto& o : *g.mutable_output()) fix(o.mutable_name());
}

}  // namespace

bool isSubgraphAttr(const Node& node, const std::string& attr) {
  if (!node.domain().empty()) return false;
  const std::string& op = node.opType();
  return (op == "If" && (attr == "then_branch" || attr == "else_branch")) ||
         ((op == "Loop" || op == "Scan") && attr == "body");
}

void subgraphAttrToProto(const Node& node, const std::string& attr, onnx::AttributeProto* a) {
  onnx::GraphProto g = decode(node, attr);
  std::map<std::string, std::string> renames;
  const std::vector<std::string> names = implicitInputNames(node);
  const size_t first = numExplicitInputs(node);
  for (size_t k = 0; k < names.size(); ++k) {
    const Value* v = node.input(first + k);
    if (v && v->name() != names[k]) renames[names[k]] = v->name();
  }
  renameFree(g, renames);
  a->Clear();
  a->set_name(attr);
  a->set_type(onnx::AttributeProto::GRAPH);
  *a->mutable_g() = std::move(g);
}

std::vector<std::string> subgraphFreeNames(const onnx::GraphProto& g) {
  std::vector<std::string> out;
  std::unordered_set<std::string> seen;
  collectFree(g, out, seen);
  return out;
}

size_t subgraphFormalInputCount(const Node& node, const std::string& attr) {
  return static_cast<size_t>(decode(node, attr).input_size());
}

std::vector<std::string> implicitInputNames(const Node& node) {
  const AttrValue* v = node.attrs().find(kImplicitInputsAttr);
  if (!v) return {};
  if (attrKind(*v) != AttrKind::Strings) {
    throw GraphError(nodeTag(node) + ": attribute '" + kImplicitInputsAttr + "' must be a list of strings");
  }
  return std::get<std::vector<std::string>>(*v);
}

size_t numExplicitInputs(const Node& node) {
  const size_t implicit = implicitInputNames(node).size();
  if (implicit > node.numInputs()) {
    throw GraphError(nodeTag(node) + ": lists " + std::to_string(implicit) + " implicit inputs but has only " +
                     std::to_string(node.numInputs()) + " inputs");
  }
  return node.numInputs() - implicit;
}

std::unique_ptr<Graph> buildSubgraph(const Node& node, const std::string& attr,
                                     const std::vector<SubgraphBinding>& formal,
                                     const std::vector<SubgraphBinding>& implicit) {
  const std::string where = nodeTag(node) + ": sub-graph '" + attr + "'";
  // Building a data-dependent If infers both branches, and each nested one does the same, so the
  // work doubles per level: a nesting cap keeps a hostile model from costing 2^depth builds.
  thread_local int depth = 0;
  struct DepthGuard {
    int& d;
    explicit DepthGuard(int& x) : d(++x) {}
    ~DepthGuard() { --d; }
  } guard(depth);
  if (depth > kMaxSubgraphDepth) {
    throw ResourceError(where + ": control flow is nested deeper than " + std::to_string(kMaxSubgraphDepth) +
                         " levels");
  }
  onnx::ModelProto model;
  *model.mutable_graph() = decode(node, attr);
  onnx::GraphProto& gp = *model.mutable_graph();
  if (static_cast<size_t>(gp.input_size()) != formal.size()) {
    throw GraphError(where + ": declares " + std::to_string(gp.input_size()) + " inputs, the op binds " +
                     std::to_string(formal.size()));
  }
  // Re-declare the inputs with the types the outer graph fixes (exporters often leave them open).
  std::vector<SubgraphBinding> all;
  for (size_t i = 0; i < formal.size(); ++i) {
    all.push_back(formal[i]);
    all.back().name = gp.input(static_cast<int>(i)).name();
  }
  all.insert(all.end(), implicit.begin(), implicit.end());
  gp.clear_input();
  for (const auto& b : all) setValueInfo(gp.add_input(), b);
  const Graph& outer = *node.graph();
  for (const auto& [domain, version] : outer.opset_imports) {
    auto* os = model.add_opset_import();
    os->set_domain(domain);
    os->set_version(version);
  }
  try {
    std::unique_ptr<Graph> g = buildGraphFromOnnx(model, ExternalDataPolicy{}, outer.custom_ops);
    // Outer constants stay constants inside.
    for (const auto& b : all) {
      if (!b.constant) continue;
      Value* in = g->findValue(b.name);
      const auto& ins = g->inputs();
      const size_t idx = static_cast<size_t>(std::find(ins.begin(), ins.end(), in) - ins.begin());
      in->setName(g->uniqueName(b.name + "_bound"));
      Value* c = g->addConstant(*b.constant, b.name);
      in->replaceAllUsesWith(c);
      g->removeInput(idx);
    }
    upgradeLegacyForms(*g, g->opsetVersion(""));
    g->topoSort();
    inferShapesAndFold(*g);
    return g;
  } catch (const Error&) {
    rethrowWithPrefix(where + ": ");  // keeps the error's type
  }
}

}  // namespace npuc
