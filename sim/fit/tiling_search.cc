// Tiling enumeration and search (tiling_search.h). The search computes each candidate's
// footprint (a handful of small buffers) and, for those that fit, the estimate of
// tiling_cost.h (the cost model for the grouped matmuls); only the winner and the closest miss
// get a full FitReport.
#include "sim/fit/tiling_search.h"

#include <algorithm>
#include <set>
#include <tuple>
#include <utility>

#include "sim/util/status.h"

namespace perfsim {
namespace {

constexpr int64_t kMaxTile = int64_t{1} << 24;
// Every multiple of the granule up to here is a candidate; beyond, powers of two and divisors.
constexpr int64_t kDenseCandidateLimit = 8192;
constexpr int64_t kMaxGatherRowsPerStep = 4096;
constexpr int64_t kMaxGpuTile = 256;

int64_t RoundUp(int64_t value, int64_t multiple) { return CeilDiv(value, multiple) * multiple; }

// Divisors of `value` up to kMaxTile, ascending.
std::vector<int64_t> Divisors(int64_t value) {
  std::set<int64_t> out;
  for (int64_t i = 1; i * i <= value; ++i) {
    if (value % i != 0) continue;
    if (i <= kMaxTile) out.insert(i);
    if (value / i <= kMaxTile) out.insert(value / i);
  }
  return {out.begin(), out.end()};
}

// A minor (lane) block dimension: multiples of `granule` and the whole dimension.
std::vector<int64_t> LaneTiles(int64_t dim, int64_t granule) {
  std::set<int64_t> out;
  const int64_t aligned = std::min(RoundUp(dim, granule), kMaxTile);
  for (int64_t v = granule; v <= std::min(aligned, kDenseCandidateLimit); v += granule) {
    out.insert(v);
  }
  for (int64_t v = granule; v <= aligned; v *= 2) out.insert(v);
  for (int64_t d : Divisors(dim)) {
    if (d % granule == 0) out.insert(d);
  }
  if (dim <= kMaxTile) out.insert(dim);
  return {out.begin(), out.end()};
}

// tm: multiples of 8 dividing m, and m.
std::vector<int64_t> RowTiles(int64_t m) {
  std::vector<int64_t> out;
  for (int64_t d : Divisors(m)) {
    if (d % 8 == 0 || d == m) out.push_back(d);
  }
  return out;
}

void Cross(const std::vector<int64_t>& tms, const std::vector<int64_t>& tks,
           const std::vector<int64_t>& tns, std::vector<Tiling>& out) {
  out.reserve(out.size() + tms.size() * tks.size() * tns.size());
  for (int64_t tm : tms) {
    for (int64_t tk : tks) {
      for (int64_t tn : tns) out.push_back(Tiling{tm, tk, tn});
    }
  }
}

std::vector<Tiling> GpuTilings(const KernelProblem& p, const Chip& chip) {
  const MatrixUnitSpec& unit = chip.proto().compute().matrix_unit();
  const int bits = std::max({BitWidth(p.dtypes.lhs), BitWidth(p.dtypes.rhs), 1});
  const int64_t k_granule = std::max<int64_t>(1, unit.contracting_elements() * 16 / bits);
  const int64_t n_granule = std::max<int64_t>(1, unit.output_columns_elements());
  std::vector<int64_t> tms, tks, tns;
  for (int64_t v = 16; v <= kMaxGpuTile; v += 16) tms.push_back(v);
  for (int64_t v = n_granule; v <= kMaxGpuTile; v += n_granule) tns.push_back(v);
  for (int64_t v = k_granule; v <= kMaxGpuTile; v += k_granule) tks.push_back(v);
  std::vector<Tiling> out;
  Cross(tms, tks, tns, out);
  return out;
}

std::vector<Tiling> RaggedGatherTilings(const KernelProblem& p) {
  const int64_t group = p.shape.n;
  std::set<int64_t> rows;
  const int64_t all_rows = RoundUp(p.shape.m, group);
  for (int64_t v = group; v <= std::min(all_rows, kMaxGatherRowsPerStep); v *= 2) rows.insert(v);
  if (all_rows <= kMaxGatherRowsPerStep) rows.insert(all_rows);
  std::vector<int64_t> chunks;
  for (int64_t d : Divisors(p.shape.k)) {
    if (d % 8 == 0 || d == p.shape.k) chunks.push_back(d);
  }
  std::vector<Tiling> out;
  Cross({rows.begin(), rows.end()}, chunks, {0}, out);
  return out;
}

// Sort key: estimated time, then fewer grid steps, then footprint, then the tiling itself.
bool Faster(const RankedTiling& a, const RankedTiling& b) {
  return std::make_tuple(a.cost.seconds, a.cost.grid_steps, a.required_bytes, a.tiling.tm,
                         a.tiling.tk, a.tiling.tn) <
         std::make_tuple(b.cost.seconds, b.cost.grid_steps, b.required_bytes, b.tiling.tm,
                         b.tiling.tk, b.tiling.tn);
}

}  // namespace

std::vector<Tiling> EnumerateTilings(const KernelProblem& p, const Chip& chip) {
  const ProblemShape& s = p.shape;
  std::vector<Tiling> out;
  switch (p.kernel) {
    case KernelKind::kGmm:
    case KernelKind::kTgmm:
    case KernelKind::kGmmV2:
    case KernelKind::kTgmmV2:
      Cross(RowTiles(s.m), LaneTiles(s.k, 128), LaneTiles(s.n, 128), out);
      break;
    case KernelKind::kFusedFfnDTiled:
      Cross(RowTiles(s.m), LaneTiles(s.k, 128), {s.n}, out);
      break;
    case KernelKind::kFusedFfnFTiled:
      Cross(RowTiles(s.m), {s.k}, LaneTiles(s.n, 128), out);
      break;
    case KernelKind::kRaggedGather:
      out = RaggedGatherTilings(p);
      break;
    case KernelKind::kGpuGroupedGemm:
      out = GpuTilings(p, chip);
      break;
  }
  return out;
}

absl::StatusOr<TilingSearchResult> SearchTilings(const KernelProblem& problem, const Chip& chip,
                                                 const TilingSearchOptions& options) {
  PERFSIM_RETURN_IF_ERROR(ValidateProblem(problem));
  TilingSearchResult result;
  PERFSIM_ASSIGN_OR_RETURN(result.limits,
                           ResolveLimits(problem.kernel, chip, options.vmem_limit_bytes));
  const FitLimits& limits = result.limits;
  std::vector<RankedTiling> fitting;
  std::optional<std::pair<int64_t, Tiling>> smallest;
  for (const Tiling& tiling : EnumerateTilings(problem, chip)) {
    const KernelFootprint footprint = ComputeFootprint(problem, tiling, chip);
    // Candidates are legal by construction; a kernel rule this enumeration does not know
    // (e.g. an unsupported dtype) rules them all out, and the closest miss explains it.
    const int64_t required = footprint.BytesIn(limits.space);
    ++result.candidates;
    if (!smallest.has_value() || required < smallest->first) smallest.emplace(required, tiling);
    if (!footprint.violations.empty() || required > limits.limit_bytes) continue;
    const int64_t smem = footprint.BytesIn(MemorySpace::kSmem);
    if (smem > 0 && smem > limits.smem_limit_bytes) continue;
    fitting.push_back(RankedTiling{tiling, EstimateTilingCost(problem, tiling, chip), required});
  }
  result.fitting = static_cast<int64_t>(fitting.size());
  if (fitting.empty()) {
    if (smallest.has_value()) {
      result.smallest_misfit = CheckFitWithLimits(problem, smallest->second, chip, limits);
    }
    return result;
  }
  const int64_t keep = std::min<int64_t>(static_cast<int64_t>(fitting.size()),
                                         1 + std::max<int64_t>(0, options.max_runners_up));
  std::partial_sort(fitting.begin(), fitting.begin() + keep, fitting.end(), Faster);
  result.best = CheckFitWithLimits(problem, fitting.front().tiling, chip, limits);
  result.best_cost = fitting.front().cost;
  result.runners_up.assign(fitting.begin() + 1, fitting.begin() + keep);
  return result;
}

}  // namespace perfsim
