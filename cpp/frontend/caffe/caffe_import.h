// Caffe -> npuc IR: a deploy prototxt (the net) plus a caffemodel (its trained blobs, matched to
// the prototxt's layers by name) become one Graph in NCHW; then the generic import tail every
// frontend shares (frontend/import_tail.h). RKNN-Toolkit2's load_caffe(model, blobs, input_name).
#pragma once

#include <memory>
#include <string>

#include "frontend/import_tail.h"
#include "ir/graph.h"

namespace npuc {

struct CaffeImportOptions {
  ImportOptions base;
  // RKNN's input_name: when set, it must name one of the net's inputs (checked, with the names
  // the net has in the message).
  std::string input_name;
};

// Reads `prototxt` and `caffemodel` ("" = none: only nets without trained layers load).
// Throws ModelLoadError naming the file and the layer (unknown layer type, missing blob, blob of
// the wrong shape, bottom nobody produces, ...), or the tail's typed errors prefixed with the file.
std::unique_ptr<Graph> importCaffeFiles(const std::string& prototxt, const std::string& caffemodel,
                                        const CaffeImportOptions& opts = {});
// The same from the files' contents (`caffemodel_bytes` null = none); `*_what` name them in
// messages (fuzzing, tests).
std::unique_ptr<Graph> importCaffeBytes(const std::string& prototxt_text, const std::string* caffemodel_bytes,
                                        const CaffeImportOptions& opts = {},
                                        const std::string& prototxt_what = "<prototxt>",
                                        const std::string& caffemodel_what = "<caffemodel>");

}  // namespace npuc
