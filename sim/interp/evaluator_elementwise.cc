// Elementwise ops: unary, binary, compare, select, clamp, convert, stochastic-convert,
// bitcast-convert, reduce-precision, real/imag, iota, map and rng. Each instruction
// dispatches its element type (and op) once; the per-element loops are plain.
#include <bit>
#include <cmath>
#include <cstring>
#include <numbers>
#include <utility>

#include "absl/strings/str_cat.h"
#include "sim/interp/array_util.h"
#include "sim/interp/element_types.h"
#include "sim/interp/evaluator.h"
#include "sim/interp/simd_kernels.h"
#include "sim/util/status.h"

namespace perfsim {
namespace interp {

namespace {

// Which elementwise op each opcode is (a table rather than a second switch over Opcode, whose
// one exhaustive switch lives in evaluator.cc).
constexpr std::pair<Opcode, UnaryOp> kUnaryOps[] = {
    {Opcode::kAbs, UnaryOp::kAbs},
    {Opcode::kNegate, UnaryOp::kNegate},
    {Opcode::kExp, UnaryOp::kExp},
    {Opcode::kExpm1, UnaryOp::kExpm1},
    {Opcode::kLog, UnaryOp::kLog},
    {Opcode::kLog1p, UnaryOp::kLog1p},
    {Opcode::kSqrt, UnaryOp::kSqrt},
    {Opcode::kRsqrt, UnaryOp::kRsqrt},
    {Opcode::kCbrt, UnaryOp::kCbrt},
    {Opcode::kTanh, UnaryOp::kTanh},
    {Opcode::kLogistic, UnaryOp::kLogistic},
    {Opcode::kSin, UnaryOp::kSin},
    {Opcode::kCos, UnaryOp::kCos},
    {Opcode::kTan, UnaryOp::kTan},
    {Opcode::kErf, UnaryOp::kErf},
    {Opcode::kFloor, UnaryOp::kFloor},
    {Opcode::kCeil, UnaryOp::kCeil},
    {Opcode::kRoundNearestAfz, UnaryOp::kRoundAfz},
    {Opcode::kRoundNearestEven, UnaryOp::kRoundEven},
    {Opcode::kSign, UnaryOp::kSign},
    {Opcode::kNot, UnaryOp::kNot},
    {Opcode::kPopcnt, UnaryOp::kPopcnt},
    {Opcode::kClz, UnaryOp::kClz},
    {Opcode::kCopy, UnaryOp::kCopy},
};

constexpr std::pair<Opcode, BinaryOp> kBinaryOps[] = {
    {Opcode::kAdd, BinaryOp::kAdd},
    {Opcode::kSubtract, BinaryOp::kSubtract},
    {Opcode::kMultiply, BinaryOp::kMultiply},
    {Opcode::kDivide, BinaryOp::kDivide},
    {Opcode::kRemainder, BinaryOp::kRemainder},
    {Opcode::kMaximum, BinaryOp::kMaximum},
    {Opcode::kMinimum, BinaryOp::kMinimum},
    {Opcode::kPower, BinaryOp::kPower},
    {Opcode::kAtan2, BinaryOp::kAtan2},
    {Opcode::kAnd, BinaryOp::kAnd},
    {Opcode::kOr, BinaryOp::kOr},
    {Opcode::kXor, BinaryOp::kXor},
    {Opcode::kShiftLeft, BinaryOp::kShiftLeft},
    {Opcode::kShiftRightArithmetic, BinaryOp::kShiftRightArithmetic},
    {Opcode::kShiftRightLogical, BinaryOp::kShiftRightLogical},
};

}  // namespace

std::optional<UnaryOp> UnaryOpOf(Opcode opcode) {
  for (const auto& [code, op] : kUnaryOps) {
    if (code == opcode) return op;
  }
  return std::nullopt;
}

std::optional<BinaryOp> BinaryOpOf(Opcode opcode) {
  for (const auto& [code, op] : kBinaryOps) {
    if (code == opcode) return op;
  }
  return std::nullopt;
}

absl::Status CheckUnaryOpType(UnaryOp op, ElementKind kind, PrimitiveType type) {
  const bool is_int = kind == ElementKind::kSigned || kind == ElementKind::kUnsigned;
  const bool is_float = kind == ElementKind::kFloat;
  bool ok = false;
  switch (op) {
    case UnaryOp::kCopy:
      ok = true;
      break;
    case UnaryOp::kNot:
      ok = is_int || kind == ElementKind::kPred;
      break;
    case UnaryOp::kAbs:
    case UnaryOp::kNegate:
    case UnaryOp::kSign:
      ok = kind != ElementKind::kPred;
      break;
    case UnaryOp::kPopcnt:
    case UnaryOp::kClz:
      ok = is_int;
      break;
    case UnaryOp::kExp:
    case UnaryOp::kExpm1:
    case UnaryOp::kLog:
    case UnaryOp::kLog1p:
    case UnaryOp::kSqrt:
    case UnaryOp::kRsqrt:
    case UnaryOp::kTanh:
    case UnaryOp::kLogistic:
    case UnaryOp::kSin:
    case UnaryOp::kCos:
    case UnaryOp::kTan:
      ok = is_float || kind == ElementKind::kComplex;
      break;
    case UnaryOp::kCbrt:
    case UnaryOp::kErf:
    case UnaryOp::kFloor:
    case UnaryOp::kCeil:
    case UnaryOp::kRoundAfz:
    case UnaryOp::kRoundEven:
      ok = is_float;
      break;
  }
  if (ok) return absl::OkStatus();
  return absl::InvalidArgumentError(
      absl::StrCat("expected an element type the op is defined on; got ", PrimitiveTypeName(type)));
}

absl::Status CheckBinaryOpType(BinaryOp op, ElementKind kind, PrimitiveType type) {
  const bool is_int = kind == ElementKind::kSigned || kind == ElementKind::kUnsigned;
  const bool is_complex = kind == ElementKind::kComplex;
  bool ok = false;
  switch (op) {
    case BinaryOp::kAdd:
    case BinaryOp::kSubtract:
    case BinaryOp::kMultiply:
      ok = true;
      break;
    case BinaryOp::kDivide:
    case BinaryOp::kPower:
      ok = kind != ElementKind::kPred;
      break;
    case BinaryOp::kMaximum:
    case BinaryOp::kMinimum:
      // No order on complex numbers (README: ops not run on CPU).
      ok = !is_complex;
      break;
    case BinaryOp::kRemainder:
      ok = is_int || kind == ElementKind::kFloat;
      break;
    case BinaryOp::kAtan2:
      ok = kind == ElementKind::kFloat;
      break;
    case BinaryOp::kAnd:
    case BinaryOp::kOr:
    case BinaryOp::kXor:
      ok = is_int || kind == ElementKind::kPred;
      break;
    case BinaryOp::kShiftLeft:
    case BinaryOp::kShiftRightArithmetic:
    case BinaryOp::kShiftRightLogical:
      ok = is_int;
      break;
  }
  if (ok) return absl::OkStatus();
  return absl::InvalidArgumentError(
      absl::StrCat("expected an element type the op is defined on; got ", PrimitiveTypeName(type)));
}

absl::Status CheckCompareType(ComparisonDirection direction, ElementKind kind,
                              PrimitiveType type) {
  if (kind != ElementKind::kComplex || direction == ComparisonDirection::kEq ||
      direction == ComparisonDirection::kNe) {
    return absl::OkStatus();
  }
  return absl::InvalidArgumentError(absl::StrCat(
      "expected direction EQ or NE for ", PrimitiveTypeName(type),
      " (complex numbers have no order); got ", ComparisonDirectionName(direction)));
}

namespace {

absl::StatusOr<std::shared_ptr<Literal>> AllocateLike(DeviceEvaluator& ev, PrimitiveType type,
                                                      const Shape& dims_from) {
  return ev.Allocate(Shape::Array(type, dims_from.dimensions()));
}

// The result buffer of an elementwise op of `type` over `dims_from`'s dimensions: an operand's
// own buffer when it dies here (DeviceEvaluator::TakeOperandBuffer; element i of it is read
// before element i of the result is written), else a new one.
absl::StatusOr<std::shared_ptr<Literal>> ElementwiseResult(DeviceEvaluator& ev, PrimitiveType type,
                                                           const Shape& dims_from,
                                                           int64_t operand_count) {
  const Shape shape = Shape::Array(type, dims_from.dimensions());
  for (int64_t k = 0; k < operand_count; ++k) {
    if (std::shared_ptr<Literal> own = ev.TakeOperandBuffer(k, shape)) return own;
  }
  return ev.Allocate(shape);
}

// Operands of an elementwise op must have the result's dimensions, or be scalars (broadcast).
absl::Status CheckElementwiseOperand(const Value& operand, const Shape& result, int64_t k) {
  if (!operand.is_array()) return absl::InvalidArgumentError("expected array operands");
  const Shape& s = operand.array_shape();
  if (s.dimensions() == result.dimensions() || s.rank() == 0) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat("expected operand ", k, " to be ",
                                                 result.ToString(false), " or a scalar; got ",
                                                 s.ToString(false)));
}

// Stride of an operand in an elementwise loop: 1, or 0 for a broadcast scalar.
int64_t ElementStride(const Value& operand) { return operand.array_shape().rank() == 0 ? 0 : 1; }

template <typename UInt>
UInt ReducePrecisionBits(UInt x, int src_exponent_bits, int src_mantissa_bits, int exponent_bits,
                         int mantissa_bits) {
  // XLA's algorithm (elemental_ir_emitter: EmitReducePrecisionIR): round the mantissa to
  // nearest even, then flush exponents out of the reduced range to +-0 / +-inf. NaNs stay NaN.
  const int total_bits = static_cast<int>(sizeof(UInt) * 8);
  const UInt sign_mask = static_cast<UInt>(UInt(1) << (total_bits - 1));
  const UInt exp_mask =
      static_cast<UInt>(((UInt(1) << src_exponent_bits) - 1) << src_mantissa_bits);
  const UInt mant_mask = static_cast<UInt>((UInt(1) << src_mantissa_bits) - 1);
  const bool is_nan = (x & exp_mask) == exp_mask && (x & mant_mask) != 0;
  const UInt original = x;
  if (mantissa_bits < src_mantissa_bits) {
    const int shift = src_mantissa_bits - mantissa_bits;
    const UInt last_bit_mask = static_cast<UInt>(UInt(1) << shift);
    const UInt base_bias = static_cast<UInt>((last_bit_mask >> 1) - 1);
    const UInt last_bit = static_cast<UInt>((x & last_bit_mask) >> shift);
    const UInt truncation_mask = static_cast<UInt>(~(last_bit_mask - 1));
    x = static_cast<UInt>((x + last_bit + base_bias) & truncation_mask);
  }
  if (exponent_bits < src_exponent_bits) {
    const int64_t bias = (int64_t{1} << (src_exponent_bits - 1)) - 1;
    const int64_t reduced_bias = (int64_t{1} << (exponent_bits - 1)) - 1;
    const UInt max_exp =
        static_cast<UInt>(static_cast<UInt>(bias + reduced_bias) << src_mantissa_bits);
    const UInt min_exp =
        static_cast<UInt>(static_cast<UInt>(bias - reduced_bias) << src_mantissa_bits);
    const UInt exponent = x & exp_mask;
    const UInt signed_zero = x & sign_mask;
    if (exponent > max_exp) {
      x = signed_zero | exp_mask;
    } else if (exponent <= min_exp) {
      x = signed_zero;
    }
  }
  if (is_nan)
    return mantissa_bits > 0 ? original : static_cast<UInt>((original & sign_mask) | exp_mask);
  return x;
}

enum class Part { kReal, kImag, kAbs };

// real(z), imag(z) or |z| of a complex array, in the component type (f32 for c64).
absl::StatusOr<Value> ComplexPart(DeviceEvaluator& ev, const Value& operand, Part part) {
  const Shape& shape = operand.array_shape();
  const PrimitiveType type = shape.element_type();
  const PrimitiveType component =
      type == PrimitiveType::kC128 ? PrimitiveType::kF64 : PrimitiveType::kF32;
  PERFSIM_ASSIGN_OR_RETURN(std::shared_ptr<Literal> out, AllocateLike(ev, component, shape));
  const int64_t n = shape.ElementCount();
  PERFSIM_RETURN_IF_ERROR(DispatchElementType(type, "", [&](auto traits) {
    using T = decltype(traits);
    if constexpr (!kIsComplex<T>) {
      return absl::InternalError("expected a complex operand");
    } else {
      using C = typename T::Component;
      using Out = NativeFloatTraits<sizeof(C) == 4 ? PrimitiveType::kF32 : PrimitiveType::kF64, C>;
      const uint8_t* in = operand.data();
      uint8_t* o = out->mutable_data().data();
      for (int64_t i = 0; i < n; ++i) {
        const typename T::Compute z = T::Load(in, i);
        switch (part) {
          case Part::kReal:
            Out::Store(o, i, z.real());
            break;
          case Part::kImag:
            Out::Store(o, i, z.imag());
            break;
          case Part::kAbs:
            Out::Store(o, i, std::abs(z));
            break;
        }
      }
      return absl::OkStatus();
    }
  }));
  return Value::Array(std::move(out));
}

}  // namespace

absl::StatusOr<Value> EvalRealImag(DeviceEvaluator& ev, const Instruction& instruction,
                                   OperandValues operands) {
  // real(x) of a real array is x and imag(x) is zeros of its type, as XLA defines them.
  const bool imag = instruction.opcode() == Opcode::kImag;
  const Shape& shape = operands[0]->array_shape();
  const PrimitiveType type = shape.element_type();
  if (IsComplex(type)) return ComplexPart(ev, *operands[0], imag ? Part::kImag : Part::kReal);
  if (!IsFloatingPoint(type)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "expected a floating-point or complex operand; got ", PrimitiveTypeName(type)));
  }
  if (!imag) return *operands[0];
  PERFSIM_ASSIGN_OR_RETURN(std::shared_ptr<Literal> zeros, AllocateLike(ev, type, shape));
  return Value::Array(std::move(zeros));
}

absl::StatusOr<Value> EvalUnary(DeviceEvaluator& ev, const Instruction& instruction,
                                OperandValues operands) {
  const std::optional<UnaryOp> op = UnaryOpOf(instruction.opcode());
  if (!op.has_value()) return absl::InternalError("not a unary op");
  const Shape& shape = operands[0]->array_shape();
  const PrimitiveType type = shape.element_type();
  if (*op == UnaryOp::kCopy) return *operands[0];
  if (*op == UnaryOp::kAbs && IsComplex(type)) return ComplexPart(ev, *operands[0], Part::kAbs);
  PERFSIM_ASSIGN_OR_RETURN(std::shared_ptr<Literal> out, ElementwiseResult(ev, type, shape, 1));
  const int64_t n = shape.ElementCount();
  PERFSIM_RETURN_IF_ERROR(DispatchElementType(type, "", [&](auto traits) {
    using T = decltype(traits);
    PERFSIM_RETURN_IF_ERROR(CheckUnaryOpType(*op, T::kKind, type));
    return DispatchUnaryOp(*op, [&](auto op_constant) {
      constexpr UnaryOp kOp = decltype(op_constant)::value;
      const uint8_t* in = operands[0]->data();
      uint8_t* o = out->mutable_data().data();
      const int64_t count = n;  // a local: stores through `o` cannot change it
      for (int64_t i = 0; i < count; ++i) T::Store(o, i, ApplyUnary<T, kOp>(T::Load(in, i)));
      return absl::OkStatus();
    });
  }));
  return Value::Array(std::move(out));
}

absl::StatusOr<Value> EvalBinary(DeviceEvaluator& ev, const Instruction& instruction,
                                 OperandValues operands) {
  const std::optional<BinaryOp> op = BinaryOpOf(instruction.opcode());
  if (!op.has_value()) return absl::InternalError("not a binary op");
  const Shape& result = instruction.shape();
  PERFSIM_RETURN_IF_ERROR(CheckElementwiseOperand(*operands[0], result, 0));
  PERFSIM_RETURN_IF_ERROR(CheckElementwiseOperand(*operands[1], result, 1));
  const PrimitiveType type = operands[0]->array_shape().element_type();
  if (operands[1]->array_shape().element_type() != type) {
    return absl::InvalidArgumentError(
        absl::StrCat("expected operands of one element type; got ", PrimitiveTypeName(type),
                     " and ", PrimitiveTypeName(operands[1]->array_shape().element_type())));
  }
  PERFSIM_ASSIGN_OR_RETURN(std::shared_ptr<Literal> out, ElementwiseResult(ev, type, result, 2));
  const int64_t n = result.ElementCount();
  const int64_t sa = ElementStride(*operands[0]);
  const int64_t sb = ElementStride(*operands[1]);
  if (sa == 1 && sb == 1 &&
      ((type == PrimitiveType::kBF16 &&
        simd::Bf16Binary(*op, operands[0]->data(), operands[1]->data(), out->mutable_data().data(),
                         n)) ||
       (type == PrimitiveType::kF32 &&
        simd::F32Binary(*op, operands[0]->data(), operands[1]->data(), out->mutable_data().data(),
                        n)))) {
    return Value::Array(std::move(out));
  }
  PERFSIM_RETURN_IF_ERROR(DispatchElementType(type, "", [&](auto traits) {
    using T = decltype(traits);
    PERFSIM_RETURN_IF_ERROR(CheckBinaryOpType(*op, T::kKind, type));
    return DispatchBinaryOp(*op, [&](auto op_constant) {
      constexpr BinaryOp kOp = decltype(op_constant)::value;
      const uint8_t* a = operands[0]->data();
      const uint8_t* b = operands[1]->data();
      uint8_t* o = out->mutable_data().data();
      const int64_t count = n;  // a local: stores through `o` cannot change it
      if (sa == 1 && sb == 1) {
        for (int64_t i = 0; i < count; ++i) {
          T::Store(o, i, ApplyBinary<T, kOp>(T::Load(a, i), T::Load(b, i)));
        }
      } else {
        for (int64_t i = 0; i < count; ++i) {
          T::Store(o, i, ApplyBinary<T, kOp>(T::Load(a, i * sa), T::Load(b, i * sb)));
        }
      }
      return absl::OkStatus();
    });
  }));
  return Value::Array(std::move(out));
}

absl::StatusOr<Value> EvalIsFinite(DeviceEvaluator& ev, const Instruction& instruction,
                                   OperandValues operands) {
  const Shape& shape = operands[0]->array_shape();
  PERFSIM_ASSIGN_OR_RETURN(std::shared_ptr<Literal> out,
                           AllocateLike(ev, PrimitiveType::kPred, shape));
  const int64_t n = shape.ElementCount();
  PERFSIM_RETURN_IF_ERROR(DispatchElementType(shape.element_type(), "", [&](auto traits) {
    using T = decltype(traits);
    if constexpr (!kIsFloat<T>) {
      return absl::InvalidArgumentError(absl::StrCat("expected a floating-point operand; got ",
                                                     PrimitiveTypeName(shape.element_type())));
    } else {
      const uint8_t* in = operands[0]->data();
      uint8_t* o = out->mutable_data().data();
      for (int64_t i = 0; i < n; ++i) PredTraits::Store(o, i, std::isfinite(T::Load(in, i)));
      return absl::OkStatus();
    }
  }));
  return Value::Array(std::move(out));
}

absl::StatusOr<Value> EvalCompare(DeviceEvaluator& ev, const Instruction& instruction,
                                  OperandValues operands) {
  const InstructionAttributes& attrs = instruction.attributes();
  if (!attrs.comparison_direction.has_value()) {
    return absl::InvalidArgumentError("expected direction=; got none");
  }
  const ComparisonDirection direction = *attrs.comparison_direction;
  const bool total_order = attrs.comparison_type == "TOTALORDER";
  const Shape& result = instruction.shape();
  PERFSIM_RETURN_IF_ERROR(CheckElementwiseOperand(*operands[0], result, 0));
  PERFSIM_RETURN_IF_ERROR(CheckElementwiseOperand(*operands[1], result, 1));
  const PrimitiveType type = operands[0]->array_shape().element_type();
  PERFSIM_ASSIGN_OR_RETURN(std::shared_ptr<Literal> out,
                           AllocateLike(ev, PrimitiveType::kPred, result));
  const int64_t n = result.ElementCount();
  const int64_t sa = ElementStride(*operands[0]);
  const int64_t sb = ElementStride(*operands[1]);
  PERFSIM_RETURN_IF_ERROR(DispatchElementType(type, "", [&](auto traits) {
    using T = decltype(traits);
    PERFSIM_RETURN_IF_ERROR(CheckCompareType(direction, T::kKind, type));
    const uint8_t* a = operands[0]->data();
    const uint8_t* b = operands[1]->data();
    uint8_t* o = out->mutable_data().data();
    for (int64_t i = 0; i < n; ++i) {
      PredTraits::Store(
          o, i, ApplyCompare<T>(direction, total_order, T::Load(a, i * sa), T::Load(b, i * sb)));
    }
    return absl::OkStatus();
  }));
  return Value::Array(std::move(out));
}

absl::StatusOr<Value> EvalSelect(DeviceEvaluator& ev, const Instruction& instruction,
                                 OperandValues operands) {
  const Shape& result = instruction.shape();
  if (!result.IsArray()) return absl::InvalidArgumentError("expected an array select");
  for (int k = 0; k < 3; ++k) {
    PERFSIM_RETURN_IF_ERROR(CheckElementwiseOperand(*operands[k], result, k));
  }
  const PrimitiveType type = operands[1]->array_shape().element_type();
  PERFSIM_ASSIGN_OR_RETURN(std::shared_ptr<Literal> out, AllocateLike(ev, type, result));
  const int64_t n = result.ElementCount();
  const int64_t bytes = ByteWidth(type);
  const int64_t sp = ElementStride(*operands[0]);
  const int64_t st = ElementStride(*operands[1]);
  const int64_t sf = ElementStride(*operands[2]);
  const uint8_t* pred = operands[0]->data();
  const uint8_t* on_true = operands[1]->data();
  const uint8_t* on_false = operands[2]->data();
  uint8_t* o = out->mutable_data().data();
  for (int64_t i = 0; i < n; ++i) {
    const uint8_t* src = pred[i * sp] != 0 ? on_true + i * st * bytes : on_false + i * sf * bytes;
    std::memcpy(o + i * bytes, src, bytes);
  }
  return Value::Array(std::move(out));
}

absl::StatusOr<Value> EvalClamp(DeviceEvaluator& ev, const Instruction& instruction,
                                OperandValues operands) {
  // clamp(lo, x, hi) = min(max(x, lo), hi), NaN-propagating; lo and hi may be scalars.
  const Shape& result = instruction.shape();
  for (int k = 0; k < 3; ++k) {
    PERFSIM_RETURN_IF_ERROR(CheckElementwiseOperand(*operands[k], result, k));
  }
  const PrimitiveType type = operands[1]->array_shape().element_type();
  PERFSIM_ASSIGN_OR_RETURN(std::shared_ptr<Literal> out, AllocateLike(ev, type, result));
  const int64_t n = result.ElementCount();
  const int64_t s_lo = ElementStride(*operands[0]);
  const int64_t s_x = ElementStride(*operands[1]);
  const int64_t s_hi = ElementStride(*operands[2]);
  PERFSIM_RETURN_IF_ERROR(DispatchRealElementType(type, "", [&](auto traits) {
    using T = decltype(traits);
    if constexpr (kIsPred<T>) {
      return absl::InvalidArgumentError("expected a numeric element type; got pred");
    } else {
      const uint8_t* lo = operands[0]->data();
      const uint8_t* x = operands[1]->data();
      const uint8_t* hi = operands[2]->data();
      uint8_t* o = out->mutable_data().data();
      for (int64_t i = 0; i < n; ++i) {
        const auto raised =
            ApplyBinary<T, BinaryOp::kMaximum>(T::Load(x, i * s_x), T::Load(lo, i * s_lo));
        T::Store(o, i, ApplyBinary<T, BinaryOp::kMinimum>(raised, T::Load(hi, i * s_hi)));
      }
      return absl::OkStatus();
    }
  }));
  return Value::Array(std::move(out));
}

absl::StatusOr<Value> EvalConvert(DeviceEvaluator& ev, const Instruction& instruction,
                                  OperandValues operands) {
  PERFSIM_ASSIGN_OR_RETURN(
      std::shared_ptr<Literal> out,
      ConvertArray(ev, operands[0]->array(), instruction.shape().element_type()));
  return Value::Array(std::move(out));
}

absl::StatusOr<std::shared_ptr<Literal>> ConvertArray(DeviceEvaluator& ev, const Literal& array,
                                                      PrimitiveType to) {
  const Shape& in_shape = array.shape();
  const PrimitiveType from = in_shape.element_type();
  if (IsComplex(from) && to == PrimitiveType::kPred) {
    // XLA:CPU aborts on it; complex -> numeric types take the real part.
    return absl::InvalidArgumentError(absl::StrCat("expected a numeric result for a ",
                                                   PrimitiveTypeName(from),
                                                   " operand; got pred (compare with 0 instead)"));
  }
  PERFSIM_ASSIGN_OR_RETURN(std::shared_ptr<Literal> out, AllocateLike(ev, to, in_shape));
  const int64_t n = in_shape.ElementCount();
  PERFSIM_RETURN_IF_ERROR(
      DispatchElementTypePair(from, to, "", [&](auto from_traits, auto to_traits) {
        using F = decltype(from_traits);
        using T = decltype(to_traits);
        const uint8_t* in = array.data().data();
        uint8_t* o = out->mutable_data().data();
        // Wide sources into narrow floats round once, straight from the double value, rather than
        // twice through f32 (a complex source: its real part).
        constexpr bool kWideIntoNarrow = kIsFloat<T> && sizeof(typename T::Storage) < 4 &&
                                         !kIsPred<F> &&
                                         (sizeof(typename F::Compute) > 4 ||
                                          (kIsInteger<F> && sizeof(typename F::Compute) >= 4));
        for (int64_t i = 0; i < n; ++i) {
          if constexpr (kWideIntoNarrow) {
            double value;
            if constexpr (kIsComplex<F>) {
              value = static_cast<double>(F::Load(in, i).real());
            } else {
              value = static_cast<double>(F::Load(in, i));
            }
            StoreRaw<typename T::Storage>(
                o, i, static_cast<typename T::Storage>(EncodeFloat(T::kType, value)));
          } else {
            T::Store(o, i, ConvertValue<F, T>(F::Load(in, i)));
          }
        }
        return absl::OkStatus();
      }));
  return out;
}

absl::StatusOr<Value> EvalStochasticConvert(DeviceEvaluator& ev, const Instruction& instruction,
                                            OperandValues operands) {
  // XLA's semantics (HloEvaluator's StochasticConvertOp; XLA:CPU runs only these types too):
  // a floating-point x becomes a signed integer of the result type by rounding |x| down, then
  // up when random < frac(|x|) * 2^W, where random is the matching element of the unsigned
  // operand of W = bit width of x's type; the sign is put back afterwards. inf and values at
  // or beyond the type's range saturate, NaN gives 0.
  //   f32 x = 2.25, u32 random = 2^30 - 1: frac 0.25 * 2^32 = 2^30 > random, so 3.
  const Shape& in_shape = operands[0]->array_shape();
  const Literal& random = operands[1]->array();
  const PrimitiveType from = in_shape.element_type();
  const PrimitiveType to = instruction.shape().element_type();
  if (!IsFloatingPoint(from) || !IsUnsignedInteger(random.shape().element_type()) ||
      BitWidth(random.shape().element_type()) != BitWidth(from) ||
      random.shape().dimensions() != in_shape.dimensions()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "expected a floating-point operand and unsigned random bits of its width and shape; got ",
        in_shape.ToString(false), " and ", random.shape().ToString(false)));
  }
  if (!IsSignedInteger(to)) {
    return absl::InvalidArgumentError(
        absl::StrCat("expected a signed integer result (stochastic-convert rounds floating point "
                     "to signed integers, as XLA runs it); got ",
                     PrimitiveTypeName(to)));
  }
  const int digits = BitWidth(from);
  PERFSIM_ASSIGN_OR_RETURN(std::shared_ptr<Literal> out, AllocateLike(ev, to, in_shape));
  const int64_t n = in_shape.ElementCount();
  PERFSIM_RETURN_IF_ERROR(
      DispatchElementTypePair(from, to, "", [&](auto from_traits, auto to_traits) {
        using F = decltype(from_traits);
        using T = decltype(to_traits);
        if constexpr (!kIsFloat<F> || T::kKind != ElementKind::kSigned) {
          return absl::InternalError("stochastic-convert types checked above");
        } else {
          using C = typename F::Compute;
          constexpr int kBits = kBitsOf<T>;
          const int64_t max = static_cast<int64_t>((uint64_t{1} << (kBits - 1)) - 1);
          const int64_t min = -max - 1;
          // The bounds as x's own type holds them (XLA compares in that type).
          const C max_in_type = F::Round(static_cast<C>(max));
          const C min_in_type = F::Round(static_cast<C>(min));
          const uint8_t* in = operands[0]->data();
          uint8_t* o = out->mutable_data().data();
          for (int64_t i = 0; i < n; ++i) {
            const C x = F::Load(in, i);
            const bool negative = std::signbit(x);
            int64_t value;
            if (std::isinf(x)) {
              value = negative ? min : max;
            } else if (std::isnan(x)) {
              value = 0;
            } else if (x >= max_in_type) {
              value = max;
            } else if (x <= min_in_type) {
              value = min;
            } else {
              const C magnitude = std::fabs(x);
              int64_t truncated = static_cast<int64_t>(magnitude);
              const C fraction = F::Round(magnitude - static_cast<C>(truncated));
              if (fraction != C(0)) {
                const uint64_t fixed_fraction =
                    static_cast<uint64_t>(std::ldexp(static_cast<double>(fraction), digits));
                if (random.GetBits(i) < fixed_fraction) {
                  // XLA wraps to the minimum here (a truncated value of max cannot occur:
                  // |x| < max_in_type).
                  truncated = truncated == max ? min : truncated + 1;
                }
              }
              value = negative ? -truncated : truncated;
            }
            T::Store(o, i, static_cast<typename T::Compute>(value));
          }
          return absl::OkStatus();
        }
      }));
  return Value::Array(std::move(out));
}

absl::StatusOr<Value> EvalBitcastConvert(DeviceEvaluator& ev, const Instruction& instruction,
                                         OperandValues operands) {
  const Shape& in_shape = operands[0]->array_shape();
  const Shape& out_shape = instruction.shape();
  // XLA's width-changing form (jax.random's u32[n,2] -> u64[n]): the narrower side has one
  // more, minor, dimension of wide/narrow elements, and the bytes are reinterpreted in memory
  // order, so on little-endian XLA:CPU element 0 of a group is the low half of the wide one.
  // perfsim's literals are dense, row-major and little-endian, so the bytes copy as they are.
  const int64_t in_bits = BitWidth(in_shape.element_type());
  const int64_t out_bits = BitWidth(out_shape.element_type());
  auto with_minor = [](std::vector<int64_t> dims, int64_t minor) {
    dims.push_back(minor);
    return dims;
  };
  const bool same_width = in_bits == out_bits && in_shape.dimensions() == out_shape.dimensions();
  const bool narrowing = in_bits > out_bits && out_bits > 0 && in_bits % out_bits == 0 &&
                         out_shape.dimensions() ==
                             with_minor(in_shape.dimensions(), in_bits / out_bits);
  const bool widening = out_bits > in_bits && in_bits > 0 && out_bits % in_bits == 0 &&
                        in_shape.dimensions() ==
                            with_minor(out_shape.dimensions(), out_bits / in_bits);
  if (!(same_width || ((narrowing || widening) && in_bits % 8 == 0 && out_bits % 8 == 0))) {
    return absl::UnimplementedError(absl::StrCat(
        "expected a bitcast-convert between types of one bit width, or of whole-byte widths "
        "with the narrow side's minor dimension wide/narrow; got ",
        in_shape.ToString(false), " -> ", out_shape.ToString(false)));
  }
  PERFSIM_ASSIGN_OR_RETURN(std::shared_ptr<Literal> out,
                           AllocateLike(ev, out_shape.element_type(), out_shape));
  std::memcpy(out->mutable_data().data(), operands[0]->data(), operands[0]->array().data().size());
  return Value::Array(std::move(out));
}

absl::StatusOr<Value> EvalReducePrecision(DeviceEvaluator& ev, const Instruction& instruction,
                                          OperandValues operands) {
  const InstructionAttributes& attrs = instruction.attributes();
  if (!attrs.exponent_bits.has_value() || !attrs.mantissa_bits.has_value() ||
      *attrs.exponent_bits < 1 || *attrs.mantissa_bits < 0) {
    return absl::InvalidArgumentError("expected exponent_bits >= 1 and mantissa_bits >= 0");
  }
  const int e = static_cast<int>(*attrs.exponent_bits);
  const int m = static_cast<int>(*attrs.mantissa_bits);
  const Shape& shape = operands[0]->array_shape();
  PERFSIM_ASSIGN_OR_RETURN(std::shared_ptr<Literal> out,
                           AllocateLike(ev, shape.element_type(), shape));
  const int64_t n = shape.ElementCount();
  PERFSIM_RETURN_IF_ERROR(DispatchElementType(shape.element_type(), "", [&](auto traits) {
    using T = decltype(traits);
    if constexpr (!kIsFloat<T>) {
      return absl::InvalidArgumentError("expected a floating-point operand");
    } else {
      const uint8_t* in = operands[0]->data();
      uint8_t* o = out->mutable_data().data();
      for (int64_t i = 0; i < n; ++i) {
        const auto x = T::Load(in, i);
        if constexpr (std::is_same_v<typename T::Compute, double>) {
          const uint64_t bits = ReducePrecisionBits<uint64_t>(std::bit_cast<uint64_t>(x), 11, 52,
                                                              std::min(e, 11), std::min(m, 52));
          T::Store(o, i, std::bit_cast<double>(bits));
        } else {
          const uint32_t bits = ReducePrecisionBits<uint32_t>(std::bit_cast<uint32_t>(x), 8, 23,
                                                              std::min(e, 8), std::min(m, 23));
          T::Store(o, i, std::bit_cast<float>(bits));
        }
      }
      return absl::OkStatus();
    }
  }));
  return Value::Array(std::move(out));
}

absl::StatusOr<Value> EvalIota(DeviceEvaluator& ev, const Instruction& instruction,
                               OperandValues operands) {
  const Shape& shape = instruction.shape();
  const int64_t dim = instruction.attributes().iota_dimension.value_or(0);
  if (!shape.IsArray() || dim < 0 || (shape.rank() > 0 && dim >= shape.rank())) {
    return absl::InvalidArgumentError(
        absl::StrCat("expected iota_dimension within ", shape.ToString(false), "; got ", dim));
  }
  PERFSIM_ASSIGN_OR_RETURN(std::shared_ptr<Literal> out, ev.Allocate(shape));
  const std::vector<int64_t> strides = RowMajorStrides(shape.dimensions());
  const int64_t n = shape.ElementCount();
  const int64_t stride = shape.rank() == 0 ? 1 : strides[dim];
  const int64_t size = shape.rank() == 0 ? 1 : shape.dimensions(dim);
  PERFSIM_RETURN_IF_ERROR(DispatchElementType(shape.element_type(), "", [&](auto traits) {
    using T = decltype(traits);
    using S64 = IntTraits<PrimitiveType::kS64, int64_t>;
    uint8_t* o = out->mutable_data().data();
    for (int64_t i = 0; i < n; ++i) T::Store(o, i, ConvertValue<S64, T>((i / stride) % size));
    return absl::OkStatus();
  }));
  return Value::Array(std::move(out));
}

absl::StatusOr<Value> EvalMap(DeviceEvaluator& ev, const Instruction& instruction,
                              OperandValues operands) {
  const Computation* f = instruction.to_apply();
  if (f == nullptr) return absl::InvalidArgumentError("expected to_apply");
  const Shape& result = instruction.shape();
  PERFSIM_ASSIGN_OR_RETURN(std::shared_ptr<Literal> out, ev.Allocate(result));
  if (operands.size() == 2 && MatchBinaryComputation(*f).has_value() &&
      operands[0]->array_shape().element_type() == result.element_type()) {
    std::memcpy(out->mutable_data().data(), operands[0]->data(),
                operands[0]->array().data().size());
    PERFSIM_RETURN_IF_ERROR(CombineInto(ev, *f, out.get(), operands[1]->array()));
    return Value::Array(std::move(out));
  }
  std::vector<Value> args(operands.size());
  for (int64_t i = 0; i < result.ElementCount(); ++i) {
    for (size_t k = 0; k < operands.size(); ++k) {
      PERFSIM_ASSIGN_OR_RETURN(args[k], ElementAsScalar(ev, operands[k]->array(), i));
    }
    PERFSIM_ASSIGN_OR_RETURN(Value r, ev.CallScalar(*f, args));
    PERFSIM_RETURN_IF_ERROR(StoreScalar(r, out.get(), i));
  }
  return Value::Array(std::move(out));
}

absl::StatusOr<Value> EvalRng(DeviceEvaluator& ev, const Instruction& instruction,
                              OperandValues operands) {
  // rng(a, b), distribution=rng_uniform: uniform in [a, b); rng_normal: mean a, stddev b.
  // The stream is perfsim's own (seeded by InterpreterOptions::seed), not XLA's.
  std::string distribution;
  for (const auto& [key, value] : instruction.attributes().other) {
    if (key == "distribution") distribution = value;
  }
  const bool normal = distribution == "rng_normal";
  if (!normal && distribution != "rng_uniform") {
    return absl::InvalidArgumentError(
        absl::StrCat("expected distribution=rng_uniform or rng_normal; got '", distribution, "'"));
  }
  const Shape& shape = instruction.shape();
  PERFSIM_ASSIGN_OR_RETURN(std::shared_ptr<Literal> out, ev.Allocate(shape));
  const double a = operands[0]->array().GetAsDouble(0);
  const double b = operands[1]->array().GetAsDouble(0);
  const bool is_float = IsFloatingPoint(shape.element_type());
  if (normal && !is_float)
    return absl::InvalidArgumentError("expected a floating-point rng_normal");
  if (IsComplex(shape.element_type())) {
    return absl::InvalidArgumentError(absl::StrCat("expected a real rng result; got ",
                                                   PrimitiveTypeName(shape.element_type())));
  }
  for (int64_t i = 0; i < shape.ElementCount(); ++i) {
    const double u = static_cast<double>(ev.NextRandom() >> 11) * 0x1p-53;
    if (normal) {
      const double u2 = static_cast<double>(ev.NextRandom() >> 11) * 0x1p-53;
      const double z = std::sqrt(-2.0 * std::log1p(-u)) * std::cos(2.0 * std::numbers::pi * u2);
      out->SetFromDouble(i, a + b * z);
    } else if (is_float) {
      out->SetFromDouble(i, a + (b - a) * u);
    } else {
      const int64_t lo = operands[0]->array().GetAsInt64(0);
      const int64_t hi = operands[1]->array().GetAsInt64(0);
      // In uint64: hi - lo of data bounds (s64 -2^63 and 2^63-1) overflows int64.
      const uint64_t span = hi > lo ? static_cast<uint64_t>(hi) - static_cast<uint64_t>(lo) : 1;
      out->SetFromInt64(i,
                        static_cast<int64_t>(static_cast<uint64_t>(lo) + ev.NextRandom() % span));
    }
  }
  return Value::Array(std::move(out));
}

}  // namespace interp
}  // namespace perfsim
