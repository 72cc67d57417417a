#include "sim/sweep/evaluator.h"

#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "sim/fit/module_fit.h"
#include "sim/fit/tiling_search.h"
#include "sim/lowering/annotations.h"
#include "sim/lowering/checks.h"
#include "sim/lowering/lowering.h"

namespace perfsim {
namespace {

// Blocks kept prepared: the points of a block are consecutive in a run, so a few suffice.
constexpr size_t kBlocksKept = 4;
constexpr size_t kMaxMessage = 400;

std::string OneLine(absl::string_view message) {
  std::string line(message.substr(0, message.find('\n')));
  if (line.size() > kMaxMessage) line = absl::StrCat(line.substr(0, kMaxMessage), "...");
  return line;
}

// TilingKnob (step_spec.h) only has a const form; `knobs` is ours to change.
GmmTiling* MutableTilingKnob(BackendKnobs& knobs, absl::string_view role) {
  return const_cast<GmmTiling*>(TilingKnob(knobs, role));
}

std::string ProblemKey(const KernelProblem& p) {
  const KernelOptions& o = p.options;
  return absl::StrCat(KernelName(p.kernel), ":", p.shape.m, ",", p.shape.k, ",", p.shape.n, ",",
                      p.shape.groups, ":", static_cast<int>(p.dtypes.lhs), ",",
                      static_cast<int>(p.dtypes.rhs), ",", static_cast<int>(p.dtypes.out), ":",
                      o.lhs_buffer_count, ",", o.existing_out, ",", o.transpose_rhs, ",",
                      o.fuse_activation, ",", o.bias, ",", o.quant_block_size, ",",
                      o.pipeline_stages);
}

std::string KnobsLabel(const StepSpec& spec) {
  if (!BackendTakesTilings(spec.backend)) return "";
  SweepTiling t{.wi = spec.knobs.wi, .wo = spec.knobs.wo};
  return SweepTilingLabel(t);
}

}  // namespace

absl::string_view InfeasibilityName(Infeasibility reason) {
  switch (reason) {
    case Infeasibility::kNone:
      return "ok";
    case Infeasibility::kDivisibility:
      return "divisibility";
    case Infeasibility::kBackendRefusal:
      return "backend_refusal";
    case Infeasibility::kTilingMisfit:
      return "tiling_misfit";
    case Infeasibility::kLoweringFailed:
      return "lowering_failed";
    case Infeasibility::kHbmOverCapacity:
      return "hbm_over_capacity";
    case Infeasibility::kError:
      return "error";
  }
  return "?";
}

absl::StatusOr<Infeasibility> ParseInfeasibility(absl::string_view name) {
  for (int i = 0; i < kNumInfeasibilities; ++i) {
    if (InfeasibilityName(static_cast<Infeasibility>(i)) == name) {
      return static_cast<Infeasibility>(i);
    }
  }
  return absl::InvalidArgumentError(
      absl::StrCat("expected ok, divisibility, backend_refusal, tiling_misfit, lowering_failed, "
                   "hbm_over_capacity or error; got '",
                   name, "'"));
}

void SweepCacheStats::Add(const SweepCacheStats& o) {
  blocks_prepared += o.blocks_prepared;
  block_hits += o.block_hits;
  searches += o.searches;
  search_hits += o.search_hits;
  grouped_hits += o.grouped_hits;
  grouped_misses += o.grouped_misses;
  a2a_hits += o.a2a_hits;
  a2a_misses += o.a2a_misses;
}

SweepCacheStats SweepEvaluator::stats() const {
  SweepCacheStats s = stats_;
  const PredictCache::Stats c = cache_.stats();
  s.grouped_hits = c.grouped_hits;
  s.grouped_misses = c.grouped_misses;
  s.a2a_hits = c.ragged_hits;
  s.a2a_misses = c.ragged_misses;
  return s;
}

absl::Status SweepEvaluator::SearchTilings(StepSpec& spec, std::string& why_not) {
  absl::StatusOr<LoweredStep> step = LowerStep(spec);
  if (!step.ok()) return step.status();
  absl::flat_hash_map<std::string, bool> done;
  for (const auto& owned : step->module->entry()->instructions()) {
    const Instruction& instruction = *owned;
    const std::string role = instruction.annotation() != nullptr
                                 ? KernelRoleOf(instruction.annotation()->kernel())
                                 : std::string();
    GmmTiling* knob = role.empty() ? nullptr : MutableTilingKnob(spec.knobs, role);
    if (knob == nullptr || done.contains(role)) continue;
    done[role] = true;
    absl::StatusOr<std::optional<std::pair<KernelProblem, Tiling>>> call =
        KernelCallProblem(instruction);
    if (!call.ok()) return call.status();
    if (!call->has_value()) continue;
    const KernelProblem& problem = (*call)->first;
    const std::string key = ProblemKey(problem);
    auto it = searched_.find(key);
    if (it == searched_.end()) {
      ++stats_.searches;
      absl::StatusOr<TilingSearchResult> result =
          perfsim::SearchTilings(problem, e_.chip(), TilingSearchOptions{.max_runners_up = 0});
      if (!result.ok()) return result.status();
      std::optional<Tiling> best;
      if (result->best.has_value()) best = result->best->tiling;
      it = searched_.emplace(key, best).first;
    } else {
      ++stats_.search_hits;
    }
    if (!it->second.has_value()) {
      why_not = absl::StrCat("search: no tiling of ", role, " (", KernelName(problem.kernel),
                             " m=", problem.shape.m, " k=", problem.shape.k, " n=", problem.shape.n,
                             ") fits ", e_.chip().name());
      return absl::OkStatus();
    }
    *knob = GmmTiling{it->second->tm, it->second->tk, it->second->tn};
  }
  // TODO(issue 8): search the fused_expert_ffn tile too (its kernel declares no role).
  return absl::OkStatus();
}

SweepEvaluator::Block SweepEvaluator::PrepareBlock(const SweepScenario& scenario) {
  Block b{.index = scenario.block};
  StepSpec spec = e_.SpecOf(scenario);
  if (absl::Status s = spec.Validate(); !s.ok()) {
    b.reason = Infeasibility::kDivisibility;
    b.message = OneLine(s.message());
    return b;
  }
  absl::StatusOr<const MoeBackend*> backend = FindBackend(spec.backend);
  if (!backend.ok()) {
    b.reason = Infeasibility::kBackendRefusal;
    b.message = OneLine(backend.status().message());
    return b;
  }
  if (absl::Status s = (*backend)->Supports(spec); !s.ok()) {
    b.reason = Infeasibility::kBackendRefusal;
    b.message = OneLine(s.message());
    return b;
  }
  const auto classify = [&b](const absl::Status& s) {
    const std::string line = OneLine(s.message());
    b.message = line;
    if (IsMisfit(s) || absl::StrContains(line, "tiling")) {
      b.reason = Infeasibility::kTilingMisfit;
    } else {
      b.reason = Infeasibility::kLoweringFailed;
    }
  };
  if (scenario.tiling->search && BackendTakesTilings(spec.backend)) {
    std::string why_not;
    if (absl::Status s = SearchTilings(spec, why_not); !s.ok()) {
      classify(s);
      return b;
    }
    if (!why_not.empty()) {
      b.reason = Infeasibility::kTilingMisfit;
      b.message = why_not;
      return b;
    }
  }
  b.tilings = KnobsLabel(spec);
  ++stats_.blocks_prepared;
  const PredictOptions o{
      .spec = spec, .hw = e_.space().hw, .mesh = e_.mesh(), .adam = e_.space().adam};
  PrepareStage stage = PrepareStage::kScenario;
  absl::StatusOr<PreparedStep> prepared = PrepareStep(o, &stage);
  if (!prepared.ok()) {
    b.message = OneLine(prepared.status().message());
    switch (stage) {
      case PrepareStage::kScenario:
      case PrepareStage::kCost:
        b.reason = Infeasibility::kError;
        break;
      case PrepareStage::kLower:
        classify(prepared.status());
        break;
      case PrepareStage::kFit:
        // A misfit, or a kernel this chip cannot run at all (a TPU kernel on a GPU).
        b.reason = IsMisfit(prepared.status()) ? Infeasibility::kTilingMisfit
                                               : Infeasibility::kBackendRefusal;
        break;
    }
    return b;
  }
  b.step = std::make_shared<const PreparedStep>(std::move(prepared).value());
  return b;
}

const SweepEvaluator::Block& SweepEvaluator::BlockFor(const SweepScenario& scenario) {
  for (const Block& b : blocks_) {
    if (b.index == scenario.block) {
      ++stats_.block_hits;
      return b;
    }
  }
  if (blocks_.size() >= kBlocksKept) blocks_.pop_front();
  blocks_.push_back(PrepareBlock(scenario));
  return blocks_.back();
}

PointResult SweepEvaluator::Evaluate(int64_t point) {
  const SweepScenario scenario = e_.ScenarioAt(point);
  const Block& block = BlockFor(scenario);
  PointResult r{.index = point};
  if (block.reason != Infeasibility::kNone) {
    r.reason = block.reason;
    r.message = block.message;
    return r;
  }
  r.tilings = block.tilings;
  const RoutingSpec& routing = e_.routings()[scenario.routing];
  absl::StatusOr<Prediction> p =
      PredictWithRouting(*block.step, routing, {.detail = false, .cache = &cache_});
  if (!p.ok()) {
    r.reason = Infeasibility::kError;
    r.message = OneLine(p.status().message());
    return r;
  }
  const int64_t tokens = block.step->options().spec.tokens();
  r.step_seconds = p->step_seconds;
  r.mfu = p->mfu;
  r.exposed_communication_seconds = p->exposed_communication;
  r.compute_busy_seconds = p->compute_busy;
  r.communication_busy_seconds = p->communication_busy;
  for (const PhaseTotal& t : p->phases) {
    for (int k = 0; k < kNumPredictPhases; ++k) {
      if (t.phase == kPredictPhaseNames[k]) r.phase_seconds[k] = t.seconds;
    }
  }
  r.hbm_bytes = p->memory.total;
  r.hbm_capacity_bytes = p->memory.capacity;
  r.has_metrics = true;
  if (r.step_seconds > 0) {
    r.tokens_per_second_per_chip =
        static_cast<double>(tokens) / r.step_seconds / static_cast<double>(e_.num_chips());
  }
  if (r.hbm_bytes > r.hbm_capacity_bytes) {
    r.reason = Infeasibility::kHbmOverCapacity;
    r.message = absl::StrFormat("HBM per device %.2f GiB exceeds the %.2f GiB capacity",
                                r.hbm_bytes / (1 << 30), r.hbm_capacity_bytes / (1 << 30));
  }
  return r;
}

}  // namespace perfsim
