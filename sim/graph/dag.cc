#include "sim/graph/dag.h"

#include <algorithm>
#include <queue>

#include "absl/strings/str_cat.h"
#include "boost/graph/adjacency_list.hpp"

namespace perfsim {

struct Dag::Impl {
  struct VertexProps {
    std::string name;
  };
  struct EdgeProps {
    std::string label;
    int order = 0;
  };
  using Graph = boost::adjacency_list<boost::vecS, boost::vecS, boost::bidirectionalS,
                                      VertexProps, EdgeProps>;
  Graph graph;
  int edge_count = 0;
};

Dag::Dag() : impl_(std::make_unique<Impl>()) {}
Dag::~Dag() = default;
Dag::Dag(Dag&&) noexcept = default;
Dag& Dag::operator=(Dag&&) noexcept = default;

int Dag::AddNode(std::string name) {
  return static_cast<int>(boost::add_vertex(Impl::VertexProps{std::move(name)}, impl_->graph));
}

void Dag::AddEdge(int from, int to, std::string label) {
  boost::add_edge(from, to, Impl::EdgeProps{std::move(label), impl_->edge_count++},
                  impl_->graph);
}

int Dag::node_count() const { return static_cast<int>(boost::num_vertices(impl_->graph)); }

const std::string& Dag::name(int node) const { return impl_->graph[node].name; }

std::vector<Dag::Edge> Dag::edges() const {
  std::vector<std::pair<int, Edge>> ordered;
  for (auto [it, end] = boost::edges(impl_->graph); it != end; ++it) {
    ordered.push_back({impl_->graph[*it].order,
                       Edge{static_cast<int>(boost::source(*it, impl_->graph)),
                            static_cast<int>(boost::target(*it, impl_->graph)),
                            impl_->graph[*it].label}});
  }
  std::sort(ordered.begin(), ordered.end(),
            [](const auto& a, const auto& b) { return a.first < b.first; });
  std::vector<Edge> result;
  for (auto& [order, edge] : ordered) result.push_back(std::move(edge));
  return result;
}

std::vector<int> Dag::predecessors(int node) const {
  std::vector<int> result;
  for (auto [it, end] = boost::in_edges(node, impl_->graph); it != end; ++it) {
    result.push_back(static_cast<int>(boost::source(*it, impl_->graph)));
  }
  std::sort(result.begin(), result.end());
  result.erase(std::unique(result.begin(), result.end()), result.end());
  return result;
}

absl::StatusOr<std::vector<int>> Dag::TopologicalOrder() const {
  // Kahn's algorithm with a min-heap on node index: deterministic, insertion order on ties.
  const int n = node_count();
  std::vector<int> in_degree(n, 0);
  for (auto [it, end] = boost::edges(impl_->graph); it != end; ++it) {
    ++in_degree[boost::target(*it, impl_->graph)];
  }
  std::priority_queue<int, std::vector<int>, std::greater<int>> ready;
  for (int v = 0; v < n; ++v) {
    if (in_degree[v] == 0) ready.push(v);
  }
  std::vector<int> order;
  while (!ready.empty()) {
    const int v = ready.top();
    ready.pop();
    order.push_back(v);
    for (auto [it, end] = boost::out_edges(v, impl_->graph); it != end; ++it) {
      const int w = static_cast<int>(boost::target(*it, impl_->graph));
      if (--in_degree[w] == 0) ready.push(w);
    }
  }
  if (static_cast<int>(order.size()) != n) {
    for (int v = 0; v < n; ++v) {
      if (in_degree[v] > 0) {
        return absl::FailedPreconditionError(
            absl::StrCat("expected an acyclic graph; got a cycle through '", name(v), "'"));
      }
    }
  }
  return order;
}

absl::StatusOr<std::vector<int>> Dag::CriticalPath(const std::vector<double>& weights) const {
  auto order_or = TopologicalOrder();
  if (!order_or.ok()) return order_or.status();
  const int n = node_count();
  std::vector<double> finish(n, 0);
  std::vector<int> parent(n, -1);
  for (int v : *order_or) {
    double start = 0;
    for (int u : predecessors(v)) {
      if (finish[u] > start) {
        start = finish[u];
        parent[v] = u;
      }
    }
    finish[v] = start + (v < static_cast<int>(weights.size()) ? weights[v] : 0);
  }
  std::vector<int> path;
  if (n == 0) return path;
  int v = static_cast<int>(std::max_element(finish.begin(), finish.end()) - finish.begin());
  for (; v >= 0; v = parent[v]) path.push_back(v);
  std::reverse(path.begin(), path.end());
  return path;
}

}  // namespace perfsim
