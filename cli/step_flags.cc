#include "cli/step_flags.h"

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "sim/moe/model_registry.h"
#include "sim/util/status.h"

namespace perfsim {

const char kStepFlagsHelp[] = R"(step flags:
  --model NAME|FILE         model (perfsim models list), or a .textproto path
  --batch B, --seq S        tokens = B·S (split over dp·fsdp·ep devices), at most 2^32
  --phase fwd|fwd_bwd       forward only, or forward and the explicit backward
  --parallelism AXES        e.g. ep=4, dp=2,ep=4, fsdp=2,ep=4 or ep=2,tp=2 (axes: dp, fsdp, ep, tp);
                            at most 2^20 devices
  --backend NAME            dense_einsum, capacity_einsum, sparse_ragged_dot, megablox_gmm,
                            ep_ragged_a2a, ring_of_experts, grouped_gemm_aligned, fused_expert_ffn
  --tiling-wi T, --tiling-wo T
                            grouped-matmul tiles tm,tk,tn for forward (3 numbers) or
                            forward,dlhs,drhs (9 numbers, MaxText's order); default 512,1024,1024;
                            each at most 2^20
  --capacity-factor X       capacity_einsum (default 1.25), finite, at most 2^14
  --align-size A            grouped_gemm_aligned per-expert row alignment (default 0), at most 2^20
  --ragged-buffer-factor X  ep_ragged_a2a receive buffer T_l·K·X rows (default: never drop),
                            finite, at most 2^14
  --fused-tiling f|d, --fused-tile N
                            fused_expert_ffn: tile over F or over D, tile size (at most 2^20)
  --grouped-matmul FORM     native (default), ragged_dot (kernel custom-calls as ragged-dot)
                            or masked_dot (every grouped matmul as masked dense dots, which
                            XLA:CPU can run); same results
  Limits: 2^32 tokens is 68x the largest published global batch (DeepSeek-V3: 15,360 x 4,096);
  with them (and the largest activation, [tokens·K, max(D, F, H, E)] in f32, at most 2^50
  bytes) every size the lowerings derive fits int64. Beyond them: exit 2 naming the limit.
)";

std::vector<FlagSpec> StepFlagSpecs() {
  return {{"model", true},          {"batch", true},       {"seq", true},
          {"phase", true},          {"parallelism", true}, {"backend", true},
          {"tiling-wi", true},      {"tiling-wo", true},   {"capacity-factor", true},
          {"align-size", true},     {"ragged-buffer-factor", true},
          {"fused-tiling", true},   {"fused-tile", true},  {"grouped-matmul", true}};
}

namespace {

absl::StatusOr<int64_t> PositiveInt(const ParsedFlags& flags, const std::string& name,
                                    int64_t fallback) {
  if (!flags.Has(name)) return fallback;
  int64_t value = 0;
  const std::string text = flags.Get(name);
  if (!absl::SimpleAtoi(text, &value) || value < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("--", name, ": expected a positive integer; got '", text, "'"));
  }
  return value;
}

absl::StatusOr<double> Number(const ParsedFlags& flags, const std::string& name,
                              double fallback) {
  if (!flags.Has(name)) return fallback;
  double value = 0;
  const std::string text = flags.Get(name);
  if (!absl::SimpleAtod(text, &value)) {
    return absl::InvalidArgumentError(
        absl::StrCat("--", name, ": expected a number; got '", text, "'"));
  }
  return value;
}

absl::Status ParseTilings(const ParsedFlags& flags, const std::string& name,
                          ProjectionTilings* tilings) {
  if (!flags.Has(name)) return absl::OkStatus();
  const std::string text = flags.Get(name);
  std::vector<int64_t> v;
  for (absl::string_view part : absl::StrSplit(text, ',')) {
    int64_t n = 0;
    if (!absl::SimpleAtoi(part, &n) || n < 1) {
      v.clear();
      break;
    }
    v.push_back(n);
  }
  if (v.size() != 3 && v.size() != 9) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--", name, ": expected tm,tk,tn (3 positive integers) or 9 for fwd,dlhs,drhs; got '",
        text, "'"));
  }
  if (v.size() == 3) v.insert(v.end(), {v[0], v[1], v[2], v[0], v[1], v[2]});
  tilings->fwd = {v[0], v[1], v[2]};
  tilings->dlhs = {v[3], v[4], v[5]};
  tilings->drhs = {v[6], v[7], v[8]};
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<StepSpec> StepSpecFromFlags(const ParsedFlags& flags,
                                           const StepFlagDefaults& defaults) {
  PERFSIM_ASSIGN_OR_RETURN(ModelConfig model, ResolveModel(flags.Get("model", defaults.model)));
  StepSpec spec = StepSpec::Defaults(std::move(model));
  PERFSIM_ASSIGN_OR_RETURN(spec.batch, PositiveInt(flags, "batch", defaults.batch));
  PERFSIM_ASSIGN_OR_RETURN(spec.seq, PositiveInt(flags, "seq", defaults.seq));
  absl::StatusOr<Phase> phase = ParsePhase(flags.Get("phase", defaults.phase));
  if (!phase.ok()) return Annotate(phase.status(), "--phase");
  spec.phase = *phase;
  absl::StatusOr<Parallelism> p = ParseParallelism(flags.Get("parallelism"));
  if (!p.ok()) return Annotate(p.status(), "--parallelism");
  spec.parallelism = *p;
  spec.backend = flags.Get("backend", defaults.backend);
  PERFSIM_RETURN_IF_ERROR(ParseTilings(flags, "tiling-wi", &spec.knobs.wi));
  PERFSIM_RETURN_IF_ERROR(ParseTilings(flags, "tiling-wo", &spec.knobs.wo));
  PERFSIM_ASSIGN_OR_RETURN(spec.knobs.capacity_factor,
                           Number(flags, "capacity-factor", spec.knobs.capacity_factor));
  if (flags.Has("align-size")) {
    PERFSIM_ASSIGN_OR_RETURN(spec.knobs.align_size, PositiveInt(flags, "align-size", 1));
  }
  PERFSIM_ASSIGN_OR_RETURN(spec.knobs.ragged_buffer_factor,
                           Number(flags, "ragged-buffer-factor", spec.knobs.ragged_buffer_factor));
  if (flags.Has("fused-tiling")) {
    const std::string t = flags.Get("fused-tiling");
    if (t != "f" && t != "d") {
      return absl::InvalidArgumentError(
          absl::StrCat("--fused-tiling: expected f or d; got '", t, "'"));
    }
    spec.knobs.fused_tiling = t == "f" ? FusedFfnTiling::kOverF : FusedFfnTiling::kOverD;
  }
  PERFSIM_ASSIGN_OR_RETURN(spec.knobs.fused_tile, PositiveInt(flags, "fused-tile", 1));
  if (!flags.Has("fused-tile")) spec.knobs.fused_tile = 0;
  if (flags.Has("grouped-matmul")) {
    absl::StatusOr<GroupedMatmulForm> form = ParseGroupedMatmulForm(flags.Get("grouped-matmul"));
    if (!form.ok()) return Annotate(form.status(), "--grouped-matmul");
    spec.knobs.grouped_matmul = *form;
  }
  return spec;
}

}  // namespace perfsim
