// Shape inference for the linear-algebra and signal ops: fft, triangular-solve, cholesky,
// batch-norm-training/-inference/-grad, complex and scaled-dot.
//
// Semantics follow XLA's xla/service/shape_inference.cc (InferFftShape,
// InferTriangularSolveShape, InferCholeskyShape, InferBatchNorm*Shape, the kComplex case of
// InferBinaryOpShape), including where XLA is loose: FFT and IFFT do not compare fft_length
// with the operand (XLA's own tests hold `c64[8] fft(x), fft_type=FFT, fft_length={32}`).
#include "absl/strings/str_cat.h"
#include "sim/ir/shape_inference.h"
#include "sim/ir/shape_inference_internal.h"
#include "sim/util/status.h"

namespace perfsim {

using infer_internal::ArrayOperand;
using infer_internal::InferError;
using infer_internal::ListText;
using infer_internal::ShapeText;

namespace {

bool FloatOrComplex(PrimitiveType type) { return IsFloatingPoint(type) || IsComplex(type); }

// c64 <-> f32 and c128 <-> f64; kInvalid for other types.
PrimitiveType ComplexOf(PrimitiveType real) {
  if (real == PrimitiveType::kF32) return PrimitiveType::kC64;
  if (real == PrimitiveType::kF64) return PrimitiveType::kC128;
  return PrimitiveType::kInvalid;
}
PrimitiveType RealOf(PrimitiveType complex) {
  if (complex == PrimitiveType::kC64) return PrimitiveType::kF32;
  if (complex == PrimitiveType::kC128) return PrimitiveType::kF64;
  return PrimitiveType::kInvalid;
}

// The minor fft_length.size() dimensions of `in`, from `first` on, must equal fft_length.
absl::Status CheckMinorDims(const Instruction& instruction, const Shape& in,
                            const std::vector<int64_t>& length, size_t count,
                            absl::string_view type) {
  const int64_t offset = in.rank() - static_cast<int64_t>(length.size());
  for (size_t i = 0; i < count; ++i) {
    if (in.dimensions(offset + i) != length[i]) {
      return InferError(instruction,
                        absl::StrCat(type, " innermost dimension ", offset + i, " to equal fft_length[",
                                     i, "] = ", length[i]),
                        absl::StrCat(in.dimensions(offset + i), " (operand ", ShapeText(in), ")"));
    }
  }
  return absl::OkStatus();
}

// Checks a batch-norm per-feature operand: rank 1, the operand's element type, `features` long.
absl::Status CheckFeatureOperand(const Instruction& instruction, int64_t index,
                                 absl::string_view role, PrimitiveType type, int64_t features) {
  PERFSIM_ASSIGN_OR_RETURN(const Shape* shape, ArrayOperand(instruction, index, role));
  if (shape->rank() != 1 || shape->element_type() != type || shape->dimensions(0) != features) {
    return InferError(
        instruction,
        absl::StrCat(role, " (operand ", index, ") of shape ",
                     ShapeText(Shape::Array(type, {features})), " (one per feature)"),
        ShapeText(*shape));
  }
  return absl::OkStatus();
}

// The operand (a floating-point array) and its feature count for batch-norm-*.
absl::StatusOr<const Shape*> BatchNormOperand(const Instruction& instruction,
                                              int64_t* features) {
  PERFSIM_ASSIGN_OR_RETURN(const Shape* operand, ArrayOperand(instruction, 0, "operand"));
  if (!IsFloatingPoint(operand->element_type())) {
    return InferError(instruction, "a floating-point operand", ShapeText(*operand));
  }
  const std::optional<int64_t> index = instruction.attributes().feature_index;
  if (!index.has_value()) return InferError(instruction, "a feature_index attribute", "none");
  if (*index < 0 || *index >= operand->rank()) {
    return InferError(instruction,
                      absl::StrCat("feature_index in [0, ", operand->rank(), ") for operand ",
                                   ShapeText(*operand)),
                      absl::StrCat(*index));
  }
  *features = operand->dimensions(*index);
  return operand;
}

// (operand shape, f[features], f[features]): batch-norm-training's and -grad's result.
Shape NormTuple(const Shape& operand, int64_t features) {
  const Shape feature = Shape::Array(operand.element_type(), {features});
  return Shape::Tuple({operand, feature, feature});
}

// Square minor dimensions, rank >= 2, floating or complex: a matrix operand of
// triangular-solve and cholesky.
absl::Status CheckBatchedSquare(const Instruction& instruction, const Shape& a,
                                absl::string_view role) {
  if (!FloatOrComplex(a.element_type())) {
    return InferError(instruction, absl::StrCat("a floating-point or complex ", role),
                      ShapeText(a));
  }
  if (a.rank() < 2) {
    return InferError(instruction, absl::StrCat(role, " of rank >= 2"), ShapeText(a));
  }
  if (a.dimensions(a.rank() - 1) != a.dimensions(a.rank() - 2)) {
    return InferError(instruction,
                      absl::StrCat("the two minor dimensions of ", role, " of equal size"),
                      ShapeText(a));
  }
  return absl::OkStatus();
}

}  // namespace

// fft(x), fft_type, fft_length (1 to 3 minor dimensions):
//   FFT, IFFT: complex -> same shape;  RFFT: f32[..., n] -> c64[..., n/2+1];
//   IRFFT: c64[..., n/2+1] -> f32[..., n].
absl::StatusOr<Shape> InferFftShape(const Instruction& instruction) {
  PERFSIM_ASSIGN_OR_RETURN(const Shape* in, ArrayOperand(instruction, 0, "operand"));
  const InstructionAttributes& a = instruction.attributes();
  if (!a.fft_type.has_value()) return InferError(instruction, "an fft_type attribute", "none");
  const std::vector<int64_t> length = a.fft_length.value_or(std::vector<int64_t>{});
  const int64_t rank = static_cast<int64_t>(length.size());
  if (rank < 1 || rank > 3) {
    return InferError(instruction, "fft_length of 1 to 3 dimensions", ListText(length));
  }
  if (in->rank() < rank) {
    return InferError(instruction, absl::StrCat("an operand of rank >= ", rank, " (fft_length ",
                                                ListText(length), ")"),
                      ShapeText(*in));
  }
  const absl::string_view type = FftTypeName(*a.fft_type);
  switch (*a.fft_type) {
    case FftType::kFft:
    case FftType::kIfft:
      if (!IsComplex(in->element_type())) {
        return InferError(instruction, absl::StrCat("a complex operand for ", type),
                          ShapeText(*in));
      }
      return *in;
    case FftType::kRfft: {
      const PrimitiveType out = ComplexOf(in->element_type());
      if (out == PrimitiveType::kInvalid) {
        return InferError(instruction, "an f32 or f64 operand for RFFT", ShapeText(*in));
      }
      PERFSIM_RETURN_IF_ERROR(CheckMinorDims(instruction, *in, length, length.size(), type));
      Shape result = Shape::Array(out, in->dimensions());
      if (length.back() != 0) result.set_dimensions(in->rank() - 1, length.back() / 2 + 1);
      return result;
    }
    case FftType::kIrfft: {
      const PrimitiveType out = RealOf(in->element_type());
      if (out == PrimitiveType::kInvalid) {
        return InferError(instruction, "a c64 or c128 operand for IRFFT", ShapeText(*in));
      }
      PERFSIM_RETURN_IF_ERROR(CheckMinorDims(instruction, *in, length, length.size() - 1, type));
      const int64_t half = length.back() / 2 + 1;
      if (in->dimensions(in->rank() - 1) != half) {
        return InferError(instruction,
                          absl::StrCat("IRFFT innermost dimension to be fft_length/2+1 = ", half),
                          absl::StrCat(in->dimensions(in->rank() - 1), " (operand ",
                                       ShapeText(*in), ")"));
      }
      Shape result = Shape::Array(out, in->dimensions());
      result.set_dimensions(in->rank() - 1, length.back());
      return result;
    }
  }
  return *in;
}

// triangular-solve(a, b): a is [..., M, M]; b is [..., M, N] (left_side) or [..., N, M].
// The result is b's shape.
absl::StatusOr<Shape> InferTriangularSolveShape(const Instruction& instruction) {
  PERFSIM_ASSIGN_OR_RETURN(const Shape* a, ArrayOperand(instruction, 0, "a"));
  PERFSIM_ASSIGN_OR_RETURN(const Shape* b, ArrayOperand(instruction, 1, "b"));
  PERFSIM_RETURN_IF_ERROR(CheckBatchedSquare(instruction, *a, "a"));
  if (a->element_type() != b->element_type()) {
    return InferError(instruction, "a and b of equal element types",
                      absl::StrCat(ShapeText(*a), " and ", ShapeText(*b)));
  }
  if (a->rank() != b->rank()) {
    return InferError(instruction, "a and b of equal rank",
                      absl::StrCat(ShapeText(*a), " and ", ShapeText(*b)));
  }
  const bool left_side = instruction.attributes().left_side.value_or(false);
  const int64_t shared = b->rank() - (left_side ? 2 : 1);
  if (b->dimensions(shared) != a->dimensions(a->rank() - 1)) {
    return InferError(
        instruction,
        absl::StrCat("b dimension ", shared, " (", left_side ? "left_side" : "right side",
                     ") to equal a's ", a->dimensions(a->rank() - 1)),
        absl::StrCat(b->dimensions(shared), " (a ", ShapeText(*a), ", b ", ShapeText(*b), ")"));
  }
  for (int64_t d = 0; d + 2 < a->rank(); ++d) {
    if (a->dimensions(d) != b->dimensions(d)) {
      return InferError(instruction, "equal leading batch dimensions of a and b",
                        absl::StrCat(ShapeText(*a), " and ", ShapeText(*b)));
    }
  }
  return *b;
}

// cholesky(a): a is [..., N, N]; the result is a's shape.
absl::StatusOr<Shape> InferCholeskyShape(const Instruction& instruction) {
  PERFSIM_ASSIGN_OR_RETURN(const Shape* a, ArrayOperand(instruction, 0, "a"));
  PERFSIM_RETURN_IF_ERROR(CheckBatchedSquare(instruction, *a, "a"));
  return *a;
}

// batch-norm-training(operand, scale, offset) -> (normalised, batch mean, batch variance).
absl::StatusOr<Shape> InferBatchNormTrainingShape(const Instruction& instruction) {
  int64_t features = 0;
  PERFSIM_ASSIGN_OR_RETURN(const Shape* operand, BatchNormOperand(instruction, &features));
  const PrimitiveType type = operand->element_type();
  PERFSIM_RETURN_IF_ERROR(CheckFeatureOperand(instruction, 1, "scale", type, features));
  PERFSIM_RETURN_IF_ERROR(CheckFeatureOperand(instruction, 2, "offset", type, features));
  return NormTuple(*operand, features);
}

// batch-norm-inference(operand, scale, offset, mean, variance) -> the operand's shape.
absl::StatusOr<Shape> InferBatchNormInferenceShape(const Instruction& instruction) {
  int64_t features = 0;
  PERFSIM_ASSIGN_OR_RETURN(const Shape* operand, BatchNormOperand(instruction, &features));
  const PrimitiveType type = operand->element_type();
  PERFSIM_RETURN_IF_ERROR(CheckFeatureOperand(instruction, 1, "scale", type, features));
  PERFSIM_RETURN_IF_ERROR(CheckFeatureOperand(instruction, 2, "offset", type, features));
  PERFSIM_RETURN_IF_ERROR(CheckFeatureOperand(instruction, 3, "mean", type, features));
  PERFSIM_RETURN_IF_ERROR(CheckFeatureOperand(instruction, 4, "variance", type, features));
  return *operand;
}

// batch-norm-grad(operand, scale, mean, variance, grad_output)
//   -> (grad operand, grad scale, grad offset).
absl::StatusOr<Shape> InferBatchNormGradShape(const Instruction& instruction) {
  int64_t features = 0;
  PERFSIM_ASSIGN_OR_RETURN(const Shape* operand, BatchNormOperand(instruction, &features));
  const PrimitiveType type = operand->element_type();
  PERFSIM_RETURN_IF_ERROR(CheckFeatureOperand(instruction, 1, "scale", type, features));
  PERFSIM_RETURN_IF_ERROR(CheckFeatureOperand(instruction, 2, "mean", type, features));
  PERFSIM_RETURN_IF_ERROR(CheckFeatureOperand(instruction, 3, "variance", type, features));
  PERFSIM_ASSIGN_OR_RETURN(const Shape* grad, ArrayOperand(instruction, 4, "grad_output"));
  if (!SameShapeIgnoringLayout(*grad, *operand)) {
    return InferError(instruction,
                      absl::StrCat("grad_output of the operand's shape ", ShapeText(*operand)),
                      ShapeText(*grad));
  }
  return NormTuple(*operand, features);
}

// complex(real, imag): two f32 (f64) arrays of one shape -> c64 (c128).
absl::StatusOr<Shape> InferComplexShape(const Instruction& instruction) {
  PERFSIM_ASSIGN_OR_RETURN(const Shape* re, ArrayOperand(instruction, 0, "real part"));
  PERFSIM_ASSIGN_OR_RETURN(const Shape* im, ArrayOperand(instruction, 1, "imaginary part"));
  const PrimitiveType out = ComplexOf(re->element_type());
  if (out == PrimitiveType::kInvalid) {
    return InferError(instruction, "an f32 or f64 real part", ShapeText(*re));
  }
  if (!SameShapeIgnoringLayout(*re, *im)) {
    return InferError(instruction,
                      absl::StrCat("an imaginary part of the real part's shape ", ShapeText(*re)),
                      ShapeText(*im));
  }
  return Shape::Array(out, re->dimensions());
}

// scaled-dot(lhs, rhs, lhs_scale, rhs_scale): dot_general of lhs and rhs (the result type is
// the declared one, as for dot); each scale has its operand's rank and each of its
// dimensions divides the operand's (one scale per block, e.g. f32[2,10] with f32[2,2]: blocks
// of 1x5).
absl::StatusOr<Shape> InferScaledDotShape(const Instruction& instruction) {
  for (int64_t i = 0; i < 2; ++i) {
    PERFSIM_ASSIGN_OR_RETURN(const Shape* operand,
                             ArrayOperand(instruction, i, i == 0 ? "lhs" : "rhs"));
    PERFSIM_ASSIGN_OR_RETURN(const Shape* scale,
                             ArrayOperand(instruction, i + 2, i == 0 ? "lhs_scale" : "rhs_scale"));
    bool blocks = scale->rank() == operand->rank();
    for (int64_t d = 0; blocks && d < scale->rank(); ++d) {
      blocks = scale->dimensions(d) > 0 && operand->dimensions(d) % scale->dimensions(d) == 0;
    }
    if (!blocks) {
      return InferError(
          instruction,
          absl::StrCat(i == 0 ? "lhs_scale" : "rhs_scale", " of rank ", operand->rank(),
                       " whose dimensions divide the operand's ", ShapeText(*operand)),
          ShapeText(*scale));
    }
  }
  return InferDotShape(instruction);
}

}  // namespace perfsim
