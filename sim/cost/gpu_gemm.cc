// GPU GEMM tile choice and cost (gpu_gemm.h).
#include "sim/cost/gpu_gemm.h"

#include <algorithm>
#include <cstdint>
#include <tuple>
#include <utility>

#include "sim/cost/roofline.h"

namespace perfsim {
namespace {

int64_t CeilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

// The largest CTA accumulator: 128x256 f32 is 128 KiB, half of a Hopper SM's register file
// held by its two consumer warpgroups (CUTLASS's and DeepGEMM's largest tiles).
constexpr int64_t kMaxTileElements = 128 * 256;
constexpr int64_t kMaxTileN = 256;
constexpr int64_t kTileNStep = 16;

// CTAs, waves and the last wave's occupancy of a tile over the problem.
struct Waves {
  int64_t ctas = 0;
  int64_t waves = 0;
  int64_t last_wave_ctas = 0;
  double executed_flops = 0;
};

Waves CountWaves(const GpuGemmProblem& p, const GpuGemmTile& t, int64_t sms) {
  Waves w;
  for (const GpuGemmGroup& g : p.groups) {
    if (g.m <= 0 || g.n <= 0) continue;
    const int64_t ctas = CeilDiv(g.m, t.tm) * CeilDiv(g.n, t.tn);
    w.ctas += ctas;
    const int64_t k = g.k <= 0 ? 0 : CeilDiv(g.k, t.tk) * t.tk;
    w.executed_flops += static_cast<double>(ctas) * 2.0 * static_cast<double>(t.tm) *
                        static_cast<double>(t.tn) * static_cast<double>(k);
  }
  w.waves = CeilDiv(w.ctas, sms);
  w.last_wave_ctas = w.ctas % sms == 0 ? sms : w.ctas % sms;
  return w;
}

int64_t Sms(const Chip& chip) {
  return std::max<int64_t>(1, chip.proto().compute().sms_per_chip());
}

// The smallest tm the matrix unit runs at full rate (64 when the chip does not say).
int64_t MinTileM(const Chip& chip) {
  const int64_t rows = chip.proto().compute().matrix_unit().output_rows_elements();
  return rows > 0 ? rows : 64;
}

// HBM bytes of one group's operands after L2 reuse (the header's band model), as
// {lhs, rhs}.
std::pair<double, double> OperandTraffic(const GpuGemmGroup& g, const GpuGemmTile& t,
                                         double lhs_size, double rhs_size, double half_l2,
                                         int64_t sms) {
  const double m = static_cast<double>(g.m), n = static_cast<double>(g.n);
  const double k = static_cast<double>(g.k);
  const double lhs = m * k * lhs_size, rhs = k * n * rhs_size;
  const int64_t tiles_m = CeilDiv(g.m, t.tm), tiles_n = CeilDiv(g.n, t.tn);
  const double waves = static_cast<double>(CeilDiv(tiles_m * tiles_n, std::max<int64_t>(1, sms)));
  // Along m: a band of m-tiles keeps its lhs panels in half the L2 while it walks every n
  // tile; the rhs stays in the other half, or is streamed again for every band.
  const double k_step_share = std::min(1.0, static_cast<double>(t.tk) / std::max(1.0, k));
  auto along = [half_l2, waves, sms, k_step_share](double panel, int64_t tiles,
                                                   int64_t other_tiles, double resident,
                                                   double streamed) {
    const double every_cta_resident = resident * static_cast<double>(other_tiles);
    const double every_cta_streamed = streamed * static_cast<double>(tiles);
    if (panel > half_l2) {
      // Not even one panel stays resident across waves. The CTAs of one wave run together and
      // step along k in near lockstep, so a panel that several of them read is fetched from
      // HBM once per wave, as long as the wave's current k-slices fit half the L2. In this
      // raster a wave is `sms` consecutive tiles, `other_tiles` to a row: each of its rows'
      // resident-side panels once (a row longer than a wave once per wave it spans), and
      // min(sms, other_tiles) panels of the streamed side, every wave. Otherwise, or when it
      // comes to more, every CTA reads both of its panels.
      const double s = static_cast<double>(std::max<int64_t>(1, sms));
      const double other = static_cast<double>(std::max<int64_t>(1, other_tiles));
      const double rows_in_wave = std::min(static_cast<double>(tiles), std::max(1.0, s / other));
      const double cols_in_wave = std::min(other, s);
      const double wave_slices =
          (rows_in_wave * panel + cols_in_wave * streamed / other) * k_step_share;
      if (wave_slices > half_l2) return std::make_pair(every_cta_resident, every_cta_streamed);
      return std::make_pair(
          std::min(resident * std::max(1.0, other / s), every_cta_resident),
          std::min(streamed * std::min(1.0, s / other) * waves, every_cta_streamed));
    }
    const int64_t band = std::max<int64_t>(1, static_cast<int64_t>(half_l2 / panel));
    const double passes = streamed <= half_l2 ? 1.0 : static_cast<double>(CeilDiv(tiles, band));
    return std::make_pair(resident, streamed * passes);
  };
  const std::pair<double, double> by_m =
      along(static_cast<double>(t.tm) * k * lhs_size, tiles_m, tiles_n, lhs, rhs);
  const std::pair<double, double> by_n_swapped =
      along(static_cast<double>(t.tn) * k * rhs_size, tiles_n, tiles_m, rhs, lhs);
  const std::pair<double, double> by_n = {by_n_swapped.second, by_n_swapped.first};
  return by_m.first + by_m.second <= by_n.first + by_n.second ? by_m : by_n;
}

}  // namespace

int64_t GpuGemmKStep(PrimitiveType lhs, PrimitiveType rhs) {
  const int64_t bits = std::max<int64_t>({BitWidth(lhs), BitWidth(rhs), 1});
  return std::max<int64_t>(1, 128 * 8 / bits);
}

GpuGemmTile ChooseGpuGemmTile(const GpuGemmProblem& problem, const Chip& chip) {
  const int64_t sms = Sms(chip);
  const int64_t tk = GpuGemmKStep(problem.lhs_type, problem.rhs_type);
  const int64_t min_tm = MinTileM(chip);
  GpuGemmTile best{.tm = std::max<int64_t>(min_tm, 128), .tn = kMaxTileN, .tk = tk};
  bool found = false;
  Waves best_waves;
  for (int64_t tm : {64, 128, 256}) {
    if (tm < min_tm) continue;
    for (int64_t tn = kTileNStep; tn <= kMaxTileN; tn += kTileNStep) {
      if (tm * tn > kMaxTileElements) continue;
      const GpuGemmTile tile{.tm = tm, .tn = tn, .tk = tk};
      const Waves w = CountWaves(problem, tile, sms);
      if (w.ctas == 0) return best;  // nothing to compute: any tile
      // DeepGEMM's ranking: fewest waves, then the fullest last wave; then the least padding
      // and the wider tn (fewer CTAs re-reading the lhs panel), then the smaller tm.
      const auto key = std::make_tuple(w.waves, -w.last_wave_ctas, w.executed_flops, -tn, tm);
      const auto best_key = std::make_tuple(best_waves.waves, -best_waves.last_wave_ctas,
                                            best_waves.executed_flops, -best.tn, best.tm);
      if (!found || key < best_key) {
        best = tile;
        best_waves = w;
        found = true;
      }
    }
  }
  return best;
}

GpuGemmCost CostGpuGemm(const GpuGemmProblem& problem, const GpuGemmTile& tile, const Chip& chip) {
  GpuGemmCost c;
  c.tile = tile;
  const int64_t sms = Sms(chip);
  const Waves w = CountWaves(problem, tile, sms);
  c.ctas = w.ctas;
  c.waves = w.waves;
  c.executed_flops = w.executed_flops;
  const double lhs_size = static_cast<double>(ByteWidth(problem.lhs_type));
  const double rhs_size = static_cast<double>(ByteWidth(problem.rhs_type));
  const double out_size = static_cast<double>(ByteWidth(problem.out_type));
  const double half_l2 = static_cast<double>(chip.proto().memory().l2_bytes()) / 2;
  for (const GpuGemmGroup& g : problem.groups) {
    if (g.m <= 0 || g.n <= 0) continue;
    const double m = static_cast<double>(g.m), n = static_cast<double>(g.n);
    const double k = static_cast<double>(std::max<int64_t>(0, g.k));
    c.flops += 2.0 * m * n * k;
    c.out_bytes += m * n * out_size;
    if (g.k <= 0) continue;
    const std::pair<double, double> hbm = OperandTraffic(g, tile, lhs_size, rhs_size, half_l2, sms);
    c.lhs_bytes += hbm.first;
    c.rhs_bytes += hbm.second;
    c.operand_reads_bytes += m * k * lhs_size * static_cast<double>(CeilDiv(g.n, tile.tn)) +
                             k * n * rhs_size * static_cast<double>(CeilDiv(g.m, tile.tm));
  }
  const MatmulRate rate =
      MatmulRateFor(problem.lhs_type, problem.rhs_type, MatmulPrecision::kDefault, chip);
  if (rate.flops_per_second > 0) {
    const MatrixUnitSpec& unit = chip.proto().compute().matrix_unit();
    const double derate = tile.tm < unit.output_rows_elements() &&
                                  unit.small_rows_fraction_of_peak() > 0
                              ? unit.small_rows_fraction_of_peak()
                              : 1.0;
    // Whole waves: the tiles of the last one leave SMs idle for a whole tile time.
    const double quantisation =
        c.ctas == 0 ? 1.0
                    : static_cast<double>(c.waves * sms) / static_cast<double>(c.ctas);
    c.compute_seconds = c.executed_flops * quantisation / (rate.flops_per_second * derate);
  } else if (c.executed_flops > 0) {
    c.unknown_rate = rate.unknown_rate;
  }
  const double hbm =
      DeviceHbmBytesPerSecond(chip) * chip.proto().efficiency().hbm_fraction_of_peak();
  c.operand_seconds = (c.lhs_bytes + c.rhs_bytes) / hbm;
  c.epilogue_seconds = c.out_bytes / hbm;
  c.seconds = std::max(c.compute_seconds, c.operand_seconds) + c.epilogue_seconds;
  return c;
}

}  // namespace perfsim
