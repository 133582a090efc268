#include "frontend/darknet/darknet_import.h"

#include <filesystem>
#include <fstream>
#include <sstream>

#include "common/error.h"
#include "frontend/darknet/cfg_parse.h"
#include "frontend/darknet/graph_emit.h"
#include "frontend/darknet/layer_plan.h"
#include "frontend/darknet/weights_file.h"
#include "frontend/error_prefix.h"

namespace npuc {

namespace {

std::string readFile(const std::string& path, const char* what) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) {
    throw ModelLoadError(path + ": cannot open the darknet " + what + ": no such file");
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) throw ModelLoadError(path + ": cannot open the darknet " + what);
  std::ostringstream ss;
  ss << in.rdbuf();
  if (in.bad()) throw ModelLoadError(path + ": read error");
  return ss.str();
}

// The floats must match the cfg to the last one: darknet reads what its layers ask for and
// ignores the rest, and a short file leaves the later layers with uninitialized weights; both
// mean the .weights belongs to another .cfg.
void checkWeightCount(const darknet::NetPlan& plan, const darknet::WeightsFile& w, const std::string& cfg_name) {
  const int64_t found = static_cast<int64_t>(w.numFloats());
  if (found == plan.total_params) return;
  std::string msg = w.file() + ": expected " + std::to_string(plan.total_params) + " floats after the " +
                    std::to_string(w.headerBytes()) + "-byte header for the " + std::to_string(plan.layers.size()) +
                    " layers of " + cfg_name + ", found " + std::to_string(found);
  if (found < plan.total_params) {
    int64_t sum = 0;
    for (const darknet::LayerPlan& p : plan.layers) {
      sum += p.num_params;
      if (sum > found) {
        msg += " (the file is " + std::to_string((plan.total_params - found) * 4) + " bytes short; " + p.where +
               " is the first layer it does not cover)";
        break;
      }
    }
  } else {
    msg += " (" + std::to_string((found - plan.total_params) * 4) + " bytes too many: the weights of another .cfg?)";
  }
  throw ModelLoadError(msg);
}

std::string stem(const std::string& name) {
  const std::string s = std::filesystem::path(name).stem().string();
  return s.empty() ? "darknet" : s;
}

}  // namespace

std::unique_ptr<Graph> importDarknetBytes(const std::string& cfg_text, const std::string& weights_bytes,
                                          const ImportOptions& opts, const std::string& cfg_name,
                                          const std::string& weights_name) {
  std::vector<darknet::CfgSection> sections = darknet::parseCfg(cfg_text, cfg_name);
  const darknet::NetPlan plan = darknet::planNetwork(sections);
  darknet::WeightsFile weights(weights_bytes, weights_name);
  checkWeightCount(plan, weights, cfg_name);
  std::unique_ptr<Graph> g = darknet::emitGraph(plan, weights, stem(cfg_name));
  try {
    finishImport(*g, opts);  // the parse errors above name the file themselves; the tail's do not
  } catch (const Error&) {
    rethrowWithPrefix(cfg_name + ": ");
  }
  return g;
}

std::unique_ptr<Graph> importDarknetFiles(const std::string& cfg_path, const std::string& weights_path,
                                          const ImportOptions& opts) {
  try {
    const std::string cfg = readFile(cfg_path, ".cfg");
    const std::string weights = readFile(weights_path, ".weights");
    return importDarknetBytes(cfg, weights, opts, cfg_path, weights_path);
  } catch (const std::bad_alloc&) {
    throw ResourceError(cfg_path + ": out of memory while loading the model");
  }
}

}  // namespace npuc
