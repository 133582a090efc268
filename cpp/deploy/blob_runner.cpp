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
  sim_ = model_.quant_plan
             ? std::make_shared<const quant::QuantizedExecutor>(*model_.graph, *model_.quant_plan)
             : std::make_shared<const quant::QuantizedExecutor>(*model_.graph);
  program_ = runtime::programRuntimeFor(model_, sim_, &why_not_);
}

BlobRunner::~BlobRunner() = default;

std::vector<IoInfo> BlobRunner::inputs() const {
  return infos(model_.graph->inputs());
}
std::vector<IoInfo> BlobRunner::outputs() const {
  return infos(model_.graph->outputs());
}
std::string BlobRunner::runtime() const {
  return program_ ? "program" : "simulator";
}

Tensor BlobRunner::preprocess(size_t index, const Tensor& x) const {
  const std::vector<IoInfo> ins = inputs();
  if (index >= ins.size())
    throw InputError("input " + std::to_string(index) + ": the model has " + std::to_string(ins.size()) +
                     " input(s)");
  const IoInfo& info = ins[index];
  if (!isFloat(info.dtype)) return x;  // ids, masks: taken as given
  Tensor f = x.dtype() == DType::Float32 ? x : x.castTo(DType::Float32);
  const Shape& want = info.shape;
  Shape got = f.shape();
  if (want.size() == 4 && got.size() == 3) got.insert(got.begin(), 1);  // an image without batch
  if (got == want) return applyNormalization(index, f.reshaped(got));
  const bool nhwc = want.size() == 4 && got.size() == 4 && got[0] == want[0] && got[1] == want[2] &&
                    got[2] == want[3] && got[3] == want[1];
  if (!nhwc) {
    throw InputError("input '" + info.name + "' expects " + shapeStr(want) + " (or its NHWC form), got " +
                     shapeStr(x.shape()));
  }
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
  return program_ ? program_->run(inputs) : sim_->run(inputs);
}

}  // namespace npuc::deploy
