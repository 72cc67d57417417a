// Shard files: what `perfsim sweep --shard i/N --out FILE` writes and `perfsim sweep merge`
// reads. A line format, exact for every double (printed with 17 significant digits):
//
//   perfsim-sweep-shard 1
//   fingerprint 9c3f0b2d41e6a870
//   shard 1/4
//   points 1200
//   planned 300
//   complete true
//   space model: "deepseek_v3"          <- the canonical space text, one "space " line each
//   space ...
//   r INDEX REASON HAS_METRICS STEP TOKENS MFU EXPOSED COMPUTE COMM HBM CAPACITY P0 .. P7 "TILINGS"
//   "MESSAGE"
//   ...
//   end 300
//
// (REASON as InfeasibilityName; P0..P7 the phase seconds in kPredictPhaseNames order; TILINGS
// and MESSAGE C-escaped.) The fingerprint is that of the space text, so a file whose space was
// edited is refused.
//
// Merging checks that every file is a complete shard of the same space (same fingerprint and
// N), that shards 0..N-1 are each present exactly once, and that each holds exactly the points
// its shard owns; errors name the file and line ("b.shard:3:1: expected shard count 4 as in
// a.shard; got 3"). The merged results are sorted by index: the same vector one run over the
// whole space returns, so the rankings and reports are identical.
#ifndef PERFSIM_SIM_SWEEP_SHARD_FILE_H_
#define PERFSIM_SIM_SWEEP_SHARD_FILE_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "sim/sweep/evaluator.h"
#include "sim/sweep/space.h"

namespace perfsim {

struct ShardFile {
  std::string filename;
  std::string fingerprint;
  int64_t shard = 0;
  int64_t shard_count = 1;
  int64_t points = 0;   // in the space
  int64_t planned = 0;  // points of this shard
  bool complete = true;
  std::string space_text;
  std::vector<PointResult> results;
};

std::string WriteShardFile(const SweepEnumeration& e, int64_t shard, int64_t shard_count,
                           const std::vector<PointResult>& results, int64_t planned, bool complete);

// Parses one file; errors are "filename:line:col: expected X; got Y".
absl::StatusOr<ShardFile> ParseShardFile(absl::string_view text, absl::string_view filename);

struct MergedSweep {
  SweepEnumeration enumeration;
  std::vector<PointResult> results;  // every point of the space, ascending index
};

absl::StatusOr<MergedSweep> MergeShards(const std::vector<ShardFile>& shards);

}  // namespace perfsim

#endif  // PERFSIM_SIM_SWEEP_SHARD_FILE_H_
