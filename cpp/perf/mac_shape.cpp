#include "perf/mac_shape.h"

#include <algorithm>
#include <sstream>

#include "common/error.h"
#include "opset/macs.h"
#include "opset/op_traits.h"
#include "target/op_geometry.h"

namespace npuc::perf {

namespace {

const Shape& staticShape(const Node& node, const Value* v, const char* what) {
  if (!v || !v->shapeIsStatic())
    throw ShapeError(node.opType() + " '" + node.name() + "': " + what + " has no static shape");
  return v->shape();
}

MacOpShape convShape(const Node& node) {
  const Shape& x = staticShape(node, node.input(0), "input");
  const Shape& w = staticShape(node, node.input(1), "weight");
  const Shape& y = staticShape(node, node.output(0), "output");
  if (x.size() != 3 && x.size() != 4)
    throw ShapeError("Conv '" + node.name() + "': the cost model handles 1-D and 2-D convs, input is " +
                     shapeStr(x));
  WindowGeometry g = windowGeometry(node);
  bool two_d = x.size() == 4;
  MacOpShape s;
  s.batch = x[0];
  s.in_c = x[1];
  s.out_c = w[0];
  s.group = g.group;
  s.in_h = two_d ? x[2] : 1;
  s.in_w = x.back();
  s.out_h = two_d ? y[2] : 1;
  s.out_w = y.back();
  s.kernel_h = two_d ? g.kernel[0] : 1;
  s.kernel_w = g.kernel.back();
  s.stride_h = two_d ? g.strides[0] : 1;
  s.dilation_h = two_d ? g.dilations[0] : 1;
  s.depthwise = isDepthwiseConv(node);
  s.has_bias = node.hasInput(2);
  return s;
}

MacOpShape gemmShape(const Node& node) {
  const Shape& y = staticShape(node, node.output(0), "output");
  if (y.size() < 2)
    throw ShapeError(node.opType() + " '" + node.name() + "': output rank " + std::to_string(y.size()) +
                     " is below 2");
  MacOpShape s;
  s.batch = 1;
  for (size_t i = 0; i + 2 < y.size(); ++i) s.batch *= y[i];
  s.in_c = gemmReductionLength(node);
  s.out_c = y.back();
  s.in_w = s.out_w = y[y.size() - 2];
  s.has_bias = node.opType() == "Gemm" && node.hasInput(2);
  return s;
}

}  // namespace

int64_t MacOpShape::inputRows(int64_t out_rows) const {
  return std::min(in_h, (out_rows - 1) * stride_h + (kernel_h - 1) * dilation_h + 1);
}

std::string MacOpShape::signature() const {
  std::ostringstream s;
  s << op_type << '|' << batch << ',' << in_c << ',' << out_c << ',' << group << '|' << in_h << ',' << in_w
    << ',' << out_h << ',' << out_w << '|' << kernel_h << ',' << kernel_w << ',' << stride_h << ','
    << dilation_h << '|' << depthwise << has_bias;
  return s.str();
}

bool isMacOp(const Node& node) {
  return opTraits(node).has(OpTrait::MacGeometry);
}

MacOpShape macOpShape(const Node& node) {
  if (!isMacOp(node))
    throw ShapeError("cost model: '" + node.name() + "' (" + node.opType() + ") is not a Conv/Gemm/MatMul");
  MacOpShape s = node.opType() == "Conv" ? convShape(node) : gemmShape(node);
  s.op_type = node.opType();
  return s;
}

int64_t usefulMacs(const Node& node) {
  if (isMacOp(node)) return macOpShape(node).usefulMacs();
  // Recurrent layers run on the CPU (or unrolled into Gemms); their MACs are what costs there.
  if (node.opType() == "LSTM" || node.opType() == "GRU" || node.opType() == "RNN") return nodeMacs(node);
  if (node.opType() != "ConvTranspose") return 0;
  const Shape& x = staticShape(node, node.input(0), "input");
  const Shape& w = staticShape(node, node.input(1), "weight");
  int64_t macs = 1;
  for (int64_t d : x) macs *= d;
  for (size_t i = 1; i < w.size(); ++i) macs *= w[i];  // Cout/group and the kernel
  return macs;
}

}  // namespace npuc::perf
