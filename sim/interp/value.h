// Runtime values of the interpreter and the memory budget that every buffer is charged to.
//
// A Value is an immutable tree: an array (a shared, read-only Literal), a tuple of Values, or
// a token. Sharing makes tuple, get-tuple-element, while-loop state and pass-through ops
// (copy, opt-barrier, ...) free of copies.
//
//   MemoryBudget budget(/*limit_bytes=*/1 << 30);
//   PERFSIM_ASSIGN_OR_RETURN(std::shared_ptr<Literal> buffer,
//                            budget.Allocate(Shape::Array(PrimitiveType::kF32, {8, 16})));
//   ... fill buffer->mutable_data() ...
//   Value v = Value::Array(std::move(buffer));
//
// The budget counts the bytes of every array buffer alive anywhere in the run (all virtual
// devices together); a buffer is released when its last Value goes away. Allocate fails with
// ResourceExhausted ("expected live buffers within the memory budget of B bytes; a buffer of
// X bytes would bring them to N bytes") rather than exceed the limit.
#ifndef PERFSIM_SIM_INTERP_VALUE_H_
#define PERFSIM_SIM_INTERP_VALUE_H_

#include <atomic>
#include <cstdint>
#include <memory>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "sim/ir/literal.h"
#include "sim/ir/shape.h"

namespace perfsim {
namespace interp {

class MemoryBudget {
 public:
  explicit MemoryBudget(int64_t limit_bytes) : limit_bytes_(limit_bytes) {}
  MemoryBudget(const MemoryBudget&) = delete;
  MemoryBudget& operator=(const MemoryBudget&) = delete;

  // A zero-filled array literal of `shape`, charged to the budget until it is destroyed.
  absl::StatusOr<std::shared_ptr<Literal>> Allocate(const Shape& shape);
  // Takes ownership of an existing literal (e.g. an input) and charges it.
  absl::StatusOr<std::shared_ptr<Literal>> Adopt(Literal literal);

  int64_t limit_bytes() const { return limit_bytes_; }
  int64_t live_bytes() const { return live_bytes_.load(); }
  int64_t peak_bytes() const { return peak_bytes_.load(); }

 private:
  absl::Status Charge(int64_t bytes);
  void Release(int64_t bytes) { live_bytes_.fetch_sub(bytes); }
  std::shared_ptr<Literal> Wrap(Literal* literal, int64_t bytes);

  const int64_t limit_bytes_;
  std::atomic<int64_t> live_bytes_{0};
  std::atomic<int64_t> peak_bytes_{0};
};

class Value {
 public:
  // An empty tuple.
  Value() = default;

  static Value Array(std::shared_ptr<const Literal> array);
  static Value Tuple(std::vector<Value> elements);
  static Value Token();

  bool is_array() const { return array_ != nullptr; }
  bool is_tuple() const { return array_ == nullptr && !is_token_; }
  bool is_token() const { return is_token_; }

  // Only for arrays.
  const Literal& array() const { return *array_; }
  const std::shared_ptr<const Literal>& array_ptr() const { return array_; }
  const Shape& array_shape() const { return array_->shape(); }
  const uint8_t* data() const { return array_->data().data(); }

  // Only for tuples.
  const std::vector<Value>& elements() const { return elements_; }
  const Value& element(int64_t i) const { return elements_[i]; }

  // The shape of the value (tuple shapes built from the elements).
  Shape shape() const;
  // A deep copy as a plain Literal (tuples become tuple literals; a token becomes an empty
  // tuple literal).
  Literal ToLiteral() const;

 private:
  std::shared_ptr<const Literal> array_;
  std::vector<Value> elements_;
  bool is_token_ = false;
};

// A Value holding a copy of `literal` (tuples element by element), charged to `budget`.
// Elided literals (values unknown) are InvalidArgument.
absl::StatusOr<Value> ValueFromLiteral(MemoryBudget& budget, const Literal& literal);

}  // namespace interp
}  // namespace perfsim

#endif  // PERFSIM_SIM_INTERP_VALUE_H_
