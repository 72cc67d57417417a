// The backend-neutral MoE step as a dataflow graph of stages (sim/graph/dag.h):
//
//   router -> permute -> dispatch -> experts -> combine -> output <- shared_expert
//      \_____________________________________/^
//   fwd_bwd adds the reverse: output -> combine_bwd -> experts_bwd -> dispatch_bwd ->
//   permute_bwd -> router_bwd; output -> shared_expert_bwd; and grad_sync after all of them.
//   With fsdp > 1, weight_gather (the weights all-gathered over fsdp) precedes router, experts
//   and shared_expert, and weight_gather_bwd (gathered again after the forward) precedes
//   experts_bwd, router_bwd and shared_expert_bwd.
// Edges are labelled with the tensors that flow (ids, weights, rows, ...). Lowering walks the
// stages in topological order (ties by insertion order: the order of the list above); the cost
// report groups instructions by stage.
#ifndef PERFSIM_SIM_MOE_STEP_GRAPH_H_
#define PERFSIM_SIM_MOE_STEP_GRAPH_H_

#include <vector>

#include "absl/strings/string_view.h"
#include "sim/graph/dag.h"
#include "sim/moe/step_spec.h"

namespace perfsim {

enum class Stage {
  kWeightGather,
  kRouter,
  kPermute,
  kDispatch,
  kExperts,
  kCombine,
  kSharedExpert,
  kOutput,
  kWeightGatherBwd,
  kCombineBwd,
  kExpertsBwd,
  kDispatchBwd,
  kPermuteBwd,
  kRouterBwd,
  kSharedExpertBwd,
  kGradSync,
};

// "weight_gather", "router", "permute", ..., "grad_sync".
absl::string_view StageName(Stage stage);
// The phase the report groups by: router, permute, dispatch, experts, combine, shared,
// backward. The forward weight gather counts as experts (it fetches their weights: most of the
// bytes), the backward one as backward.
absl::string_view StagePhase(Stage stage);

struct StepGraph {
  Dag dag;
  std::vector<Stage> stages;  // stages[node]
};

// The stages `spec` needs: no shared-expert nodes without shared experts, no backward for fwd,
// no weight gathers without fsdp.
StepGraph BuildStepGraph(const StepSpec& spec);

}  // namespace perfsim

#endif  // PERFSIM_SIM_MOE_STEP_GRAPH_H_
