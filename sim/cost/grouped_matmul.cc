// Grouped-matmul cost (grouped_matmul.h).
#include "sim/cost/grouped_matmul.h"

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "sim/cost/roofline.h"
#include "sim/ir/backend_config.h"
#include "sim/ir/custom_call_targets.h"
#include "sim/util/status.h"

namespace perfsim {
namespace {

int64_t CeilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

absl::Status Invalid(absl::string_view what, absl::string_view got) {
  return absl::InvalidArgumentError(absl::StrCat("grouped matmul: expected ", what, "; got ", got));
}

// The m-tile of every grid step along m, in grid order, for known group sizes.
std::vector<int64_t> VisitedTiles(const GroupedMatmulSpec& spec, int64_t tm, int64_t tiles_m,
                                  int64_t* rows, int64_t* groups_visited) {
  const std::vector<int64_t>& sizes = *spec.group_sizes;
  int64_t start = 0;
  for (int64_t g = 0; g < spec.group_offset; ++g) start += sizes[g];
  std::vector<int64_t> tiles;
  for (int64_t g = spec.group_offset; g < spec.group_offset + spec.num_groups; ++g) {
    const int64_t size = sizes[g];
    if (size == 0) {
      // tgmm visits an empty group once to write its zero gradient; gmm skips it.
      if (spec.kind == GroupedMatmulKind::kTgmm) {
        tiles.push_back(std::min(start / tm, tiles_m - 1));
        ++*groups_visited;
      }
      continue;
    }
    for (int64_t t = start / tm; t <= (start + size - 1) / tm; ++t) tiles.push_back(t);
    *rows += size;
    ++*groups_visited;
    start += size;
  }
  return tiles;
}

// GPU: a CTA streams its operands through the main loop (asynchronous loads overlap the
// tensor-core MMAs), then runs the epilogue: the accumulator tile converted and stored to
// HBM while the SM's tensor cores wait. A kernel that does not pipeline its epilogue with the
// next tile's main loop (the model's assumption for every GPU grouped matmul; see the header)
// pays the store after the loop, and the CTAs of a wave reach it together, so a wave costs
// max(its compute, its operand streaming) + its output write at the HBM rate. The waves of one
// call are alike (one tile shape over the same k), so the sum over the waves is
// max(compute, operand streaming) + output bytes / HBM rate.
void TimeOnGpu(double compute, double operand_bytes, double out_bytes, double hbm, double fixed,
               GroupedMatmulCost& cost) {
  cost.compute_seconds = compute;
  cost.operand_seconds = operand_bytes / hbm;
  cost.epilogue_seconds = out_bytes / hbm;
  cost.memory_seconds = cost.operand_seconds + cost.epilogue_seconds;
  cost.overhead_seconds = fixed;
  const double roofline = std::max(compute, cost.operand_seconds) + cost.epilogue_seconds;
  cost.seconds = roofline + fixed;
  if (cost.seconds <= 0) {
    cost.bound = Bound::kNone;
  } else if (fixed > roofline) {
    cost.bound = Bound::kOverhead;
  } else {
    cost.bound = compute >= cost.memory_seconds ? Bound::kCompute : Bound::kMemory;
  }
}

// A Pallas kernel's grid on one TensorCore: every step lasts max(its compute, its DMA, the
// fixed step cost). Pallas double-buffers every block, the output too, so a step's DMA (the
// next step's inputs, the previous step's output) overlaps its compute. The steps compute
// alike (one tile each); their DMA is alike too, except where a weight block is fetched once
// per group run (gmm with one k tile, fused_ffn with one D and one F tile): the first step of
// each run also waits for the group's weights.
struct PallasGrid {
  int64_t steps_per_core = 0;
  double step_overhead_seconds = 0;  // steps · the fixed step cost
  double seconds = 0;
};

PallasGrid TimePallasGrid(const GroupedMatmulSpec& spec, const GroupedMatmulWork& w,
                          int64_t cores, double compute, double hbm, double step_overhead) {
  PallasGrid grid;
  // Each TensorCore runs its share of the n tiles (the parallel grid dimension) for every
  // visited m-tile and k tile.
  const int64_t n_per_core = CeilDiv(w.tiles_n, cores);
  grid.steps_per_core = n_per_core * w.visited_m_tiles * w.tiles_k;
  grid.step_overhead_seconds = static_cast<double>(grid.steps_per_core) * step_overhead;
  const double memory = w.bytes_accessed / hbm;
  if (grid.steps_per_core <= 0) {
    grid.seconds = std::max(compute, memory);
    return grid;
  }
  const bool weights_per_run =
      (spec.kind == GroupedMatmulKind::kGmm && w.tiles_k == 1) ||
      (spec.kind == GroupedMatmulKind::kFusedFfn && w.tiles_k * w.tiles_n == 1);
  const int64_t steps = grid.steps_per_core;
  // Steps that fetch a group's weights: one per group run and n tile of this core.
  const int64_t fetch_steps =
      weights_per_run ? std::min(steps, w.groups_visited * n_per_core) : 0;
  const double weight_seconds = weights_per_run ? w.rhs_bytes / hbm : 0;
  const double per_step_compute = compute / static_cast<double>(steps);
  const double per_step_dma = (memory - weight_seconds) / static_cast<double>(steps);
  const double fetch_dma =
      fetch_steps > 0 ? per_step_dma + weight_seconds / static_cast<double>(fetch_steps) : 0;
  grid.seconds =
      static_cast<double>(fetch_steps) * std::max({per_step_compute, fetch_dma, step_overhead}) +
      static_cast<double>(steps - fetch_steps) *
          std::max({per_step_compute, per_step_dma, step_overhead});
  return grid;
}

// Rows of each local group: the known sizes, else m split evenly.
std::vector<int64_t> LocalGroupRows(const GroupedMatmulSpec& spec) {
  std::vector<int64_t> rows;
  rows.reserve(spec.num_groups);
  for (int64_t g = 0; g < spec.num_groups; ++g) {
    if (spec.group_sizes.has_value()) {
      rows.push_back((*spec.group_sizes)[spec.group_offset + g]);
    } else {
      rows.push_back(spec.m / spec.num_groups + (g < spec.m % spec.num_groups ? 1 : 0));
    }
  }
  return rows;
}

}  // namespace

GpuGemmProblem GpuGemmsOf(const GroupedMatmulSpec& spec) {
  GpuGemmProblem problem{.lhs_type = spec.lhs_type,
                         .rhs_type = spec.rhs_type,
                         .out_type = spec.out_type};
  if (spec.implementation == GroupedMatmulImplementation::kXlaRaggedDot) {
    if (spec.kind == GroupedMatmulKind::kGmm) {
      // One dot contracting the group dimension with k: every row against every group.
      problem.groups.push_back({.m = spec.m, .n = spec.n, .k = spec.num_groups * spec.k});
    } else {
      // A batched dot over the groups, each contracting all m rows (masked to its own).
      problem.groups.assign(spec.num_groups, {.m = spec.k, .n = spec.n, .k = spec.m});
    }
    return problem;
  }
  for (int64_t rows : LocalGroupRows(spec)) {
    if (spec.kind == GroupedMatmulKind::kGmm) {
      problem.groups.push_back({.m = rows, .n = spec.n, .k = spec.k});
    } else {
      // tgmm: dW[g] [k, n] contracts the group's rows; an empty group writes its zeros.
      problem.groups.push_back({.m = spec.k, .n = spec.n, .k = rows});
    }
  }
  return problem;
}

namespace {

// gmm and tgmm on a GPU: the kernel's own tile, waves and L2-aware traffic.
absl::StatusOr<GroupedMatmulCost> CostOnGpu(const GroupedMatmulSpec& spec, const Chip& chip,
                                            double fixed, GroupedMatmulCost& cost) {
  const GpuGemmProblem problem = GpuGemmsOf(spec);
  const GpuGemmCost gpu = CostGpuGemm(problem, ChooseGpuGemmTile(problem, chip), chip);
  if (!gpu.unknown_rate.empty()) cost.unknown_rates.push_back(gpu.unknown_rate);
  GroupedMatmulWork& w = cost.work;
  w.executed_flops = gpu.executed_flops;
  w.lhs_bytes = gpu.lhs_bytes;
  w.rhs_bytes = gpu.rhs_bytes;
  w.out_bytes = gpu.out_bytes;
  w.bytes_accessed = w.lhs_bytes + w.rhs_bytes + w.out_bytes;
  const double hbm =
      DeviceHbmBytesPerSecond(chip) * chip.proto().efficiency().hbm_fraction_of_peak();
  TimeOnGpu(gpu.compute_seconds, gpu.lhs_bytes + gpu.rhs_bytes, gpu.out_bytes, hbm, fixed, cost);
  cost.gpu_gemm = gpu;
  return cost;
}

}  // namespace

absl::StatusOr<GroupedMatmulWork> CountGroupedMatmul(const GroupedMatmulSpec& spec) {
  if (spec.m <= 0 || spec.k <= 0 || spec.n <= 0) {
    return Invalid("positive m, k, n", absl::StrCat(spec.m, ", ", spec.k, ", ", spec.n));
  }
  if (spec.tm <= 0 || spec.tk <= 0 || spec.tn <= 0) {
    return Invalid("positive tiles (tm, tk, tn)",
                   absl::StrCat("(", spec.tm, ", ", spec.tk, ", ", spec.tn, ")"));
  }
  if (spec.num_groups <= 0 || spec.group_offset < 0) {
    return Invalid("at least one local group and a non-negative group offset",
                   absl::StrCat(spec.num_groups, " groups at offset ", spec.group_offset));
  }
  const int64_t tm = std::min(spec.tm, spec.m);
  const int64_t tk = std::min(spec.tk, spec.k);
  const int64_t tn = std::min(spec.tn, spec.n);
  GroupedMatmulWork w;
  w.tiles_m = CeilDiv(spec.m, tm);
  w.tiles_k = CeilDiv(spec.k, tk);
  w.tiles_n = CeilDiv(spec.n, tn);

  if (spec.group_sizes.has_value()) {
    const std::vector<int64_t>& sizes = *spec.group_sizes;
    if (static_cast<int64_t>(sizes.size()) < spec.group_offset + spec.num_groups) {
      return Invalid(absl::StrCat("at least group_offset + num_groups = ",
                                  spec.group_offset + spec.num_groups, " group sizes"),
                     absl::StrCat(sizes.size()));
    }
    int64_t total = 0;
    for (size_t g = 0; g < sizes.size(); ++g) {
      if (sizes[g] < 0) return Invalid("non-negative group sizes", absl::StrCat(sizes[g]));
      total += sizes[g];
    }
    if (total > spec.m) {
      return Invalid(absl::StrCat("group sizes summing to at most m = ", spec.m),
                     absl::StrCat(total, " (", absl::StrJoin(sizes, ","), ")"));
    }
    const std::vector<int64_t> tiles =
        VisitedTiles(spec, tm, w.tiles_m, &w.rows, &w.groups_visited);
    w.visited_m_tiles = static_cast<int64_t>(tiles.size());
    for (size_t i = 0; i < tiles.size(); ++i) {
      if (i == 0 || tiles[i] != tiles[i - 1]) ++w.distinct_m_tiles;
    }
    w.group_sizes_known = true;
  } else {
    // Upper bound: every row in a local group and every group boundary inside a tile.
    w.rows = spec.m;
    w.visited_m_tiles = w.tiles_m + spec.num_groups - 1;
    w.distinct_m_tiles = w.tiles_m;
    w.groups_visited = spec.num_groups;
  }

  const double m_rows = static_cast<double>(tm);
  const double k = static_cast<double>(spec.k);
  const double n = static_cast<double>(spec.n);
  const double lhs_size = static_cast<double>(ByteWidth(spec.lhs_type));
  const double rhs_size = static_cast<double>(ByteWidth(spec.rhs_type));
  const double out_size = static_cast<double>(ByteWidth(spec.out_type));
  const double visited = static_cast<double>(w.visited_m_tiles);
  const double distinct = static_cast<double>(w.distinct_m_tiles);
  const double rows = static_cast<double>(w.rows);
  w.flops = 2.0 * rows * k * n;
  w.executed_flops = visited * static_cast<double>(w.tiles_n) * static_cast<double>(w.tiles_k) *
                     2.0 * m_rows * static_cast<double>(tk) * static_cast<double>(tn);
  if (spec.kind == GroupedMatmulKind::kFusedFfn) {
    // x·wi_0, x·wi_1 and act·wo; the gate multiplies and one transcendental per element of h.
    w.flops = 3 * w.flops + 2.0 * rows * n;
    w.transcendentals = rows * n;
    w.executed_flops *= 3;
  }
  switch (spec.kind) {
    case GroupedMatmulKind::kGmm:
      w.lhs_bytes = static_cast<double>(w.tiles_n) * (w.tiles_k == 1 ? distinct : visited) *
                    m_rows * k * lhs_size;
      w.rhs_bytes =
          (w.tiles_k == 1 ? static_cast<double>(w.groups_visited) : visited) * k * n * rhs_size;
      w.out_bytes = distinct * m_rows * n * out_size;
      break;
    case GroupedMatmulKind::kTgmm:
      w.lhs_bytes = static_cast<double>(w.tiles_n) * distinct * m_rows * k * lhs_size;
      w.rhs_bytes = static_cast<double>(w.tiles_k) * distinct * m_rows * n * rhs_size;
      w.out_bytes = static_cast<double>(spec.num_groups) * k * n * out_size;
      break;
    case GroupedMatmulKind::kFusedFfn:
      w.lhs_bytes = visited * m_rows * k * lhs_size;
      w.rhs_bytes = 3 *
                    (w.tiles_k * w.tiles_n == 1 ? static_cast<double>(w.groups_visited) : visited) *
                    k * n * rhs_size;
      w.out_bytes = distinct * m_rows * k * out_size;
      break;
  }
  w.bytes_accessed = w.lhs_bytes + w.rhs_bytes + w.out_bytes;
  return w;
}

absl::StatusOr<GroupedMatmulCost> CostGroupedMatmul(const GroupedMatmulSpec& spec,
                                                    const Chip& chip) {
  GroupedMatmulCost cost;
  absl::StatusOr<GroupedMatmulWork> work = CountGroupedMatmul(spec);
  if (!work.ok()) return work.status();
  cost.work = *work;
  // The efficiency block (issue 7): HBM efficiency as for every kernel, and a fixed cost per
  // group of the call (empty groups included: group metadata, a grid bounded by tiles + groups).
  const EfficiencySpec& e = chip.proto().efficiency();
  const double hbm = DeviceHbmBytesPerSecond(chip) * e.hbm_fraction_of_peak();
  const double fixed =
      chip.proto().compute().kernel_overhead_seconds() +
      static_cast<double>(spec.num_groups) * e.grouped_matmul_overhead_seconds_per_group();
  if (chip.is_gpu() && spec.kind != GroupedMatmulKind::kFusedFfn) {
    return CostOnGpu(spec, chip, fixed, cost);
  }
  const MatmulRate rate =
      MatmulRateFor(spec.lhs_type, spec.rhs_type, MatmulPrecision::kDefault, chip);
  double compute = 0;
  if (rate.flops_per_second > 0) {
    double executed = cost.work.executed_flops;
    if (chip.is_tpu()) {
      // Only the n grid dimension is "parallel": a megacore device splits the n tiles over its
      // TensorCores, so an odd count leaves a core idle for one step.
      const int64_t cores = DeviceCores(chip);
      const int64_t tiles_n = cost.work.tiles_n;
      executed *=
          static_cast<double>(CeilDiv(tiles_n, cores) * cores) / static_cast<double>(tiles_n);
    }
    const MatrixUnitSpec& unit = chip.proto().compute().matrix_unit();
    const double derate = std::min(spec.tm, spec.m) < unit.output_rows_elements()
                              ? unit.small_rows_fraction_of_peak()
                              : 1.0;
    compute = executed / (rate.flops_per_second * derate);
  } else {
    cost.unknown_rates.push_back(rate.unknown_rate);
  }
  if (spec.kind == GroupedMatmulKind::kFusedFfn) {
    // The activation runs on the vector units: the gate products and the transcendentals.
    const ComputeSpec& c = chip.proto().compute();
    const double devices = static_cast<double>(std::max<int64_t>(1, c.devices_per_chip()));
    const double gate_flops =
        2.0 * static_cast<double>(cost.work.rows) * static_cast<double>(spec.n);
    if (c.vector_f32_flops_per_second() > 0) {
      compute += gate_flops / (c.vector_f32_flops_per_second() / devices);
    } else {
      cost.unknown_rates.push_back("compute.vector_f32_flops_per_second");
    }
    if (c.transcendentals_per_second() > 0) {
      compute += cost.work.transcendentals / (c.transcendentals_per_second() / devices);
    } else {
      cost.unknown_rates.push_back("compute.transcendentals_per_second");
    }
  }
  if (chip.is_gpu()) {
    TimeOnGpu(compute, cost.work.lhs_bytes + cost.work.rhs_bytes, cost.work.out_bytes, hbm,
              fixed, cost);
    return cost;
  }
  cost.memory_seconds = cost.work.bytes_accessed / hbm;
  const double roofline = std::max(compute, cost.memory_seconds);
  cost.compute_seconds = compute;
  cost.operand_seconds = cost.memory_seconds;
  cost.overhead_seconds = fixed;
  double seconds = roofline;
  bool steps_bound = false;
  if (spec.implementation == GroupedMatmulImplementation::kPallasKernel) {
    const PallasGrid grid = TimePallasGrid(spec, cost.work, DeviceCores(chip), compute, hbm,
                                           chip.proto().compute().grid_step_overhead_seconds());
    cost.grid_steps_per_core = grid.steps_per_core;
    cost.grid_step_seconds = grid.step_overhead_seconds;
    // What the grid adds over the roofline is overhead: seconds = roofline + overhead.
    cost.overhead_seconds += grid.seconds - roofline;
    seconds = grid.seconds;
    steps_bound = grid.step_overhead_seconds > roofline;
  }
  cost.seconds = seconds + fixed;
  if (cost.seconds <= 0) {
    cost.bound = Bound::kNone;
  } else if (steps_bound || fixed > seconds) {
    cost.bound = Bound::kOverhead;
  } else {
    cost.bound = compute >= cost.memory_seconds ? Bound::kCompute : Bound::kMemory;
  }
  return cost;
}

absl::StatusOr<GroupedMatmulSpec> GroupedMatmulSpecFromInstruction(const Instruction& instruction) {
  const std::string& target = instruction.attributes().custom_call_target;
  auto error = [&](absl::string_view what, absl::string_view got) {
    return absl::InvalidArgumentError(
        absl::StrCat(instruction.name(), ": expected ", what, "; got ", got));
  };
  if (!IsGroupedMatmulTarget(target)) {
    return error("a perfsim.gmm, perfsim.tgmm or perfsim.fused_ffn custom-call",
                 absl::StrCat("'", target, "'"));
  }
  // fused_ffn has three weights where the matmuls have one rhs.
  const int64_t sizes_index = target == kFusedFfnTarget ? 4 : 2;
  if (instruction.operand_count() < sizes_index + 1 ||
      instruction.operand_count() > sizes_index + 2) {
    return error(target == kFusedFfnTarget
                     ? "operands (x, wi_0, wi_1, wo, group_sizes[, group_offset])"
                     : "operands (lhs, rhs, group_sizes[, group_offset])",
                 absl::StrCat(instruction.operand_count(), " operands"));
  }
  const Shape& lhs = instruction.operand(0)->shape();
  const Shape& rhs = instruction.operand(1)->shape();
  const Shape& sizes = instruction.operand(sizes_index)->shape();
  const Shape& out = instruction.shape();
  if (!lhs.IsArray() || !rhs.IsArray() || !out.IsArray() || !sizes.IsArray() || sizes.rank() != 1) {
    return error("array operands and result, rank-1 group_sizes",
                 absl::StrCat(lhs.ToString(false), ", ", rhs.ToString(false), ", ",
                              sizes.ToString(false), " -> ", out.ToString(false)));
  }
  KernelBackendConfig config;
  PERFSIM_RETURN_IF_ERROR(ReadBackendConfig(instruction, &config));
  GroupedMatmulSpec spec;
  spec.lhs_type = lhs.element_type();
  spec.rhs_type = rhs.element_type();
  spec.out_type = out.element_type();
  if (target == kGmmTarget) {
    const bool transpose_rhs = config.transpose_rhs();
    if (lhs.rank() != 2 || rhs.rank() != 3) {
      return error("lhs [m,k] and rhs [G,k,n]",
                   absl::StrCat(lhs.ToString(false), " and ", rhs.ToString(false)));
    }
    spec.kind = GroupedMatmulKind::kGmm;
    spec.m = lhs.dimensions(0);
    spec.k = lhs.dimensions(1);
    spec.n = transpose_rhs ? rhs.dimensions(1) : rhs.dimensions(2);
    spec.num_groups = rhs.dimensions(0);
  } else if (target == kFusedFfnTarget) {
    const Shape& wo = instruction.operand(3)->shape();
    if (lhs.rank() != 2 || rhs.rank() != 3 || !wo.IsArray() || wo.rank() != 3) {
      return error(
          "x [m,D], wi_0 and wi_1 [G,D,F], wo [G,F,D]",
          absl::StrCat(lhs.ToString(false), ", ", rhs.ToString(false), ", ", wo.ToString(false)));
    }
    spec.kind = GroupedMatmulKind::kFusedFfn;
    spec.m = lhs.dimensions(0);
    spec.k = lhs.dimensions(1);
    spec.n = rhs.dimensions(2);
    spec.num_groups = rhs.dimensions(0);
  } else {
    if (lhs.rank() != 2 || rhs.rank() != 2 || out.rank() != 3) {
      return error("lhs [k,m], rhs [m,n] and result [G,k,n]",
                   absl::StrCat(lhs.ToString(false), ", ", rhs.ToString(false), " -> ",
                                out.ToString(false)));
    }
    spec.kind = GroupedMatmulKind::kTgmm;
    spec.k = lhs.dimensions(0);
    spec.m = lhs.dimensions(1);
    spec.n = rhs.dimensions(1);
    spec.num_groups = out.dimensions(0);
  }
  if (config.tiling_size() > 0) {
    if (config.tiling_size() != 3) {
      return error("backend_config tiling [tm, tk, tn]", absl::StrJoin(config.tiling(), ","));
    }
    spec.tm = config.tiling(0);
    spec.tk = config.tiling(1);
    spec.tn = config.tiling(2);
  }
  spec.group_offset = config.group_offset();
  if (instruction.operand_count() == sizes_index + 2) {
    const Instruction* offset = instruction.operand(sizes_index + 1);
    if (offset->opcode() == Opcode::kConstant && offset->attributes().literal.has_value() &&
        !offset->attributes().literal->elided() &&
        offset->attributes().literal->element_count() == 1) {
      spec.group_offset = offset->attributes().literal->GetAsInt64(0);
    }
  }
  const Instruction* group_sizes = instruction.operand(sizes_index);
  if (group_sizes->opcode() == Opcode::kConstant && group_sizes->attributes().literal.has_value() &&
      !group_sizes->attributes().literal->elided()) {
    const Literal& literal = *group_sizes->attributes().literal;
    std::vector<int64_t> values;
    for (int64_t i = 0; i < literal.element_count(); ++i) values.push_back(literal.GetAsInt64(i));
    spec.group_sizes = std::move(values);
  }
  return spec;
}

bool IsGroupedMatmulTarget(absl::string_view target) {
  return target == kGmmTarget || target == kTgmmTarget || target == kFusedFfnTarget;
}

}  // namespace perfsim
