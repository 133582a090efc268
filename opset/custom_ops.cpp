#include "opset/custom_ops.h"

#include <limits>

namespace npuc {

namespace {

void inferCustom(const CustomOpDef& def, InferContext& ctx) {
  std::vector<CustomOpDef::IoType> ins;
  for (size_t i = 0; i < ctx.numInputs(); ++i) {
    if (ctx.hasInput(i))
      ins.push_back({ctx.inputDType(i), ctx.inputShape(i)});
    else
      ins.push_back({});
  }
  const std::vector<CustomOpDef::IoType> outs = def.infer(ctx.node(), ins);
  if (outs.size() != ctx.numOutputs())
    throw ShapeError("custom op shape_infer gave " + std::to_string(outs.size()) + " output type(s) for " +
                     std::to_string(ctx.numOutputs()) + " output(s)");
  for (size_t i = 0; i < outs.size(); ++i) {
    if (outs[i].dtype == DType::Undefined)
      throw ShapeError("custom op shape_infer gave no dtype for output " + std::to_string(i));
    for (int64_t d : outs[i].shape)
      if (d < 0)
        throw ShapeError("custom op shape_infer gave output " + std::to_string(i) + " the shape " +
                         shapeStr(outs[i].shape) + "; every dim must be known");
    ctx.setOutput(i, outs[i].dtype, outs[i].shape);
  }
}

class CustomKernel : public Kernel {
 public:
  CustomKernel(CustomOpDef::ComputeFn compute, const Node& node) : compute_(std::move(compute)), node_(node) {}
  void run(const KernelIO& io) const override { compute_(node_, io.inputs, io.outputs); }

 private:
  CustomOpDef::ComputeFn compute_;
  const Node& node_;
};

}  // namespace

CustomOpSet::CustomOpSet(std::vector<CustomOpDef> defs) {
  const OpRegistry& builtin = OpRegistry::instance();
  for (CustomOpDef& def : defs) {
    if (def.op_type.empty()) throw ConfigError("a custom op needs a non-empty op_type");
    if (!def.infer || !def.compute)
      throw ConfigError("custom op '" + def.op_type + "' needs both shape inference and compute");
    if (builtin.find(def.op_type) || builtin.find(def.op_type, kNpucDomain))
      throw ConfigError("custom op '" + def.op_type + "' has the name of an op npuc already runs; give it " +
                        "another name (RKNN's examples use a 'cst' prefix, as in 'cstSigmoid')");
    if (schemas_.count(def.op_type))
      throw ConfigError("custom op '" + def.op_type + "' is registered twice");
    auto s = std::make_unique<OpSchema>();
    s->op_type = def.op_type;
    s->domain = "*";  // any: RKNN matches custom ops by name
    s->min_inputs = 0;
    s->max_inputs = -1;
    s->min_outputs = 1;
    s->max_outputs = std::numeric_limits<int>::max();
    s->infer = [infer = def.infer, op = def.op_type](InferContext& ctx) {
      inferCustom(CustomOpDef{op, infer, nullptr}, ctx);
    };
    s->make_kernel = [compute = def.compute](const KernelContext& kctx) -> std::unique_ptr<Kernel> {
      return std::make_unique<CustomKernel>(compute, kctx.node);
    };
    s->foldable = false;
    s->doc = "user-defined op (reg_custom_op), run on the CPU";
    s->traits.flags = OpTrait::UserDefined;
    s->traits.quant_class = QuantClass::Float;
    schemas_.emplace(def.op_type, std::move(s));
  }
}

const OpSchema* CustomOpSet::find(const std::string& op_type) const {
  auto it = schemas_.find(op_type);
  return it == schemas_.end() ? nullptr : it->second.get();
}

std::vector<std::string> CustomOpSet::opTypes() const {
  std::vector<std::string> out;
  for (const auto& [name, s] : schemas_) out.push_back(name);
  return out;
}

}  // namespace npuc
