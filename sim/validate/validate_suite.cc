// The suite `perfsim validate` runs, and `perfsim validate --hlo` on a user's module.
#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "sim/interp/interpreter.h"
#include "sim/ir/primitive_type.h"
#include "sim/util/checked_math.h"
#include "sim/util/status.h"
#include "sim/validate/validate.h"
#include "sim/validate/validate_internal.h"

namespace perfsim {

std::vector<ValidationResult> RunSuite(const SuiteOptions& options) {
  std::vector<std::string> backends = options.backends;
  if (backends.empty()) {
    for (const MoeBackend* b : Backends()) backends.emplace_back(b->name());
  }
  std::vector<RouterFamily> routers =
      options.routers.empty() ? AllRouterFamilies() : options.routers;
  std::vector<RoutingCase> routings =
      options.routings.empty() ? AllRoutingCases() : options.routings;
  std::vector<Phase> phases = options.phases.empty()
                                  ? std::vector<Phase>{Phase::kForward, Phase::kForwardBackward}
                                  : options.phases;
  std::vector<int64_t> devices =
      options.devices.empty() ? std::vector<int64_t>{1, 2, 4, 8} : options.devices;
  if (options.parallelism.has_value()) devices = {options.parallelism->num_devices()};
  ReferenceCache cache(options.memory_budget_bytes);
  std::vector<ValidationResult> results;
  for (const std::string& name : backends) {
    absl::StatusOr<const MoeBackend*> backend = FindBackend(name);
    for (int64_t n : devices) {
      for (Phase phase : phases) {
        for (RouterFamily router : routers) {
          for (RoutingCase routing : routings) {
            ValidationCase c{.spec = options.base, .router = router, .routing = routing,
                             .seed = options.seed, .chip = options.chip,
                             .tolerance = options.tolerance,
                             .memory_budget_bytes = options.memory_budget_bytes};
            c.spec.backend = name;
            c.spec.phase = phase;
            if (backend.ok()) {
              c.spec.parallelism = options.parallelism.has_value()
                                       ? *options.parallelism
                                       : (*backend)->DefaultParallelism(n, c.spec);
            }
            if (absl::Status valid = c.spec.Validate(); !valid.ok() && backend.ok()) {
              ValidationResult r{.backend = name,
                                 .router = std::string(RouterFamilyName(router)),
                                 .routing = std::string(RoutingCaseName(routing)),
                                 .phase = std::string(PhaseName(phase)),
                                 .devices = n,
                                 .parallelism = c.spec.parallelism,
                                 .skipped = true,
                                 .message = std::string(valid.message())};
              results.push_back(std::move(r));
              continue;
            }
            results.push_back(ValidateCase(c, cache));
          }
        }
      }
    }
  }
  return results;
}

namespace {

// The user module's parameters (validate.h): the reference's forward parameters, which LowerStep
// orders as the contract does, sharded as a user's shard_map would.
std::vector<TensorSpec> UserParameters(const LoweredStep& ref) {
  const std::vector<MeshAxis> tokens = {MeshAxis::kDp, MeshAxis::kFsdp, MeshAxis::kEp};
  const std::vector<MeshAxis> fsdp = {MeshAxis::kFsdp}, ep = {MeshAxis::kEp};
  std::vector<TensorSpec> params = ref.parameters;
  for (TensorSpec& t : params) {
    if (t.name == "x") t.split = {tokens, {}};
    if (t.name == "router_w") t.split = {fsdp, {}};
    if (t.name == "wi_0" || t.name == "wi_1") t.split = {ep, fsdp, {}};
    if (t.name == "wo") t.split = {ep, {}, fsdp};
    if (t.name == "ws_0" || t.name == "ws_1") t.split = {fsdp, {}};
    if (t.name == "ws_o") t.split = {{}, fsdp};
  }
  return params;
}

}  // namespace

ValidationResult ValidateHloModule(std::unique_ptr<Module> module, const StepSpec& spec,
                                   RoutingCase routing, uint64_t seed,
                                   int64_t memory_budget_bytes) {
  ValidationResult r{.backend = "hlo",
                     .router = "model",
                     .routing = std::string(RoutingCaseName(routing)),
                     .phase = "fwd",
                     .devices = spec.num_devices(),
                     .parallelism = spec.parallelism,
                     .tolerance = ToleranceFor(spec)};
  // The reference: dense_einsum on one device, forward.
  StepSpec layout = spec;
  layout.backend = "dense_einsum";
  layout.phase = Phase::kForward;
  layout.parallelism = Parallelism{};
  absl::StatusOr<LoweredStep> ref = LowerStep(layout);
  if (!ref.ok()) {
    r.message = std::string(ref.status().message());
    return r;
  }
  LoweredStep step{.spec = spec, .module = std::move(module)};
  step.spec.phase = Phase::kForward;
  step.spec.backend = "hlo";
  step.parameters = UserParameters(*ref);
  step.outputs = {ref->outputs[0]};
  std::vector<std::string> names;
  for (const TensorSpec& t : step.parameters) names.push_back(t.name);
  const Computation* entry = step.module->entry();
  const int64_t given = entry == nullptr ? 0 : entry->parameter_count();
  // Shapes first (a module for another model says so at parameter 0), then the count.
  for (int64_t i = 0; i < given && i < static_cast<int64_t>(step.parameters.size()); ++i) {
    const TensorSpec& t = step.parameters[i];
    std::vector<int64_t> local = t.global_dims;
    for (size_t d = 0; d < local.size(); ++d) {
      for (MeshAxis axis : t.split[d]) local[d] /= MeshAxisSize(spec.parallelism, axis);
    }
    const Shape& shape = entry->parameter(i)->shape();
    if (shape.dimensions() != local) {
      r.message = absl::StrCat("parameter ", i, " (", t.name, ", ", t.dims,
                               "): expected per-device shape [", absl::StrJoin(local, ","),
                               "] for model ", spec.model.name(), " and ",
                               ParallelismToString(spec.parallelism), "; got ",
                               shape.ToString(false));
      return r;
    }
  }
  if (given != static_cast<int64_t>(step.parameters.size())) {
    r.message = absl::StrCat("expected an entry computation with ", step.parameters.size(),
                             " parameters (", absl::StrJoin(names, ", "), ") for model ",
                             spec.model.name(), "; got ", given);
    return r;
  }
  ReferenceCache cache(memory_budget_bytes);
  std::vector<Literal> global = MakeGlobalInputs(*ref, routing, seed);
  absl::StatusOr<const std::vector<Literal>*> want = cache.Get(layout, global, "hlo");
  if (!want.ok()) {
    r.message = absl::StrCat("reference: ", want.status().message());
    return r;
  }
  absl::StatusOr<std::vector<Literal>> got = RunUnsharded(step, global, memory_budget_bytes);
  if (!got.ok()) {
    r.message = absl::StrCat("run: ", got.status().message());
    return r;
  }
  TensorError e = Compare(step.outputs[0], (*got)[0], (**want)[0]);
  r.pass = e.non_finite == 0 && e.max_rel_error <= r.tolerance;
  if (!r.pass) {
    r.message = absl::StrCat("y differs from the reference at ", IndexString(e.index), ": got ",
                             Exact(e.got), ", want ", Exact(e.want), " (relative error ",
                             e.max_rel_error,
                             e.non_finite > 0 ? absl::StrCat(", ", e.non_finite, " NaN/Inf") : "",
                             ")");
  }
  r.errors.push_back(std::move(e));
  return r;
}

absl::StatusOr<ValidationMemory> EstimateValidationMemory(const StepSpec& spec, Phase phase) {
  StepSpec ref = spec;
  ref.backend = "dense_einsum";
  ref.phase = phase;
  ref.parallelism = Parallelism{};
  // Lowering builds shapes, not data: it allocates in proportion to the module, not the tokens.
  PERFSIM_ASSIGN_OR_RETURN(LoweredStep step, LowerStep(ref));
  ValidationMemory memory;
  for (const TensorSpec& t : step.parameters) {
    int64_t bytes = ByteWidth(t.type);
    for (int64_t d : t.global_dims) {
      PERFSIM_ASSIGN_OR_RETURN(bytes,
                               CheckedMul(absl::StrCat("bytes of input ", t.name), bytes, d));
    }
    PERFSIM_ASSIGN_OR_RETURN(memory.input_bytes,
                             CheckedAdd("bytes of the global inputs", memory.input_bytes, bytes));
  }
  PERFSIM_ASSIGN_OR_RETURN(MemoryNeed need, ComputeMemoryNeed(*step.module, 1, 1));
  memory.reference_bytes = need.total_bytes;
  PERFSIM_ASSIGN_OR_RETURN(memory.total_bytes,
                           CheckedAdd("bytes validate needs", memory.input_bytes,
                                      memory.reference_bytes));
  return memory;
}

absl::Status CheckCaseMemory(const LoweredStep& step, int64_t budget_bytes) {
  // The reference's inputs and run, or this step's: whichever is larger, with the global
  // inputs held throughout.
  PERFSIM_ASSIGN_OR_RETURN(ValidationMemory need,
                           EstimateValidationMemory(step.spec, step.spec.phase));
  PERFSIM_ASSIGN_OR_RETURN(
      MemoryNeed run, ComputeMemoryNeed(*step.module, step.spec.num_devices(),
                                        step.spec.num_devices()));
  PERFSIM_ASSIGN_OR_RETURN(int64_t with_run,
                           CheckedAdd("bytes validate needs", need.input_bytes, run.total_bytes));
  const int64_t total = std::max(need.total_bytes, with_run);
  if (total <= budget_bytes) return absl::OkStatus();
  return absl::ResourceExhaustedError(absl::StrCat(
      "validate: the case needs ", total, " bytes (global inputs ", need.input_bytes,
      " + the larger of the reference run ", need.reference_bytes, " and this run ",
      run.total_bytes, "); budget ", budget_bytes,
      " bytes (--memory-budget): expected a need within the budget"));
}

absl::Status CheckValidationMemory(const StepSpec& spec, Phase phase, int64_t budget_bytes) {
  PERFSIM_ASSIGN_OR_RETURN(ValidationMemory need, EstimateValidationMemory(spec, phase));
  if (need.total_bytes <= budget_bytes) return absl::OkStatus();
  return absl::ResourceExhaustedError(absl::StrCat(
      "validate: the dense reference of batch ", spec.batch, " x seq ", spec.seq, " tokens (",
      PhaseName(phase),
      ") needs ", need.total_bytes, " bytes (global inputs ", need.input_bytes,
      " + reference run ", need.reference_bytes, "); budget ", budget_bytes,
      " bytes (--memory-budget): expected a need within the budget"));
}

}  // namespace perfsim
