// Small graphs for the performance-model tests.
#pragma once

#include <string>
#include <vector>

#include "ir/graph.h"

namespace npuc::perf::testing {

class PerfGraph {
 public:
  Graph g;
  Value* input(const std::string& name, Shape shape) {
    return g.addInput(name, DType::Float32, std::move(shape));
  }
  // A Conv with `out_c` kxk filters, stride `stride`, "same" padding, no bias.
  Node* conv(const std::string& name, Value* in, int64_t out_c, int64_t k = 1, int64_t stride = 1,
             int64_t group = 1) {
    const Shape& x = in->shape();
    Value* w = g.addConstant(Tensor(DType::Float32, {out_c, x[1] / group, k, k}), name + "_w");
    Node* n = g.appendNode("Conv", {in, w}, 1, name);
    n->attrs().set("kernel_shape", std::vector<int64_t>{k, k});
    n->attrs().set("strides", std::vector<int64_t>{stride, stride});
    n->attrs().set("pads", std::vector<int64_t>{k / 2, k / 2, k / 2, k / 2});
    n->attrs().set("group", group);
    int64_t oh = (x[2] + 2 * (k / 2) - k) / stride + 1, ow = (x[3] + 2 * (k / 2) - k) / stride + 1;
    n->output()->setType(DType::Float32, {x[0], out_c, oh, ow});
    return n;
  }
  Node* op(const std::string& type, const std::string& name, const std::vector<Value*>& inputs) {
    Node* n = g.appendNode(type, inputs, 1, name);
    n->output()->setType(DType::Float32, inputs[0]->shape());
    return n;
  }
};

}  // namespace npuc::perf::testing
