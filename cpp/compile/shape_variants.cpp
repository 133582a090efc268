#include "compile/shape_variants.h"

#include <fmt/format.h>

#include <map>
#include <set>

#include "blob/blob_format.h"
#include "common/error.h"
#include "compile/compiled_model_io.h"
#include "compile/shape_variants_codec.h"

namespace npuc {

namespace {

std::vector<Shape> inputShapes(const Graph& g) {
  std::vector<Shape> out;
  for (const Value* v : g.inputs()) out.push_back(v->shape());
  return out;
}

std::string shapesStr(const std::vector<Shape>& shapes) {
  std::string s = "[";
  for (size_t i = 0; i < shapes.size(); ++i) s += (i ? ", " : "") + shapeStr(shapes[i]);
  return s + "]";
}

std::vector<std::string> names(const std::vector<Value*>& values) {
  std::vector<std::string> out;
  for (const Value* v : values) out.push_back(v->name());
  return out;
}

// Why `variant` cannot be a shape set of `m` ("" when it can).
std::string mismatch(const CompiledModel& m, const CompiledModel& variant) {
  if (variant.soc != m.soc) return "it was compiled for " + variant.soc->name + ", not " + m.soc->name;
  if (!(variant.options == m.options)) return "it was compiled with other build options";
  if (variant.quant_plan.has_value() != m.quant_plan.has_value()) return "one is INT8, the other FP16";
  if (names(variant.graph->inputs()) != names(m.graph->inputs())) return "its inputs differ from set 0's";
  if (names(variant.graph->outputs()) != names(m.graph->outputs())) return "its outputs differ from set 0's";
  if (!variant.shape_variants.empty()) return "it has shape variants of its own";
  return "";
}

// Set 0's section payloads a variant may reference: all but SDIG (it covers SHPV), SHPV, and META
// (small, and not kept by the reader).
std::map<uint32_t, std::string> basePayloads(const CompiledModel& m, const blob::BlobWriteOptions& opts) {
  std::map<uint32_t, std::string> base;
  for (blob::ExtraSection& s : blob::writtenSections(blob::writeBlobBytes(*m.graph, opts)))
    if (s.kind != blob::kSectionDigests && s.kind != blob::kSectionShapeVariants &&
        s.kind != blob::kSectionMeta)
      base[s.kind] = s.bytes.str();
  return base;
}

struct Encoded {
  std::map<uint32_t, std::string> base;
  std::vector<std::string> variant_blobs;
  ShapeVariantsEncoding enc;
};

Encoded encode(const CompiledModel& m, const blob::BlobWriteOptions& opts) {
  Encoded e;
  std::vector<std::vector<Shape>> shapes;
  std::set<std::vector<Shape>> seen{inputShapes(*m.graph)};
  for (size_t i = 0; i < m.shape_variants.size(); ++i) {
    const CompiledModel& v = m.shape_variants[i];
    const std::string why = mismatch(m, v);
    if (!why.empty())
      throw ConfigError(
          fmt::format("cannot write blob: shape set {} {} is not set 0's model at other shapes: {}", i + 1,
                      shapesStr(inputShapes(*v.graph)), why));
    if (!seen.insert(inputShapes(*v.graph)).second)
      throw ConfigError(fmt::format("cannot write blob: shape set {} {} repeats an earlier set", i + 1,
                                    shapesStr(inputShapes(*v.graph))));
    shapes.push_back(inputShapes(*v.graph));
    e.variant_blobs.push_back(serializeCompiledModel(v));
  }
  e.base = basePayloads(m, opts);
  e.enc = encodeShapeVariants(e.base, shapes, e.variant_blobs);
  return e;
}

}  // namespace

void addShapeVariantsSection(const CompiledModel& m, blob::BlobWriteOptions& opts) {
  if (m.shape_variants.empty()) return;
  opts.extra_sections.push_back({blob::kSectionShapeVariants, true, encode(m, opts).enc.bytes});
}

std::vector<CompiledModel> loadShapeVariants(const blob::LoadedBlob& b, const CompiledModel& m,
                                             const std::string& origin,
                                             std::shared_ptr<const CustomOpSet> custom_ops) {
  const blob::ExtraSection* shpv = nullptr;
  std::map<uint32_t, std::string_view> base;
  for (const auto& [kind, payload] : b.base_payloads) base[kind] = payload.view();
  for (const blob::ExtraSection& s : b.extra_sections) {
    if (s.kind == blob::kSectionShapeVariants)
      shpv = &s;
    else
      base[s.kind] = s.bytes.view();
  }
  if (!shpv) return {};
  std::vector<ShapeVariantRecord> records;
  try {
    records = decodeShapeVariants(shpv->bytes, base);
  } catch (const BlobError& e) {
    throw BlobError("blob '" + origin + "': " + e.what());
  }
  std::vector<CompiledModel> out;
  std::set<std::vector<Shape>> seen{inputShapes(*m.graph)};
  for (size_t i = 0; i < records.size(); ++i) {
    const std::string which = fmt::format("blob '{}': SHPV section, shape set {} {}", origin, i + 1,
                                          shapesStr(records[i].input_shapes));
    CompiledModel v;
    try {
      v = readCompiledModel(records[i].blob, m.soc->name, fmt::format("{} (shape set {})", origin, i + 1),
                            custom_ops);
    } catch (const BlobError& e) {
      throw BlobError(which + ": " + e.what());
    }
    const std::string why = mismatch(m, v);
    if (!why.empty()) throw BlobError(which + ": not set 0's model at other shapes: " + why);
    if (inputShapes(*v.graph) != records[i].input_shapes)
      throw BlobError(which + ": its graph's inputs are " + shapesStr(inputShapes(*v.graph)));
    if (!seen.insert(records[i].input_shapes).second) throw BlobError(which + ": repeats an earlier set");
    out.push_back(std::move(v));
  }
  return out;
}

ShapeVariantReuse shapeVariantReuse(const CompiledModel& m) {
  ShapeVariantReuse r;
  r.sets = 1 + static_cast<int64_t>(m.shape_variants.size());
  // Set 0's blob sections as they are written (SHPV left out: it is what is measured).
  std::map<uint32_t, std::string> base;
  CompiledModel alone = m;
  alone.shape_variants.clear();
  for (blob::ExtraSection& s : blob::writtenSections(serializeCompiledModel(alone)))
    if (s.kind != blob::kSectionDigests && s.kind != blob::kSectionMeta) base[s.kind] = s.bytes.str();
  auto size_of = [&](uint32_t kind) -> uint64_t { return base.count(kind) ? base.at(kind).size() : 0; };
  r.packed_weight_bytes_stored = r.packed_weight_bytes_per_program = size_of(blob::kSectionNpuWeights);
  r.weight_bytes_stored = r.weight_bytes_per_program = size_of(blob::kSectionWeights);
  r.programs_sharing_packed_weights = r.packed_weight_bytes_stored > 0 ? 1 : 0;
  std::vector<std::set<std::array<uint8_t, 16>>> digests;
  auto add_pipelines = [&](const CompiledModel& c) {
    std::set<std::array<uint8_t, 16>>& d = digests.emplace_back();
    if (c.program)
      for (const lower::Pipeline& p : c.program->pipelines) d.insert(p.digest);
  };
  add_pipelines(m);
  if (!m.shape_variants.empty()) {
    std::vector<std::vector<Shape>> shapes;
    std::vector<std::string> blobs;
    for (const CompiledModel& v : m.shape_variants) {
      shapes.push_back(inputShapes(*v.graph));
      blobs.push_back(serializeCompiledModel(v));
      add_pipelines(v);
    }
    const ShapeVariantsEncoding enc = encodeShapeVariants(base, shapes, blobs);
    r.shpv_bytes = enc.bytes.size();
    for (const std::vector<VariantSectionStats>& sections : enc.sections) {
      for (const VariantSectionStats& s : sections) {
        r.variant_payload_bytes += s.bytes;
        r.variant_referenced_bytes += s.referenced;
        if (s.kind == blob::kSectionNpuWeights) {
          r.packed_weight_bytes_per_program += s.bytes;
          r.packed_weight_bytes_stored += s.bytes - s.referenced;
          if (s.bytes > 0 && s.referenced == s.bytes) ++r.programs_sharing_packed_weights;
        }
        if (s.kind == blob::kSectionWeights) {
          r.weight_bytes_per_program += s.bytes;
          r.weight_bytes_stored += s.bytes - s.referenced;
        }
      }
    }
  }
  for (size_t i = 0; i < digests.size(); ++i)
    for (const auto& d : digests[i]) {
      ++r.pipelines;
      for (size_t j = 0; j < digests.size(); ++j)
        if (j != i && digests[j].count(d)) {
          ++r.pipelines_shared;
          break;
        }
    }
  return r;
}

}  // namespace npuc
