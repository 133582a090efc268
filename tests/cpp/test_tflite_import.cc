// The TFLite frontend's refusals (frontend/tflite/): a truncated or foreign file, a buffer the
// flatbuffers verifier refuses, an operator naming a tensor that does not exist, a weight buffer
// whose size disagrees with its shape and an op npuc does not build are each refused with the file
// and the record named; and a small valid conv model imports in NCHW (weights permuted, SAME
// padding explicit, fused RELU6 a separate Clip, the 4-D output transposed back to NHWC).
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "common/error.h"
#include "frontend/tflite/tflite_import.h"
#include "tflite_fbs/tflite_subset_generated.h"

namespace npuc {
namespace {

namespace fb = ::npuc_tflite;

struct Spec {
  fb::BuiltinOperator op = fb::BuiltinOperator_CONV_2D;
  std::vector<int32_t> op_inputs{0, 1, 2};
  size_t weight_bytes = 4 * 3 * 3 * 2 * 4;  // OHWI [4,3,3,2] float32
  fb::ActivationFunctionType act = fb::ActivationFunctionType_RELU6;
};

// One CONV_2D (or `op`) on a [1,5,5,2] NHWC input with [4,3,3,2] weights and a [4] bias.
std::string buildModel(const Spec& s) {
  flatbuffers::FlatBufferBuilder b;
  std::vector<uint8_t> w(s.weight_bytes);
  for (size_t i = 0; i + 4 <= w.size(); i += 4) {
    const float v = 0.01f * static_cast<float>(i / 4 % 17) - 0.05f;
    std::memcpy(&w[i], &v, 4);
  }
  std::vector<uint8_t> bias(16, 0);
  std::vector<flatbuffers::Offset<fb::Buffer>> buffers{fb::CreateBufferDirect(b), fb::CreateBufferDirect(b, &w),
                                                        fb::CreateBufferDirect(b, &bias)};
  const std::vector<int32_t> in_shape{1, 5, 5, 2}, w_shape{4, 3, 3, 2}, b_shape{4}, out_shape{1, 3, 3, 4};
  std::vector<flatbuffers::Offset<fb::Tensor>> tensors{
      fb::CreateTensorDirect(b, &in_shape, fb::TensorType_FLOAT32, 0, "input"),
      fb::CreateTensorDirect(b, &w_shape, fb::TensorType_FLOAT32, 1, "weights"),
      fb::CreateTensorDirect(b, &b_shape, fb::TensorType_FLOAT32, 2, "bias"),
      fb::CreateTensorDirect(b, &out_shape, fb::TensorType_FLOAT32, 0, "output")};
  auto opts = fb::CreateConv2DOptions(b, fb::Padding_SAME, 2, 2, s.act).Union();
  const std::vector<int32_t> outs{3};
  std::vector<flatbuffers::Offset<fb::Operator>> ops{
      fb::CreateOperatorDirect(b, 0, &s.op_inputs, &outs, fb::BuiltinOptions_Conv2DOptions, opts)};
  const int8_t narrow = static_cast<int8_t>(s.op < 127 ? s.op : 127);
  std::vector<flatbuffers::Offset<fb::OperatorCode>> codes{fb::CreateOperatorCode(b, narrow, 0, 1, s.op)};
  const std::vector<int32_t> g_in{0}, g_out{3};
  std::vector<flatbuffers::Offset<fb::SubGraph>> subgraphs{fb::CreateSubGraphDirect(b, &tensors, &g_in, &g_out, &ops, "main")};
  b.Finish(fb::CreateModelDirect(b, 3, &codes, &subgraphs, "test", &buffers), fb::ModelIdentifier());
  return std::string(reinterpret_cast<const char*>(b.GetBufferPointer()), b.GetSize());
}

template <typename E>
std::string errorOf(const std::string& bytes) {
  try {
    importTfliteBytes(bytes, {}, "m.tflite");
  } catch (const E& e) {
    return e.what();
  }
  ADD_FAILURE() << "no error of the expected type";
  return "";
}

TEST(TfliteImport, ValidConvImportsInNchw) {
  TfliteImport imp = importTfliteBytes(buildModel({}), {}, "m.tflite");
  const Graph& g = *imp.graph;
  ASSERT_EQ(g.inputs().size(), 1u);
  EXPECT_EQ(g.inputs()[0]->name(), "input");
  EXPECT_EQ(g.inputs()[0]->shape(), (Shape{1, 2, 5, 5}));  // NHWC [1,5,5,2] as NCHW
  ASSERT_EQ(g.outputs().size(), 1u);
  EXPECT_EQ(g.outputs()[0]->name(), "output");
  EXPECT_EQ(g.outputs()[0]->shape(), (Shape{1, 3, 3, 4}));  // back to NHWC
  std::vector<std::string> ops;
  for (const Node* n : g.nodes()) ops.push_back(n->opType());
  EXPECT_EQ(ops, (std::vector<std::string>{"Conv", "Clip", "Transpose"}));
  const Node* conv = g.firstNode();
  EXPECT_EQ(conv->input(1)->shape(), (Shape{4, 2, 3, 3}));  // OHWI -> OIHW
  // SAME on 5 with k3 s2: out 3, total pad 2 -> 1 before, 1 after.
  const auto* pads = std::get_if<std::vector<int64_t>>(conv->attrs().find("pads"));
  ASSERT_NE(pads, nullptr);
  EXPECT_EQ(*pads, (std::vector<int64_t>{1, 1, 1, 1}));
  EXPECT_TRUE(imp.ranges.empty());  // a float model declares no ranges
}

TEST(TfliteImport, TruncatedFileIsRefused) {
  const std::string msg = errorOf<ModelLoadError>(buildModel({}).substr(0, 5));
  EXPECT_NE(msg.find("m.tflite: not a TFLite model: 5 bytes, too short"), std::string::npos) << msg;
}

TEST(TfliteImport, ForeignIdentifierIsRefused) {
  std::string bytes = buildModel({});
  std::memcpy(&bytes[4], "ONNX", 4);
  const std::string msg = errorOf<ModelLoadError>(bytes);
  EXPECT_NE(msg.find("m.tflite: not a TFLite model: file identifier 'ONNX', expected 'TFL3'"), std::string::npos) << msg;
}

TEST(TfliteImport, VerifierFailureIsRefused) {
  const std::string whole = buildModel({});
  // The root table offset pointing past the end, and a file cut in the middle of its tables.
  std::string bad_root = whole;
  const uint32_t far = static_cast<uint32_t>(whole.size() + 64);
  std::memcpy(&bad_root[0], &far, 4);
  for (const std::string& bytes : {bad_root, whole.substr(0, whole.size() / 2)}) {
    const std::string msg = errorOf<ModelLoadError>(bytes);
    EXPECT_NE(msg.find("m.tflite: malformed TFLite flatbuffer: the flatbuffers verifier refuses it"), std::string::npos)
        << msg;
  }
}

TEST(TfliteImport, TensorIndexOutOfRangeIsNamed) {
  Spec s;
  s.op_inputs = {0, 7, 2};
  const std::string msg = errorOf<ModelLoadError>(buildModel(s));
  EXPECT_NE(msg.find("m.tflite: subgraph 0 operator 0 (CONV_2D) input 1: tensor index 7 out of range (the subgraph has 4 tensors)"),
            std::string::npos)
      << msg;
}

TEST(TfliteImport, BufferSizeMismatchIsNamed) {
  Spec s;
  s.weight_bytes = 100;
  const std::string msg = errorOf<ModelLoadError>(buildModel(s));
  EXPECT_NE(msg.find("m.tflite: tensor 1 'weights': buffer holds 100 bytes, its shape [4,3,3,2] of FLOAT32 needs 288"),
            std::string::npos)
      << msg;
}

TEST(TfliteImport, UnsupportedOpIsNamedWithItsIndex) {
  Spec s;
  s.op = fb::BuiltinOperator_LSTM;
  const std::string msg = errorOf<UnsupportedOpError>(buildModel(s));
  EXPECT_NE(msg.find("m.tflite: subgraph 0 operator 0 (LSTM): TFLite op LSTM is not supported (npuc reads "), std::string::npos)
      << msg;
}

TEST(TfliteImport, UnsupportedFusedActivationIsNamed) {
  Spec s;
  s.act = fb::ActivationFunctionType_SIGN_BIT;
  const std::string msg = errorOf<UnsupportedOpError>(buildModel(s));
  EXPECT_NE(msg.find("subgraph 0 operator 0 (CONV_2D): fused activation SIGN_BIT (5) is not supported"), std::string::npos)
      << msg;
}

TEST(TfliteImport, MissingFileIsNamed) {
  try {
    importTfliteFile("/nonexistent/x.tflite");
    FAIL();
  } catch (const ModelLoadError& e) {
    EXPECT_NE(std::string(e.what()).find("/nonexistent/x.tflite: cannot open the TFLite model: no such file"), std::string::npos);
  }
}

}  // namespace
}  // namespace npuc
