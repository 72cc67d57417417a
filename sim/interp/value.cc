#include "sim/interp/value.h"

#include <utility>


namespace perfsim {
namespace interp {

void BufferCounter::Charge(int64_t bytes) {
  const int64_t now = live_bytes_.fetch_add(bytes) + bytes;
  int64_t peak = peak_bytes_.load();
  while (now > peak && !peak_bytes_.compare_exchange_weak(peak, now)) {
  }
}

std::shared_ptr<Literal> BufferCounter::Wrap(Literal* literal, int64_t bytes) {
  return std::shared_ptr<Literal>(literal, [this, bytes](Literal* l) {
    delete l;
    Release(bytes);
  });
}

std::shared_ptr<Literal> BufferCounter::Allocate(const Shape& shape) {
  const int64_t bytes = shape.ByteSize();
  Charge(bytes);
  return Wrap(new Literal(shape), bytes);
}

std::shared_ptr<Literal> BufferCounter::Adopt(Literal literal) {
  const int64_t bytes = static_cast<int64_t>(literal.data().size());
  Charge(bytes);
  return Wrap(new Literal(std::move(literal)), bytes);
}

Value Value::Array(std::shared_ptr<const Literal> array) {
  Value v;
  v.array_ = std::move(array);
  return v;
}

Value Value::Tuple(std::vector<Value> elements) {
  Value v;
  v.elements_ = std::move(elements);
  return v;
}

Value Value::Token() {
  Value v;
  v.is_token_ = true;
  return v;
}

Shape Value::shape() const {
  if (is_array()) return array_->shape();
  if (is_token_) return Shape::Token();
  std::vector<Shape> shapes;
  shapes.reserve(elements_.size());
  for (const Value& e : elements_) shapes.push_back(e.shape());
  return Shape::Tuple(std::move(shapes));
}

Literal Value::ToLiteral() const {
  if (is_array()) return *array_;
  if (is_token_) return Literal(Shape::Tuple({}));
  // Literal has no way to build a tuple from parts, so fill a zero tuple of the right shape.
  Literal result(shape());
  for (size_t i = 0; i < elements_.size(); ++i) {
    (*result.mutable_tuple_elements())[i] = elements_[i].ToLiteral();
  }
  return result;
}

absl::StatusOr<Value> ValueFromLiteral(BufferCounter& buffers, const Literal& literal) {
  if (literal.shape().IsTuple()) {
    std::vector<Value> elements;
    for (const Literal& e : literal.tuple_elements()) {
      absl::StatusOr<Value> v = ValueFromLiteral(buffers, e);
      if (!v.ok()) return v.status();
      elements.push_back(*std::move(v));
    }
    return Value::Tuple(std::move(elements));
  }
  if (literal.shape().IsToken()) return Value::Token();
  if (literal.elided()) {
    return absl::InvalidArgumentError(
        "expected literal values; got {...} (elided from the dump, so unknown)");
  }
  return Value::Array(buffers.Adopt(literal));
}

}  // namespace interp
}  // namespace perfsim
