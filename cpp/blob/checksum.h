// XXH3-128 over byte ranges: the blob checksum and the model digest.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "blob/blob.h"

namespace npuc::blob {

// XXH3-128 (seed 0) of `data`, stored as the low 64 bits then the high 64 bits, each little-endian.
Digest xxh128(const void* data, size_t size);

// The blob checksum: XXH3-128 over the whole file except the checksum field
// [kOffChecksum, kOffChecksum + kChecksumSize). `size` must be at least kHeaderSize.
Digest blobChecksum(const uint8_t* file, size_t size);

}  // namespace npuc::blob
