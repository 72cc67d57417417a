// Bit-exact conversions between double and the floating-point element types of the op IR.
//
//   uint64_t bits = EncodeFloat(PrimitiveType::kBF16, 1.0 + 0x1p-8);  // 0x3f80: tie -> even
//   double x = DecodeFloat(PrimitiveType::kF8E4M3FN, 0x7e);              // 448, the largest
//   uint16_t b = FloatToBf16Bits(3.0f);                                  // fast path, 0x4040
//
// Every narrow format is described by one FloatFormat (exponent bits, mantissa bits, bias and
// how it spells inf and NaN) and converted by one generic routine, so adding a format is one
// table row. Conversions from double round to nearest, ties to even, once (no double rounding
// through float). Out-of-range values follow each format's rules, which match ml_dtypes 0.6
// (what XLA's CPU backend uses for `convert`), except where noted:
//   - IEEE-like formats (f16, bf16, f8e5m2, f8e4m3, f8e3m4): overflow gives +-inf; NaN keeps its
//     sign and becomes the quiet NaN.
//   - "fn" formats with NaN but no inf (f8e4m3fn): inf and overflow give NaN (0x7f / 0xff), not
//     the largest finite value; XLA's convert does not saturate.
//   - "fnuz" formats (f8e4m3fnuz, f8e5m2fnuz, f8e4m3b11fnuz): one NaN (0x80), no inf, no -0
//     (-0 encodes as +0); inf and overflow give NaN.
//   - formats with neither inf nor NaN (f4e2m1fn, f6e3m2fn, f6e2m3fn): inf and overflow
//     saturate to +-max; NaN becomes +0 (ml_dtypes gives a zero too, with a sign that depends
//     on the NaN's sign bit in an inverted way; we do not reproduce that).
//   - f8e8m0fnu (a power of two 2^(bits-127), no sign, no zero, 0xff is NaN): zero, negative
//     values, NaN, inf and overflow give NaN; positive values below 2^-127 give 2^-127; ties
//     round up (to the larger power of two), as ml_dtypes does.
// f32 and f64 go through the native conversions (double -> float rounds to nearest even).
#ifndef PERFSIM_SIM_IR_FLOAT_TYPES_H_
#define PERFSIM_SIM_IR_FLOAT_TYPES_H_

#include <cstdint>
#include <cstring>
#include <optional>

#include "sim/ir/primitive_type.h"

namespace perfsim {

// How a format spells its special values.
enum class FloatSpecials {
  kIeee,         // all-ones exponent: inf (mantissa 0) or NaN (mantissa != 0)
  kFiniteNan,    // no inf; all-ones exponent and mantissa is NaN ("fn")
  kFiniteUzNan,  // no inf, no -0; the -0 pattern (sign bit only) is the one NaN ("fnuz")
  kFiniteOnly,   // no inf, no NaN (f4e2m1fn, f6e*)
  kPowerOfTwo,   // f8e8m0fnu: unsigned exponent only, all ones is NaN
};

struct FloatFormat {
  int exponent_bits;
  int mantissa_bits;
  int bias;  // value of a normal number: 2^(exponent_field - bias) * 1.mantissa
  bool has_sign;
  FloatSpecials specials;

  int total_bits() const { return (has_sign ? 1 : 0) + exponent_bits + mantissa_bits; }
};

// The format of a floating-point element type narrower than f32 (f16, bf16 and every f8, f6
// and f4 type); nullopt for f32, f64 and non-float types.
std::optional<FloatFormat> GetNarrowFloatFormat(PrimitiveType type);

// `value` rounded into `type` (any floating-point type, f32 and f64 included), as the bit
// pattern in the low BitWidth(type) bits. Non-float types return 0.
uint64_t EncodeFloat(PrimitiveType type, double value);

// The value of bit pattern `bits` (low BitWidth(type) bits used) of floating-point `type`.
// Non-float types return 0.
double DecodeFloat(PrimitiveType type, uint64_t bits);

// DecodeFloat(type, EncodeFloat(type, value)): `value` rounded to the nearest value of `type`.
double RoundToFloatType(PrimitiveType type, double value);

// The largest finite value of a floating-point type (448 for f8e4m3fn, 65504 for f16).
double MaxFiniteValue(PrimitiveType type);

// Fast bf16 helpers for the interpreter: float -> bf16 rounds to nearest even (NaN stays a
// quiet NaN of the same sign); bf16 -> float is exact.
inline uint16_t FloatToBf16Bits(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, sizeof(bits));
  if ((bits & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((bits >> 16) | 0x40u);
  const uint32_t rounding_bias = 0x7fffu + ((bits >> 16) & 1u);
  return static_cast<uint16_t>((bits + rounding_bias) >> 16);
}

inline float Bf16BitsToFloat(uint16_t bits) {
  const uint32_t wide = static_cast<uint32_t>(bits) << 16;
  float value;
  std::memcpy(&value, &wide, sizeof(value));
  return value;
}

}  // namespace perfsim

#endif  // PERFSIM_SIM_IR_FLOAT_TYPES_H_
