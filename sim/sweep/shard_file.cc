#include "sim/sweep/shard_file.h"

#include <algorithm>
#include <map>
#include <utility>

#include "absl/strings/escaping.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "sim/util/status.h"

namespace perfsim {
namespace {

constexpr absl::string_view kMagic = "perfsim-sweep-shard 1";
constexpr int kNumbers = 8 + kNumPredictPhases;

std::string Exact(double v) { return absl::StrFormat("%.17g", v); }

struct Cursor {
  absl::string_view filename;
  int line = 0;

  absl::Status Error(int column, absl::string_view expected, absl::string_view got) const {
    return absl::InvalidArgumentError(
        absl::StrCat(filename, ":", line, ":", column, ": expected ", expected, "; got ", got));
  }
};

// Splits on single spaces, recording each token's 1-based column.
std::vector<std::pair<absl::string_view, int>> Tokens(absl::string_view line, size_t count) {
  std::vector<std::pair<absl::string_view, int>> out;
  size_t at = 0;
  while (at < line.size() && out.size() < count) {
    const size_t end = std::min(line.find(' ', at), line.size());
    out.emplace_back(line.substr(at, end - at), static_cast<int>(at) + 1);
    at = end + 1;
  }
  return out;
}

// A C-escaped string in double quotes starting at line[at]; advances `at` past it.
absl::StatusOr<std::string> Quoted(absl::string_view line, size_t& at, const Cursor& c) {
  if (at >= line.size() || line[at] != '"') {
    return c.Error(static_cast<int>(at) + 1, "a quoted string",
                   at >= line.size() ? "end of line" : absl::StrCat("'", line.substr(at, 10), "'"));
  }
  size_t end = at + 1;
  while (end < line.size() && line[end] != '"') end += line[end] == '\\' ? 2 : 1;
  if (end >= line.size()) return c.Error(static_cast<int>(at) + 1, "a closing quote", "none");
  std::string out;
  std::string error;
  if (!absl::CUnescape(line.substr(at + 1, end - at - 1), &out, &error)) {
    return c.Error(static_cast<int>(at) + 2, "a C-escaped string", error);
  }
  at = end + 1;
  return out;
}

absl::StatusOr<int64_t> Int(absl::string_view text, int column, const Cursor& c) {
  int64_t v = 0;
  if (!absl::SimpleAtoi(text, &v))
    return c.Error(column, "an integer", absl::StrCat("'", text, "'"));
  return v;
}

absl::StatusOr<PointResult> ParseResult(absl::string_view line, const Cursor& c) {
  const auto tokens = Tokens(line, 4 + kNumbers);
  if (tokens.size() < 4 + kNumbers) {
    return c.Error(
        1, absl::StrCat("a result line 'r INDEX REASON HAS_METRICS' and ", kNumbers, " numbers"),
        absl::StrCat(tokens.size(), " fields"));
  }
  PointResult r;
  PERFSIM_ASSIGN_OR_RETURN(r.index, Int(tokens[1].first, tokens[1].second, c));
  absl::StatusOr<Infeasibility> reason = ParseInfeasibility(tokens[2].first);
  if (!reason.ok()) {
    return c.Error(tokens[2].second, "a reason (ok, divisibility, ...)",
                   absl::StrCat("'", tokens[2].first, "'"));
  }
  r.reason = *reason;
  if (tokens[3].first != "0" && tokens[3].first != "1") {
    return c.Error(tokens[3].second, "0 or 1", absl::StrCat("'", tokens[3].first, "'"));
  }
  r.has_metrics = tokens[3].first == "1";
  double numbers[kNumbers];
  for (int k = 0; k < kNumbers; ++k) {
    const auto& [text, column] = tokens[4 + k];
    if (!absl::SimpleAtod(text, &numbers[k])) {
      return c.Error(column, "a number", absl::StrCat("'", text, "'"));
    }
  }
  r.step_seconds = numbers[0];
  r.tokens_per_second_per_chip = numbers[1];
  r.mfu = numbers[2];
  r.exposed_communication_seconds = numbers[3];
  r.compute_busy_seconds = numbers[4];
  r.communication_busy_seconds = numbers[5];
  r.hbm_bytes = numbers[6];
  r.hbm_capacity_bytes = numbers[7];
  for (int p = 0; p < kNumPredictPhases; ++p) r.phase_seconds[p] = numbers[8 + p];
  const auto& last = tokens.back();
  size_t at = static_cast<size_t>(last.second - 1) + last.first.size() + 1;
  PERFSIM_ASSIGN_OR_RETURN(r.tilings, Quoted(line, at, c));
  if (at >= line.size() || line[at] != ' ') {
    return c.Error(static_cast<int>(at) + 1, "a space and the message", "end of line");
  }
  ++at;
  PERFSIM_ASSIGN_OR_RETURN(r.message, Quoted(line, at, c));
  if (at != line.size()) {
    return c.Error(static_cast<int>(at) + 1, "the end of the line",
                   absl::StrCat("'", line.substr(at), "'"));
  }
  return r;
}

}  // namespace

std::string WriteShardFile(const SweepEnumeration& e, int64_t shard, int64_t shard_count,
                           const std::vector<PointResult>& results, int64_t planned,
                           bool complete) {
  std::string out = absl::StrCat(kMagic, "\nfingerprint ", e.fingerprint(), "\nshard ", shard, "/",
                                 shard_count, "\npoints ", e.num_points(), "\nplanned ", planned,
                                 "\ncomplete ", complete ? "true" : "false", "\n");
  for (absl::string_view line : absl::StrSplit(e.canonical_text(), '\n', absl::SkipEmpty())) {
    absl::StrAppend(&out, "space ", line, "\n");
  }
  for (const PointResult& r : results) {
    absl::StrAppend(&out, "r ", r.index, " ", InfeasibilityName(r.reason), " ",
                    r.has_metrics ? 1 : 0, " ", Exact(r.step_seconds), " ",
                    Exact(r.tokens_per_second_per_chip), " ", Exact(r.mfu), " ",
                    Exact(r.exposed_communication_seconds), " ", Exact(r.compute_busy_seconds), " ",
                    Exact(r.communication_busy_seconds), " ", Exact(r.hbm_bytes), " ",
                    Exact(r.hbm_capacity_bytes));
    for (double p : r.phase_seconds) absl::StrAppend(&out, " ", Exact(p));
    absl::StrAppend(&out, " \"", absl::CEscape(r.tilings), "\" \"", absl::CEscape(r.message),
                    "\"\n");
  }
  absl::StrAppend(&out, "end ", results.size(), "\n");
  return out;
}

absl::StatusOr<ShardFile> ParseShardFile(absl::string_view text, absl::string_view filename) {
  ShardFile f;
  f.filename = std::string(filename);
  Cursor c{.filename = filename};
  std::vector<absl::string_view> lines = absl::StrSplit(text, '\n');
  if (!lines.empty() && lines.back().empty()) lines.pop_back();
  size_t k = 0;
  const auto next = [&](absl::string_view key) -> absl::StatusOr<absl::string_view> {
    c.line = static_cast<int>(k) + 1;
    if (k >= lines.size()) return c.Error(1, absl::StrCat("'", key, " ...'"), "end of file");
    absl::string_view line = lines[k++];
    if (!absl::ConsumePrefix(&line, absl::StrCat(key, " "))) {
      return c.Error(1, absl::StrCat("'", key, " ...'"),
                     absl::StrCat("'", line.substr(0, 40), "'"));
    }
    return line;
  };
  c.line = 1;
  if (lines.empty() || lines[0] != kMagic) {
    return c.Error(
        1, absl::StrCat("'", kMagic, "' (a perfsim sweep shard file)"),
        lines.empty() ? "an empty file" : absl::StrCat("'", lines[0].substr(0, 40), "'"));
  }
  k = 1;
  PERFSIM_ASSIGN_OR_RETURN(absl::string_view fingerprint, next("fingerprint"));
  f.fingerprint = std::string(fingerprint);
  PERFSIM_ASSIGN_OR_RETURN(absl::string_view shard, next("shard"));
  absl::StatusOr<std::pair<int64_t, int64_t>> spec = ParseShardSpec(shard);
  if (!spec.ok()) return c.Error(7, "i/N with 0 <= i < N", absl::StrCat("'", shard, "'"));
  f.shard = spec->first;
  f.shard_count = spec->second;
  PERFSIM_ASSIGN_OR_RETURN(absl::string_view points, next("points"));
  PERFSIM_ASSIGN_OR_RETURN(f.points, Int(points, 8, c));
  PERFSIM_ASSIGN_OR_RETURN(absl::string_view planned, next("planned"));
  PERFSIM_ASSIGN_OR_RETURN(f.planned, Int(planned, 9, c));
  PERFSIM_ASSIGN_OR_RETURN(absl::string_view complete, next("complete"));
  if (complete != "true" && complete != "false") {
    return c.Error(10, "true or false", absl::StrCat("'", complete, "'"));
  }
  f.complete = complete == "true";
  while (k < lines.size() && absl::StartsWith(lines[k], "space ")) {
    absl::StrAppend(&f.space_text, lines[k].substr(6), "\n");
    ++k;
  }
  while (k < lines.size() && absl::StartsWith(lines[k], "r ")) {
    c.line = static_cast<int>(k) + 1;
    PERFSIM_ASSIGN_OR_RETURN(PointResult r, ParseResult(lines[k], c));
    f.results.push_back(std::move(r));
    ++k;
  }
  PERFSIM_ASSIGN_OR_RETURN(absl::string_view end, next("end"));
  PERFSIM_ASSIGN_OR_RETURN(int64_t count, Int(end, 5, c));
  if (count != static_cast<int64_t>(f.results.size())) {
    return c.Error(5, absl::StrCat(f.results.size(), " results (the r lines above)"),
                   absl::StrCat(count));
  }
  if (k != lines.size()) {
    c.line = static_cast<int>(k) + 1;
    return c.Error(1, "the end of the file after 'end'",
                   absl::StrCat("'", lines[k].substr(0, 40), "'"));
  }
  if (Fingerprint(f.space_text) != f.fingerprint) {
    c.line = 2;
    return c.Error(13,
                   absl::StrCat("the fingerprint of the space lines, ", Fingerprint(f.space_text)),
                   f.fingerprint);
  }
  return f;
}

absl::StatusOr<MergedSweep> MergeShards(const std::vector<ShardFile>& shards) {
  if (shards.empty()) {
    return absl::InvalidArgumentError("merge: expected at least one shard file; got none");
  }
  const ShardFile& first = shards[0];
  std::map<int64_t, const ShardFile*> by_index;
  for (const ShardFile& s : shards) {
    if (s.fingerprint != first.fingerprint) {
      return absl::InvalidArgumentError(absl::StrCat(
          s.filename, ":2:13: expected the space of ", first.filename, " (fingerprint ",
          first.fingerprint, "); got fingerprint ", s.fingerprint, ", a different space"));
    }
    if (s.shard_count != first.shard_count) {
      return absl::InvalidArgumentError(absl::StrCat(s.filename, ":3:7: expected shard count ",
                                                     first.shard_count, " as in ", first.filename,
                                                     "; got ", s.shard_count));
    }
    if (!s.complete) {
      return absl::InvalidArgumentError(
          absl::StrCat(s.filename, ":6:10: expected a complete shard; got one interrupted after ",
                       s.results.size(), " of ", s.planned, " points (run shard ", s.shard, "/",
                       s.shard_count, " again)"));
    }
    auto [it, inserted] = by_index.emplace(s.shard, &s);
    if (!inserted) {
      return absl::InvalidArgumentError(
          absl::StrCat(s.filename, ":3:7: expected each shard once; got shard ", s.shard, "/",
                       s.shard_count, " again (also in ", it->second->filename, ")"));
    }
  }
  // The shards are distinct and below N, so all are there exactly when there are N of them.
  // Otherwise name the first few missing ones (N is read from a file: it may be 10^18).
  if (static_cast<int64_t>(by_index.size()) != first.shard_count) {
    std::vector<std::string> missing;
    for (int64_t i = 0; i < first.shard_count && missing.size() < 8; ++i) {
      if (!by_index.contains(i)) missing.push_back(absl::StrCat(i, "/", first.shard_count));
    }
    const int64_t more =
        first.shard_count - static_cast<int64_t>(by_index.size() + missing.size());
    return absl::InvalidArgumentError(absl::StrCat(
        "merge: expected all ", first.shard_count, " shards; missing ",
        absl::StrJoin(missing, ", "), more > 0 ? absl::StrCat(" and ", more, " more") : ""));
  }
  absl::StatusOr<SweepSpace> space = ParseSweepSpace(first.space_text, first.filename);
  if (!space.ok()) return space.status();
  absl::StatusOr<SweepEnumeration> e = SweepEnumeration::Create(*space);
  if (!e.ok()) return Annotate(e.status(), first.filename);
  if (e->fingerprint() != first.fingerprint || e->num_points() != first.points) {
    return absl::InvalidArgumentError(
        absl::StrCat(first.filename, ":4:8: expected the space to have ", first.points,
                     " points with fingerprint ", first.fingerprint, " when enumerated again; got ",
                     e->num_points(), " points, fingerprint ", e->fingerprint()));
  }
  MergedSweep merged{.enumeration = std::move(e).value()};
  for (const auto& [index, s] : by_index) {
    const std::vector<int64_t> owned = merged.enumeration.ShardPoints(s->shard, s->shard_count);
    bool same = owned.size() == s->results.size();
    for (size_t k = 0; same && k < owned.size(); ++k) same = owned[k] == s->results[k].index;
    if (!same) {
      return absl::InvalidArgumentError(absl::StrCat(
          s->filename, ": expected the ", owned.size(), " points of shard ", s->shard, "/",
          s->shard_count, " in order; got ", s->results.size(), " points that differ"));
    }
    for (const PointResult& r : s->results) merged.results.push_back(r);
  }
  std::sort(merged.results.begin(), merged.results.end(),
            [](const PointResult& a, const PointResult& b) { return a.index < b.index; });
  return merged;
}

}  // namespace perfsim
