#include "runtime/run_memory.h"

#include <fmt/format.h>
#include <sys/sysinfo.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <iterator>
#include <limits>

#include "common/error.h"

namespace npuc {

namespace {

// How many buffers an error names (the largest); the rest are summed up, so the message stays
// one readable line for a graph with thousands of values.
constexpr size_t kBuffersNamed = 3;

std::string sizeText(uint64_t bytes) {
  if (bytes < 1024) return fmt::format("{} bytes", bytes);
  const char* units[] = {"KiB", "MiB", "GiB", "TiB", "PiB"};
  double value = static_cast<double>(bytes) / 1024.0;
  size_t unit = 0;
  while (value >= 1024.0 && unit + 1 < std::size(units)) {
    value /= 1024.0;
    ++unit;
  }
  return fmt::format("{:.2f} {}", value, units[unit]);
}

// "1.00 GiB (1073741824 bytes)"; "64 bytes" when that says it all.
std::string sizeWithBytes(uint64_t bytes) {
  return bytes < 1024 ? sizeText(bytes) : fmt::format("{} ({} bytes)", sizeText(bytes), bytes);
}

uint64_t sumBytes(const std::vector<const RunBuffer*>& buffers) {
  uint64_t sum = 0;
  for (const RunBuffer* b : buffers) sum += b->bytes;
  return sum;
}

// "13.41 GiB (14400000000 bytes): output 'y' float32[...] 13.41 GiB, activation arena 64 bytes"
std::string describe(std::vector<const RunBuffer*> buffers) {
  buffers.erase(
      std::remove_if(buffers.begin(), buffers.end(), [](const RunBuffer* b) { return b->bytes == 0; }),
      buffers.end());
  std::stable_sort(buffers.begin(), buffers.end(),
                   [](const RunBuffer* a, const RunBuffer* b) { return a->bytes > b->bytes; });
  std::string text = sizeWithBytes(sumBytes(buffers)) + ": ";
  const size_t named = std::min(buffers.size(), kBuffersNamed);
  for (size_t i = 0; i < named; ++i) {
    text += fmt::format("{}{} {}", i ? ", " : "", buffers[i]->what, sizeText(buffers[i]->bytes));
  }
  if (buffers.size() > named) {
    const std::vector<const RunBuffer*> rest(buffers.begin() + static_cast<std::ptrdiff_t>(named),
                                             buffers.end());
    text += fmt::format(" and {} more buffer(s) of {} in all", rest.size(), sizeText(sumBytes(rest)));
  }
  return text;
}

// Free RAM by sysinfo(2): one cheap system call, where reading /proc/meminfo costs ~15 us (more
// than a small model's whole run).
std::optional<uint64_t> freeRamBytes() {
  struct sysinfo info {};
  if (sysinfo(&info) != 0) return std::nullopt;
  return static_cast<uint64_t>(info.freeram) * info.mem_unit;
}

}  // namespace

void RunFootprint::add(std::string what, uint64_t bytes, bool pooled) {
  const uint64_t room = std::numeric_limits<uint64_t>::max() - total_;  // saturate: never wrap to "fits"
  total_ += std::min(bytes, room);
  if (pooled) pooled_ += std::min(bytes, room);
  buffers_.push_back({std::move(what), bytes, pooled});
}

void RunFootprint::addTensor(const std::string& role, const std::string& name, DType dtype,
                             const Shape& shape) {
  add(role + " '" + name + "' " + dtypeName(dtype) + shapeStr(shape), tensorBufferBytes(dtype, shape));
}

void RunFootprint::check(const RunMemoryLimits& limits, bool pool_has_idle,
                         std::optional<uint64_t> available) const {
  if (limits.max_run_bytes && total_ > limits.max_run_bytes) {
    std::vector<const RunBuffer*> all;
    for (const RunBuffer& b : buffers_) all.push_back(&b);
    throw ResourceError(fmt::format(
        "a run of this model needs {}; that exceeds the run memory cap of {}, set by max_run_bytes or "
        "NPUC_MAX_RUN_BYTES",
        describe(all), sizeWithBytes(limits.max_run_bytes)));
  }
  const uint64_t fresh = total_ - (pool_has_idle ? pooled_ : 0);
  if (available && fresh > *available) {
    std::vector<const RunBuffer*> allocated;
    for (const RunBuffer& b : buffers_)
      if (!(b.pooled && pool_has_idle)) allocated.push_back(&b);
    throw ResourceError(
        fmt::format("a run of this model allocates {}; that exceeds the {} this machine has available now",
                    describe(allocated), sizeWithBytes(*available)));
  }
}

void RunFootprint::check(const RunMemoryLimits& limits, bool pool_has_idle) const {
  // MemAvailable is about MemFree plus reclaimable cache, less a small kernel reserve: a run that
  // needs under half the free RAM fits, and the slow read is skipped.
  const uint64_t fresh = total_ - (pool_has_idle ? pooled_ : 0);
  const std::optional<uint64_t> free_ram = freeRamBytes();
  if (free_ram && fresh <= *free_ram / 2) {
    check(limits, pool_has_idle, std::nullopt);
    return;
  }
  check(limits, pool_has_idle, availableMemoryBytes());
}

uint64_t tensorBufferBytes(DType dtype, const Shape& shape) {
  const auto numel = static_cast<uint64_t>(shapeNumel(shape));
  const uint64_t size = dtypeSize(dtype);
  if (size && numel > std::numeric_limits<uint64_t>::max() / size) {
    throw ResourceError("shape " + shapeStr(shape) + " holds more bytes than 64 bits can count");
  }
  return numel * size;
}

std::optional<uint64_t> availableMemoryBytes() {
  // MemAvailable counts reclaimable page cache, which free pages (sysconf) do not: a machine
  // that has read a lot of files has little "free" memory but plenty available.
  std::ifstream meminfo("/proc/meminfo");
  std::string key, unit;
  uint64_t kib = 0;
  while (meminfo >> key >> kib) {
    if (key == "MemAvailable:") return kib * 1024;
    std::getline(meminfo, unit);  // the rest of the line ("kB", or nothing)
  }
  const long pages = sysconf(_SC_AVPHYS_PAGES);
  const long page_size = sysconf(_SC_PAGESIZE);
  if (pages > 0 && page_size > 0) return static_cast<uint64_t>(pages) * static_cast<uint64_t>(page_size);
  return std::nullopt;
}

}  // namespace npuc
