#include "quant/binary_requant_wide.h"

#include <algorithm>
#include <cmath>
#include <sstream>

#include "common/error.h"
#include "quant/requant_wide.h"

namespace npuc::quant {

namespace {

int16_t saturate16(__int128 v) {
  return static_cast<int16_t>(v < -32768 ? -32768 : (v > 32767 ? 32767 : static_cast<int32_t>(v)));
}

void checkRatio(double r, const char* what) {
  if (std::isfinite(r) && r > 0.0 && r < std::ldexp(1.0, 30)) return;
  std::ostringstream msg;
  msg.precision(17);
  msg << what << ": scale ratio " << r << " must be finite, > 0 and < 2^30";
  throw ConfigError(msg.str());
}

}  // namespace

WideAddRequant makeWideAddRequant(QuantParams a, QuantParams b, QuantParams out, const char* what) {
  const double ra = static_cast<double>(a.scale) / out.scale, rb = static_cast<double>(b.scale) / out.scale;
  checkRatio(ra, what);
  checkRatio(rb, what);
  int exponent = 0;
  std::frexp(std::max(ra, rb), &exponent);  // max = f * 2^exponent, f in [0.5, 1)
  WideAddRequant r;
  r.shift = std::clamp(31 - exponent, 1, 126);
  r.multiplier_a = std::llround(std::ldexp(ra, r.shift));
  r.multiplier_b = std::llround(std::ldexp(rb, r.shift));
  r.zero_point_a = a.zero_point;
  r.zero_point_b = b.zero_point;
  r.zero_point_out = out.zero_point;
  return r;
}

int16_t addInt16(int16_t a, int16_t b, const WideAddRequant& r) {
  const __int128 v = static_cast<__int128>(int64_t{a} - r.zero_point_a) * r.multiplier_a +
                     static_cast<__int128>(int64_t{b} - r.zero_point_b) * r.multiplier_b;
  const __int128 magnitude = v < 0 ? -v : v;
  const __int128 rounded = (magnitude + (static_cast<__int128>(1) << (r.shift - 1))) >> r.shift;
  return saturate16((v < 0 ? -rounded : rounded) + r.zero_point_out);
}

WideMulRequant makeWideMulRequant(QuantParams a, QuantParams b, QuantParams out, const char* what) {
  WideMulRequant r;
  r.multiplier = quantizeWideMultiplier(static_cast<double>(a.scale) * b.scale / out.scale, what);
  r.zero_point_a = a.zero_point;
  r.zero_point_b = b.zero_point;
  r.zero_point_out = out.zero_point;
  return r;
}

int16_t mulInt16(int16_t a, int16_t b, const WideMulRequant& r) {
  const int64_t product = (int64_t{a} - r.zero_point_a) * (int64_t{b} - r.zero_point_b);
  return requantizeToInt16(product, r.multiplier, r.zero_point_out);
}

WideRescale makeWideRescale(QuantParams in, QuantParams out, const char* what) {
  WideRescale r;
  r.identity = in.scale == out.scale && in.zero_point == out.zero_point;
  if (!r.identity) r.multiplier = quantizeWideMultiplier(static_cast<double>(in.scale) / out.scale, what);
  r.zero_point_in = in.zero_point;
  r.zero_point_out = out.zero_point;
  return r;
}

int16_t rescaleInt16(int16_t q, const WideRescale& r) {
  if (r.identity) return q;
  return requantizeToInt16(int64_t{q} - r.zero_point_in, r.multiplier, r.zero_point_out);
}

}  // namespace npuc::quant
