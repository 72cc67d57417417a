// Ragged sizes from a routing (ragged_sizes.h).
#include "sim/moe/ragged_sizes.h"

#include <algorithm>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"

namespace perfsim {

absl::StatusOr<RoutingLayout> RoutingLayout::FromProto(const RoutingShape& shape) {
  RoutingLayout l{.num_experts = shape.num_experts(),
                  .experts_per_token = shape.experts_per_token(),
                  .tokens_per_shard = shape.tokens_per_shard(),
                  .token_shards = shape.token_shards(),
                  .ep = shape.ep(),
                  .tp = shape.tp()};
  auto error = [&](const std::string& expected) {
    return absl::InvalidArgumentError(absl::StrCat(
        "routing { num_experts: ", l.num_experts, " experts_per_token: ", l.experts_per_token,
        " tokens_per_shard: ", l.tokens_per_shard, " token_shards: ", l.token_shards, " ep: ", l.ep,
        " tp: ", l.tp, " }: expected ", expected));
  };
  // Bounds first, so that the products below cannot overflow.
  constexpr int64_t kMax = int64_t{1} << 31;
  for (int64_t value : {l.num_experts, l.experts_per_token, l.token_shards, l.ep, l.tp}) {
    if (value < 1 || value > kMax) return error("counts from 1 to 2^31");
  }
  if (l.tokens_per_shard < 0 || l.tokens_per_shard > (int64_t{1} << 40)) {
    return error("tokens_per_shard from 0 to 2^40");
  }
  if (l.experts_per_token > l.num_experts) return error("experts_per_token <= num_experts");
  if (l.num_experts % l.ep != 0) return error("num_experts a multiple of ep");
  if (l.token_shards % l.ep != 0) return error("token_shards a multiple of ep");
  if (l.token_shards * l.tp > kMax) return error("at most 2^31 devices (token_shards · tp)");
  return l;
}

RoutingLayout RoutingLayout::ForStep(const StepSpec& spec) {
  const Parallelism& p = spec.parallelism;
  return RoutingLayout{.num_experts = spec.model.num_experts(),
                       .experts_per_token = spec.model.experts_per_token(),
                       .tokens_per_shard = spec.tokens_per_device(),
                       .token_shards = spec.token_shards(),
                       .ep = p.ep,
                       .tp = p.tp};
}

RoutingShape RoutingLayout::ToProto() const {
  RoutingShape shape;
  shape.set_num_experts(num_experts);
  shape.set_experts_per_token(experts_per_token);
  shape.set_tokens_per_shard(tokens_per_shard);
  shape.set_token_shards(token_shards);
  shape.set_ep(ep);
  shape.set_tp(tp);
  return shape;
}

absl::StatusOr<RoutingMatrix> BuildLayoutRouting(const RoutingSpec& spec,
                                                 const RoutingLayout& layout) {
  return BuildRoutingMatrix(spec, layout.token_shards, layout.tokens_per_shard,
                            layout.experts_per_token, layout.num_experts,
                            /*sources_per_cycle=*/layout.ep);
}

std::vector<int64_t> EpGroupRows(const RoutingMatrix& routing, const RoutingLayout& layout,
                                 int64_t replica) {
  const int64_t e = layout.num_experts, first_shard = replica * layout.ep;
  std::vector<int64_t> rows(e, 0);
  bool one_row = true;
  for (int64_t j = 1; j < layout.ep; ++j) {
    one_row = one_row && routing.row_index(first_shard + j) == routing.row_index(first_shard);
  }
  if (one_row) {
    // Every shard of the replica routes alike (integers: the product is the sum).
    const int64_t* row = routing.row(first_shard);
    for (int64_t g = 0; g < e; ++g) rows[g] = row[g] * layout.ep;
    return rows;
  }
  for (int64_t j = 0; j < layout.ep; ++j) {
    const int64_t* row = routing.row(first_shard + j);
    for (int64_t g = 0; g < e; ++g) rows[g] += row[g];
  }
  return rows;
}

std::optional<std::vector<int64_t>> GroupSizesFromRows(const RaggedSizes& ragged,
                                                       const int64_t* rows, int64_t num_experts,
                                                       int64_t ep_rank) {
  const int64_t e = num_experts;
  const int64_t groups = ragged.group_count();
  if (groups <= 0 || groups > e) return std::nullopt;
  const int64_t a = ragged.align();
  if (a > (int64_t{1} << 31)) return std::nullopt;  // beyond any row count: not a real alignment
  // Offsets are taken mod E: any annotated value, negative included, names an expert.
  const int64_t offset =
      ((ragged.group_offset_per_ep_rank() + ragged.roll_per_ep_rank()) % e + e) % e;
  const int64_t first = ep_rank % e * offset % e;
  std::vector<int64_t> sizes(groups);
  for (int64_t g = 0; g < groups; ++g) sizes[g] = rows[(first + g) % e];
  if (a > 1) {
    for (int64_t& s : sizes) s = (s + a - 1) / a * a;
  }
  return sizes;
}

std::optional<std::vector<int64_t>> RaggedGroupSizes(const RaggedSizes& ragged,
                                                     const RoutingMatrix& routing,
                                                     const RoutingLayout& layout, int64_t device) {
  const int64_t e = layout.num_experts;
  if (device < 0 || device >= layout.num_devices() || routing.experts() != e ||
      routing.sources() != layout.token_shards) {
    return std::nullopt;
  }
  const int64_t shard = layout.ShardOf(device), rank = layout.EpRankOf(device);
  if (ragged.rows() == RaggedSizes::ROWS_DEVICE) {
    return GroupSizesFromRows(ragged, routing.row(shard), e, rank);
  }
  if (ragged.rows() == RaggedSizes::ROWS_EP_GROUP) {
    const std::vector<int64_t> rows = EpGroupRows(routing, layout, shard / layout.ep);
    return GroupSizesFromRows(ragged, rows.data(), e, rank);
  }
  return std::nullopt;  // unspecified (or a value this build does not know)
}

std::vector<int64_t> RaggedExchangeRows(RaggedTransfer::Direction direction,
                                        const std::vector<int64_t>& group,
                                        const RoutingMatrix& routing, const RoutingLayout& layout) {
  const int64_t n = static_cast<int64_t>(group.size());
  const bool to_experts = direction == RaggedTransfer::DIRECTION_TO_EXPERTS;
  if (!to_experts && direction != RaggedTransfer::DIRECTION_FROM_EXPERTS) return {};
  if (routing.experts() != layout.num_experts || routing.sources() != layout.token_shards) {
    return {};
  }
  for (int64_t d : group) {
    if (d < 0 || d >= layout.num_devices()) return {};
  }
  // Rows each member's shard routes to each EP rank's block of experts, once per distinct
  // routing row (the shards of a shared distribution have a few).
  const int64_t el = layout.experts_per_rank();
  // Indices into `blocks`, not pointers: the map moves its values as it grows.
  absl::flat_hash_map<int64_t, size_t> block_of_row;
  std::vector<std::vector<int64_t>> blocks;
  std::vector<size_t> block_of_member(n);
  for (int64_t i = 0; i < n; ++i) {
    const int64_t shard = layout.ShardOf(group[i]);
    auto [it, inserted] = block_of_row.try_emplace(routing.row_index(shard), blocks.size());
    if (inserted) {
      const int64_t* row = routing.row(shard);
      std::vector<int64_t>& block = blocks.emplace_back(layout.ep, 0);
      for (int64_t r = 0; r < layout.ep; ++r) {
        for (int64_t g = 0; g < el; ++g) block[r] += row[r * el + g];
      }
    }
    block_of_member[i] = it->second;
  }
  std::vector<int64_t> rows(n * n);
  for (int64_t i = 0; i < n; ++i) {
    for (int64_t j = 0; j < n; ++j) {
      rows[i * n + j] = to_experts ? blocks[block_of_member[i]][layout.EpRankOf(group[j])]
                                   : blocks[block_of_member[j]][layout.EpRankOf(group[i])];
    }
  }
  return rows;
}

std::vector<int64_t> TruncateGroupSizes(std::vector<int64_t> sizes, int64_t rows) {
  int64_t left = rows;
  for (int64_t& s : sizes) {
    s = std::min(s, left);
    left -= s;
  }
  return sizes;
}

}  // namespace perfsim
