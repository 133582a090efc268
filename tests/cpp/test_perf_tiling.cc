// Tiling: the chosen tile fits the on-chip buffer and is the cheapest that does; decisions are
// cached under the op's digest, survive a save/load round trip, and a bad cache file is refused.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "common/error.h"
#include "perf/perf_eval.h"
#include "perf/tiling.h"
#include "perf_test_util.h"

namespace npuc::perf {
namespace {

using testing::PerfGraph;

MacOpShape bigConv() {
  // 3x3, 256 -> 256 channels at 56x56: 590 KB of int8 weights, more than RK3588's 384 KiB buffer.
  MacOpShape s;
  s.op_type = "Conv";
  s.in_c = s.out_c = 256;
  s.in_h = s.in_w = s.out_h = s.out_w = 56;
  s.kernel_h = s.kernel_w = 3;
  return s;
}

TEST(PerfTiling, ChoiceFitsTheBufferAndIsTheCheapest) {
  const SocProfile& soc = socProfile("rk3588");
  CostModel model(soc, NpuDType::Int8, 1);
  MacOpShape s = bigConv();
  EXPECT_FALSE(model.fitsBuffer(s, {256, 56, false}, NpuDType::Int8));
  TilingDecision d = chooseTiling(model, s, NpuDType::Int8, nullptr);
  ASSERT_TRUE(d.fits_buffer);
  EXPECT_LE(model.tileBufferBytes(s, d.tiling, NpuDType::Int8), soc.npu.onchip_buffer_bytes);
  EXPECT_TRUE(d.tiling.oc_block < 256 || d.tiling.tile_rows < 56);
  double chosen = model.macTask(s, d.tiling, NpuDType::Int8).total();
  size_t fitting = 0;
  for (const Tiling& t : candidateTilings(model, s, NpuDType::Int8)) {
    if (!model.fitsBuffer(s, t, NpuDType::Int8)) continue;
    ++fitting;
    EXPECT_LE(chosen, model.macTask(s, t, NpuDType::Int8).total());
  }
  EXPECT_GT(fitting, 10u);
}

TEST(PerfTiling, BufferSizeChangesTheDecision) {
  SocProfile small = socProfile("rk3588");
  small.npu.onchip_buffer_bytes = 128 * 1024;
  CostModel big_model(socProfile("rk3588"), NpuDType::Int8, 1), small_model(small, NpuDType::Int8, 1);
  MacOpShape s = bigConv();
  TilingDecision a = chooseTiling(big_model, s, NpuDType::Int8, nullptr);
  TilingDecision b = chooseTiling(small_model, s, NpuDType::Int8, nullptr);
  ASSERT_TRUE(b.fits_buffer);
  EXPECT_LE(small_model.tileBufferBytes(s, b.tiling, NpuDType::Int8), 128 * 1024);
  // Smaller tiles re-fetch more: the small-buffer SoC moves at least as many bytes.
  EXPECT_GE(small_model.macTask(s, b.tiling, NpuDType::Int8).ddr_bytes,
            big_model.macTask(s, a.tiling, NpuDType::Int8).ddr_bytes);
  EXPECT_FALSE(tilingKey(big_model, s, NpuDType::Int8) == tilingKey(small_model, s, NpuDType::Int8));
}

TEST(PerfTiling, NothingFitsIsReported) {
  SocProfile tiny = socProfile("rk3588");
  tiny.npu.onchip_buffer_bytes = 16 * 1024;  // below one 32-channel block of 3x3x256 weights
  CostModel model(tiny, NpuDType::Int8, 1);
  TilingDecision d = chooseTiling(model, bigConv(), NpuDType::Int8, nullptr);
  EXPECT_FALSE(d.fits_buffer);
  EXPECT_EQ(d.tiling.oc_block, 32);
  EXPECT_EQ(d.tiling.tile_rows, 1);
}

TEST(PerfTiling, RefetchFollowsTheLoopOrder) {
  CostModel model(socProfile("rk3588"), NpuDType::Int8, 1);
  MacOpShape s = bigConv();
  // 4 channel blocks x 8 bands: channel-outer reads inputs 4x, band-outer reads weights 8x.
  TaskCost oc_outer = model.macTask(s, {64, 7, false}, NpuDType::Int8);
  TaskCost sp_outer = model.macTask(s, {64, 7, true}, NpuDType::Int8);
  double weights = 256.0 * 9 * 256, outputs = 56.0 * 56 * 256;
  // Band rows with halo: 8 bands of 7 output rows read min(56, 6 + 3) = 9 rows each = 72 rows.
  double inputs = 72.0 * 56 * 256;
  EXPECT_DOUBLE_EQ(oc_outer.ddr_bytes, 4 * inputs + weights + outputs);
  EXPECT_DOUBLE_EQ(sp_outer.ddr_bytes, inputs + 8 * weights + outputs);
  EXPECT_EQ(oc_outer.tiles, 32);
}

TEST(PerfTiling, RepeatedShapeHitsTheCache) {
  PerfGraph p;
  Value* x = p.input("x", {1, 32, 28, 28});
  Node* a = p.conv("a", x, 32, 3);
  Node* b = p.conv("b", a->output(), 32, 3);  // same shape as a
  Node* c = p.conv("c", b->output(), 64, 3);  // a new shape
  p.g.addOutput(c->output());
  TilingCache cache;
  PerfOptions one_core;  // on more cores each split part is tiled too (more shapes in the cache)
  one_core.single_core_mode = true;
  PerfReport first = evaluatePerf(p.g, socProfile("rk3588"), one_core, &cache);
  EXPECT_EQ(first.tiling_cache_misses, 2);
  EXPECT_EQ(first.tiling_cache_hits, 1);
  EXPECT_EQ(cache.size(), 2u);
  PerfReport again = evaluatePerf(p.g, socProfile("rk3588"), one_core, &cache);
  EXPECT_EQ(again.tiling_cache_hits, 3);
  EXPECT_EQ(again.tiling_cache_misses, 0);
  EXPECT_DOUBLE_EQ(again.summary.total_time_us, first.summary.total_time_us);

  // Save / load: a fresh process (a fresh cache) skips every search.
  std::string path = ::testing::TempDir() + "npuc_perf_tiling_cache.txt";
  cache.save(path);
  TilingCache loaded;
  ASSERT_TRUE(loaded.load(path));
  EXPECT_EQ(loaded.size(), 2u);
  PerfReport reloaded = evaluatePerf(p.g, socProfile("rk3588"), one_core, &loaded);
  EXPECT_EQ(reloaded.tiling_cache_hits, 3);
  EXPECT_DOUBLE_EQ(reloaded.summary.total_time_us, first.summary.total_time_us);
  std::remove(path.c_str());
}

TEST(PerfTiling, CacheFileErrors) {
  TilingCache cache;
  EXPECT_FALSE(cache.load(::testing::TempDir() + "npuc_no_such_cache.txt"));
  std::string path = ::testing::TempDir() + "npuc_bad_cache.txt";
  {
    std::ofstream out(path);
    out << "# npuc tuning cache v1\n0123456789abcdef0123456789abcdef 64 x 0 1\n";
  }
  try {
    cache.load(path);
    FAIL() << "a malformed cache loaded";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("line 2"), std::string::npos) << e.what();
  }
  std::remove(path.c_str());
}

// A save replaces the file whole (written next to it, then renamed): a failed save keeps the
// previous cache and leaves no temporary behind; a saved cache is a new file, so a hard link to the
// old one keeps the old bytes.
TEST(PerfTiling, CacheSaveIsAtomic) {
  namespace fs = std::filesystem;
  const fs::path dir = fs::path(::testing::TempDir()) / "npuc_cache_atomic";
  fs::remove_all(dir);
  fs::create_directories(dir);
  const fs::path path = dir / "cache.txt";
  TilingCache cache;
  Tiling t;
  t.oc_block = 32;
  t.tile_rows = 4;
  cache.store(digest128("a"), t, true);
  cache.save(path.string());
  fs::create_hard_link(path, dir / "link.txt");
  cache.store(digest128("b"), t, false);
  cache.save(path.string());
  TilingCache old_copy, new_copy;
  ASSERT_TRUE(old_copy.load((dir / "link.txt").string()));
  ASSERT_TRUE(new_copy.load(path.string()));
  EXPECT_EQ(old_copy.size(), 1u);
  EXPECT_EQ(new_copy.size(), 2u);

  // A folder where the cache should go: refused, the folder untouched, nothing else written.
  fs::create_directory(dir / "a_folder");
  EXPECT_THROW(cache.save((dir / "a_folder").string()), ConfigError);
  EXPECT_TRUE(fs::is_directory(dir / "a_folder"));
  std::vector<std::string> names;
  for (const auto& entry : fs::directory_iterator(dir)) names.push_back(entry.path().filename().string());
  std::sort(names.begin(), names.end());
  EXPECT_EQ(names, (std::vector<std::string>{"a_folder", "cache.txt", "link.txt"}));
  fs::remove_all(dir);
}

TEST(PerfTiling, DigestIsStableAndHexRoundTrips) {
  Digest128 a = digest128("Conv|1,64"), b = digest128("Conv|1,65");
  EXPECT_FALSE(a == b);
  Digest128 parsed;
  ASSERT_TRUE(Digest128::fromHex(a.hex(), &parsed));
  EXPECT_TRUE(parsed == a);
  // FNV-1a 128 of the empty string is the offset basis.
  EXPECT_EQ(digest128("").hex(), "6c62272e07bb014262b821756295c58d");
  EXPECT_FALSE(Digest128::fromHex("xyz", &parsed));
}

TEST(PerfTiling, BatchReadsWeightsOncePerTaskWhenChannelBlocksAreOuter) {
  // 3x3, 512 -> 512 at 7x7 (ResNet stage 4): 2.3 MB of int8 weights against 25 KB of input.
  CostModel model(socProfile("rk3588"), NpuDType::Int8, 1);
  MacOpShape one;
  one.op_type = "Conv";
  one.in_c = one.out_c = 512;
  one.in_h = one.in_w = one.out_h = one.out_w = 7;
  one.kernel_h = one.kernel_w = 3;
  MacOpShape eight = one;
  eight.batch = 8;
  // Channel blocks outer: a weight block stays on chip while the task walks all 8 items.
  const Tiling oc_outer{64, 7, false}, spatial_outer{64, 7, true};
  const double weights = 8 * model.macTask(one, oc_outer, NpuDType::Int8).ddr_bytes -
                         model.macTask(eight, oc_outer, NpuDType::Int8).ddr_bytes;
  EXPECT_DOUBLE_EQ(weights, 7 * 512 * 9 * 512.0);  // 7 of the 8 weight reads are saved (no bias)
  // Spatial outer: every item re-reads every weight block, so all traffic scales with N.
  EXPECT_DOUBLE_EQ(model.macTask(eight, spatial_outer, NpuDType::Int8).ddr_bytes,
                   8 * model.macTask(one, spatial_outer, NpuDType::Int8).ddr_bytes);
  // The search sees the batch: per image, the chosen batch-8 task is cheaper than the batch-1 one.
  const TilingDecision d1 = chooseTiling(model, one, NpuDType::Int8, nullptr);
  const TilingDecision d8 = chooseTiling(model, eight, NpuDType::Int8, nullptr);
  // At batch 1 re-reading this small input beats re-reading the weights; at batch 8 the weights
  // stay and the task turns compute-bound.
  EXPECT_TRUE(d1.tiling.spatial_outer);
  EXPECT_FALSE(d8.tiling.spatial_outer);
  EXPECT_LT(model.macTask(eight, d8.tiling, NpuDType::Int8).total() / 8,
            0.7 * model.macTask(one, d1.tiling, NpuDType::Int8).total());
}

}  // namespace
}  // namespace npuc::perf
