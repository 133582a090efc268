// The state of one TFLite subgraph being turned into an npuc Graph.
//
// Layout: npuc's IR is NCHW, TFLite's NHWC. Every 4-D activation tensor of the file is held as an
// NCHW Value (its dims permuted [N,H,W,C] -> [N,C,H,W]); every other tensor (constants until an
// op consumes them, activations of other ranks) keeps the file's layout. Each tensor slot records
// which of the two it holds, and converters ask for the form they need (inputNchw / inputFile):
// a constant is permuted at import, an activation gets a Transpose (only where the file itself
// changes between NHWC and flat layouts, e.g. a RESHAPE to rank 3).
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "frontend/tflite/tflite_file.h"
#include "frontend/tflite/tflite_tensor.h"
#include "ir/graph.h"

namespace npuc::tflite {

// [N,H,W,C] <-> [N,C,H,W] as Transpose perms.
inline const std::vector<int64_t> kToNchw{0, 3, 1, 2};
inline const std::vector<int64_t> kToNhwc{0, 2, 3, 1};
// An NHWC axis (0..3) in NCHW.
int64_t nhwcAxisToNchw(int64_t axis);
// Permutes a constant by a Transpose perm.
Tensor permuteConstant(const Tensor& t, const std::vector<int64_t>& perm);

class Builder {
 public:
  Builder(const TfliteFile& f, Graph& g, bool input_is_nchw);

  const TfliteFile& file() const { return f_; }
  Graph& graph() { return g_; }

  // Declares the subgraph's inputs as graph inputs (NCHW for 4-D unless input_is_nchw).
  void declareInputs();
  // Marks the subgraph's outputs; a 4-D NCHW value gets one Transpose back to NHWC so outputs
  // compare directly with TFLite's.
  void declareOutputs();

  // ---- the operator being converted
  void beginOp(int index, const fb::Operator& op);
  const fb::Operator& op() const { return *op_; }
  const std::string& opName() const { return op_name_; }
  // "<file>: subgraph 0 operator <i> (<OP>): <msg>" as a ModelLoadError.
  [[noreturn]] void fail(const std::string& msg) const;
  // The same as an UnsupportedOpError (a valid file using what npuc does not build).
  [[noreturn]] void unsupported(const std::string& msg) const;
  std::string where() const;

  int numInputs() const;
  int numOutputs() const;
  // Tensor index of input / output `i` (-1: an omitted optional input).
  int inputIndex(int i) const;
  int outputIndex(int i) const;
  bool hasInput(int i) const { return i < numInputs() && inputIndex(i) >= 0; }
  // Checks the operator's input / output counts (max -1: any).
  void expectArity(int min_in, int max_in, int outs) const;

  Shape inputShape(int i) const;   // file's shape (NHWC for 4-D)
  Shape outputShape(int i) const;  // file's shape
  // Input `i` as a constant in the file's layout (dequantized / widened to FP32, integer lists as
  // INT64); failing with `what` when it is not a constant.
  const Tensor& constInput(int i, const std::string& what);
  const Tensor* constInputOrNull(int i);

  // Input `i` as held (NCHW for a 4-D activation) and whether that is NCHW.
  Value* input(int i);
  bool inputIsNchw(int i);
  // Input `i` as NCHW (it must be 4-D).
  Value* inputNchw(int i);
  // Input `i` in the file's layout.
  Value* inputFile(int i);
  // Input `i` ready to broadcast against a 4-D NCHW result: 4-D as NCHW, lower ranks padded to
  // 4-D in NHWC and permuted (a per-channel [C] becomes [1,C,1,1]).
  Value* inputBroadcastNchw(int i);

  // Binds output `i` to `v` (nchw: it holds the NCHW form of a 4-D tensor), naming `v` after the
  // tensor.
  void setOutput(int i, Value* v, bool nchw);
  // Binds output `i` to an existing value (ops that are identities here: QUANTIZE, DEQUANTIZE of
  // an activation) without renaming it.
  void aliasOutput(int i, Value* v, bool nchw);

  // ---- emission helpers (names derive from the operator's first output tensor)
  Node* node(const std::string& op_type, const std::vector<Value*>& inputs, const std::string& suffix = "",
             size_t num_outputs = 1);
  Value* constant(Tensor t, const std::string& suffix);
  Value* int64s(const std::vector<int64_t>& v, const std::string& suffix);
  Value* transpose(Value* x, const std::vector<int64_t>& perm, const std::string& suffix);
  // An activation between NHWC and NCHW (`nhwc`: its file shape). When C is 1, or H and W are both 1,
  // the element order is the same in both layouts and a Reshape does it; otherwise a Transpose.
  Value* toNchw(Value* x, const Shape& nhwc, const std::string& suffix);
  Value* toNhwc(Value* x, const Shape& nhwc, const std::string& suffix);
  // The fused activation of the current op applied to `x` (NONE returns x).
  Value* fusedActivation(Value* x, int8_t act);

  // Quantization ranges of the file's activations, by value name (call before the graph changes).
  std::map<std::string, QuantRange> rangesByName() const;
  // Remembers how the file quantized the weights behind `w` (input `i`, permuted by `perm` into
  // npuc's layout), so the file's scales can be compared with npuc's.
  void recordWeightScales(Value* w, int i, const std::vector<int64_t>& perm);
  std::map<std::string, WeightScales> weightScalesByName() const;

 private:
  struct Slot {
    Value* value = nullptr;
    bool nchw = false;
  };
  Slot& slot(int tensor_index, const std::string& role);
  void recordRange(Value* v, int tensor_index);
  void copyRange(Value* from, Value* to);

  const TfliteFile& f_;
  Graph& g_;
  bool input_is_nchw_;
  std::vector<Slot> slots_;
  std::vector<std::optional<Tensor>> const_cache_;
  std::vector<bool> const_read_;
  std::map<const Value*, QuantRange> ranges_;
  std::map<const Value*, WeightScales> weight_scales_;
  const fb::Operator* op_ = nullptr;
  int op_index_ = -1;
  std::string op_name_;
  std::string prefix_;
};

}  // namespace npuc::tflite
