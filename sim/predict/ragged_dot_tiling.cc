// ChooseRaggedDotTiling (ragged_dot_tiling.h).
#include "sim/predict/ragged_dot_tiling.h"

#include <algorithm>
#include <cstdint>

#include "sim/cost/gpu_gemm.h"

namespace perfsim {

RaggedDotTiling ChooseRaggedDotTiling(const GroupedMatmulSpec& spec, const Kernel* annotated,
                                      const Chip& chip) {
  if (!chip.is_tpu()) {
    // CostGroupedMatmul picks the CTA tile again from the routed group sizes; this is the
    // tile for m split evenly over the groups, for display.
    GpuGemmProblem problem{
        .lhs_type = spec.lhs_type, .rhs_type = spec.rhs_type, .out_type = spec.out_type};
    const int64_t groups = std::max<int64_t>(1, spec.num_groups);
    for (int64_t g = 0; g < groups; ++g) {
      const int64_t rows = spec.m / groups + (g < spec.m % groups ? 1 : 0);
      if (spec.kind == GroupedMatmulKind::kTgmm) {
        problem.groups.push_back({.m = spec.k, .n = spec.n, .k = rows});
      } else {
        problem.groups.push_back({.m = rows, .n = spec.n, .k = spec.k});
      }
    }
    const GpuGemmTile t = ChooseGpuGemmTile(problem, chip);
    return {GmmTiling{t.tm, t.tk, t.tn},
            "GPU: the grouped-GEMM kernel's CTA tile (sim/cost/gpu_gemm.h), chosen per call"};
  }
  if (annotated == nullptr || annotated->tm() <= 0 || annotated->tk() <= 0 ||
      annotated->tn() <= 0) {
    // A ragged-dot the lowering did not configure (e.g. a user's module): megablox's default.
    return {GmmTiling{128, 128, 128}, "no annotated tiling: (128, 128, 128)"};
  }
  const GmmTiling tiling{annotated->tm(), annotated->tk(), annotated->tn()};
  switch (annotated->projection()) {
    case Kernel::PROJECTION_WI: return {tiling, "wi.fwd knob (ragged_dot_tiling metadata)"};
    case Kernel::PROJECTION_WO: return {tiling, "wo.fwd knob (ragged_dot_tiling metadata)"};
    default: return {tiling, "annotated tiling (ragged_dot_tiling metadata)"};
  }
}

}  // namespace perfsim
