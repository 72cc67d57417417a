// Instructions, computations and modules of the op IR.
//
//   HloModule moe
//   add { a = f32[] parameter(0)  b = f32[] parameter(1)  ROOT s = f32[] add(a, b) }
//   ENTRY main { x = f32[8,16]{1,0} parameter(0)  ROOT r = f32[8]{0} reduce(x, z), dimensions={1}, to_apply=add ... }
//
// A Module owns its Computations; a Computation owns its Instructions in text order. Operands
// and called computations are plain pointers into the same Module. Instructions carry the
// line:column where the parser found them, so later passes can point at the source.
#ifndef PERFSIM_SIM_IR_INSTRUCTION_H_
#define PERFSIM_SIM_IR_INSTRUCTION_H_

#include "absl/strings/string_view.h"
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "sim/ir/attributes.h"
#include "sim/ir/opcode.h"
#include "sim/ir/shape.h"

namespace perfsim {

class Computation;
class Module;

// Where something was in the source text; line and column are 1-based, 0 when unknown.
struct SourceLocation {
  int line = 0;
  int column = 0;
};

class Instruction {
 public:
  Instruction(Opcode opcode, std::string name, Shape shape)
      : opcode_(opcode), name_(std::move(name)), shape_(std::move(shape)) {}
  Instruction(const Instruction&) = delete;
  Instruction& operator=(const Instruction&) = delete;

  Opcode opcode() const { return opcode_; }
  const std::string& name() const { return name_; }
  void set_name(std::string name) { name_ = std::move(name); }

  // The result shape. For parsed instructions it is the declared shape; the verifier checks
  // it against shape inference.
  const Shape& shape() const { return shape_; }
  Shape* mutable_shape() { return &shape_; }
  void set_shape(Shape shape) { shape_ = std::move(shape); }

  const std::vector<Instruction*>& operands() const { return operands_; }
  Instruction* operand(int64_t i) const { return operands_[i]; }
  int64_t operand_count() const { return static_cast<int64_t>(operands_.size()); }
  void AppendOperand(Instruction* operand) { operands_.push_back(operand); }
  void set_operand(int64_t i, Instruction* operand) { operands_[i] = operand; }

  const InstructionAttributes& attributes() const { return attributes_; }
  InstructionAttributes* mutable_attributes() { return &attributes_; }
  // The typed annotation (proto/annotation.proto); null when the instruction has none.
  const Annotation* annotation() const { return attributes_.annotation.get(); }
  void set_annotation(std::shared_ptr<const Annotation> annotation) {
    attributes_.annotation = std::move(annotation);
  }

  // Called computations by role. Which roles an opcode uses:
  //   to_apply: reduce, reduce-window, reduce-scatter, all-reduce(-start), scatter, sort, map,
  //             call, select-and-scatter's scatter is `scatter`, its select is `select`
  //   calls:    fusion, async-start, custom-call (called_computations=)
  //   condition, body: while
  //   branch_computations: conditional (true_computation/false_computation when
  //             branches_are_true_false)
  Computation* to_apply() const { return to_apply_; }
  void set_to_apply(Computation* c) { to_apply_ = c; }
  const std::vector<Computation*>& calls() const { return calls_; }
  void set_calls(std::vector<Computation*> c) { calls_ = std::move(c); }
  Computation* condition() const { return condition_; }
  void set_condition(Computation* c) { condition_ = c; }
  Computation* body() const { return body_; }
  void set_body(Computation* c) { body_ = c; }
  Computation* select() const { return select_; }
  void set_select(Computation* c) { select_ = c; }
  Computation* scatter() const { return scatter_; }
  void set_scatter(Computation* c) { scatter_ = c; }
  const std::vector<Computation*>& branch_computations() const { return branches_; }
  void set_branch_computations(std::vector<Computation*> b, bool true_false_form) {
    branches_ = std::move(b);
    branches_are_true_false_ = true_false_form;
  }
  bool branches_are_true_false() const { return branches_are_true_false_; }
  // All called computations, in the order of the roles above.
  std::vector<Computation*> called_computations() const;

  // control-predecessors={a, b}
  const std::vector<Instruction*>& control_predecessors() const { return control_predecessors_; }
  void AddControlPredecessor(Instruction* i) { control_predecessors_.push_back(i); }

  Computation* parent() const { return parent_; }
  const SourceLocation& location() const { return location_; }
  void set_location(SourceLocation location) { location_ = location; }

 private:
  friend class Computation;

  Opcode opcode_;
  std::string name_;
  Shape shape_;
  std::vector<Instruction*> operands_;
  InstructionAttributes attributes_;
  Computation* to_apply_ = nullptr;
  std::vector<Computation*> calls_;
  Computation* condition_ = nullptr;
  Computation* body_ = nullptr;
  Computation* select_ = nullptr;
  Computation* scatter_ = nullptr;
  std::vector<Computation*> branches_;
  bool branches_are_true_false_ = false;
  std::vector<Instruction*> control_predecessors_;
  Computation* parent_ = nullptr;
  SourceLocation location_;
};

class Computation {
 public:
  explicit Computation(std::string name) : name_(std::move(name)) {}
  Computation(const Computation&) = delete;
  Computation& operator=(const Computation&) = delete;

  const std::string& name() const { return name_; }
  void set_name(std::string name) { name_ = std::move(name); }

  // Takes ownership; returns the added instruction. Names must be unique within the module
  // (the parser and verifier check it).
  Instruction* AddInstruction(std::unique_ptr<Instruction> instruction);

  // Instructions in text (insertion) order.
  const std::vector<std::unique_ptr<Instruction>>& instructions() const { return instructions_; }
  int64_t instruction_count() const { return static_cast<int64_t>(instructions_.size()); }
  Instruction* FindInstruction(absl::string_view name) const;

  // Parameters ordered by parameter number, whatever order the text declared them in. A gap
  // leaves a nullptr and a duplicate number keeps the first; the verifier reports both.
  const std::vector<Instruction*>& parameters() const { return parameters_; }
  int64_t parameter_count() const { return static_cast<int64_t>(parameters_.size()); }
  Instruction* parameter(int64_t i) const { return parameters_[i]; }

  Instruction* root() const { return root_; }
  void set_root(Instruction* root) { root_ = root; }

  bool is_entry() const { return is_entry_; }
  void set_is_entry(bool is_entry) { is_entry_ = is_entry; }

  // `execution_thread="..."` after the closing brace, kept verbatim; empty when absent.
  const std::string& execution_thread() const { return execution_thread_; }
  void set_execution_thread(std::string t) { execution_thread_ = std::move(t); }

  const SourceLocation& location() const { return location_; }
  void set_location(SourceLocation location) { location_ = location; }

  Module* parent() const { return parent_; }

  // Instructions ordered so that every operand and control predecessor comes before its
  // user. Fails (FailedPrecondition, naming an instruction on the cycle) if there is a cycle.
  absl::StatusOr<std::vector<Instruction*>> PostOrder() const;

 private:
  friend class Module;

  std::string name_;
  std::vector<std::unique_ptr<Instruction>> instructions_;
  absl::flat_hash_map<std::string, Instruction*> by_name_;
  std::vector<Instruction*> parameters_;
  // Parameters whose number is beyond what the instructions so far could fill (text may list
  // parameter(2) before parameter(0)), as (number, index in instructions_): a min-heap,
  // placed as the count grows.
  std::vector<std::pair<int64_t, int64_t>> deferred_parameters_;
  Instruction* root_ = nullptr;
  bool is_entry_ = false;
  std::string execution_thread_;
  SourceLocation location_;
  Module* parent_ = nullptr;
};

class Module {
 public:
  explicit Module(std::string name) : name_(std::move(name)) {}
  Module(const Module&) = delete;
  Module& operator=(const Module&) = delete;

  const std::string& name() const { return name_; }

  Computation* AddComputation(std::unique_ptr<Computation> computation);
  // Computations in text order.
  const std::vector<std::unique_ptr<Computation>>& computations() const { return computations_; }
  Computation* FindComputation(absl::string_view name) const;

  Computation* entry() const { return entry_; }
  void set_entry(Computation* entry);

  // Header attributes after `HloModule name,`, each kept verbatim as key and value text
  // (e.g. {"entry_computation_layout", "{(f32[2]{0})->f32[2]{0}}"}).
  const std::vector<std::pair<std::string, std::string>>& header_attributes() const {
    return header_attributes_;
  }
  void AddHeaderAttribute(std::string key, std::string value) {
    header_attributes_.emplace_back(std::move(key), std::move(value));
  }
  // Value of a header attribute, or nullptr.
  const std::string* FindHeaderAttribute(absl::string_view key) const;

  // XLA's stack-frame index, the `FileNames`, `FunctionNames`, `FileLocations` and
  // `StackFrames` sections printed after the header (metadata's stack_frame_id points into
  // them), kept verbatim for the printer; empty when absent.
  const std::string& stack_frame_index() const { return stack_frame_index_; }
  void set_stack_frame_index(std::string text) { stack_frame_index_ = std::move(text); }

  // replica_count / num_partitions from the header; 1 when absent.
  int64_t replica_count() const;
  int64_t num_partitions() const;

  // Computations ordered callees first. Fails on a recursive call graph.
  absl::StatusOr<std::vector<Computation*>> ComputationPostOrder() const;

  int64_t instruction_count() const;

 private:
  std::string name_;
  std::vector<std::unique_ptr<Computation>> computations_;
  absl::flat_hash_map<std::string, Computation*> by_name_;
  Computation* entry_ = nullptr;
  std::vector<std::pair<std::string, std::string>> header_attributes_;
  std::string stack_frame_index_;
};

}  // namespace perfsim

#endif  // PERFSIM_SIM_IR_INSTRUCTION_H_
