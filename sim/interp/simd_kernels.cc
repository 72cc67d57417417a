#include "sim/interp/simd_kernels.h"

#include <cstring>

#include "sim/ir/float_types.h"

#if defined(__x86_64__)
// GCC 12 reports its own _mm512_undefined_* placeholders inside the intrinsics as maybe
// uninitialised; the warning's location is the header, so it is silenced there.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>
#pragma GCC diagnostic pop
#define PERFSIM_SIMD_X86 1
#endif

namespace perfsim {
namespace interp {
namespace simd {
namespace {

#ifdef PERFSIM_SIMD_X86

bool HasAvx512() {
  static const bool has = __builtin_cpu_supports("avx512f");
  return has;
}

// FloatToBf16Bits of 16 lanes, each result in the low half of its 32-bit lane: NaN lanes keep
// their top 16 bits with the quiet bit set, the others round to nearest even by adding 0x7fff
// plus the lowest kept bit.
__attribute__((target("avx512f"))) inline __m512i RoundToBf16Lanes(__m512 value) {
  const __m512i bits = _mm512_castps_si512(value);
  const __mmask16 nan = _mm512_cmpgt_epu32_mask(
      _mm512_and_si512(bits, _mm512_set1_epi32(0x7fffffff)), _mm512_set1_epi32(0x7f800000));
  const __m512i odd = _mm512_and_si512(_mm512_srli_epi32(bits, 16), _mm512_set1_epi32(1));
  const __m512i rounded = _mm512_srli_epi32(
      _mm512_add_epi32(bits, _mm512_add_epi32(odd, _mm512_set1_epi32(0x7fff))), 16);
  const __m512i quiet = _mm512_or_si512(_mm512_srli_epi32(bits, 16), _mm512_set1_epi32(0x40));
  return _mm512_mask_mov_epi32(rounded, nan, quiet);
}

// The same, packed to 16 bf16s.
__attribute__((target("avx512f"))) inline __m256i RoundToBf16(__m512 value) {
  return _mm512_cvtepi32_epi16(RoundToBf16Lanes(value));
}

__attribute__((target("avx512f"))) inline __m512 LoadBf16(const uint8_t* p) {
  const __m512i wide =
      _mm512_cvtepu16_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
  return _mm512_castsi512_ps(_mm512_slli_epi32(wide, 16));
}

template <BinaryOp kOp>
__attribute__((target("avx512f"))) void Bf16BinaryAvx512(const uint8_t* a, const uint8_t* b,
                                                         uint8_t* out, int64_t n) {
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const __m512 x = LoadBf16(a + 2 * i);
    const __m512 y = LoadBf16(b + 2 * i);
    __m512 r;
    if constexpr (kOp == BinaryOp::kAdd) {
      r = _mm512_add_ps(x, y);
    } else if constexpr (kOp == BinaryOp::kSubtract) {
      r = _mm512_sub_ps(x, y);
    } else if constexpr (kOp == BinaryOp::kMultiply) {
      r = _mm512_mul_ps(x, y);
    } else {
      r = _mm512_div_ps(x, y);
    }
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + 2 * i), RoundToBf16(r));
  }
  for (; i < n; ++i) {
    uint16_t xa;
    uint16_t xb;
    std::memcpy(&xa, a + 2 * i, 2);
    std::memcpy(&xb, b + 2 * i, 2);
    const float x = Bf16BitsToFloat(xa);
    const float y = Bf16BitsToFloat(xb);
    float r;
    if constexpr (kOp == BinaryOp::kAdd) {
      r = x + y;
    } else if constexpr (kOp == BinaryOp::kSubtract) {
      r = x - y;
    } else if constexpr (kOp == BinaryOp::kMultiply) {
      r = x * y;
    } else {
      r = x / y;
    }
    const uint16_t bits = FloatToBf16Bits(r);
    std::memcpy(out + 2 * i, &bits, 2);
  }
}

template <bool kBf16>
__attribute__((target("avx512f"))) void AddRows16Avx512(const uint8_t* in,
                                                        const int32_t* row_offsets, int64_t step,
                                                        int64_t count, float init, float* acc) {
  const __m512i offsets = _mm512_loadu_si512(reinterpret_cast<const void*>(row_offsets));
  __m512 sum = _mm512_set1_ps(init);
  const int64_t step_bytes = step * (kBf16 ? 2 : 4);
  const uint8_t* at = in;
  for (int64_t j = 0; j < count; ++j, at += step_bytes) {
    if constexpr (kBf16) {
      // The low half of each gathered word is the element (little-endian).
      const __m512i words = _mm512_i32gather_epi32(offsets, at, 2);
      sum = _mm512_add_ps(sum, _mm512_castsi512_ps(_mm512_slli_epi32(words, 16)));
      sum = _mm512_castsi512_ps(_mm512_slli_epi32(RoundToBf16Lanes(sum), 16));
    } else {
      sum = _mm512_add_ps(sum, _mm512_i32gather_ps(offsets, at, 4));
    }
  }
  _mm512_storeu_ps(acc, sum);
}

template <BinaryOp kOp>
__attribute__((target("avx512f"))) void F32BinaryAvx512(const uint8_t* a, const uint8_t* b,
                                                        uint8_t* out, int64_t n) {
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const __m512 x = _mm512_loadu_ps(a + 4 * i);
    const __m512 y = _mm512_loadu_ps(b + 4 * i);
    __m512 r;
    if constexpr (kOp == BinaryOp::kAdd) {
      r = _mm512_add_ps(x, y);
    } else if constexpr (kOp == BinaryOp::kSubtract) {
      r = _mm512_sub_ps(x, y);
    } else if constexpr (kOp == BinaryOp::kMultiply) {
      r = _mm512_mul_ps(x, y);
    } else {
      r = _mm512_div_ps(x, y);
    }
    _mm512_storeu_ps(out + 4 * i, r);
  }
  for (; i < n; ++i) {
    float x;
    float y;
    std::memcpy(&x, a + 4 * i, 4);
    std::memcpy(&y, b + 4 * i, 4);
    float r;
    if constexpr (kOp == BinaryOp::kAdd) {
      r = x + y;
    } else if constexpr (kOp == BinaryOp::kSubtract) {
      r = x - y;
    } else if constexpr (kOp == BinaryOp::kMultiply) {
      r = x * y;
    } else {
      r = x / y;
    }
    std::memcpy(out + 4 * i, &r, 4);
  }
}

bool HasAvx512Bw() {
  static const bool has = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw");
  return has;
}

__attribute__((target("avx512f,avx512bw,popcnt"))) void CountIeee16Avx512(
    const uint8_t* data, int64_t n, uint16_t exponent_mask, int64_t* nan, int64_t* inf) {
  const __m512i magnitude_mask = _mm512_set1_epi16(0x7fff);
  const __m512i exponent = _mm512_set1_epi16(static_cast<int16_t>(exponent_mask));
  int64_t nans = 0;
  int64_t infs = 0;
  int64_t i = 0;
  for (; i + 32 <= n; i += 32) {
    const __m512i magnitude = _mm512_and_si512(
        _mm512_loadu_si512(reinterpret_cast<const void*>(data + 2 * i)), magnitude_mask);
    nans += __builtin_popcount(_mm512_cmpgt_epu16_mask(magnitude, exponent));
    infs += __builtin_popcount(_mm512_cmpeq_epu16_mask(magnitude, exponent));
  }
  for (; i < n; ++i) {
    uint16_t s;
    std::memcpy(&s, data + 2 * i, 2);
    const uint16_t magnitude = s & 0x7fff;
    nans += magnitude > exponent_mask ? 1 : 0;
    infs += magnitude == exponent_mask ? 1 : 0;
  }
  *nan = nans;
  *inf = infs;
}

#endif  // PERFSIM_SIMD_X86

}  // namespace

namespace {

// Calls kernel.template operator()<kOp>() for the four ops the vector kernels cover; false for
// the others or without AVX-512.
template <typename Kernel>
bool DispatchArithmetic(BinaryOp op, Kernel&& kernel) {
#ifdef PERFSIM_SIMD_X86
  if (!HasAvx512()) return false;
  switch (op) {
    case BinaryOp::kAdd:
      kernel.template operator()<BinaryOp::kAdd>();
      return true;
    case BinaryOp::kSubtract:
      kernel.template operator()<BinaryOp::kSubtract>();
      return true;
    case BinaryOp::kMultiply:
      kernel.template operator()<BinaryOp::kMultiply>();
      return true;
    case BinaryOp::kDivide:
      kernel.template operator()<BinaryOp::kDivide>();
      return true;
    case BinaryOp::kRemainder:
    case BinaryOp::kMaximum:
    case BinaryOp::kMinimum:
    case BinaryOp::kPower:
    case BinaryOp::kAtan2:
    case BinaryOp::kAnd:
    case BinaryOp::kOr:
    case BinaryOp::kXor:
    case BinaryOp::kShiftLeft:
    case BinaryOp::kShiftRightArithmetic:
    case BinaryOp::kShiftRightLogical:
      break;
  }
#endif
  return false;
}

}  // namespace

bool Bf16Binary(BinaryOp op, const uint8_t* a, const uint8_t* b, uint8_t* out, int64_t n) {
#ifdef PERFSIM_SIMD_X86
  return DispatchArithmetic(op, [&]<BinaryOp kOp>() { Bf16BinaryAvx512<kOp>(a, b, out, n); });
#else
  return false;
#endif
}

bool F32Binary(BinaryOp op, const uint8_t* a, const uint8_t* b, uint8_t* out, int64_t n) {
#ifdef PERFSIM_SIMD_X86
  return DispatchArithmetic(op, [&]<BinaryOp kOp>() { F32BinaryAvx512<kOp>(a, b, out, n); });
#else
  return false;
#endif
}

bool AddRows16(PrimitiveType type, const uint8_t* in, const int32_t* row_offsets, int64_t step,
               int64_t count, float init, float* acc) {
#ifdef PERFSIM_SIMD_X86
  if (!HasAvx512()) return false;
  if (type == PrimitiveType::kBF16) {
    AddRows16Avx512<true>(in, row_offsets, step, count, init, acc);
    return true;
  }
  if (type == PrimitiveType::kF32) {
    AddRows16Avx512<false>(in, row_offsets, step, count, init, acc);
    return true;
  }
#endif
  return false;
}

bool CountIeee16Specials(const uint8_t* data, int64_t n, uint16_t exponent_mask, int64_t* nan,
                         int64_t* inf) {
#ifdef PERFSIM_SIMD_X86
  if (!HasAvx512Bw()) return false;
  CountIeee16Avx512(data, n, exponent_mask, nan, inf);
  return true;
#else
  return false;
#endif
}

}  // namespace simd
}  // namespace interp
}  // namespace perfsim
