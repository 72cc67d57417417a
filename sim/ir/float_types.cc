#include "sim/ir/float_types.h"

#include <bit>
#include <cmath>
#include <limits>

namespace perfsim {
namespace {

// f32 goes through the generic routine too: it is exact, and it avoids the double -> float
// cast whose out-of-range behaviour C++ leaves undefined.
constexpr FloatFormat kF32Format = {8, 23, 127, true, FloatSpecials::kIeee};

std::optional<FloatFormat> FormatOf(PrimitiveType type) {
  if (type == PrimitiveType::kF32) return kF32Format;
  return GetNarrowFloatFormat(type);
}

uint64_t LowMask(int bits) { return bits >= 64 ? ~uint64_t{0} : (uint64_t{1} << bits) - 1; }

uint64_t DoubleBits(double value) { return std::bit_cast<uint64_t>(value); }

// Splits a finite, non-zero |value| into mantissa * 2^exponent with mantissa a 53-bit (or
// smaller, for double subnormals) integer, and returns floor(log2(|value|)).
struct Decomposed {
  uint64_t mantissa;
  int exponent;  // of the mantissa's least significant bit
  int log2;      // floor(log2(|value|))
};

Decomposed Decompose(uint64_t double_bits) {
  const uint64_t fraction = double_bits & LowMask(52);
  const int biased = static_cast<int>((double_bits >> 52) & 0x7ff);
  Decomposed d;
  if (biased == 0) {
    d.mantissa = fraction;
    d.exponent = -1074;
  } else {
    d.mantissa = fraction | (uint64_t{1} << 52);
    d.exponent = biased - 1075;
  }
  d.log2 = d.exponent + 63 - std::countl_zero(d.mantissa);
  return d;
}

// f8e8m0fnu: 2^(bits - 127). Ties round up, as ml_dtypes does.
uint64_t EncodePowerOfTwo(double value) {
  constexpr uint64_t kNan = 0xff;
  if (!(value > 0) || std::isinf(value)) return kNan;  // NaN, zero, negative, inf
  const Decomposed d = Decompose(DoubleBits(value));
  const int lead = 63 - std::countl_zero(d.mantissa);
  int field = d.log2 + 127;
  if (lead > 0 && ((d.mantissa >> (lead - 1)) & 1) != 0) ++field;  // fraction >= 0.5
  if (field < 0) return 0;
  if (field >= 255) return kNan;
  return static_cast<uint64_t>(field);
}

uint64_t EncodeGeneric(const FloatFormat& f, double value) {
  if (f.specials == FloatSpecials::kPowerOfTwo) return EncodePowerOfTwo(value);
  const int m = f.mantissa_bits;
  const uint64_t exponent_all_ones = LowMask(f.exponent_bits);
  const uint64_t sign_bit = f.has_sign ? uint64_t{1} << (f.exponent_bits + m) : 0;
  const uint64_t double_bits = DoubleBits(value);
  const uint64_t sign = (double_bits >> 63) != 0 ? sign_bit : 0;

  // Magnitude bit patterns of the largest finite value, inf (if any) and NaN (if any).
  uint64_t max_bits = 0;
  uint64_t nan_bits = 0;
  switch (f.specials) {
    case FloatSpecials::kIeee:
      max_bits = ((exponent_all_ones - 1) << m) | LowMask(m);
      nan_bits = (exponent_all_ones << m) | (uint64_t{1} << (m - 1));
      break;
    case FloatSpecials::kFiniteNan:
      max_bits = (exponent_all_ones << m) | (LowMask(m) - 1);
      nan_bits = (exponent_all_ones << m) | LowMask(m);
      break;
    case FloatSpecials::kFiniteUzNan:
    case FloatSpecials::kFiniteOnly:
      max_bits = (exponent_all_ones << m) | LowMask(m);
      break;
    case FloatSpecials::kPowerOfTwo:
      break;
  }
  const uint64_t inf_bits = exponent_all_ones << m;  // kIeee only

  // What NaN, and values too large for the format, become.
  auto nan_result = [&]() -> uint64_t {
    switch (f.specials) {
      case FloatSpecials::kIeee:
      case FloatSpecials::kFiniteNan:
        return sign | nan_bits;
      case FloatSpecials::kFiniteUzNan:
        return sign_bit;
      case FloatSpecials::kFiniteOnly:
      case FloatSpecials::kPowerOfTwo:
        return 0;
    }
    return 0;
  };
  auto overflow_result = [&]() -> uint64_t {
    switch (f.specials) {
      case FloatSpecials::kIeee:
        return sign | inf_bits;
      case FloatSpecials::kFiniteNan:
      case FloatSpecials::kFiniteUzNan:
        return nan_result();
      case FloatSpecials::kFiniteOnly:
        return sign | max_bits;
      case FloatSpecials::kPowerOfTwo:
        return 0;
    }
    return 0;
  };

  if (std::isnan(value)) return nan_result();
  if (std::isinf(value)) return overflow_result();
  const bool uz = f.specials == FloatSpecials::kFiniteUzNan;
  if (value == 0) return uz ? 0 : sign;

  // |value| = mantissa * 2^exponent. The result's quantum is 2^(e_eff - m), where e_eff is the
  // value's binade clamped to the smallest normal binade (below it the format is subnormal).
  const Decomposed d = Decompose(double_bits);
  const int min_normal_exponent = 1 - f.bias;
  const int e_eff = d.log2 > min_normal_exponent ? d.log2 : min_normal_exponent;
  const int shift = (e_eff - m) - d.exponent;  // >= 1 for every format narrower than f64
  uint64_t q = 0;
  if (shift < 64) {
    q = d.mantissa >> shift;
    const uint64_t remainder = d.mantissa & LowMask(shift);
    const uint64_t half = uint64_t{1} << (shift - 1);
    if (remainder > half || (remainder == half && (q & 1) != 0)) ++q;
  }
  // For a normal result q is in [2^m, 2^(m+1)] and the leading one carries into the exponent
  // field; for a subnormal one the exponent field is 0. Both come out of one addition, and a
  // rounding carry into the next binade falls out too.
  const uint64_t magnitude = (static_cast<uint64_t>(e_eff - min_normal_exponent) << m) + q;
  if (magnitude > max_bits) return overflow_result();
  if (magnitude == 0 && uz) return 0;
  return sign | magnitude;
}

double DecodeGeneric(const FloatFormat& f, uint64_t bits) {
  const int m = f.mantissa_bits;
  bits &= LowMask(f.total_bits());
  if (f.specials == FloatSpecials::kPowerOfTwo) {
    if (bits == 0xff) return std::numeric_limits<double>::quiet_NaN();
    return std::ldexp(1.0, static_cast<int>(bits) - f.bias);
  }
  const uint64_t exponent_all_ones = LowMask(f.exponent_bits);
  const uint64_t sign_bit = f.has_sign ? uint64_t{1} << (f.exponent_bits + m) : 0;
  const bool negative = (bits & sign_bit) != 0;
  const uint64_t exponent = (bits >> m) & exponent_all_ones;
  const uint64_t fraction = bits & LowMask(m);
  const double nan = std::numeric_limits<double>::quiet_NaN();
  switch (f.specials) {
    case FloatSpecials::kIeee:
      if (exponent == exponent_all_ones) {
        if (fraction != 0) return negative ? -nan : nan;
        return negative ? -std::numeric_limits<double>::infinity()
                        : std::numeric_limits<double>::infinity();
      }
      break;
    case FloatSpecials::kFiniteNan:
      if (exponent == exponent_all_ones && fraction == LowMask(m)) return negative ? -nan : nan;
      break;
    case FloatSpecials::kFiniteUzNan:
      if (bits == sign_bit) return nan;
      break;
    case FloatSpecials::kFiniteOnly:
    case FloatSpecials::kPowerOfTwo:
      break;
  }
  double magnitude;
  if (exponent == 0) {
    magnitude = std::ldexp(static_cast<double>(fraction), 1 - f.bias - m);
  } else {
    magnitude = std::ldexp(static_cast<double>(fraction | (uint64_t{1} << m)),
                           static_cast<int>(exponent) - f.bias - m);
  }
  return negative ? -magnitude : magnitude;
}

}  // namespace

std::optional<FloatFormat> GetNarrowFloatFormat(PrimitiveType type) {
  switch (type) {
    case PrimitiveType::kF16:
      return FloatFormat{5, 10, 15, true, FloatSpecials::kIeee};
    case PrimitiveType::kBF16:
      return FloatFormat{8, 7, 127, true, FloatSpecials::kIeee};
    case PrimitiveType::kF8E5M2:
      return FloatFormat{5, 2, 15, true, FloatSpecials::kIeee};
    case PrimitiveType::kF8E4M3:
      return FloatFormat{4, 3, 7, true, FloatSpecials::kIeee};
    case PrimitiveType::kF8E3M4:
      return FloatFormat{3, 4, 3, true, FloatSpecials::kIeee};
    case PrimitiveType::kF8E4M3FN:
      return FloatFormat{4, 3, 7, true, FloatSpecials::kFiniteNan};
    case PrimitiveType::kF8E4M3FNUZ:
      return FloatFormat{4, 3, 8, true, FloatSpecials::kFiniteUzNan};
    case PrimitiveType::kF8E5M2FNUZ:
      return FloatFormat{5, 2, 16, true, FloatSpecials::kFiniteUzNan};
    case PrimitiveType::kF8E4M3B11FNUZ:
      return FloatFormat{4, 3, 11, true, FloatSpecials::kFiniteUzNan};
    case PrimitiveType::kF8E8M0FNU:
      return FloatFormat{8, 0, 127, false, FloatSpecials::kPowerOfTwo};
    case PrimitiveType::kF4E2M1FN:
      return FloatFormat{2, 1, 1, true, FloatSpecials::kFiniteOnly};
    case PrimitiveType::kF6E3M2FN:
      return FloatFormat{3, 2, 3, true, FloatSpecials::kFiniteOnly};
    case PrimitiveType::kF6E2M3FN:
      return FloatFormat{2, 3, 1, true, FloatSpecials::kFiniteOnly};
    case PrimitiveType::kInvalid:
    case PrimitiveType::kPred:
    case PrimitiveType::kS1:
    case PrimitiveType::kS2:
    case PrimitiveType::kS4:
    case PrimitiveType::kS8:
    case PrimitiveType::kS16:
    case PrimitiveType::kS32:
    case PrimitiveType::kS64:
    case PrimitiveType::kU1:
    case PrimitiveType::kU2:
    case PrimitiveType::kU4:
    case PrimitiveType::kU8:
    case PrimitiveType::kU16:
    case PrimitiveType::kU32:
    case PrimitiveType::kU64:
    case PrimitiveType::kF32:
    case PrimitiveType::kF64:
    case PrimitiveType::kC64:
    case PrimitiveType::kC128:
    case PrimitiveType::kTuple:
    case PrimitiveType::kOpaque:
    case PrimitiveType::kToken:
    case PrimitiveType::kBuffer:
      return std::nullopt;
  }
  return std::nullopt;
}

uint64_t EncodeFloat(PrimitiveType type, double value) {
  if (type == PrimitiveType::kF64) return DoubleBits(value);
  const std::optional<FloatFormat> format = FormatOf(type);
  return format.has_value() ? EncodeGeneric(*format, value) : 0;
}

double DecodeFloat(PrimitiveType type, uint64_t bits) {
  if (type == PrimitiveType::kF64) return std::bit_cast<double>(bits);
  const std::optional<FloatFormat> format = FormatOf(type);
  return format.has_value() ? DecodeGeneric(*format, bits) : 0.0;
}

double RoundToFloatType(PrimitiveType type, double value) {
  return DecodeFloat(type, EncodeFloat(type, value));
}

double MaxFiniteValue(PrimitiveType type) {
  if (type == PrimitiveType::kF64) return std::numeric_limits<double>::max();
  const std::optional<FloatFormat> f = FormatOf(type);
  if (!f.has_value()) return 0.0;
  const int m = f->mantissa_bits;
  const uint64_t exponent_all_ones = LowMask(f->exponent_bits);
  switch (f->specials) {
    case FloatSpecials::kIeee:
      return DecodeGeneric(*f, ((exponent_all_ones - 1) << m) | LowMask(m));
    case FloatSpecials::kFiniteNan:
      return DecodeGeneric(*f, (exponent_all_ones << m) | (LowMask(m) - 1));
    case FloatSpecials::kFiniteUzNan:
    case FloatSpecials::kFiniteOnly:
      return DecodeGeneric(*f, (exponent_all_ones << m) | LowMask(m));
    case FloatSpecials::kPowerOfTwo:
      return DecodeGeneric(*f, 0xfe);
  }
  return 0.0;
}

}  // namespace perfsim
