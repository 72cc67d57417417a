// ChooseScenario (choose_scenario.h): a valid scenario from the model and the chip.
#include "sim/predict/choose_scenario.h"

#include <numeric>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "fmt/format.h"
#include "sim/comm/topology.h"
#include "sim/fit/module_fit.h"
#include "sim/hw/chip_registry.h"
#include "sim/util/status.h"

namespace perfsim {
namespace {

std::string GiB(double bytes) { return fmt::format("{:.1f} GiB", bytes / (1024.0 * 1024 * 1024)); }

// The HBM plan of `options` (a prediction without per-op detail).
absl::StatusOr<Prediction> PlanOf(const PredictOptions& options) {
  PERFSIM_ASSIGN_OR_RETURN(PreparedStep step, PrepareStep(options));
  return PredictWithRouting(step, options.routing, {.detail = false});
}

}  // namespace

std::string CompactParallelism(const Parallelism& p) {
  std::vector<std::string> axes;
  if (p.dp > 1) axes.push_back(absl::StrCat("dp=", p.dp));
  if (p.fsdp > 1) axes.push_back(absl::StrCat("fsdp=", p.fsdp));
  if (p.ep > 1) axes.push_back(absl::StrCat("ep=", p.ep));
  if (p.tp > 1) axes.push_back(absl::StrCat("tp=", p.tp));
  return axes.empty() ? "ep=1" : absl::StrJoin(axes, ",");
}

absl::StatusOr<ChosenScenario> ChooseScenario(const ScenarioRequest& request) {
  ChosenScenario chosen{.options = request.options};
  PredictOptions& o = chosen.options;
  PERFSIM_ASSIGN_OR_RETURN(Chip chip, ResolveChip(o.hw));
  if (!request.mesh_given && o.mesh.empty()) o.mesh = chip.DefaultSliceShape();
  absl::StatusOr<Topology> topology = Topology::Create(chip, o.mesh);
  if (!topology.ok()) return Annotate(topology.status(), absl::StrCat("--mesh ", o.mesh));
  const int64_t devices = topology->num_devices();
  if (!request.parallelism_given) {
    // Expert parallelism as wide as both the experts and the devices allow: the expert weights
    // are the layer's bulk, and every device holds a 1/ep share of them.
    const int64_t ep = std::gcd(o.spec.model.num_experts(), devices);
    o.spec.parallelism = Parallelism{.dp = devices / ep, .ep = ep};
  }
  auto flags = [&] {
    return absl::StrCat("--mesh ", o.mesh, " --parallelism ",
                        CompactParallelism(o.spec.parallelism), " --batch ", o.spec.batch,
                        " --seq ", o.spec.seq);
  };
  if (request.batch_given) {
    chosen.flags = flags();
    return chosen;
  }
  // The parallelism's own limits first (an overflowing device count bounds nothing below).
  o.spec.batch = 1;
  PERFSIM_RETURN_IF_ERROR(o.spec.ValidateLimits());
  // The smallest batch whose tokens split evenly over the token shards.
  const int64_t shards = o.spec.token_shards();
  const int64_t unit = shards / std::gcd(shards, o.spec.seq);
  int64_t batch = unit;
  while (batch * 2 <= std::max(kMaxChosenBatch, unit)) batch *= 2;
  for (;; batch /= 2) {
    o.spec.batch = batch;
    // A batch beyond the token limits (a long --seq) is not a candidate; the unit is checked.
    if (batch > unit && !o.spec.ValidateLimits().ok()) continue;
    absl::StatusOr<Prediction> plan = PlanOf(o);
    if (!plan.ok()) {
      // A kernel that does not fit is a failed check (its payload says so) that names the
      // backend and chip itself; other errors say which chosen scenario they are about.
      if (IsMisfit(plan.status())) return plan.status();
      return Annotate(plan.status(), absl::StrCat("with ", flags()));
    }
    if (plan->memory.fits) break;
    if (batch == unit) {
      return absl::InvalidArgumentError(absl::StrCat(
          o.spec.model.name(), " does not fit ", chip.name(), " ", o.mesh, " (", devices,
          devices == 1 ? " device" : " devices", ") even at batch ", batch, " x seq ", o.spec.seq,
          ": ", GiB(plan->memory.total), " of ", GiB(plan->memory.capacity),
          " HBM per device; try a smaller --seq, a larger --mesh or --phase fwd"));
    }
  }
  chosen.flags = flags();
  return chosen;
}

}  // namespace perfsim
