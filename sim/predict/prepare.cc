// PrepareStep (predict.h): everything about a scenario that does not depend on its routing.
#include <map>
#include <mutex>
#include <optional>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "sim/comm/topology.h"
#include "sim/fit/module_fit.h"
#include "sim/hw/chip_registry.h"
#include "sim/lowering/annotations.h"
#include "sim/lowering/lowering.h"
#include "sim/moe/model_registry.h"
#include "sim/moe/step_graph.h"
#include "sim/predict/predict.h"
#include "sim/predict/predict_internal.h"
#include "sim/simulator/simulator.h"
#include "sim/util/status.h"

namespace perfsim {

absl::StatusOr<PredictOptions> DefaultPredictOptions() {
  PERFSIM_ASSIGN_OR_RETURN(ModelConfig model, ResolveModel("deepseek_v3"));
  PredictOptions o{.spec = StepSpec::Defaults(std::move(model))};
  o.spec.batch = 512;
  o.spec.seq = 4096;
  o.spec.phase = Phase::kForwardBackward;
  o.spec.parallelism = Parallelism{.dp = 2, .ep = 256};
  o.spec.backend = "ep_ragged_a2a";
  o.hw = "tpu_v7x";
  o.mesh = "4x8x8";
  return o;
}

const PredictOptions& PreparedStep::options() const { return data_->options; }
int64_t PreparedStep::num_instructions() const { return data_->simulation.num_ops(); }

namespace {

// ResolveChip, with the built-in chips parsed once per process (a file is read every time: it
// may change).
absl::StatusOr<Chip> ResolveChipOnce(const std::string& name) {
  if (absl::StrContains(name, "/") || absl::EndsWith(name, ".textproto")) return ResolveChip(name);
  static std::mutex mutex;
  static auto* chips = new std::map<std::string, Chip>();
  std::lock_guard<std::mutex> lock(mutex);
  auto it = chips->find(name);
  if (it != chips->end()) return it->second;
  PERFSIM_ASSIGN_OR_RETURN(Chip chip, ResolveChip(name));
  return chips->emplace(name, std::move(chip)).first->second;
}

}  // namespace

absl::StatusOr<PreparedStep> PrepareStep(const PredictOptions& o, PrepareStage* failed_stage) {
  PrepareStage ignored;
  PrepareStage& stage = failed_stage != nullptr ? *failed_stage : ignored;
  stage = PrepareStage::kScenario;
  absl::StatusOr<Chip> chip = o.chip.has_value() ? *o.chip : ResolveChipOnce(o.hw);
  if (!chip.ok()) return chip.status();
  auto owned_chip = std::make_unique<Chip>(*std::move(chip));
  const Chip& c = *owned_chip;
  const std::string mesh = o.mesh.empty() ? c.DefaultSliceShape() : o.mesh;
  absl::StatusOr<Topology> topology = Topology::Create(c, mesh);
  if (!topology.ok()) return Annotate(topology.status(), absl::StrCat("--mesh ", mesh));
  auto owned_topology = std::make_unique<Topology>(*std::move(topology));
  const Topology& t = *owned_topology;
  const StepSpec& spec = o.spec;
  if (t.num_devices() != spec.num_devices()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "expected the parallelism to use the mesh's ", t.num_devices(), " devices (", mesh, " ",
        c.name(), " chips × ", t.num_devices() / t.num_chips(), " per chip); got ",
        ParallelismToString(spec.parallelism), " = ", spec.num_devices()));
  }
  // Each data-parallel replica (dp, and fsdp, which shards the batch too) takes whole
  // sequences; only the tokens of a sequence may be split further (over ep).
  const int64_t data_parallel = spec.parallelism.dp * spec.parallelism.fsdp;
  if (spec.batch % data_parallel != 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--batch: expected a batch divisible by the data-parallel degree dp·fsdp = ", data_parallel,
        " (", ParallelismToString(spec.parallelism), "); got batch ", spec.batch));
  }
  stage = PrepareStage::kLower;
  PERFSIM_ASSIGN_OR_RETURN(LoweredStep lowered, LowerStep(spec));
  // A kernel tiling that does not fit VMEM is a lowering failure (DESIGN.md "Fit"), a failed
  // check (exit 1). The context goes in as an argument: Annotate would drop the misfit mark.
  stage = PrepareStage::kFit;
  PERFSIM_RETURN_IF_ERROR(CheckModuleFits(
      *lowered.module, c, std::nullopt, absl::StrCat("backend ", spec.backend, " on ", c.name())));
  stage = PrepareStage::kCost;
  auto data = std::make_shared<PreparedStepData>(o, std::move(lowered));
  data->chip = std::move(owned_chip);
  data->topology = std::move(owned_topology);
  data->mesh = mesh;
  // The module as any module: the simulator times, groups and schedules it (simulator.h).
  PERFSIM_ASSIGN_OR_RETURN(data->simulation,
                           PrepareModule(*data->step.module, c, t, spec.num_devices()));
  const PreparedModule& simulation = data->simulation;
  data->stage.resize(simulation.num_ops());
  data->phase.assign(simulation.num_ops(), -1);
  for (int64_t i = 0; i < simulation.num_ops(); ++i) {
    const std::optional<Stage> lowered_in =
        StageOfAnnotation(simulation.op(i).instruction->annotation());
    const absl::string_view phase = lowered_in.has_value() ? StagePhase(*lowered_in) : "other";
    if (lowered_in.has_value()) data->stage[i] = std::string(StageName(*lowered_in));
    for (int32_t p = 0; p < kNumPredictPhases; ++p) {
      if (phase == kPredictPhaseNames[p]) data->phase[i] = p;
    }
  }

  const Computation& entry = *data->step.module->entry();
  // Static HBM by the entry parameters' annotated roles: activations and cotangents (x, dy) are
  // inputs; weights are parameters, and the trained ones have gradients (fwd_bwd) and optimizer
  // state. A frozen weight (DeepSeek-V3's score-correction bias, which only steers the expert
  // choice) has neither.
  for (int64_t p = 0; p < entry.parameter_count(); ++p) {
    const Instruction& parameter = *entry.parameter(p);
    const double bytes = static_cast<double>(parameter.shape().ByteSize());
    const Annotation::Role role = parameter.annotation() != nullptr
                                      ? parameter.annotation()->role()
                                      : Annotation::ROLE_UNSPECIFIED;
    if (role == Annotation::ROLE_ACTIVATION || role == Annotation::ROLE_COTANGENT ||
        role == Annotation::ROLE_ROUTING_INPUT) {
      data->input_activations += bytes;
      continue;
    }
    data->parameters += bytes;
    const bool trained = role == Annotation::ROLE_TRAINED_WEIGHT;
    if (spec.phase == Phase::kForwardBackward && trained) data->gradients += bytes;
    if (o.adam && trained) {
      data->optimizer += 8.0 * static_cast<double>(entry.parameter(p)->shape().ElementCount());
    }
  }
  const int64_t devices_per_chip = t.num_devices() / t.num_chips();
  data->capacity =
      static_cast<double>(c.hbm_capacity_bytes()) / static_cast<double>(devices_per_chip);

  // MFU terms.
  const ModelConfig& model = spec.model;
  const double per_token = static_cast<double>(
      model.RoutedFlopsPerToken() + model.SharedFlopsPerToken() + model.RouterFlopsPerToken());
  data->model_flops_per_device = per_token * static_cast<double>(spec.tokens()) *
                                 (spec.phase == Phase::kForwardBackward ? 3 : 1) /
                                 static_cast<double>(spec.num_devices());
  const bool f32 = model.proto().param_dtype() == DTYPE_F32;
  data->peak_flops_per_device =
      c.PeakMatmulFlopsPerSecond(f32 ? MatmulDtype::kF32 : MatmulDtype::kBf16) /
      static_cast<double>(devices_per_chip);
  PreparedStep prepared;
  prepared.data_ = std::move(data);
  return prepared;
}

}  // namespace perfsim
