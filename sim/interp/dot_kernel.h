// Matrix-multiply kernels of the interpreter's dot, ragged-dot and grouped-matmul custom calls.
//
//   // C[m,n] += sum_p A[m,p] * B[p,n]; row-major with leading dimensions lda, ldb, ldc.
//   MatMulAccumulate<float>(a, lda, b, ldb, c, ldc, m, n, k);
//
// f32 uses a cache-blocked, packed kernel (6x16 register tile; AVX2+FMA when the CPU has it,
// chosen once at run time, else portable code). It reaches well over 10 GFLOP/s on one core
// at 1024^3 (bench/interp_bench.cc). The summation order is fixed by the blocking, so results
// are the same bits on every run on the same machine. double and int64 (wrapping) use a plain
// loop: they are not on any hot path.
#ifndef PERFSIM_SIM_INTERP_DOT_KERNEL_H_
#define PERFSIM_SIM_INTERP_DOT_KERNEL_H_

#include <cstdint>
#include <type_traits>

namespace perfsim {
namespace interp {

void MatMulAccumulateF32(const float* a, int64_t lda, const float* b, int64_t ldb, float* c,
                         int64_t ldc, int64_t m, int64_t n, int64_t k);

template <typename T>
void MatMulAccumulate(const T* a, int64_t lda, const T* b, int64_t ldb, T* c, int64_t ldc,
                      int64_t m, int64_t n, int64_t k) {
  if constexpr (std::is_same_v<T, float>) {
    MatMulAccumulateF32(a, lda, b, ldb, c, ldc, m, n, k);
  } else {
    // Integers accumulate in unsigned arithmetic so overflow wraps instead of being undefined.
    using Acc = typename std::conditional_t<std::is_integral_v<T>, std::make_unsigned<T>,
                                            std::type_identity<T>>::type;
    for (int64_t i = 0; i < m; ++i) {
      for (int64_t p = 0; p < k; ++p) {
        const Acc x = static_cast<Acc>(a[i * lda + p]);
        const T* brow = b + p * ldb;
        T* crow = c + i * ldc;
        for (int64_t j = 0; j < n; ++j) {
          crow[j] = static_cast<T>(static_cast<Acc>(crow[j]) + x * static_cast<Acc>(brow[j]));
        }
      }
    }
  }
}

}  // namespace interp
}  // namespace perfsim

#endif  // PERFSIM_SIM_INTERP_DOT_KERNEL_H_
