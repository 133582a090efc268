#include "frontend/dataset_list.h"

#include <filesystem>
#include <fstream>
#include <sstream>

#include "common/error.h"

namespace npuc {

namespace {

bool isBlank(char c) {
  return c == ' ' || c == '\t' || c == '\v' || c == '\f';
}

std::string trimmed(const std::string& s) {
  size_t begin = 0, end = s.size();
  while (begin < end && isBlank(s[begin])) ++begin;
  while (end > begin && isBlank(s[end - 1])) --end;
  return s.substr(begin, end - begin);
}

std::vector<std::string> splitTokens(const std::string& line) {
  std::vector<std::string> tokens;
  size_t i = 0;
  while (i < line.size()) {
    while (i < line.size() && isBlank(line[i])) ++i;
    const size_t start = i;
    while (i < line.size() && !isBlank(line[i])) ++i;
    if (i > start) tokens.push_back(line.substr(start, i - start));
  }
  return tokens;
}

std::string resolve(const std::string& base_dir, const std::string& token) {
  const std::filesystem::path p(token);
  if (p.is_absolute() || base_dir.empty()) return token;
  return (std::filesystem::path(base_dir) / p).string();
}

}  // namespace

std::vector<DatasetEntry> parseDatasetList(const std::string& text, const std::string& base_dir,
                                           const std::string& origin, size_t expected_tokens) {
  std::vector<DatasetEntry> entries;
  size_t pos = 0;
  int64_t number = 0;
  while (pos < text.size()) {
    ++number;
    size_t end = text.find_first_of("\r\n", pos);
    if (end == std::string::npos) end = text.size();
    const std::string line = trimmed(text.substr(pos, end - pos));
    pos = end;
    if (pos < text.size())
      pos += (text[pos] == '\r' && pos + 1 < text.size() && text[pos + 1] == '\n') ? 2 : 1;
    if (line.empty() || line[0] == '#') continue;
    const std::string where = "dataset '" + origin + "' line " + std::to_string(number);
    if (line.find('\0') != std::string::npos)
      throw InputError(where + ": contains a NUL byte (not a text file?)");
    DatasetEntry e;
    e.line = number;
    e.text = line;
    e.tokens = splitTokens(line);
    if (expected_tokens && e.tokens.size() != expected_tokens)
      throw InputError(where + ": expected " + std::to_string(expected_tokens) +
                       " file(s) (one per model input), got " + std::to_string(e.tokens.size()) + ": '" +
                       line + "'");
    for (const std::string& t : e.tokens) e.paths.push_back(resolve(base_dir, t));
    entries.push_back(std::move(e));
  }
  if (entries.empty()) throw InputError("dataset '" + origin + "' lists no sample");
  return entries;
}

std::vector<DatasetEntry> readDatasetList(const std::string& path, size_t expected_tokens) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec))
    throw InputError("dataset '" + path + "': cannot be read (it is a directory)");
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  if (!in) throw InputError("dataset '" + path + "': cannot be read (no such file or no permission)");
  const std::streamoff size = in.tellg();
  if (size < 0) throw InputError("dataset '" + path + "': cannot be read");
  if (static_cast<uint64_t>(size) > kMaxDatasetListBytes)
    throw InputError("dataset '" + path + "': " + std::to_string(size) + " bytes, more than the " +
                     std::to_string(kMaxDatasetListBytes) +
                     " a dataset list may have (is it the right file?)");
  std::string text(static_cast<size_t>(size), '\0');
  in.seekg(0);
  if (!in.read(text.data(), size)) throw InputError("dataset '" + path + "': cannot be read");
  return parseDatasetList(text, std::filesystem::path(path).parent_path().string(), path, expected_tokens);
}

}  // namespace npuc
