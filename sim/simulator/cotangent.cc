// The incoming cotangent waits for the forward (cotangent.h).
#include "sim/simulator/cotangent.h"

#include <functional>
#include <queue>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "proto/annotation.pb.h"

namespace perfsim {
namespace {

bool InForward(const Instruction& instruction) {
  const Annotation* annotation = instruction.annotation();
  return annotation != nullptr && annotation->phase() == Annotation::PHASE_FORWARD;
}

}  // namespace

std::vector<const Instruction*> ForwardOutputs(const Computation& entry) {
  std::vector<const Instruction*> outputs;
  std::vector<const Instruction*> pending = {entry.root()};
  while (!pending.empty()) {
    const Instruction* value = pending.back();
    pending.pop_back();
    if (value->opcode() == Opcode::kTuple) {
      pending.insert(pending.end(), value->operands().rbegin(), value->operands().rend());
    } else if (InForward(*value)) {
      outputs.push_back(value);
    }
  }
  if (!outputs.empty()) return outputs;
  absl::flat_hash_set<const Instruction*> read_by_forward;
  for (const auto& instruction : entry.instructions()) {
    if (!InForward(*instruction)) continue;
    for (const Instruction* operand : instruction->operands()) read_by_forward.insert(operand);
  }
  for (const auto& instruction : entry.instructions()) {
    if (InForward(*instruction) && !read_by_forward.contains(instruction.get())) {
      outputs.push_back(instruction.get());
    }
  }
  return outputs;
}

std::vector<const Instruction*> CotangentParameters(const Computation& entry) {
  std::vector<const Instruction*> cotangents;
  for (const Instruction* parameter : entry.parameters()) {
    const Annotation* annotation = parameter->annotation();
    if (annotation != nullptr && annotation->role() == Annotation::ROLE_COTANGENT) {
      cotangents.push_back(parameter);
    }
  }
  return cotangents;
}

absl::StatusOr<std::vector<int64_t>> OrderAfterEdges(const std::vector<std::vector<int64_t>>& edges,
                                                     const std::vector<std::string>& names) {
  const int64_t n = static_cast<int64_t>(edges.size());
  std::vector<int64_t> pending(n), user_begin(n + 1, 0);
  for (int64_t i = 0; i < n; ++i) {
    pending[i] = static_cast<int64_t>(edges[i].size());
    for (int64_t o : edges[i]) ++user_begin[o + 1];
  }
  for (int64_t i = 0; i < n; ++i) user_begin[i + 1] += user_begin[i];
  std::vector<int64_t> users(user_begin[n]), fill(user_begin.begin(), user_begin.end() - 1);
  for (int64_t i = 0; i < n; ++i) {
    for (int64_t o : edges[i]) users[fill[o]++] = i;
  }
  std::priority_queue<int64_t, std::vector<int64_t>, std::greater<int64_t>> ready;
  for (int64_t i = 0; i < n; ++i) {
    if (pending[i] == 0) ready.push(i);
  }
  std::vector<int64_t> order;
  order.reserve(n);
  while (!ready.empty()) {
    const int64_t i = ready.top();
    ready.pop();
    order.push_back(i);
    for (int64_t k = user_begin[i]; k < user_begin[i + 1]; ++k) {
      if (--pending[users[k]] == 0) ready.push(users[k]);
    }
  }
  if (static_cast<int64_t>(order.size()) != n) {
    for (int64_t i = 0; i < n; ++i) {
      if (pending[i] == 0) continue;
      return absl::InvalidArgumentError(absl::StrCat(
          names[i],
          ": expected the forward's outputs (the root's forward-phase elements) not to depend "
          "on the cotangent; got a cycle through it"));
    }
  }
  return order;
}

}  // namespace perfsim
