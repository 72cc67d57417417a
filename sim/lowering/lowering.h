// Lowering the MoE step to a per-device SPMD module of the op IR, for any backend.
//
//   PERFSIM_ASSIGN_OR_RETURN(LoweredStep step, LowerStep(spec));
//   PrintModule(*step.module);                 // what `perfsim lower` prints
//   step.parameters[0].name == "x";            // roles of the entry parameters, in order
//
// Entry parameters, in order (the issue's `validate --hlo` contract: x, router weights, wi_0,
// wi_1, wo, then the optional extras): x [T_l, D], router_w [D, E], wi_0 [E_l, D, F_l], wi_1
// [E_l, D, F_l], wo [E_l, F_l, D], router_bias [E] (the router matmul bias, GPT-OSS:
// router.has_bias), router_score_bias [E] (DeepSeek-V3's score-correction bias, for the choice
// only: router.has_score_correction_bias), the shared expert ws_0 [D, H], ws_1 [D, H],
// ws_o [H, D] (when the model has one), then for fwd_bwd the output cotangent dy [T_l, D]. With
// fsdp > 1 every weight's D is split over fsdp as well (D/FSDP). The root is a tuple: y [T_l, D],
// then for fwd_bwd dx, d_router_w, d_wi_0, d_wi_1, d_wo (, d_router_bias) (, d_ws_0, d_ws_1,
// d_ws_o): one gradient per parameter in parameter order, except dy and router_score_bias,
// which have none. Gradients are of sum(y · dy), complete (summed over the devices that share a
// weight), so every device holds the final value of its shard.
//
// FSDP (fsdp > 1): the weight_gather stage all-gathers every weight's D over fsdp before the
// router, experts and shared expert use it; the backward gathers them AGAIN in
// weight_gather_bwd instead of keeping the gathered copies alive from the forward (what FSDP
// implementations do to bound memory: PyTorch FSDP's reshard_after_forward, ZeRO-3, MaxText's
// fsdp sharding under remat), so the module pays the gathers twice, as a real step does.
// grad_sync reduce-scatters every weight gradient over fsdp on D (then all-reduces the rest of
// the replicas: dp for expert weights, dp and ep for the router and shared expert).
//
// The step graph (sim/moe/step_graph.h) orders the stages; the common ones (weight gathers,
// router, shared expert, their backward, gradient sync) are lowered here, the backend lowers
// permute, dispatch, experts and combine and their backward. Every instruction's metadata
// op_name is "moe/<stage>", which the cost report uses for its per-phase subtotals.
//
// Residuals (known_bugs.md #17). A backward stage may read a forward value only through
// StepState::saved or the router's outputs; LoweredStep::saved records every such value with
// its key, and the static check (checks.h) refuses a backward that reads any other forward
// value. Where a forward op and its VJP are built by a helper pair (the weighted combine, the
// gated activation), the forward records the operand it consumed under a role and the VJP
// records the instructions that must read that very value (NamedBuilder's residual table):
// the check verifies identity, not just shape.
#ifndef PERFSIM_SIM_LOWERING_LOWERING_H_
#define PERFSIM_SIM_LOWERING_LOWERING_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/node_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "proto/annotation.pb.h"
#include "sim/ir/instruction.h"
#include "sim/lowering/named_builder.h"
#include "sim/lowering/router.h"
#include "sim/moe/step_spec.h"

namespace perfsim {

// The mesh axes, major to minor (step_spec.h): device d = ((dp·FSDP + fsdp)·EP + ep)·TP + tp.
enum class MeshAxis { kDp, kFsdp, kEp, kTp };
absl::string_view MeshAxisName(MeshAxis axis);
// The number of devices along `axis`, and device `device`'s coordinate on it.
int64_t MeshAxisSize(const Parallelism& p, MeshAxis axis);
int64_t MeshCoord(const Parallelism& p, MeshAxis axis, int64_t device);
// The stride of `axis` in the device numbering: 1 for tp, TP for ep, EP·TP for fsdp, ...
int64_t MeshStride(const Parallelism& p, MeshAxis axis);

// How a global tensor is laid out over the devices.
struct TensorSpec {
  std::string name;                   // "x", "wi_0", "d_wo", ...
  std::string dims;                   // logical names, e.g. "EDF"
  std::vector<int64_t> global_dims;   // unsharded sizes
  PrimitiveType type = PrimitiveType::kF32;
  // split[i]: the mesh axes dimension i is split over, major to minor (empty: replicated).
  std::vector<std::vector<MeshAxis>> split;
  // Parameters: what the value is (also on the parameter instruction's annotation).
  Annotation::Role role = Annotation::ROLE_UNSPECIFIED;
};

struct LoweredStep {
  StepSpec spec;
  std::unique_ptr<Module> module;
  std::vector<TensorSpec> parameters;
  std::vector<TensorSpec> outputs;
  // Logical dimension names of the instructions the lowering named (sim/lowering/checks.h).
  DimNameTable dim_names;
  // The forward values a backward stage may read, with the key they were saved under
  // (StepState::saved, "router.weights", ...), and the residual roles (named_builder.h).
  absl::flat_hash_map<const Instruction*, std::string> saved;
  ResidualTable residuals;
};

// What a backend's stages read and write: per-device tensors.
struct StepState {
  const StepSpec& spec;
  NamedBuilder& nb;
  // Entry parameters (local shards). router_bias, router_score_bias, ws_* and dy are unset
  // when absent.
  Tensor x, router_w, router_bias, router_score_bias, wi_0, wi_1, wo, ws_0, ws_1, ws_o, dy;
  RouterOutputs router;
  // Forward results: the routed experts' contribution to y, TD in x's type (backend writes).
  Tensor y_routed;
  // Backward, written by the backend: TK f32 gradients of the combine weights (and of the
  // input scale for sigmoid_prescale), dx through the experts (TD), and the local expert
  // weight gradients (before the all-reduce over data parallelism).
  Tensor d_weights, d_input_scale, dx_routed, d_wi_0, d_wi_1, d_wo;
  // Backend-private tensors carried from a forward stage to a backward one. A node map: stages
  // hold references to entries while adding others, so entries must not move on rehash.
  absl::node_hash_map<std::string, Tensor> saved;
  // The next channel_id for a collective (unique in the module).
  int64_t next_channel_id = 1;

  int64_t device_count() const { return spec.num_devices(); }
};

class MoeBackend {
 public:
  virtual ~MoeBackend() = default;
  virtual absl::string_view name() const = 0;
  virtual absl::string_view description() const = 0;
  // OK when the backend can lower `spec`; otherwise why not ("expected ...; got ...").
  virtual absl::Status Supports(const StepSpec& spec) const = 0;
  // Adjusts knobs so the backend can be compared with the dropless reference (validate calls
  // it): e.g. capacity_einsum raises its capacity factor until nothing can drop. Returns a
  // note saying what changed ("" when nothing did).
  virtual std::string PrepareForValidation(StepSpec& spec) const { return ""; }
  // The parallelism `validate` uses for `devices` devices (default: all data parallel).
  virtual Parallelism DefaultParallelism(int64_t devices, const StepSpec& spec) const;
  // Splits of the expert weights over the mesh (default: E over ep, F over tp).
  virtual std::vector<std::vector<MeshAxis>> ExpertWeightSplit(absl::string_view dims) const;

  // Stages. Forward: permute, dispatch, experts, combine (writes y_routed). Backward: the
  // reverse (writes d_weights, dx_routed, d_wi_0, d_wi_1, d_wo). Empty by default: a backend
  // that has no permute leaves it so.
  virtual void Permute(StepState&) const {}
  virtual void Dispatch(StepState&) const {}
  virtual void Experts(StepState&) const = 0;
  virtual void Combine(StepState&) const = 0;
  virtual void CombineBwd(StepState&) const = 0;
  virtual void ExpertsBwd(StepState&) const = 0;
  virtual void DispatchBwd(StepState&) const {}
  virtual void PermuteBwd(StepState&) const {}
};

// Default parallelisms that put the devices validate gives a backend on fsdp as well, so the
// sweep exercises the FSDP weight gathers:
//   DataParallelWithFsdp    dp = n, or dp = n/2 × fsdp = 2 from 4 devices on (D even)
//   ExpertParallelWithFsdp  ep = `ep`, fsdp = the rest of n (dp when D does not divide by it)
Parallelism DataParallelWithFsdp(int64_t devices, const StepSpec& spec);
Parallelism ExpertParallelWithFsdp(int64_t devices, int64_t ep, const StepSpec& spec);

// Every backend, in DESIGN.md's order.
absl::Span<const MoeBackend* const> Backends();
// The backend named `name`; NotFound listing the known ones.
absl::StatusOr<const MoeBackend*> FindBackend(absl::string_view name);

// Validates the spec, checks the backend supports it, lowers and verifies the module.
absl::StatusOr<LoweredStep> LowerStep(const StepSpec& spec);
// The same with `backend` instead of the one spec.backend names: tests lower deliberately
// broken variants of a backend (a wrapper overriding one stage) through it.
absl::StatusOr<LoweredStep> LowerStepWith(const StepSpec& spec, const MoeBackend& backend);

// Replica groups (device ids) of the devices that differ only in `axes` (for collectives
// over those mesh axes), in the device numbering of step_spec.h.
std::vector<std::vector<int64_t>> MeshGroups(const Parallelism& p,
                                             std::vector<MeshAxis> axes);

}  // namespace perfsim

#endif  // PERFSIM_SIM_LOWERING_LOWERING_H_
