// out[i] = table[in[i] as uint8] over a 256-byte table: the inner loop of every int8 op whose
// result depends on one input byte (a lookup-table activation, a Mul or Add with one operand
// fixed over a run). With AVX-512 VBMI, 64 bytes per step from four 64-byte table registers;
// otherwise (and in tests, as the peer) the plain loop. Both give the same bytes.
#pragma once
#include <cstdint>

namespace npuc::quant {

void lookupBytes(const int8_t* table, const int8_t* in, int64_t n, int8_t* out);
// The portable loop lookupBytes runs without VBMI.
void lookupBytesScalar(const int8_t* table, const int8_t* in, int64_t n, int8_t* out);

}  // namespace npuc::quant
