#include "frontend/error_prefix.h"

#include "common/error.h"

namespace npuc {

[[noreturn]] void rethrowWithPrefix(const std::string& prefix) {
  try {
    throw;
  } catch (const ModelLoadError& e) {
    throw ModelLoadError(prefix + e.what());
  } catch (const UnsupportedOpError& e) {
    throw UnsupportedOpError(prefix + e.what());
  } catch (const ShapeError& e) {
    throw ShapeError(prefix + e.what());
  } catch (const GraphError& e) {
    throw GraphError(prefix + e.what());
  } catch (const ResourceError& e) {
    throw ResourceError(prefix + e.what());
  } catch (const ConfigError& e) {
    throw ConfigError(prefix + e.what());
  } catch (const InputError& e) {
    throw InputError(prefix + e.what());
  } catch (const Error& e) {
    throw Error(prefix + e.what());
  }
}

}  // namespace npuc
