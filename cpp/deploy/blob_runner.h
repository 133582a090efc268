// Running a .npub from C++: the one object a deploy program needs. It loads and verifies the blob
// (compile/compiled_model_io.h), prepares what Toolkit.load_blob + inference run (the blob's
// program over its planned arena when it has one, else the node-by-node simulator: the same
// outputs, bit for bit), and applies the preprocessing the blob recorded (mean/std per channel of
// a float input, an NHWC image transposed to the model's NCHW), as Toolkit.inference does.
//
//   npuc::deploy::BlobRunner runner("model.npub");
//   std::vector<npuc::Tensor> outputs = runner.runRaw({runner.preprocess(0, image)});
//
// `npuc codegen` (Toolkit.codegen) writes a program built on it. A blob built with
// config(dynamic_input) holds a program per input-shape set: runRaw runs the one whose input
// shapes the given tensors have, as Toolkit.inference does.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "compile/compiled_model.h"
#include "ir/tensor.h"

namespace npuc::quant {
class QuantizedExecutor;
}
namespace npuc::runtime {
class ProgramRuntime;
}

namespace npuc::deploy {

struct IoInfo {
  std::string name;
  DType dtype = DType::Float32;
  Shape shape;
};

class BlobRunner {
 public:
  // BlobError naming the file when it is malformed, inconsistent or newer than this npuc.
  // `custom_ops`: C++ definitions (opset/custom_ops.h) of the user-defined ops the blob keeps by
  // name, as a board's runtime needs the user's C implementation of each; running a blob that
  // uses one without it throws UnsupportedOpError naming the op.
  explicit BlobRunner(const std::string& path, std::shared_ptr<const CustomOpSet> custom_ops = nullptr);
  ~BlobRunner();
  // Not copied or moved: each shape set's executables point into model_.
  BlobRunner(const BlobRunner&) = delete;
  BlobRunner& operator=(const BlobRunner&) = delete;

  const CompiledModel& model() const { return model_; }
  // Set 0's inputs and outputs (the only set of a blob without config(dynamic_input)).
  std::vector<IoInfo> inputs() const;
  std::vector<IoInfo> outputs() const;
  // Every input-shape set's inputs, set 0 first.
  std::vector<std::vector<IoInfo>> inputSets() const;
  // "program" when the blob's lowered program runs, else "simulator" (with the reason in note()).
  std::string runtime() const;
  const std::string& note() const { return why_not_; }

  // Input `index` as the model takes it from `x`: an array of the input's shape (in any shape
  // set), or of its NHWC form (a [1, H, W, C] image, also without the batch dim) for a 4-D NCHW
  // input, any numeric dtype; converted to float32, transposed, then (x - mean[c]) / std[c] with
  // the recorded values. InputError naming the input and the shapes it takes when `x` fits none.
  Tensor preprocess(size_t index, const Tensor& x) const;
  // Runs the model on already preprocessed inputs (one per model input): the program of the shape
  // set whose input shapes they have (InputError listing the sets when none); outputs in float32.
  std::vector<Tensor> runRaw(const std::vector<Tensor>& inputs) const;

 private:
  // One input-shape set's executables: the program over its planned arena when the blob has one,
  // else the node-by-node simulator.
  struct ShapeSet {
    const CompiledModel* model = nullptr;
    std::shared_ptr<const quant::QuantizedExecutor> sim;
    std::shared_ptr<const runtime::ProgramRuntime> program;
  };
  ShapeSet prepare(const CompiledModel& m, std::string* why_not) const;
  Tensor applyNormalization(size_t index, Tensor x) const;

  CompiledModel model_;
  std::vector<ShapeSet> sets_;  // set 0 (model_), then model_.shape_variants in order
  std::string why_not_;
};

}  // namespace npuc::deploy
