#include "blob/checksum.h"

#include <xxhash.h>

#include <memory>

#include "blob/blob_format.h"
#include "common/error.h"

namespace npuc::blob {

namespace {

Digest toDigest(XXH128_hash_t h) {
  Digest d{};
  for (int i = 0; i < 8; ++i) {
    d[i] = static_cast<uint8_t>(h.low64 >> (8 * i));
    d[8 + i] = static_cast<uint8_t>(h.high64 >> (8 * i));
  }
  return d;
}

struct StateDeleter {
  void operator()(XXH3_state_t* s) const { XXH3_freeState(s); }
};

}  // namespace

Digest xxh128(const void* data, size_t size) {
  return toDigest(XXH3_128bits(data, size));
}

Digest blobChecksum(const uint8_t* file, size_t size) {
  std::unique_ptr<XXH3_state_t, StateDeleter> state(XXH3_createState());
  if (!state || XXH3_128bits_reset(state.get()) != XXH_OK)
    throw ResourceError("cannot allocate an XXH3 state");
  XXH3_128bits_update(state.get(), file, kOffChecksum);
  const size_t rest = kOffChecksum + kChecksumSize;
  XXH3_128bits_update(state.get(), file + rest, size - rest);
  return toDigest(XXH3_128bits_digest(state.get()));
}

}  // namespace npuc::blob
