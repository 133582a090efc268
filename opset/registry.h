// The op registry: for every op npuc supports, its schema (arity), its shape inference and its
// FP32 host kernel. One registration function per op family (opset/ops/<family>.cpp) adds its
// ops; registerAllOps() in registry.cpp calls each of them (one line per family).
//
// Canonical forms. The frontend upgrades older opset forms to the newest one before anything
// else sees the graph, so shape inference and kernels implement only that form:
//   Slice/Pad/Split/Squeeze/Unsqueeze/Reduce*(axes)/Clip(min,max)/TopK(k)/Resize take their
//   parameters as inputs (opset 13+ layout), Upsample becomes Resize, Softmax/LogSoftmax use the
//   opset-13 single-axis semantics.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "ir/graph.h"
#include "opset/op_traits.h"

namespace npuc {

// What shape inference sees of one node. Input types are those of the node's input values.
class InferContext {
 public:
  explicit InferContext(Node& node) : node_(node) {}
  Node& node() const { return node_; }
  const Attributes& attrs() const { return node_.attrs(); }
  size_t numInputs() const { return node_.numInputs(); }
  size_t numOutputs() const { return node_.numOutputs(); }
  bool hasInput(size_t i) const { return node_.hasInput(i); }
  // Throws ShapeError if the input is absent or its shape is unknown.
  const Shape& inputShape(size_t i) const;
  DType inputDType(size_t i) const;
  // The input's tensor if it is a constant, else null.
  const Tensor* constInput(size_t i) const;
  // Like constInput but throws ShapeError ("<what> must be a constant") when it is not.
  const Tensor& requireConstInput(size_t i, const char* what) const;
  void setOutput(size_t i, DType dtype, Shape shape) const {
    node_.output(i)->setType(dtype, std::move(shape));
  }

 private:
  Node& node_;
};

using InferFn = std::function<void(InferContext&)>;

// The view a kernel runs on. `workspace` is scratch memory of Kernel::workspaceBytes(), owned by
// the executor (so one Kernel can serve several threads, each with its own workspace).
struct KernelIO {
  const std::vector<TensorView>& inputs;
  std::vector<TensorView>& outputs;
  void* workspace = nullptr;
};

// A kernel instance prepared for one node with fixed shapes. Construction does all the one-time
// work (attribute parsing, weight packing, oneDNN primitive creation); run() must not allocate
// on the heap and must be safe to call concurrently from several threads with different KernelIO.
class Kernel {
 public:
  virtual ~Kernel() = default;
  virtual void run(const KernelIO& io) const = 0;
  virtual size_t workspaceBytes() const { return 0; }
  // If >= 0, output 0 may share the storage of this input (pure data reinterpretation such as
  // Reshape/Flatten/Squeeze/Unsqueeze/Identity); the executor then skips run() when it did alias.
  virtual int aliasInput() const { return -1; }
};

// What a kernel factory is given: the node (attributes), fully known input/output types, and the
// constant inputs (weights) so they can be packed once.
struct KernelContext {
  const Node& node;
  std::vector<TensorView> input_types;   // data pointers are null except for constant inputs
  std::vector<TensorView> output_types;  // data null
  const Tensor* constInput(size_t i) const;
};

using KernelFactory = std::function<std::unique_ptr<Kernel>(const KernelContext&)>;

struct OpSchema {
  std::string op_type;
  std::string domain;  // "" for ONNX ops, "ai.npuc" for npuc's own ops (Gelu, GLU, RMSNorm, ...)
  int min_inputs = 0;
  int max_inputs = 0;  // -1: variadic
  int min_outputs = 1;
  int max_outputs = 1;
  InferFn infer;
  KernelFactory make_kernel;
  // Element types the kernel handles for input 0 (empty: any). Checked at load so an unsupported
  // dtype is reported then, not at run time.
  std::vector<DType> dtypes;
  // False for ops that must never be constant-folded (none today; kept for random ops).
  bool foldable = true;
  // The first ONNX opset that defines the op in the form npuc holds (1: any). ONNX export writes
  // at least this opset when the graph has the op.
  int since_opset = 1;
  // For an op whose output size depends on the data (NonMaxSuppression, NonZero): the axis of
  // output 0 that shape inference gives its upper bound and the runtimes trim to the actual extent
  // (opset/bounded_output.h), or -1 when the node's inputs make the size exact (constants fold).
  // Null for every op whose output shapes are exact.
  std::function<int(const Node&)> bounded_axis;
  std::string doc;  // one line, used by generated docs
  // Facts the rest of the compiler asks about (opset/op_traits.h).
  OpTraits traits;
};

// npuc's own op domain (ops produced by passes: Gelu, GLU, RMSNorm, ...).
constexpr const char* kNpucDomain = "ai.npuc";

// Builder so a family file reads as a table:
//   reg.add("Relu").inputs(1).infer(inferSameAsInput0).kernel(makeRelu).types({DType::Float32})
//       .traits(OpTrait::ElementwiseUnary).quantClass(QuantClass::Clamp);
class OpRegistry;
class SchemaBuilder {
 public:
  SchemaBuilder(OpRegistry& reg, OpSchema& s) : reg_(reg), s_(s) {}
  SchemaBuilder& inputs(int min, int max);
  SchemaBuilder& inputs(int n) { return inputs(n, n); }
  SchemaBuilder& outputs(int min, int max);
  SchemaBuilder& outputs(int n) { return outputs(n, n); }
  SchemaBuilder& infer(InferFn f);
  SchemaBuilder& kernel(KernelFactory f);
  SchemaBuilder& types(std::vector<DType> t);
  SchemaBuilder& notFoldable();
  SchemaBuilder& doc(std::string d);
  // Adds trait flags (several calls accumulate).
  SchemaBuilder& traits(OpTrait t);
  SchemaBuilder& quantClass(QuantClass c);
  SchemaBuilder& since(int opset);
  // The op never runs on an NPU, for `reason` (a sentence fragment: "its output size depends on
  // the data"): OpTraits::cpu_reason.
  SchemaBuilder& cpuOnly(std::string reason);
  // OpSchema::bounded_axis.
  SchemaBuilder& boundedOutput(std::function<int(const Node&)> axis_of);

 private:
  OpRegistry& reg_;
  OpSchema& s_;
};

class OpRegistry {
 public:
  // The registry with every npuc op, built on first use and immutable afterwards.
  static const OpRegistry& instance();

  // Adds (or reopens) op_type in `domain`: "" for ONNX ops, kNpucDomain for npuc's own.
  SchemaBuilder add(const std::string& op_type, const std::string& domain = "");
  // Finds op_type in `domain` (the ONNX domains "" and "ai.onnx" are the same). Null if unknown.
  const OpSchema* find(const std::string& op_type, const std::string& domain = "") const;
  // A node's op: npuc's own, else a user-defined op of the node's graph (Graph::custom_ops). Every
  // lookup that has the node should use this one, so user-defined ops are found everywhere.
  const OpSchema* find(const Node& node) const;
  // find(node), or UnsupportedOpError naming the node, op and where to find the supported-op list.
  const OpSchema& require(const Node& node) const;
  std::vector<std::string> opTypes() const;  // sorted
  // Every schema, in registration order (family by family, as each family file lists its ops).
  std::vector<const OpSchema*> schemas() const;

 private:
  std::unordered_map<std::string, std::unique_ptr<OpSchema>> ops_;  // key: domain + "::" + op
  std::vector<const OpSchema*> order_;                              // registration order
};

// ---- Registration functions, one per family (opset/ops/*.cpp).
void registerElementwiseOps(OpRegistry& reg);   // unary/binary math, comparisons, Where, Cast, Clip
void registerReductionOps(OpRegistry& reg);     // Reduce*, ArgMax, Softmax, LogSoftmax, TopK
void registerNnOps(OpRegistry& reg);            // Conv, ConvTranspose, Gemm, MatMul, pooling, norms
void registerDataMovementOps(OpRegistry& reg);  // Reshape, Transpose, Concat, Slice, Gather, ...
void registerNpucOps(OpRegistry& reg);          // ai.npuc ops produced by passes (Gelu, ...)
void registerScatterOps(OpRegistry& reg);       // GatherND, ScatterND, ScatterElements, OneHot, ...
void registerDetectOps(OpRegistry& reg);        // NonMaxSuppression, RoiAlign, GridSample, NonZero, ...
void registerAttnOps(OpRegistry& reg);          // Einsum, Trilu, Det, MVN, LRN, DFT/STFT, windows, random
void registerQuantizedOps(OpRegistry& reg);     // QuantizeLinear, DequantizeLinear, QLinearConv, ...
void registerControlFlowOps(OpRegistry& reg);   // If, Loop, Scan
void registerRnnOps(OpRegistry& reg);           // LSTM, GRU, RNN

// ---- Shared shape helpers for inference functions.
// Numpy-style multidirectional broadcast; throws ShapeError naming both shapes.
Shape broadcastShapes(const Shape& a, const Shape& b);
// Normalizes a possibly negative axis against `rank`; throws ShapeError if out of range.
int64_t normalizeAxis(int64_t axis, int64_t rank, const char* what = "axis");
// Output 0 gets input 0's dtype and shape.
void inferSameAsInput0(InferContext& ctx);

}  // namespace npuc
