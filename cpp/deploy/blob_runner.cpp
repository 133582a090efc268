#include "deploy/blob_runner.h"

#include <algorithm>

#include "common/error.h"
#include "compile/compiled_model_io.h"
#include "quant/sim/quantized_executor.h"
#include "runtime/program_runtime.h"
#include "runtime/program_runtime_loader.h"

namespace npuc::deploy {

namespace {

std::vector<IoInfo> infos(const std::vector<Value*>& values) {
  std::vector<IoInfo> out;
  out.reserve(values.size());
  for (const Value* v : values) out.push_back({v->name(), v->dtype(), v->shape()});
  return out;
}

bool isFloat(DType t) {
  return t == DType::Float32 || t == DType::Float16;
}

// The recorded per-channel values of input `index` for `channels` channels (one value repeated,
// or one per channel); empty when none was recorded.
std::vector<double> perChannel(const std::vector<std::vector<double>>& values, size_t index,
                               int64_t channels) {
  if (index >= values.size() || values[index].empty()) return {};
  const std::vector<double>& v = values[index];
  if (v.size() == 1) return std::vector<double>(static_cast<size_t>(channels), v[0]);
  return v;
}

}  // namespace

BlobRunner::BlobRunner(const std::string& path, std::shared_ptr<const CustomOpSet> custom_ops)
    : model_(loadCompiledModel(path, std::nullopt, std::move(custom_ops))) {
  sets_.push_back(prepare(model_, &why_not_));
  for (const CompiledModel& variant : model_.shape_variants) sets_.push_back(prepare(variant, nullptr));
}

BlobRunner::~BlobRunner() = default;

BlobRunner::ShapeSet BlobRunner::prepare(const CompiledModel& m, std::string* why_not) const {
  ShapeSet s;
  s.model = &m;
  s.sim = m.quant_plan ? std::make_shared<const quant::QuantizedExecutor>(*m.graph, *m.quant_plan)
                       : std::make_shared<const quant::QuantizedExecutor>(*m.graph);
  std::string ignored;
  s.program = runtime::programRuntimeFor(m, s.sim, why_not ? why_not : &ignored);
  return s;
}

std::vector<IoInfo> BlobRunner::inputs() const {
  return infos(model_.graph->inputs());
}
std::vector<IoInfo> BlobRunner::outputs() const {
  return infos(model_.graph->outputs());
}
std::vector<std::vector<IoInfo>> BlobRunner::inputSets() const {
  std::vector<std::vector<IoInfo>> out;
  for (const ShapeSet& s : sets_) out.push_back(infos(s.model->graph->inputs()));
  return out;
}
std::string BlobRunner::runtime() const {
  return sets_.front().program ? "program" : "simulator";
}

Tensor BlobRunner::preprocess(size_t index, const Tensor& x) const {
  const std::vector<IoInfo> ins = inputs();
  if (index >= ins.size())
    throw InputError("input " + std::to_string(index) + ": the model has " + std::to_string(ins.size()) +
                     " input(s)");
  const IoInfo& info = ins[index];
  if (!isFloat(info.dtype)) return x;  // ids, masks: taken as given
  Tensor f = x.dtype() == DType::Float32 ? x : x.castTo(DType::Float32);
  // The shapes this input takes: one per shape set, set 0 first (a set's input as is wins over an
  // earlier set's NHWC form only when no set takes the array as is).
  std::vector<Shape> wants;
  for (const std::vector<IoInfo>& set : inputSets()) wants.push_back(set.at(index).shape);
  Shape got = f.shape();
  if (wants.front().size() == 4 && got.size() == 3) got.insert(got.begin(), 1);  // an image without batch
  for (const Shape& want : wants)
    if (got == want) return applyNormalization(index, f.reshaped(got));
  const Shape* match = nullptr;
  for (const Shape& want : wants)
    if (want.size() == 4 && got.size() == 4 && got[0] == want[0] && got[1] == want[2] && got[2] == want[3] &&
        got[3] == want[1]) {
      match = &want;
      break;
    }
  if (!match) {
    std::string takes;
    for (const Shape& want : wants) takes += (takes.empty() ? "" : " or ") + shapeStr(want);
    throw InputError("input '" + info.name + "' expects " + takes + " (or the NHWC form), got " +
                     shapeStr(x.shape()));
  }
  const Shape& want = *match;
  const int64_t n = got[0], h = got[1], w = got[2], c = got[3];
  Tensor nchw = Tensor::uninitialized(DType::Float32, want);
  const float* src = f.data<float>();
  float* dst = nchw.data<float>();
  for (int64_t b = 0; b < n; ++b)
    for (int64_t y = 0; y < h; ++y)
      for (int64_t xx = 0; xx < w; ++xx)
        for (int64_t ch = 0; ch < c; ++ch)
          dst[((b * c + ch) * h + y) * w + xx] = src[((b * h + y) * w + xx) * c + ch];
  return applyNormalization(index, nchw);
}

Tensor BlobRunner::applyNormalization(size_t index, Tensor x) const {
  const int64_t channels = x.rank() >= 2 ? x.dim(1) : 1;
  const std::vector<double> mean = perChannel(model_.options.mean_values, index, channels);
  const std::vector<double> std = perChannel(model_.options.std_values, index, channels);
  if (mean.empty() && std.empty()) return x;
  if ((!mean.empty() && static_cast<int64_t>(mean.size()) != channels) ||
      (!std.empty() && static_cast<int64_t>(std.size()) != channels)) {
    throw InputError("input " + std::to_string(index) + " has " + std::to_string(channels) +
                     " channel(s) but the blob records mean/std for " +
                     std::to_string(std::max(mean.size(), std.size())));
  }
  const int64_t inner = x.numel() / std::max<int64_t>(1, x.dim(0) * channels);
  float* d = x.data<float>();
  for (int64_t i = 0; i < x.numel(); ++i) {
    const size_t ch = static_cast<size_t>((i / inner) % channels);
    // float32 arithmetic, as Toolkit.inference's numpy preprocessing does it
    float v = d[i];
    if (!mean.empty()) v -= static_cast<float>(mean[ch]);
    if (!std.empty()) v /= static_cast<float>(std[ch]);
    d[i] = v;
  }
  return x;
}

std::vector<Tensor> BlobRunner::runRaw(const std::vector<Tensor>& inputs) const {
  const ShapeSet* chosen = &sets_.front();
  if (sets_.size() > 1) {  // config(dynamic_input): the set whose input shapes these are
    chosen = nullptr;
    std::string allowed;
    for (size_t k = 0; k < sets_.size() && !chosen; ++k) {
      const std::vector<Value*>& want = sets_[k].model->graph->inputs();
      bool fits = want.size() == inputs.size();
      for (size_t i = 0; fits && i < want.size(); ++i) fits = inputs[i].shape() == want[i]->shape();
      if (fits) chosen = &sets_[k];
      std::string shapes;
      for (const Value* v : want) shapes += (shapes.empty() ? "" : ", ") + shapeStr(v->shape());
      allowed += (allowed.empty() ? "" : "; ") + ("set " + std::to_string(k) + ": " + shapes);
    }
    if (!chosen) {
      std::string given;
      for (const Tensor& t : inputs) given += (given.empty() ? "" : ", ") + shapeStr(t.shape());
      throw InputError("run: input shape(s) " + given + " match none of the model's input-shape sets (" +
                       allowed + ")");
    }
  }
  return chosen->program ? chosen->program->run(inputs) : chosen->sim->run(inputs);
}

}  // namespace npuc::deploy
