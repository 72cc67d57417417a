#include "sim/interp/value.h"

#include <type_traits>
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

Literal Value::ReleaseToLiteral() && {
  if (is_array()) {
    // The buffer was allocated as a mutable Literal (BufferCounter); with no other holder,
    // taking its contents is what destroying the Value would have allowed anyway. The
    // counter's deleter still releases the bytes when the moved-from Literal goes.
    if (array_.use_count() == 1) {
      Literal taken = std::move(const_cast<Literal&>(*array_));
      array_.reset();
      return taken;
    }
    return *array_;
  }
  if (is_token_) return Literal(Shape::Tuple({}));
  bool has_token = false;
  for (const Value& e : elements_) has_token = has_token || e.is_token();
  if (has_token) return ToLiteral();  // keeps ToLiteral's token element shapes
  // CreateTuple, not Literal(shape()): that would first zero-fill every element.
  std::vector<Literal> parts;
  parts.reserve(elements_.size());
  for (Value& e : elements_) parts.push_back(std::move(e).ReleaseToLiteral());
  elements_.clear();
  return Literal::CreateTuple(std::move(parts));
}

namespace {

const std::vector<Literal>& TupleElementsOf(const Literal& literal) {
  return literal.tuple_elements();
}
std::vector<Literal>& TupleElementsOf(Literal& literal) {
  return *literal.mutable_tuple_elements();
}

// ValueFromLiteral for both: a const literal is copied, a mutable one moved from.
template <typename L>
absl::StatusOr<Value> FromLiteral(BufferCounter& buffers, L& literal) {
  if (literal.shape().IsTuple()) {
    std::vector<Value> elements;
    for (L& e : TupleElementsOf(literal)) {
      absl::StatusOr<Value> v = FromLiteral(buffers, e);
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
  if constexpr (std::is_const_v<L>) {
    return Value::Array(buffers.Adopt(literal));
  } else {
    return Value::Array(buffers.Adopt(std::move(literal)));
  }
}

}  // namespace

absl::StatusOr<Value> ValueFromLiteral(BufferCounter& buffers, const Literal& literal) {
  return FromLiteral(buffers, literal);
}

absl::StatusOr<Value> ValueFromLiteral(BufferCounter& buffers, Literal&& literal) {
  return FromLiteral(buffers, literal);
}

}  // namespace interp
}  // namespace perfsim
