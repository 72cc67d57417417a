#include "absl/strings/string_view.h"
#include "sim/ir/primitive_type.h"

namespace perfsim {
namespace {

struct TypeInfo {
  PrimitiveType type;
  absl::string_view spelling;
  int bits;
  char kind;
};

constexpr TypeInfo kTypeInfos[] = {
#define PERFSIM_TYPE_INFO(name, spelling, bits, kind, number) \
  {PrimitiveType::name, spelling, bits, kind},
    PERFSIM_PRIMITIVE_TYPES(PERFSIM_TYPE_INFO)
#undef PERFSIM_TYPE_INFO
};

const TypeInfo* Find(PrimitiveType type) {
  for (const TypeInfo& info : kTypeInfos) {
    if (info.type == type) return &info;
  }
  return nullptr;
}

char Kind(PrimitiveType type) {
  const TypeInfo* info = Find(type);
  return info == nullptr ? '?' : info->kind;
}

}  // namespace

absl::string_view PrimitiveTypeName(PrimitiveType type) {
  const TypeInfo* info = Find(type);
  return info == nullptr ? "invalid" : info->spelling;
}

std::optional<PrimitiveType> ParsePrimitiveType(absl::string_view spelling) {
  for (const TypeInfo& info : kTypeInfos) {
    // "tuple" is not an element type one can write in a shape, and "b" is only a buffer's
    // prefix `b(` (HloParser::ParseShape), never an element type.
    if (info.type == PrimitiveType::kTuple || info.type == PrimitiveType::kBuffer) continue;
    if (info.spelling == spelling) return info.type;
  }
  return std::nullopt;
}

int BitWidth(PrimitiveType type) {
  const TypeInfo* info = Find(type);
  return info == nullptr ? 0 : info->bits;
}

int64_t ByteWidth(PrimitiveType type) { return (BitWidth(type) + 7) / 8; }

bool IsFloatingPoint(PrimitiveType type) { return Kind(type) == 'f'; }
bool IsComplex(PrimitiveType type) { return Kind(type) == 'c'; }
bool IsSignedInteger(PrimitiveType type) { return Kind(type) == 's'; }
bool IsUnsignedInteger(PrimitiveType type) { return Kind(type) == 'u'; }
bool IsArrayType(PrimitiveType type) {
  const char kind = Kind(type);
  return kind != 'x' && kind != '?';
}

}  // namespace perfsim
