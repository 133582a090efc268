// Darknet sections -> a plan of the network: per layer its kind, settings, output size (C,H,W)
// and how many floats it reads from the .weights file. Planning is pure arithmetic on the .cfg,
// done before the weights are read, so the weights file's length is checked against the exact
// count first and no tensor is allocated for a .cfg whose sizes the file cannot back.
//
// Sizes follow darknet's rules (parser.c and the *_layer.c files), not ONNX's: a maxpool pads
// size-1 in total by default, left/top getting the smaller half, which keeps yolov3-tiny's
// size=2 stride=1 maxpool at 13x13; [route] concatenates channels (or one channel group of each
// input); [shortcut] adds the `from` layer, subsampled and channel-truncated when the sizes differ.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "frontend/darknet/cfg_parse.h"

namespace npuc::darknet {

enum class LayerKind { Conv, Connected, MaxPool, AvgPool, Route, Shortcut, Upsample, Reorg, Output, Softmax, Identity };

struct Dims {
  int64_t c = 0, h = 0, w = 0;
  int64_t numel() const { return c * h * w; }
};

struct LayerPlan {
  LayerKind kind = LayerKind::Identity;
  std::string type;   // the section name as written ("convolutional", "yolo", ...)
  std::string where;  // "file:line: layer N [type]" for messages
  int index = 0;
  Dims in, out;
  // Conv / Connected
  int64_t filters = 0, size = 1, stride = 1, pad = 0, groups = 1;
  bool batch_normalize = false;
  std::string activation = "linear";
  // MaxPool: total padding (begin gets pad_total / 2, end the rest)
  int64_t pad_total = 0;
  // Route: the layers it reads (absolute indices); channel group taken from each
  std::vector<int> sources;
  int64_t group_id = 0;
  // Shortcut: the `from` layer (absolute); out = alpha * previous + beta * from
  float alpha = 1.0f, beta = 1.0f;
  // Upsample / Reorg: integer factor (`stride`); Upsample's output scale; Softmax: groups and temperature
  float scale = 1.0f, temperature = 1.0f;
  bool spatial = false;  // Softmax over channels at each position instead of over flat groups
  // Output ([yolo], [region], [detection]) has no settings: its input becomes a graph output.
  // Floats this layer reads from the .weights file
  int64_t num_params = 0;
};

struct NetPlan {
  Dims input;
  std::vector<LayerPlan> layers;
  int64_t total_params = 0;
};

// Throws ModelLoadError naming file:line and the layer for an unknown layer type or key, a bad or
// inconsistent value (e.g. filters not divisible by groups, a route to a later layer);
// UnsupportedOpError for darknet layers or activations npuc does not build (reorg, local, rnn, ...).
NetPlan planNetwork(std::vector<CfgSection>& sections);

}  // namespace npuc::darknet
