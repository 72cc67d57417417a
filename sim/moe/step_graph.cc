#include "sim/moe/step_graph.h"

namespace perfsim {

absl::string_view StageName(Stage stage) {
  switch (stage) {
    case Stage::kWeightGather: return "weight_gather";
    case Stage::kRouter: return "router";
    case Stage::kPermute: return "permute";
    case Stage::kDispatch: return "dispatch";
    case Stage::kExperts: return "experts";
    case Stage::kCombine: return "combine";
    case Stage::kSharedExpert: return "shared_expert";
    case Stage::kOutput: return "output";
    case Stage::kWeightGatherBwd: return "weight_gather_bwd";
    case Stage::kCombineBwd: return "combine_bwd";
    case Stage::kExpertsBwd: return "experts_bwd";
    case Stage::kDispatchBwd: return "dispatch_bwd";
    case Stage::kPermuteBwd: return "permute_bwd";
    case Stage::kRouterBwd: return "router_bwd";
    case Stage::kSharedExpertBwd: return "shared_expert_bwd";
    case Stage::kGradSync: return "grad_sync";
  }
  return "?";
}

absl::string_view StagePhase(Stage stage) {
  switch (stage) {
    case Stage::kRouter: return "router";
    case Stage::kPermute: return "permute";
    case Stage::kDispatch: return "dispatch";
    case Stage::kWeightGather:
    case Stage::kExperts: return "experts";
    case Stage::kCombine:
    case Stage::kOutput: return "combine";
    case Stage::kSharedExpert: return "shared";
    case Stage::kWeightGatherBwd:
    case Stage::kCombineBwd:
    case Stage::kExpertsBwd:
    case Stage::kDispatchBwd:
    case Stage::kPermuteBwd:
    case Stage::kRouterBwd:
    case Stage::kSharedExpertBwd:
    case Stage::kGradSync: return "backward";
  }
  return "?";
}

StepGraph BuildStepGraph(const StepSpec& spec) {
  StepGraph g;
  auto add = [&](Stage stage) {
    g.stages.push_back(stage);
    return g.dag.AddNode(std::string(StageName(stage)));
  };
  const bool shared = spec.model.num_shared_experts() > 0;
  const bool fsdp = spec.parallelism.fsdp > 1;
  const int gather = fsdp ? add(Stage::kWeightGather) : -1;
  const int router = add(Stage::kRouter);
  const int permute = add(Stage::kPermute);
  const int dispatch = add(Stage::kDispatch);
  const int experts = add(Stage::kExperts);
  const int combine = add(Stage::kCombine);
  const int shared_fwd = shared ? add(Stage::kSharedExpert) : -1;
  const int output = add(Stage::kOutput);
  if (fsdp) {
    g.dag.AddEdge(gather, router, "router_w");
    g.dag.AddEdge(gather, experts, "expert weights");
    if (shared) g.dag.AddEdge(gather, shared_fwd, "shared weights");
  }
  g.dag.AddEdge(router, permute, "ids");
  g.dag.AddEdge(permute, dispatch, "sorted rows, group sizes");
  g.dag.AddEdge(dispatch, experts, "expert rows");
  g.dag.AddEdge(experts, combine, "expert outputs");
  g.dag.AddEdge(router, combine, "combine weights");
  g.dag.AddEdge(combine, output, "y_routed");
  if (shared) g.dag.AddEdge(shared_fwd, output, "y_shared");
  if (spec.phase == Phase::kForward) return g;

  const int gather_bwd = fsdp ? add(Stage::kWeightGatherBwd) : -1;
  const int combine_bwd = add(Stage::kCombineBwd);
  const int experts_bwd = add(Stage::kExpertsBwd);
  const int dispatch_bwd = add(Stage::kDispatchBwd);
  const int permute_bwd = add(Stage::kPermuteBwd);
  const int router_bwd = add(Stage::kRouterBwd);
  const int shared_bwd = shared ? add(Stage::kSharedExpertBwd) : -1;
  const int sync = add(Stage::kGradSync);
  if (fsdp) {
    g.dag.AddEdge(output, gather_bwd, "after the forward");
    g.dag.AddEdge(gather_bwd, experts_bwd, "expert weights");
    g.dag.AddEdge(gather_bwd, router_bwd, "router_w");
    if (shared) g.dag.AddEdge(gather_bwd, shared_bwd, "shared weights");
  }
  g.dag.AddEdge(output, combine_bwd, "dy");
  g.dag.AddEdge(combine_bwd, experts_bwd, "d expert outputs");
  g.dag.AddEdge(experts_bwd, dispatch_bwd, "d expert rows");
  g.dag.AddEdge(dispatch_bwd, permute_bwd, "d sorted rows");
  g.dag.AddEdge(combine_bwd, router_bwd, "d combine weights");
  g.dag.AddEdge(permute_bwd, router_bwd, "dx (experts)");
  g.dag.AddEdge(experts_bwd, sync, "d expert weights");
  g.dag.AddEdge(router_bwd, sync, "d router weights");
  if (shared) {
    g.dag.AddEdge(output, shared_bwd, "dy");
    g.dag.AddEdge(shared_bwd, sync, "d shared weights");
  }
  return g;
}

}  // namespace perfsim
