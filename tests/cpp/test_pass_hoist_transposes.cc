// hoist_transposes: a Transpose below an elementwise op moves above it when the op's input is
// another Transpose (which has other readers, so transpose_reorder cannot sink it): the two compose
// or cancel. Bit-exact (rtol 0) on random inputs; the constant operand follows the permutation.
#include "pass_test_util.h"
#include "passes/optimize.h"

namespace npuc {
namespace {

using passtest::attrs;
using passtest::countOps;
using passtest::GraphBuilder;
using passtest::runPassChecked;

const std::vector<int64_t> kToNhwc{0, 2, 3, 1}, kToNchw{0, 3, 1, 2};

// x [1, 3, 4, 5] -> Transpose to NHWC (also an output) -> E -> Transpose back.
std::unique_ptr<Graph> roundTrip(const std::string& op, bool constant_operand, bool second_reader_of_e) {
  GraphBuilder b;
  Value* x = b.input("x", {1, 3, 4, 5});
  Value* y = b.op("Transpose", {x}, attrs({{"perm", kToNhwc}}));
  b.output(y);
  // A [4, 1, 3] constant (H, 1, C of NHWC) broadcasts over W: its transpose is not a reshape.
  Value* z = constant_operand ? b.op(op, {y, b.randomConstant({4, 1, 3}, 5)}) : b.op(op, {y});
  b.output(b.op("Transpose", {z}, attrs({{"perm", kToNchw}})));
  if (second_reader_of_e) b.output(b.op("Neg", {z}));
  return b.release();
}

TEST(PassHoistTransposes, InverseTransposeCancelsAcrossAUnaryOp) {
  auto g = roundTrip("Relu", false, false);
  auto r = runPassChecked(*g, "hoist_transposes", 0.0);
  EXPECT_EQ(r.changes, 1u);
  auto original = roundTrip("Relu", false, false);
  optimize(*g);
  EXPECT_EQ(countOps(*g, "Transpose"), 1u) << "only the one the first output needs";
  passtest::expectSameResults(*original, *g, 0.0);
}

TEST(PassHoistTransposes, ConstantOperandIsPermuted) {
  auto g = roundTrip("Sub", true, false);
  auto original = roundTrip("Sub", true, false);
  EXPECT_EQ(runPassChecked(*g, "hoist_transposes", 0.0).changes, 1u);
  optimize(*g);
  EXPECT_EQ(countOps(*g, "Transpose"), 1u);
  passtest::expectSameResults(*original, *g, 0.0);
}

TEST(PassHoistTransposes, WithoutThePassTheRoundTripStays) {
  auto g = roundTrip("Relu", false, false);
  OptimizeOptions o;
  o.disable_passes = {"hoist_transposes"};
  optimize(*g, o);
  EXPECT_EQ(countOps(*g, "Transpose"), 2u) << "transpose_reorder alone cannot reach it";
}

TEST(PassHoistTransposes, OpWithAnotherReaderStays) {
  auto g = roundTrip("Relu", false, true);
  EXPECT_EQ(runPassChecked(*g, "hoist_transposes", 0.0).changes, 0u);
}

}  // namespace
}  // namespace npuc
