// ChooseRaggedDotTiling (ragged_dot_tiling.h).
#include "sim/predict/ragged_dot_tiling.h"

#include <algorithm>
#include <cstdint>

#include "sim/cost/gpu_gemm.h"

namespace perfsim {

RaggedDotTiling ChooseRaggedDotTiling(const GroupedMatmulSpec& spec, int64_t rhs_contracting_dim,
                                      const StepSpec& step, const Chip& chip) {
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
  const int64_t d = step.model.d_model(), f = step.ffn_per_device();
  bool wo = false;
  switch (spec.kind) {
    case GroupedMatmulKind::kGmm:
      // Forward wo maps F -> D; the dlhs of wo (contracting the rhs's last dim) maps D -> F.
      wo = rhs_contracting_dim == 2 ? (spec.k == d && spec.n == f) : (spec.k == f && spec.n == d);
      break;
    case GroupedMatmulKind::kTgmm:
      wo = spec.k == f && spec.n == d;  // the [G, F, D] gradient of wo
      break;
    case GroupedMatmulKind::kFusedFfn:
      break;
  }
  if (d == f) wo = false;
  const GmmTiling& knob = wo ? step.knobs.wo.fwd : step.knobs.wi.fwd;
  if (knob.tm <= 0 || knob.tk <= 0 || knob.tn <= 0) {
    // A spec built without StepSpec::Defaults has no knobs: megablox's own default.
    return {GmmTiling{128, 128, 128}, "unset knob: (128, 128, 128)"};
  }
  return {knob, wo ? "wo.fwd knob (ragged_dot_tiling metadata)"
                   : "wi.fwd knob (ragged_dot_tiling metadata)"};
}

}  // namespace perfsim
