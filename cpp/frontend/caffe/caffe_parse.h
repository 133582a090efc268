// Reading Caffe's two files into their protobuf messages: the net description (prototxt, protobuf
// text format) and the trained weights (caffemodel, a binary NetParameter whose layers carry
// blobs). Only parsing lives here; turning layers into npuc ops is caffe_layers.cpp's job.
#pragma once

#include <string>

#include "caffe_proto/caffe.pb.h"

namespace npuc::caffe {

// Parses a prototxt. Fields outside npuc's caffe.proto subset are skipped (weight fillers,
// learning-rate params, ...). Throws ModelLoadError naming `what` (the file) and the line.
npuc_caffe::NetParameter parsePrototxtText(const std::string& text, const std::string& what);
npuc_caffe::NetParameter parsePrototxtFile(const std::string& path);

// Parses a binary caffemodel. Throws ModelLoadError naming `what` when the bytes are not a
// NetParameter (truncated, corrupt) or it has no layers at all.
npuc_caffe::NetParameter parseCaffemodelBytes(const std::string& bytes, const std::string& what);
npuc_caffe::NetParameter parseCaffemodelFile(const std::string& path);

// The whole file as bytes; ModelLoadError "<path>: cannot open ..." when it cannot be read.
std::string readWholeFile(const std::string& path, const char* role);

}  // namespace npuc::caffe
