// Time on one device of a chip: the roofline pieces every op is built from.
//
//   MatmulTime t = TimeMatmul({.batch = 1, .m = 64, .n = 640, .k = 24,
//                              .lhs = PrimitiveType::kBF16, .rhs = PrimitiveType::kBF16},
//                             chip);
//   KernelTime k = CombineRoofline(t.seconds, bytes / DeviceHbmBytesPerSecond(chip),
//                                  chip.proto().compute().kernel_overhead_seconds());
//
// Everything is per JAX device: a TPU v7x chip is two devices (each TensorCore is one), so its
// peaks and HBM bandwidth are halved; megacore TPUs (v4, v5p) and GPUs are one device per chip.
//
// Rates come from the chip description; where one is 0 (not in the sources) the work that
// needed it is not timed and its field name is reported in `unknown_rates`. Two documented
// choices fill gaps instead (choices, not sourced figures: shared/reference has no f32 rate):
//   - f32 matmuls on a TPU with no f32 matrix peak run on the MXU in bf16 passes, which is how
//     XLA:TPU computes them: one pass at the default precision, 3 for
//     `operand_precision=high` (bf16_3x), 6 for `highest` (bf16_6x); the rate is the bf16
//     peak divided by the passes.
//   - f32 matmuls on a GPU run on the tensor cores in TF32 (peak_f32_matmul_flops_per_second),
//     or on the vector units at `highest` precision.
// Efficiency factors of the chip's EfficiencySpec apply per op class: matmul_fraction_of_peak
// to matrix-unit rates, hbm_fraction_of_peak to the HBM bandwidth of every kernel.
#ifndef PERFSIM_SIM_COST_ROOFLINE_H_
#define PERFSIM_SIM_COST_ROOFLINE_H_

#include <cstdint>
#include <string>
#include <vector>

#include "sim/cost/cost_types.h"
#include "sim/hw/chip.h"
#include "sim/ir/primitive_type.h"

namespace perfsim {

// Per-device rates.
double DeviceHbmBytesPerSecond(const Chip& chip);
// TensorCores (TPU) or SMs (GPU) of one device.
int64_t DeviceCores(const Chip& chip);

// How many MXU passes an f32 matmul takes at an XLA operand_precision: 1 for default, 3 for
// high, 6 for highest.
enum class MatmulPrecision { kDefault, kHigh, kHighest };

// A matrix-unit rate for a pair of operand types, or the name of the missing chip field.
struct MatmulRate {
  double flops_per_second = 0;  // 0 when unknown
  std::string unknown_rate;     // e.g. "compute.peak_fp8_flops_per_second"
};
MatmulRate MatmulRateFor(PrimitiveType lhs, PrimitiveType rhs, MatmulPrecision precision,
                         const Chip& chip);

// A (batched) matmul [batch, m, k] x [batch, k, n] on the matrix units.
struct MatmulProblem {
  int64_t batch = 1;
  int64_t m = 0;
  int64_t n = 0;
  int64_t k = 0;
  PrimitiveType lhs = PrimitiveType::kBF16;
  PrimitiveType rhs = PrimitiveType::kBF16;
  MatmulPrecision precision = MatmulPrecision::kDefault;
};

struct MatmulTime {
  double seconds = 0;
  // Flops the units execute, padding and idle units of the last wave included.
  double executed_flops = 0;
  std::vector<std::string> unknown_rates;
};

// Pads m, n and k to the matrix unit's tile (output_rows x output_columns x contracting
// elements), spreads the output tiles over every unit of the device (cores x units_per_core)
// in waves, and charges whole waves. When m is below the unit's row tile and the chip gives a
// small_rows_fraction_of_peak (GPU: no wgmma below 64 rows), m is not padded and the rate is
// derated instead.
MatmulTime TimeMatmul(const MatmulProblem& problem, const Chip& chip);

// The time of a kernel from its parts.
struct KernelTime {
  double compute_seconds = 0;
  double memory_seconds = 0;
  double overhead_seconds = 0;
  double seconds = 0;
  Bound bound = Bound::kNone;
};

// seconds = max(compute, memory) + overhead; bound is the larger of compute and memory, or
// overhead when the fixed cost exceeds both, or none when all are 0.
KernelTime CombineRoofline(double compute_seconds, double memory_seconds,
                           double overhead_seconds);

}  // namespace perfsim

#endif  // PERFSIM_SIM_COST_ROOFLINE_H_
