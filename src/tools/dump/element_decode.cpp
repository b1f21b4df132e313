#include "tools/dump/element_decode.h"

#include <cstring>

namespace crosstrain::dump {

namespace {

template <typename T>
void widen(const void* data, size_t offset, size_t n, double* out) {
  const T* p = static_cast<const T*>(data) + offset;
#pragma omp simd
  for (size_t i = 0; i < n; ++i) out[i] = static_cast<double>(p[i]);
}

float from_bits(uint32_t u) {
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}

uint32_t to_bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  return u;
}

}  // namespace

float half_to_float(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t exp = (h >> 10) & 0x1fu;
  uint32_t mant = h & 0x3ffu;
  if (exp == 0x1f) return from_bits(sign | 0x7f800000u | (mant << 13));  // Inf / NaN
  if (exp != 0) return from_bits(sign | ((exp + 112) << 23) | (mant << 13));
  if (mant == 0) return from_bits(sign);
  // Subnormal half: value = mant * 2^-24, exact in float.
  float v = static_cast<float>(mant) * 5.9604644775390625e-8f;
  return sign ? -v : v;
}

float bfloat16_to_float(uint16_t bits) { return from_bits(static_cast<uint32_t>(bits) << 16); }

uint16_t float_to_bfloat16(float f) {
  uint32_t u = to_bits(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((u >> 16) | 0x40u);  // quiet NaN
  u += 0x7fffu + ((u >> 16) & 1u);
  return static_cast<uint16_t>(u >> 16);
}

uint16_t float_to_half(float f) {
  uint32_t u = to_bits(f);
  const uint16_t sign = static_cast<uint16_t>((u >> 16) & 0x8000u);
  u &= 0x7fffffffu;
  if (u > 0x7f800000u) return sign | 0x7e00u;                 // NaN
  if (u >= 0x477ff000u) return sign | 0x7c00u;                // rounds to >= 65520: Inf
  if (u < 0x38800000u) {                                      // below the smallest normal half
    float a = from_bits(u);
    // Subnormal: units of 2^-24, round half to even via the FPU's default rounding.
    float units = a * 16777216.0f;
    uint32_t r = static_cast<uint32_t>(units);
    float frac = units - static_cast<float>(r);
    if (frac > 0.5f || (frac == 0.5f && (r & 1u))) ++r;
    return sign | static_cast<uint16_t>(r);
  }
  uint32_t mant_round = u + 0xfffu + ((u >> 13) & 1u);
  return sign | static_cast<uint16_t>(((mant_round >> 13) - (112u << 10)) & 0x7fffu);
}

void decode_to_double(DType type, const void* data, size_t offset, size_t n, double* out) {
  switch (type) {
    case DType::Float32: widen<float>(data, offset, n, out); return;
    case DType::Float64: widen<double>(data, offset, n, out); return;
    case DType::Int64: widen<int64_t>(data, offset, n, out); return;
    case DType::Int32: widen<int32_t>(data, offset, n, out); return;
    case DType::UInt8: widen<uint8_t>(data, offset, n, out); return;
    case DType::Bool: {
      const uint8_t* p = static_cast<const uint8_t*>(data) + offset;
      for (size_t i = 0; i < n; ++i) out[i] = p[i] ? 1.0 : 0.0;
      return;
    }
    case DType::Float16: {
      const uint16_t* p = static_cast<const uint16_t*>(data) + offset;
      for (size_t i = 0; i < n; ++i) out[i] = half_to_float(p[i]);
      return;
    }
    case DType::BFloat16: {
      const uint16_t* p = static_cast<const uint16_t*>(data) + offset;
#pragma omp simd
      for (size_t i = 0; i < n; ++i) out[i] = bfloat16_to_float(p[i]);
      return;
    }
  }
}

}  // namespace crosstrain::dump
