// The outcome of a rewrite attempt (as in MLIR): a named bool, so `return failure();` reads as what it
// means and a forgotten result is a compiler warning rather than a silent "false".
#pragma once

namespace npuc {

class [[nodiscard]] LogicalResult {
 public:
  static LogicalResult success() { return LogicalResult(true); }
  static LogicalResult failure() { return LogicalResult(false); }
  bool succeeded() const { return ok_; }
  bool failed() const { return !ok_; }

 private:
  explicit LogicalResult(bool ok) : ok_(ok) {}
  bool ok_;
};

inline LogicalResult success() {
  return LogicalResult::success();
}
inline LogicalResult failure() {
  return LogicalResult::failure();
}

}  // namespace npuc
