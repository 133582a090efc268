// The frontend seam (frontend/import_tail.h): a graph built directly in the IR, as a TFLite or
// Darknet reader would after parsing, goes through the same tail as an ONNX import: input_size_list
// fixes its dynamic dim, shape inference folds its Shape sub-graph, it verifies, and bad input is
// refused with the typed error naming the value or op.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "common/error.h"
#include "frontend/import_tail.h"

namespace npuc {
namespace {

// x[?, 4] -> Relu -> Reshape(to Shape(x) as computed at run time) -> y, untyped beyond the input.
std::unique_ptr<Graph> parsedGraph(float weight = 1.0f, const std::string& op = "Relu") {
  auto g = std::make_unique<Graph>();
  Value* x = g->addInput("x", DType::Float32, {-1, 4});
  Tensor w(DType::Float32, {1, 4});
  for (int64_t i = 0; i < 4; ++i) w.data<float>()[i] = weight;
  Value* scaled = g->appendNode("Mul", {x, g->addConstant(std::move(w), "w")}, 1, "scale")->output();
  Value* act = g->appendNode(op, {scaled}, 1, "act")->output();
  Value* shape = g->appendNode("Shape", {x}, 1, "shape")->output();
  Value* y = g->appendNode("Reshape", {act, shape}, 1, "reshape")->output();
  y->setName("y");
  g->addOutput(y);
  return g;
}

TEST(ImportTail, AParsedGraphGetsShapesFoldingAndVerification) {
  std::unique_ptr<Graph> g = parsedGraph();
  ImportOptions opts;
  opts.input_sizes = {{2, 4}};
  finishImport(*g, opts);
  EXPECT_EQ(g->findValue("y")->shape(), Shape({2, 4}));
  for (const Node* n : g->nodes()) EXPECT_NE(n->opType(), "Shape") << "the Shape sub-graph was folded";
}

TEST(ImportTail, BadInputIsRefusedWithTheTypedErrorNamingIt) {
  {
    std::unique_ptr<Graph> g = parsedGraph();
    try {
      finishImport(*g, {});
      FAIL() << "a dynamic dim without input_size_list passed";
    } catch (const ShapeError& e) {
      EXPECT_NE(std::string(e.what()).find("input_size_list"), std::string::npos) << e.what();
    }
  }
  {
    std::unique_ptr<Graph> g = parsedGraph(std::numeric_limits<float>::quiet_NaN());
    ImportOptions opts;
    opts.input_sizes = {{2, 4}};
    EXPECT_THROW(finishImport(*g, opts), ModelLoadError);
  }
  {
    std::unique_ptr<Graph> g = parsedGraph(1.0f, "NoSuchOp");
    ImportOptions opts;
    opts.input_sizes = {{2, 4}};
    try {
      finishImport(*g, opts);
      FAIL() << "an unknown op passed";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("NoSuchOp"), std::string::npos) << e.what();
    }
  }
}

}  // namespace
}  // namespace npuc
