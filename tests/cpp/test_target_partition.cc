// NPU/CPU partitioning on small constructed graphs: every limit violated once lands on the CPU with
// the right reason, op_target overrides work both ways, hand-overs are counted and kept minimal.
#include <gtest/gtest.h>

#include "common/error.h"
#include "target/op_constraints.h"
#include "target/partition.h"

namespace npuc {
namespace {

struct ConvParams {
  std::vector<int64_t> kernel = {3, 3};
  std::vector<int64_t> strides = {1, 1};
  std::vector<int64_t> pads = {1, 1, 1, 1};
  std::vector<int64_t> dilations = {1, 1};
  int64_t group = 1;
};

// Builds graphs with shapes filled in by hand (no shape inference needed).
class Builder {
 public:
  Graph g;

  Value* input(const std::string& name, Shape shape, DType dtype = DType::Float32) {
    return g.addInput(name, dtype, std::move(shape));
  }
  Node* op(const std::string& type, const std::string& name, const std::vector<Value*>& inputs, Shape out,
           DType dtype = DType::Float32) {
    Node* n = g.appendNode(type, inputs, 1, name);
    n->output()->setType(dtype, std::move(out));
    return n;
  }
  Node* unary(const std::string& type, const std::string& name, Value* x) {
    return op(type, name, {x}, x->shape());
  }
  Node* conv(const std::string& name, Value* x, int64_t out_channels, const ConvParams& p = {}) {
    const Shape& in = x->shape();
    Value* w = g.addConstant(
        Tensor(DType::Float32, {out_channels, in[1] / p.group, p.kernel[0], p.kernel[1]}), name + "_w");
    Shape out = {in[0], out_channels, 0, 0};
    for (size_t d = 0; d < 2; ++d) {
      int64_t span = (p.kernel[d] - 1) * p.dilations[d] + 1;
      out[d + 2] = (in[d + 2] + p.pads[d] + p.pads[d + 2] - span) / p.strides[d] + 1;
    }
    Node* n = op("Conv", name, {x, w}, out);
    n->attrs().set("kernel_shape", p.kernel);
    n->attrs().set("strides", p.strides);
    n->attrs().set("pads", p.pads);
    n->attrs().set("dilations", p.dilations);
    n->attrs().set("group", p.group);
    return n;
  }
  void output(Node* n) { g.addOutput(n->output()); }
};

const SocProfile& rk3588() {
  return socProfile("rk3588");
}

// Places one node built by `make` after a 1x16x32x32 input and returns its placement.
template <typename Make>
NodePlacement placeOne(Make make, const SocProfile& soc = rk3588()) {
  Builder b;
  Value* x = b.input("x", {1, 16, 32, 32});
  Node* n = make(b, x);
  b.output(n);
  PartitionReport r = partitionGraph(b.g, soc);
  const NodePlacement* p = r.find(n->name());
  EXPECT_NE(p, nullptr);
  return *p;
}

void expectCpu(const NodePlacement& p, PlacementReason reason, const std::string& message) {
  EXPECT_EQ(p.device, Device::Cpu) << p.label;
  EXPECT_EQ(p.reason, reason) << p.label << ": " << p.detail;
  EXPECT_NE(p.detail.find(message), std::string::npos) << "detail: " << p.detail;
}

TEST(Partition, ConvWithinPublishedLimitsRunsOnNpu) {
  ConvParams edge;
  edge.kernel = {31, 31};
  edge.strides = {7, 7};
  edge.pads = {15, 15, 15, 15};
  NodePlacement p = placeOne([&](Builder& b, Value* x) { return b.conv("c", x, 16, edge); });
  EXPECT_EQ(p.device, Device::Npu) << p.detail;
  EXPECT_EQ(p.reason, PlacementReason::NpuSupported);
  // A 9x9 kernel is fine for an ordinary conv; only depthwise convs stop at 8x8.
  ConvParams nine;
  nine.kernel = {9, 9};
  nine.pads = {4, 4, 4, 4};
  EXPECT_EQ(placeOne([&](Builder& b, Value* x) { return b.conv("c", x, 16, nine); }).device, Device::Npu);
}

TEST(Partition, EachConvLimitViolatedFallsBack) {
  ConvParams kernel;
  kernel.kernel = {33, 33};
  kernel.pads = {0, 0, 0, 0};
  expectCpu(placeOne([&](Builder& b, Value* x) {
              return b.conv("c", b.op("Pad", "p", {x}, {1, 16, 40, 40})->output(), 8, kernel);
            }),
            PlacementReason::LimitViolated, "Conv kernel 33x33 exceeds 31x31");
  ConvParams stride;
  stride.strides = {8, 8};
  expectCpu(placeOne([&](Builder& b, Value* x) { return b.conv("c", x, 8, stride); }),
            PlacementReason::LimitViolated, "Conv stride 8x8 exceeds 7x7");
  ConvParams pad;
  pad.kernel = {31, 31};
  pad.pads = {16, 16, 16, 16};
  expectCpu(placeOne([&](Builder& b, Value* x) { return b.conv("c", x, 8, pad); }),
            PlacementReason::LimitViolated, "Conv pad 16 exceeds 15");
  ConvParams dilation;
  dilation.dilations = {32, 1};
  dilation.pads = {0, 1, 0, 1};
  dilation.kernel = {1, 3};
  expectCpu(placeOne([&](Builder& b, Value* x) { return b.conv("c", x, 8, dilation); }),
            PlacementReason::LimitViolated, "Conv dilation 32x1 exceeds 31x31");
  ConvParams depthwise;
  depthwise.kernel = {9, 9};
  depthwise.pads = {4, 4, 4, 4};
  depthwise.group = 16;
  expectCpu(placeOne([&](Builder& b, Value* x) { return b.conv("c", x, 16, depthwise); }),
            PlacementReason::LimitViolated, "depthwise kernel 9x9 exceeds 8x8");
}

TEST(Partition, ResizeScaleMustBeSmallInteger) {
  auto resize = [](Shape out, std::string mode = "nearest") {
    return [out, mode](Builder& b, Value* x) {
      Node* n = b.op("Resize", "r", {x}, out);
      n->attrs().set("mode", mode);
      return n;
    };
  };
  EXPECT_EQ(placeOne(resize({1, 16, 64, 64})).device, Device::Npu);
  EXPECT_EQ(placeOne(resize({1, 16, 256, 32})).device, Device::Npu);  // x8 in H, unchanged W
  expectCpu(placeOne(resize({1, 16, 48, 48})), PlacementReason::LimitViolated,
            "Resize scale 1.5 (dim 2: 32 -> 48) is not an integer in 2..8");
  expectCpu(placeOne(resize({1, 16, 32, 512})), PlacementReason::LimitViolated, "Resize scale 16");
  expectCpu(placeOne(resize({1, 16, 16, 16})), PlacementReason::LimitViolated, "Resize scale 0.5");
  expectCpu(placeOne(resize({1, 16, 64, 64}, "cubic")), PlacementReason::LimitViolated,
            "Resize mode 'cubic' is not supported");
}

TEST(Partition, SoftmaxAxisMatMulKAndTransposeRank) {
  auto softmax = [](int64_t axis) {
    return [axis](Builder& b, Value* x) {
      Node* n = b.unary("Softmax", "s", x);
      n->attrs().set("axis", axis);
      return n;
    };
  };
  EXPECT_EQ(placeOne(softmax(1)).device, Device::Npu);
  EXPECT_EQ(placeOne(softmax(-1)).device, Device::Npu);
  expectCpu(placeOne(softmax(2)), PlacementReason::LimitViolated,
            "Softmax axis 2 of a rank-4 input is not the channel or the last axis");

  Builder b;
  Value* a = b.input("a", {4, 10000});
  Value* w = b.g.addConstant(Tensor(DType::Float32, {10000, 8}), "w");
  Node* big = b.op("MatMul", "mm_big", {a, w}, {4, 8});
  Value* a2 = b.input("a2", {4, 8192});
  Value* w2 = b.g.addConstant(Tensor(DType::Float32, {8192, 8}), "w2");
  Node* ok = b.op("MatMul", "mm_ok", {a2, w2}, {4, 8});
  Value* t = b.input("t", {1, 2, 3, 4, 5});
  Node* tr = b.op("Transpose", "tr5", {t}, {1, 2, 3, 5, 4});
  for (Node* n : {big, ok, tr}) b.output(n);
  PartitionReport r = partitionGraph(b.g, rk3588());
  expectCpu(*r.find("mm_big"), PlacementReason::LimitViolated, "MatMul K=10000 exceeds 8192");
  EXPECT_EQ(r.find("mm_ok")->device, Device::Npu);
  expectCpu(*r.find("tr5"), PlacementReason::LimitViolated, "has rank 5, above 4");
  EXPECT_EQ(r.npu_macs, 4 * 8 * 8192);
  EXPECT_EQ(r.total_macs, 4 * 8 * 8192 + 4 * 8 * 10000);
}

TEST(Partition, UnsupportedOpDtypeAndDynamicShape) {
  expectCpu(placeOne([](Builder& b, Value* x) { return b.unary("Erf", "e", x); }),
            PlacementReason::UnsupportedOp, "op Erf is not supported by the NPU");
  expectCpu(placeOne([](Builder& b, Value* x) {
              return b.op("ArgMax", "am", {x}, {1, 1, 32, 32}, DType::Int64);
            }),
            PlacementReason::UnsupportedOp, "op ArgMax");
  expectCpu(placeOne([](Builder& b, Value* x) {
              return b.op("Gather", "g", {x}, {1, 16, 32, 32}, DType::Int64);
            }),
            PlacementReason::LimitViolated, "of dtype int64 has no NPU dtype on rk3588");
  expectCpu(placeOne([](Builder& b, Value* x) {
              return b.op("Relu", "r", {x}, {1, -1, 32, 32});
            }),
            PlacementReason::LimitViolated, "has no static shape");
  // int16 runs on the NPU; float32 is compiled to an NPU dtype.
  EXPECT_EQ(placeOne([](Builder& b, Value* x) {
              return b.op("Relu", "r", {x}, {1, 16, 32, 32}, DType::Int16);
            }).device,
            Device::Npu);
}

TEST(Partition, ViolationsNameTheirCheck) {
  Builder b;
  Value* x = b.input("x", {1, 16, 32, 32});
  ConvParams p;
  p.kernel = {33, 33};
  p.pads = {16, 16, 16, 16};
  Node* c = b.conv("c", x, 8, p);
  std::vector<Violation> v = npuViolations(*c, rk3588());
  ASSERT_EQ(v.size(), 2u);
  EXPECT_EQ(v[0].check, "Conv.kernel");
  EXPECT_EQ(v[1].check, "Conv.pad");
  EXPECT_FALSE(v[0].unsupported_op);
}

// x -> conv1 -> <mid ops> -> conv2 -> out
struct ChainGraph {
  Builder b;
  std::vector<Node*> nodes;
  explicit ChainGraph(const std::vector<std::string>& mid_ops) {
    Value* x = b.input("x", {1, 16, 8, 8});
    nodes.push_back(b.conv("conv1", x, 16));
    for (size_t i = 0; i < mid_ops.size(); ++i)
      nodes.push_back(b.unary(mid_ops[i], "mid" + std::to_string(i), nodes.back()->output()));
    nodes.push_back(b.conv("conv2", nodes.back()->output(), 16));
    b.output(nodes.back());
  }
};

TEST(Partition, CpuOpInTheMiddleCostsTwoHandovers) {
  ChainGraph c({"Erf"});
  PartitionReport r = partitionGraph(c.b.g, rk3588());
  EXPECT_EQ(r.handovers, 2u);
  EXPECT_EQ(r.npu_segments, 2u);
  EXPECT_EQ(r.cpu_segments, 1u);
  EXPECT_EQ(r.count(Device::Cpu), 1u);
}

TEST(Partition, AdjacentCpuOpsShareTheirHandovers) {
  ChainGraph c({"Erf", "Erf"});
  PartitionReport r = partitionGraph(c.b.g, rk3588());
  EXPECT_EQ(r.handovers, 2u);
  EXPECT_EQ(r.cpu_segments, 1u);
}

TEST(Partition, DataMovementBetweenCpuOpsJoinsThem) {
  ChainGraph c({"Erf", "Reshape", "Erf"});
  PartitionReport r = partitionGraph(c.b.g, rk3588());
  const NodePlacement* reshape = r.find("mid1");
  EXPECT_EQ(reshape->device, Device::Cpu);
  EXPECT_EQ(reshape->reason, PlacementReason::FewerHandovers);
  EXPECT_EQ(r.handovers, 2u);  // 4 had the Reshape stayed on the NPU
  EXPECT_EQ(r.cpu_segments, 1u);
  // A chain of two data-movement ops between CPU ops moves as a whole.
  ChainGraph two({"Erf", "Transpose", "Reshape", "Erf"});
  PartitionReport r2 = partitionGraph(two.b.g, rk3588());
  EXPECT_EQ(r2.handovers, 2u);
  EXPECT_EQ(r2.count(Device::Cpu), 4u);
}

TEST(Partition, DataMovementNextToNpuWorkStaysOnNpu) {
  ChainGraph c({"Erf", "Reshape"});  // Reshape feeds conv2 on the NPU: moving it saves nothing
  PartitionReport r = partitionGraph(c.b.g, rk3588());
  EXPECT_EQ(r.find("mid1")->device, Device::Npu);
  EXPECT_EQ(r.handovers, 2u);
  // Compute ops are never moved to save hand-overs.
  ChainGraph relu({"Erf", "Relu", "Erf"});
  PartitionReport r2 = partitionGraph(relu.b.g, rk3588());
  EXPECT_EQ(r2.find("mid1")->device, Device::Npu);
  EXPECT_EQ(r2.handovers, 4u);
}

TEST(Partition, OneTransferPerValueAndDevice) {
  // conv1 feeds two CPU ops and one NPU op: its output crosses to the CPU once.
  Builder b;
  Value* x = b.input("x", {1, 16, 8, 8});
  Node* conv1 = b.conv("conv1", x, 16);
  Node* e1 = b.unary("Erf", "e1", conv1->output());
  Node* e2 = b.unary("Erf", "e2", conv1->output());
  Node* r = b.unary("Relu", "r", conv1->output());
  for (Node* n : {e1, e2, r}) b.output(n);
  PartitionReport rep = partitionGraph(b.g, rk3588());
  EXPECT_EQ(rep.handovers, 1u);
  EXPECT_EQ(rep.cpu_segments, 2u);  // e1 and e2 are not connected through a CPU edge
}

TEST(Partition, OpTargetForcesCpuByNameOrType) {
  ChainGraph c({"Relu", "Relu"});
  PartitionReport by_name = partitionGraph(c.b.g, rk3588(), {{"mid0", "cpu"}});
  expectCpu(*by_name.find("mid0"), PlacementReason::ForcedCpu, "op_target['mid0'] = cpu");
  EXPECT_EQ(by_name.find("mid1")->device, Device::Npu);
  PartitionReport by_type = partitionGraph(c.b.g, rk3588(), {{"Relu", "cpu"}, {"mid1", "npu"}});
  EXPECT_EQ(by_type.find("mid0")->device, Device::Cpu);
  EXPECT_EQ(by_type.find("mid1")->device, Device::Npu);  // the node name wins over the op type
  EXPECT_EQ(by_type.find("mid1")->reason, PlacementReason::ForcedNpu);
  EXPECT_EQ(by_type.find("conv1")->device, Device::Npu);
  EXPECT_EQ(by_type.handovers, 2u);
}

TEST(Partition, OpTargetNpuIsRefusedWhenAChecksFails) {
  ChainGraph c({"Erf"});
  try {
    partitionGraph(c.b.g, rk3588(), {{"Erf", "npu"}});
    FAIL() << "forcing Erf onto the NPU was accepted";
  } catch (const ConfigError& e) {
    std::string msg = e.what();
    EXPECT_NE(msg.find("node 'mid0' (Erf)"), std::string::npos) << msg;
    EXPECT_NE(msg.find("check op_support fails: op Erf is not supported by the NPU"), std::string::npos)
        << msg;
  }
  Builder b;
  ConvParams p;
  p.strides = {9, 9};
  b.output(b.conv("big_stride", b.input("x", {1, 16, 32, 32}), 8, p));
  try {
    partitionGraph(b.g, rk3588(), {{"big_stride", "npu"}});
    FAIL() << "forcing a stride-9 conv onto the NPU was accepted";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("check Conv.stride fails"), std::string::npos) << e.what();
  }
  EXPECT_THROW(partitionGraph(b.g, rk3588(), {{"Conv", "gpu"}}), ConfigError);
}

TEST(Partition, WarnsWhenCpuRuntimeLacksTheOp) {
  ChainGraph c({"Erf", "Reshape"});
  PartitionReport r = partitionGraph(c.b.g, socProfile("rv1106"), {{"Nonexistent", "cpu"}});
  const NodePlacement* erf = r.find("mid0");
  EXPECT_EQ(erf->device, Device::Cpu);
  EXPECT_TRUE(erf->cpu_runtime_lacks);
  ASSERT_EQ(r.warnings.size(), 2u);
  EXPECT_NE(r.warnings[0].find("rv1106 CPU runtime does not implement Erf"), std::string::npos)
      << r.warnings[0];
  EXPECT_NE(r.warnings[1].find("op_target['Nonexistent'] matches no node"), std::string::npos)
      << r.warnings[1];
  PartitionReport on_rk3588 = partitionGraph(c.b.g, rk3588());
  EXPECT_TRUE(on_rk3588.warnings.empty());
}

TEST(Partition, MacShareAndTextReport) {
  ChainGraph c({"Erf"});
  PartitionReport all_npu = partitionGraph(c.b.g, rk3588());
  const int64_t conv_macs = 1 * 16 * 8 * 8 * 16 * 3 * 3;  // N*Cout*H*W * Cin*KH*KW
  EXPECT_EQ(all_npu.find("conv1")->macs, conv_macs);
  EXPECT_EQ(all_npu.total_macs, 2 * conv_macs);
  EXPECT_DOUBLE_EQ(all_npu.npuMacShare(), 1.0);
  PartitionReport half = partitionGraph(c.b.g, rk3588(), {{"conv2", "cpu"}});
  EXPECT_DOUBLE_EQ(half.npuMacShare(), 0.5);
  std::string text = half.toText();
  EXPECT_NE(text.find("Partition for rk3588: 3 nodes, 1 on NPU, 2 on CPU; 1 NPU<->CPU hand-overs"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("MACs on NPU: 50.0%"), std::string::npos) << text;
  EXPECT_NE(text.find("mid0 (Erf): unsupported op: op Erf is not supported by the NPU"), std::string::npos)
      << text;
  EXPECT_NE(text.find("conv2 (Conv): forced by user: op_target['conv2'] = cpu"), std::string::npos) << text;
}

}  // namespace
}  // namespace npuc
