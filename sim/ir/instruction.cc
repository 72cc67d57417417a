#include "absl/strings/string_view.h"
#include "sim/ir/instruction.h"

#include <algorithm>
#include <functional>

#include "absl/strings/str_cat.h"
#include "absl/strings/numbers.h"

namespace perfsim {

std::vector<Computation*> Instruction::called_computations() const {
  std::vector<Computation*> out;
  if (to_apply_ != nullptr) out.push_back(to_apply_);
  out.insert(out.end(), calls_.begin(), calls_.end());
  if (condition_ != nullptr) out.push_back(condition_);
  if (body_ != nullptr) out.push_back(body_);
  if (select_ != nullptr) out.push_back(select_);
  if (scatter_ != nullptr) out.push_back(scatter_);
  out.insert(out.end(), branches_.begin(), branches_.end());
  return out;
}

Instruction* Computation::AddInstruction(std::unique_ptr<Instruction> instruction) {
  Instruction* raw = instruction.get();
  raw->parent_ = this;
  by_name_.emplace(raw->name(), raw);
  instructions_.push_back(std::move(instruction));
  // Parameter numbers are bounded by the instruction count so a huge number in malformed text
  // cannot make us allocate; a number beyond the count so far waits in a min-heap until enough
  // instructions exist (a valid computation's parameters are numbered below its instruction
  // count). Ties pop in text order, so a duplicate number keeps the first. The verifier reports
  // gaps and numbers that never fit.
  const auto heap_order = std::greater<std::pair<int64_t, int64_t>>();
  if (raw->opcode() == Opcode::kParameter && raw->attributes().parameter_number.has_value() &&
      *raw->attributes().parameter_number >= 0) {
    deferred_parameters_.emplace_back(*raw->attributes().parameter_number,
                                      static_cast<int64_t>(instructions_.size()) - 1);
    std::push_heap(deferred_parameters_.begin(), deferred_parameters_.end(), heap_order);
  }
  const int64_t bound = static_cast<int64_t>(instructions_.size());
  while (!deferred_parameters_.empty() && deferred_parameters_.front().first < bound) {
    const auto [number, index] = deferred_parameters_.front();
    std::pop_heap(deferred_parameters_.begin(), deferred_parameters_.end(), heap_order);
    deferred_parameters_.pop_back();
    if (static_cast<int64_t>(parameters_.size()) <= number) parameters_.resize(number + 1, nullptr);
    if (parameters_[number] == nullptr) parameters_[number] = instructions_[index].get();
  }
  return raw;
}

Instruction* Computation::FindInstruction(absl::string_view name) const {
  auto it = by_name_.find(name);
  return it == by_name_.end() ? nullptr : it->second;
}

absl::StatusOr<std::vector<Instruction*>> Computation::PostOrder() const {
  // Iterative DFS with three colours so deep chains cannot overflow the stack.
  enum class Mark : uint8_t { kNew, kActive, kDone };
  absl::flat_hash_map<const Instruction*, Mark> marks;
  marks.reserve(instructions_.size());
  std::vector<Instruction*> order;
  order.reserve(instructions_.size());
  struct Frame {
    Instruction* instruction;
    size_t next_edge;
  };
  std::vector<Frame> stack;
  auto edge = [](const Instruction* i, size_t n) -> Instruction* {
    const size_t operands = i->operands().size();
    return n < operands ? i->operands()[n] : i->control_predecessors()[n - operands];
  };
  auto edge_count = [](const Instruction* i) {
    return i->operands().size() + i->control_predecessors().size();
  };
  for (const auto& start : instructions_) {
    if (marks[start.get()] != Mark::kNew) continue;
    stack.push_back({start.get(), 0});
    marks[start.get()] = Mark::kActive;
    while (!stack.empty()) {
      Frame& top = stack.back();
      if (top.next_edge == edge_count(top.instruction)) {
        marks[top.instruction] = Mark::kDone;
        order.push_back(top.instruction);
        stack.pop_back();
        continue;
      }
      Instruction* next = edge(top.instruction, top.next_edge++);
      Mark& mark = marks[next];
      if (mark == Mark::kActive) {
        return absl::FailedPreconditionError(
            absl::StrCat(next->name(), ": expected an acyclic computation; got a cycle through ",
                         top.instruction->name(), " in computation ", name_));
      }
      if (mark == Mark::kNew) {
        mark = Mark::kActive;
        stack.push_back({next, 0});
      }
    }
  }
  return order;
}

Computation* Module::AddComputation(std::unique_ptr<Computation> computation) {
  Computation* raw = computation.get();
  raw->parent_ = this;
  by_name_.emplace(raw->name(), raw);
  computations_.push_back(std::move(computation));
  return raw;
}

Computation* Module::FindComputation(absl::string_view name) const {
  auto it = by_name_.find(name);
  return it == by_name_.end() ? nullptr : it->second;
}

void Module::set_entry(Computation* entry) {
  if (entry_ != nullptr) entry_->set_is_entry(false);
  entry_ = entry;
  if (entry_ != nullptr) entry_->set_is_entry(true);
}

const std::string* Module::FindHeaderAttribute(absl::string_view key) const {
  for (const auto& [k, v] : header_attributes_) {
    if (k == key) return &v;
  }
  return nullptr;
}

namespace {
int64_t HeaderInt(const Module& module, absl::string_view key) {
  const std::string* value = module.FindHeaderAttribute(key);
  int64_t n = 1;
  if (value == nullptr || !absl::SimpleAtoi(*value, &n) || n < 1) return 1;
  return n;
}
}  // namespace

int64_t Module::replica_count() const { return HeaderInt(*this, "replica_count"); }
int64_t Module::num_partitions() const { return HeaderInt(*this, "num_partitions"); }

absl::StatusOr<std::vector<Computation*>> Module::ComputationPostOrder() const {
  enum class Mark : uint8_t { kNew, kActive, kDone };
  absl::flat_hash_map<const Computation*, Mark> marks;
  std::vector<Computation*> order;
  struct Frame {
    Computation* computation;
    std::vector<Computation*> callees;
    size_t next;
  };
  auto callees_of = [](const Computation* c) {
    std::vector<Computation*> out;
    for (const auto& instruction : c->instructions()) {
      for (Computation* callee : instruction->called_computations()) out.push_back(callee);
    }
    return out;
  };
  for (const auto& start : computations_) {
    if (marks[start.get()] != Mark::kNew) continue;
    std::vector<Frame> stack;
    stack.push_back({start.get(), callees_of(start.get()), 0});
    marks[start.get()] = Mark::kActive;
    while (!stack.empty()) {
      Frame& top = stack.back();
      if (top.next == top.callees.size()) {
        marks[top.computation] = Mark::kDone;
        order.push_back(top.computation);
        stack.pop_back();
        continue;
      }
      Computation* next = top.callees[top.next++];
      Mark& mark = marks[next];
      if (mark == Mark::kActive) {
        return absl::FailedPreconditionError(absl::StrCat(
            next->name(), ": expected a non-recursive call graph; got a call cycle through ",
            top.computation->name()));
      }
      if (mark == Mark::kNew) {
        mark = Mark::kActive;
        stack.push_back({next, callees_of(next), 0});
      }
    }
  }
  return order;
}

int64_t Module::instruction_count() const {
  int64_t n = 0;
  for (const auto& c : computations_) n += c->instruction_count();
  return n;
}

}  // namespace perfsim
