// What the NPU of a SoC can run, as check objects written once.
//
// A SocProfile names, per supported op, a few limits ("kernel: [1, 31]", "max_k: 8192"). Each
// limit name maps to one LimitCheck below that knows (a) which ops it applies to and what value
// type it takes (the profile loader validates against that), (b) how to test a node against the
// value (partitioning), and (c) how to say the limit in words (docs/supported_ops.md). Three
// further checks hold for every op and take no parameter: the op must be listed by the profile,
// shapes must be static, and tensors must have a dtype the NPU can run.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "target/soc_profile.h"

namespace npuc {

enum class LimitKind {
  None,   // always-on check, no parameter in the profile
  Int,    // a single bound: "max_k: 8192"
  Range,  // an inclusive range: "kernel: [1, 31]"
  Names,  // a subset of fixed names: "axis: [channel, last]"
};

struct LimitCheck {
  std::string name;  // profile key ("kernel") or always-on name ("op_support")
  LimitKind kind = LimitKind::None;
  std::vector<std::string> ops;            // op types it may be given for; empty: any op
  std::vector<std::string> allowed_names;  // LimitKind::Names: the words a profile may list
  // The limit in words for the docs ("kernel height and width in 1..31").
  std::function<std::string(const LimitValue&)> describe;
  // Returns the violation message, or nullopt when the node satisfies the limit. The node's
  // shapes are static when a parameterized check runs (the always-on checks ensure that first).
  std::function<std::optional<std::string>(const Node&, const LimitValue&)> violation;

  bool appliesTo(const std::string& op_type) const;
};

// Every parameterized limit a profile may use, in the order docs list them.
const std::vector<LimitCheck>& limitChecks();
// The parameterized check for a profile key, or null.
const LimitCheck* findLimitCheck(const std::string& name);
// A parameterless check that holds for every op on every SoC.
struct AlwaysOnCheck {
  std::string name;   // "op_support", "static_shape", "dtype"
  std::string words;  // for the docs
  std::function<std::optional<std::string>(const Node&, const SocProfile&)> violation;
};
// In the order they run: op_support first (nothing else matters for an unlisted op), then the
// shape and dtype checks the parameterized limits rely on.
const std::vector<AlwaysOnCheck>& alwaysOnChecks();

struct Violation {
  std::string check;            // "Conv.kernel", or an always-on check name ("op_support", "dtype", ...)
  std::string message;          // "Conv kernel 33x33 exceeds 31x31"
  bool unsupported_op = false;  // the op is not in the profile at all
};

// All reasons `node` cannot run on `soc`'s NPU; empty when it can.
std::vector<Violation> npuViolations(const Node& node, const SocProfile& soc);

// The constraints of one supported op in words, one entry per limit, with " (assumed)" appended to
// limits the profile marks as assumptions. Empty when the op has no limits beyond the always-on ones.
std::vector<std::string> describeOpLimits(const OpSupport& op);

}  // namespace npuc
