// The suite `perfsim validate` runs, and the memory estimates of a case (validate_hlo.cc has
// `perfsim validate --hlo`).
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
