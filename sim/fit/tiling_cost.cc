// The roofline proxy of tiling_cost.h, one function per kernel family. Doubles throughout:
// traffic and work of large problems exceed 2^63 only in absurd cases, and a ranking needs no
// exact integers.
#include "sim/fit/tiling_cost.h"

#include <algorithm>
#include <cmath>

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

// gmm / gmm_v2: grid (tiles_n, active, tiles_k). The lhs block changes every step; the rhs
// block (group, k, n) stays put across consecutive m-tiles of one group only when tk covers k;
// the out block is written once per (active tile, n tile).
TilingCostEstimate GroupedMatmul(const KernelProblem& p, const Tiling& t, const Device& device) {
  const ProblemShape& s = p.shape;
  const MatrixUnitSpec& unit = *device.unit;
  const int64_t rhs_count = p.kernel == KernelKind::kGmmV2 && p.options.fuse_activation ? 2 : 1;
  const int64_t tiles_n = CeilDiv(s.n, t.tn);
  const int64_t tiles_k = CeilDiv(s.k, t.tk);
  const int64_t active = ActiveMTiles(s.m, t.tm, s.groups);
  const int64_t groups_used = std::min(s.groups, s.m);
  TilingCostEstimate c;
  c.grid_steps = tiles_n * active * tiles_k;
  c.flops = static_cast<double>(c.grid_steps) * 2 * Pad(t.tm, unit.output_rows_elements()) *
            Pad(t.tk, unit.contracting_elements()) *
            Pad(rhs_count * t.tn, unit.output_columns_elements());
  const double lhs = static_cast<double>(c.grid_steps) * t.tm * t.tk * Bytes(p.dtypes.lhs);
  const double rhs_fetches = static_cast<double>(tiles_n) * tiles_k *
                             static_cast<double>(tiles_k == 1 ? groups_used : active);
  const double rhs = rhs_fetches * t.tk * rhs_count * t.tn * Bytes(p.dtypes.rhs);
  const double out_blocks =
      static_cast<double>(tiles_n) * active * (p.options.existing_out ? 2 : 1);
  const double out = out_blocks * t.tm * t.tn * Bytes(p.dtypes.out);
  c.hbm_bytes = lhs + rhs + out;
  return c;
}

// tgmm / tgmm_v2: grid (tiles_n, tiles_k, active) with m innermost, so both input blocks
// change every step; dW[g] [tk, tn] is stored once per group (empty groups as zeros).
TilingCostEstimate TransposedGroupedMatmul(const KernelProblem& p, const Tiling& t,
                                           const Device& device) {
  const ProblemShape& s = p.shape;
  const MatrixUnitSpec& unit = *device.unit;
  const int64_t tiles_n = CeilDiv(s.n, t.tn);
  const int64_t tiles_k = CeilDiv(s.k, t.tk);
  TilingCostEstimate c;
  c.grid_steps = tiles_n * tiles_k * ActiveMTiles(s.m, t.tm, s.groups);
  const double steps = static_cast<double>(c.grid_steps);
  c.flops = steps * 2 * Pad(t.tm, unit.contracting_elements()) *
            Pad(t.tk, unit.output_rows_elements()) * Pad(t.tn, unit.output_columns_elements());
  c.hbm_bytes = steps * t.tm * (t.tk * Bytes(p.dtypes.lhs) + t.tn * Bytes(p.dtypes.rhs)) +
                static_cast<double>(s.groups) * tiles_k * tiles_n * t.tk * t.tn *
                    Bytes(p.dtypes.out) * (p.options.existing_out ? 2 : 1);
  return c;
}

// Fused FFN, D = k, F = n (fused_ffn_footprint.cc for the two grids).
TilingCostEstimate FusedFfn(const KernelProblem& p, const Tiling& t) {
  const ProblemShape& s = p.shape;
  const double model_dim = static_cast<double>(s.k);
  const double ffn_dim = static_cast<double>(s.n);
  const double w = Bytes(p.dtypes.rhs);
  const int64_t active = ActiveMTiles(s.m, t.tm, s.groups);
  const double groups_used = static_cast<double>(std::min(s.groups, s.m));
  TilingCostEstimate c;
  // x is fetched once per active token tile in both grids.
  const double x = static_cast<double>(active) * t.tm * model_dim * Bytes(p.dtypes.lhs);
  if (p.kernel == KernelKind::kFusedFfnDTiled) {
    const int64_t tiles_d = CeilDiv(s.k, t.tk);
    c.grid_steps = active * tiles_d;
    // h [tm, F] once per token tile, then one [tm, F] x [F, td] product per step.
    c.flops = static_cast<double>(active) * 4 * t.tm * model_dim * ffn_dim +
              static_cast<double>(c.grid_steps) * 2 * t.tm * ffn_dim * t.tk;
    // wi_0, wi_1 blocks stay put within a group; wo and out change every step.
    c.hbm_bytes = x + groups_used * 2 * model_dim * ffn_dim * w +
                  static_cast<double>(c.grid_steps) *
                      (ffn_dim * t.tk * w + t.tm * t.tk * Bytes(p.dtypes.out));
    return c;
  }
  const int64_t tiles_f = CeilDiv(s.n, t.tn);
  c.grid_steps = active * tiles_f;
  c.flops = static_cast<double>(c.grid_steps) * 6 * t.tm * model_dim * t.tn;
  const double weight_fetches = tiles_f == 1 ? groups_used : static_cast<double>(c.grid_steps);
  c.hbm_bytes = x + weight_fetches * 3 * model_dim * t.tn * w +
                static_cast<double>(active) * t.tm * model_dim * Bytes(p.dtypes.out);
  return c;
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

}  // namespace

absl::string_view TilingCostModelName() {
  return "roofline proxy (sim/fit/tiling_cost.h): max(padded matrix work at the dtype peak, "
         "implied HBM traffic at HBM bandwidth) + 0.35 us per TPU grid step; GPU CTAs in waves "
         "over the SMs";
}

TilingCostEstimate EstimateTilingCost(const KernelProblem& problem, const Tiling& tiling,
                                      const Chip& chip) {
  const Device device = DeviceOf(problem, chip);
  const double fixed = chip.proto().compute().kernel_overhead_seconds();
  TilingCostEstimate c;
  switch (problem.kernel) {
    case KernelKind::kGmm:
    case KernelKind::kGmmV2:
      c = GroupedMatmul(problem, tiling, device);
      break;
    case KernelKind::kTgmm:
    case KernelKind::kTgmmV2:
      c = TransposedGroupedMatmul(problem, tiling, device);
      break;
    case KernelKind::kFusedFfnDTiled:
    case KernelKind::kFusedFfnFTiled:
      c = FusedFfn(problem, tiling);
      break;
    case KernelKind::kRaggedGather: {
      c = RaggedGather(problem, tiling);
      // Steps run in parallel on the SparseCores (at least one).
      const double cores = std::max<int64_t>(1, chip.proto().compute().sparsecores_per_chip());
      Finish(device, kTpuGridStepOverheadSeconds / cores, fixed, c);
      return c;
    }
    case KernelKind::kGpuGroupedGemm:
      c = GpuGroupedGemm(problem, tiling, chip, device);
      Finish(device, 0, fixed, c);
      return c;
  }
  Finish(device, kTpuGridStepOverheadSeconds, fixed, c);
  return c;
}

}  // namespace perfsim
