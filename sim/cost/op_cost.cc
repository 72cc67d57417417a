// Per-instruction cost (op_cost.h): counts from op_counts, time from the roofline pieces.
#include "sim/cost/op_cost.h"

#include <algorithm>
#include <cmath>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "sim/comm/hlo_collectives.h"
#include "sim/cost/grouped_matmul.h"
#include "sim/cost/op_counts.h"
#include "sim/cost/op_counts_internal.h"
#include "sim/cost/roofline.h"
#include "sim/cost/shape_bytes.h"
#include "sim/cost/trip_count.h"
#include "sim/ir/custom_call_targets.h"
#include "sim/util/status.h"

namespace perfsim {

struct CostMemo::State {
  // Node-based: GCC 12 reports a StatusOr<OpCost> moved by a flat map's rehash as maybe
  // uninitialized (-Werror=maybe-uninitialized), and the values need not move.
  std::unordered_map<const Computation*, absl::StatusOr<OpCost>> times;
  std::optional<cost_internal::Counter> counting;  // options.mode
  std::optional<cost_internal::Counter> truth;     // CostMode::kTrue
  CollectiveTimeMemo collectives;                  // options.topology's group collectives
};

CostMemo::CostMemo() : state_(std::make_unique<State>()) {}
CostMemo::~CostMemo() = default;

namespace {

// CountInstruction through the memo's counters when there is one (a call's counts then reuse
// its callees' sums).
OpCounts Counts(const Instruction& instruction, const CountOptions& counting, CostMemo* memo) {
  if (memo == nullptr) return CountInstruction(instruction, counting);
  CostMemo::State& state = memo->state();
  std::optional<cost_internal::Counter>& counter =
      counting.mode == CostMode::kTrue ? state.truth : state.counting;
  if (!counter.has_value()) counter.emplace(counting);
  return counter->Count(instruction);
}

void AddUnknown(std::vector<std::string>& list, const std::string& rate) {
  if (!rate.empty() && std::find(list.begin(), list.end(), rate) == list.end()) {
    list.push_back(rate);
  }
}

// Compute time of one kernel's work, and whether it has matrix-unit work.
struct ComputeWork {
  double seconds = 0;
  bool matmul = false;
  std::vector<std::string> unknown_rates;
};

MatmulPrecision PrecisionOf(const Instruction& instruction) {
  for (const auto& [key, value] : instruction.attributes().other) {
    if (key != "operand_precision") continue;
    if (absl::StrContains(value, "highest")) return MatmulPrecision::kHighest;
    if (absl::StrContains(value, "high")) return MatmulPrecision::kHigh;
  }
  return MatmulPrecision::kDefault;
}

int64_t Product(const Shape& shape, const std::vector<int64_t>& dims) {
  int64_t p = 1;
  for (int64_t d : dims) {
    if (d >= 0 && d < shape.rank()) p *= shape.dimensions(d);
  }
  return p;
}

// [batch, m, k] x [batch, k, n] view of a dot.
MatmulProblem DotProblem(const Instruction& dot, const DotDimensionNumbers& d) {
  const Shape& lhs = dot.operand(0)->shape();
  const Shape& rhs = dot.operand(1)->shape();
  MatmulProblem p;
  p.batch = Product(lhs, d.lhs_batch_dimensions);
  p.k = Product(lhs, d.lhs_contracting_dimensions);
  const int64_t lhs_free = p.batch * p.k;
  const int64_t rhs_free = Product(rhs, d.rhs_batch_dimensions) * Product(rhs, d.rhs_contracting_dimensions);
  p.m = lhs_free == 0 ? 0 : ElementsIn(lhs) / lhs_free;
  p.n = rhs_free == 0 ? 0 : ElementsIn(rhs) / rhs_free;
  p.lhs = lhs.element_type();
  p.rhs = rhs.element_type();
  p.precision = PrecisionOf(dot);
  return p;
}

// XLA's algebraic simplifier rewrites a dot in which one operand has no free dimension
// (a matrix-vector or vector-vector product: m == 1 or n == 1 in the [batch, m, k] x
// [batch, k, n] view) or nothing to contract (k == 1, an outer product) into an elementwise
// multiply and a reduce ("dot strength reduction", xla/hlo/transforms/simplifiers/
// algebraic_simplifier.cc; recalled, not in shared/reference), which runs as a loop fusion on
// the vector units. Padding such a dot to matrix-unit tiles charges far more than it does: the
// MoE combine's weighted sum of K = 8 rows of width 7168 for 4096 tokens is 0.47 GFLOP, but
// padded to v7x MXU tiles (k = 8 -> 256, n = 1 -> 256) it would be 3.8 TFLOP, 3.3 ms.
bool RunsOnVectorUnits(const MatmulProblem& p) { return p.m == 1 || p.n == 1 || p.k == 1; }

void AddMatmul(const MatmulTime& t, ComputeWork& work) {
  work.seconds += t.seconds;
  work.matmul = true;
  for (const std::string& r : t.unknown_rates) AddUnknown(work.unknown_rates, r);
}

// Flops at a matrix rate without tile modelling (convolutions, declared kernel costs, cuBLAS).
void AddFlopsAtMatrixRate(double flops, PrimitiveType lhs, PrimitiveType rhs,
                          const Instruction& instruction, const Chip& chip, ComputeWork& work) {
  if (flops <= 0) return;
  const MatmulRate rate = MatmulRateFor(lhs, rhs, PrecisionOf(instruction), chip);
  work.matmul = true;
  if (rate.flops_per_second <= 0) {
    AddUnknown(work.unknown_rates, rate.unknown_rate);
    return;
  }
  work.seconds += flops / rate.flops_per_second;
}

// Vector and transcendental work from true counts.
void AddVectorWork(const OpCounts& counts, const Chip& chip, ComputeWork& work) {
  const ComputeSpec& c = chip.proto().compute();
  const double devices = static_cast<double>(std::max<int64_t>(1, c.devices_per_chip()));
  if (counts.flops > 0) {
    if (c.vector_f32_flops_per_second() > 0) {
      work.seconds += counts.flops / (c.vector_f32_flops_per_second() / devices);
    } else {
      AddUnknown(work.unknown_rates, "compute.vector_f32_flops_per_second");
    }
  }
  if (counts.transcendentals > 0) {
    if (c.transcendentals_per_second() > 0) {
      work.seconds += counts.transcendentals / (c.transcendentals_per_second() / devices);
    } else {
      AddUnknown(work.unknown_rates, "compute.transcendentals_per_second");
    }
  }
}

void AddComputeWork(const Instruction& instruction, const Chip& chip, const CountOptions& truth,
                    ComputeWork& work) {
  switch (instruction.opcode()) {
    case Opcode::kDot: {
      if (instruction.operand_count() != 2) return;
      const MatmulProblem p = DotProblem(
          instruction, instruction.attributes().dot_dimension_numbers.value_or(DotDimensionNumbers{}));
      if (RunsOnVectorUnits(p)) {
        // Strength-reduced: multiplies and a reduction on the vector units, no matrix tiles.
        AddVectorWork(OpCounts{.flops = 2.0 * static_cast<double>(p.batch) *
                                        static_cast<double>(p.m) * static_cast<double>(p.n) *
                                        static_cast<double>(p.k)},
                      chip, work);
        return;
      }
      AddMatmul(TimeMatmul(p, chip), work);
      return;
    }
    case Opcode::kRaggedDot: {
      if (instruction.operand_count() != 3) return;
      const RaggedDotDimensionNumbers rdn =
          instruction.attributes().ragged_dot_dimension_numbers.value_or(RaggedDotDimensionNumbers{});
      MatmulProblem p = DotProblem(instruction, rdn.dot);
      const Shape& rhs = instruction.operand(1)->shape();
      const int64_t groups = ElementsIn(instruction.operand(2)->shape());
      const int64_t ragged = rdn.lhs_ragged_dimensions.empty() ? -1 : rdn.lhs_ragged_dimensions[0];
      const auto& contracting = rdn.dot.lhs_contracting_dimensions;
      const auto& batch = rdn.dot.lhs_batch_dimensions;
      const bool is_contracting = std::find(contracting.begin(), contracting.end(), ragged) != contracting.end();
      const bool is_batch = std::find(batch.begin(), batch.end(), ragged) != batch.end();
      if (is_contracting) {
        // Each group contracts its own slice of K into its own [M, N] result.
        p.batch *= std::max<int64_t>(1, groups);
        p.k = (p.k + std::max<int64_t>(1, groups) - 1) / std::max<int64_t>(1, groups);
      } else if (!is_batch) {
        // The MoE mode: rhs carries a group dimension the DotProblem view counted as free.
        const int64_t group_dims = Product(rhs, rdn.rhs_group_dimensions);
        p.n = group_dims == 0 ? 0 : p.n / group_dims;
        // A group boundary inside a row tile wastes the rest of the tile: up to G-1 tiles.
        p.m += (std::max<int64_t>(1, groups) - 1) *
               chip.proto().compute().matrix_unit().output_rows_elements();
      }
      AddMatmul(TimeMatmul(p, chip), work);
      return;
    }
    case Opcode::kScaledDot:
      // The dot of the dequantised operands; the block scales add vector work only.
      if (instruction.operand_count() == 4) {
        AddMatmul(TimeMatmul(DotProblem(instruction, instruction.attributes().dot_dimension_numbers
                                                         .value_or(DotDimensionNumbers{})),
                             chip),
                  work);
      }
      return;
    case Opcode::kTriangularSolve:
    case Opcode::kCholesky:
      // Blocked algorithms whose work is matrix products: the true flops at the matrix rate.
      AddFlopsAtMatrixRate(CountInstruction(instruction, truth).flops,
                           instruction.operand(0)->shape().element_type(),
                           instruction.operand(0)->shape().element_type(), instruction, chip, work);
      return;
    case Opcode::kConvolution:
      if (instruction.operand_count() == 2) {
        AddFlopsAtMatrixRate(CountInstruction(instruction, truth).flops,
                             instruction.operand(0)->shape().element_type(),
                             instruction.operand(1)->shape().element_type(), instruction, chip, work);
      }
      return;
    case Opcode::kCustomCall: {
      const std::string& target = instruction.attributes().custom_call_target;
      if (IsGroupedMatmulTarget(target)) return;  // costed whole, elsewhere
      const OpCounts counts = CountInstruction(instruction, truth);
      if (instruction.operand_count() >= 2 &&
          (absl::StartsWith(target, "__cublas") || counts.flops > 0)) {
        // cuBLAS gemms and kernels that declare their cost: matmul work at the operand rate.
        AddFlopsAtMatrixRate(counts.flops, instruction.operand(0)->shape().element_type(),
                             instruction.operand(1)->shape().element_type(), instruction, chip, work);
        AddVectorWork(OpCounts{.transcendentals = counts.transcendentals}, chip, work);
        return;
      }
      AddVectorWork(counts, chip, work);
      return;
    }
    case Opcode::kFusion: {
      // The fused instructions, nested fusions opened in place with an explicit stack (fusions
      // nest as deep as the input does).
      std::vector<const Instruction*> stack = {&instruction};
      while (!stack.empty()) {
        const Instruction* fusion = stack.back();
        stack.pop_back();
        if (fusion->calls().empty() || fusion->calls()[0] == nullptr) continue;
        for (const auto& inner : fusion->calls()[0]->instructions()) {
          if (inner->opcode() == Opcode::kFusion) {
            stack.push_back(inner.get());
          } else {
            AddComputeWork(*inner, chip, truth, work);
          }
        }
      }
      return;
    }
    default:
      AddVectorWork(CountInstruction(instruction, truth), chip, work);
      return;
  }
}

// Ops that run no kernel.
bool IsFree(const Instruction& instruction, const OpCounts& truth) {
  switch (instruction.opcode()) {
    case Opcode::kParameter:
    case Opcode::kConstant:
    case Opcode::kGetTupleElement:
    case Opcode::kTuple:
    case Opcode::kBitcast:
    case Opcode::kAfterAll:
    case Opcode::kAddDependency:
    case Opcode::kDomain:
    case Opcode::kOptimizationBarrier:
    case Opcode::kPartitionId:
    case Opcode::kReplicaId:
    // The -done half of an asynchronous op: its time is on the start.
    case Opcode::kCopyDone:
    case Opcode::kSendDone:
    case Opcode::kRecvDone:
    case Opcode::kAsyncUpdate:
    case Opcode::kAsyncDone:
      return true;
    case Opcode::kTranspose:
    case Opcode::kReshape:
    case Opcode::kCustomCall:
    case Opcode::kDynamicSlice:
    case Opcode::kDynamicUpdateSlice:
    case Opcode::kFusion:
      // A bitcast transpose or reshape, an annotation, or a view of one contiguous layer of a
      // stacked operand (op_counts.h): the true counts say no bytes move.
      return truth.bytes_accessed == 0 && truth.flops == 0 && truth.transcendentals == 0;
    default:
      return false;
  }
}

// Adds the parts of `part` (times `times`) into `total`.
void Accumulate(const OpCost& part, double times, OpCost& total) {
  total.compute_seconds += part.compute_seconds * times;
  total.memory_seconds += part.memory_seconds * times;
  total.communication_seconds += part.communication_seconds * times;
  total.overhead_seconds += part.overhead_seconds * times;
  if (part.seconds.has_value() && total.seconds.has_value()) {
    *total.seconds += *part.seconds * times;
  } else {
    total.seconds.reset();
  }
  for (const std::string& r : part.unknown_rates) AddUnknown(total.unknown_rates, r);
}

// The bound of a composite op: the largest of its summed parts.
Bound DominantBound(const OpCost& c) {
  const double parts[] = {c.compute_seconds, c.memory_seconds, c.communication_seconds,
                          c.overhead_seconds};
  const Bound bounds[] = {Bound::kCompute, Bound::kMemory, Bound::kCommunication, Bound::kOverhead};
  int best = -1;
  for (int i = 0; i < 4; ++i) {
    if (parts[i] > 0 && (best < 0 || parts[i] > parts[best])) best = i;
  }
  return best < 0 ? Bound::kNone : bounds[best];
}

absl::StatusOr<OpCost> TimeInstructions(const Computation& computation, const Chip& chip,
                                        const CostOptions& options) {
  OpCost total;
  total.seconds = 0.0;
  for (const auto& instruction : computation.instructions()) {
    PERFSIM_ASSIGN_OR_RETURN(OpCost part, CostInstruction(*instruction, chip, options));
    Accumulate(part, 1, total);
  }
  return total;
}

// The summed time of `computation`'s instructions, remembered in the memo. Its callees are
// timed first, callees before callers, so that the CostInstruction -> TimeComposite ->
// TimeComputation cycle always finds its callee in the memo and never nests.
absl::StatusOr<OpCost> TimeComputation(const Computation* computation, const Chip& chip,
                                       const CostOptions& options) {
  if (computation == nullptr) {
    OpCost zero;
    zero.seconds = 0.0;
    return zero;
  }
  std::optional<CostMemo> own;
  CostOptions with_memo = options;
  if (with_memo.memo == nullptr) with_memo.memo = &own.emplace();
  auto& times = with_memo.memo->state().times;
  auto found = times.find(computation);
  if (found != times.end()) return found->second;
  const std::vector<const Computation*> pending = cost_internal::CalleesFirst(
      *computation, [&times](const Computation* c) { return times.contains(c); });
  // Placeholders: a recursive call (unverified modules only) reads zero instead of recursing.
  for (const Computation* c : pending) {
    OpCost zero;
    zero.seconds = 0.0;
    times.emplace(c, zero);
  }
  for (const Computation* c : pending) times[c] = TimeInstructions(*c, chip, with_memo);
  return times[computation];
}

// Time of call / while / conditional / async-start: from the callees, whatever the mode.
absl::StatusOr<OpCost> TimeComposite(const Instruction& instruction, const Chip& chip,
                                     const CostOptions& options) {
  OpCost total;
  total.seconds = 0.0;
  switch (instruction.opcode()) {
    case Opcode::kCall: {
      PERFSIM_ASSIGN_OR_RETURN(OpCost c, TimeComputation(instruction.to_apply(), chip, options));
      Accumulate(c, 1, total);
      break;
    }
    case Opcode::kAsyncStart: {
      PERFSIM_ASSIGN_OR_RETURN(
          OpCost c, TimeComputation(instruction.calls().empty() ? nullptr : instruction.calls()[0],
                                    chip, options));
      Accumulate(c, 1, total);
      break;
    }
    case Opcode::kWhile: {
      const std::optional<int64_t> trips = StaticTripCount(instruction);
      PERFSIM_ASSIGN_OR_RETURN(OpCost body, TimeComputation(instruction.body(), chip, options));
      PERFSIM_ASSIGN_OR_RETURN(OpCost cond, TimeComputation(instruction.condition(), chip, options));
      Accumulate(body, trips.has_value() ? static_cast<double>(*trips) : 1.0, total);
      Accumulate(cond, trips.has_value() ? static_cast<double>(*trips + 1) : 1.0, total);
      break;
    }
    case Opcode::kConditional: {
      // The branch taken is not known ahead of time: the slowest one (untimed if any is).
      std::optional<OpCost> slowest;
      for (const Computation* branch : instruction.branch_computations()) {
        PERFSIM_ASSIGN_OR_RETURN(OpCost c, TimeComputation(branch, chip, options));
        const bool replace = !slowest.has_value() ||
                             (slowest->seconds.has_value() &&
                              (!c.seconds.has_value() || *c.seconds > *slowest->seconds));
        if (replace) slowest = std::move(c);
      }
      if (slowest.has_value()) Accumulate(*slowest, 1, total);
      break;
    }
    default:
      break;
  }
  total.bound = DominantBound(total);
  return total;
}

absl::StatusOr<OpCost> CostInstructionUnchecked(const Instruction& instruction, const Chip& chip,
                                                const CostOptions& options) {
  const CountOptions counting{.mode = options.mode, .num_devices = options.num_devices};
  const CountOptions truth{.mode = CostMode::kTrue, .num_devices = options.num_devices};
  OpCost cost;
  cost.counts = Counts(instruction, counting, options.memo);
  const OpCounts true_counts =
      options.mode == CostMode::kTrue ? cost.counts : Counts(instruction, truth, options.memo);

  if (IsCollectiveInstruction(instruction)) {
    cost.bound = Bound::kCommunication;
    if (options.topology == nullptr) return cost;  // not timed
    CollectiveCostOptions collective_options;
    if (options.memo != nullptr) collective_options.memo = &options.memo->state().collectives;
    absl::StatusOr<CollectiveCost> collective =
        CostCollectiveInstruction(instruction, *options.topology, collective_options);
    if (!collective.ok()) return collective.status();
    cost.communication_seconds = collective->seconds;
    cost.seconds = collective->seconds;
    if (collective->seconds == 0) cost.bound = Bound::kNone;
    return cost;
  }

  switch (instruction.opcode()) {
    case Opcode::kCall:
    case Opcode::kWhile:
    case Opcode::kConditional:
    case Opcode::kAsyncStart: {
      PERFSIM_ASSIGN_OR_RETURN(OpCost time, TimeComposite(instruction, chip, options));
      time.counts = std::move(cost.counts);
      return time;
    }
    default:
      break;
  }

  if (IsFree(instruction, true_counts)) {
    cost.seconds = 0.0;
    return cost;
  }

  const double overhead = chip.proto().compute().kernel_overhead_seconds();
  const std::string& target = instruction.attributes().custom_call_target;
  if (instruction.opcode() == Opcode::kCustomCall && IsGroupedMatmulTarget(target)) {
    PERFSIM_ASSIGN_OR_RETURN(GroupedMatmulSpec spec, GroupedMatmulSpecFromInstruction(instruction));
    absl::StatusOr<GroupedMatmulCost> gmm = CostGroupedMatmul(spec, chip);
    if (!gmm.ok()) return Annotate(gmm.status(), instruction.name());
    cost.compute_seconds = gmm->compute_seconds;
    cost.memory_seconds = gmm->memory_seconds;
    cost.overhead_seconds = gmm->overhead_seconds;
    cost.seconds = gmm->seconds;
    cost.bound = gmm->bound;
    cost.unknown_rates = gmm->unknown_rates;
    return cost;
  }

  ComputeWork work;
  AddComputeWork(instruction, chip, truth, work);
  const double bandwidth =
      DeviceHbmBytesPerSecond(chip) * chip.proto().efficiency().hbm_fraction_of_peak();
  const KernelTime t =
      CombineRoofline(work.seconds, std::max(0.0, true_counts.bytes_accessed) / bandwidth, overhead);
  cost.compute_seconds = t.compute_seconds;
  cost.memory_seconds = t.memory_seconds;
  cost.overhead_seconds = t.overhead_seconds;
  cost.seconds = t.seconds;
  cost.bound = t.bound;
  cost.unknown_rates = std::move(work.unknown_rates);
  return cost;
}

}  // namespace

absl::StatusOr<OpCost> CostInstruction(const Instruction& instruction, const Chip& chip,
                                       const CostOptions& options) {
  PERFSIM_RETURN_IF_ERROR(CheckDeclaredCost(instruction));
  PERFSIM_ASSIGN_OR_RETURN(OpCost cost, CostInstructionUnchecked(instruction, chip, options));
  // A time that is not a finite number is never output: the chip's rates are validated
  // (hardware/*.textproto plausibility bounds), so this names what produced it.
  if (cost.seconds.has_value() && !std::isfinite(*cost.seconds)) {
    return absl::InvalidArgumentError(absl::StrCat(
        instruction.name(), ": expected a finite time; got ", *cost.seconds, " seconds on ",
        chip.name()));
  }
  return cost;
}

}  // namespace perfsim
