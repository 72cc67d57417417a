#include "sim/interp/output_stats.h"

#include <cmath>
#include <cstring>
#include <system_error>
#include <thread>
#include <vector>

#include "sim/interp/simd_kernels.h"
#include "sim/ir/float_types.h"
#include "sim/ir/primitive_type.h"

namespace perfsim {
namespace {

struct SpecialCounts {
  int64_t nan = 0;
  int64_t inf = 0;
};

template <typename Float>
SpecialCounts CountNative(const uint8_t* data, int64_t n) {
  SpecialCounts c;
  for (int64_t i = 0; i < n; ++i) {
    Float v;
    std::memcpy(&v, data + i * static_cast<int64_t>(sizeof(Float)), sizeof(Float));
    c.nan += std::isnan(v) ? 1 : 0;
    c.inf += std::isinf(v) ? 1 : 0;
  }
  return c;
}

// Narrow floats (one or two bytes of storage): every stored pattern is classified once through
// DecodeFloat, the definition Literal::GetAsDouble uses, so no format's NaN and Inf spellings
// are restated here; the elements are then table look-ups.
template <typename Storage>
SpecialCounts CountByTable(PrimitiveType type, const uint8_t* data, int64_t n) {
  constexpr size_t kPatterns = size_t{1} << (8 * sizeof(Storage));
  const uint64_t mask = (uint64_t{1} << BitWidth(type)) - 1;
  // Bit 0: NaN, bit 1: infinite.
  std::vector<uint8_t> kind(kPatterns);
  for (size_t p = 0; p < kPatterns; ++p) {
    const double v = DecodeFloat(type, p & mask);
    kind[p] = std::isnan(v) ? 1 : (std::isinf(v) ? 2 : 0);
  }
  SpecialCounts c;
  for (int64_t i = 0; i < n; ++i) {
    Storage s;
    std::memcpy(&s, data + i * static_cast<int64_t>(sizeof(Storage)), sizeof(Storage));
    const uint8_t k = kind[s];
    c.nan += k & 1;
    c.inf += k >> 1;
  }
  return c;
}

// bf16 and f16, IEEE formats: the exponent field all ones is infinity with a zero mantissa,
// NaN with any other; kExponent is that field's mask. Vectorised where the CPU allows.
template <uint16_t kExponent>
SpecialCounts CountIeee16(const uint8_t* data, int64_t n) {
  SpecialCounts c;
  if (interp::simd::CountIeee16Specials(data, n, kExponent, &c.nan, &c.inf)) return c;
  for (int64_t i = 0; i < n; ++i) {
    uint16_t s;
    std::memcpy(&s, data + 2 * i, 2);
    const uint16_t magnitude = s & 0x7fff;
    c.nan += magnitude > kExponent ? 1 : 0;
    c.inf += magnitude == kExponent ? 1 : 0;
  }
  return c;
}

template <typename Part>
SpecialCounts CountComplex(const uint8_t* data, int64_t n) {
  SpecialCounts c;
  for (int64_t i = 0; i < n; ++i) {
    Part parts[2];
    std::memcpy(parts, data + i * static_cast<int64_t>(sizeof(parts)), sizeof(parts));
    if (std::isnan(parts[0]) || std::isnan(parts[1])) {
      ++c.nan;
    } else if (std::isinf(parts[0]) || std::isinf(parts[1])) {
      ++c.inf;
    }
  }
  return c;
}

SpecialCounts CountSpecials(PrimitiveType type, const uint8_t* data, int64_t n) {
  if (type == PrimitiveType::kF32) return CountNative<float>(data, n);
  if (type == PrimitiveType::kF64) return CountNative<double>(data, n);
  if (type == PrimitiveType::kC64) return CountComplex<float>(data, n);
  if (type == PrimitiveType::kC128) return CountComplex<double>(data, n);
  if (!IsFloatingPoint(type)) return {};
  if (type == PrimitiveType::kBF16) return CountIeee16<0x7f80>(data, n);
  if (type == PrimitiveType::kF16) return CountIeee16<0x7c00>(data, n);
  if (ByteWidth(type) == 1) return CountByTable<uint8_t>(type, data, n);
  return CountByTable<uint16_t>(type, data, n);
}

}  // namespace

uint64_t Fnv1a64(absl::Span<const uint8_t> bytes) {
  uint64_t hash = 0xcbf29ce484222325ULL;
  for (uint8_t b : bytes) {
    hash ^= b;
    hash *= 0x100000001b3ULL;
  }
  return hash;
}

ArrayStats ComputeArrayStats(const Literal& array) {
  ArrayStats stats;
  if (!array.shape().IsArray() || array.elided()) {
    stats.fnv1a64 = Fnv1a64(array.data());
    return stats;
  }
  const PrimitiveType type = array.shape().element_type();
  const int64_t n = static_cast<int64_t>(array.data().size()) / ByteWidth(type);
  SpecialCounts counts;
  auto count = [&] { counts = CountSpecials(type, array.data().data(), n); };
  // The hash is one serial chain (a multiply per byte); for large arrays the count runs beside
  // it on a second thread.
  constexpr size_t kConcurrentBytes = size_t{64} << 20;
  std::thread counter;
  if (array.data().size() >= kConcurrentBytes && std::thread::hardware_concurrency() > 1) {
    try {
      counter = std::thread(count);
    } catch (const std::system_error&) {
      // No thread: this one counts after hashing.
    }
  }
  stats.fnv1a64 = Fnv1a64(array.data());
  if (counter.joinable()) {
    counter.join();
  } else {
    count();
  }
  stats.nan_count = counts.nan;
  stats.inf_count = counts.inf;
  return stats;
}

}  // namespace perfsim
