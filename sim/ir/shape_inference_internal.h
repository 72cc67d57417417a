// Helpers shared by the shape_inference*.cc files. Not part of the IR's public interface.
//
// Every helper that can fail returns InvalidArgument in the house form
//   "<instruction name>: expected X; got Y"
// e.g. InferError(dot, "lhs batch dimensions {0} and rhs batch dimensions {0,1} of equal
// count", "1 vs 2").
#ifndef PERFSIM_SIM_IR_SHAPE_INFERENCE_INTERNAL_H_
#define PERFSIM_SIM_IR_SHAPE_INFERENCE_INTERNAL_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "sim/ir/instruction.h"
#include "sim/ir/shape.h"

namespace perfsim {
namespace infer_internal {

// InvalidArgument "<name>: expected <expected>; got <got>".
absl::Status InferError(const Instruction& instruction, absl::string_view expected,
                        absl::string_view got);

// "f32[8,16]" (no layout): the form every inference message uses.
std::string ShapeText(const Shape& shape);
// "{1,2}".
std::string ListText(absl::Span<const int64_t> values);

// `shape` with every layout removed (recursively). Inferred shapes carry no layout.
Shape StripLayout(Shape shape);

// An array shape with the dimensions (and dynamic flags) of `like` and element type `type`.
Shape ArrayLike(const Shape& like, PrimitiveType type);

// Operand `index` as an array; error names it `role` ("lhs", "operand 2", ...).
absl::StatusOr<const Shape*> ArrayOperand(const Instruction& instruction, int64_t index,
                                          absl::string_view role);

// Checks that each entry of `dims` is a dimension of a rank-`rank` shape and that none
// repeats. `what` names the list in messages ("lhs contracting dimensions").
absl::Status CheckDimensionList(const Instruction& instruction, absl::Span<const int64_t> dims,
                                int64_t rank, absl::string_view what);

// Same as CheckDimensionList, and the entries must be strictly increasing.
absl::Status CheckSortedDimensionList(const Instruction& instruction,
                                      absl::Span<const int64_t> dims, int64_t rank,
                                      absl::string_view what);

// The called computation `computation`, which must be set and have a root; `role` is the
// attribute name in messages ("to_apply", "condition", ...).
absl::StatusOr<const Computation*> RequireComputation(const Instruction& instruction,
                                                      const Computation* computation,
                                                      absl::string_view role);

// True when both types are equal, or both floating point (XLA's
// CompatibleIgnoringFpPrecision for element types).
bool SameTypeIgnoringFpPrecision(PrimitiveType a, PrimitiveType b);

// Checks a reducer computation (reduce, reduce-window, scatter, all-reduce, reduce-scatter,
// select-and-scatter's scatter): it takes 2·N scalar parameters, the first N of types
// compatible with `accumulator_types` and the last N with `input_types` (fp precision
// ignored), and returns N scalars (a tuple when N > 1) compatible with the accumulators.
// Returns the element types the reducer produces.
absl::StatusOr<std::vector<PrimitiveType>> CheckReducer(
    const Instruction& instruction, const Computation* reducer, absl::string_view role,
    absl::Span<const PrimitiveType> accumulator_types, absl::Span<const PrimitiveType> input_types);

// A tuple of `shapes` when there is more than one, else the single shape.
Shape TupleIfMany(std::vector<Shape> shapes);

// Output size of one windowed dimension (reduce-window, convolution, select-and-scatter):
// the input is base-dilated and padded, then a dilated window is strided over it. 0 when the
// padded input is shorter than the dilated window, as in XLA.
int64_t WindowedOutputSize(int64_t input_size, int64_t window_size, int64_t stride,
                           int64_t padding_low, int64_t padding_high, int64_t base_dilation,
                           int64_t window_dilation);

// Checks one window dimension's fields (size, stride and dilations >= 1).
absl::Status CheckWindowDimension(const Instruction& instruction, int64_t index, int64_t size,
                                  int64_t stride, int64_t base_dilation, int64_t window_dilation);

}  // namespace infer_internal
}  // namespace perfsim

#endif  // PERFSIM_SIM_IR_SHAPE_INFERENCE_INTERNAL_H_
