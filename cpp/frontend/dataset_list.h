// RKNN-Toolkit2's calibration list, dataset.txt: one sample per line, one file per model input on
// the line, separated by spaces or tabs. Lines end with "\n", "\r\n" or "\r"; blank lines and
// lines whose first non-blank character is '#' are skipped. Relative paths are relative to the
// folder of the list. Only the list is parsed here; the files are read by their consumers
// (npy_reader.h for .npy, Pillow in python/npuc/dataset.py for images).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace npuc {

// One sample line of a dataset list.
struct DatasetEntry {
  int64_t line = 0;                 // 1-based line number in the list
  std::string text;                 // the line without surrounding blanks (for messages)
  std::vector<std::string> tokens;  // the file names as written
  std::vector<std::string> paths;   // the tokens resolved against the list's folder
};

// Largest list read (bytes): far beyond any real calibration set (a million 100-character lines),
// small enough that a wrong path (a disk image, a device) is refused instead of read whole.
constexpr size_t kMaxDatasetListBytes = size_t{128} << 20;

// Parses the text of a list. `base_dir` resolves relative paths ("" keeps them as written);
// `origin` names the list in messages. With `expected_tokens` > 0 a line with another number of
// files is an InputError naming the line; so are a NUL byte in a line and a list with no sample.
std::vector<DatasetEntry> parseDatasetList(const std::string& text, const std::string& base_dir,
                                           const std::string& origin, size_t expected_tokens = 0);

// Reads and parses the list at `path` (InputError if it cannot be read or is too large).
std::vector<DatasetEntry> readDatasetList(const std::string& path, size_t expected_tokens = 0);

}  // namespace npuc
