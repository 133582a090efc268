#include "frontend/caffe/caffe_import.h"

#include <algorithm>

#include "common/error.h"
#include "frontend/caffe/caffe_builder.h"
#include "frontend/caffe/caffe_layers.h"
#include "frontend/caffe/caffe_parse.h"
#include "frontend/error_prefix.h"

namespace npuc {

namespace {

using caffe::Layer;
using caffe::NetBuilder;

// Whether a layer takes part in the TEST phase (deploy nets may keep training-only layers behind
// include { phase: TRAIN }). Levels and stages are not modelled: a rule naming only them matches.
bool inTestPhase(const Layer& l) {
  auto matches = [](const npuc_caffe::NetStateRule& r) { return !r.has_phase() || r.phase() == npuc_caffe::TEST; };
  if (l.include_size() > 0 && std::none_of(l.include().begin(), l.include().end(), matches)) return false;
  return std::none_of(l.exclude().begin(), l.exclude().end(), matches);
}

// The three ways a prototxt declares its inputs: `input` + `input_shape`, `input` + four
// `input_dim` per input (the oldest form), and Input layers (handled with the layers).
void declareNetInputs(const npuc_caffe::NetParameter& net, NetBuilder& b, const std::string& what) {
  const int n = net.input_size();
  if (n == 0) {
    if (net.input_shape_size() || net.input_dim_size()) throw ModelLoadError(what + ": input_shape/input_dim without input names");
    return;
  }
  if (net.input_shape_size() == n) {
    for (int i = 0; i < n; ++i) {
      const auto& d = net.input_shape(i).dim();
      b.addInput(net.input(i), Shape(d.begin(), d.end()));
    }
  } else if (net.input_shape_size() == 0 && net.input_dim_size() == 4 * n) {
    for (int i = 0; i < n; ++i) {
      b.addInput(net.input(i), Shape(net.input_dim().begin() + 4 * i, net.input_dim().begin() + 4 * i + 4));
    }
  } else {
    throw ModelLoadError(what + ": " + std::to_string(n) + " inputs need as many input_shape entries or 4 input_dim " +
                         "values each (found " + std::to_string(net.input_shape_size()) + " input_shape, " +
                         std::to_string(net.input_dim_size()) + " input_dim)");
  }
}

void convertInputLayer(NetBuilder& b, const Layer& l) {
  const auto& shapes = l.input_param().shape();
  if (l.top_size() == 0) b.fail(l, "has no tops");
  if (shapes.size() != 1 && shapes.size() != l.top_size()) {
    b.fail(l, "has " + std::to_string(shapes.size()) + " input_param shapes for " + std::to_string(l.top_size()) + " tops");
  }
  for (int i = 0; i < l.top_size(); ++i) {
    const auto& d = shapes.Get(shapes.size() == 1 ? 0 : i).dim();
    if (d.empty()) b.fail(l, "input_param shape of top '" + l.top(i) + "' has no dims");
    try {
      b.addInput(l.top(i), Shape(d.begin(), d.end()));
    } catch (const ModelLoadError& e) {
      b.fail(l, e.what());
    }
  }
}

std::unique_ptr<Graph> buildGraph(const npuc_caffe::NetParameter& net, const npuc_caffe::NetParameter* weights,
                                  const CaffeImportOptions& opts, const std::string& what,
                                  const std::string& weights_what) {
  auto g = std::make_unique<Graph>();
  g->name = net.name().empty() ? "caffe_net" : net.name();
  g->metadata["producer"] = "caffe (npuc frontend)";
  NetBuilder b(*g, weights, what, weights_what);
  declareNetInputs(net, b, what);
  for (const Layer& l : net.layer())
    for (const std::string& bottom : l.bottom()) ++b.bottom_reads[bottom];

  for (const Layer& l : net.layer()) {
    if (!inTestPhase(l)) continue;
    if (l.type() == "Input") {
      convertInputLayer(b, l);
      continue;
    }
    caffe::LayerConverter convert = caffe::findLayerConverter(l.type());
    if (!convert) {
      std::string list;
      for (const std::string& t : caffe::supportedLayerTypes()) list += (list.empty() ? "" : ", ") + t;
      b.fail(l, "layer type '" + l.type() + "' is not supported (npuc reads Input, " + list + ")");
    }
    convert(b, l);
  }
  if (g->inputs().empty()) throw ModelLoadError(what + ": the net declares no input (input/input_shape or an Input layer)");
  if (!opts.input_name.empty() && !g->findValue(opts.input_name)) {
    std::string names;
    for (const Value* v : g->inputs()) names += (names.empty() ? "'" : ", '") + v->name() + "'";
    throw ModelLoadError(what + ": input_name '" + opts.input_name + "' is not an input of the net (its inputs: " + names + ")");
  }
  if (!opts.input_name.empty() && !g->findValue(opts.input_name)->isGraphInput()) {
    throw ModelLoadError(what + ": input_name '" + opts.input_name + "' names a layer output, not an input of the net");
  }
  b.finishOutputs();
  if (g->outputs().empty()) throw ModelLoadError(what + ": the net computes nothing (no layer output is left unconsumed)");
  g->removeUnusedValues();
  return g;
}

std::unique_ptr<Graph> importParsed(const npuc_caffe::NetParameter& net, const npuc_caffe::NetParameter* weights,
                                    const CaffeImportOptions& opts, const std::string& what,
                                    const std::string& weights_what) {
  std::unique_ptr<Graph> g = buildGraph(net, weights, opts, what, weights_what);
  try {
    finishImport(*g, opts.base);  // the tail every frontend shares (frontend/import_tail.h)
  } catch (const Error&) {
    rethrowWithPrefix(what + ": ");
  }
  return g;
}

}  // namespace

std::unique_ptr<Graph> importCaffeFiles(const std::string& prototxt, const std::string& caffemodel,
                                        const CaffeImportOptions& opts) {
  try {
    const npuc_caffe::NetParameter net = caffe::parsePrototxtFile(prototxt);
    npuc_caffe::NetParameter weights;
    if (!caffemodel.empty()) weights = caffe::parseCaffemodelFile(caffemodel);
    return importParsed(net, caffemodel.empty() ? nullptr : &weights, opts, prototxt, caffemodel);
  } catch (const std::bad_alloc&) {
    throw ResourceError(prototxt + ": out of memory while loading the Caffe model");
  }
}

std::unique_ptr<Graph> importCaffeBytes(const std::string& prototxt_text, const std::string* caffemodel_bytes,
                                        const CaffeImportOptions& opts, const std::string& prototxt_what,
                                        const std::string& caffemodel_what) {
  const npuc_caffe::NetParameter net = caffe::parsePrototxtText(prototxt_text, prototxt_what);
  npuc_caffe::NetParameter weights;
  if (caffemodel_bytes) weights = caffe::parseCaffemodelBytes(*caffemodel_bytes, caffemodel_what);
  return importParsed(net, caffemodel_bytes ? &weights : nullptr, opts, prototxt_what, caffemodel_what);
}

}  // namespace npuc
