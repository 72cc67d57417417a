// Internal: moving operands of dot-like ops into and out of the accumulation type.
//
// Dots accumulate in the compute type of their *result* element type (float for f32, bf16,
// f16 and f8 results, double for f64, int64 for integers and pred, std::complex<float/double>
// for c64/c128 -- without conjugation, as XLA's dot), which is how
// `preferred_element_type` picks the accumulator: a bf16 x bf16 -> f32 dot multiplies exact
// bf16 values and sums in f32; a bf16 -> bf16 dot sums in f32 and rounds once at the end.
//
//   std::vector<float> a;
//   PERFSIM_RETURN_IF_ERROR(ToAccumulator(lhs_literal, &a));
//   std::vector<float> packed = PermuteDims(a, lhs_dims, {0, 2, 1});
//   ...
//   PERFSIM_RETURN_IF_ERROR(StoreAccumulator(c, out_literal));
#ifndef PERFSIM_SIM_INTERP_DOT_UTIL_H_
#define PERFSIM_SIM_INTERP_DOT_UTIL_H_

#include <complex>
#include <cstdint>
#include <type_traits>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/types/span.h"
#include "sim/interp/array_util.h"
#include "sim/interp/element_types.h"
#include "sim/interp/scalar_ops.h"
#include "sim/ir/literal.h"

namespace perfsim {
namespace interp {

template <typename C>
using AccumulatorTraits = std::conditional_t<
    std::is_same_v<C, float>, NativeFloatTraits<PrimitiveType::kF32, float>,
    std::conditional_t<
        std::is_same_v<C, double>, NativeFloatTraits<PrimitiveType::kF64, double>,
        std::conditional_t<
            std::is_same_v<C, std::complex<float>>, ComplexTraits<PrimitiveType::kC64, float>,
            std::conditional_t<std::is_same_v<C, std::complex<double>>,
                               ComplexTraits<PrimitiveType::kC128, double>,
                               IntTraits<PrimitiveType::kS64, int64_t>>>>>;

// Calls f(C{}) with the accumulation type for results of element type `result_type`.
template <typename F>
absl::Status DispatchAccumulator(PrimitiveType result_type, F&& f) {
  if (result_type == PrimitiveType::kF64) return f(double{});
  if (result_type == PrimitiveType::kC64) return f(std::complex<float>{});
  if (result_type == PrimitiveType::kC128) return f(std::complex<double>{});
  if (IsFloatingPoint(result_type)) return f(float{});
  if (IsInteger(result_type) || result_type == PrimitiveType::kPred) return f(int64_t{});
  return absl::InvalidArgumentError(
      absl::StrCat("expected an array result element type; got ", PrimitiveTypeName(result_type)));
}

// All elements of `literal`, converted to C (XLA convert semantics). A complex literal into a
// real accumulator is InvalidArgument: the imaginary parts would be dropped.
template <typename C>
absl::Status ToAccumulator(const Literal& literal, std::vector<C>* out) {
  const int64_t n = literal.element_count();
  out->resize(n);
  return DispatchElementType(literal.shape().element_type(), "", [&](auto traits) {
    using T = decltype(traits);
    if constexpr (kIsComplex<T> && !kIsComplex<AccumulatorTraits<C>>) {
      return absl::InvalidArgumentError(
          absl::StrCat("expected a complex result for ", PrimitiveTypeName(T::kType),
                       " operands; got a real one"));
    } else {
      const uint8_t* in = literal.data().data();
      for (int64_t i = 0; i < n; ++i) {
        (*out)[i] = ConvertValue<T, AccumulatorTraits<C>>(T::Load(in, i));
      }
      return absl::OkStatus();
    }
  });
}

// Stores `values` (row-major, the literal's element count) into `literal`, rounding to its
// element type.
template <typename C>
absl::Status StoreAccumulator(const std::vector<C>& values, Literal* literal) {
  const int64_t n = literal->element_count();
  return DispatchElementType(literal->shape().element_type(), "", [&](auto traits) {
    using T = decltype(traits);
    uint8_t* o = literal->mutable_data().data();
    for (int64_t i = 0; i < n; ++i) {
      T::Store(o, i, ConvertValue<AccumulatorTraits<C>, T>(values[i]));
    }
    return absl::OkStatus();
  });
}

// The array `src` of dimensions `dims`, transposed so that dimension i of the result is
// dimension perm[i] of `src`.
template <typename C>
std::vector<C> PermuteDims(const C* src, int64_t count, absl::Span<const int64_t> dims,
                           absl::Span<const int64_t> perm) {
  const std::vector<int64_t> strides = RowMajorStrides(dims);
  std::vector<int64_t> out_dims(perm.size()), src_strides(perm.size());
  for (size_t i = 0; i < perm.size(); ++i) {
    out_dims[i] = dims[perm[i]];
    src_strides[i] = strides[perm[i]];
  }
  std::vector<C> out(static_cast<size_t>(count));
  if (count > 0) {
    StridedCopy(reinterpret_cast<const uint8_t*>(src), 0, src_strides,
                reinterpret_cast<uint8_t*>(out.data()), 0, RowMajorStrides(out_dims), out_dims,
                sizeof(C));
  }
  return out;
}
template <typename C>
std::vector<C> PermuteDims(const std::vector<C>& src, absl::Span<const int64_t> dims,
                           absl::Span<const int64_t> perm) {
  return PermuteDims(src.data(), static_cast<int64_t>(src.size()), dims, perm);
}

// True when `perm` is 0, 1, ..., n-1.
inline bool IsIdentityPermutation(absl::Span<const int64_t> perm) {
  for (size_t i = 0; i < perm.size(); ++i) {
    if (perm[i] != static_cast<int64_t>(i)) return false;
  }
  return true;
}

// `literal` in the accumulation type C with its dimensions permuted by `perm`, row-major. An
// f32 literal needs no conversion: with C = float it is read in place when `perm` is the
// identity (the result points into it) and permuted straight from its bytes otherwise; other
// types are converted into `store` first.
template <typename C>
absl::StatusOr<const C*> AccumulatorMatrix(const Literal& literal, absl::Span<const int64_t> perm,
                                           std::vector<C>* store) {
  const bool identity = IsIdentityPermutation(perm);
  if constexpr (std::is_same_v<C, float>) {
    if (literal.shape().element_type() == PrimitiveType::kF32) {
      const float* data = reinterpret_cast<const float*>(literal.data().data());
      if (identity) return data;
      *store = PermuteDims(data, literal.element_count(), literal.shape().dimensions(), perm);
      return store->data();
    }
  }
  absl::Status converted = ToAccumulator(literal, store);
  if (!converted.ok()) return converted;
  if (!identity) *store = PermuteDims(*store, literal.shape().dimensions(), perm);
  return store->data();
}

}  // namespace interp
}  // namespace perfsim

#endif  // PERFSIM_SIM_INTERP_DOT_UTIL_H_
