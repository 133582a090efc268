// Darknet (.cfg + .weights) -> npuc IR: parse the cfg (cfg_parse), plan every layer's size and
// parameter count (layer_plan), check the weights file holds exactly that many floats, build the
// canonical graph (graph_emit), then the tail every frontend shares (frontend/import_tail.h).
#pragma once

#include <memory>
#include <string>

#include "frontend/import_tail.h"
#include "ir/graph.h"

namespace npuc {

// Reads both files. Throws ModelLoadError (unreadable file, malformed cfg naming file:line and
// the layer, a weights file of the wrong length naming the floats expected and found),
// UnsupportedOpError (a darknet layer or activation npuc does not build), or the tail's errors
// prefixed with the cfg's path.
std::unique_ptr<Graph> importDarknetFiles(const std::string& cfg_path, const std::string& weights_path,
                                          const ImportOptions& opts = {});
// The same from memory; the names are what messages call the two inputs.
std::unique_ptr<Graph> importDarknetBytes(const std::string& cfg_text, const std::string& weights_bytes,
                                          const ImportOptions& opts = {}, const std::string& cfg_name = "<cfg>",
                                          const std::string& weights_name = "<weights>");

}  // namespace npuc
