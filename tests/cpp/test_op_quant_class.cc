// readsAsActivation (quant/graph/op_quant_class.h): the one rule the simulator and the QDQ export
// share for which inputs of an int8 node are read as int8 activations.
#include <gtest/gtest.h>

#include "quant/graph/op_quant_class.h"

namespace npuc::quant {
namespace {

TEST(QuantGraphOpClass, ElementwiseAndActivationMatMulReadEveryOperandAsActivation) {
  for (QuantOpKind k :
       {QuantOpKind::Add, QuantOpKind::Mul, QuantOpKind::Concat, QuantOpKind::MatMulActivation})
    for (size_t input : {0u, 1u, 2u})
      EXPECT_TRUE(readsAsActivation(k, input)) << quantOpKindName(k) << " " << input;
}

TEST(QuantGraphOpClass, WeightedAndSingleInputKindsReadOnlyInputZero) {
  for (QuantOpKind k : {QuantOpKind::Conv, QuantOpKind::Gemm, QuantOpKind::MatMulConst,
                        QuantOpKind::SharedScale, QuantOpKind::ClampActivation,
                        QuantOpKind::GlobalAveragePool, QuantOpKind::AveragePool, QuantOpKind::Lut}) {
    EXPECT_TRUE(readsAsActivation(k, 0)) << quantOpKindName(k);
    EXPECT_FALSE(readsAsActivation(k, 1)) << quantOpKindName(k);  // weights, Clip bounds, Reshape shape
    EXPECT_FALSE(readsAsActivation(k, 2)) << quantOpKindName(k);  // bias
  }
}

TEST(QuantGraphOpClass, KindsWithoutAnInt8KernelReadNoActivation) {
  for (QuantOpKind k : {QuantOpKind::NonFloat, QuantOpKind::Float16})
    for (size_t input : {0u, 1u}) EXPECT_FALSE(readsAsActivation(k, input)) << quantOpKindName(k);
}

}  // namespace
}  // namespace npuc::quant
