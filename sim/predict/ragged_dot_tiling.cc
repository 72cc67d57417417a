// ChooseRaggedDotTiling (ragged_dot_tiling.h).
#include "sim/predict/ragged_dot_tiling.h"

#include "sim/cost/gpu_gemm.h"
#include "sim/cost/grouped_matmul.h"

namespace perfsim {

RaggedDotTiling ChooseRaggedDotTiling(const GroupedMatmulSpec& spec, const Kernel* annotated,
                                      const Chip& chip) {
  if (!chip.is_tpu()) {
    // CostGroupedMatmul picks the CTA tile again from the routed group sizes; this is the
    // tile for m split evenly over the groups, for display.
    const GpuGemmTile t = ChooseGpuGemmTile(GpuGemmsOf(spec), chip);
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
