// Shape inference: the dispatcher, and the elementwise, constant-like, tuple and
// shape-changing op families. Semantics follow XLA's xla/service/shape_inference.cc, relaxed
// where real dumps are looser than the builder (the declared element type of convert, dot and
// friends is taken as given).
#include "sim/ir/shape_inference.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "sim/ir/shape_inference_internal.h"
#include "sim/util/status.h"

namespace perfsim {

using infer_internal::ArrayLike;
using infer_internal::ArrayOperand;
using infer_internal::CheckDimensionList;
using infer_internal::InferError;
using infer_internal::ListText;
using infer_internal::ShapeText;
using infer_internal::StripLayout;

absl::StatusOr<Shape> InferShape(const Instruction& instruction) {
  const int arity = OpcodeArity(instruction.opcode());
  if (arity != kVariadic && instruction.operand_count() != arity) {
    return InferError(instruction,
                      absl::StrCat(arity, " operands for ", OpcodeSpelling(instruction.opcode())),
                      absl::StrCat(instruction.operand_count()));
  }
  for (int64_t i = 0; i < instruction.operand_count(); ++i) {
    if (instruction.operand(i) == nullptr) {
      return InferError(instruction, absl::StrCat("operand ", i), "a null operand");
    }
  }
  absl::StatusOr<Shape> shape;
  switch (instruction.opcode()) {
#define PERFSIM_OPCODE(name, spelling, arity, infer) \
  case Opcode::name:                                 \
    shape = infer(instruction);                      \
    break;
#include "sim/ir/opcode.def"
#undef PERFSIM_OPCODE
  }
  if (!shape.ok()) return shape.status();
  return StripLayout(*std::move(shape));
}

namespace {

// Which element types an elementwise op accepts.
enum class TypeClass {
  kAny,             // any array type
  kFloat,           // floating point
  kFloatOrComplex,  // floating point or complex
  kInteger,         // signed or unsigned integer
  kPredOrInteger,   // pred or integer
  kNumeric,         // integer, floating point or complex (not pred)
};

bool InClass(PrimitiveType type, TypeClass type_class) {
  switch (type_class) {
    case TypeClass::kAny:
      return IsArrayType(type);
    case TypeClass::kFloat:
      return IsFloatingPoint(type);
    case TypeClass::kFloatOrComplex:
      return IsFloatingPoint(type) || IsComplex(type);
    case TypeClass::kInteger:
      return IsInteger(type);
    case TypeClass::kPredOrInteger:
      return type == PrimitiveType::kPred || IsInteger(type);
    case TypeClass::kNumeric:
      return IsInteger(type) || IsFloatingPoint(type) || IsComplex(type);
  }
  return false;
}

absl::string_view ClassName(TypeClass type_class) {
  switch (type_class) {
    case TypeClass::kAny:
      return "an array";
    case TypeClass::kFloat:
      return "a floating-point operand";
    case TypeClass::kFloatOrComplex:
      return "a floating-point or complex operand";
    case TypeClass::kInteger:
      return "an integer operand";
    case TypeClass::kPredOrInteger:
      return "a pred or integer operand";
    case TypeClass::kNumeric:
      return "a numeric (non-pred) operand";
  }
  return "?";
}

// The component type of a complex type (f32 for c64); other types unchanged.
PrimitiveType RealComponentType(PrimitiveType type) {
  if (type == PrimitiveType::kC64) return PrimitiveType::kF32;
  if (type == PrimitiveType::kC128) return PrimitiveType::kF64;
  return type;
}

// The subset classification is a helper, not a pass over the opcode table, so a default is
// fine here: every unary opcode not listed accepts any array.
TypeClass UnaryOperandClass(Opcode opcode) {
  switch (opcode) {
    case Opcode::kCeil:
    case Opcode::kFloor:
    case Opcode::kRoundNearestAfz:
    case Opcode::kRoundNearestEven:
    case Opcode::kReducePrecision:
    case Opcode::kIsFinite:
    case Opcode::kCbrt:
    case Opcode::kErf:
      return TypeClass::kFloat;
    case Opcode::kCos:
    case Opcode::kSin:
    case Opcode::kTan:
    case Opcode::kTanh:
    case Opcode::kExp:
    case Opcode::kExpm1:
    case Opcode::kLog:
    case Opcode::kLog1p:
    case Opcode::kLogistic:
    case Opcode::kRsqrt:
    case Opcode::kSqrt:
    case Opcode::kReal:
    case Opcode::kImag:
      return TypeClass::kFloatOrComplex;
    case Opcode::kNot:
      return TypeClass::kPredOrInteger;
    case Opcode::kPopcnt:
    case Opcode::kClz:
      return TypeClass::kInteger;
    case Opcode::kAbs:
    case Opcode::kNegate:
    case Opcode::kSign:
      return TypeClass::kNumeric;
    default:
      return TypeClass::kAny;
  }
}

TypeClass BinaryOperandClass(Opcode opcode) {
  switch (opcode) {
    case Opcode::kAnd:
    case Opcode::kOr:
    case Opcode::kXor:
      return TypeClass::kPredOrInteger;
    case Opcode::kShiftLeft:
    case Opcode::kShiftRightArithmetic:
    case Opcode::kShiftRightLogical:
      return TypeClass::kInteger;
    case Opcode::kAtan2:
      return TypeClass::kFloatOrComplex;
    default:
      return TypeClass::kAny;
  }
}

absl::Status CheckClass(const Instruction& instruction, const Shape& shape, TypeClass type_class) {
  if (!InClass(shape.element_type(), type_class)) {
    return InferError(instruction, ClassName(type_class), ShapeText(shape));
  }
  return absl::OkStatus();
}

// Two operands of an elementwise op: same element type and dimensions (bounds for dynamic
// dimensions), layouts ignored. HLO has no implicit broadcasting.
absl::Status CheckSameArrayShape(const Instruction& instruction, const Shape& lhs,
                                 const Shape& rhs) {
  if (lhs.element_type() != rhs.element_type() || lhs.dimensions() != rhs.dimensions()) {
    return InferError(instruction, "operands of equal shape",
                      absl::StrCat(ShapeText(lhs), " and ", ShapeText(rhs)));
  }
  return absl::OkStatus();
}

// The declared result as a well-formed array, for ops that take (part of) their result from
// it.
absl::StatusOr<const Shape*> DeclaredArray(const Instruction& instruction) {
  if (!instruction.shape().IsArray()) {
    return InferError(instruction, "an array result shape", ShapeText(instruction.shape()));
  }
  PERFSIM_RETURN_IF_ERROR(Annotate(ValidateShape(instruction.shape()), instruction.name()));
  return &instruction.shape();
}

// "128 x 32 bits": the size of a validated array, written so that no product can overflow.
std::string SizeText(const Shape& shape) {
  return absl::StrCat(shape.ElementCount(), " x ", BitWidth(shape.element_type()), " bits");
}

// Total bits of a validated array; 128-bit because ElementCount * BitWidth may exceed int64.
__int128 TotalBits(const Shape& shape) {
  return static_cast<__int128>(shape.ElementCount()) * BitWidth(shape.element_type());
}

bool HasTiles(const Shape& shape) { return shape.has_layout() && !shape.layout()->tiles.empty(); }

}  // namespace

// ----------------------------------------------------------------------------- elementwise

absl::StatusOr<Shape> InferUnaryShape(const Instruction& instruction) {
  const Opcode opcode = instruction.opcode();
  const Shape& operand = instruction.operand(0)->shape();
  // copy, domain and opt-barrier pass any value (tuples, tokens) through.
  if (opcode == Opcode::kCopy || opcode == Opcode::kDomain ||
      opcode == Opcode::kOptimizationBarrier) {
    return operand;
  }
  PERFSIM_ASSIGN_OR_RETURN(const Shape* array, ArrayOperand(instruction, 0, "operand"));
  PERFSIM_RETURN_IF_ERROR(CheckClass(instruction, *array, UnaryOperandClass(opcode)));
  switch (opcode) {
    case Opcode::kIsFinite:
      return ArrayLike(*array, PrimitiveType::kPred);
    case Opcode::kAbs:
    case Opcode::kReal:
    case Opcode::kImag:
      return ArrayLike(*array, RealComponentType(array->element_type()));
    default:
      return ArrayLike(*array, array->element_type());
  }
}

absl::StatusOr<Shape> InferBinaryShape(const Instruction& instruction) {
  PERFSIM_ASSIGN_OR_RETURN(const Shape* lhs, ArrayOperand(instruction, 0, "lhs"));
  PERFSIM_ASSIGN_OR_RETURN(const Shape* rhs, ArrayOperand(instruction, 1, "rhs"));
  PERFSIM_RETURN_IF_ERROR(CheckClass(instruction, *lhs, BinaryOperandClass(instruction.opcode())));
  PERFSIM_RETURN_IF_ERROR(CheckSameArrayShape(instruction, *lhs, *rhs));
  return ArrayLike(*lhs, lhs->element_type());
}

absl::StatusOr<Shape> InferCompareShape(const Instruction& instruction) {
  PERFSIM_ASSIGN_OR_RETURN(const Shape* lhs, ArrayOperand(instruction, 0, "lhs"));
  PERFSIM_ASSIGN_OR_RETURN(const Shape* rhs, ArrayOperand(instruction, 1, "rhs"));
  if (!instruction.attributes().comparison_direction.has_value()) {
    return InferError(instruction, "a comparison direction (direction=LT, ...)", "none");
  }
  PERFSIM_RETURN_IF_ERROR(CheckSameArrayShape(instruction, *lhs, *rhs));
  return ArrayLike(*lhs, PrimitiveType::kPred);
}

absl::StatusOr<Shape> InferSelectShape(const Instruction& instruction) {
  PERFSIM_ASSIGN_OR_RETURN(const Shape* pred, ArrayOperand(instruction, 0, "predicate"));
  PERFSIM_ASSIGN_OR_RETURN(const Shape* on_true, ArrayOperand(instruction, 1, "on_true"));
  PERFSIM_ASSIGN_OR_RETURN(const Shape* on_false, ArrayOperand(instruction, 2, "on_false"));
  if (pred->element_type() != PrimitiveType::kPred) {
    return InferError(instruction, "a pred predicate", ShapeText(*pred));
  }
  PERFSIM_RETURN_IF_ERROR(CheckSameArrayShape(instruction, *on_true, *on_false));
  if (!pred->IsScalar() && pred->dimensions() != on_true->dimensions()) {
    return InferError(instruction,
                      absl::StrCat("a predicate with the dimensions of ", ShapeText(*on_true)),
                      ShapeText(*pred));
  }
  return ArrayLike(*on_true, on_true->element_type());
}

absl::StatusOr<Shape> InferClampShape(const Instruction& instruction) {
  PERFSIM_ASSIGN_OR_RETURN(const Shape* min, ArrayOperand(instruction, 0, "min"));
  PERFSIM_ASSIGN_OR_RETURN(const Shape* operand, ArrayOperand(instruction, 1, "operand"));
  PERFSIM_ASSIGN_OR_RETURN(const Shape* max, ArrayOperand(instruction, 2, "max"));
  for (const Shape* bound : {min, max}) {
    if (bound->element_type() != operand->element_type() ||
        (!bound->IsScalar() && bound->dimensions() != operand->dimensions())) {
      return InferError(
          instruction,
          absl::StrCat("clamp bounds that are scalars or of shape ", ShapeText(*operand)),
          ShapeText(*bound));
    }
  }
  return ArrayLike(*operand, operand->element_type());
}

// convert and stochastic-convert: the element type is the declared one.
absl::StatusOr<Shape> InferConvertShape(const Instruction& instruction) {
  PERFSIM_ASSIGN_OR_RETURN(const Shape* operand, ArrayOperand(instruction, 0, "operand"));
  if (instruction.opcode() == Opcode::kStochasticConvert) {
    PERFSIM_ASSIGN_OR_RETURN(const Shape* bits, ArrayOperand(instruction, 1, "random bits"));
    if (!IsFloatingPoint(operand->element_type())) {
      return InferError(instruction, "a floating-point operand", ShapeText(*operand));
    }
    if (!IsUnsignedInteger(bits->element_type()) || bits->dimensions() != operand->dimensions() ||
        BitWidth(bits->element_type()) != BitWidth(operand->element_type())) {
      return InferError(instruction,
                        absl::StrCat("random bits of unsigned type, as wide as and shaped like ",
                                     ShapeText(*operand)),
                        ShapeText(*bits));
    }
  }
  PERFSIM_ASSIGN_OR_RETURN(const Shape* declared, DeclaredArray(instruction));
  return ArrayLike(*operand, declared->element_type());
}

// bitcast-convert between types of different widths adds or removes a minor dimension of
// size ratio = wider bits / narrower bits, as in XLA.
absl::StatusOr<Shape> InferBitcastConvertShape(const Instruction& instruction) {
  PERFSIM_ASSIGN_OR_RETURN(const Shape* operand, ArrayOperand(instruction, 0, "operand"));
  PERFSIM_ASSIGN_OR_RETURN(const Shape* declared, DeclaredArray(instruction));
  const PrimitiveType to = declared->element_type();
  const int from_bits = BitWidth(operand->element_type());
  const int to_bits = BitWidth(to);
  if (from_bits == to_bits) return ArrayLike(*operand, to);
  if (from_bits > to_bits) {
    if (to_bits == 0 || from_bits % to_bits != 0) {
      return InferError(instruction, "element widths that divide each other",
                        absl::StrCat(from_bits, " and ", to_bits, " bits"));
    }
    std::vector<int64_t> dims = operand->dimensions();
    dims.push_back(from_bits / to_bits);
    return Shape::Array(to, dims);
  }
  if (from_bits == 0 || to_bits % from_bits != 0) {
    return InferError(instruction, "element widths that divide each other",
                      absl::StrCat(from_bits, " and ", to_bits, " bits"));
  }
  const int64_t ratio = to_bits / from_bits;
  if (operand->rank() == 0 || operand->dimensions().back() != ratio) {
    return InferError(
        instruction,
        absl::StrCat("a minor dimension of size ", ratio, " to bitcast-convert ",
                     PrimitiveTypeName(operand->element_type()), " to ", PrimitiveTypeName(to)),
        ShapeText(*operand));
  }
  std::vector<int64_t> dims = operand->dimensions();
  dims.pop_back();
  return Shape::Array(to, dims);
}

// bitcast reinterprets the buffer: the declared shape is the result; only the bit count must
// agree. Tiled layouts can pad differently from the dense size, so they are not compared.
absl::StatusOr<Shape> InferBitcastShape(const Instruction& instruction) {
  PERFSIM_ASSIGN_OR_RETURN(const Shape* operand, ArrayOperand(instruction, 0, "operand"));
  PERFSIM_ASSIGN_OR_RETURN(const Shape* declared, DeclaredArray(instruction));
  PERFSIM_RETURN_IF_ERROR(Annotate(ValidateShape(*operand), instruction.name()));
  if (!HasTiles(*operand) && !HasTiles(*declared) && declared->is_static() &&
      operand->is_static() && TotalBits(*operand) != TotalBits(*declared)) {
    return InferError(instruction,
                      absl::StrCat("a result of the operand's size (", ShapeText(*operand), ", ",
                                   SizeText(*operand), ")"),
                      absl::StrCat(ShapeText(*declared), ", ", SizeText(*declared)));
  }
  return *declared;
}

// ---------------------------------------------------------------------- declared and leaves

absl::StatusOr<Shape> InferDeclaredShape(const Instruction& instruction) {
  if (instruction.opcode() == Opcode::kParameter &&
      !instruction.attributes().parameter_number.has_value()) {
    return InferError(instruction, "a parameter number", "none");
  }
  PERFSIM_RETURN_IF_ERROR(Annotate(ValidateShape(instruction.shape()), instruction.name()));
  return instruction.shape();
}

absl::StatusOr<Shape> InferConstantShape(const Instruction& instruction) {
  const std::optional<Literal>& literal = instruction.attributes().literal;
  if (!literal.has_value()) return instruction.shape();
  return literal->shape();
}

absl::StatusOr<Shape> InferIotaShape(const Instruction& instruction) {
  PERFSIM_ASSIGN_OR_RETURN(const Shape* declared, DeclaredArray(instruction));
  const std::optional<int64_t>& dim = instruction.attributes().iota_dimension;
  if (!dim.has_value()) return InferError(instruction, "an iota_dimension", "none");
  if (*dim < 0 || *dim >= declared->rank()) {
    return InferError(instruction, absl::StrCat("iota_dimension in [0, ", declared->rank(), ")"),
                      absl::StrCat(*dim));
  }
  if (declared->element_type() == PrimitiveType::kPred) {
    return InferError(instruction, "a numeric iota", ShapeText(*declared));
  }
  return *declared;
}

// ------------------------------------------------------------------------------ tuples

absl::StatusOr<Shape> InferTupleShape(const Instruction& instruction) {
  std::vector<Shape> elements;
  for (const Instruction* operand : instruction.operands()) elements.push_back(operand->shape());
  return Shape::Tuple(std::move(elements));
}

absl::StatusOr<Shape> InferGetTupleElementShape(const Instruction& instruction) {
  const Shape& operand = instruction.operand(0)->shape();
  if (!operand.IsTuple()) return InferError(instruction, "a tuple operand", ShapeText(operand));
  const std::optional<int64_t>& index = instruction.attributes().tuple_index;
  if (!index.has_value()) return InferError(instruction, "an index", "none");
  if (*index < 0 || *index >= operand.tuple_size()) {
    return InferError(
        instruction,
        absl::StrCat("index in [0, ", operand.tuple_size(), ") of ", ShapeText(operand)),
        absl::StrCat(*index));
  }
  return operand.tuple_shapes(*index);
}

// ---------------------------------------------------------------------- shape-changing ops

absl::StatusOr<Shape> InferBroadcastShape(const Instruction& instruction) {
  PERFSIM_ASSIGN_OR_RETURN(const Shape* operand, ArrayOperand(instruction, 0, "operand"));
  PERFSIM_ASSIGN_OR_RETURN(const Shape* declared, DeclaredArray(instruction));
  const std::vector<int64_t> dims =
      instruction.attributes().dimensions.value_or(std::vector<int64_t>{});
  if (static_cast<int64_t>(dims.size()) != operand->rank()) {
    return InferError(instruction,
                      absl::StrCat(operand->rank(), " broadcast dimensions (the rank of ",
                                   ShapeText(*operand), ")"),
                      ListText(dims));
  }
  PERFSIM_RETURN_IF_ERROR(
      CheckDimensionList(instruction, dims, declared->rank(), "broadcast dimensions"));
  for (int64_t i = 0; i < operand->rank(); ++i) {
    if (operand->dimensions(i) != declared->dimensions(dims[i])) {
      return InferError(
          instruction,
          absl::StrCat("result dimension ", dims[i], " to have the size of operand dimension ", i,
                       " (", operand->dimensions(i), ")"),
          absl::StrCat(declared->dimensions(dims[i]), " in ", ShapeText(*declared)));
    }
  }
  return ArrayLike(*declared, operand->element_type());
}

absl::StatusOr<Shape> InferReshapeShape(const Instruction& instruction) {
  PERFSIM_ASSIGN_OR_RETURN(const Shape* operand, ArrayOperand(instruction, 0, "operand"));
  PERFSIM_ASSIGN_OR_RETURN(const Shape* declared, DeclaredArray(instruction));
  // Dynamic shapes reshape by their runtime sizes; only static ones are compared by count.
  if (operand->is_static() && declared->is_static() &&
      operand->ElementCount() != declared->ElementCount()) {
    return InferError(instruction,
                      absl::StrCat("a result of ", operand->ElementCount(), " elements like ",
                                   ShapeText(*operand)),
                      absl::StrCat(ShapeText(*declared), " with ", declared->ElementCount()));
  }
  return ArrayLike(*declared, operand->element_type());
}

absl::StatusOr<Shape> InferTransposeShape(const Instruction& instruction) {
  PERFSIM_ASSIGN_OR_RETURN(const Shape* operand, ArrayOperand(instruction, 0, "operand"));
  const std::vector<int64_t> perm =
      instruction.attributes().dimensions.value_or(std::vector<int64_t>{});
  if (static_cast<int64_t>(perm.size()) != operand->rank()) {
    return InferError(instruction,
                      absl::StrCat("a permutation of ", operand->rank(), " dimensions"),
                      ListText(perm));
  }
  PERFSIM_RETURN_IF_ERROR(
      CheckDimensionList(instruction, perm, operand->rank(), "transpose dimensions"));
  std::vector<int64_t> dims;
  for (int64_t p : perm) dims.push_back(operand->dimensions(p));
  Shape result = Shape::Array(operand->element_type(), dims);
  for (int64_t i = 0; i < operand->rank(); ++i) {
    result.set_dynamic_dimension(i, operand->is_dynamic_dimension(perm[i]));
  }
  return result;
}

absl::StatusOr<Shape> InferReverseShape(const Instruction& instruction) {
  PERFSIM_ASSIGN_OR_RETURN(const Shape* operand, ArrayOperand(instruction, 0, "operand"));
  const std::vector<int64_t> dims =
      instruction.attributes().dimensions.value_or(std::vector<int64_t>{});
  PERFSIM_RETURN_IF_ERROR(
      CheckDimensionList(instruction, dims, operand->rank(), "reverse dimensions"));
  return *operand;
}

}  // namespace perfsim
