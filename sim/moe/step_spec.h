// What is simulated: one MoE layer step of a model, on a mesh, with a backend.
//
//   PERFSIM_ASSIGN_OR_RETURN(ModelConfig model, ResolveModel("nano"));
//   StepSpec spec = StepSpec::Defaults(std::move(model));
//   spec.batch = 4; spec.seq = 16; spec.phase = Phase::kForwardBackward;
//   spec.parallelism = {.dp = 1, .ep = 4, .tp = 1};
//   spec.backend = "ep_ragged_a2a";
//   PERFSIM_RETURN_IF_ERROR(spec.Validate());
//
// Devices and sharding. The mesh is the axes (dp, fsdp, ep, tp), major to minor: device
// d = ((dp_i·FSDP + fsdp_i)·EP + ep_i)·TP + tp_i (MaxText's order: data, fsdp, expert, tensor).
// Tokens (B·S, batch-major) are split over (dp, fsdp, ep) jointly, so a device holds
// T_l = B·S/(DP·FSDP·EP) tokens; experts are split over ep (E_l = E/EP) and the expert hidden
// dim F over tp (F_l = F/TP). FSDP also shards every weight's model dimension D over fsdp
// (MaxText's "embed" -> fsdp rule: wi [E, D/FSDP, F], wo [E, F, D/FSDP], router [D/FSDP, E],
// shared expert [D/FSDP, H] and [H, D/FSDP]); the lowering all-gathers them before use and
// reduce-scatters their gradients (sim/lowering/lowering.h). Everything else is replicated.
#ifndef PERFSIM_SIM_MOE_STEP_SPEC_H_
#define PERFSIM_SIM_MOE_STEP_SPEC_H_

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "sim/moe/model_config.h"

namespace perfsim {

enum class Phase { kForward, kForwardBackward };
absl::string_view PhaseName(Phase phase);  // "fwd", "fwd_bwd"
absl::StatusOr<Phase> ParsePhase(absl::string_view text);

struct Parallelism {
  int64_t dp = 1;
  int64_t ep = 1;
  int64_t tp = 1;
  int64_t fsdp = 1;
  int64_t num_devices() const { return dp * ep * tp * fsdp; }
};
// "ep=4,tp=2" (axes not named are 1). Errors: "expected AXIS=N with AXIS one of dp, ep, tp,
// fsdp; got 'ep4'".
absl::StatusOr<Parallelism> ParseParallelism(absl::string_view text);
std::string ParallelismToString(const Parallelism& p);

// One grouped-matmul tiling (tm, tk, tn): m = token rows, k = contraction, n = output columns.
struct GmmTiling {
  int64_t tm = 0;
  int64_t tk = 0;
  int64_t tn = 0;
};

// A projection's tilings for the forward, dlhs and drhs kernels (MaxText's 9-tuple).
struct ProjectionTilings {
  GmmTiling fwd;
  GmmTiling dlhs;
  GmmTiling drhs;
};

enum class FusedFfnTiling { kOverF, kOverD };

// How the grouped matmuls of a backend are lowered. kNative is the backend itself; the others
// exist so that XLA can run what perfsim prints (tools/jax/xla_accepts.py): jaxlib 0.10.2's
// XLA:CPU has no kernel for the perfsim.gmm / tgmm / fused_ffn custom-calls, nor for
// ragged-dot.
//   kNative     kernel custom-calls (megablox_gmm, ring_of_experts, fused_expert_ffn) or
//               ragged-dot (sparse_ragged_dot, ep_ragged_a2a, grouped_gemm_aligned)
//   kRaggedDot  every kernel custom-call becomes the ragged-dot it computes (no row padding;
//               the fused FFN becomes gmm, activation, gmm); ragged-dots stay
//   kMaskedDot  every grouped matmul, kernel or ragged-dot, becomes dense dots under a
//               group-membership mask (sim/lowering/grouped_masked.cc)
// The three compute the same values.
enum class GroupedMatmulForm { kNative, kRaggedDot, kMaskedDot };
// "native", "ragged_dot", "masked_dot".
absl::string_view GroupedMatmulFormName(GroupedMatmulForm form);
absl::StatusOr<GroupedMatmulForm> ParseGroupedMatmulForm(absl::string_view text);

struct BackendKnobs {
  // megablox_gmm, ep_ragged_a2a, ring_of_experts: kernel tilings for wi (wi_0 and wi_1) and wo.
  ProjectionTilings wi;
  ProjectionTilings wo;
  // capacity_einsum: capacity per sequence C = max(ceil(S·K/E)·cf, cf).
  double capacity_factor = 1.25;
  // grouped_gemm_aligned: per-expert row alignment A (0 = none).
  int64_t align_size = 0;
  // ep_ragged_a2a: receive buffer rows = T_l·K·min(EP, E/K) when <= 0, else int(T_l·K·factor)
  // (MaxText's token-dropping buffer: the traffic beyond it is truncated and those tokens'
  // routed outputs are zero).
  double ragged_buffer_factor = -1;
  // fused_expert_ffn: which dimension the kernel tiles, and the tile size along it.
  FusedFfnTiling fused_tiling = FusedFfnTiling::kOverF;
  int64_t fused_tile = 0;
  // Every backend: how grouped matmuls are lowered (above).
  GroupedMatmulForm grouped_matmul = GroupedMatmulForm::kNative;
  // Every backend: FP8 (f8e4m3fn) GEMMs (NamedBuilder::set_gemm_type). The whole step sets it
  // for fp8 / MXFP8 precision; `perfsim lower` and `predict` leave it off.
  bool fp8_gemms = false;
};

// The tiling knob of a kernel role: "wi.fwd", "wi.dlhs", "wi.drhs", "wo.fwd", "wo.dlhs",
// "wo.drhs"; nullptr for any other name.
const GmmTiling* TilingKnob(const BackendKnobs& knobs, absl::string_view role);

struct StepSpec {
  ModelConfig model;
  int64_t batch = 1;
  int64_t seq = 1;
  Phase phase = Phase::kForward;
  Parallelism parallelism;
  std::string backend = "dense_einsum";
  BackendKnobs knobs;

  // A spec with MaxText's default knobs: every tiling (512, 1024, 1024). The kernels run them
  // as configured (a tile larger than its dimension is allocated at full size, as Pallas
  // does), except that the row tile shrinks to the rows of a small problem
  // (sim/lowering/megablox_calls.h).
  static StepSpec Defaults(ModelConfig model);

  int64_t tokens() const { return batch * seq; }
  int64_t num_devices() const { return parallelism.num_devices(); }
  // The axes tokens are split over: dp·fsdp·ep.
  int64_t token_shards() const { return parallelism.dp * parallelism.fsdp * parallelism.ep; }
  int64_t tokens_per_device() const { return tokens() / token_shards(); }
  int64_t experts_per_device() const { return model.num_experts() / parallelism.ep; }
  int64_t ffn_per_device() const { return model.expert_ffn_dim() / parallelism.tp; }

  // Plausibility limits (below), checked with overflow-checked arithmetic, then
  // divisibility: B·S by DP·FSDP·EP, E by EP, F by TP, D by FSDP, a known phase.
  // Errors read "expected X; got Y" and name the quantity and the limit:
  //   "tokens = batch * seq: 3 * 6148914691236517206 overflows int64 (max 9223372036854775807)"
  //   "tokens = batch * seq: expected at most 4294967296; got 68719476736"
  absl::Status Validate() const;
  // The plausibility limits alone (Validate's first part): after it, tokens(), num_devices()
  // and products of them with the model's dimensions cannot overflow. Backends whose
  // Supports() derives buffer sizes call it first.
  absl::Status ValidateLimits() const;
};

// Plausibility limits of a StepSpec (StepSpec::Validate). They are far beyond any real step
// and chosen so that every size a lowering derives from a valid spec (a shape's elements and
// bytes, a buffer's rows) fits int64 with room to spare; a spec beyond them is bad input
// (exit 2), never a wrapped size.
//   tokens = batch·seq <= 2^32 (4,294,967,296): 68x the largest published global batch,
//     DeepSeek-V3's 15,360 sequences of 4,096 tokens (62,914,560).
inline constexpr int64_t kMaxStepTokens = int64_t{1} << 32;
//   devices = dp·fsdp·ep·tp <= 2^20 (1,048,576): ten times the largest training clusters.
inline constexpr int64_t kMaxStepDevices = int64_t{1} << 20;
//   The largest activation a step holds, [tokens·K rows, max(D, F, H, E)] in f32, and every
//   backend's derived buffer (capacity slots, ragged receive rows, aligned rows) of that
//   width: <= 2^50 bytes (1 PiB), hundreds of times the memory of the largest TPU slice. At
//   most 2^50 bytes, every shape the lowerings build from it leaves 2^13 of headroom in int64.
inline constexpr int64_t kMaxStepBufferBytes = int64_t{1} << 50;
//   Tiles (--tiling-wi/wo tm,tk,tn, --fused-tile) and --align-size <= 2^20 (1,048,576): real
//   kernel tiles and alignments are at most a few thousand rows or columns; at the limit a
//   tile allocated at full size is tm·tk·4 <= 2^42 bytes, and aligned rows grow by at most
//   E·2^20 <= 2^34.
inline constexpr int64_t kMaxStepTile = int64_t{1} << 20;
//   --capacity-factor and --ragged-buffer-factor <= 2^14 (16,384), finite: a capacity factor
//   of E/K and a ragged buffer factor of min(EP, E/K) already drop nothing, and E <= 2^14
//   (sim/moe/model_validate.cc).
inline constexpr double kMaxStepBufferFactor = 16384.0;

}  // namespace perfsim

#endif  // PERFSIM_SIM_MOE_STEP_SPEC_H_
