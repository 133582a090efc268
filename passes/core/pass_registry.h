// Every pass npuc has, by name. The list itself is in pass_registry.cpp: one line per pass, an
// explicit table rather than static registration objects (which a static library would drop).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "passes/core/pass.h"

namespace npuc {

struct PassInfo {
  const char* name;
  PassFactory create;
};

const std::vector<PassInfo>& registeredPasses();
std::vector<std::string> registeredPassNames();
bool isRegisteredPass(const std::string& name);
// Throws ConfigError listing the valid names when `name` is unknown.
std::unique_ptr<Pass> createPass(const std::string& name);

}  // namespace npuc
