// Tiling estimates (tiling_cost.h): the cost model for the grouped matmuls, the roofline proxy
// for the two kernels it cannot price. Doubles throughout: traffic and work of large problems
// exceed 2^63 only in absurd cases, and a ranking needs no exact integers.
#include "sim/fit/tiling_cost.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "absl/strings/str_cat.h"
#include "sim/cost/grouped_matmul.h"

namespace perfsim {
namespace {

double Pad(int64_t value, int64_t multiple) {
  if (multiple <= 1) return static_cast<double>(value);
  return static_cast<double>(CeilDiv(value, multiple) * multiple);
}

double Bytes(PrimitiveType dtype) { return BitWidth(dtype) / 8.0; }

// Per-device figures of the chip the kernel runs on.
struct Device {
  double peak_flops_per_second = 0;
  double hbm_bytes_per_second = 0;
  const MatrixUnitSpec* unit = nullptr;
};

MatmulDtype MatmulTypeOf(PrimitiveType dtype) {
  switch (BitWidth(dtype)) {
    case 32:
    case 64:
      return MatmulDtype::kF32;
    case 16:
      return dtype == PrimitiveType::kF16 ? MatmulDtype::kF16 : MatmulDtype::kBf16;
    default:
      return IsInteger(dtype) ? MatmulDtype::kInt8 : MatmulDtype::kFp8;
  }
}

Device DeviceOf(const KernelProblem& p, const Chip& chip) {
  const double devices = std::max<int64_t>(1, chip.proto().compute().devices_per_chip());
  // The wider operand decides the MXU mode (a quantised rhs is dequantised to the lhs type).
  const PrimitiveType wider =
      BitWidth(p.dtypes.lhs) >= BitWidth(p.dtypes.rhs) ? p.dtypes.lhs : p.dtypes.rhs;
  const double bf16 = chip.PeakMatmulFlopsPerSecond(MatmulDtype::kBf16);
  double peak = chip.PeakMatmulFlopsPerSecond(MatmulTypeOf(wider));
  if (peak <= 0) peak = MatmulTypeOf(wider) == MatmulDtype::kF32 ? bf16 / 3 : bf16;
  Device device;
  device.peak_flops_per_second = peak / devices;
  device.hbm_bytes_per_second = chip.hbm_bytes_per_second() / devices;
  device.unit = &chip.proto().compute().matrix_unit();
  return device;
}

// Active m-tiles of a grouped kernel: a tile that straddles a group boundary is visited once
// per group, and at most m groups are non-empty.
int64_t ActiveMTiles(int64_t m, int64_t tm, int64_t groups) {
  return CeilDiv(m, tm) + std::min(groups, m) - 1;
}

void Finish(const Device& device, double overhead_per_step, double fixed_overhead,
            TilingCostEstimate& c) {
  c.compute_seconds = c.flops / device.peak_flops_per_second;
  c.memory_seconds = c.hbm_bytes / device.hbm_bytes_per_second;
  c.overhead_seconds = static_cast<double>(c.grid_steps) * overhead_per_step + fixed_overhead;
  c.seconds = std::max(c.compute_seconds, c.memory_seconds) + c.overhead_seconds;
}

// Ragged gather: the kernel's own cost estimate (backends.md 1a.3) for the bytes, out_rows·D·
// dtype·2 + out_rows·4 (+4 with weights); steps spread over the SparseCores.
TilingCostEstimate RaggedGather(const KernelProblem& p, const Tiling& t) {
  const ProblemShape& s = p.shape;
  TilingCostEstimate c;
  c.grid_steps = CeilDiv(s.m, t.tm) * CeilDiv(s.k, t.tk);
  const double rows = static_cast<double>(s.m);
  c.hbm_bytes = rows * s.k * Bytes(p.dtypes.lhs) * 2 + rows * 4 + (s.n > 1 ? rows * 4 : 0);
  return c;
}

// GPU: CTAs (active m-tiles × n tiles) in waves over the SMs.
TilingCostEstimate GpuGroupedGemm(const KernelProblem& p, const Tiling& t, const Chip& chip,
                                  const Device& device) {
  const ProblemShape& s = p.shape;
  const MatrixUnitSpec& unit = *device.unit;
  const int64_t sms = std::max<int64_t>(1, chip.proto().compute().sms_per_chip());
  const int64_t tiles_n = CeilDiv(s.n, t.tn);
  const int64_t active = ActiveMTiles(s.m, t.tm, s.groups);
  const int64_t ctas = active * tiles_n;
  const int64_t waves = CeilDiv(ctas, sms);
  TilingCostEstimate c;
  // Main-loop iterations over all CTAs: no time of their own in the proxy, but the search
  // breaks ties in time by fewer of them (a k-step costs a barrier round trip).
  c.grid_steps = ctas * CeilDiv(s.k, t.tk);
  const double cta_flops = 2.0 * t.tm * t.tn * Pad(s.k, t.tk);
  double derate = 1;
  if (t.tm < unit.output_rows_elements() && unit.small_rows_fraction_of_peak() > 0) {
    derate = unit.small_rows_fraction_of_peak();
  }
  // Charged as `waves` full waves: a partial last wave leaves SMs idle.
  c.flops = static_cast<double>(waves) * sms * cta_flops / derate;
  c.hbm_bytes = static_cast<double>(ctas) * Pad(s.k, t.tk) *
                    (t.tm * Bytes(p.dtypes.lhs) + t.tn * Bytes(p.dtypes.rhs)) +
                static_cast<double>(active) * t.tm * s.n * Bytes(p.dtypes.out);
  return c;
}

// The grouped-matmul kernels through CostGroupedMatmul (tiling_cost.h).
TilingCostEstimate CostModelEstimate(const KernelProblem& p, const Tiling& t, const Chip& chip) {
  GroupedMatmulSpec spec;
  spec.m = p.shape.m;
  spec.k = p.shape.k;
  spec.n = p.shape.n;
  spec.num_groups = p.shape.groups;
  spec.tm = t.tm;
  spec.tk = t.tk;
  spec.tn = t.tn;
  spec.lhs_type = p.dtypes.lhs;
  spec.rhs_type = p.dtypes.rhs;
  spec.out_type = p.dtypes.out;
  switch (p.kernel) {
    case KernelKind::kGmm:
    case KernelKind::kGmmV2:
    case KernelKind::kRaggedGather:    // Not priced here (PricedByCostModel).
    case KernelKind::kGpuGroupedGemm:  // Not priced here.
      spec.kind = GroupedMatmulKind::kGmm;
      break;
    case KernelKind::kTgmm:
    case KernelKind::kTgmmV2:
      spec.kind = GroupedMatmulKind::kTgmm;
      break;
    case KernelKind::kFusedFfnDTiled:
    case KernelKind::kFusedFfnFTiled:
      spec.kind = GroupedMatmulKind::kFusedFfn;
      break;
  }
  if (p.kernel == KernelKind::kGmmV2 && p.options.fuse_activation) {
    // wi_0 and wi_1 blocks side by side: one [tk, 2·tn] block per step.
    spec.n *= 2;
    spec.tn *= 2;
  }
  TilingCostEstimate c;
  const absl::StatusOr<GroupedMatmulCost> cost = CostGroupedMatmul(spec, chip);
  if (!cost.ok()) {
    c.seconds = std::numeric_limits<double>::infinity();
    return c;
  }
  const GroupedMatmulWork& w = cost->work;
  c.seconds = cost->seconds;
  c.compute_seconds = cost->compute_seconds;
  c.memory_seconds = cost->memory_seconds;
  c.overhead_seconds = cost->overhead_seconds;
  c.flops = w.executed_flops;
  c.hbm_bytes = w.bytes_accessed;
  c.grid_steps = w.visited_m_tiles * w.tiles_k * w.tiles_n;
  return c;
}

}  // namespace

bool PricedByCostModel(KernelKind kernel) {
  switch (kernel) {
    case KernelKind::kGmm:
    case KernelKind::kTgmm:
    case KernelKind::kGmmV2:
    case KernelKind::kTgmmV2:
    case KernelKind::kFusedFfnDTiled:
    case KernelKind::kFusedFfnFTiled:
      return true;
    case KernelKind::kRaggedGather:
    case KernelKind::kGpuGroupedGemm:
      return false;
  }
  return false;
}

std::string TilingCostModelName(KernelKind kernel) {
  if (PricedByCostModel(kernel)) {
    return "cost model (sim/cost/grouped_matmul.h CostGroupedMatmul, group sizes unknown): "
           "tiles_m + G - 1 visited m-tiles, whole-tile MXU work, weight re-reads when "
           "tiles_k > 1, the chip's per-grid-step overhead, on one device";
  }
  if (kernel == KernelKind::kRaggedGather) {
    return "roofline proxy (sim/fit/tiling_cost.h; the cost model has no SparseCore gather): "
           "the kernel's HBM bytes at HBM bandwidth + 0.35 us per step over the SparseCores";
  }
  return "roofline proxy (sim/fit/tiling_cost.h; the cost model has no CTA waves): CTA tiles in "
         "waves over the SMs at the per-SM MMA peak vs the HBM bytes they stream";
}

TilingCostEstimate EstimateTilingCost(const KernelProblem& problem, const Tiling& tiling,
                                      const Chip& chip) {
  const double fixed = chip.proto().compute().kernel_overhead_seconds();
  TilingCostEstimate c;
  switch (problem.kernel) {
    case KernelKind::kGmm:
    case KernelKind::kTgmm:
    case KernelKind::kGmmV2:
    case KernelKind::kTgmmV2:
    case KernelKind::kFusedFfnDTiled:
    case KernelKind::kFusedFfnFTiled:
      return CostModelEstimate(problem, tiling, chip);
    case KernelKind::kRaggedGather: {
      const Device device = DeviceOf(problem, chip);
      c = RaggedGather(problem, tiling);
      // Steps run in parallel on the SparseCores (at least one).
      const double cores = std::max<int64_t>(1, chip.proto().compute().sparsecores_per_chip());
      Finish(device, kTpuGridStepOverheadSeconds / cores, fixed, c);
      return c;
    }
    case KernelKind::kGpuGroupedGemm: {
      const Device device = DeviceOf(problem, chip);
      c = GpuGroupedGemm(problem, tiling, chip, device);
      Finish(device, 0, fixed, c);
      return c;
    }
  }
  return c;
}

}  // namespace perfsim
