// Tiling of MAC ops: enumerate output-channel block x row-band configurations whose tile fits the
// on-chip buffer, pick the cheapest by the cost model, and remember the choice under the op's
// 128-bit digest so a rebuilt model, or a model sharing layer shapes, skips the search.
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include "perf/cost_model.h"
#include "perf/digest.h"
#include "perf/mac_shape.h"

namespace npuc::perf {

struct TilingDecision {
  Tiling tiling;
  bool fits_buffer = true;  // false: even the smallest tile overflows; the smallest is used
  bool from_cache = false;
};

// Tiling decisions by digest, with a text file form:
//   # npuc tuning cache v1
//   <32 hex digest> <oc_block> <tile_rows> <spatial_outer 0|1> <fits 0|1>
class TilingCache {
 public:
  const Tiling* find(const Digest128& key);  // counts a hit or a miss
  void store(const Digest128& key, const Tiling& tiling, bool fits);
  bool fits(const Digest128& key) const;
  size_t size() const { return entries_.size(); }
  int64_t hits() const { return hits_; }
  int64_t misses() const { return misses_; }
  void resetCounters() { hits_ = misses_ = 0; }

  // Writes every entry (sorted by digest, so the file is deterministic). ConfigError naming the
  // path if it cannot be written.
  void save(const std::string& path) const;
  // Adds the entries of a file written by save(). A missing file is not an error (nothing is
  // added; returns false); a malformed one is a ConfigError naming the path and line.
  bool load(const std::string& path);

 private:
  struct Entry {
    Tiling tiling;
    bool fits = true;
  };
  std::map<Digest128, Entry> entries_;
  int64_t hits_ = 0;
  int64_t misses_ = 0;
};

// The cache key of `shape` costed by `model` in `t`: the shape and every profile figure the
// choice depends on.
Digest128 tilingKey(const CostModel& model, const MacOpShape& shape, NpuDType t);

// Every candidate tiling of `shape` (fitting or not), for tests and tools.
std::vector<Tiling> candidateTilings(const CostModel& model, const MacOpShape& shape, NpuDType t);

// The cheapest fitting tiling (ties: fewer tiles, then the spatial-inner loop). Looks `cache` up
// first and stores the result there when given.
TilingDecision chooseTiling(const CostModel& model, const MacOpShape& shape, NpuDType t, TilingCache* cache);

}  // namespace npuc::perf
