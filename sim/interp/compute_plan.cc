// The static count of compute_plan.h: one pass over each computation's evaluation order
// (only what its root depends on, as the evaluator runs it), callees summarised once.
#include "sim/interp/compute_plan.h"

#include <algorithm>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "sim/cost/op_counts.h"
#include "sim/cost/trip_count.h"
#include "sim/interp/evaluator.h"
#include "sim/ir/custom_call_targets.h"
#include "sim/ir/opcode.h"
#include "sim/ir/verifier.h"
#include "sim/util/status.h"

namespace perfsim {
namespace {

using interp::ComputationPlan;

// What one computation needs, independent of its call site.
struct Summary {
  double flops = 0;
  double largest_flops = 0;
  std::vector<const Instruction*> largest_path;
  bool lower_bound = false;
};

class Counter {
 public:
  explicit Counter(const absl::flat_hash_map<const Computation*, ComputationPlan>& plans)
      : plans_(plans) {}

  absl::StatusOr<const Summary*> Summarize(const Computation& computation) {
    auto cached = summaries_.find(&computation);
    if (cached != summaries_.end()) return &cached->second;
    auto plan = plans_.find(&computation);
    if (plan == plans_.end()) {
      return absl::InvalidArgumentError(
          absl::StrCat(computation.name(), ": expected a root instruction; got none"));
    }
    Summary summary;
    for (const Instruction* instruction : plan->second.order) {
      PERFSIM_ASSIGN_OR_RETURN(Summary step, Count(*instruction));
      summary.flops += step.flops;
      summary.lower_bound = summary.lower_bound || step.lower_bound;
      if (step.largest_flops > summary.largest_flops) {
        summary.largest_flops = step.largest_flops;
        summary.largest_path = std::move(step.largest_path);
      }
    }
    return &summaries_.emplace(&computation, std::move(summary)).first->second;
  }

 private:
  // `callee` run `times` times inside `instruction`.
  absl::Status AddCallee(const Instruction& instruction, const Computation* callee, double times,
                         Summary* out) {
    if (callee == nullptr) return absl::OkStatus();
    PERFSIM_ASSIGN_OR_RETURN(const Summary* s, Summarize(*callee));
    out->flops += s->flops * times;
    out->lower_bound = out->lower_bound || s->lower_bound;
    if (s->largest_flops * times > out->largest_flops) {
      out->largest_flops = s->largest_flops * times;
      out->largest_path = {&instruction};
      out->largest_path.insert(out->largest_path.end(), s->largest_path.begin(),
                               s->largest_path.end());
    }
    return absl::OkStatus();
  }

  absl::StatusOr<Summary> Count(const Instruction& instruction) {
    Summary step;
    const Opcode op = instruction.opcode();
    if (op == Opcode::kWhile) {
      const std::optional<int64_t> trips = StaticTripCount(instruction);
      const double body_times = trips.has_value() ? static_cast<double>(*trips) : 1.0;
      step.lower_bound = !trips.has_value();
      PERFSIM_RETURN_IF_ERROR(AddCallee(instruction, instruction.body(), body_times, &step));
      PERFSIM_RETURN_IF_ERROR(
          AddCallee(instruction, instruction.condition(), body_times + 1, &step));
      return step;
    }
    if (op == Opcode::kCall || op == Opcode::kFusion || op == Opcode::kAsyncStart) {
      const Computation* callee =
          instruction.to_apply() != nullptr
              ? instruction.to_apply()
              : (instruction.calls().empty() ? nullptr : instruction.calls()[0]);
      PERFSIM_RETURN_IF_ERROR(AddCallee(instruction, callee, 1, &step));
      return step;
    }
    if (op == Opcode::kConditional) {
      // The branch taken depends on data: the cheapest one keeps the count a lower bound.
      std::optional<Summary> cheapest;
      for (const Computation* branch : instruction.branch_computations()) {
        Summary one;
        PERFSIM_RETURN_IF_ERROR(AddCallee(instruction, branch, 1, &one));
        if (!cheapest.has_value() || one.flops < cheapest->flops) cheapest = std::move(one);
      }
      if (!cheapest.has_value()) return step;
      cheapest->lower_bound = cheapest->lower_bound || instruction.branch_computations().size() > 1;
      return *std::move(cheapest);
    }
    // Computations applied per element (reduce, sort, scatter, map, ...) are scalar code.
    step.flops = ContractionFlops(instruction);
    step.largest_flops = step.flops;
    if (step.flops > 0) step.largest_path = {&instruction};
    return step;
  }

  const absl::flat_hash_map<const Computation*, ComputationPlan>& plans_;
  absl::flat_hash_map<const Computation*, Summary> summaries_;
};

// A FLOP count as printed: 1.1e+13, 123456.
std::string FlopText(double flops) { return absl::StrCat(flops); }

}  // namespace

double ContractionFlops(const Instruction& instruction) {
  const Opcode op = instruction.opcode();
  const bool matrix_op = op == Opcode::kDot || op == Opcode::kRaggedDot ||
                         op == Opcode::kConvolution || op == Opcode::kScaledDot ||
                         op == Opcode::kTriangularSolve || op == Opcode::kCholesky ||
                         op == Opcode::kFft ||
                         (op == Opcode::kCustomCall &&
                          (instruction.attributes().custom_call_target == kGmmTarget ||
                           instruction.attributes().custom_call_target == kTgmmTarget ||
                           instruction.attributes().custom_call_target == kFusedFfnTarget));
  return matrix_op ? CountInstruction(instruction, CountOptions{}).flops : 0.0;
}

absl::StatusOr<ComputeNeed> ComputeComputeNeed(const Module& module, int64_t num_devices) {
  if (module.entry() == nullptr) {
    return absl::InvalidArgumentError("module: expected an ENTRY computation");
  }
  PERFSIM_RETURN_IF_ERROR(CheckCallDepth(module));
  interp::RunContext run;
  PERFSIM_RETURN_IF_ERROR(interp::BuildPlans(module, &run));
  Counter counter(run.plans);
  PERFSIM_ASSIGN_OR_RETURN(const Summary* entry, counter.Summarize(*module.entry()));
  ComputeNeed need;
  need.num_devices = num_devices;
  need.device_flops = entry->flops;
  need.total_flops = entry->flops * static_cast<double>(num_devices);
  need.largest_flops = entry->largest_flops;
  std::vector<std::string> names;
  for (const Instruction* i : entry->largest_path) names.push_back(i->name());
  need.largest_at = absl::StrJoin(names, " > ");
  need.lower_bound = entry->lower_bound;
  return need;
}

absl::Status CheckComputeBudget(const ComputeNeed& need, double max_flops) {
  if (need.total_flops <= max_flops) return absl::OkStatus();
  return absl::ResourceExhaustedError(absl::StrCat(
      "compute budget: the run needs ", need.lower_bound ? "at least " : "",
      FlopText(need.total_flops), " FLOP in matrix ops (", need.num_devices,
      need.num_devices == 1 ? " device x " : " devices x ", FlopText(need.device_flops),
      ", most at ", need.largest_at, ": ", FlopText(need.largest_flops),
      "); the interpreter's limit is ", FlopText(max_flops),
      " FLOP: expected a need within the limit (raise it with --max-flops to run this module)"));
}

}  // namespace perfsim
