// TfIdfVectorizer(X): counts, per row of an int32/int64 token tensor, the n-grams of a fixed pool
// (attributes) and writes them at the pool entries' output coordinates: a bag-of-n-grams feature
// vector, the front end of classic text classifiers. Only the integer pool is supported: npuc has
// no string tensors.
//
// Semantics (ONNX TfIdfVectorizer): for each n-gram length n in [min_gram_length, max_gram_length]
// and each skip s in [0, max_skip_count], the n-gram starting at position i takes the tokens
// i, i + (s+1), ..., i + (n-1)(s+1). A 1-gram is the same token whatever the skip, so it is counted
// once (at s = 0), not once per skip. Mode TF writes counts, IDF min(count, 1) * weight, TFIDF
// count * weight. N-grams not in the pool are ignored.
//
// The pool is held as a trie (token -> child), so one walk from a start position finds every
// n-gram length at once, and run() needs no allocation: counts go to the workspace.
#include <algorithm>
#include <string>
#include <unordered_map>
#include <vector>

#include "common/error.h"
#include "opset/ops/ew_reduction.h"

namespace npuc {
namespace ew {
namespace {

enum class TfIdfMode { Tf, Idf, TfIdf };

TfIdfMode tfIdfMode(const Node& node) {
  const std::string mode = node.attrs().s("mode");
  if (mode == "TF") return TfIdfMode::Tf;
  if (mode == "IDF") return TfIdfMode::Idf;
  if (mode == "TFIDF") return TfIdfMode::TfIdf;
  throw GraphError("mode '" + mode + "' is not TF, IDF or TFIDF");
}

// Output width: one past the largest output coordinate.
int64_t tfIdfWidth(const Node& node) {
  const std::vector<int64_t>& idx = node.attrs().ints("ngram_indexes");
  if (idx.empty()) throw GraphError("ngram_indexes is empty");
  return *std::max_element(idx.begin(), idx.end()) + 1;
}

void inferTfIdf(InferContext& ctx) {
  const Node& node = ctx.node();
  if (node.attrs().has("pool_strings"))
    throw UnsupportedOpError("pool_strings needs string tensors, which npuc does not have");
  const Shape& in = ctx.inputShape(0);
  if (in.size() != 1 && in.size() != 2)
    throw ShapeError("TfIdfVectorizer takes a 1-D or 2-D input, got " + shapeStr(in));
  const int64_t width = tfIdfWidth(node);
  ctx.setOutput(0, DType::Float32, in.size() == 1 ? Shape{width} : Shape{in[0], width});
}

class TfIdfKernel : public Kernel {
 public:
  explicit TfIdfKernel(const KernelContext& ctx)
      : dtype_(ctx.input_types.at(0).dtype), mode_(tfIdfMode(ctx.node)) {
    const Node& node = ctx.node;
    const Attributes& a = node.attrs();
    // Errors need not name the node: the caller prefixes it (node name and op).
    min_n_ = a.i("min_gram_length");
    max_n_ = a.i("max_gram_length");
    max_skip_ = a.i("max_skip_count");
    if (min_n_ < 1 || max_n_ < min_n_ || max_skip_ < 0)
      throw GraphError("needs 1 <= min_gram_length <= max_gram_length and max_skip_count >= 0, got " +
                       std::to_string(min_n_) + ", " + std::to_string(max_n_) + ", " +
                       std::to_string(max_skip_));
    const std::vector<int64_t>& pool = a.ints("pool_int64s");
    const std::vector<int64_t>& starts = a.ints("ngram_counts");
    out_index_ = a.ints("ngram_indexes");
    weights_ = a.floats("weights", std::vector<float>(out_index_.size(), 1.0f));
    if (weights_.size() != out_index_.size())
      throw GraphError("weights has " + std::to_string(weights_.size()) + " entries, ngram_indexes " +
                       std::to_string(out_index_.size()));
    buildTrie(pool, starts);
    const Shape& in = ctx.input_types[0].shape;
    rows_ = in.size() == 1 ? 1 : in[0];
    cols_ = in.back();
    width_ = tfIdfWidth(node);
  }

  size_t workspaceBytes() const override { return out_index_.size() * sizeof(int64_t); }

  void run(const KernelIO& io) const override {
    auto* counts = static_cast<int64_t*>(io.workspace);
    float* y = io.outputs[0].as<float>();
    for (int64_t r = 0; r < rows_; ++r) {
      std::fill(counts, counts + out_index_.size(), 0);
      if (dtype_ == DType::Int32) {
        countRow(io.inputs[0].as<const int32_t>() + r * cols_, counts);
      } else {
        countRow(io.inputs[0].as<const int64_t>() + r * cols_, counts);
      }
      float* out = y + r * width_;
      std::fill(out, out + width_, 0.0f);
      for (size_t e = 0; e < out_index_.size(); ++e) {
        const auto c = static_cast<float>(counts[e]);
        const float v = mode_ == TfIdfMode::Tf    ? c
                        : mode_ == TfIdfMode::Idf ? std::min(c, 1.0f) * weights_[e]
                                                  : c * weights_[e];
        out[out_index_[e]] += v;
      }
    }
  }

 private:
  struct TrieNode {
    std::unordered_map<int64_t, int32_t> next;  // token -> child node
    int64_t entry = -1;                         // pool entry ending here, or -1
    int64_t length = 0;                         // n of the n-gram ending here
  };

  // pool holds the 1-grams, then the 2-grams, ...; starts[k] is where the (k+1)-grams begin.
  void buildTrie(const std::vector<int64_t>& pool, const std::vector<int64_t>& starts) {
    trie_.emplace_back();
    int64_t entry = 0;
    for (size_t k = 0; k < starts.size(); ++k) {
      const int64_t n = static_cast<int64_t>(k) + 1;
      const int64_t begin = starts[k];
      const int64_t end = k + 1 < starts.size() ? starts[k + 1] : static_cast<int64_t>(pool.size());
      if (begin < 0 || end < begin || end > static_cast<int64_t>(pool.size()) || (end - begin) % n != 0)
        throw GraphError("ngram_counts " + std::to_string(k) + " gives a " + std::to_string(n) +
                         "-gram range [" + std::to_string(begin) + ", " + std::to_string(end) +
                         ") that does not split pool_int64s (" + std::to_string(pool.size()) +
                         " values) into " + std::to_string(n) + "-grams");
      for (int64_t g = begin; g < end; g += n, ++entry) {
        if (entry >= static_cast<int64_t>(out_index_.size()))
          throw GraphError("the pool has more n-grams than ngram_indexes has entries (" +
                           std::to_string(out_index_.size()) + ")");
        if (out_index_[entry] < 0) throw GraphError("ngram_indexes holds a negative index");
        int32_t at = 0;
        for (int64_t t = 0; t < n; ++t) {
          auto [it, added] = trie_[at].next.emplace(pool[g + t], static_cast<int32_t>(trie_.size()));
          if (added) trie_.emplace_back();
          at = it->second;
        }
        if (trie_[at].entry >= 0) throw GraphError("an n-gram is listed twice in pool_int64s");
        trie_[at].entry = entry;
        trie_[at].length = n;
      }
    }
    if (entry != static_cast<int64_t>(out_index_.size()))
      throw GraphError("the pool has " + std::to_string(entry) + " n-grams but ngram_indexes has " +
                       std::to_string(out_index_.size()) + " entries");
  }

  template <typename T>
  void countRow(const T* x, int64_t* counts) const {
    for (int64_t skip = 0; skip <= max_skip_; ++skip) {
      const int64_t step = skip + 1;
      for (int64_t i = 0; i < cols_; ++i) {
        int32_t at = 0;
        for (int64_t n = 1; n <= max_n_ && i + (n - 1) * step < cols_; ++n) {
          auto it = trie_[at].next.find(static_cast<int64_t>(x[i + (n - 1) * step]));
          if (it == trie_[at].next.end()) break;
          at = it->second;
          const TrieNode& t = trie_[at];
          // 1-grams do not depend on the skip: counted in the skip-0 pass only.
          if (t.entry >= 0 && n >= min_n_ && (n > 1 || skip == 0)) ++counts[t.entry];
        }
      }
    }
  }

  DType dtype_;
  TfIdfMode mode_;
  int64_t min_n_ = 1, max_n_ = 1, max_skip_ = 0;
  std::vector<int64_t> out_index_;
  std::vector<float> weights_;
  std::vector<TrieNode> trie_;
  int64_t rows_ = 1, cols_ = 0, width_ = 0;
};

}  // namespace

void registerTfIdfOp(OpRegistry& reg) {
  reg.add("TfIdfVectorizer")
      .quantClass(QuantClass::Float)
      .inputs(1)
      .outputs(1)
      .infer(inferTfIdf)
      .kernel([](const KernelContext& c) { return std::make_unique<TfIdfKernel>(c); })
      .types({DType::Int32, DType::Int64})
      .cpuOnly("looks n-grams of integer tokens up in a hash trie of the pool; no NPU unit does lookups")
      .doc(
          "bag-of-n-grams counts (TF), presence times weight (IDF) or counts times weight (TFIDF) of an "
          "integer n-gram pool, n in [min_gram_length, max_gram_length], skips up to max_skip_count");
}

}  // namespace ew
}  // namespace npuc
