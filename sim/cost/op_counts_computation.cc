// Counting over computations (op_counts_internal.h): XLA's visit order, each computation's sum
// (callees first, remembered), a called computation's flops scaled into its caller (reduce,
// map, sort, scatter, ...), and while and conditional. Split from op_counts.cc, which holds the
// per-instruction rules these sum.
#include <algorithm>
#include <cstddef>
#include <functional>
#include <optional>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "sim/cost/op_counts.h"
#include "sim/cost/op_counts_internal.h"
#include "sim/cost/trip_count.h"

namespace perfsim {
namespace cost_internal {

const UserMap& Counter::Users(const Computation& computation) {
  auto it = users_.find(&computation);
  if (it != users_.end()) return it->second;
  UserMap& users = users_[&computation];
  // A user appends itself while walking its own operands, so a repeat can only be the last
  // entry.
  for (const auto& instruction : computation.instructions()) {
    for (const Instruction* operand : instruction->operands()) {
      std::vector<const Instruction*>& list = users[operand];
      if (list.empty() || list.back() != instruction.get()) list.push_back(instruction.get());
    }
  }
  return users;
}

std::vector<const Instruction*> XlaVisitOrder(const Computation& computation,
                                              const UserMap& users) {
  std::vector<const Instruction*> order;
  order.reserve(computation.instructions().size());
  absl::flat_hash_map<const Instruction*, int> state;  // 1 visiting, 2 visited
  absl::flat_hash_map<const Instruction*, bool> has_control_successor;
  for (const auto& instruction : computation.instructions()) {
    for (const Instruction* p : instruction->control_predecessors()) has_control_successor[p] = true;
  }
  // Iterative post-order DFS, operands in order then control predecessors, as XLA's
  // PostOrderDFS does (it pushes children reversed so the first operand is visited first).
  auto visit = [&](const Instruction* root) {
    std::vector<const Instruction*> stack = {root};
    while (!stack.empty()) {
      const Instruction* current = stack.back();
      int& s = state[current];
      if (s == 2) {
        stack.pop_back();
        continue;
      }
      if (s == 1) {
        stack.pop_back();
        s = 2;
        order.push_back(current);
        continue;
      }
      s = 1;
      const size_t before = stack.size();
      for (const Instruction* operand : current->operands()) {
        auto found = state.find(operand);
        if (found == state.end() || found->second == 0) stack.push_back(operand);
      }
      for (const Instruction* p : current->control_predecessors()) {
        auto found = state.find(p);
        if (found == state.end() || found->second == 0) stack.push_back(p);
      }
      std::reverse(stack.begin() + static_cast<std::ptrdiff_t>(before), stack.end());
    }
  };
  for (const auto& instruction : computation.instructions()) {
    const Instruction* i = instruction.get();
    if (i == computation.root()) continue;
    auto u = users.find(i);
    if ((u == users.end() || u->second.empty()) && !has_control_successor[i]) visit(i);
  }
  if (computation.root() != nullptr) visit(computation.root());
  return order;
}

std::vector<const Computation*> CalleesFirst(
    const Computation& root, const std::function<bool(const Computation*)>& known) {
  std::vector<const Computation*> order;
  absl::flat_hash_map<const Computation*, bool> done;  // false while open
  struct Frame {
    const Computation* computation;
    std::vector<Computation*> callees;
    size_t next = 0;
  };
  auto callees_of = [](const Computation* c) {
    std::vector<Computation*> out;
    for (const auto& instruction : c->instructions()) {
      for (Computation* callee : instruction->called_computations()) {
        if (callee != nullptr) out.push_back(callee);
      }
    }
    return out;
  };
  std::vector<Frame> stack;
  if (known(&root)) return order;
  stack.push_back({&root, callees_of(&root)});
  done[&root] = false;
  while (!stack.empty()) {
    Frame& top = stack.back();
    if (top.next < top.callees.size()) {
      const Computation* callee = top.callees[top.next++];
      if (done.contains(callee) || known(callee)) continue;
      done[callee] = false;
      stack.push_back({callee, callees_of(callee)});
      continue;
    }
    done[top.computation] = true;
    order.push_back(top.computation);
    stack.pop_back();
  }
  return order;
}

OpCounts Counter::Sum(const Computation& computation) {
  auto found = sums_.find(&computation);
  if (found != sums_.end()) return found->second;
  const std::vector<const Computation*> order = CalleesFirst(
      computation, [this](const Computation* c) { return sums_.contains(c); });
  // Placeholders first: a recursive call (unverified modules only) reads zero counts instead
  // of recursing.
  for (const Computation* c : order) sums_.try_emplace(c);
  for (const Computation* c : order) {
    // A fusion's parameters are read through the nested fusions' parameters, which are
    // remembered already (op_counts_fusion.cc).
    for (const Instruction* parameter : c->parameters()) {
      if (parameter != nullptr) FusionParameterReadBytes(*parameter);
    }
    sums_[c] = SumInstructions(*c);
  }
  return sums_[&computation];
}

OpCounts Counter::SumInstructions(const Computation& computation) {
  OpCounts sum;
  for (const Instruction* instruction : XlaVisitOrder(computation, Users(computation))) {
    const OpCounts c = Count(*instruction);
    Add(sum.flops, c.flops);
    Add(sum.transcendentals, c.transcendentals);
    Add(sum.bytes_accessed, c.bytes_accessed);
    if (sum.operand_bytes.size() < c.operand_bytes.size()) {
      sum.operand_bytes.resize(c.operand_bytes.size(), 0.0);
    }
    for (size_t i = 0; i < c.operand_bytes.size(); ++i) Add(sum.operand_bytes[i], c.operand_bytes[i]);
    Add(sum.output_bytes, c.output_bytes);
  }
  return sum;
}

// Copies the flops and transcendentals of `computation`, times `times`, into `counts`
// (XLA's KeyToCopyFromSubcomputation: the byte keys of the callee are not copied).
void Counter::ScaleSubcomputation(const Computation* computation, double times, OpCounts& counts,
                                  bool accumulate) {
  if (computation == nullptr) return;
  const OpCounts sub = Sum(*computation);
  const double flops = R(R(sub.flops) * R(times));
  const double transcendentals = R(R(sub.transcendentals) * R(times));
  if (accumulate) {
    Add(counts.flops, flops);
    Add(counts.transcendentals, transcendentals);
  } else {
    // XLA assigns only the keys the callee has (non-zero); the others keep their value.
    if (sub.flops != 0) counts.flops = flops;
    if (sub.transcendentals != 0) counts.transcendentals = transcendentals;
  }
}

OpCounts Counter::CountWhile(const Instruction& instruction) {
  const OpCounts body = instruction.body() ? Sum(*instruction.body()) : OpCounts{};
  const OpCounts condition = instruction.condition() ? Sum(*instruction.condition()) : OpCounts{};
  double body_times = 1;
  double condition_times = 1;
  if (!xla()) {
    // True cost: the loop runs its body trip-count times and tests its condition once more.
    // XLA counts one iteration even when it knows the trip count. The count is
    // known_trip_count, else the counted-loop pattern of a lowered scan (trip_count.h).
    if (const std::optional<int64_t> trips = StaticTripCount(instruction)) {
      body_times = static_cast<double>(*trips);
      condition_times = static_cast<double>(*trips + 1);
    }
  }
  OpCounts c;
  auto add = [&](const OpCounts& part, double times) {
    Add(c.flops, part.flops * times);
    Add(c.transcendentals, part.transcendentals * times);
    Add(c.bytes_accessed, part.bytes_accessed * times);
    if (c.operand_bytes.size() < part.operand_bytes.size()) {
      c.operand_bytes.resize(part.operand_bytes.size(), 0.0);
    }
    for (size_t i = 0; i < part.operand_bytes.size(); ++i) {
      Add(c.operand_bytes[i], part.operand_bytes[i] * times);
    }
    Add(c.output_bytes, part.output_bytes * times);
  };
  add(body, body_times);
  add(condition, condition_times);
  return c;
}

// XLA: every key is the maximum over the branches (a zero key of a later branch is skipped).
OpCounts Counter::CountConditional(const Instruction& instruction) {
  const std::vector<Computation*>& branches = instruction.branch_computations();
  if (branches.empty() || branches[0] == nullptr) return Default(instruction);
  OpCounts c = Sum(*branches[0]);
  auto take_max = [](double& current, double value) {
    if (value != 0) current = std::max(current, value);
  };
  for (size_t b = 1; b < branches.size(); ++b) {
    if (branches[b] == nullptr) continue;
    const OpCounts branch = Sum(*branches[b]);
    take_max(c.flops, branch.flops);
    take_max(c.transcendentals, branch.transcendentals);
    take_max(c.bytes_accessed, branch.bytes_accessed);
    if (c.operand_bytes.size() < branch.operand_bytes.size()) {
      c.operand_bytes.resize(branch.operand_bytes.size(), 0.0);
    }
    for (size_t i = 0; i < branch.operand_bytes.size(); ++i) {
      take_max(c.operand_bytes[i], branch.operand_bytes[i]);
    }
    take_max(c.output_bytes, branch.output_bytes);
  }
  return c;
}

}  // namespace cost_internal
}  // namespace perfsim
