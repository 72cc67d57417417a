// The tiling perfsim costs an XLA ragged-dot with, when it models it as a grouped matmul.
//
//   // DeepSeek-V3 wi forward on a v7x device: lhs [R, 7168] x wi [1, 7168, 2048]
//   RaggedDotTiling t = ChooseRaggedDotTiling(spec, &instruction.annotation()->kernel(), chip);
//   t.tiling;   // (512, 1024, 1024): the wi.fwd knob, MaxText's default
//   t.source;   // "wi.fwd knob (ragged_dot_tiling metadata)"
//
// TPU. MaxText's ragged_dot path (megablox=False) runs jax.lax.ragged_dot under
// set_xla_metadata(ragged_dot_tiling="tm,tk,tn"), with the projection's forward tiles (the
// wi_tile_fwd_* / wo_tile_fwd_* knobs), and XLA:TPU's native ragged-dot takes its tiles from
// that metadata; "the jax.lax.ragged_dot path uses only the fwd tiles" (shared/reference/
// backends.md 1a "megablox=F", 1a.5, and "jax.lax.ragged_dot"). The lowering knows which
// projection each ragged-dot belongs to (its weight's dimension names, NamedBuilder) and writes
// that projection's forward knob on the op's annotation (proto/annotation.proto Kernel): every
// ragged-dot of wi (forward, dlhs, drhs) runs with the wi.fwd knob (--tiling-wi), every one of
// wo with wo.fwd (--tiling-wo), read as (rows, contraction, output). That the backward's
// ragged-dots keep the forward's metadata is an assumption: the references say only that the
// path uses the forward tiles. A ragged-dot without an annotated tiling (a user's module, or a
// spec without knobs) gets megablox's default (128, 128, 128).
// GPU: the ragged_dot_tiling metadata is TPU-only; a GPU ragged-dot runs a grouped-GEMM kernel
// that picks its own CTA tile per call (sim/cost/gpu_gemm.h ChooseGpuGemmTile: (128, 256) with
// a 64-element k step for large bf16 shapes). CostGroupedMatmul picks it on the routed group
// sizes; the tiling returned here is the one for m split evenly over the groups, as
// (tm, tk, tn).
#ifndef PERFSIM_SIM_PREDICT_RAGGED_DOT_TILING_H_
#define PERFSIM_SIM_PREDICT_RAGGED_DOT_TILING_H_

#include <cstdint>
#include <string>

#include "sim/cost/grouped_matmul.h"
#include "sim/hw/chip.h"
#include "proto/annotation.pb.h"
#include "sim/moe/step_spec.h"

namespace perfsim {

struct RaggedDotTiling {
  GmmTiling tiling;
  std::string source;  // "wi.fwd knob (ragged_dot_tiling metadata)", "GPU: ... CTA tile ..."
};

// `spec` is the ragged-dot as a grouped matmul (kind, m, k, n, types); `annotated` the kernel
// configuration on its annotation (null when none).
RaggedDotTiling ChooseRaggedDotTiling(const GroupedMatmulSpec& spec, const Kernel* annotated,
                                      const Chip& chip);

}  // namespace perfsim

#endif  // PERFSIM_SIM_PREDICT_RAGGED_DOT_TILING_H_
