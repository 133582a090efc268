// The operator converters of the TFLite frontend: one function per TFLite op (or op family),
// each reading the current operator from the Builder and emitting canonical npuc nodes.
// tflite_ops_conv.cpp: convolutions, fully connected, pooling; tflite_ops_elementwise.cpp:
// arithmetic and activations; tflite_ops_layout.cpp: reshape, concat, pad, resize, reduce,
// softmax, (de)quantize; tflite_ops_slice.cpp: slices, squeeze/expand, splits, depth/space.
#pragma once

#include <string>
#include <vector>

#include "frontend/tflite/tflite_builder.h"

namespace npuc::tflite {

using OpConverter = void (*)(Builder&);

// Null when npuc has no converter for the op.
OpConverter findBuiltinConverter(int32_t code);
OpConverter findCustomConverter(const std::string& custom_code);
// Names of every op npuc reads ("CONV_2D", ..., "CUSTOM:Convolution2DTransposeBias"), for messages and docs.
std::vector<std::string> supportedOpNames();

// Converters (defined in the four tflite_ops_*.cpp files).
void convertConv2d(Builder& b);
void convertDepthwiseConv2d(Builder& b);
void convertTransposeConv(Builder& b);
void convertConvTransposeBias(Builder& b);  // mediapipe's custom Convolution2DTransposeBias
void convertFullyConnected(Builder& b);
void convertAveragePool(Builder& b);
void convertMaxPool(Builder& b);

void convertAdd(Builder& b);
void convertSub(Builder& b);
void convertMul(Builder& b);
void convertDiv(Builder& b);
void convertMaximum(Builder& b);
void convertMinimum(Builder& b);
void convertUnary(Builder& b);  // LOGISTIC, TANH, RELU, RELU6, RELU_N1_TO_1, HARD_SWISH, EXP, ...
void convertLeakyRelu(Builder& b);
void convertPrelu(Builder& b);

void convertReshape(Builder& b);
void convertConcatenation(Builder& b);
void convertPad(Builder& b);
void convertResize(Builder& b);
void convertMean(Builder& b);
void convertSoftmax(Builder& b);
void convertDequantize(Builder& b);
void convertQuantize(Builder& b);
void convertTranspose(Builder& b);
void convertStridedSlice(Builder& b);
void convertSlice(Builder& b);
void convertSqueeze(Builder& b);
void convertDepthSpace(Builder& b);  // DEPTH_TO_SPACE, SPACE_TO_DEPTH
void convertExpandDims(Builder& b);
void convertSplit(Builder& b);       // SPLIT, SPLIT_V

// Shared by converters: ONNX-order pads {top, left, bottom, right} of TF's SAME padding (the odd
// extra row/column at the bottom/right), stride and dilation aware; zeros for VALID.
// An axis in [-rank, rank) as a non-negative one; the converter's ModelLoadError naming `what` otherwise.
int64_t normalizeAxis(Builder& b, int64_t axis, int64_t rank, const std::string& what);
// Constant input `i` as integers (axes, sizes, paddings); fails naming `what` when not constant.
std::vector<int64_t> constInts(Builder& b, int i, const std::string& what);

std::vector<int64_t> tfPads(bool same, int64_t in_h, int64_t in_w, int64_t kh, int64_t kw, int64_t sh, int64_t sw,
                            int64_t dh, int64_t dw);

}  // namespace npuc::tflite
