// The blocked f32 matrix multiply (GotoBLAS structure): B is packed in kKc x kNc blocks into
// panels kNr wide, A in kMc x kKc blocks into panels kMr tall, and a kMr x kNr register tile
// accumulates a panel product. Edge tiles are zero-padded in the packed buffers and written
// back partially.
#include "sim/interp/dot_kernel.h"

#include <algorithm>
#include <cstring>
#include <vector>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define PERFSIM_INTERP_X86 1
#endif

namespace perfsim {
namespace interp {
namespace {

constexpr int64_t kMr = 6;
constexpr int64_t kNr = 16;
constexpr int64_t kKc = 256;
constexpr int64_t kMc = 96;    // multiple of kMr; kMc x kKc of A stays in L2
constexpr int64_t kNc = 2048;  // multiple of kNr; kKc x kNc of B fits a typical L2/L3 share

// Packs rows [0, mc) x cols [0, kc) of A (leading dim lda) into panels of kMr rows:
// panel r holds, for each p, the kMr values A[r*kMr + i][p] (zero past mc).
void PackA(const float* a, int64_t lda, int64_t mc, int64_t kc, float* out) {
  for (int64_t r = 0; r < mc; r += kMr) {
    const int64_t rows = std::min(kMr, mc - r);
    for (int64_t p = 0; p < kc; ++p) {
      for (int64_t i = 0; i < rows; ++i) out[p * kMr + i] = a[(r + i) * lda + p];
      for (int64_t i = rows; i < kMr; ++i) out[p * kMr + i] = 0.0f;
    }
    out += kc * kMr;
  }
}

// Packs rows [0, kc) x cols [0, nc) of B into panels of kNr columns.
void PackB(const float* b, int64_t ldb, int64_t kc, int64_t nc, float* out) {
  for (int64_t j = 0; j < nc; j += kNr) {
    const int64_t cols = std::min(kNr, nc - j);
    for (int64_t p = 0; p < kc; ++p) {
      const float* row = b + p * ldb + j;
      float* dst = out + p * kNr;
      std::memcpy(dst, row, cols * sizeof(float));
      for (int64_t i = cols; i < kNr; ++i) dst[i] = 0.0f;
    }
    out += kc * kNr;
  }
}

// Adds a kMr x kNr tile to C, only its first `rows` x `cols`.
void AddTile(const float* tile, float* c, int64_t ldc, int64_t rows, int64_t cols) {
  for (int64_t i = 0; i < rows; ++i) {
    for (int64_t j = 0; j < cols; ++j) c[i * ldc + j] += tile[i * kNr + j];
  }
}

void MicroKernelPortable(int64_t kc, const float* ap, const float* bp, float* c, int64_t ldc,
                         int64_t rows, int64_t cols) {
  float acc[kMr][kNr] = {};
  for (int64_t p = 0; p < kc; ++p) {
    const float* b = bp + p * kNr;
    for (int64_t i = 0; i < kMr; ++i) {
      const float a = ap[p * kMr + i];
      for (int64_t j = 0; j < kNr; ++j) acc[i][j] += a * b[j];
    }
  }
  AddTile(&acc[0][0], c, ldc, rows, cols);
}

#ifdef PERFSIM_INTERP_X86
__attribute__((target("avx2,fma"))) void MicroKernelAvx2(int64_t kc, const float* ap,
                                                         const float* bp, float* c, int64_t ldc,
                                                         int64_t rows, int64_t cols) {
  __m256 c00 = _mm256_setzero_ps(), c01 = _mm256_setzero_ps();
  __m256 c10 = _mm256_setzero_ps(), c11 = _mm256_setzero_ps();
  __m256 c20 = _mm256_setzero_ps(), c21 = _mm256_setzero_ps();
  __m256 c30 = _mm256_setzero_ps(), c31 = _mm256_setzero_ps();
  __m256 c40 = _mm256_setzero_ps(), c41 = _mm256_setzero_ps();
  __m256 c50 = _mm256_setzero_ps(), c51 = _mm256_setzero_ps();
  for (int64_t p = 0; p < kc; ++p) {
    const __m256 b0 = _mm256_loadu_ps(bp + p * kNr);
    const __m256 b1 = _mm256_loadu_ps(bp + p * kNr + 8);
    const float* a = ap + p * kMr;
    __m256 x = _mm256_broadcast_ss(a + 0);
    c00 = _mm256_fmadd_ps(x, b0, c00);
    c01 = _mm256_fmadd_ps(x, b1, c01);
    x = _mm256_broadcast_ss(a + 1);
    c10 = _mm256_fmadd_ps(x, b0, c10);
    c11 = _mm256_fmadd_ps(x, b1, c11);
    x = _mm256_broadcast_ss(a + 2);
    c20 = _mm256_fmadd_ps(x, b0, c20);
    c21 = _mm256_fmadd_ps(x, b1, c21);
    x = _mm256_broadcast_ss(a + 3);
    c30 = _mm256_fmadd_ps(x, b0, c30);
    c31 = _mm256_fmadd_ps(x, b1, c31);
    x = _mm256_broadcast_ss(a + 4);
    c40 = _mm256_fmadd_ps(x, b0, c40);
    c41 = _mm256_fmadd_ps(x, b1, c41);
    x = _mm256_broadcast_ss(a + 5);
    c50 = _mm256_fmadd_ps(x, b0, c50);
    c51 = _mm256_fmadd_ps(x, b1, c51);
  }
  if (rows == kMr && cols == kNr) {
    const __m256 acc[kMr][2] = {{c00, c01}, {c10, c11}, {c20, c21},
                                {c30, c31}, {c40, c41}, {c50, c51}};
    for (int64_t i = 0; i < kMr; ++i) {
      float* row = c + i * ldc;
      _mm256_storeu_ps(row, _mm256_add_ps(_mm256_loadu_ps(row), acc[i][0]));
      _mm256_storeu_ps(row + 8, _mm256_add_ps(_mm256_loadu_ps(row + 8), acc[i][1]));
    }
    return;
  }
  alignas(32) float tile[kMr * kNr];
  _mm256_store_ps(tile + 0 * kNr, c00);
  _mm256_store_ps(tile + 0 * kNr + 8, c01);
  _mm256_store_ps(tile + 1 * kNr, c10);
  _mm256_store_ps(tile + 1 * kNr + 8, c11);
  _mm256_store_ps(tile + 2 * kNr, c20);
  _mm256_store_ps(tile + 2 * kNr + 8, c21);
  _mm256_store_ps(tile + 3 * kNr, c30);
  _mm256_store_ps(tile + 3 * kNr + 8, c31);
  _mm256_store_ps(tile + 4 * kNr, c40);
  _mm256_store_ps(tile + 4 * kNr + 8, c41);
  _mm256_store_ps(tile + 5 * kNr, c50);
  _mm256_store_ps(tile + 5 * kNr + 8, c51);
  AddTile(tile, c, ldc, rows, cols);
}

bool HasAvx2Fma() {
  static const bool has = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  return has;
}
#endif

using MicroKernel = void (*)(int64_t, const float*, const float*, float*, int64_t, int64_t,
                             int64_t);

MicroKernel ChooseMicroKernel() {
#ifdef PERFSIM_INTERP_X86
  if (HasAvx2Fma()) return &MicroKernelAvx2;
#endif
  return &MicroKernelPortable;
}

}  // namespace

void MatMulAccumulateF32(const float* a, int64_t lda, const float* b, int64_t ldb, float* c,
                         int64_t ldc, int64_t m, int64_t n, int64_t k) {
  if (m <= 0 || n <= 0 || k <= 0) return;
  static const MicroKernel kernel = ChooseMicroKernel();
  const int64_t nc_max = std::min(kNc, (n + kNr - 1) / kNr * kNr);
  const int64_t mc_max = std::min(kMc, (m + kMr - 1) / kMr * kMr);
  const int64_t kc_max = std::min(kKc, k);
  std::vector<float> packed_b(static_cast<size_t>(kc_max * nc_max));
  std::vector<float> packed_a(static_cast<size_t>(kc_max * mc_max));
  for (int64_t jc = 0; jc < n; jc += kNc) {
    const int64_t nc = std::min(kNc, n - jc);
    for (int64_t pc = 0; pc < k; pc += kKc) {
      const int64_t kc = std::min(kKc, k - pc);
      PackB(b + pc * ldb + jc, ldb, kc, nc, packed_b.data());
      for (int64_t ic = 0; ic < m; ic += kMc) {
        const int64_t mc = std::min(kMc, m - ic);
        PackA(a + ic * lda + pc, lda, mc, kc, packed_a.data());
        for (int64_t jr = 0; jr < nc; jr += kNr) {
          const float* bp = packed_b.data() + (jr / kNr) * kc * kNr;
          for (int64_t ir = 0; ir < mc; ir += kMr) {
            const float* ap = packed_a.data() + (ir / kMr) * kc * kMr;
            kernel(kc, ap, bp, c + (ic + ir) * ldc + jc + jr, ldc, std::min(kMr, mc - ir),
                   std::min(kNr, nc - jr));
          }
        }
      }
    }
  }
}

}  // namespace interp
}  // namespace perfsim
