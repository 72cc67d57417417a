// Which platform a module was lowered or compiled for, from what only that platform leaves in
// the text, and whether HLO input is StableHLO (MLIR) instead.
//
// HLO text names no platform: `jax.jit(f).lower(x).as_text(dialect="hlo")` gives the same
// header on every backend. But some lowerings are platform-specific, and costing one
// platform's program on another platform's chip times the wrong program. The case that
// matters most: lowered for CPU, JAX replaces lax.ragged_dot by its reference decomposition (a
// dense dot over a [groups, rows, ...] operand masked by iota range compares), num_groups times
// the FLOPs of the ragged-dot the TPU and GPU programs keep. Evidence looked for:
//   cpu  the masked dense ragged_dot decomposition; XLA:CPU's fusion backend_config
//        ("outer_dimension_partitions"); custom-calls __onednn$*, __xla_cpu_*, xla.cpu.*
//   gpu  custom-calls __cublas$*, __cudnn$*, __triton*, __gpu$*; backend_config with
//        "operation_queue_id" or "fusion_backend_config" (XLA:GPU's GpuBackendConfig)
//   tpu  custom-call tpu_custom_call (Pallas/Mosaic)
// No evidence means unknown: most lowered modules carry none, and that is not a warning.
//
// Example:
//   std::optional<PlatformEvidence> e = FindLoweringPlatform(module);
//   // e->platform == LoweringPlatform::kCpu, e->instruction == "dot_general.9",
//   // e->reason == "a dense dot over a masked [8,4096,1024] operand: JAX's CPU decomposition
//   //               of ragged_dot"
#ifndef PERFSIM_SIM_IR_LOWERING_PLATFORM_H_
#define PERFSIM_SIM_IR_LOWERING_PLATFORM_H_

#include <optional>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "sim/ir/instruction.h"

namespace perfsim {

enum class LoweringPlatform { kCpu, kGpu, kTpu };

absl::string_view LoweringPlatformName(LoweringPlatform platform);  // "CPU", "GPU", "TPU"

struct PlatformEvidence {
  LoweringPlatform platform;
  std::string instruction;  // the instruction that shows it
  std::string reason;       // what it shows, in words
};

// The first evidence found, in computation and instruction text order; nullopt if none.
std::optional<PlatformEvidence> FindLoweringPlatform(const Module& module);

// InvalidArgument "FILE:LINE:COL: expected HLO text ...; got StableHLO (MLIR) ..." with what to
// do instead, when the text's first token is MLIR's (`module @name`, `module attributes`,
// `module {` before a `func.func`, `func.func`, `#loc...`); OK otherwise (HLO text, or text the HLO parser should
// judge). Cheap: looks at the first token only.
absl::Status CheckNotStableHlo(absl::string_view text, absl::string_view filename);

}  // namespace perfsim

#endif  // PERFSIM_SIM_IR_LOWERING_PLATFORM_H_
