// Scratch memory of the fast simulator kernels (im2col rows, packed activations, accumulators).
// One growing buffer per thread, reused by every step of every run: allocating and zero-filling
// megabytes of im2col per conv per run cost as much as the small convs themselves. Per thread,
// so QuantizedExecutor::run stays safe to call from several threads; steps never nest, so one
// buffer per thread is enough.
#pragma once
#include <cstddef>
#include <cstdint>
#include <vector>

namespace npuc::quant {

inline void* threadScratch(size_t bytes) {
  thread_local std::vector<uint8_t> buffer;
  if (buffer.size() < bytes) buffer.resize(bytes);
  return buffer.data();
}

}  // namespace npuc::quant
