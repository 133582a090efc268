// Shared by the blob tests: a small runnable model, a graph using every feature of the GRAPH
// section, and blob byte surgery (patch a field, then re-seal the checksum).
#pragma once

#include <cstring>
#include <string>
#include <vector>

#include "blob/blob.h"
#include "blob/blob_format.h"
#include "blob/checksum.h"
#include "blob/section_digests.h"
#include "ir/graph.h"

namespace npuc::blobtest {

// x[1,3,8,8] -> Conv(3x3, pad 1) -> Relu -> Add(constant) -> Reshape -> y[1,256]: small enough
// that a blob of it is a few KB, so corruption loops over it stay fast.
inline std::unique_ptr<Graph> smallConvModel() {
  auto g = std::make_unique<Graph>();
  g->name = "small_conv";
  Value* x = g->addInput("x", DType::Float32, {1, 3, 8, 8});
  Tensor w(DType::Float32, {4, 3, 3, 3});
  for (int64_t i = 0; i < w.numel(); ++i) w.data<float>()[i] = 0.01f * static_cast<float>(i % 17) - 0.05f;
  Tensor b = Tensor::fromVector<float>({0.1f, -0.2f, 0.3f, 0.0f});
  Node* conv =
      g->appendNode("Conv", {x, g->addConstant(w, "conv.weight"), g->addConstant(b, "conv.bias")}, 1, "conv");
  conv->attrs().set("kernel_shape", std::vector<int64_t>{3, 3});
  conv->attrs().set("pads", std::vector<int64_t>{1, 1, 1, 1});
  conv->output()->setType(DType::Float32, {1, 4, 8, 8});
  Node* relu = g->appendNode("Relu", {conv->output()}, 1, "relu");
  relu->output()->setType(DType::Float32, {1, 4, 8, 8});
  Tensor shift(DType::Float32, {1, 4, 1, 1});
  for (int64_t i = 0; i < 4; ++i) shift.data<float>()[i] = 0.5f * static_cast<float>(i);
  Node* add = g->appendNode("Add", {relu->output(), g->addConstant(shift, "shift")}, 1, "add");
  add->output()->setType(DType::Float32, {1, 4, 8, 8});
  Node* reshape = g->appendNode(
      "Reshape", {add->output(), g->addConstant(Tensor::fromVector<int64_t>({1, 256}), "shape")}, 1,
      "flatten");
  reshape->output()->setName("y");
  reshape->output()->setType(DType::Float32, {1, 256});
  g->addOutput(reshape->output());
  return g;
}

// Not runnable: exercises every attribute kind, an omitted optional input, an unshaped value,
// unknown dims, a float16 constant, a zero-size constant, metadata and opset imports.
inline std::unique_ptr<Graph> everyFeatureGraph() {
  auto g = std::make_unique<Graph>();
  g->name = "every_feature";
  g->opset_imports = {{"", 17}, {"ai.npuc", 1}};
  g->metadata = {{"producer_name", "test"}, {"doc", "line one\nline two"}};
  Value* a = g->addInput("a", DType::Float32, {-1, 8});
  Value* u = g->addInput("unshaped", DType::Int64, {}, false);
  Tensor half(DType::Float16, {3});
  for (int i = 0; i < 3; ++i)
    static_cast<uint16_t*>(half.raw())[i] = floatToHalf(0.5f * static_cast<float>(i));
  Value* h = g->addConstant(half, "half");
  Value* empty = g->addConstant(Tensor(DType::Int8, {0, 4}), "empty");
  Node* n = g->appendNode("Custom", {a, nullptr, u, h, empty}, 2, "custom");
  n->setDomain("ai.npuc");
  n->attrs().set("i", int64_t{-7});
  n->attrs().set("f", 1.5f);
  n->attrs().set("s", std::string("text with \0 nul", 15));
  n->attrs().set("ints", std::vector<int64_t>{1, -2, 3});
  n->attrs().set("floats", std::vector<float>{0.25f, -1e30f});
  n->attrs().set("strings", std::vector<std::string>{"x", "", "yz"});
  n->attrs().set("t", Tensor::fromVector<int32_t>({5, 6, 7, 8}, {2, 2}));
  n->attrs().set("no_ints", std::vector<int64_t>{});
  n->output(0)->setType(DType::Float32, {-1, 8});
  n->output(1)->setDType(DType::Bool);
  Node* m = g->appendNode("Identity", {n->output(0)}, 1, "identity");
  m->setName("");  // an unnamed node
  m->output()->setType(DType::Float32, {-1, 8});
  g->addOutput(m->output());
  g->addOutput(n->output(1));
  return g;
}

inline blob::BlobWriteOptions options(const std::string& soc = "rk3588") {
  blob::BlobWriteOptions o;
  o.soc = soc;
  o.options = {{"quantized_dtype", "none"}, {"optimization_level", "3"}};
  return o;
}

// Little-endian field access on blob bytes.
inline uint64_t readField(const std::string& b, size_t off, int n) {
  uint64_t v = 0;
  for (int i = 0; i < n; ++i) v |= uint64_t(static_cast<uint8_t>(b[off + i])) << (8 * i);
  return v;
}
inline void writeField(std::string& b, size_t off, int n, uint64_t v) {
  for (int i = 0; i < n; ++i) b[off + i] = static_cast<char>((v >> (8 * i)) & 0xFF);
}

// Recomputes only the header checksum after a deliberate edit: a section edited or spliced this way
// no longer matches the digest SDIG records for it.
inline void resealHeaderOnly(std::string& b) {
  const blob::Digest d = blob::blobChecksum(reinterpret_cast<const uint8_t*>(b.data()), b.size());
  std::memcpy(&b[blob::kOffChecksum], d.data(), d.size());
}

// Recomputes the section digests (SDIG, rewritten in place) and then the checksum after a
// deliberate edit: what a hostile writer produces, so the edit reaches the decoders behind both.
// Sections whose table entry lies outside the file are skipped (the reader refuses those itself).
inline void reseal(std::string& b) {
  const uint64_t count = readField(b, blob::kOffSectionCount, 4);
  const uint64_t table = readField(b, blob::kOffSectionTable, 8);
  std::vector<blob::SectionDigest> digests;
  uint64_t sdig_at = 0, sdig_size = 0;
  for (uint64_t i = 0;
       i < count && table <= b.size() && (i + 1) * blob::kSectionEntrySize <= b.size() - table; ++i) {
    const size_t e = table + i * blob::kSectionEntrySize;
    const uint32_t kind = static_cast<uint32_t>(readField(b, e, 4));
    const uint64_t at = readField(b, e + 8, 8), size = readField(b, e + 16, 8);
    if (kind == blob::kSectionDigests) {
      sdig_at = at;
      sdig_size = size;
      continue;
    }
    const bool inside = at <= b.size() && size <= b.size() - at;
    digests.push_back({kind, inside
                                 ? blob::sectionDigest(reinterpret_cast<const uint8_t*>(b.data()) + at, size)
                                 : blob::Digest{}});
  }
  const std::string sdig = blob::encodeSectionDigests(digests);
  if (sdig_at && sdig.size() == sdig_size && sdig_at <= b.size() && sdig_size <= b.size() - sdig_at)
    b.replace(sdig_at, sdig_size, sdig);
  resealHeaderOnly(b);
}

// File offset of the first section of `kind`, or 0.
inline uint64_t sectionOffset(const std::string& b, uint32_t kind, uint64_t* size = nullptr) {
  const uint64_t count = readField(b, blob::kOffSectionCount, 4);
  const uint64_t table = readField(b, blob::kOffSectionTable, 8);
  for (uint64_t i = 0; i < count; ++i) {
    const size_t e = table + i * blob::kSectionEntrySize;
    if (readField(b, e, 4) == kind) {
      if (size) *size = readField(b, e + 16, 8);
      return readField(b, e + 8, 8);
    }
  }
  return 0;
}

}  // namespace npuc::blobtest
