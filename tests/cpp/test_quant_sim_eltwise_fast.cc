// The simulator's element-wise fast paths against their portable peers, to the bit: the byte
// lookup (VBMI or loop), the half rounding (F16C or the scalar codec), the broadcast runs
// against per-element index arithmetic, the int8 Mul / Add steps on broadcast shapes against
// mulInt8 / addInt8 per element, and the float steps' prepared kernels against evalNode.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <map>
#include <random>
#include <vector>

#include "opset/eval.h"
#include "pass_test_util.h"
#include "quant/binary_requant.h"
#include "quant/graph/calibrator.h"
#include "quant/graph/quantizer.h"
#include "quant/qparams.h"
#include "quant/sim/broadcast_runs.h"
#include "quant/sim/byte_lookup.h"
#include "quant/sim/half_round.h"
#include "quant/sim/node_kernel.h"
#include "quant/sim/quantized_executor.h"

namespace npuc::quant {
namespace {

TEST(QuantSimEltwiseFast, ByteLookupEqualsTheLoopAtEveryLengthAndByte) {
  std::mt19937 gen(3);
  std::uniform_int_distribution<int> byte(-128, 127);
  std::vector<int8_t> table(256);
  for (auto& t : table) t = static_cast<int8_t>(byte(gen));
  for (int64_t n : {0, 1, 63, 64, 65, 127, 256, 1000, 4099}) {
    std::vector<int8_t> in(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i)
      in[static_cast<size_t>(i)] = static_cast<int8_t>(i < 256 ? i - 128 : byte(gen));
    std::vector<int8_t> fast(static_cast<size_t>(n) + 1, 7), loop(static_cast<size_t>(n) + 1, 7);
    lookupBytes(table.data(), in.data(), n, fast.data());
    lookupBytesScalar(table.data(), in.data(), n, loop.data());
    ASSERT_EQ(fast, loop) << "n = " << n;  // including the untouched byte past the end
    for (int64_t i = 0; i < n; ++i)
      ASSERT_EQ(loop[static_cast<size_t>(i)], table[static_cast<uint8_t>(in[static_cast<size_t>(i)])]);
  }
}

float fromBits(uint32_t bits) {
  float f;
  std::memcpy(&f, &bits, sizeof(f));
  return f;
}

TEST(QuantSimEltwiseFast, HalfRoundingEqualsTheScalarCodec) {
  // Every 997th bit pattern (both signs: NaNs with payloads, infinities, overflow to infinity),
  // and densely the ranges where rounding is delicate: half subnormals, the normal/subnormal
  // boundary and the largest halves.
  std::vector<float> x;
  for (uint64_t b = 0; b <= 0xffffffffu; b += 997) x.push_back(fromBits(static_cast<uint32_t>(b)));
  for (uint32_t b = 0x33000000u; b < 0x38900000u; b += 101) {
    x.push_back(fromBits(b));
    x.push_back(fromBits(b | 0x80000000u));
  }
  for (uint32_t b = 0x477f0000u; b < 0x47800100u; ++b) x.push_back(fromBits(b));
  std::vector<float> fast(x.size()), scalar(x.size());
  roundFloatsToHalf(x.data(), static_cast<int64_t>(x.size()), fast.data());
  roundFloatsToHalfScalar(x.data(), static_cast<int64_t>(x.size()), scalar.data());
  for (size_t i = 0; i < x.size(); ++i) {
    uint32_t a, b, in;
    std::memcpy(&a, &fast[i], 4);
    std::memcpy(&b, &scalar[i], 4);
    std::memcpy(&in, &x[i], 4);
    ASSERT_EQ(a, b) << "input bits 0x" << std::hex << in;
  }
}

// The flat index of `in` (broadcast, aligned right) at output flat index `flat`.
int64_t naiveIndex(const Shape& in, const Shape& out, int64_t flat) {
  const std::vector<int64_t> in_strides = shapeStrides(in);
  int64_t idx = 0;
  for (size_t d = out.size(); d-- > 0;) {
    const int64_t coord = flat % out[d];
    flat /= out[d];
    const size_t offset = out.size() - in.size();
    if (d >= offset && in[d - offset] != 1) idx += coord * in_strides[d - offset];
  }
  return idx;
}

TEST(QuantSimEltwiseFast, BroadcastRunsVisitEveryElementAtItsIndex) {
  std::mt19937 gen(5);
  for (int trial = 0; trial < 300; ++trial) {
    const size_t rank = std::uniform_int_distribution<size_t>(1, 5)(gen);
    Shape out, a, b;
    for (size_t d = 0; d < rank; ++d) out.push_back(std::uniform_int_distribution<int64_t>(1, 4)(gen));
    // Each input: a suffix of the output's dims, each dim kept or broadcast (1).
    auto operand = [&]() {
      const size_t r = std::uniform_int_distribution<size_t>(0, rank)(gen);
      Shape s;
      for (size_t d = rank - r; d < rank; ++d) s.push_back(gen() % 2 ? out[d] : 1);
      return s;
    };
    a = operand();
    b = operand();
    const BroadcastRuns runs(a, b, out);
    int64_t visited = 0;
    runs.forEach([&](int64_t ia, int64_t ib, int64_t io) {
      for (int64_t i = 0; i < runs.length(); ++i) {
        ASSERT_EQ(io + i, visited) << "runs out of order";
        ASSERT_EQ(ia + (runs.aSteps() ? i : 0), naiveIndex(a, out, io + i))
            << shapeStr(a) << " -> " << shapeStr(out);
        ASSERT_EQ(ib + (runs.bSteps() ? i : 0), naiveIndex(b, out, io + i))
            << shapeStr(b) << " -> " << shapeStr(out);
        ++visited;
      }
    });
    ASSERT_EQ(visited, shapeNumel(out));
  }
}

// Mul and Add of a [1,4,6,5] activation with another broadcast one, on the simulator, against
// mulInt8 / addInt8 of the two quantized elements the output element reads.
void expectBinaryStepMatchesFormula(const std::string& op, const Shape& sa, const Shape& sb) {
  passtest::GraphBuilder g;
  Value* a = g.input("a", sa);
  Value* b = g.input("b", sb);
  Value* y = g.op(op, {a, b});
  g.output(y);
  Calibrator cal(g.graph());
  for (uint32_t i = 0; i < 3; ++i)
    cal.addSample(
        {passtest::randomTensor(sa, 10 + i, -3.0f, 3.0f), passtest::randomTensor(sb, 20 + i, -0.5f, 2.0f)});
  const QuantPlan plan = buildQuantPlan(g.graph(), cal.ranges({}), {});
  const QuantizedExecutor sim(g.graph(), plan);
  const std::map<std::string, Tensor> values = sim.runAllValues(
      {passtest::randomTensor(sa, 8, -4.0f, 4.0f), passtest::randomTensor(sb, 9, -1.0f, 2.5f)});
  const QuantParams pa = plan.at("a").params("a"), pb = plan.at("b").params("b");
  const QuantParams py = plan.at(y->name()).params(y->name());
  const Tensor& got = values.at(y->name());
  const Shape& out = got.shape();
  for (int64_t i = 0; i < got.numel(); ++i) {
    const int8_t qa = quantizeValue(values.at("a").data<float>()[naiveIndex(sa, out, i)], pa);
    const int8_t qb = quantizeValue(values.at("b").data<float>()[naiveIndex(sb, out, i)], pb);
    const int8_t want = op == "Mul" ? mulInt8(qa, qb, makeMulRequant(pa, pb, py))
                                    : addInt8(qa, qb, makeAddRequant(pa, pb, py));
    ASSERT_EQ(got.data<float>()[i], dequantizeValue(want, py))
        << op << " " << shapeStr(sa) << " x " << shapeStr(sb) << " element " << i;
  }
}

TEST(QuantSimEltwiseFast, BroadcastMulAndAddStepsEqualTheFormula) {
  const Shape x{1, 4, 6, 5};
  for (const std::string op : {"Mul", "Add"}) {
    expectBinaryStepMatchesFormula(op, x, {1});                      // x * scalar: one run, b fixed
    expectBinaryStepMatchesFormula(op, {1}, x);                      // scalar * x: a fixed
    expectBinaryStepMatchesFormula(op, x, {1, 4, 1, 1});             // per channel (SE scale)
    expectBinaryStepMatchesFormula(op, x, {6, 1});                   // fixed within rows
    expectBinaryStepMatchesFormula(op, x, {5});                      // both step along a row
    expectBinaryStepMatchesFormula(op, {1, 4, 1, 5}, {1, 1, 6, 1});  // both broadcast
  }
}

// NodeKernel (built once, workspace from the thread's scratch) gives evalNode's bits.
TEST(QuantSimEltwiseFast, PreparedKernelEqualsEvalNode) {
  passtest::GraphBuilder g;
  Value* x = g.input("x", {1, 6, 7, 9});
  Node* deconv = g.node("ConvTranspose", {x, g.randomConstant({6, 3, 2, 2}, 4), g.randomConstant({3}, 5)},
                        passtest::attrs({{"strides", std::vector<int64_t>{2, 2}}}));
  Node* transpose =
      g.node("Transpose", {deconv->output()}, passtest::attrs({{"perm", std::vector<int64_t>{0, 2, 3, 1}}}));
  const Tensor input = passtest::randomTensor({1, 6, 7, 9}, 6, -2.0f, 2.0f);
  const Tensor mid =
      evalNode(*deconv, {&input, &deconv->input(1)->constant(), &deconv->input(2)->constant()})[0];
  for (Node* n : {deconv, transpose}) {
    std::vector<const Tensor*> ins{n == deconv ? &input : &mid};
    for (size_t i = 1; i < n->numInputs(); ++i) ins.push_back(&n->input(i)->constant());
    const std::unique_ptr<NodeKernel> k = NodeKernel::tryBuild(*n);
    ASSERT_TRUE(k) << n->opType();
    for (int repeat = 0; repeat < 2; ++repeat) {  // the same kernel twice: nothing carried over
      const Tensor got = k->run(ins)[0], want = evalNode(*n, ins)[0];
      ASSERT_EQ(got.shape(), want.shape());
      ASSERT_EQ(std::memcmp(got.raw(), want.raw(), want.nbytes()), 0) << n->opType();
    }
  }
}

}  // namespace
}  // namespace npuc::quant
