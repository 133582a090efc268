#include "frontend/darknet/weights_file.h"

#include <cstring>

#include "common/error.h"

namespace npuc::darknet {

namespace {

int32_t readInt32(const std::string& b, size_t at) {
  uint32_t u = 0;
  for (int i = 3; i >= 0; --i) u = (u << 8) | static_cast<uint8_t>(b[at + static_cast<size_t>(i)]);
  return static_cast<int32_t>(u);
}

}  // namespace

WeightsFile::WeightsFile(std::string bytes, std::string file) : bytes_(std::move(bytes)), file_(std::move(file)) {
  if (bytes_.size() < 16) {
    throw ModelLoadError(file_ + ": " + std::to_string(bytes_.size()) +
                         " bytes: too short for a darknet .weights header (at least 16 bytes)");
  }
  major_ = readInt32(bytes_, 0);
  minor_ = readInt32(bytes_, 4);
  revision_ = readInt32(bytes_, 8);
  // The rule of darknet's load_weights(): `seen` became a size_t in format 0.2.
  const bool seen64 = (static_cast<int64_t>(major_) * 10 + minor_) >= 2 && major_ < 1000 && minor_ < 1000;
  header_bytes_ = seen64 ? 20 : 16;
  if (bytes_.size() < header_bytes_) {
    throw ModelLoadError(file_ + ": " + std::to_string(bytes_.size()) + " bytes: too short for the " +
                         std::to_string(header_bytes_) + "-byte header of format " + std::to_string(major_) + "." +
                         std::to_string(minor_));
  }
  const size_t rest = bytes_.size() - header_bytes_;
  if (rest % 4 != 0) {
    throw ModelLoadError(file_ + ": " + std::to_string(rest) + " bytes after the " + std::to_string(header_bytes_) +
                         "-byte header are not a whole number of float32 values (truncated file?)");
  }
}

void WeightsFile::read(float* dst, size_t n) {
  if (n > numFloats() - pos_) {
    throw ModelLoadError(file_ + ": reading " + std::to_string(n) + " floats at float " + std::to_string(pos_) +
                         " runs past the end (" + std::to_string(numFloats()) + " floats)");
  }
  const char* src = bytes_.data() + header_bytes_ + pos_ * 4;
  for (size_t i = 0; i < n; ++i) {
    uint32_t u = 0;
    for (int k = 3; k >= 0; --k) u = (u << 8) | static_cast<uint8_t>(src[i * 4 + static_cast<size_t>(k)]);
    std::memcpy(&dst[i], &u, 4);
  }
  pos_ += n;
}

}  // namespace npuc::darknet
