#include "frontend/tflite/tflite_ops.h"

#include <map>

namespace npuc::tflite {

namespace {

const std::map<int32_t, OpConverter>& builtinTable() {
  static const std::map<int32_t, OpConverter> table{
      {fb::BuiltinOperator_ADD, convertAdd},
      {fb::BuiltinOperator_SUB, convertSub},
      {fb::BuiltinOperator_MUL, convertMul},
      {fb::BuiltinOperator_DIV, convertDiv},
      {fb::BuiltinOperator_MAXIMUM, convertMaximum},
      {fb::BuiltinOperator_MINIMUM, convertMinimum},
      {fb::BuiltinOperator_CONV_2D, convertConv2d},
      {fb::BuiltinOperator_DEPTHWISE_CONV_2D, convertDepthwiseConv2d},
      {fb::BuiltinOperator_TRANSPOSE_CONV, convertTransposeConv},
      {fb::BuiltinOperator_FULLY_CONNECTED, convertFullyConnected},
      {fb::BuiltinOperator_AVERAGE_POOL_2D, convertAveragePool},
      {fb::BuiltinOperator_MAX_POOL_2D, convertMaxPool},
      {fb::BuiltinOperator_LOGISTIC, convertUnary},
      {fb::BuiltinOperator_TANH, convertUnary},
      {fb::BuiltinOperator_RELU, convertUnary},
      {fb::BuiltinOperator_RELU6, convertUnary},
      {fb::BuiltinOperator_RELU_N1_TO_1, convertUnary},
      {fb::BuiltinOperator_RELU_0_TO_1, convertUnary},
      {fb::BuiltinOperator_HARD_SWISH, convertUnary},
      {fb::BuiltinOperator_ELU, convertUnary},
      {fb::BuiltinOperator_EXP, convertUnary},
      {fb::BuiltinOperator_ABS, convertUnary},
      {fb::BuiltinOperator_NEG, convertUnary},
      {fb::BuiltinOperator_SQRT, convertUnary},
      {fb::BuiltinOperator_RSQRT, convertUnary},
      {fb::BuiltinOperator_LOG, convertUnary},
      {fb::BuiltinOperator_FLOOR, convertUnary},
      {fb::BuiltinOperator_SQUARE, convertUnary},
      {fb::BuiltinOperator_LEAKY_RELU, convertLeakyRelu},
      {fb::BuiltinOperator_PRELU, convertPrelu},
      {fb::BuiltinOperator_RESHAPE, convertReshape},
      {fb::BuiltinOperator_CONCATENATION, convertConcatenation},
      {fb::BuiltinOperator_PAD, convertPad},
      {fb::BuiltinOperator_PADV2, convertPad},
      {fb::BuiltinOperator_RESIZE_BILINEAR, convertResize},
      {fb::BuiltinOperator_RESIZE_NEAREST_NEIGHBOR, convertResize},
      {fb::BuiltinOperator_MEAN, convertMean},
      {fb::BuiltinOperator_SUM, convertMean},
      {fb::BuiltinOperator_REDUCE_MAX, convertMean},
      {fb::BuiltinOperator_REDUCE_MIN, convertMean},
      {fb::BuiltinOperator_SOFTMAX, convertSoftmax},
      {fb::BuiltinOperator_DEQUANTIZE, convertDequantize},
      {fb::BuiltinOperator_QUANTIZE, convertQuantize},
      {fb::BuiltinOperator_TRANSPOSE, convertTranspose},
      {fb::BuiltinOperator_STRIDED_SLICE, convertStridedSlice},
      {fb::BuiltinOperator_SLICE, convertSlice},
      {fb::BuiltinOperator_SQUEEZE, convertSqueeze},
      {fb::BuiltinOperator_DEPTH_TO_SPACE, convertDepthSpace},
      {fb::BuiltinOperator_SPACE_TO_DEPTH, convertDepthSpace},
      {fb::BuiltinOperator_EXPAND_DIMS, convertExpandDims},
      {fb::BuiltinOperator_SPLIT, convertSplit},
      {fb::BuiltinOperator_SPLIT_V, convertSplit},
  };
  return table;
}

const std::map<std::string, OpConverter>& customTable() {
  static const std::map<std::string, OpConverter> table{
      {"Convolution2DTransposeBias", convertConvTransposeBias},
  };
  return table;
}

}  // namespace

OpConverter findBuiltinConverter(int32_t code) {
  auto it = builtinTable().find(code);
  return it == builtinTable().end() ? nullptr : it->second;
}

OpConverter findCustomConverter(const std::string& custom_code) {
  auto it = customTable().find(custom_code);
  return it == customTable().end() ? nullptr : it->second;
}

std::vector<std::string> supportedOpNames() {
  std::vector<std::string> out;
  for (const auto& [code, fn] : builtinTable()) out.push_back(builtinName(code));
  for (const auto& [name, fn] : customTable()) out.push_back("CUSTOM:" + name);
  return out;
}

}  // namespace npuc::tflite
