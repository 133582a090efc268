// libFuzzer target: the calibration-input parsers of npuc (cpp/frontend/dataset_list.h and
// npy_reader.h), which read files a user points build(dataset=...) at.
//
// Input: dataset.txt text, then the separator line "\n--npy--\n", then the bytes of a .npy file
// (no separator: the whole input is both the text and the .npy bytes, so each half still sees
// every mutation). The text is parsed with any file count, then again requiring the first sample
// line's count (the per-line check); the .npy bytes are decoded into a tensor.
//
// Any npuc::Error is a correct refusal. Anything else is a finding: a sanitizer report, another
// exception type escaping, a timeout, or an allocation above -malloc_limit_mb (a declared .npy
// size trusted before the data was checked).
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "common/error.h"
#include "frontend/dataset_list.h"
#include "frontend/npy_reader.h"

namespace {

constexpr char kSeparator[] = "\n--npy--\n";  // also in tests/fuzz/make_seeds.py

void parseList(const std::string& text) {
  const std::vector<npuc::DatasetEntry> entries = npuc::parseDatasetList(text, "calib", "<fuzz>");
  (void)npuc::parseDatasetList(text, "", "<fuzz>", entries.front().tokens.size());
}

void decodeNpy(const std::string& bytes) {
  const npuc::Tensor t =
      npuc::decodeNpy(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size(), "<fuzz>");
  (void)t;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string input(reinterpret_cast<const char*>(data), size);
  const size_t cut = input.find(kSeparator);
  const std::string text = cut == std::string::npos ? input : input.substr(0, cut);
  const std::string npy = cut == std::string::npos ? input : input.substr(cut + sizeof kSeparator - 1);
  try {
    parseList(text);
  } catch (const npuc::Error&) {
    // A typed refusal: the list is empty, has a NUL byte or a wrong file count.
  }
  try {
    decodeNpy(npy);
  } catch (const npuc::Error&) {
    // A typed refusal: not an .npy, bad header, unsupported dtype, wrong data size.
  }
  return 0;
}
