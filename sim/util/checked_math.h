// Checked integer arithmetic for every place where a number from input (a flag, a shape, a
// literal, an .npy header, a routing file, a collective's offsets) meets another number.
//
// Overflow is bad input, never a wrap: each function returns InvalidArgument naming the
// quantity and the limit it passed, e.g.
//
//   PERFSIM_ASSIGN_OR_RETURN(int64_t tokens, CheckedMul("tokens = batch * seq", batch, seq));
//   // batch 3, seq 6148914691236517206 ->
//   //   "tokens = batch * seq: 3 * 6148914691236517206 overflows int64 (max 9223372036854775807)"
//
//   PERFSIM_ASSIGN_OR_RETURN(int64_t end, CheckedAdd("output_offsets + sizes", offset, size));
//   PERFSIM_RETURN_IF_ERROR(CheckAtMost("tokens", tokens, kMaxTokens));
//
// The Try* forms return false instead of a status, for loops that build their own message.
// All arithmetic is on int64_t: sizes, counts, offsets and byte counts in perfsim are int64.
#ifndef PERFSIM_SIM_UTIL_CHECKED_MATH_H_
#define PERFSIM_SIM_UTIL_CHECKED_MATH_H_

#include <cstdint>
#include <initializer_list>
#include <limits>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"

namespace perfsim {

inline constexpr int64_t kInt64Max = std::numeric_limits<int64_t>::max();

// a + b, a * b, a - b into *out; false on int64 overflow (then *out is unspecified).
inline bool TryAdd(int64_t a, int64_t b, int64_t* out) { return !__builtin_add_overflow(a, b, out); }
inline bool TrySub(int64_t a, int64_t b, int64_t* out) { return !__builtin_sub_overflow(a, b, out); }
inline bool TryMul(int64_t a, int64_t b, int64_t* out) { return !__builtin_mul_overflow(a, b, out); }

// a + b and a * b for non-negative a and b, saturating at kInt64Max instead of wrapping: for
// totals that are compared with a limit (a memory plan against its budget), where "at least
// kInt64Max" is as good as the exact sum for refusing it.
inline int64_t SaturatingAdd(int64_t a, int64_t b) {
  int64_t out = 0;
  return TryAdd(a, b, &out) ? out : kInt64Max;
}
inline int64_t SaturatingMul(int64_t a, int64_t b) {
  int64_t out = 0;
  return TryMul(a, b, &out) ? out : kInt64Max;
}

// `what` names the quantity in the message ("tokens = batch * seq", "bytes of f32[...]").
inline absl::StatusOr<int64_t> CheckedAdd(absl::string_view what, int64_t a, int64_t b) {
  int64_t out = 0;
  if (TryAdd(a, b, &out)) return out;
  return absl::InvalidArgumentError(
      absl::StrCat(what, ": ", a, " + ", b, " overflows int64 (max ", kInt64Max, ")"));
}

inline absl::StatusOr<int64_t> CheckedSub(absl::string_view what, int64_t a, int64_t b) {
  int64_t out = 0;
  if (TrySub(a, b, &out)) return out;
  return absl::InvalidArgumentError(
      absl::StrCat(what, ": ", a, " - ", b, " overflows int64 (max ", kInt64Max, ")"));
}

inline absl::StatusOr<int64_t> CheckedMul(absl::string_view what, int64_t a, int64_t b) {
  int64_t out = 0;
  if (TryMul(a, b, &out)) return out;
  return absl::InvalidArgumentError(
      absl::StrCat(what, ": ", a, " * ", b, " overflows int64 (max ", kInt64Max, ")"));
}

// The product of `factors` (1 for none), checked at each step.
inline absl::StatusOr<int64_t> CheckedProduct(absl::string_view what,
                                              std::initializer_list<int64_t> factors) {
  int64_t product = 1;
  for (int64_t f : factors) {
    if (!TryMul(product, f, &product)) {
      return absl::InvalidArgumentError(
          absl::StrCat(what, ": the product overflows int64 (max ", kInt64Max, ")"));
    }
  }
  return product;
}

// OK when value <= limit; else InvalidArgument "what: expected at most L; got V".
inline absl::Status CheckAtMost(absl::string_view what, int64_t value, int64_t limit) {
  if (value <= limit) return absl::OkStatus();
  return absl::InvalidArgumentError(
      absl::StrCat(what, ": expected at most ", limit, "; got ", value));
}

// OK when 0 <= offset and offset + size <= extent without overflow (size >= 0); the check a
// slice [offset, offset + size) of an array of `extent` elements needs. The message names the
// three numbers: "what: expected offset + size <= 16 with offset >= 0; got 5 + 12".
inline absl::Status CheckRange(absl::string_view what, int64_t offset, int64_t size,
                               int64_t extent) {
  int64_t end = 0;
  if (offset >= 0 && size >= 0 && TryAdd(offset, size, &end) && end <= extent) {
    return absl::OkStatus();
  }
  return absl::InvalidArgumentError(absl::StrCat(what, ": expected offset + size <= ", extent,
                                                 " with offset >= 0 and size >= 0; got ", offset,
                                                 " + ", size));
}

}  // namespace perfsim

#endif  // PERFSIM_SIM_UTIL_CHECKED_MATH_H_
