// The interpreter's one place of element-type dispatch (STYLE rule 11).
//
// Every array element type maps to a traits struct that says how an element is stored in a
// Literal (Storage, little-endian, ByteWidth bytes) and in which C++ type arithmetic happens
// (Compute):
//
//   type                     Storage    Compute   rounding after every op
//   pred                     uint8_t    bool      -
//   s8 s16 s32 s64           intN_t     intN_t    wraps (arithmetic done in unsigned)
//   u8 u16 u32 u64           uintN_t    uintN_t   wraps
//   s4 s2 s1 / u4 u2 u1      uint8_t    int/uint  wraps to the type's width
//   f32                      float      float     (native)
//   f64                      double     double    (native)
//   bf16                     uint16_t   float     round to nearest even (fast path)
//   f16, every f8/f6/f4      uint8/16   float     round to nearest even via float_types.h
//   c64 / c128               2 x f32/64 std::complex<float/double>   (native)
//
// Ops on narrow floats therefore compute in f32 and round the result to the storage type,
// which is what XLA's CPU backend does. Complex elements are stored real part first, as
// Literal and NumPy store them.
//
//   absl::Status s = DispatchElementType(shape.element_type(), "add.1", [&](auto traits) {
//     using T = decltype(traits);
//     T::Store(out, i, T::Load(a, i) + T::Load(b, i));
//     return absl::OkStatus();
//   });
#ifndef PERFSIM_SIM_INTERP_ELEMENT_TYPES_H_
#define PERFSIM_SIM_INTERP_ELEMENT_TYPES_H_

#include <complex>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "sim/ir/float_types.h"
#include "sim/ir/primitive_type.h"

namespace perfsim {
namespace interp {

enum class ElementKind { kPred, kSigned, kUnsigned, kFloat, kComplex };

template <typename StorageT>
inline StorageT LoadRaw(const uint8_t* data, int64_t i) {
  StorageT value;
  std::memcpy(&value, data + i * static_cast<int64_t>(sizeof(StorageT)), sizeof(StorageT));
  return value;
}

template <typename StorageT>
inline void StoreRaw(uint8_t* data, int64_t i, StorageT value) {
  std::memcpy(data + i * static_cast<int64_t>(sizeof(StorageT)), &value, sizeof(StorageT));
}

struct PredTraits {
  static constexpr PrimitiveType kType = PrimitiveType::kPred;
  static constexpr ElementKind kKind = ElementKind::kPred;
  using Storage = uint8_t;
  using Compute = bool;
  static bool Load(const uint8_t* data, int64_t i) { return data[i] != 0; }
  static void Store(uint8_t* data, int64_t i, bool value) { data[i] = value ? 1 : 0; }
  static bool Round(bool value) { return value; }
};

// Full-width integers. Arithmetic on them goes through WrapAdd etc. below.
template <PrimitiveType kTypeV, typename Int>
struct IntTraits {
  static constexpr PrimitiveType kType = kTypeV;
  static constexpr ElementKind kKind =
      std::is_signed_v<Int> ? ElementKind::kSigned : ElementKind::kUnsigned;
  using Storage = Int;
  using Compute = Int;
  static Int Load(const uint8_t* data, int64_t i) { return LoadRaw<Int>(data, i); }
  static void Store(uint8_t* data, int64_t i, Int value) { StoreRaw<Int>(data, i, value); }
  static Int Round(Int value) { return value; }
};

// Sub-byte integers (s4, u4, ...): one byte per element holding the low kBits bits, as
// Literal stores them. Compute in int8_t / uint8_t and wrap to kBits.
template <PrimitiveType kTypeV, int kBits, bool kSignedV>
struct SubByteIntTraits {
  static constexpr PrimitiveType kType = kTypeV;
  static constexpr ElementKind kKind = kSignedV ? ElementKind::kSigned : ElementKind::kUnsigned;
  using Storage = uint8_t;
  using Compute = std::conditional_t<kSignedV, int8_t, uint8_t>;
  static Compute Round(Compute value) {
    const uint8_t mask = static_cast<uint8_t>((1u << kBits) - 1u);
    const uint8_t low = static_cast<uint8_t>(static_cast<uint8_t>(value) & mask);
    if constexpr (kSignedV) {
      const uint8_t sign = static_cast<uint8_t>(1u << (kBits - 1));
      return static_cast<int8_t>(static_cast<int>(low ^ sign) - static_cast<int>(sign));
    } else {
      return low;
    }
  }
  static Compute Load(const uint8_t* data, int64_t i) {
    return Round(static_cast<Compute>(data[i]));
  }
  static void Store(uint8_t* data, int64_t i, Compute value) {
    data[i] = static_cast<uint8_t>(static_cast<uint8_t>(value) & ((1u << kBits) - 1u));
  }
};

template <PrimitiveType kTypeV, typename Float>
struct NativeFloatTraits {
  static constexpr PrimitiveType kType = kTypeV;
  static constexpr ElementKind kKind = ElementKind::kFloat;
  using Storage = Float;
  using Compute = Float;
  static Float Load(const uint8_t* data, int64_t i) { return LoadRaw<Float>(data, i); }
  static void Store(uint8_t* data, int64_t i, Float value) { StoreRaw<Float>(data, i, value); }
  static Float Round(Float value) { return value; }
};

struct Bf16Traits {
  static constexpr PrimitiveType kType = PrimitiveType::kBF16;
  static constexpr ElementKind kKind = ElementKind::kFloat;
  using Storage = uint16_t;
  using Compute = float;
  static float Load(const uint8_t* data, int64_t i) {
    return Bf16BitsToFloat(LoadRaw<uint16_t>(data, i));
  }
  static void Store(uint8_t* data, int64_t i, float value) {
    StoreRaw<uint16_t>(data, i, FloatToBf16Bits(value));
  }
  static float Round(float value) { return Bf16BitsToFloat(FloatToBf16Bits(value)); }
};

// f16 and the f8/f6/f4 formats, through the shared bit-exact conversions of float_types.h.
template <PrimitiveType kTypeV>
struct NarrowFloatTraits {
  static constexpr PrimitiveType kType = kTypeV;
  static constexpr ElementKind kKind = ElementKind::kFloat;
  using Storage = std::conditional_t<kTypeV == PrimitiveType::kF16, uint16_t, uint8_t>;
  using Compute = float;
  static float Load(const uint8_t* data, int64_t i) {
    return static_cast<float>(DecodeFloat(kType, LoadRaw<Storage>(data, i)));
  }
  static void Store(uint8_t* data, int64_t i, float value) {
    StoreRaw<Storage>(data, i, static_cast<Storage>(EncodeFloat(kType, value)));
  }
  static float Round(float value) {
    return static_cast<float>(RoundToFloatType(kType, static_cast<double>(value)));
  }
};

// c64 and c128: two IEEE components, real first. Component is the component's C++ type.
template <PrimitiveType kTypeV, typename Float>
struct ComplexTraits {
  static constexpr PrimitiveType kType = kTypeV;
  static constexpr ElementKind kKind = ElementKind::kComplex;
  using Storage = std::complex<Float>;
  using Compute = std::complex<Float>;
  using Component = Float;
  static Compute Load(const uint8_t* data, int64_t i) {
    Float parts[2];
    std::memcpy(parts, data + i * static_cast<int64_t>(sizeof(parts)), sizeof(parts));
    return Compute(parts[0], parts[1]);
  }
  static void Store(uint8_t* data, int64_t i, Compute value) {
    const Float parts[2] = {value.real(), value.imag()};
    std::memcpy(data + i * static_cast<int64_t>(sizeof(parts)), parts, sizeof(parts));
  }
  static Compute Round(Compute value) { return value; }
};

// Calls `f(Traits{})` with the traits of `type` and returns its Status. Non-array types give
// InvalidArgument naming `where`.
template <typename F>
absl::Status DispatchElementType(PrimitiveType type, absl::string_view where, F&& f) {
  using P = PrimitiveType;
  switch (type) {
    case P::kPred:
      return f(PredTraits{});
    case P::kS8:
      return f(IntTraits<P::kS8, int8_t>{});
    case P::kS16:
      return f(IntTraits<P::kS16, int16_t>{});
    case P::kS32:
      return f(IntTraits<P::kS32, int32_t>{});
    case P::kS64:
      return f(IntTraits<P::kS64, int64_t>{});
    case P::kU8:
      return f(IntTraits<P::kU8, uint8_t>{});
    case P::kU16:
      return f(IntTraits<P::kU16, uint16_t>{});
    case P::kU32:
      return f(IntTraits<P::kU32, uint32_t>{});
    case P::kU64:
      return f(IntTraits<P::kU64, uint64_t>{});
    case P::kS4:
      return f(SubByteIntTraits<P::kS4, 4, true>{});
    case P::kS2:
      return f(SubByteIntTraits<P::kS2, 2, true>{});
    case P::kS1:
      return f(SubByteIntTraits<P::kS1, 1, true>{});
    case P::kU4:
      return f(SubByteIntTraits<P::kU4, 4, false>{});
    case P::kU2:
      return f(SubByteIntTraits<P::kU2, 2, false>{});
    case P::kU1:
      return f(SubByteIntTraits<P::kU1, 1, false>{});
    case P::kF32:
      return f(NativeFloatTraits<P::kF32, float>{});
    case P::kF64:
      return f(NativeFloatTraits<P::kF64, double>{});
    case P::kBF16:
      return f(Bf16Traits{});
    case P::kF16:
      return f(NarrowFloatTraits<P::kF16>{});
    case P::kF8E5M2:
      return f(NarrowFloatTraits<P::kF8E5M2>{});
    case P::kF8E4M3FN:
      return f(NarrowFloatTraits<P::kF8E4M3FN>{});
    case P::kF8E4M3B11FNUZ:
      return f(NarrowFloatTraits<P::kF8E4M3B11FNUZ>{});
    case P::kF8E5M2FNUZ:
      return f(NarrowFloatTraits<P::kF8E5M2FNUZ>{});
    case P::kF8E4M3FNUZ:
      return f(NarrowFloatTraits<P::kF8E4M3FNUZ>{});
    case P::kF8E4M3:
      return f(NarrowFloatTraits<P::kF8E4M3>{});
    case P::kF8E3M4:
      return f(NarrowFloatTraits<P::kF8E3M4>{});
    case P::kF4E2M1FN:
      return f(NarrowFloatTraits<P::kF4E2M1FN>{});
    case P::kF8E8M0FNU:
      return f(NarrowFloatTraits<P::kF8E8M0FNU>{});
    case P::kF6E3M2FN:
      return f(NarrowFloatTraits<P::kF6E3M2FN>{});
    case P::kF6E2M3FN:
      return f(NarrowFloatTraits<P::kF6E2M3FN>{});
    case P::kC64:
      return f(ComplexTraits<P::kC64, float>{});
    case P::kC128:
      return f(ComplexTraits<P::kC128, double>{});
    case P::kTuple:
    case P::kOpaque:
    case P::kToken:
    case P::kBuffer:
    case P::kInvalid:
      break;
  }
  return absl::InvalidArgumentError(
      absl::StrCat(where, ": expected an array element type; got ", PrimitiveTypeName(type)));
}

// Two-level dispatch for ops whose input and output types differ (convert, dot).
template <typename F>
absl::Status DispatchElementTypePair(PrimitiveType from, PrimitiveType to, absl::string_view where,
                                     F&& f) {
  return DispatchElementType(from, where, [&](auto from_traits) {
    return DispatchElementType(to, where,
                               [&](auto to_traits) { return f(from_traits, to_traits); });
  });
}

template <typename Traits>
inline constexpr bool kIsFloat = Traits::kKind == ElementKind::kFloat;
template <typename Traits>
inline constexpr bool kIsComplex = Traits::kKind == ElementKind::kComplex;
template <typename Traits>
inline constexpr bool kIsInteger =
    Traits::kKind == ElementKind::kSigned || Traits::kKind == ElementKind::kUnsigned;
template <typename Traits>
inline constexpr bool kIsPred = Traits::kKind == ElementKind::kPred;

// DispatchElementType for ops XLA defines on real element types only (clamp, top-k, ordered
// comparisons, ...): `f` is never instantiated with complex traits, and a complex `type` is
// InvalidArgument "<where>: expected a real element type; got c64".
template <typename F>
absl::Status DispatchRealElementType(PrimitiveType type, absl::string_view where, F&& f) {
  return DispatchElementType(type, where, [&](auto traits) -> absl::Status {
    if constexpr (kIsComplex<decltype(traits)>) {
      return absl::InvalidArgumentError(absl::StrCat(
          where, where.empty() ? "" : ": ", "expected a real element type; got ",
          PrimitiveTypeName(type)));
    } else {
      return f(traits);
    }
  });
}

}  // namespace interp
}  // namespace perfsim

#endif  // PERFSIM_SIM_INTERP_ELEMENT_TYPES_H_
