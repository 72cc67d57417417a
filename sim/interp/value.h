// Runtime values of the interpreter and the counter every buffer is charged to.
//
// A Value is an immutable tree: an array (a shared, read-only Literal), a tuple of Values, or
// a token. Sharing makes tuple, get-tuple-element, while-loop state and pass-through ops
// (copy, opt-barrier, ...) free of copies.
//
//   BufferCounter buffers;
//   std::shared_ptr<Literal> buffer = buffers.Allocate(Shape::Array(PrimitiveType::kF32, {8, 16}));
//   ... fill buffer->mutable_data() ...
//   Value v = Value::Array(std::move(buffer));
//
// The counter sees the bytes of every array buffer alive anywhere in the run (all virtual
// devices together); a buffer is released when its last Value goes away. It only observes:
// the memory budget is decided before the run, from a static liveness pass over the program
// (memory_plan.h), so that the decision cannot depend on how device threads interleave.
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

class BufferCounter {
 public:
  BufferCounter() = default;
  BufferCounter(const BufferCounter&) = delete;
  BufferCounter& operator=(const BufferCounter&) = delete;

  // A zero-filled array literal of `shape`, counted until it is destroyed.
  std::shared_ptr<Literal> Allocate(const Shape& shape);
  // Takes ownership of an existing literal (e.g. an input) and counts it.
  std::shared_ptr<Literal> Adopt(Literal literal);

  int64_t live_bytes() const { return live_bytes_.load(); }
  // The most bytes alive at once so far. With several device threads this depends on how
  // they interleaved (and on when the collective rendezvous drops the operands it shares), so
  // it is a diagnostic, never an input to a decision.
  int64_t peak_bytes() const { return peak_bytes_.load(); }

 private:
  void Charge(int64_t bytes);
  void Release(int64_t bytes) { live_bytes_.fetch_sub(bytes); }
  std::shared_ptr<Literal> Wrap(Literal* literal, int64_t bytes);

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
  // The same Literal as ToLiteral(), moving out each array buffer this Value is the last
  // holder of instead of copying it (a run's outputs can be gigabytes). Only when no other
  // thread can still be using the value's buffers.
  Literal ReleaseToLiteral() &&;

 private:
  std::shared_ptr<const Literal> array_;
  std::vector<Value> elements_;
  bool is_token_ = false;
};

// A Value holding a copy of `literal` (tuples element by element), counted by `buffers`.
// Elided literals (values unknown) are InvalidArgument.
absl::StatusOr<Value> ValueFromLiteral(BufferCounter& buffers, const Literal& literal);
// The same, taking the literal's buffers instead of copying them.
absl::StatusOr<Value> ValueFromLiteral(BufferCounter& buffers, Literal&& literal);

}  // namespace interp
}  // namespace perfsim

#endif  // PERFSIM_SIM_INTERP_VALUE_H_
