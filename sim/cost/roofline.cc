// Roofline pieces (roofline.h).
#include "sim/cost/roofline.h"

#include <algorithm>
#include <cstdint>

namespace perfsim {
namespace {

int64_t RoundUp(int64_t value, int64_t multiple) {
  return multiple <= 1 ? value : (value + multiple - 1) / multiple * multiple;
}

int64_t CeilDiv(int64_t a, int64_t b) { return b <= 0 ? a : (a + b - 1) / b; }

double DevicesPerChip(const Chip& chip) {
  return static_cast<double>(std::max<int64_t>(1, chip.proto().compute().devices_per_chip()));
}

// The matrix-unit class of one operand type; nullopt when the matrix units have no rate for it
// (f64, complex, wide integers): those run on the vector units.
std::optional<MatmulDtype> MatrixClass(PrimitiveType type) {
  switch (type) {
    case PrimitiveType::kBF16:
      return MatmulDtype::kBf16;
    case PrimitiveType::kF16:
      return MatmulDtype::kF16;
    case PrimitiveType::kF32:
      return MatmulDtype::kF32;
    case PrimitiveType::kF8E5M2:
    case PrimitiveType::kF8E4M3FN:
    case PrimitiveType::kF8E4M3B11FNUZ:
    case PrimitiveType::kF8E5M2FNUZ:
    case PrimitiveType::kF8E4M3FNUZ:
    case PrimitiveType::kF8E4M3:
    case PrimitiveType::kF8E3M4:
    case PrimitiveType::kF8E8M0FNU:
      return MatmulDtype::kFp8;
    case PrimitiveType::kS8:
    case PrimitiveType::kU8:
    case PrimitiveType::kS4:
    case PrimitiveType::kU4:
      return MatmulDtype::kInt8;
    case PrimitiveType::kF4E2M1FN:
      return MatmulDtype::kFp4;
    default:
      return std::nullopt;
  }
}

std::string PeakFieldName(MatmulDtype dtype) {
  switch (dtype) {
    case MatmulDtype::kBf16:
      return "compute.peak_bf16_flops_per_second";
    case MatmulDtype::kF16:
      return "compute.peak_fp16_flops_per_second";
    case MatmulDtype::kFp8:
      return "compute.peak_fp8_flops_per_second";
    case MatmulDtype::kInt8:
      return "compute.peak_int8_ops_per_second";
    case MatmulDtype::kFp4:
      return "compute.peak_fp4_flops_per_second";
    case MatmulDtype::kF32:
      return "compute.peak_f32_matmul_flops_per_second";
  }
  return "compute.peak";
}

MatmulRate VectorRate(const Chip& chip) {
  const double rate = chip.proto().compute().vector_f32_flops_per_second();
  if (rate <= 0) return {0, "compute.vector_f32_flops_per_second"};
  return {rate / DevicesPerChip(chip), ""};
}

}  // namespace

double DeviceHbmBytesPerSecond(const Chip& chip) {
  return chip.hbm_bytes_per_second() / DevicesPerChip(chip);
}

int64_t DeviceCores(const Chip& chip) {
  const ComputeSpec& c = chip.proto().compute();
  if (chip.is_gpu()) return std::max<int64_t>(1, c.sms_per_chip());
  return std::max<int64_t>(1, c.tensorcores_per_chip() / std::max<int64_t>(1, c.devices_per_chip()));
}

MatmulRate MatmulRateFor(PrimitiveType lhs, PrimitiveType rhs, MatmulPrecision precision,
                         const Chip& chip) {
  const std::optional<MatmulDtype> a = MatrixClass(lhs);
  const std::optional<MatmulDtype> b = MatrixClass(rhs);
  if (!a.has_value() || !b.has_value()) return VectorRate(chip);
  // Mixed operands run at the rate of the wider type (the narrower one is converted up).
  const MatmulDtype dtype = BitWidth(lhs) >= BitWidth(rhs) ? *a : *b;
  const double fraction = chip.proto().efficiency().matmul_fraction_of_peak();
  if (dtype == MatmulDtype::kF32) {
    if (chip.is_gpu()) {
      if (precision == MatmulPrecision::kHighest) return VectorRate(chip);
    } else if (chip.PeakMatmulFlopsPerSecond(MatmulDtype::kF32) <= 0) {
      // XLA:TPU splits f32 operands into bf16 parts: 1, 3 or 6 MXU passes.
      const double passes = precision == MatmulPrecision::kDefault ? 1
                            : precision == MatmulPrecision::kHigh  ? 3
                                                                   : 6;
      return {chip.PeakMatmulFlopsPerSecond(MatmulDtype::kBf16) / passes / DevicesPerChip(chip) *
                  fraction,
              ""};
    }
  }
  const double peak = chip.PeakMatmulFlopsPerSecond(dtype);
  if (peak <= 0) return {0, PeakFieldName(dtype)};
  return {peak / DevicesPerChip(chip) * fraction, ""};
}

MatmulTime TimeMatmul(const MatmulProblem& p, const Chip& chip) {
  MatmulTime out;
  if (p.batch <= 0 || p.m <= 0 || p.n <= 0 || p.k <= 0) return out;
  const MatmulRate rate = MatmulRateFor(p.lhs, p.rhs, p.precision, chip);
  const MatrixUnitSpec& unit = chip.proto().compute().matrix_unit();
  const int64_t rows = std::max<int64_t>(1, unit.output_rows_elements());
  const int64_t columns = std::max<int64_t>(1, unit.output_columns_elements());
  const int64_t contracting = std::max<int64_t>(1, unit.contracting_elements());
  double derate = 1;
  int64_t tile_rows = rows;
  if (p.m < rows && unit.small_rows_fraction_of_peak() < 1) {
    tile_rows = p.m;
    derate = unit.small_rows_fraction_of_peak();
  }
  const int64_t tiles =
      p.batch * CeilDiv(p.m, tile_rows) * (RoundUp(p.n, columns) / columns);
  const int64_t units = DeviceCores(chip) * std::max<int64_t>(1, unit.units_per_core());
  const int64_t waves = CeilDiv(tiles, units);
  out.executed_flops = static_cast<double>(waves) * static_cast<double>(units) * 2.0 *
                       static_cast<double>(tile_rows) * static_cast<double>(columns) *
                       static_cast<double>(RoundUp(p.k, contracting));
  if (rate.flops_per_second <= 0) {
    out.unknown_rates.push_back(rate.unknown_rate);
    return out;
  }
  out.seconds = out.executed_flops / (rate.flops_per_second * derate);
  return out;
}

KernelTime CombineRoofline(double compute_seconds, double memory_seconds,
                           double overhead_seconds) {
  KernelTime t;
  t.compute_seconds = compute_seconds;
  t.memory_seconds = memory_seconds;
  t.overhead_seconds = overhead_seconds;
  const double roofline = std::max(compute_seconds, memory_seconds);
  t.seconds = roofline + overhead_seconds;
  if (t.seconds <= 0) {
    t.bound = Bound::kNone;
  } else if (overhead_seconds > roofline) {
    t.bound = Bound::kOverhead;
  } else {
    t.bound = compute_seconds >= memory_seconds ? Bound::kCompute : Bound::kMemory;
  }
  return t;
}

}  // namespace perfsim
