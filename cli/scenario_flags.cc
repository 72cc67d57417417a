#include "cli/scenario_flags.h"

#include "cli/step_flags.h"
#include "sim/predict/choose_scenario.h"
#include "sim/util/status.h"

namespace perfsim {

std::vector<FlagSpec> ScenarioFlagSpecs() {
  std::vector<FlagSpec> specs = StepFlagSpecs();
  for (const char* name : {"hw", "mesh", "routing"}) specs.push_back({name, true});
  specs.push_back({"adam", false});
  return specs;
}

absl::StatusOr<FlaggedScenario> ScenarioFromFlags(const ParsedFlags& flags) {
  PERFSIM_ASSIGN_OR_RETURN(const PredictOptions defaults, DefaultPredictOptions());
  const StepSpec& d = defaults.spec;
  StepFlagDefaults step_defaults{.model = d.model.name(),
                                 .batch = d.batch,
                                 .seq = d.seq,
                                 .phase = std::string(PhaseName(d.phase)),
                                 .backend = d.backend};
  PERFSIM_ASSIGN_OR_RETURN(StepSpec spec, StepSpecFromFlags(flags, step_defaults));
  FlaggedScenario scenario{.options = {.spec = std::move(spec)}};
  PredictOptions& options = scenario.options;
  if (!flags.Has("parallelism")) options.spec.parallelism = d.parallelism;
  options.hw = flags.Get("hw", defaults.hw);
  options.mesh = flags.Get("mesh", flags.Has("hw") ? "" : defaults.mesh);
  options.adam = flags.Has("adam");
  PERFSIM_ASSIGN_OR_RETURN(options.routing, ParseRoutingSpec(flags.Get("routing", "uniform")));
  // Naming the model, the chip, the mesh or the parallelism leaves the embedded default's
  // slice, parallelism and batch behind: what the user did not name is derived from what they
  // did (choose_scenario.h) and printed as flags they can copy and edit.
  if (flags.Has("model") || flags.Has("hw") || flags.Has("mesh") || flags.Has("parallelism")) {
    PERFSIM_ASSIGN_OR_RETURN(ChosenScenario chosen,
                             ChooseScenario({.options = options,
                                             .mesh_given = flags.Has("mesh"),
                                             .parallelism_given = flags.Has("parallelism"),
                                             .batch_given = flags.Has("batch")}));
    options = std::move(chosen.options);
    scenario.chose = std::move(chosen.flags);
  }
  return scenario;
}

}  // namespace perfsim
