// The Caffe frontend's refusals: each malformed net or caffemodel is a ModelLoadError naming the
// file and the layer. Caffemodels are built with the generated caffe.proto classes.
#include <gtest/gtest.h>

#include <limits>
#include <string>
#include <vector>

#include "caffe_proto/caffe.pb.h"
#include "common/error.h"
#include "frontend/caffe/caffe_import.h"

namespace npuc {
namespace {

const char* kConvNet = R"(
name: "t"
layer { name: "data" type: "Input" top: "data" input_param { shape { dim: 1 dim: 3 dim: 8 dim: 8 } } }
layer { name: "conv" type: "Convolution" bottom: "data" top: "conv"
        convolution_param { num_output: 4 kernel_size: 3 weight_filler { type: "xavier" } } }
layer { name: "relu" type: "ReLU" bottom: "conv" top: "conv" }
)";

// A caffemodel whose layer `name` holds blobs of these shapes (values 0.5).
std::string caffemodel(const std::string& name, const std::vector<std::vector<int64_t>>& shapes) {
  npuc_caffe::NetParameter net;
  auto* l = net.add_layer();
  l->set_name(name);
  for (const auto& s : shapes) {
    auto* b = l->add_blobs();
    int64_t n = 1;
    for (int64_t d : s) {
      b->mutable_shape()->add_dim(d);
      n *= d;
    }
    for (int64_t i = 0; i < n; ++i) b->add_data(0.5f);
  }
  return net.SerializeAsString();
}

std::string loadError(const std::string& proto, const std::string* model) {
  try {
    importCaffeBytes(proto, model, {}, "net.prototxt", "net.caffemodel");
  } catch (const ModelLoadError& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(CaffeImport, ConvReluInPlaceLoads) {
  const std::string m = caffemodel("conv", {{4, 3, 3, 3}, {4}});
  auto g = importCaffeBytes(kConvNet, &m);
  ASSERT_EQ(g->outputs().size(), 1u);
  EXPECT_EQ(g->outputs()[0]->name(), "conv");  // the in-place ReLU's output keeps the blob name
  EXPECT_EQ(g->outputs()[0]->shape(), (Shape{1, 4, 6, 6}));
  EXPECT_EQ(g->numNodes(), 2u);
}

TEST(CaffeImport, UnknownLayerTypeNamesFileAndLayer) {
  const std::string m = caffemodel("conv", {{4, 3, 3, 3}, {4}});
  const std::string proto = std::string(kConvNet) + R"(layer { name: "x" type: "Frob" bottom: "conv" top: "x" })";
  const std::string e = loadError(proto, &m);
  EXPECT_NE(e.find("net.prototxt: layer 'x' (Frob): layer type 'Frob' is not supported"), std::string::npos) << e;
}

TEST(CaffeImport, MissingBlobsNameBothFiles) {
  const std::string other = caffemodel("other", {{4, 3, 3, 3}, {4}});
  std::string e = loadError(kConvNet, &other);
  EXPECT_NE(e.find("layer 'conv' (Convolution): has no blobs in net.caffemodel"), std::string::npos) << e;
  const std::string no_bias = caffemodel("conv", {{4, 3, 3, 3}});
  e = loadError(kConvNet, &no_bias);
  EXPECT_NE(e.find("layer 'conv' (Convolution): blob 1 is missing in net.caffemodel"), std::string::npos) << e;
  e = loadError(kConvNet, nullptr);
  EXPECT_NE(e.find("layer 'conv' (Convolution): needs trained weights but no caffemodel"), std::string::npos) << e;
}

TEST(CaffeImport, WrongBlobShapeIsRefused) {
  const std::string m = caffemodel("conv", {{4, 3, 5, 5}, {4}});
  const std::string e = loadError(kConvNet, &m);
  EXPECT_NE(e.find("layer 'conv' (Convolution): blob 0 in net.caffemodel has shape [4, 3, 5, 5], expected [4, 3, 3, 3]"),
            std::string::npos)
      << e;
}

TEST(CaffeImport, NonFiniteWeightIsRefused) {
  npuc_caffe::NetParameter net;
  net.ParseFromString(caffemodel("conv", {{4, 3, 3, 3}, {4}}));
  net.mutable_layer(0)->mutable_blobs(1)->set_data(2, std::numeric_limits<float>::quiet_NaN());
  const std::string m = net.SerializeAsString();
  const std::string e = loadError(kConvNet, &m);
  EXPECT_NE(e.find("layer 'conv' (Convolution): blob 1 in net.caffemodel holds a non-finite value"), std::string::npos)
      << e;
}

TEST(CaffeImport, UndefinedBottomAndBadArity) {
  const std::string m = caffemodel("conv", {{4, 3, 3, 3}, {4}});
  std::string e = loadError(std::string(kConvNet) + R"(layer { name: "r2" type: "ReLU" bottom: "nope" top: "r2" })", &m);
  EXPECT_NE(e.find("layer 'r2' (ReLU): bottom 'nope' is not produced by any earlier layer or input"), std::string::npos)
      << e;
  e = loadError(std::string(kConvNet) + R"(layer { name: "s" type: "Eltwise" bottom: "conv" top: "s" })", &m);
  EXPECT_NE(e.find("layer 's' (Eltwise): has 1 bottoms, expected at least 2"), std::string::npos) << e;
}

TEST(CaffeImport, MalformedFilesAreRefused) {
  std::string e = loadError("layer { name: \"a\" type: ", nullptr);
  EXPECT_NE(e.find("net.prototxt: not a valid Caffe prototxt (line 1"), std::string::npos) << e;
  const std::string junk = "\x0a\xff\xff\xff";
  e = loadError(kConvNet, &junk);
  EXPECT_NE(e.find("net.caffemodel: not a valid caffemodel"), std::string::npos) << e;
  e = loadError("name: \"only\"", nullptr);
  EXPECT_NE(e.find("the prototxt declares no layers"), std::string::npos) << e;
  EXPECT_THROW(importCaffeFiles("/nonexistent/x.prototxt", ""), ModelLoadError);
}

TEST(CaffeImport, InputNameMustBeAnInput) {
  const std::string m = caffemodel("conv", {{4, 3, 3, 3}, {4}});
  CaffeImportOptions opts;
  opts.input_name = "image";
  try {
    importCaffeBytes(kConvNet, &m, opts, "net.prototxt");
    FAIL() << "accepted";
  } catch (const ModelLoadError& e) {
    EXPECT_NE(std::string(e.what()).find("input_name 'image' is not an input of the net (its inputs: 'data')"),
              std::string::npos)
        << e.what();
  }
}

TEST(CaffeImport, PoolingKeepsCaffesCeilSizes) {
  const std::string proto = R"(
input: "data"
input_shape { dim: 1 dim: 2 dim: 28 dim: 28 }
layer { name: "p" type: "Pooling" bottom: "data" top: "p" pooling_param { pool: MAX kernel_size: 3 stride: 2 } }
layer { name: "a" type: "Pooling" bottom: "p" top: "a" pooling_param { pool: AVE kernel_size: 3 stride: 2 pad: 1 } }
)";
  auto g = importCaffeBytes(proto, nullptr);
  EXPECT_EQ(g->outputs()[0]->shape(), (Shape{1, 2, 8, 8}));  // 28 -> 14 (ceil) -> 8 (ceil, pad 1)
}

}  // namespace
}  // namespace npuc
