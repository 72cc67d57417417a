// The tiling perfsim costs an XLA ragged-dot with, when it models it as a grouped matmul.
//
//   // DeepSeek-V3 wi forward on a v7x device: lhs [R, 7168] x wi [1, 7168, 2048]
//   RaggedDotTiling t = ChooseRaggedDotTiling(spec, /*rhs_contracting_dim=*/1, step, chip);
//   t.tiling;   // (512, 1024, 1024): the wi.fwd knob, MaxText's default
//   t.source;   // "wi.fwd knob (ragged_dot_tiling metadata)"
//
// TPU. MaxText's ragged_dot path (megablox=False) runs jax.lax.ragged_dot under
// set_xla_metadata(ragged_dot_tiling="tm,tk,tn"), with the projection's forward tiles (the
// wi_tile_fwd_* / wo_tile_fwd_* knobs, each clamped to its dimension), and XLA:TPU's native
// ragged-dot takes its tiles from that metadata; "the jax.lax.ragged_dot path uses only the fwd
// tiles" (shared/reference/backends.md 1a "megablox=F", 1a.5, and "jax.lax.ragged_dot"). So
// every ragged-dot of the wi projection (its forward, and the dlhs and drhs of its backward)
// runs with the wi.fwd knob (--tiling-wi), and every one of wo with wo.fwd (--tiling-wo), the
// three numbers read as (rows, contraction, output) of that ragged-dot. That the backward's
// ragged-dots keep the forward's metadata is an assumption: the references say only that the
// path uses the forward tiles. The dlhs and drhs slots of the knobs configure kernel backends
// (megablox_gmm, ...) and do not apply here.
// Which projection a ragged-dot belongs to follows from its shape: with D the model width and F
// the expert width per device, a wi ragged-dot maps D -> F (forward), F -> D (dlhs, contracting
// the rhs's last dimension) or gives a [G, D, F] weight gradient; wo the opposite. When D == F
// the two cannot be told apart and wi's tiling is used; a ragged-dot of neither shape uses wi's.
// GPU: the ragged_dot_tiling metadata is TPU-only; a GPU ragged-dot runs a grouped-GEMM kernel
// that picks its own CTA tile per call (sim/cost/gpu_gemm.h ChooseGpuGemmTile: (128, 256) with
// a 64-element k step for large bf16 shapes). CostGroupedMatmul picks it on the routed group
// sizes; the tiling returned here is the one for m split evenly over the groups, as
// (tm, tk, tn). A spec without knobs (not made by StepSpec::Defaults) gets megablox's default
// (128, 128, 128).
#ifndef PERFSIM_SIM_PREDICT_RAGGED_DOT_TILING_H_
#define PERFSIM_SIM_PREDICT_RAGGED_DOT_TILING_H_

#include <cstdint>
#include <string>

#include "sim/cost/grouped_matmul.h"
#include "sim/hw/chip.h"
#include "sim/moe/step_spec.h"

namespace perfsim {

struct RaggedDotTiling {
  GmmTiling tiling;
  std::string source;  // "wi.fwd knob (ragged_dot_tiling metadata)", "GPU: ... CTA tile ..."
};

// `spec` is the ragged-dot as a grouped matmul (kind, m, k, n); `rhs_contracting_dim` is the
// rhs dimension it contracts (gmm form only: 1 forward, 2 dlhs).
RaggedDotTiling ChooseRaggedDotTiling(const GroupedMatmulSpec& spec, int64_t rhs_contracting_dim,
                                      const StepSpec& step, const Chip& chip);

}  // namespace perfsim

#endif  // PERFSIM_SIM_PREDICT_RAGGED_DOT_TILING_H_
