// Tiling estimates (tiling_cost.h): the cost model for the grouped matmuls, the roofline proxy
// for the two kernels it cannot price. Doubles throughout: traffic and work of large problems
// exceed 2^63 only in absurd cases, and a ranking needs no exact integers.
#include "sim/fit/tiling_cost.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "absl/strings/str_cat.h"
#include "sim/cost/gpu_gemm.h"
#include "sim/cost/grouped_matmul.h"

namespace perfsim {
namespace {

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

// GPU: the GPU GEMM model (sim/cost/gpu_gemm.h) with this CTA tile, m split evenly over the
// groups; the fixed costs as CostGroupedMatmul charges them.
TilingCostEstimate GpuGroupedGemm(const KernelProblem& p, const Tiling& t, const Chip& chip) {
  const ProblemShape& s = p.shape;
  GpuGemmProblem problem{
      .lhs_type = p.dtypes.lhs, .rhs_type = p.dtypes.rhs, .out_type = p.dtypes.out};
  const int64_t groups = std::max<int64_t>(1, s.groups);
  for (int64_t g = 0; g < groups; ++g) {
    problem.groups.push_back(
        {.m = s.m / groups + (g < s.m % groups ? 1 : 0), .n = s.n, .k = s.k});
  }
  const GpuGemmCost gpu = CostGpuGemm(problem, GpuGemmTile{.tm = t.tm, .tn = t.tn, .tk = t.tk}, chip);
  TilingCostEstimate c;
  // Main-loop iterations over all CTAs: no time of their own, but the search breaks ties in
  // time by fewer of them (a k-step costs a barrier round trip).
  c.grid_steps = gpu.ctas * CeilDiv(s.k, t.tk);
  c.flops = gpu.executed_flops;
  c.hbm_bytes = gpu.lhs_bytes + gpu.rhs_bytes + gpu.out_bytes;
  c.compute_seconds = gpu.compute_seconds;
  c.memory_seconds = gpu.operand_seconds + gpu.epilogue_seconds;
  c.overhead_seconds =
      chip.proto().compute().kernel_overhead_seconds() +
      static_cast<double>(s.groups) *
          chip.proto().efficiency().grouped_matmul_overhead_seconds_per_group();
  c.seconds = gpu.unknown_rate.empty() ? gpu.seconds + c.overhead_seconds
                                       : std::numeric_limits<double>::infinity();
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
  return "GPU GEMM model (sim/cost/gpu_gemm.h CostGpuGemm, the model CostGroupedMatmul uses on a "
         "GPU; group sizes unknown: m split evenly): CTA tiles in waves over the SMs, HBM traffic "
         "after L2 reuse, the epilogue after the main loop";
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
    case KernelKind::kGpuGroupedGemm:
      return GpuGroupedGemm(problem, tiling, chip);
  }
  return c;
}

}  // namespace perfsim
