// Routing distributions for prediction: how many token-expert assignments each token shard
// sends to each expert. One matrix drives everything ragged in a step: group sizes per device
// (tile waste in grouped matmuls), all-to-all traffic, and the slowest device.
//
//   PERFSIM_ASSIGN_OR_RETURN(RoutingSpec r, ParseRoutingSpec("zipf:1.2"));
//   RoutingMatrix m = BuildRoutingMatrix(r, /*sources=*/256, /*tokens_per_source=*/4096,
//                                        /*k=*/8, /*experts=*/256);
//   m.at(src, e);   // assignments source shard src sends to expert e; Σ_e = 4096·8
//
// Distributions (expected counts, not samples, so predictions are deterministic):
//   uniform    every expert gets T·K/E from every source
//   zipf:S     p_e ∝ (e + 1)^−S: expert 0 is the hottest, and it lives on expert shard 0, so
//              the skew concentrates on the first devices (the adversarial placement)
//   hot:P      a fraction P of every source's assignments go to expert 0, the rest uniformly
//   file:PATH  a text file: E numbers (tokens per expert, summed over sources: every source
//              gets the same shape), or S lines of E numbers (per source shard); scaled to each
//              source's T·K assignments
// Counts are integers, capped at T per expert and source (a token picks K distinct experts);
// capped excess goes to the other experts in proportion (in equal parts when those all have
// weight 0, so that every source routes T·K). A file line of zeros only is an error.
// Rounding is exact in expectation per source (issue 14): every source of a shared
// distribution (uniform, zipf, hot, a one-line file) gets the floor of each expected count,
// and the remaining assignments are dealt out source after source, each to the experts whose
// count so far lags its expectation most. Ties go in bit-reversed expert order (0, E/2, E/4,
// 3E/4, ...), so that one source's extra assignments spread over the expert shards as random
// routing would, and the sources are dealt to in bit-reversed order (0, S/2, S/4, ...), so that
// the experts one stretch of the deal skips are skipped by sources all over the mesh. Summed
// over sources each expert stays close to its expectation (within one for uniform weights),
// and no source routes to the same few experts just because T·K < E. Uniform, T·K = 64 over
// E = 256 and 128 sources: source s sends one assignment to each expert equal to s / 32
// (mod 4). Each row of a per-source file is rounded on its own by largest remainder (ties to
// the lower expert id).
#ifndef PERFSIM_SIM_MOE_ROUTING_H_
#define PERFSIM_SIM_MOE_ROUTING_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace perfsim {

struct RoutingSpec {
  enum class Kind { kUniform, kZipf, kHot, kFile };
  Kind kind = Kind::kUniform;
  double parameter = 0;  // S for zipf, P for hot
  std::string path;      // file
  // Per-source weights read from the file: one row (shared by all sources) or one per source.
  std::vector<std::vector<double>> file_weights;
};

// "uniform", "zipf:1.2", "hot:0.3", "file:counts.txt". Reads the file. Errors:
// "--routing: expected uniform, zipf:S, hot:P or file:PATH; got 'x'",
// "counts.txt:2:5: expected a non-negative number; got 'abc'".
absl::StatusOr<RoutingSpec> ParseRoutingSpec(absl::string_view text);
std::string RoutingSpecToString(const RoutingSpec& spec);
// The weights of a routing file's text (the file: format above; '#' starts a comment, numbers
// are separated by spaces, tabs or commas, lines without numbers are skipped), one row per line
// that has numbers. ParseRoutingSpec("file:PATH") reads PATH and calls this. InvalidArgument
// "filename:line:col: expected a non-negative number; got 'abc'", or for a file without
// numbers "filename:1:1: expected tokens per expert; got an empty file"; a line of zeros only
// is an error too (nothing to scale).
absl::StatusOr<std::vector<std::vector<double>>> ParseRoutingFileText(absl::string_view text,
                                                                      absl::string_view filename);

// Sources often share rows (the sources of a uniform, zipf or hot routing, or of a one-line
// file, take a few distinct rows in turn): the matrix keeps each distinct row once, so 16384
// sources × 256 experts cost a few rows, not 32 MB.
class RoutingMatrix {
 public:
  // `sources` sources, all on one row of zeros.
  RoutingMatrix(int64_t sources, int64_t experts)
      : experts_(experts), row_of_(sources, 0), counts_(experts, 0) {}
  // `sources` sources, all on `row`.
  static RoutingMatrix OneRow(int64_t sources, std::vector<int64_t> row);
  int64_t sources() const { return static_cast<int64_t>(row_of_.size()); }
  int64_t experts() const { return experts_; }
  int64_t at(int64_t source, int64_t expert) const {
    return counts_[row_of_[source] * experts_ + expert];
  }
  // The counts of one source, `experts()` entries.
  const int64_t* row(int64_t source) const { return &counts_[row_of_[source] * experts_]; }
  // Index of the source's row among the distinct rows: sources with equal indices have equal
  // rows (the converse need not hold).
  int64_t row_index(int64_t source) const { return row_of_[source]; }
  // `sources` sources, each on a row of zeros of its own.
  static RoutingMatrix RowPerSource(int64_t sources, int64_t experts);
  // Source s on row row_of[s] of `rows` (distinct rows × experts, row-major).
  static RoutingMatrix FromRows(std::vector<int64_t> row_of, std::vector<int64_t> rows,
                                int64_t experts);
  // The row of `source` for writing (every source sharing it sees the change).
  int64_t* MutableRow(int64_t source) { return &counts_[row_of_[source] * experts_]; }
  // Σ over sources.
  std::vector<int64_t> ExpertTotals() const;

 private:
  int64_t experts_;
  std::vector<int64_t> row_of_;  // per source
  std::vector<int64_t> counts_;  // distinct rows × experts
};

// InvalidArgument when a file's row count is neither 1 nor `sources` or its width is not
// `experts`, or when K > E. `sources_per_cycle` > 0 restarts the rounding every so many sources
// (the token shards of one expert-parallel group: then every data-parallel replica routes
// alike and each group is exact on its own); 0 runs it over all sources.
absl::StatusOr<RoutingMatrix> BuildRoutingMatrix(const RoutingSpec& spec, int64_t sources,
                                                 int64_t tokens_per_source, int64_t k,
                                                 int64_t experts, int64_t sources_per_cycle = 0);

}  // namespace perfsim

#endif  // PERFSIM_SIM_MOE_ROUTING_H_
