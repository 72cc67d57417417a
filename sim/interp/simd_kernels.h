// Vector forms of the interpreter's hottest element loops, chosen at run time (AVX-512 where
// the CPU has it; the caller's scalar loop otherwise), each giving exactly the bits of the
// scalar loop it replaces.
//
//   if (!simd::Bf16Binary(BinaryOp::kAdd, a, b, out, n)) {
//     for (int64_t i = 0; i < n; ++i) ...  // the scalar loop
//   }
//
// bf16 arithmetic as the scalar path does it (element_types.h Bf16Traits): widen to f32 (exact),
// one IEEE f32 operation (round to nearest even, as the scalar SSE instruction under the same
// MXCSR), then FloatToBf16Bits (round to nearest even; a NaN keeps its sign and top payload
// bits and is made quiet).
#ifndef PERFSIM_SIM_INTERP_SIMD_KERNELS_H_
#define PERFSIM_SIM_INTERP_SIMD_KERNELS_H_

#include <cstdint>

#include "sim/interp/scalar_ops.h"
#include "sim/ir/primitive_type.h"

namespace perfsim {
namespace interp {
namespace simd {

// out[i] = bf16(a[i] op b[i]) for i in [0, n), for op add, subtract, multiply or divide; false
// (nothing written) for other ops or without AVX-512.
bool Bf16Binary(BinaryOp op, const uint8_t* a, const uint8_t* b, uint8_t* out, int64_t n);

// The same for f32 (one IEEE operation per element, no rounding after it).
bool F32Binary(BinaryOp op, const uint8_t* a, const uint8_t* b, uint8_t* out, int64_t n);

// Sixteen running sums at once, as reduce-window's row blocks need them: for each lane r,
//   acc[r] = init; for j in [0, count): acc[r] = round(acc[r] + x(r, j))
// with x(r, j) the element at element offset row_offsets[r] + j·step from `in`, type bf16
// (round: to bf16 and back, as Bf16Traits::Round) or f32 (no rounding). The caller ensures
// that 4 bytes from every element read lie within the buffer (a bf16 element is read as a
// 32-bit word). False (nothing written) for other types or without AVX-512.
bool AddRows16(PrimitiveType type, const uint8_t* in, const int32_t* row_offsets, int64_t step,
               int64_t count, float init, float* acc);

// The NaN and infinite elements of n 16-bit IEEE floats (bf16: exponent_mask 0x7f80, f16:
// 0x7c00): magnitude above the mask is NaN, equal to it infinite. False (nothing counted)
// without AVX-512BW.
bool CountIeee16Specials(const uint8_t* data, int64_t n, uint16_t exponent_mask, int64_t* nan,
                         int64_t* inf);

}  // namespace simd
}  // namespace interp
}  // namespace perfsim

#endif  // PERFSIM_SIM_INTERP_SIMD_KERNELS_H_
