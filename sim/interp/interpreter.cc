// RunModule: checks inputs, builds the plans, and runs one DeviceEvaluator per virtual device
// (on threads when there is more than one device; the collective hub keeps them in step).
#include "sim/interp/interpreter.h"

#include <thread>
#include <utility>

#include "absl/strings/str_cat.h"
#include "sim/interp/collectives.h"
#include "sim/interp/evaluator.h"
#include "sim/interp/memory_plan.h"
#include "sim/interp/value.h"
#include "sim/util/checked_math.h"
#include "sim/util/status.h"

namespace perfsim {
namespace {

using interp::BufferCounter;
using interp::CollectiveHub;
using interp::DeviceEvaluator;
using interp::DeviceGrid;
using interp::RunContext;
using interp::Value;

absl::Status CheckInputs(const Computation& entry, const std::vector<Literal>& inputs,
                         int64_t set) {
  if (static_cast<int64_t>(inputs.size()) != entry.parameter_count()) {
    return absl::InvalidArgumentError(absl::StrCat("inputs for device ", set, ": expected ",
                                                   entry.parameter_count(),
                                                   " entry parameters; got ", inputs.size()));
  }
  for (int64_t p = 0; p < entry.parameter_count(); ++p) {
    const Instruction* param = entry.parameter(p);
    if (param == nullptr) {
      return absl::InvalidArgumentError(absl::StrCat(
          entry.name(), ": expected parameters numbered 0..n-1; parameter ", p, " is missing"));
    }
    if (!SameShapeIgnoringLayout(param->shape(), inputs[p].shape())) {
      return absl::InvalidArgumentError(absl::StrCat(
          "input ", p, " for device ", set, " (parameter ", param->name(), "): expected ",
          param->shape().ToString(false), "; got ", inputs[p].shape().ToString(false)));
    }
  }
  return absl::OkStatus();
}

// Errors of devices that only failed because a peer did are less useful than the peer's own.
absl::Status FirstRootCause(const std::vector<absl::StatusOr<Value>>& results) {
  absl::Status fallback = absl::OkStatus();
  for (size_t d = 0; d < results.size(); ++d) {
    if (results[d].ok()) continue;
    absl::Status annotated = Annotate(results[d].status(), absl::StrCat("device ", d));
    if (results[d].status().code() != absl::StatusCode::kAborted) return annotated;
    if (fallback.ok()) fallback = annotated;
  }
  return fallback;
}

int64_t EntryParameterBytes(const Computation& entry) {
  int64_t bytes = 0;
  for (const Instruction* parameter : entry.parameters()) {
    bytes = SaturatingAdd(bytes, parameter->shape().ByteSize());
  }
  return bytes;
}

absl::StatusOr<MemoryNeed> NeedFromPlans(const Module& module, const RunContext& run,
                                         int64_t num_devices, int64_t input_sets,
                                         std::vector<const Instruction*>* constants) {
  PERFSIM_ASSIGN_OR_RETURN(interp::DeviceMemoryPlan plan,
                           interp::PlanDeviceMemory(module, run.plans, num_devices));
  MemoryNeed need;
  need.num_devices = num_devices;
  // Saturating (sim/util/checked_math.h): a need beyond int64 is kInt64Max, which
  // CheckMemoryBudget refuses whatever the budget, never a wrapped small number.
  need.input_bytes = SaturatingMul(input_sets, EntryParameterBytes(*module.entry()));
  need.device_bytes = plan.peak_bytes;
  need.constant_bytes = plan.constant_bytes;
  need.peak_at = plan.peak_at;
  need.total_bytes =
      SaturatingAdd(need.input_bytes, SaturatingMul(num_devices, need.device_bytes));
  if (constants != nullptr) *constants = std::move(plan.constants);
  return need;
}

}  // namespace

absl::StatusOr<MemoryNeed> ComputeMemoryNeed(const Module& module, int64_t num_devices,
                                             int64_t input_sets) {
  if (module.entry() == nullptr) {
    return absl::InvalidArgumentError("module: expected an ENTRY computation");
  }
  RunContext run;
  PERFSIM_RETURN_IF_ERROR(interp::BuildPlans(module, &run));
  return NeedFromPlans(module, run, num_devices, input_sets, nullptr);
}

absl::Status CheckMemoryBudget(const MemoryNeed& need, int64_t budget_bytes) {
  if (need.total_bytes <= budget_bytes && need.total_bytes < kInt64Max) return absl::OkStatus();
  auto bytes = [](int64_t n) {
    return n == kInt64Max ? absl::StrCat("at least ", n, " (int64's limit)") : absl::StrCat(n);
  };
  return absl::ResourceExhaustedError(absl::StrCat(
      "memory budget: the run needs ", bytes(need.total_bytes), " bytes (inputs ",
      bytes(need.input_bytes),
      " + ", need.num_devices, need.num_devices == 1 ? " device x " : " devices x ",
      bytes(need.device_bytes),
      need.num_devices == 1 ? ", peaking at " : ", each device peaking at ",
      need.peak_at.empty() ? std::string("its start") : need.peak_at, "); budget ",
      budget_bytes, " bytes: expected a need within the budget (raise it to run this module)"));
}

absl::StatusOr<RunResult> RunModule(const Module& module,
                                    const std::vector<std::vector<Literal>>& inputs,
                                    const InterpreterOptions& options) {
  const Computation* entry = module.entry();
  if (entry == nullptr) return absl::InvalidArgumentError("module: expected an ENTRY computation");
  if (options.memory_budget_bytes <= 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("memory budget: expected a positive size; got ", options.memory_budget_bytes));
  }
  PERFSIM_ASSIGN_OR_RETURN(DeviceGrid grid, interp::MakeDeviceGrid(module, options.num_devices));
  const int64_t n = options.num_devices;
  if (inputs.size() != 1 && static_cast<int64_t>(inputs.size()) != n) {
    return absl::InvalidArgumentError(
        absl::StrCat("inputs: expected one set for all devices or one per device (", n, "); got ",
                     inputs.size()));
  }
  for (size_t s = 0; s < inputs.size(); ++s) {
    PERFSIM_RETURN_IF_ERROR(CheckInputs(*entry, inputs[s], static_cast<int64_t>(s)));
  }

  RunContext run;
  run.module = &module;
  run.options = &options;
  run.grid = &grid;
  PERFSIM_RETURN_IF_ERROR(interp::BuildPlans(module, &run));
  // Decided before anything is allocated, from the program alone.
  PERFSIM_ASSIGN_OR_RETURN(
      MemoryNeed need,
      NeedFromPlans(module, run, n, static_cast<int64_t>(inputs.size()), &run.constants));
  PERFSIM_RETURN_IF_ERROR(CheckMemoryBudget(need, options.memory_budget_bytes));

  // The counter outlives every value below (they release into it).
  BufferCounter buffers;
  run.buffers = &buffers;
  std::vector<std::vector<Value>> args(inputs.size());
  for (size_t s = 0; s < inputs.size(); ++s) {
    for (const Literal& literal : inputs[s]) {
      absl::StatusOr<Value> v = interp::ValueFromLiteral(buffers, literal);
      if (!v.ok()) return Annotate(v.status(), "inputs");
      args[s].push_back(*std::move(v));
    }
  }
  CollectiveHub hub(n, options.num_threads);
  run.hub = &hub;

  std::vector<absl::StatusOr<Value>> results(n);
  auto run_device = [&](int64_t d) {
    hub.AcquireRunSlot();
    {
      DeviceEvaluator evaluator(run, d);
      absl::Status constants = evaluator.MaterializeConstants();
      results[d] = constants.ok() ? evaluator.Evaluate(*entry, args[inputs.size() == 1 ? 0 : d])
                                  : absl::StatusOr<Value>(constants);
    }
    hub.ReleaseRunSlot();
    hub.DeviceFinished(d);
  };
  if (n == 1) {
    run_device(0);
  } else {
    std::vector<std::thread> threads;
    threads.reserve(n);
    for (int64_t d = 0; d < n; ++d) threads.emplace_back(run_device, d);
    for (std::thread& t : threads) t.join();
  }
  args.clear();
  PERFSIM_RETURN_IF_ERROR(FirstRootCause(results));

  RunResult result;
  result.memory = std::move(need);
  result.observed_peak_bytes = buffers.peak_bytes();
  result.outputs.resize(n);
  for (int64_t d = 0; d < n; ++d) {
    const Value& root = *results[d];
    if (root.is_tuple()) {
      for (const Value& e : root.elements()) result.outputs[d].push_back(e.ToLiteral());
    } else {
      result.outputs[d].push_back(root.ToLiteral());
    }
  }
  results.clear();
  return result;
}

}  // namespace perfsim
