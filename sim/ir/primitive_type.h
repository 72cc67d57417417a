// Element types of the op IR, spelled as in HLO text.
//
// The enum values follow XLA's PrimitiveType numbers (xla_data.proto) so that tables keyed by
// them (e.g. XLA's `rate_infos`) line up. Example: PrimitiveType::kBF16 is spelled "bf16",
// is 16 bits wide and is a floating-point type.
#ifndef PERFSIM_SIM_IR_PRIMITIVE_TYPE_H_
#define PERFSIM_SIM_IR_PRIMITIVE_TYPE_H_

#include <cstdint>
#include <optional>
#include "absl/strings/string_view.h"

namespace perfsim {

// X(enum, spelling, bits, kind). kind: 'p' pred, 's' signed int, 'u' unsigned int,
// 'f' floating, 'c' complex, 'x' not an array element (tuple, token, opaque, buffer).
// A buffer, written `b(f32[16])`, is XLA's mutable-buffer type: an array that custom-calls
// update in place between a "Pin" and an "Unpin" (xla_data.proto BUFFER = 34).
#define PERFSIM_PRIMITIVE_TYPES(X)      \
  X(kPred, "pred", 8, 'p', 1)           \
  X(kS8, "s8", 8, 's', 2)               \
  X(kS16, "s16", 16, 's', 3)            \
  X(kS32, "s32", 32, 's', 4)            \
  X(kS64, "s64", 64, 's', 5)            \
  X(kU8, "u8", 8, 'u', 6)               \
  X(kU16, "u16", 16, 'u', 7)            \
  X(kU32, "u32", 32, 'u', 8)            \
  X(kU64, "u64", 64, 'u', 9)            \
  X(kF16, "f16", 16, 'f', 10)           \
  X(kF32, "f32", 32, 'f', 11)           \
  X(kF64, "f64", 64, 'f', 12)           \
  X(kTuple, "tuple", 0, 'x', 13)        \
  X(kOpaque, "opaque", 0, 'x', 14)      \
  X(kC64, "c64", 64, 'c', 15)           \
  X(kBF16, "bf16", 16, 'f', 16)         \
  X(kToken, "token", 0, 'x', 17)        \
  X(kC128, "c128", 128, 'c', 18)        \
  X(kF8E5M2, "f8e5m2", 8, 'f', 19)      \
  X(kF8E4M3FN, "f8e4m3fn", 8, 'f', 20)  \
  X(kS4, "s4", 4, 's', 21)              \
  X(kU4, "u4", 4, 'u', 22)              \
  X(kF8E4M3B11FNUZ, "f8e4m3b11fnuz", 8, 'f', 23) \
  X(kF8E5M2FNUZ, "f8e5m2fnuz", 8, 'f', 24)       \
  X(kF8E4M3FNUZ, "f8e4m3fnuz", 8, 'f', 25)       \
  X(kS2, "s2", 2, 's', 26)              \
  X(kU2, "u2", 2, 'u', 27)              \
  X(kF8E4M3, "f8e4m3", 8, 'f', 28)      \
  X(kF8E3M4, "f8e3m4", 8, 'f', 29)      \
  X(kS1, "s1", 1, 's', 30)              \
  X(kU1, "u1", 1, 'u', 31)              \
  X(kF4E2M1FN, "f4e2m1fn", 4, 'f', 32)  \
  X(kF8E8M0FNU, "f8e8m0fnu", 8, 'f', 33) \
  X(kBuffer, "b", 0, 'x', 34)           \
  X(kF6E3M2FN, "f6e3m2fn", 6, 'f', 35)  \
  X(kF6E2M3FN, "f6e2m3fn", 6, 'f', 36)

enum class PrimitiveType : int {
  kInvalid = 0,
#define PERFSIM_DECLARE_TYPE(name, spelling, bits, kind, number) name = number,
  PERFSIM_PRIMITIVE_TYPES(PERFSIM_DECLARE_TYPE)
#undef PERFSIM_DECLARE_TYPE
};

// "bf16" for kBF16; "invalid" for kInvalid.
absl::string_view PrimitiveTypeName(PrimitiveType type);

// Inverse of PrimitiveTypeName for the types HLO text can spell; nullopt otherwise.
std::optional<PrimitiveType> ParsePrimitiveType(absl::string_view spelling);

// Width of one element in bits: 16 for bf16, 4 for s4, 8 for pred (as XLA stores it).
// 0 for tuple, token and opaque.
int BitWidth(PrimitiveType type);

// Bytes one element takes in an unpacked buffer: ceil(bits / 8); pred is 1.
int64_t ByteWidth(PrimitiveType type);

bool IsFloatingPoint(PrimitiveType type);
bool IsComplex(PrimitiveType type);
bool IsSignedInteger(PrimitiveType type);
bool IsUnsignedInteger(PrimitiveType type);
inline bool IsInteger(PrimitiveType type) {
  return IsSignedInteger(type) || IsUnsignedInteger(type);
}
// True for types an array can hold (everything but tuple, token, opaque, buffer and invalid).
bool IsArrayType(PrimitiveType type);

}  // namespace perfsim

#endif  // PERFSIM_SIM_IR_PRIMITIVE_TYPE_H_
