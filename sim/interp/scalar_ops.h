// Scalar semantics of the elementwise ops, on the compute types of element_types.h.
//
// XLA's rules where C++ leaves things undefined or differs:
//   - integer add/subtract/multiply/negate/abs wrap (done in unsigned arithmetic);
//   - x / 0 is -1 (all bits set) and x % 0 is x for integers; INT_MIN / -1 is INT_MIN and
//     INT_MIN % -1 is 0;
//   - shifts by a negative amount or by >= the bit width give 0 (shift-left, logical right)
//     or the sign fill (arithmetic right);
//   - integer power with a negative exponent is 0 unless the base is 1 or -1;
//   - maximum/minimum propagate NaN;
//   - sign keeps +-0 and NaN;
//   - complex (c64, c128): arithmetic, exp/log/sqrt/trig as std::complex computes them, with
//     expm1 and log1p kept accurate near 0 (XLA's elemental emitter does the same), sign
//     z / |z| (0 for 0) and power with XLA's special cases pow(z, 0) = 1 and pow(0, w) = 0 for
//     w real and positive; only EQ and NE compare complex values. abs, real and imag change
//     the element type and live in evaluator_elementwise.cc.
// Binary and unary ops are template-dispatched once per instruction (DispatchBinaryOp), so the
// per-element loop has no switch.
#ifndef PERFSIM_SIM_INTERP_SCALAR_OPS_H_
#define PERFSIM_SIM_INTERP_SCALAR_OPS_H_

#include <bit>
#include <cmath>
#include <complex>
#include <cstdint>
#include <limits>
#include <optional>
#include <type_traits>
#include <utility>

#include "absl/status/status.h"
#include "sim/interp/element_types.h"
#include "sim/ir/attributes.h"
#include "sim/ir/opcode.h"

namespace perfsim {
namespace interp {

// clang-format off
enum class UnaryOp {
  kAbs, kNegate, kExp, kExpm1, kLog, kLog1p, kSqrt, kRsqrt, kCbrt, kTanh, kLogistic, kSin, kCos,
  kTan, kErf, kFloor, kCeil, kRoundAfz, kRoundEven, kSign, kNot, kPopcnt, kClz, kCopy,
};
// clang-format on

// clang-format off
enum class BinaryOp {
  kAdd, kSubtract, kMultiply, kDivide, kRemainder, kMaximum, kMinimum, kPower, kAtan2, kAnd, kOr,
  kXor, kShiftLeft, kShiftRightArithmetic, kShiftRightLogical,
};
// clang-format on

// The unary / binary elementwise op of an opcode, or nullopt for other opcodes.
std::optional<UnaryOp> UnaryOpOf(Opcode opcode);
std::optional<BinaryOp> BinaryOpOf(Opcode opcode);

// OK when `op` is defined on elements of `kind`; InvalidArgument otherwise ("expected ...").
absl::Status CheckUnaryOpType(UnaryOp op, ElementKind kind, PrimitiveType type);
absl::Status CheckBinaryOpType(BinaryOp op, ElementKind kind, PrimitiveType type);
// OK unless an ordered direction (LT, LE, GT, GE) compares complex numbers.
absl::Status CheckCompareType(ComparisonDirection direction, ElementKind kind, PrimitiveType type);

template <typename T>
constexpr int kBitsOf = T::kType == PrimitiveType::kS4 || T::kType == PrimitiveType::kU4   ? 4
                        : T::kType == PrimitiveType::kS2 || T::kType == PrimitiveType::kU2 ? 2
                        : T::kType == PrimitiveType::kS1 || T::kType == PrimitiveType::kU1
                            ? 1
                            : static_cast<int>(sizeof(typename T::Compute) * 8);

// Unsigned view of a compute value, for wrapping arithmetic and bit ops.
template <typename T>
using UnsignedOf = std::make_unsigned_t<
    std::conditional_t<std::is_same_v<typename T::Compute, bool>, uint8_t, typename T::Compute>>;

// The unary ops whose formula reads the same on real and complex values (the std:: functions
// overload both): negate, exp, log, sqrt, rsqrt, tanh, logistic, sin, cos and tan; nullopt for
// the others. R is the real type (F for std::complex<F>, else V itself), so that the 1 of rsqrt
// and logistic stays real: 1 + w for a complex w adds to the real part only, where a complex
// 1 + 0i would turn a -0 imaginary part into +0.
template <UnaryOp kOp, typename R, typename V>
inline std::optional<V> ApplySharedUnary(V x) {
  switch (kOp) {
    case UnaryOp::kNegate:
      return -x;
    case UnaryOp::kExp:
      return std::exp(x);
    case UnaryOp::kLog:
      return std::log(x);
    case UnaryOp::kSqrt:
      return std::sqrt(x);
    case UnaryOp::kRsqrt:
      return R(1) / std::sqrt(x);
    case UnaryOp::kTanh:
      return std::tanh(x);
    case UnaryOp::kLogistic:
      return R(1) / (R(1) + std::exp(-x));
    case UnaryOp::kSin:
      return std::sin(x);
    case UnaryOp::kCos:
      return std::cos(x);
    case UnaryOp::kTan:
      return std::tan(x);
    case UnaryOp::kAbs:
    case UnaryOp::kExpm1:
    case UnaryOp::kLog1p:
    case UnaryOp::kCbrt:
    case UnaryOp::kErf:
    case UnaryOp::kFloor:
    case UnaryOp::kCeil:
    case UnaryOp::kRoundAfz:
    case UnaryOp::kRoundEven:
    case UnaryOp::kSign:
    case UnaryOp::kNot:
    case UnaryOp::kPopcnt:
    case UnaryOp::kClz:
    case UnaryOp::kCopy:
      break;
  }
  return std::nullopt;
}

// The unary ops XLA defines on complex numbers (CheckUnaryOpType lets no other through).
template <UnaryOp kOp, typename F>
inline std::complex<F> ApplyComplexUnary(std::complex<F> z) {
  if (std::optional<std::complex<F>> shared = ApplySharedUnary<kOp, F>(z)) return *shared;
  const F x = z.real();
  const F y = z.imag();
  switch (kOp) {
    case UnaryOp::kExpm1: {
      // exp(x + iy) - 1 = (expm1(x) cos y - 2 sin^2(y/2)) + i exp(x) sin y: no cancellation
      // for small |z|.
      const F half_sin = std::sin(y / F(2));
      return {std::expm1(x) * std::cos(y) - F(2) * half_sin * half_sin, std::exp(x) * std::sin(y)};
    }
    case UnaryOp::kLog1p: {
      // |1 + z|^2 - 1 = x (2 + x) + y^2 keeps the digits of small z; far from 0 use log(1 + z).
      const F real = std::fabs(x) < F(0.5) && std::fabs(y) < F(0.5)
                         ? F(0.5) * std::log1p(x * (F(2) + x) + y * y)
                         : std::log(std::abs(std::complex<F>(F(1) + x, y)));
      return {real, std::atan2(y, F(1) + x)};
    }
    case UnaryOp::kSign:
      return x == F(0) && y == F(0) ? z : z / std::abs(z);
    case UnaryOp::kNegate:  // the ApplySharedUnary ops
    case UnaryOp::kExp:
    case UnaryOp::kLog:
    case UnaryOp::kSqrt:
    case UnaryOp::kRsqrt:
    case UnaryOp::kTanh:
    case UnaryOp::kLogistic:
    case UnaryOp::kSin:
    case UnaryOp::kCos:
    case UnaryOp::kTan:
    case UnaryOp::kAbs:
    case UnaryOp::kCbrt:
    case UnaryOp::kErf:
    case UnaryOp::kFloor:
    case UnaryOp::kCeil:
    case UnaryOp::kRoundAfz:
    case UnaryOp::kRoundEven:
    case UnaryOp::kNot:
    case UnaryOp::kPopcnt:
    case UnaryOp::kClz:
    case UnaryOp::kCopy:
      break;
  }
  return z;
}

// pow for complex numbers: exp(w log z), with XLA's special cases (elemental_ir_emitter's
// EmitComplexPower): z^0 = 1 for every z, and 0^w = 0 for real w > 0.
template <typename F>
inline std::complex<F> ComplexPower(std::complex<F> z, std::complex<F> w) {
  if (w == std::complex<F>(0)) return {F(1), F(0)};
  if (z == std::complex<F>(0) && w.imag() == F(0) && w.real() > F(0)) return {F(0), F(0)};
  return std::pow(z, w);
}

template <typename T, UnaryOp kOp>
inline typename T::Compute ApplyUnary(typename T::Compute x) {
  using C = typename T::Compute;
  if constexpr (kOp == UnaryOp::kCopy) {
    return x;
  } else if constexpr (kIsComplex<T>) {
    return ApplyComplexUnary<kOp>(x);
  } else if constexpr (kIsPred<T>) {
    return kOp == UnaryOp::kNot ? !x : x;
  } else if constexpr (kIsFloat<T>) {
    if (std::optional<C> shared = ApplySharedUnary<kOp, C>(x)) return *shared;
    switch (kOp) {
      case UnaryOp::kAbs:
        return std::fabs(x);
      case UnaryOp::kExpm1:
        return std::expm1(x);
      case UnaryOp::kLog1p:
        return std::log1p(x);
      case UnaryOp::kCbrt:
        return std::cbrt(x);
      case UnaryOp::kErf:
        return std::erf(x);
      case UnaryOp::kFloor:
        return std::floor(x);
      case UnaryOp::kCeil:
        return std::ceil(x);
      case UnaryOp::kRoundAfz:
        return std::round(x);
      case UnaryOp::kRoundEven:
        return std::nearbyint(x);
      case UnaryOp::kSign:
        return x > C(0) ? C(1) : (x < C(0) ? C(-1) : x);
      case UnaryOp::kNegate:  // the ApplySharedUnary ops
      case UnaryOp::kExp:
      case UnaryOp::kLog:
      case UnaryOp::kSqrt:
      case UnaryOp::kRsqrt:
      case UnaryOp::kTanh:
      case UnaryOp::kLogistic:
      case UnaryOp::kSin:
      case UnaryOp::kCos:
      case UnaryOp::kTan:
      case UnaryOp::kNot:
      case UnaryOp::kPopcnt:
      case UnaryOp::kClz:
      case UnaryOp::kCopy:
        break;
    }
    return x;
  } else {
    using U = UnsignedOf<T>;
    constexpr int kBits = kBitsOf<T>;
    constexpr U kMask = kBits >= static_cast<int>(sizeof(U) * 8)
                            ? static_cast<U>(~U(0))
                            : static_cast<U>((U(1) << kBits) - 1);
    const U u = static_cast<U>(x);
    switch (kOp) {
      case UnaryOp::kAbs:
        if constexpr (std::is_signed_v<C>) return T::Round(static_cast<C>(x < 0 ? U(0) - u : u));
        return x;
      case UnaryOp::kNegate:
        return T::Round(static_cast<C>(U(0) - u));
      case UnaryOp::kSign:
        if constexpr (std::is_signed_v<C>) return static_cast<C>(x > 0 ? 1 : (x < 0 ? -1 : 0));
        return static_cast<C>(x != 0 ? 1 : 0);
      case UnaryOp::kNot:
        return T::Round(static_cast<C>(~u));
      case UnaryOp::kPopcnt:
        return static_cast<C>(std::popcount(static_cast<U>(u & kMask)));
      case UnaryOp::kClz:
        return static_cast<C>(std::countl_zero(static_cast<U>(u & kMask)) -
                              (static_cast<int>(sizeof(U) * 8) - kBits));
      default:
        break;
    }
    return x;
  }
}

template <typename C>
inline bool IsNan(C x) {
  if constexpr (std::is_floating_point_v<C>) {
    return std::isnan(x);
  } else {
    return false;
  }
}

// The binary ops whose formula reads the same on real and complex values: a + b, a - b, a * b
// and a / b; nullopt for the others.
template <BinaryOp kOp, typename V>
inline std::optional<V> ApplySharedBinary(V a, V b) {
  switch (kOp) {
    case BinaryOp::kAdd:
      return a + b;
    case BinaryOp::kSubtract:
      return a - b;
    case BinaryOp::kMultiply:
      return a * b;
    case BinaryOp::kDivide:
      return a / b;
    case BinaryOp::kRemainder:
    case BinaryOp::kMaximum:
    case BinaryOp::kMinimum:
    case BinaryOp::kPower:
    case BinaryOp::kAtan2:
    case BinaryOp::kAnd:
    case BinaryOp::kOr:
    case BinaryOp::kXor:
    case BinaryOp::kShiftLeft:
    case BinaryOp::kShiftRightArithmetic:
    case BinaryOp::kShiftRightLogical:
      break;
  }
  return std::nullopt;
}

template <typename T, BinaryOp kOp>
inline typename T::Compute ApplyBinary(typename T::Compute a, typename T::Compute b) {
  using C = typename T::Compute;
  if constexpr (kIsPred<T>) {
    switch (kOp) {
      case BinaryOp::kAnd:
      case BinaryOp::kMinimum:
      case BinaryOp::kMultiply:
        return a && b;
      case BinaryOp::kOr:
      case BinaryOp::kMaximum:
      case BinaryOp::kAdd:
        return a || b;
      case BinaryOp::kXor:
      case BinaryOp::kSubtract:
        return a != b;
      default:
        return a;
    }
  } else if constexpr (kIsComplex<T>) {
    if (std::optional<C> shared = ApplySharedBinary<kOp>(a, b)) return *shared;
    switch (kOp) {
      case BinaryOp::kPower:
        return ComplexPower(a, b);
      default:  // not defined on complex numbers: CheckBinaryOpType refuses them
        return a;
    }
  } else if constexpr (kIsFloat<T>) {
    if (std::optional<C> shared = ApplySharedBinary<kOp>(a, b)) return *shared;
    switch (kOp) {
      case BinaryOp::kRemainder:
        return std::fmod(a, b);
      case BinaryOp::kMaximum:
        if (IsNan(a) || IsNan(b)) return std::numeric_limits<C>::quiet_NaN();
        return a > b ? a : b;
      case BinaryOp::kMinimum:
        if (IsNan(a) || IsNan(b)) return std::numeric_limits<C>::quiet_NaN();
        return a < b ? a : b;
      case BinaryOp::kPower:
        return std::pow(a, b);
      case BinaryOp::kAtan2:
        return std::atan2(a, b);
      default:
        return a;
    }
  } else {
    using U = UnsignedOf<T>;
    constexpr int kBits = kBitsOf<T>;
    const U ua = static_cast<U>(a);
    const U ub = static_cast<U>(b);
    switch (kOp) {
      case BinaryOp::kAdd:
        return T::Round(static_cast<C>(ua + ub));
      case BinaryOp::kSubtract:
        return T::Round(static_cast<C>(ua - ub));
      case BinaryOp::kMultiply:
        return T::Round(static_cast<C>(ua * ub));
      case BinaryOp::kDivide:
        if (b == 0) return T::Round(static_cast<C>(~U(0)));
        if constexpr (std::is_signed_v<C>) {
          if (b == C(-1)) return T::Round(static_cast<C>(U(0) - ua));  // wraps for INT_MIN
        }
        return static_cast<C>(a / b);
      case BinaryOp::kRemainder:
        if (b == 0) return a;
        if constexpr (std::is_signed_v<C>) {
          if (b == C(-1)) return 0;
        }
        return static_cast<C>(a % b);
      case BinaryOp::kMaximum:
        return a > b ? a : b;
      case BinaryOp::kMinimum:
        return a < b ? a : b;
      case BinaryOp::kPower: {
        if constexpr (std::is_signed_v<C>) {
          if (b < 0) {
            if (a == 1) return 1;
            if (a == -1) return (ub & 1) ? C(-1) : C(1);
            return 0;
          }
        }
        U result = 1;
        U base = ua;
        U e = ub;
        while (e != 0) {
          if (e & 1) result = static_cast<U>(result * base);
          base = static_cast<U>(base * base);
          e >>= 1;
        }
        return T::Round(static_cast<C>(result));
      }
      case BinaryOp::kAnd:
        return T::Round(static_cast<C>(ua & ub));
      case BinaryOp::kOr:
        return T::Round(static_cast<C>(ua | ub));
      case BinaryOp::kXor:
        return T::Round(static_cast<C>(ua ^ ub));
      case BinaryOp::kShiftLeft:
        if (ub >= static_cast<U>(kBits)) return 0;  // also catches negative amounts
        return T::Round(static_cast<C>(static_cast<U>(ua << ub)));
      case BinaryOp::kShiftRightLogical: {
        if (ub >= static_cast<U>(kBits)) return 0;
        constexpr U kMask = kBits >= static_cast<int>(sizeof(U) * 8)
                                ? static_cast<U>(~U(0))
                                : static_cast<U>((U(1) << kBits) - 1);
        return T::Round(static_cast<C>(static_cast<U>((ua & kMask) >> ub)));
      }
      case BinaryOp::kShiftRightArithmetic: {
        using S = std::make_signed_t<U>;
        // Sign-extend from kBits so sub-byte and unsigned types shift their own top bit.
        const int64_t wide =
            static_cast<int64_t>(static_cast<S>(static_cast<U>(ua << (sizeof(U) * 8 - kBits)))) >>
            (sizeof(U) * 8 - kBits);
        if (ub >= static_cast<U>(kBits)) return T::Round(static_cast<C>(wide < 0 ? -1 : 0));
        return T::Round(static_cast<C>(wide >> ub));
      }
      case BinaryOp::kAtan2:
        break;
    }
    return a;
  }
}

// Calls f(std::integral_constant<UnaryOp, op>{}) so the op is a compile-time constant.
template <typename F>
absl::Status DispatchUnaryOp(UnaryOp op, F&& f) {
#define PERFSIM_UNARY_CASE(name) \
  case UnaryOp::name:            \
    return f(std::integral_constant<UnaryOp, UnaryOp::name>{});
  switch (op) {
    PERFSIM_UNARY_CASE(kAbs)
    PERFSIM_UNARY_CASE(kNegate)
    PERFSIM_UNARY_CASE(kExp) PERFSIM_UNARY_CASE(kExpm1) PERFSIM_UNARY_CASE(kLog)
        PERFSIM_UNARY_CASE(kLog1p) PERFSIM_UNARY_CASE(kSqrt) PERFSIM_UNARY_CASE(kRsqrt)
            PERFSIM_UNARY_CASE(kCbrt) PERFSIM_UNARY_CASE(kTanh) PERFSIM_UNARY_CASE(kLogistic)
                PERFSIM_UNARY_CASE(kSin) PERFSIM_UNARY_CASE(kCos) PERFSIM_UNARY_CASE(kTan)
                    PERFSIM_UNARY_CASE(kErf) PERFSIM_UNARY_CASE(kFloor) PERFSIM_UNARY_CASE(kCeil)
                        PERFSIM_UNARY_CASE(kRoundAfz) PERFSIM_UNARY_CASE(kRoundEven)
                            PERFSIM_UNARY_CASE(kSign) PERFSIM_UNARY_CASE(kNot)
                                PERFSIM_UNARY_CASE(kPopcnt) PERFSIM_UNARY_CASE(kClz)
                                    PERFSIM_UNARY_CASE(kCopy)
  }
#undef PERFSIM_UNARY_CASE
  return absl::InternalError("unknown unary op");
}

template <typename F>
absl::Status DispatchBinaryOp(BinaryOp op, F&& f) {
#define PERFSIM_BINARY_CASE(name) \
  case BinaryOp::name:            \
    return f(std::integral_constant<BinaryOp, BinaryOp::name>{});
  switch (op) {
    PERFSIM_BINARY_CASE(kAdd)
    PERFSIM_BINARY_CASE(kSubtract)
    PERFSIM_BINARY_CASE(kMultiply) PERFSIM_BINARY_CASE(kDivide) PERFSIM_BINARY_CASE(kRemainder)
        PERFSIM_BINARY_CASE(kMaximum) PERFSIM_BINARY_CASE(kMinimum) PERFSIM_BINARY_CASE(kPower)
            PERFSIM_BINARY_CASE(kAtan2) PERFSIM_BINARY_CASE(kAnd) PERFSIM_BINARY_CASE(kOr)
                PERFSIM_BINARY_CASE(kXor) PERFSIM_BINARY_CASE(kShiftLeft)
                    PERFSIM_BINARY_CASE(kShiftRightArithmetic)
                        PERFSIM_BINARY_CASE(kShiftRightLogical)
  }
#undef PERFSIM_BINARY_CASE
  return absl::InternalError("unknown binary op");
}

// Total order on floats (-NaN < -inf < ... < -0 < +0 < ... < inf < NaN), as an integer key.
inline int64_t TotalOrderKey(double x) {
  const int64_t bits = std::bit_cast<int64_t>(x);
  return bits < 0 ? (bits ^ std::numeric_limits<int64_t>::max()) : bits;
}

// `a <direction> b` on ordered values (C++'s own comparison operators).
template <typename V>
inline bool CompareOrdered(ComparisonDirection direction, const V& a, const V& b) {
  switch (direction) {
    case ComparisonDirection::kEq:
      return a == b;
    case ComparisonDirection::kNe:
      return a != b;
    case ComparisonDirection::kGe:
      return a >= b;
    case ComparisonDirection::kGt:
      return a > b;
    case ComparisonDirection::kLe:
      return a <= b;
    case ComparisonDirection::kLt:
      return a < b;
  }
  return false;
}

// compare(a, b), direction=..., for one element type. `total_order` selects TOTALORDER for
// floats (the default FLOAT comparison is IEEE: every comparison with NaN is false but NE).
template <typename T>
inline bool ApplyCompare(ComparisonDirection direction, bool total_order, typename T::Compute a,
                         typename T::Compute b) {
  if constexpr (kIsComplex<T>) {
    // Only EQ and NE are defined on complex numbers (CheckCompareType refuses the others).
    return direction == ComparisonDirection::kEq   ? a == b
           : direction == ComparisonDirection::kNe ? a != b
                                                   : false;
  } else if constexpr (kIsFloat<T>) {
    if (total_order) {
      return CompareOrdered(direction, TotalOrderKey(static_cast<double>(a)),
                            TotalOrderKey(static_cast<double>(b)));
    }
    return CompareOrdered(direction, a, b);
  } else {
    return CompareOrdered(direction, a, b);
  }
}

// Converts a compute value of one type to the compute value of another with XLA's convert
// semantics: float -> integer truncates toward zero, saturates, and maps NaN to 0; anything
// -> pred is `!= 0`; integer -> integer wraps; real -> complex has imaginary part 0.
// complex -> real converts the real part, as XLA:CPU does (complex -> pred is refused by
// EvalConvert before it is reached).
template <typename From, typename To>
inline typename To::Compute ConvertValue(typename From::Compute x) {
  using F = typename From::Compute;
  using C = typename To::Compute;
  if constexpr (kIsComplex<To>) {
    using Part = typename To::Component;
    if constexpr (kIsComplex<From>) {
      return C(static_cast<Part>(x.real()), static_cast<Part>(x.imag()));
    } else {
      return C(static_cast<Part>(x), Part(0));
    }
  } else if constexpr (kIsComplex<From>) {
    using Part = typename From::Component;
    using PartTraits = NativeFloatTraits<sizeof(Part) == 4 ? PrimitiveType::kF32
                                                           : PrimitiveType::kF64,
                                         Part>;
    return ConvertValue<PartTraits, To>(x.real());
  } else if constexpr (kIsPred<To>) {
    return x != F(0);
  } else if constexpr (kIsFloat<To>) {
    return static_cast<C>(x);
  } else if constexpr (kIsFloat<From>) {
    if (IsNan(x)) return C(0);
    constexpr int kBits = kBitsOf<To>;  // sub-byte types saturate at their own width
    const double v = static_cast<double>(x);
    if constexpr (To::kKind == ElementKind::kSigned) {
      const double limit = std::ldexp(1.0, kBits - 1);
      if (v >= limit) {
        return To::Round(static_cast<C>(std::numeric_limits<int64_t>::max() >> (64 - kBits)));
      }
      if (v <= -limit) {
        return To::Round(static_cast<C>(std::numeric_limits<int64_t>::min() >> (64 - kBits)));
      }
      return To::Round(static_cast<C>(static_cast<int64_t>(v)));
    } else {
      if (v >= std::ldexp(1.0, kBits)) return To::Round(static_cast<C>(~C(0)));
      if (v <= 0) return C(0);
      return To::Round(static_cast<C>(static_cast<uint64_t>(v)));
    }
  } else {
    return To::Round(static_cast<C>(x));
  }
}

}  // namespace interp
}  // namespace perfsim

#endif  // PERFSIM_SIM_INTERP_SCALAR_OPS_H_
