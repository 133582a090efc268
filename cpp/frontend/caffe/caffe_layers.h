// One converter per supported Caffe layer type, each emitting npuc's canonical ops
// (opset/registry.h) through a NetBuilder. Split in files by family: caffe_layers_conv.cpp
// (Convolution, Deconvolution, Pooling, InnerProduct), caffe_layers_norm.cpp (BatchNorm, Scale,
// PReLU), caffe_layers_misc.cpp (activations, Eltwise, Concat, Softmax, shape and pass-through
// layers).
#pragma once

#include <string>
#include <vector>

#include "frontend/caffe/caffe_builder.h"

namespace npuc::caffe {

using LayerConverter = void (*)(NetBuilder&, const Layer&);

// The converter for a Caffe layer type, or null when npuc does not support it.
LayerConverter findLayerConverter(const std::string& type);
// The supported types, sorted, for error messages and docs.
std::vector<std::string> supportedLayerTypes();

// Per family (each file registers its types in the table of caffe_layers_misc.cpp).
void convertConvolution(NetBuilder& b, const Layer& l);
void convertDeconvolution(NetBuilder& b, const Layer& l);
void convertPooling(NetBuilder& b, const Layer& l);
void convertInnerProduct(NetBuilder& b, const Layer& l);
void convertBatchNorm(NetBuilder& b, const Layer& l);
void convertScale(NetBuilder& b, const Layer& l);
void convertPReLU(NetBuilder& b, const Layer& l);

// Helpers shared by the converters.
// Normalizes a Caffe axis (negative counts from the end) against `rank`; fails naming the layer.
int64_t caffeAxis(NetBuilder& b, const Layer& l, int64_t axis, int64_t rank, const char* what);
// A 1-D int64 constant, the form Reshape's shape input takes.
Value* int64Const(NetBuilder& b, const Layer& l, const std::vector<int64_t>& v, const std::string& what);

}  // namespace npuc::caffe
