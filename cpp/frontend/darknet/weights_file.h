// Darknet .weights: a header (int32 major, minor, revision, then `seen`: int64 when
// major*10+minor >= 2 and both are below 1000, else int32), then every layer's float32 parameters
// in layer order with nothing between them: the file has no names or sizes, so only the .cfg says
// where one layer's floats end. The whole count is therefore checked against what the .cfg needs
// before a single tensor is built (a short file would otherwise load as garbage weights, a long
// one means the wrong .cfg).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace npuc::darknet {

class WeightsFile {
 public:
  // Parses the header; throws ModelLoadError naming `file` if it is shorter than the header or its
  // float data is not a whole number of 4-byte floats.
  WeightsFile(std::string bytes, std::string file);

  const std::string& file() const { return file_; }
  int32_t major() const { return major_; }
  int32_t minor() const { return minor_; }
  size_t headerBytes() const { return header_bytes_; }
  // Darknet files written with major or minor > 1000 store connected-layer weights transposed.
  bool transposedConnected() const { return major_ > 1000 || minor_ > 1000; }
  size_t numFloats() const { return (bytes_.size() - header_bytes_) / 4; }

  // The next n floats (little-endian, as darknet writes them on every platform it runs on).
  // The caller checked the total first (see darknet_import.cpp), so running past the end is a bug
  // and throws ModelLoadError rather than reading out of bounds.
  void read(float* dst, size_t n);
  size_t position() const { return pos_; }

 private:
  std::string bytes_;
  std::string file_;
  int32_t major_ = 0, minor_ = 0, revision_ = 0;
  size_t header_bytes_ = 0;
  size_t pos_ = 0;  // in floats
};

}  // namespace npuc::darknet
