// scan in the interpreter: the body runs once per position along the scan dimension, on the
// slices of the inputs there and the carries; its outputs are written into the stacked
// results. Slices are byte copies of row-major blocks (outer x 1 x inner), so every element
// type is handled the same way.
#include <cstring>

#include "absl/strings/str_cat.h"
#include "sim/interp/evaluator_linalg.h"
#include "sim/util/status.h"

namespace perfsim {
namespace interp {
namespace {

// Row-major blocks of an array around dimension d: `outer` blocks of `length` rows of
// `inner_bytes` bytes.
struct Blocks {
  int64_t outer = 1;
  int64_t length = 1;
  int64_t inner_bytes = 0;
};

Blocks BlocksOf(const Literal& array, int64_t d) {
  const Shape& shape = array.shape();
  Blocks b;
  int64_t inner = 1;
  for (int64_t i = 0; i < d; ++i) b.outer *= shape.dimensions(i);
  b.length = shape.dimensions(d);
  for (int64_t i = d + 1; i < shape.rank(); ++i) inner *= shape.dimensions(i);
  const int64_t elements = shape.ElementCount();
  const int64_t element_bytes =
      elements == 0 ? 0 : static_cast<int64_t>(array.data().size()) / elements;
  b.inner_bytes = inner * element_bytes;
  return b;
}

}  // namespace

absl::StatusOr<Value> EvalScan(DeviceEvaluator& ev, const Instruction& instruction,
                               OperandValues operands) {
  const InstructionAttributes& attrs = instruction.attributes();
  const Computation* body = instruction.to_apply();
  const std::vector<int64_t> dims = attrs.dimensions.value_or(std::vector<int64_t>{});
  const int64_t carries = attrs.num_carries.value_or(0);
  const int64_t inputs = static_cast<int64_t>(operands.size()) - carries;
  const Shape& shape = instruction.shape();
  // A body returning one array gives an untupled result (shape_inference_scan.cc).
  const bool tupled = shape.IsTuple();
  const int64_t value_count = tupled ? shape.tuple_size() : 1;
  if (body == nullptr || dims.size() != 1 || inputs < 1 || value_count < carries) {
    return absl::InvalidArgumentError(
        "expected to_apply, one scan dimension, at least one input and num_carries results");
  }
  const int64_t d = dims[0];
  const int64_t outputs = value_count - carries;
  const int64_t length = operands[0]->array_shape().dimensions(d);
  std::vector<std::shared_ptr<Literal>> stacked;
  for (int64_t j = 0; j < outputs; ++j) {
    PERFSIM_ASSIGN_OR_RETURN(std::shared_ptr<Literal> out,
                             ev.Allocate(tupled ? shape.tuple_shapes(j) : shape));
    stacked.push_back(std::move(out));
  }
  std::vector<Value> carry;
  for (int64_t c = 0; c < carries; ++c) carry.push_back(*operands[inputs + c]);
  const bool reverse = attrs.is_reverse.value_or(false);
  for (int64_t step = 0; step < length; ++step) {
    const int64_t position = reverse ? length - 1 - step : step;
    std::vector<Value> args;
    for (int64_t k = 0; k < inputs; ++k) {
      const Literal& in = operands[k]->array();
      const Shape& param = body->parameter(k)->shape();
      PERFSIM_ASSIGN_OR_RETURN(std::shared_ptr<Literal> slice,
                               ev.Allocate(Shape::Array(param.element_type(), param.dimensions())));
      const Blocks b = BlocksOf(in, d);
      for (int64_t o = 0; o < b.outer; ++o) {
        std::memcpy(slice->mutable_data().data() + o * b.inner_bytes,
                    in.data().data() + (o * b.length + position) * b.inner_bytes, b.inner_bytes);
      }
      args.push_back(Value::Array(std::move(slice)));
    }
    for (const Value& c : carry) args.push_back(c);
    PERFSIM_ASSIGN_OR_RETURN(Value returned, ev.Evaluate(*body, args));
    const std::vector<Value> result =
        returned.is_tuple() ? returned.elements() : std::vector<Value>{returned};
    if (static_cast<int64_t>(result.size()) != outputs + carries) {
      return absl::InvalidArgumentError(absl::StrCat("expected ", body->name(), " to return ",
                                                     outputs + carries, " values; got ",
                                                     result.size()));
    }
    for (int64_t j = 0; j < outputs; ++j) {
      const Value& y = result[j];
      const Blocks b = BlocksOf(*stacked[j], d);
      for (int64_t o = 0; o < b.outer; ++o) {
        std::memcpy(stacked[j]->mutable_data().data() + (o * b.length + position) * b.inner_bytes,
                    y.data() + o * b.inner_bytes, b.inner_bytes);
      }
    }
    for (int64_t c = 0; c < carries; ++c) carry[c] = result[outputs + c];
  }
  std::vector<Value> elements;
  for (auto& out : stacked) elements.push_back(Value::Array(std::move(out)));
  for (Value& c : carry) elements.push_back(std::move(c));
  if (!tupled) return std::move(elements[0]);
  return Value::Tuple(std::move(elements));
}

}  // namespace interp
}  // namespace perfsim
