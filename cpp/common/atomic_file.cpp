#include "common/atomic_file.h"

#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <system_error>

namespace npuc {

std::string writeFileAtomically(const std::string& path, std::string_view bytes) {
  namespace fs = std::filesystem;
  // pid + a process-wide counter: two threads or two processes writing next to each other never
  // share a temporary.
  static std::atomic<uint64_t> counter{0};
  const fs::path target(path);
  fs::path tmp = target;
  tmp += ".npuc-tmp-" + std::to_string(::getpid()) + "-" + std::to_string(counter++);
  std::error_code ignored;
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) return "cannot create a temporary file in its folder";
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    out.close();
    if (!out) {
      fs::remove(tmp, ignored);
      return "the write failed";
    }
  }
  std::error_code ec;
  fs::rename(tmp, target, ec);
  if (ec) {
    fs::remove(tmp, ignored);
    return ec.message();
  }
  return {};
}

}  // namespace npuc
