// The space of plans `perfsim sweep` evaluates, and its deterministic, indexable enumeration.
//
//   SweepSpace s;                                   // DeepSeek-V3, fwd_bwd, TPU v7x 4x8x8
//   s.axes[kSweepEp] = {64, 128, 256};              // empty list: every divisor
//   s.backends = {"ep_ragged_a2a"};
//   s.routings = {"uniform", "zipf:1.0"};
//   PERFSIM_ASSIGN_OR_RETURN(SweepEnumeration e, SweepEnumeration::Create(s));
//   e.num_points();                                 // blocks × routings
//   PERFSIM_ASSIGN_OR_RETURN(SweepScenario sc, e.ScenarioAt(17));
//
// Dimensions, outermost first: mesh factorisation (dp, fsdp, ep, tp with dp·fsdp·ep·tp = the
// slice's device count, in lexicographic order of (dp, fsdp, ep, tp)), backend (in the order
// given), batch per device, kernel tiling (only for the backends that take tilings; the others
// have one tiling slot), routing. A *block* is everything but the routing: the points of a block
// share one lowered module, so they are consecutive (point = block·R + routing).
//
// Sharding (`--shard i/N`): the *units* of work are the blocks when there are at least N of
// them, else the single points; shard i takes units i, i+N, i+2N, ... (round robin, so every
// shard gets a similar mix of cheap and expensive plans, and a block is lowered by one shard
// only).
//
// Batch per device is MaxText's per_device_batch_size: global batch = b · devices sequences of
// `seq` tokens, so a token shard (dp·fsdp·ep of them) holds b·tp·seq tokens.
//
// Errors (InvalidArgument, exit 2): unknown model, chip, backend or routing; a mesh the chip
// cannot form; an axis value that does not divide the device count; axis lists that admit no
// factorisation; a tiling that is not 3 or 9 positive integers; an empty list; more than
// kMaxSweepPoints points (counted before enumerating).
#ifndef PERFSIM_SIM_SWEEP_SPACE_H_
#define PERFSIM_SIM_SWEEP_SPACE_H_

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "proto/sweep.pb.h"
#include "sim/comm/topology.h"
#include "sim/hw/chip.h"
#include "sim/moe/model_config.h"
#include "sim/moe/routing.h"
#include "sim/moe/step_spec.h"
#include "sim/util/textproto.h"

namespace perfsim {

// The most points a sweep space may have. A point takes milliseconds to evaluate and a few
// hundred bytes to keep, so a million is hours of work and hundreds of MB: larger spaces are
// refused, with their count, before anything is enumerated (split them with narrower lists).
// The default space has 1,760.
inline constexpr int64_t kMaxSweepPoints = 1'000'000;

// Mesh axes in the order of their index in SweepSpace::axes.
enum SweepAxis { kSweepDp = 0, kSweepFsdp = 1, kSweepEp = 2, kSweepTp = 3 };
inline constexpr const char* kSweepAxisNames[4] = {"dp", "fsdp", "ep", "tp"};

struct SweepTiling {
  // Unset: the StepSpec default for that projection.
  std::optional<ProjectionTilings> wi;
  std::optional<ProjectionTilings> wo;
  bool search = false;
};

struct SweepSpace {
  std::string model = "deepseek_v3";
  std::string hw = "tpu_v7x";
  std::string mesh = "4x8x8";
  Phase phase = Phase::kForwardBackward;
  int64_t seq = 4096;
  bool adam = false;
  // Allowed values per axis (SweepAxis order); empty: every divisor of the device count.
  std::array<std::vector<int64_t>, 4> axes;
  std::vector<std::string> backends;  // empty: every backend
  std::vector<int64_t> batch_per_device = {1};
  std::vector<SweepTiling> tilings = {SweepTiling{}};
  std::vector<std::string> routings = {"uniform"};
};

// From a parsed textproto; `source` (may be null) locates problems as file:line:col. Every
// problem is reported at once.
absl::StatusOr<SweepSpace> SweepSpaceFromProto(const SweepSpaceProto& proto,
                                               const TextProtoSource* source);
// Parses textproto text (filename for messages).
absl::StatusOr<SweepSpace> ParseSweepSpace(absl::string_view text, absl::string_view filename);
// The canonical textproto of a space: every field, fixed order, one per line. Parsing it gives
// the same space; shard files carry it and its fingerprint.
std::string CanonicalSweepSpaceText(const SweepSpace& space);
// "3 or 9 comma-separated positive integers" -> tilings (for flags and the proto).
absl::StatusOr<ProjectionTilings> ParseProjectionTilings(const std::vector<int64_t>& values,
                                                         absl::string_view where);
std::string SweepTilingLabel(const SweepTiling& tiling);

// Backends whose lowering reads the kernel tilings (BackendKnobs::wi/wo); the others get one
// tiling slot (tests/sweep check that their modules do not change with the tiling).
bool BackendTakesTilings(absl::string_view backend);

// 64-bit FNV-1a of `text`, as 16 hex digits.
std::string Fingerprint(absl::string_view text);

// OK when the space with these factorisations and backends has at most kMaxSweepPoints
// points; else InvalidArgument with the count and its factors:
//   "sweep space: expected at most 1000000 points; got 17600000000 (220 factorisations x ...)"
absl::Status CheckSweepPointCount(size_t factorisations, const std::vector<std::string>& backends,
                                  const SweepSpace& space);

struct SweepBlock {
  int64_t factorisation = 0;
  int64_t backend = 0;
  int64_t batch = 0;
  int64_t tiling = 0;
};

// One point of the space, ready to evaluate.
struct SweepScenario {
  int64_t index = 0;
  int64_t block = 0;
  int64_t routing = 0;  // index into SweepSpace::routings
  Parallelism parallelism;
  std::string backend;
  int64_t batch_per_device = 0;
  const SweepTiling* tiling = nullptr;
  int64_t tiling_index = 0;
};

class SweepEnumeration {
 public:
  static absl::StatusOr<SweepEnumeration> Create(const SweepSpace& space);

  const SweepSpace& space() const { return space_; }
  const ModelConfig& model() const { return *model_; }
  const Chip& chip() const { return *chip_; }
  const Topology& topology() const { return *topology_; }
  const std::string& mesh() const { return mesh_; }
  int64_t num_devices() const { return topology_->num_devices(); }
  int64_t num_chips() const { return topology_->num_chips(); }
  const std::vector<Parallelism>& factorisations() const { return factorisations_; }
  const std::vector<SweepBlock>& blocks() const { return blocks_; }
  const std::vector<RoutingSpec>& routings() const { return routings_; }
  int64_t num_points() const { return static_cast<int64_t>(blocks_.size() * routings_.size()); }
  // The canonical text and its fingerprint (CanonicalSweepSpaceText, Fingerprint).
  const std::string& canonical_text() const { return canonical_; }
  const std::string& fingerprint() const { return fingerprint_; }

  SweepScenario ScenarioAt(int64_t index) const;
  // The StepSpec of a scenario's block, before any tiling search (tilings from the choice, or
  // the defaults).
  StepSpec SpecOf(const SweepScenario& scenario) const;
  // "dp=2 fsdp=1 ep=256 tp=1 ep_ragged_a2a b=1 default uniform": a point in one line.
  std::string Label(const SweepScenario& scenario) const;

  // Points of shard `shard` of `count` (see the file comment), ascending.
  std::vector<int64_t> ShardPoints(int64_t shard, int64_t count) const;

 private:
  SweepEnumeration() = default;
  SweepSpace space_;
  // Set by Create (optional only because they have no default constructor).
  std::optional<ModelConfig> model_;
  std::optional<Chip> chip_;
  std::optional<Topology> topology_;
  std::string mesh_;
  std::vector<Parallelism> factorisations_;
  std::vector<SweepBlock> blocks_;
  std::vector<RoutingSpec> routings_;
  std::string canonical_;
  std::string fingerprint_;
};

// "i/N" with 0 <= i < N. InvalidArgument otherwise: "--shard: expected i/N with 0 <= i < N;
// got '4/4'".
absl::StatusOr<std::pair<int64_t, int64_t>> ParseShardSpec(absl::string_view text);

}  // namespace perfsim

#endif  // PERFSIM_SIM_SWEEP_SPACE_H_
