// Ragged sizes from a routing: the rows per group a grouped matmul's group-sizes operand holds
// on a device, and the rows a ragged-all-to-all sends between the devices of its group, both
// from one routing matrix (routing.h) and the annotations that say what the operand holds
// (proto/annotation.proto RaggedSizes, RaggedTransfer, RoutingShape). One place for what
// sim/predict (evaluate.cc ComputeGroupSizes, the ragged traffic) and the model-agnostic
// simulator (sim/simulator) both compute.
//
//   PERFSIM_ASSIGN_OR_RETURN(RoutingLayout layout, RoutingLayout::FromProto(shape));
//   PERFSIM_ASSIGN_OR_RETURN(RoutingMatrix routing, BuildLayoutRouting(spec, layout));
//   std::optional<std::vector<int64_t>> sizes = RaggedGroupSizes(ragged, routing, layout, 3);
//   std::vector<int64_t> rows = RaggedExchangeRows(direction, {0, 1, 2, 3}, routing, layout);
//   rows[i * 4 + j];   // rows member i sends member j (i == j: kept locally)
//
// Example (the hand-derived case of tests/simulator/routing_test.cc): E = 4 experts, K = 1,
// 2 devices, ep = 2 (EP rank r holds experts 2r, 2r+1), routing rows shard 0 = {5, 1, 2, 0},
// shard 1 = {0, 3, 3, 2}:
//   ROWS_DEVICE, group_count 4                         device 1 -> {0, 3, 3, 2}
//   ROWS_EP_GROUP, group_offset_per_ep_rank 2, count 2 device 1 -> experts 2, 3 summed over
//                                                       both shards: {2+3, 0+2} = {5, 2}
//   to experts over {0, 1}: rows = {5+1, 2+0, 0+3, 3+2} = {6, 2, 3, 5}; from experts: the
//   transpose {6, 3, 2, 5}.
#ifndef PERFSIM_SIM_MOE_RAGGED_SIZES_H_
#define PERFSIM_SIM_MOE_RAGGED_SIZES_H_

#include <cstdint>
#include <optional>
#include <vector>

#include "absl/status/statusor.h"
#include "proto/annotation.pb.h"
#include "sim/moe/routing.h"
#include "sim/moe/step_spec.h"

namespace perfsim {

// RoutingShape, checked: where each device's tokens and experts are in the routing matrix.
struct RoutingLayout {
  int64_t num_experts = 1;
  int64_t experts_per_token = 1;
  int64_t tokens_per_shard = 0;
  int64_t token_shards = 1;
  int64_t ep = 1;
  int64_t tp = 1;

  // InvalidArgument "routing: expected ...; got ..." for non-positive counts, K > E, E not a
  // multiple of ep, token_shards not a multiple of ep, or more than 2^31 devices or shards.
  static absl::StatusOr<RoutingLayout> FromProto(const RoutingShape& shape);
  // The layout of perfsim's own lowering of `spec` (the mesh numbering of step_spec.h).
  static RoutingLayout ForStep(const StepSpec& spec);
  RoutingShape ToProto() const;

  int64_t num_devices() const { return token_shards * tp; }
  int64_t experts_per_rank() const { return num_experts / ep; }
  // The routing row of the device's tokens: (d / (ep·tp))·ep + (d / tp) mod ep.
  int64_t ShardOf(int64_t device) const { return device / (ep * tp) * ep + EpRankOf(device); }
  int64_t EpRankOf(int64_t device) const { return device / tp % ep; }
};

// BuildRoutingMatrix(spec, token_shards, tokens_per_shard, K, E, /*sources_per_cycle=*/ep):
// every EP group's shards are rounded together, so each data-parallel replica routes alike.
absl::StatusOr<RoutingMatrix> BuildLayoutRouting(const RoutingSpec& spec,
                                                 const RoutingLayout& layout);

// The group sizes `ragged` says its operand holds on `device`: group g is expert
// (r·group_offset_per_ep_rank + r·roll_per_ep_rank + g) mod E of the device's own routing row
// (ROWS_DEVICE) or of its EP group's rows summed (ROWS_EP_GROUP), r its EP rank, rounded up to
// a multiple of align when align > 1. nullopt when the annotation says nothing usable (rows
// unspecified, group_count outside 1..E, align above 2^31) or the device is outside the layout.
std::optional<std::vector<int64_t>> RaggedGroupSizes(const RaggedSizes& ragged,
                                                     const RoutingMatrix& routing,
                                                     const RoutingLayout& layout, int64_t device);

// RaggedGroupSizes in two steps, for callers that time many devices (sim/simulator): the
// routing rows the annotation draws from (the device's own row, E entries, or EpGroupRows of
// its replica) and the sizes cut from them for the device's EP rank. GroupSizesFromRows is
// nullopt where RaggedGroupSizes is (rows unspecified, group_count outside 1..E, align above
// 2^31); `rows` has num_experts entries.
std::optional<std::vector<int64_t>> GroupSizesFromRows(const RaggedSizes& ragged,
                                                       const int64_t* rows, int64_t num_experts,
                                                       int64_t ep_rank);
// Rows per expert the ep token shards of data-parallel replica `replica` (shards
// replica·ep .. replica·ep + ep − 1) route in all: what ROWS_EP_GROUP draws from.
std::vector<int64_t> EpGroupRows(const RoutingMatrix& routing, const RoutingLayout& layout,
                                 int64_t replica);

// Rows member i of `group` (device ids of the layout) sends member j in a ragged-all-to-all,
// row-major n × n (the diagonal is what a device keeps): towards the experts, the rows shard(i)
// routes to the experts of EpRank(j); back from them, the rows shard(j) routed to those of
// EpRank(i). Empty for DIRECTION_UNSPECIFIED or a device outside the layout.
std::vector<int64_t> RaggedExchangeRows(RaggedTransfer::Direction direction,
                                        const std::vector<int64_t>& group,
                                        const RoutingMatrix& routing, const RoutingLayout& layout);

// A buffer of `rows` rows keeps a prefix of the groups (MaxText's _truncate_matrix): each size
// capped at what is left.
std::vector<int64_t> TruncateGroupSizes(std::vector<int64_t> sizes, int64_t rows);

}  // namespace perfsim

#endif  // PERFSIM_SIM_MOE_RAGGED_SIZES_H_
