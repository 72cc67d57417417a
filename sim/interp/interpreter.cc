// RunModule: checks inputs, builds the plans, and runs one DeviceEvaluator per virtual device
// (on threads when there is more than one device; the collective hub keeps them in step).
// Threads: a module without collectives runs its devices on at most num_threads (or the
// cores) worker threads; one with collectives needs a thread per device, since a device waits
// for its group deep inside its own evaluation.
#include "sim/interp/interpreter.h"

#include <algorithm>
#include <atomic>
#include <functional>
#include <system_error>
#include <thread>
#include <utility>

#include "absl/strings/str_cat.h"
#include "sim/interp/collectives.h"
#include "sim/interp/compute_plan.h"
#include "sim/interp/evaluator.h"
#include "sim/interp/memory_plan.h"
#include "sim/interp/sdy_custom_calls.h"
#include "sim/interp/value.h"
#include "sim/ir/opcode.h"
#include "sim/ir/verifier.h"
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
    if (ContainsBuffer(param->shape())) {
      return absl::UnimplementedError(absl::StrCat(
          "parameter ", param->name(), " of ", entry.name(), " has a buffer type (",
          param->shape().ToString(false),
          "): the interpreter takes arrays as inputs; Pin them inside the module instead"));
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

// Devices computing at once: --threads, or the machine's cores when it is 0, never more than
// the devices.
int64_t ComputingThreads(int64_t num_threads, int64_t num_devices) {
  int64_t threads = num_threads;
  if (threads <= 0) threads = std::max<int64_t>(1, std::thread::hardware_concurrency());
  return std::clamp<int64_t>(threads, 1, std::max<int64_t>(1, num_devices));
}

// Only collectives make a device wait for another (CollectiveHub::Exchange).
bool HasCollectives(const Module& module) {
  for (const auto& computation : module.computations()) {
    for (const auto& instruction : computation->instructions()) {
      if (IsCollective(instruction->opcode())) return true;
      // shard_map's LocalToGlobalShape gathers every device's block (sdy_custom_calls.h).
      if (instruction->opcode() == Opcode::kCustomCall &&
          instruction->attributes().custom_call_target == interp::kSdyLocalToGlobalShapeTarget) {
        return true;
      }
    }
  }
  return false;
}

// Starts `body` on a new thread appended to `threads`; ResourceExhausted (never an exception
// or an abort) when the system refuses the thread.
template <typename Body>
absl::Status StartThread(std::vector<std::thread>& threads, Body body) {
  try {
    threads.emplace_back(std::move(body));
  } catch (const std::system_error& error) {
    return absl::ResourceExhaustedError(error.what());
  }
  return absl::OkStatus();
}

// Runs run_device(0..n-1), each exactly once, on up to `workers` threads taking devices in
// turn. Threads the system refuses are done without: the caller's thread works too.
void RunOnWorkers(int64_t n, int64_t workers, const std::function<void(int64_t)>& run_device) {
  std::atomic<int64_t> next{0};
  auto work = [&] {
    for (int64_t d = next++; d < n; d = next++) run_device(d);
  };
  std::vector<std::thread> threads;
  for (int64_t w = 1; w < workers; ++w) {
    if (!StartThread(threads, work).ok()) break;
  }
  work();
  for (std::thread& t : threads) t.join();
}

absl::StatusOr<RunResult> RunModuleImpl(const Module& module,
                                        const std::vector<std::vector<Literal>>& inputs,
                                        std::vector<std::vector<Literal>>* take,
                                        const InterpreterOptions& options);

}  // namespace

absl::StatusOr<MemoryNeed> ComputeMemoryNeed(const Module& module, int64_t num_devices,
                                             int64_t input_sets) {
  if (module.entry() == nullptr) {
    return absl::InvalidArgumentError("module: expected an ENTRY computation");
  }
  PERFSIM_RETURN_IF_ERROR(CheckCallDepth(module));
  PERFSIM_RETURN_IF_ERROR(CheckCallExpansion(module));
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
  return RunModuleImpl(module, inputs, nullptr, options);
}

absl::StatusOr<RunResult> RunModule(const Module& module,
                                    std::vector<std::vector<Literal>>&& inputs,
                                    const InterpreterOptions& options) {
  return RunModuleImpl(module, inputs, &inputs, options);
}

namespace {

// `inputs` are copied into the run, or moved from `take` (the same vector) when it is set.
absl::StatusOr<RunResult> RunModuleImpl(const Module& module,
                                        const std::vector<std::vector<Literal>>& inputs,
                                        std::vector<std::vector<Literal>>* take,
                                        const InterpreterOptions& options) {
  const Computation* entry = module.entry();
  if (entry == nullptr) return absl::InvalidArgumentError("module: expected an ENTRY computation");
  if (options.memory_budget_bytes <= 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("memory budget: expected a positive size; got ", options.memory_budget_bytes));
  }
  // The evaluator recurses once per nested call; modules that skipped VerifyModule (validate
  // --hlo) are held to the same depth.
  PERFSIM_RETURN_IF_ERROR(CheckCallDepth(module));
  PERFSIM_RETURN_IF_ERROR(CheckCallExpansion(module));
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
  if (!(options.max_flops > 0)) {
    return absl::InvalidArgumentError(
        absl::StrCat("compute budget: expected a positive FLOP count; got ", options.max_flops));
  }
  PERFSIM_ASSIGN_OR_RETURN(ComputeNeed compute, ComputeComputeNeed(module, n));
  PERFSIM_RETURN_IF_ERROR(CheckComputeBudget(compute, options.max_flops));

  // The counter outlives every value below (they release into it).
  BufferCounter buffers;
  run.buffers = &buffers;
  std::vector<std::vector<Value>> args(inputs.size());
  for (size_t s = 0; s < inputs.size(); ++s) {
    for (size_t p = 0; p < inputs[s].size(); ++p) {
      absl::StatusOr<Value> v = take != nullptr
                                    ? interp::ValueFromLiteral(buffers, std::move((*take)[s][p]))
                                    : interp::ValueFromLiteral(buffers, inputs[s][p]);
      if (!v.ok()) return Annotate(v.status(), "inputs");
      args[s].push_back(*std::move(v));
    }
  }
  const int64_t workers = ComputingThreads(options.num_threads, n);
  CollectiveHub hub(n, workers);
  run.hub = &hub;

  std::vector<absl::StatusOr<Value>> results(n);
  auto run_device = [&](int64_t d) {
    hub.AcquireRunSlot();
    {
      DeviceEvaluator evaluator(run, d);
      absl::Status constants = evaluator.MaterializeConstants();
      if (!constants.ok()) {
        results[d] = constants;
      } else if (inputs.size() == 1 && n > 1) {
        results[d] = evaluator.Evaluate(*entry, args[0]);  // shared by every device
      } else {
        // This device's own inputs: handed over, so that the program may update them in place.
        results[d] = evaluator.Evaluate(*entry, std::move(args[inputs.size() == 1 ? 0 : d]));
      }
    }
    hub.ReleaseRunSlot();
    hub.DeviceFinished(d);
  };
  if (n == 1) {
    run_device(0);
  } else if (!HasCollectives(module)) {
    // Devices never wait for each other: `workers` threads take devices in turn.
    RunOnWorkers(n, workers, run_device);
  } else {
    // A device blocks inside a collective, deep in its own evaluation, until its group
    // arrives, so each device needs a stack of its own: one thread per device, `workers` of
    // them computing at once (the others wait in the hub). The device count is bounded by
    // the caller (perfsim run: --devices at most 4096).
    std::vector<std::thread> threads;
    threads.reserve(n);
    absl::Status started = absl::OkStatus();
    for (int64_t d = 0; d < n; ++d) {
      started = StartThread(threads, [&run_device, d] { run_device(d); });
      if (started.ok()) continue;
      // Devices that never start count as finished, so that peers waiting for them in a
      // collective fail instead of waiting forever.
      for (int64_t rest = d; rest < n; ++rest) hub.DeviceFinished(rest);
      started = absl::ResourceExhaustedError(absl::StrCat(
          "could not start the thread of device ", d, " of ", n, " (", started.message(),
          "): a module with collectives runs each device on a thread of its own; expected "
          "fewer devices"));
      break;
    }
    for (std::thread& t : threads) t.join();
    PERFSIM_RETURN_IF_ERROR(started);
  }
  args.clear();
  PERFSIM_RETURN_IF_ERROR(FirstRootCause(results));

  RunResult result;
  result.memory = std::move(need);
  result.observed_peak_bytes = buffers.peak_bytes();
  result.outputs.resize(n);
  // Every device thread has ended: a buffer held by one Value only can be moved out.
  for (int64_t d = 0; d < n; ++d) {
    Value root = *std::move(results[d]);
    results[d] = absl::StatusOr<Value>(Value());
    if (root.is_tuple()) {
      std::vector<Value> elements = root.elements();
      root = Value();
      for (Value& e : elements) result.outputs[d].push_back(std::move(e).ReleaseToLiteral());
    } else {
      result.outputs[d].push_back(std::move(root).ReleaseToLiteral());
    }
  }
  results.clear();
  return result;
}

}  // namespace

}  // namespace perfsim
