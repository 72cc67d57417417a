// A small directed acyclic graph over Boost.Graph: the one place perfsim includes Boost.
//
//   Dag g;
//   int router = g.AddNode("router");
//   int experts = g.AddNode("experts");
//   g.AddEdge(router, experts, "ids");
//   PERFSIM_ASSIGN_OR_RETURN(std::vector<int> order, g.TopologicalOrder());
//
// Ties in the topological order are broken by insertion order, so the order is deterministic.
#ifndef PERFSIM_SIM_GRAPH_DAG_H_
#define PERFSIM_SIM_GRAPH_DAG_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace perfsim {

class Dag {
 public:
  Dag();
  ~Dag();
  Dag(Dag&&) noexcept;
  Dag& operator=(Dag&&) noexcept;

  int AddNode(std::string name);
  void AddEdge(int from, int to, std::string label);

  int node_count() const;
  const std::string& name(int node) const;
  // (from, to, label) of every edge, in insertion order.
  struct Edge {
    int from;
    int to;
    std::string label;
  };
  std::vector<Edge> edges() const;
  std::vector<int> predecessors(int node) const;

  // Every node after all its predecessors; FailedPrecondition naming a node on a cycle.
  absl::StatusOr<std::vector<int>> TopologicalOrder() const;
  // The longest path by node weight (weights[node] >= 0), as nodes from source to sink.
  absl::StatusOr<std::vector<int>> CriticalPath(const std::vector<double>& weights) const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace perfsim

#endif  // PERFSIM_SIM_GRAPH_DAG_H_
