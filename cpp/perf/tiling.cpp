#include "perf/tiling.h"

#include <fstream>
#include <limits>
#include <set>
#include <sstream>

#include "common/atomic_file.h"
#include "common/error.h"

namespace npuc::perf {

namespace {

constexpr const char* kCacheHeader = "# npuc tuning cache v1";

// One block size per distinct block count: blocks of ceil(total / n) rounded to the alignment.
std::set<int64_t> blockSizes(int64_t total, int64_t align) {
  std::set<int64_t> sizes;
  for (int64_t n = 1; n <= ceilDiv(total, align); ++n) sizes.insert(roundUp(ceilDiv(total, n), align));
  return sizes;
}

}  // namespace

const Tiling* TilingCache::find(const Digest128& key) {
  auto it = entries_.find(key);
  if (it == entries_.end()) {
    ++misses_;
    return nullptr;
  }
  ++hits_;
  return &it->second.tiling;
}

void TilingCache::store(const Digest128& key, const Tiling& tiling, bool fits) {
  entries_[key] = {tiling, fits};
}

bool TilingCache::fits(const Digest128& key) const {
  auto it = entries_.find(key);
  return it == entries_.end() || it->second.fits;
}

void TilingCache::save(const std::string& path) const {
  std::ostringstream out;
  out << kCacheHeader << "\n";
  for (const auto& [key, e] : entries_)
    out << key.hex() << ' ' << e.tiling.oc_block << ' ' << e.tiling.tile_rows << ' ' << e.tiling.spatial_outer
        << ' ' << e.fits << "\n";
  // Replaced whole, as every output is: an interrupted save keeps the previous cache.
  const std::string failure = writeFileAtomically(path, out.str());
  if (!failure.empty()) throw ConfigError("tuning cache '" + path + "': cannot be written: " + failure);
}

bool TilingCache::load(const std::string& path) {
  std::ifstream in(path);
  if (!in) return false;
  std::string line;
  int line_no = 0;
  while (std::getline(in, line)) {
    ++line_no;
    if (line_no == 1) {
      if (line != kCacheHeader)
        throw ConfigError("tuning cache '" + path + "': line 1: expected '" + kCacheHeader + "', got '" +
                          line + "'");
      continue;
    }
    if (line.empty()) continue;
    std::istringstream fields(line);
    std::string hex, rest;
    Entry e;
    int outer = -1, fits = -1;
    Digest128 key;
    fields >> hex >> e.tiling.oc_block >> e.tiling.tile_rows >> outer >> fits;
    if (!fields || (fields >> rest) || !Digest128::fromHex(hex, &key) || e.tiling.oc_block <= 0 ||
        e.tiling.tile_rows <= 0 || outer < 0 || outer > 1 || fits < 0 || fits > 1)
      throw ConfigError("tuning cache '" + path + "': line " + std::to_string(line_no) +
                        ": malformed entry '" + line + "'");
    e.tiling.spatial_outer = outer == 1;
    e.fits = fits == 1;
    entries_[key] = e;
  }
  return true;
}

Digest128 tilingKey(const CostModel& model, const MacOpShape& shape, NpuDType t) {
  const NpuModel& npu = model.soc().npu;
  std::ostringstream s;
  s << shape.signature() << '|' << npuDTypeName(t) << '|' << model.cores() << '|' << npu.onchip_buffer_bytes
    << ',' << model.soc().macsPerCycle(t) << ',' << npu.ddr_bytes_per_cycle << ',' << npu.ddr_efficiency
    << '|' << model.constants().signature() << '|'
    << (model.weightFormat() ? model.weightFormat()->signature() : std::string("-")) << '|';
  for (AlignmentRole r :
       {AlignmentRole::ConvInput, AlignmentRole::ConvOutput, AlignmentRole::Depthwise, AlignmentRole::Other})
    s << model.soc().alignment(t, r) << ',';
  return digest128(s.str());
}

std::vector<Tiling> candidateTilings(const CostModel& model, const MacOpShape& shape, NpuDType t) {
  PaddedMacShape p = model.padded(shape, t);
  std::vector<Tiling> out;
  for (int64_t oc_block : blockSizes(p.out_c_compute, p.oc_align))
    for (int64_t rows : blockSizes(shape.out_h, 1))
      for (bool outer : {false, true}) out.push_back({oc_block, rows, outer});
  return out;
}

TilingDecision chooseTiling(const CostModel& model, const MacOpShape& shape, NpuDType t, TilingCache* cache) {
  Digest128 key = tilingKey(model, shape, t);
  if (cache)
    if (const Tiling* hit = cache->find(key)) return {*hit, cache->fits(key), true};

  TilingDecision best;
  double best_cycles = std::numeric_limits<double>::infinity();
  int64_t best_tiles = 0;
  int64_t smallest_bytes = std::numeric_limits<int64_t>::max();
  Tiling smallest;
  for (const Tiling& c : candidateTilings(model, shape, t)) {
    int64_t bytes = model.tileBufferBytes(shape, c, t);
    if (bytes < smallest_bytes) smallest_bytes = bytes, smallest = c;
    if (bytes > model.soc().npu.onchip_buffer_bytes) continue;
    TaskCost cost = model.macTask(shape, c, t);
    bool better = cost.total() < best_cycles || (cost.total() == best_cycles && cost.tiles < best_tiles);
    if (better) best.tiling = c, best_cycles = cost.total(), best_tiles = cost.tiles;
  }
  if (best_cycles == std::numeric_limits<double>::infinity()) best = {smallest, false, false};
  if (cache) cache->store(key, best.tiling, best.fits_buffer);
  return best;
}

}  // namespace npuc::perf
