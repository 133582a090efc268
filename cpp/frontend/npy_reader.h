// Reader of numpy's .npy format (versions 1.0, 2.0 and 3.0) for calibration samples: the header
// is parsed and every declared size checked against the bytes that are there before anything is
// allocated, so a corrupt or hostile file is refused with an InputError naming the problem.
//
// Accepted: the numeric and bool dtypes npuc tensors hold ('<f4', '|u1', '>i8', '|b1', ...),
// either byte order (big-endian data is swapped), C or Fortran order (Fortran data is reordered
// into C order). Refused: structured / object / string / complex dtypes, a header that is not the
// dict numpy writes, negative or overflowing dims, and data shorter or longer than declared.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "ir/tensor.h"

namespace npuc {

// What the header of a .npy declares.
struct NpyHeader {
  DType dtype = DType::Undefined;
  bool big_endian = false;  // the stored bytes are big-endian (elements wider than one byte)
  bool fortran_order = false;
  Shape shape;
  size_t data_offset = 0;  // bytes from the start of the file to the first element
  size_t data_bytes = 0;   // element count x element size, as declared
};

// Largest header accepted, as numpy's own loader (max_header_size): a longer one is not an array
// numpy wrote and parsing it would only cost time.
constexpr size_t kMaxNpyHeaderBytes = 10000;

// Parses the header at the start of `data` (`size` bytes available; the array data need not
// follow). `origin` names the file in messages.
NpyHeader parseNpyHeader(const uint8_t* data, size_t size, const std::string& origin);

// Decodes a whole .npy file held in memory into a C-order, native-byte-order tensor.
Tensor decodeNpy(const uint8_t* data, size_t size, const std::string& origin);

// Reads a .npy file: the header first, then the data straight into the tensor (one copy).
Tensor readNpyFile(const std::string& path);

}  // namespace npuc
