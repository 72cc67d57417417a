#include "sim/step/step_sweep.h"

#include <algorithm>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace perfsim {
namespace {

std::string StepKey(const TrainingStep& step) {
  const StepParallelism& p = step.parallelism();
  return absl::StrCat(step.model().name(), "|tp", step.tp(), "|cp", step.cp(), "|sp",
                      p.sequence_parallel() ? 1 : 0, "|mbs", step.proto().micro_batch(), "|s",
                      step.proto().seq_len());
}

std::string LayerKind(const TrainingStep& step, int64_t layer) {
  const ModelConfig& m = step.model();
  return absl::StrCat("|scope", static_cast<int>(m.LayerAttentionScope(layer)), "|rope",
                      m.LayerHasRope(layer) ? 1 : 0);
}

void AddReason(std::vector<std::pair<std::string, int64_t>>& reasons, std::string reason) {
  for (auto& [text, count] : reasons) {
    if (text == reason) {
      ++count;
      return;
    }
  }
  reasons.emplace_back(std::move(reason), 1);
}

std::string FirstLine(absl::string_view text) {
  return std::string(text.substr(0, text.find('\n')));
}

std::vector<int64_t> PowersOfTwoUpTo(int64_t limit) {
  std::vector<int64_t> out;
  for (int64_t v = 1; v <= limit; v *= 2) out.push_back(v);
  return out;
}

}  // namespace

absl::StatusOr<BlockTiming> CachedBlockTimer::Cached(
    const std::string& key, const std::function<absl::StatusOr<BlockTiming>()>& compute) {
  auto it = blocks_.find(key);
  if (it != blocks_.end()) {
    ++hits_;
    return it->second;
  }
  ++misses_;
  return blocks_.emplace(key, compute()).first->second;
}

absl::StatusOr<BlockTiming> CachedBlockTimer::Attention(const TrainingStep& step, int64_t layer) {
  return Cached(absl::StrCat("attention|", StepKey(step), LayerKind(step, layer)),
                [&] { return inner_->Attention(step, layer); });
}

absl::StatusOr<BlockTiming> CachedBlockTimer::Ffn(const TrainingStep& step, int64_t layer) {
  std::string key = absl::StrCat("ffn|", StepKey(step));
  if (step.model().IsMoeLayer(layer)) {
    absl::StrAppend(&key, "|moe|ep", step.ep(), "|", step.proto().moe_backend(), "|balanced",
                    step.proto().force_balanced_routing() ? 1 : 0);
  } else {
    absl::StrAppend(&key, "|dense");
  }
  return Cached(key, [&] { return inner_->Ffn(step, layer); });
}

absl::StatusOr<BlockTiming> CachedBlockTimer::Embedding(const TrainingStep& step) {
  return Cached(absl::StrCat("embedding|", StepKey(step)), [&] { return inner_->Embedding(step); });
}

absl::StatusOr<BlockTiming> CachedBlockTimer::LmHead(const TrainingStep& step) {
  return Cached(absl::StrCat("head|", StepKey(step)), [&] { return inner_->LmHead(step); });
}

absl::StatusOr<double> CachedBlockTimer::OptimizerSeconds(const TrainingStep& step,
                                                          double elements) {
  const std::string key = absl::StrCat(static_cast<int64_t>(elements), "|g",
                                       step.proto().precision().grad_bytes());
  auto it = optimizer_.find(key);
  if (it != optimizer_.end()) {
    ++hits_;
    return it->second;
  }
  ++misses_;
  return optimizer_.emplace(key, inner_->OptimizerSeconds(step, elements)).first->second;
}

int64_t StepSweepSpace::size() const {
  return static_cast<int64_t>(pp.size() * vp.size() * ep.size() * tp.size() * fsdp.size() *
                              cp.size() * micro_batch.size() * remat.size());
}

StepSweepSpace DefaultStepSweepSpace(const TrainingStepSpec& base, const ModelConfig& model,
                                     const Chip& chip) {
  StepSweepSpace space;
  const int64_t devices = std::max<int64_t>(1, base.devices());
  space.pp = PowersOfTwoUpTo(std::min<int64_t>({16, devices, model.proto().num_layers()}));
  space.vp = {1, 2, 4};
  space.ep = PowersOfTwoUpTo(std::min(devices, model.num_experts()));
  const int64_t tp_limit =
      chip.is_gpu() ? std::max<int64_t>(1, chip.proto().interconnect().domain_max_chips()) : 8;
  space.tp = PowersOfTwoUpTo(std::min<int64_t>({tp_limit, devices, 8}));
  space.fsdp = {1};
  if (devices > 1) space.fsdp.push_back(0);
  space.cp = {1};
  space.micro_batch = {1, 2, 4, 8};
  StepRemat none, full, selective;
  full.set_policy(REMAT_FULL);
  selective.set_policy(REMAT_SELECTIVE);
  selective.add_recompute("core_attn");
  selective.add_recompute("mlp");
  selective.add_recompute("moe_act");
  space.remat = {none, full, selective};
  return space;
}

absl::StatusOr<StepSweepResult> SweepSteps(const TrainingStepSpec& base, const ModelConfig& model,
                                           const StepSweepSpace& space, const Chip& chip,
                                           const Topology& topology, CachedBlockTimer& timer,
                                           int64_t keep) {
  StepSweepResult result;
  const PredictStepOptions options{.search_max_micro_batch = false};
  for (int64_t pp : space.pp) {
    for (int64_t vp : space.vp) {
      for (int64_t ep : space.ep) {
        for (int64_t tp : space.tp) {
          for (int64_t fsdp : space.fsdp) {
            for (int64_t cp : space.cp) {
              for (int64_t mbs : space.micro_batch) {
                for (const StepRemat& remat : space.remat) {
                  ++result.plans;
                  TrainingStepSpec proto = base;
                  StepParallelism& p = *proto.mutable_parallelism();
                  p.set_pp(pp);
                  p.set_vp(vp);
                  p.set_ep(ep);
                  p.set_tp(tp);
                  // fsdp 0: every data device (what pp, tp and cp leave).
                  const int64_t model_parallel = pp * tp * cp;
                  const int64_t fsdp_axis =
                      fsdp == 0 ? std::max<int64_t>(1, base.devices() / model_parallel) : fsdp;
                  p.set_fsdp(fsdp_axis);
                  p.set_cp(cp);
                  p.set_dp(0);
                  p.set_uneven_pipeline(true);
                  p.clear_schedule();
                  proto.set_micro_batch(mbs);
                  *proto.mutable_remat() = remat;
                  absl::StatusOr<TrainingStep> step = TrainingStep::FromProto(proto, model);
                  if (!step.ok()) {
                    AddReason(result.infeasible, FirstLine(step.status().message()));
                    continue;
                  }
                  absl::StatusOr<StepPrediction> prediction =
                      PredictStep(*step, chip, topology, timer, options);
                  if (!prediction.ok()) {
                    AddReason(result.infeasible,
                              absl::StrCat("cannot simulate: ",
                                           FirstLine(prediction.status().message())));
                    continue;
                  }
                  ++result.evaluated;
                  if (!prediction->memory.fits) {
                    AddReason(result.infeasible, "does not fit HBM");
                    continue;
                  }
                  result.ranked.push_back(StepSweepPlan{
                      .spec = step->proto(),
                      .step_seconds = prediction->step_seconds,
                      .tokens_per_second_per_device = prediction->tokens_per_second_per_device,
                      .mfu_megatron = prediction->mfu_megatron,
                      .hbm_bytes = prediction->memory.total_bytes,
                      .bubble_fraction = prediction->bubble_fraction});
                }
              }
            }
          }
        }
      }
    }
  }
  std::stable_sort(result.ranked.begin(), result.ranked.end(),
                   [](const StepSweepPlan& a, const StepSweepPlan& b) {
                     return a.tokens_per_second_per_device > b.tokens_per_second_per_device;
                   });
  if (keep > 0 && static_cast<int64_t>(result.ranked.size()) > keep) {
    result.ranked.resize(static_cast<size_t>(keep));
  }
  result.block_simulations = timer.misses();
  return result;
}

}  // namespace perfsim
