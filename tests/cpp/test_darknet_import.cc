// The Darknet frontend's refusals (frontend/darknet/): a malformed .cfg names the file, the line
// and the layer; a .weights file of the wrong length names the floats expected and found; and a
// small valid network imports with darknet's sizes (maxpool padding, route, upsample, yolo output).
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "common/error.h"
#include "frontend/darknet/darknet_import.h"

namespace npuc {
namespace {

const char* kCfg = R"([net]
width=26
height=26
channels=3

[convolutional]
batch_normalize=1
filters=4
size=3
stride=1
pad=1
activation=leaky

[maxpool]
size=2
stride=2

[maxpool]
size=2
stride=1

[upsample]
stride=2

[route]
layers=-1,0

[convolutional]
filters=6
size=1
activation=linear

[yolo]
mask=0,1,2
classes=80
)";

// conv0: 4 bias + 3*4 BN + 4*3*3*3 weights; conv5: 6 bias + 6*8 weights.
constexpr size_t kFloats = 4 + 12 + 108 + 6 + 48;

std::string weights(size_t floats, int major = 0, int minor = 2) {
  std::string b(12 + (major * 10 + minor >= 2 ? 8 : 4), '\0');
  std::memcpy(&b[0], &major, 4);
  std::memcpy(&b[4], &minor, 4);
  for (size_t i = 0; i < floats; ++i) {
    const float v = i % 7 == 3 ? 1.0f : 0.01f * static_cast<float>(i % 5);  // variances stay positive
    b.append(reinterpret_cast<const char*>(&v), 4);
  }
  return b;
}

std::string errorOf(const std::string& cfg, const std::string& w) {
  try {
    importDarknetBytes(cfg, w, {}, "net.cfg", "net.weights");
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(DarknetImport, AValidNetworkGetsDarknetsSizes) {
  std::unique_ptr<Graph> g = importDarknetBytes(kCfg, weights(kFloats), {}, "net.cfg", "net.weights");
  ASSERT_EQ(g->inputs().size(), 1u);
  EXPECT_EQ(g->inputs()[0]->name(), "data");
  EXPECT_EQ(g->inputs()[0]->shape(), Shape({1, 3, 26, 26}));
  ASSERT_EQ(g->outputs().size(), 1u);
  EXPECT_EQ(g->outputs()[0]->name(), "layer6_yolo");
  // maxpool size=2 stride=2 on 26 -> 13; size=2 stride=1 keeps 13 (darknet pads size-1 in total);
  // upsample -> 26; route with layer 0 -> 8 channels; conv -> 6.
  EXPECT_EQ(g->outputs()[0]->shape(), Shape({1, 6, 26, 26}));
  EXPECT_EQ(g->findValue("layer2_maxpool")->shape(), Shape({1, 4, 13, 13}));
}

TEST(DarknetImport, OldHeaderWithA32BitSeenCount) {
  EXPECT_NO_THROW(importDarknetBytes(kCfg, weights(kFloats, 0, 1)));
}

TEST(DarknetImport, TruncatedOrOverlongWeightsNameTheFloatCounts) {
  std::string msg = errorOf(kCfg, weights(kFloats - 60));
  EXPECT_NE(msg.find("net.weights: expected 178 floats"), std::string::npos) << msg;
  EXPECT_NE(msg.find("found 118 (the file is 240 bytes short"), std::string::npos) << msg;
  EXPECT_NE(msg.find("net.cfg:6: layer 0 [convolutional] is the first layer it does not cover"), std::string::npos)
      << msg;
  msg = errorOf(kCfg, weights(kFloats + 1));
  EXPECT_NE(msg.find("found 179 (4 bytes too many"), std::string::npos) << msg;
  msg = errorOf(kCfg, weights(kFloats).substr(0, 10));
  EXPECT_NE(msg.find("too short for a darknet .weights header"), std::string::npos) << msg;
  msg = errorOf(kCfg, weights(kFloats) + "ab");
  EXPECT_NE(msg.find("not a whole number of float32"), std::string::npos) << msg;
}

TEST(DarknetImport, BadCfgNamesFileLineAndLayer) {
  auto replaced = [](const std::string& from, const std::string& to) {
    std::string s = kCfg;
    s.replace(s.find(from), from.size(), to);
    return s;
  };
  const std::vector<std::pair<std::string, std::string>> cases = {
      {replaced("[upsample]", "[wobble]"), "net.cfg:22: layer 3 [wobble]: unknown layer type"},
      {replaced("activation=leaky", "activation=leakyy"), "net.cfg:12: layer 0 [convolutional]: unknown activation"},
      {replaced("filters=6", "filters=six"), "net.cfg:29: layer 5 [convolutional]: filters='six' is not an integer"},
      {replaced("layers=-1,0", "layers=-1,7"), "layer 4 [route]: layers refers to layer 7"},
      {replaced("filters=6", "filters=6\ndilation=2"), "net.cfg:30: layer 5 [convolutional]: unknown key 'dilation'"},
      {replaced("size=2\nstride=1", "size=2\nstride=1\npadding=9"), "net.cfg:21: layer 2 [maxpool]: padding=9 must be in [0, 2]"},
      {replaced("size=2\nstride=1", "size=2\nsize=3\nstride=1"), "net.cfg:20: key 'size' of layer 2 [maxpool] is repeated"},
      {"width=3\n", "net.cfg:1: key 'width' appears before the first [section]"},
      {"", "net.cfg: no [net] section"},
      {"[net]\nwidth=4\nheight=4\nchannels=3\n", "the network has no layers"},
  };
  for (const auto& [cfg, words] : cases) {
    const std::string msg = errorOf(cfg, weights(kFloats));
    EXPECT_NE(msg.find(words), std::string::npos) << "expected '" << words << "' in: " << msg;
  }
}

TEST(DarknetImport, KnownButUnsupportedLayersAreUnsupportedOpErrors) {
  std::string cfg = kCfg;
  cfg.replace(cfg.find("[upsample]"), 10, "[local]");
  EXPECT_THROW(importDarknetBytes(cfg, weights(kFloats)), UnsupportedOpError);
}

TEST(DarknetImport, MissingFilesAreModelLoadErrors) {
  EXPECT_THROW(importDarknetFiles("/nonexistent/x.cfg", "/nonexistent/x.weights"), ModelLoadError);
}

}  // namespace
}  // namespace npuc
