// Runs fn(i) for i in [0, count) on up to `threads` threads (the caller's included), each taking
// the next index from a shared counter. Used where every index writes only its own result (one
// histogram, one clip range), so the result does not depend on the thread count or scheduling.
// The first exception thrown by any fn(i) is rethrown on the caller's thread after all joined.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <exception>
#include <mutex>
#include <thread>
#include <vector>

namespace npuc::quant {

// The thread count calibration uses by default: the machine's cores (at least 1).
inline int defaultCalibrationThreads() {
  return static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
}

template <typename Fn>
void parallelFor(size_t count, int threads, const Fn& fn) {
  const size_t workers = std::min(count, static_cast<size_t>(std::max(1, threads)));
  std::atomic<size_t> next{0};
  std::exception_ptr error;
  std::mutex error_mutex;
  const auto work = [&] {
    for (size_t i = next++; i < count; i = next++) {
      try {
        fn(i);
      } catch (...) {
        std::lock_guard<std::mutex> lock(error_mutex);
        if (!error) error = std::current_exception();
        next = count;  // stop handing out work
      }
    }
  };
  std::vector<std::thread> pool;
  for (size_t t = 1; t < workers; ++t) pool.emplace_back(work);
  work();
  for (std::thread& t : pool) t.join();
  if (error) std::rethrow_exception(error);
}

}  // namespace npuc::quant
