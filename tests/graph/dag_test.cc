// sim/graph's Dag (the Boost.Graph wrapper) and sim/moe's StepGraph built on it: orders, ties,
// cycles, critical paths, and the stages each kind of step has.
#include <algorithm>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "sim/graph/dag.h"
#include "sim/moe/model_registry.h"
#include "sim/moe/step_graph.h"

namespace perfsim {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

TEST(DagTest, TopologicalOrderPutsEveryNodeAfterItsPredecessors) {
  // d -> b -> a, d -> c -> a: nodes added in the order a, b, c, d.
  Dag g;
  const int a = g.AddNode("a"), b = g.AddNode("b"), c = g.AddNode("c"), d = g.AddNode("d");
  g.AddEdge(d, b, "db");
  g.AddEdge(b, a, "ba");
  g.AddEdge(d, c, "dc");
  g.AddEdge(c, a, "ca");
  absl::StatusOr<std::vector<int>> order = g.TopologicalOrder();
  ASSERT_TRUE(order.ok()) << order.status();
  // d is the only source; then b and c are both ready and insertion order puts b first.
  EXPECT_THAT(*order, ElementsAre(d, b, c, a));
}

TEST(DagTest, TiesFollowInsertionOrderWhateverTheEdgeOrder) {
  // Three independent nodes and one edge added "backwards": z (2) -> x (0). x waits for z; y
  // (1) is ready from the start and comes before z because it was added before z.
  Dag g;
  const int x = g.AddNode("x"), y = g.AddNode("y"), z = g.AddNode("z");
  g.AddEdge(z, x, "zx");
  absl::StatusOr<std::vector<int>> order = g.TopologicalOrder();
  ASSERT_TRUE(order.ok());
  EXPECT_THAT(*order, ElementsAre(y, z, x));
}

TEST(DagTest, ACycleIsAnErrorNamingANodeOnIt) {
  Dag g;
  const int source = g.AddNode("source"), p = g.AddNode("p"), q = g.AddNode("q");
  g.AddEdge(source, p, "");
  g.AddEdge(p, q, "");
  g.AddEdge(q, p, "");
  absl::StatusOr<std::vector<int>> order = g.TopologicalOrder();
  ASSERT_FALSE(order.ok());
  EXPECT_EQ(order.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(order.status().message(), HasSubstr("expected an acyclic graph; got a cycle"));
  EXPECT_THAT(order.status().message(), HasSubstr("'p'"));
  EXPECT_FALSE(g.CriticalPath({1, 1, 1}).ok());
}

TEST(DagTest, EdgesAndPredecessorsKeepTheirLabelsAndOrder) {
  Dag g;
  const int a = g.AddNode("a"), b = g.AddNode("b"), c = g.AddNode("c");
  g.AddEdge(b, c, "first");
  g.AddEdge(a, c, "second");
  g.AddEdge(a, c, "parallel");  // a second edge between the same nodes
  ASSERT_EQ(g.node_count(), 3);
  EXPECT_EQ(g.name(b), "b");
  const std::vector<Dag::Edge> edges = g.edges();
  ASSERT_EQ(edges.size(), 3u);
  EXPECT_EQ(edges[0].label, "first");
  EXPECT_EQ(edges[0].from, b);
  EXPECT_EQ(edges[1].label, "second");
  EXPECT_EQ(edges[2].label, "parallel");
  // Sorted and without duplicates.
  EXPECT_THAT(g.predecessors(c), ElementsAre(a, b));
  EXPECT_TRUE(g.predecessors(a).empty());
}

TEST(DagTest, CriticalPathIsTheHeaviestChainByNodeWeight) {
  // s -> m1 -> t and s -> m2 -> t; weights s 1, m1 5, m2 3, t 2: the path through m1 weighs 8,
  // the one through m2 weighs 6.
  Dag g;
  const int s = g.AddNode("s"), m1 = g.AddNode("m1"), m2 = g.AddNode("m2"), t = g.AddNode("t");
  g.AddEdge(s, m1, "");
  g.AddEdge(s, m2, "");
  g.AddEdge(m1, t, "");
  g.AddEdge(m2, t, "");
  absl::StatusOr<std::vector<int>> path = g.CriticalPath({1, 5, 3, 2});
  ASSERT_TRUE(path.ok());
  EXPECT_THAT(*path, ElementsAre(s, m1, t));
  // Swapping the middle weights swaps the path.
  path = g.CriticalPath({1, 3, 5, 2});
  ASSERT_TRUE(path.ok());
  EXPECT_THAT(*path, ElementsAre(s, m2, t));
  // A heavy isolated node is a path of its own.
  const int lone = g.AddNode("lone");
  path = g.CriticalPath({1, 5, 3, 2, 100});
  ASSERT_TRUE(path.ok());
  EXPECT_THAT(*path, ElementsAre(lone));
  EXPECT_TRUE(Dag().CriticalPath({}).ok());
}

std::vector<std::string> StageNames(const StepGraph& g) {
  absl::StatusOr<std::vector<int>> order = g.dag.TopologicalOrder();
  EXPECT_TRUE(order.ok()) << order.status();
  std::vector<std::string> names;
  if (!order.ok()) return names;
  for (int node : *order) names.emplace_back(StageName(g.stages[node]));
  return names;
}

StepSpec NanoSpec(Phase phase, Parallelism p) {
  absl::StatusOr<ModelConfig> nano = ResolveModel("nano");
  EXPECT_TRUE(nano.ok()) << nano.status();
  StepSpec spec = StepSpec::Defaults(*nano);
  spec.phase = phase;
  spec.parallelism = p;
  return spec;
}

TEST(StepGraphTest, ForwardStagesInLoweringOrder) {
  // nano has a shared expert and no fsdp here: no weight gathers, no backward.
  StepGraph g = BuildStepGraph(NanoSpec(Phase::kForward, {}));
  EXPECT_EQ(g.dag.node_count(), static_cast<int>(g.stages.size()));
  EXPECT_THAT(StageNames(g), ElementsAre("router", "permute", "dispatch", "experts", "combine",
                                         "shared_expert", "output"));
}

TEST(StepGraphTest, BackwardWithFsdpGathersTwiceAndSyncsLast) {
  StepGraph g = BuildStepGraph(NanoSpec(Phase::kForwardBackward, {.dp = 2, .fsdp = 2}));
  EXPECT_THAT(StageNames(g),
              ElementsAre("weight_gather", "router", "permute", "dispatch", "experts", "combine",
                          "shared_expert", "output", "weight_gather_bwd", "combine_bwd",
                          "experts_bwd", "dispatch_bwd", "permute_bwd", "router_bwd",
                          "shared_expert_bwd", "grad_sync"));
  // The router's backward needs both the combine-weight gradient and dx through the experts.
  int router_bwd = -1, combine_bwd = -1, permute_bwd = -1;
  for (int node = 0; node < g.dag.node_count(); ++node) {
    if (g.stages[node] == Stage::kRouterBwd) router_bwd = node;
    if (g.stages[node] == Stage::kCombineBwd) combine_bwd = node;
    if (g.stages[node] == Stage::kPermuteBwd) permute_bwd = node;
  }
  std::vector<int> preds = g.dag.predecessors(router_bwd);
  EXPECT_NE(std::find(preds.begin(), preds.end(), combine_bwd), preds.end());
  EXPECT_NE(std::find(preds.begin(), preds.end(), permute_bwd), preds.end());
}

TEST(StepGraphTest, NoSharedExpertNoSharedStages) {
  StepSpec spec = NanoSpec(Phase::kForwardBackward, {});
  ModelSpec proto = spec.model.proto();
  proto.set_num_shared_experts(0);
  proto.set_shared_expert_ffn_dim(0);
  absl::StatusOr<ModelConfig> model = ModelConfig::FromProto(proto);
  ASSERT_TRUE(model.ok()) << model.status();
  spec.model = *model;
  EXPECT_THAT(StageNames(BuildStepGraph(spec)),
              ElementsAre("router", "permute", "dispatch", "experts", "combine", "output",
                          "combine_bwd", "experts_bwd", "dispatch_bwd", "permute_bwd",
                          "router_bwd", "grad_sync"));
}

TEST(StepGraphTest, StagePhasesGroupTheReport) {
  EXPECT_EQ(StagePhase(Stage::kWeightGather), "experts");
  EXPECT_EQ(StagePhase(Stage::kOutput), "combine");
  EXPECT_EQ(StagePhase(Stage::kSharedExpert), "shared");
  EXPECT_EQ(StagePhase(Stage::kWeightGatherBwd), "backward");
  EXPECT_EQ(StagePhase(Stage::kGradSync), "backward");
}

}  // namespace
}  // namespace perfsim
