#include "quant/binary_requant.h"

#include <algorithm>

#include "quant/int_limits.h"

namespace npuc::quant {

AddRequant makeAddRequant(QuantParams a, QuantParams b, QuantParams out) {
  const double twice_max = 2.0 * std::max<double>(a.scale, b.scale);
  AddRequant r;
  r.zp_a = a.zero_point;
  r.zp_b = b.zero_point;
  r.zp_out = out.zero_point;
  r.a = quantizeMultiplier(a.scale / twice_max, "Add input A");
  r.b = quantizeMultiplier(b.scale / twice_max, "Add input B");
  r.out = quantizeMultiplier(twice_max / (static_cast<double>(1 << kAddLeftShift) * out.scale), "Add output");
  return r;
}

int8_t addInt8(int8_t qa, int8_t qb, const AddRequant& r) {
  const int32_t xa = applyMultiplier((qa - r.zp_a) * (1 << kAddLeftShift), r.a);
  const int32_t xb = applyMultiplier((qb - r.zp_b) * (1 << kAddLeftShift), r.b);
  return requantizeToInt8(xa + xb, r.out, r.zp_out);
}

MulRequant makeMulRequant(QuantParams a, QuantParams b, QuantParams out) {
  MulRequant r;
  r.zp_a = a.zero_point;
  r.zp_b = b.zero_point;
  r.zp_out = out.zero_point;
  r.m = quantizeMultiplier(static_cast<double>(a.scale) * b.scale / out.scale, "Mul");
  return r;
}

int8_t mulInt8(int8_t qa, int8_t qb, const MulRequant& r) {
  return requantizeToInt8((qa - r.zp_a) * (qb - r.zp_b), r.m, r.zp_out);
}

RescaleRequant makeRescaleRequant(QuantParams in, QuantParams out) {
  RescaleRequant r;
  r.zp_in = in.zero_point;
  r.zp_out = out.zero_point;
  r.identity = in.scale == out.scale && in.zero_point == out.zero_point;
  r.m = quantizeMultiplier(static_cast<double>(in.scale) / out.scale, "rescale");
  return r;
}

int8_t rescaleInt8(int8_t q, const RescaleRequant& r) {
  if (r.identity) return q;
  return requantizeToInt8(q - r.zp_in, r.m, r.zp_out);
}

}  // namespace npuc::quant
