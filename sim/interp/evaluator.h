// Internal: the per-device evaluator and the op-family functions it dispatches to.
//
// One DeviceEvaluator runs one virtual device's program. Evaluate() walks a computation in
// dependency order (only instructions the root depends on), hands each instruction's operand
// values to the function of its op family, and drops a value after its last use, as a real
// run would (memory_plan.h replays this schedule to decide the memory budget).
//
// Op-family functions have the signature
//   absl::StatusOr<Value> EvalX(DeviceEvaluator& ev, const Instruction& instruction,
//                               absl::Span<const Value* const> operands);
// and report errors without the instruction name (the evaluator prefixes "<name>: ").
#ifndef PERFSIM_SIM_INTERP_EVALUATOR_H_
#define PERFSIM_SIM_INTERP_EVALUATOR_H_

#include <cstdint>
#include <memory>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "sim/interp/interpreter.h"
#include "sim/interp/scalar_ops.h"
#include "sim/interp/value.h"
#include "sim/ir/instruction.h"
#include "sim/ir/shape.h"
#include "sim/util/status.h"

namespace perfsim {
namespace interp {

class CollectiveHub;
struct DeviceGrid;

// Evaluation order of one computation, computed once per run.
struct ComputationPlan {
  std::vector<const Instruction*> order;
  // operand_slots[i][k]: position in `order` of operand k of order[i].
  std::vector<std::vector<int32_t>> operand_slots;
  // release_after[i]: positions whose values are dead once order[i] has run.
  std::vector<std::vector<int32_t>> release_after;
  int32_t root_slot = -1;
  // flops[i]: ContractionFlops(*order[i]) (compute_plan.h), charged as order[i] runs.
  std::vector<double> flops;
  // operand_dies[i][k]: operand k of order[i] is used for the last time there and by no
  // other operand of order[i] (its value may be handed over or updated in place).
  std::vector<std::vector<uint8_t>> operand_dies;
};

// State shared by all devices of one run; read-only while devices run, except for the buffer
// counter and the hub, which are thread-safe.
struct RunContext {
  const Module* module = nullptr;
  const InterpreterOptions* options = nullptr;
  BufferCounter* buffers = nullptr;
  CollectiveHub* hub = nullptr;
  const DeviceGrid* grid = nullptr;
  absl::flat_hash_map<const Computation*, ComputationPlan> plans;
  // The constants of every computation the entry reaches; each device materialises them
  // before it starts (memory_plan.h counts them as alive for the whole run).
  std::vector<const Instruction*> constants;
};

// Builds the plans of every computation of the module.
absl::Status BuildPlans(const Module& module, RunContext* run);

class DeviceEvaluator {
 public:
  DeviceEvaluator(const RunContext& run, int64_t device) : run_(run), device_(device) {}

  // Materialises run().constants (once per device, before the first Evaluate).
  absl::Status MaterializeConstants();

  // Runs `computation` with `args` bound to its parameters.
  absl::StatusOr<Value> Evaluate(const Computation& computation, absl::Span<const Value> args);
  // The same, handing the arguments over: a buffer held by nothing else can then be updated
  // in place inside the callee (TakeOperandBuffer).
  absl::StatusOr<Value> Evaluate(const Computation& computation, std::vector<Value>&& args);

  // The buffer of operand `k` of the instruction being evaluated, to write the result into,
  // when nothing can see the change: this is the operand's last use, no other operand of the
  // instruction is the same value, and no other Value holds the buffer (which rules out
  // inputs shared between devices, constants and anything inside a live tuple). Null
  // otherwise, or when its type and dimensions are not `shape`'s. Only for ops that read each
  // element of the operand before writing the same element of the result (elementwise ops,
  // dynamic-update-slice), called before the op evaluates any computation.
  std::shared_ptr<Literal> TakeOperandBuffer(int64_t k, const Shape& shape);

  // A zero-filled buffer, counted by the run's BufferCounter. Fails on a shape whose element
  // count or byte size overflows int64 (ValidateShape): shapes computed at run time from
  // group sizes or data must not wrap into a small allocation that is then written past.
  absl::StatusOr<std::shared_ptr<Literal>> Allocate(const Shape& shape) {
    PERFSIM_RETURN_IF_ERROR(ValidateShape(shape));
    return run_.buffers->Allocate(shape);
  }
  // A buffer of `shape` holding the poison pattern (NaN / kPoisonInteger / true).
  absl::StatusOr<std::shared_ptr<Literal>> AllocatePoisoned(const Shape& shape);

  // Calls a computation on scalar arrays (reducers, comparators, update computations).
  // `args` are scalar Values; the result is the computation's root value.
  absl::StatusOr<Value> CallScalar(const Computation& computation, absl::Span<const Value> args) {
    return Evaluate(computation, args);
  }

  // How many times this device has run `instruction` before (collective rendezvous key).
  int64_t NextSequence(const Instruction* instruction) { return sequence_[instruction]++; }
  // A fresh 64-bit random stream value for the rng op (deterministic per device and call).
  uint64_t NextRandom();

  int64_t device() const { return device_; }
  const RunContext& run() const { return run_; }
  const InterpreterOptions& options() const { return *run_.options; }

 private:
  // `owned`, when set, is `args` itself, and parameter instructions move their argument out
  // of it (each runs once per evaluation).
  absl::StatusOr<Value> EvaluatePlan(const Computation& computation, absl::Span<const Value> args,
                                     std::vector<Value>* owned);
  absl::StatusOr<Value> EvaluateInstruction(const Instruction& instruction,
                                            absl::Span<const Value* const> operands,
                                            absl::Span<const Value> args,
                                            std::vector<Value>* owned);
  // Operand k of the current instruction: moved out when it dies here (OperandDies), else
  // copied. Only for ops that do not read the operand afterwards.
  Value TakeOrCopyOperand(int64_t k);
  bool OperandDies(int64_t k) const;

  const RunContext& run_;
  const int64_t device_;
  absl::flat_hash_map<const Instruction*, int64_t> sequence_;
  // Constants are materialised (and counted) once per device.
  absl::flat_hash_map<const Instruction*, Value> constants_;
  uint64_t rng_counter_ = 0;
  // While-loop iterations this device has run (InterpreterOptions::max_loop_iterations).
  int64_t loop_iterations_ = 0;
  // FLOP of matrix ops this device has run (InterpreterOptions::max_flops).
  double flops_ = 0;
  // The instruction being evaluated: its operands' slots in the current computation's
  // values, and which of them die with it (set by EvaluatePlan, restored after nested calls).
  Value* const* current_operands_ = nullptr;
  const uint8_t* current_dies_ = nullptr;
};

using OperandValues = absl::Span<const Value* const>;

// A scalar array value (rank 0) of `type` holding `value` converted as Literal::SetFromDouble.
absl::StatusOr<Value> MakeScalar(DeviceEvaluator& ev, PrimitiveType type, double value);
// The int64 value of a scalar integer array value (index operands).
int64_t ScalarAsInt64(const Value& value);

// evaluator_reduce.cc: helpers for ops that apply a scalar computation (reduce,
// reduce-window, scatter, map, sort and the all-reduce family).
//
// The op when `computation` is `ROOT r = op(parameter(0), parameter(1))` on scalars of one
// element type (either operand order for commutative ops): such computations run as a native
// loop instead of one call per element.
std::optional<BinaryOp> MatchBinaryComputation(const Computation& computation);
// True when `computation` returns its second parameter (scatter's "set" update).
bool ReturnsSecondParameter(const Computation& computation);
// accumulator[i] = computation(accumulator[i], update[i]) for every i (same shapes).
absl::Status CombineInto(DeviceEvaluator& ev, const Computation& computation, Literal* accumulator,
                         const Literal& update);
// Element `index` of an array as a scalar Value, and the reverse.
absl::StatusOr<Value> ElementAsScalar(DeviceEvaluator& ev, const Literal& array, int64_t index);
absl::Status StoreScalar(const Value& scalar, Literal* array, int64_t index);

// evaluator_elementwise.cc
absl::StatusOr<Value> EvalUnary(DeviceEvaluator& ev, const Instruction& instruction,
                                OperandValues operands);
absl::StatusOr<Value> EvalBinary(DeviceEvaluator& ev, const Instruction& instruction,
                                 OperandValues operands);
absl::StatusOr<Value> EvalIsFinite(DeviceEvaluator& ev, const Instruction& instruction,
                                   OperandValues operands);
absl::StatusOr<Value> EvalCompare(DeviceEvaluator& ev, const Instruction& instruction,
                                  OperandValues operands);
absl::StatusOr<Value> EvalSelect(DeviceEvaluator& ev, const Instruction& instruction,
                                 OperandValues operands);
absl::StatusOr<Value> EvalClamp(DeviceEvaluator& ev, const Instruction& instruction,
                                OperandValues operands);
absl::StatusOr<Value> EvalConvert(DeviceEvaluator& ev, const Instruction& instruction,
                                  OperandValues operands);
// `array` with its elements converted to `to` exactly as the convert op converts them, in a new
// buffer from `ev`.
absl::StatusOr<std::shared_ptr<Literal>> ConvertArray(DeviceEvaluator& ev, const Literal& array,
                                                      PrimitiveType to);
absl::StatusOr<Value> EvalStochasticConvert(DeviceEvaluator& ev, const Instruction& instruction,
                                            OperandValues operands);
// real and imag.
absl::StatusOr<Value> EvalRealImag(DeviceEvaluator& ev, const Instruction& instruction,
                                   OperandValues operands);
absl::StatusOr<Value> EvalBitcastConvert(DeviceEvaluator& ev, const Instruction& instruction,
                                         OperandValues operands);
absl::StatusOr<Value> EvalReducePrecision(DeviceEvaluator& ev, const Instruction& instruction,
                                          OperandValues operands);
absl::StatusOr<Value> EvalIota(DeviceEvaluator& ev, const Instruction& instruction,
                               OperandValues operands);
absl::StatusOr<Value> EvalMap(DeviceEvaluator& ev, const Instruction& instruction,
                              OperandValues operands);
absl::StatusOr<Value> EvalRng(DeviceEvaluator& ev, const Instruction& instruction,
                              OperandValues operands);

// evaluator_shape.cc
absl::StatusOr<Value> EvalBroadcast(DeviceEvaluator& ev, const Instruction& instruction,
                                    OperandValues operands);
absl::StatusOr<Value> EvalReshape(DeviceEvaluator& ev, const Instruction& instruction,
                                  OperandValues operands);
absl::StatusOr<Value> EvalBitcast(DeviceEvaluator& ev, const Instruction& instruction,
                                  OperandValues operands);
absl::StatusOr<Value> EvalTranspose(DeviceEvaluator& ev, const Instruction& instruction,
                                    OperandValues operands);
absl::StatusOr<Value> EvalSlice(DeviceEvaluator& ev, const Instruction& instruction,
                                OperandValues operands);
absl::StatusOr<Value> EvalDynamicSlice(DeviceEvaluator& ev, const Instruction& instruction,
                                       OperandValues operands);
absl::StatusOr<Value> EvalDynamicUpdateSlice(DeviceEvaluator& ev, const Instruction& instruction,
                                             OperandValues operands);
absl::StatusOr<Value> EvalConcatenate(DeviceEvaluator& ev, const Instruction& instruction,
                                      OperandValues operands);
absl::StatusOr<Value> EvalPad(DeviceEvaluator& ev, const Instruction& instruction,
                              OperandValues operands);
absl::StatusOr<Value> EvalReverse(DeviceEvaluator& ev, const Instruction& instruction,
                                  OperandValues operands);

// evaluator_reduce.cc
absl::StatusOr<Value> EvalReduce(DeviceEvaluator& ev, const Instruction& instruction,
                                 OperandValues operands);
absl::StatusOr<Value> EvalReduceWindow(DeviceEvaluator& ev, const Instruction& instruction,
                                       OperandValues operands);
absl::StatusOr<Value> EvalSelectAndScatter(DeviceEvaluator& ev, const Instruction& instruction,
                                           OperandValues operands);

// evaluator_dot.cc
absl::StatusOr<Value> EvalDot(DeviceEvaluator& ev, const Instruction& instruction,
                              OperandValues operands);
absl::StatusOr<Value> EvalRaggedDot(DeviceEvaluator& ev, const Instruction& instruction,
                                    OperandValues operands);

// evaluator_conv.cc
absl::StatusOr<Value> EvalConvolution(DeviceEvaluator& ev, const Instruction& instruction,
                                      OperandValues operands);

// evaluator_data.cc (gather, scatter) and evaluator_sort.cc (sort, topk)
absl::StatusOr<Value> EvalGather(DeviceEvaluator& ev, const Instruction& instruction,
                                 OperandValues operands);
absl::StatusOr<Value> EvalScatter(DeviceEvaluator& ev, const Instruction& instruction,
                                  OperandValues operands);
absl::StatusOr<Value> EvalSort(DeviceEvaluator& ev, const Instruction& instruction,
                               OperandValues operands);
absl::StatusOr<Value> EvalTopK(DeviceEvaluator& ev, const Instruction& instruction,
                               OperandValues operands);
// The (values, indices) tuple of the k largest (or smallest) elements along the last
// dimension; shared with the "TopK" custom call.
absl::StatusOr<Value> TopK(DeviceEvaluator& ev, const Literal& operand, int64_t k, bool largest,
                           PrimitiveType index_type);

// collectives.cc: every collective opcode and its -start form.
absl::StatusOr<Value> EvalCollective(DeviceEvaluator& ev, const Instruction& instruction,
                                     OperandValues operands);
absl::StatusOr<Value> EvalReplicaId(DeviceEvaluator& ev, const Instruction& instruction,
                                    OperandValues operands);
absl::StatusOr<Value> EvalPartitionId(DeviceEvaluator& ev, const Instruction& instruction,
                                      OperandValues operands);

// custom_calls.cc
absl::StatusOr<Value> EvalCustomCall(DeviceEvaluator& ev, const Instruction& instruction,
                                     OperandValues operands);

}  // namespace interp
}  // namespace perfsim

#endif  // PERFSIM_SIM_INTERP_EVALUATOR_H_
