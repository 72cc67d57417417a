// libFuzzer target for the files `perfsim sweep` reads: sweep spaces (proto/sweep.proto
// textproto, sim/sweep/space.h: `--space FILE`) and shard files (sim/sweep/shard_file.h: what
// `perfsim sweep merge` reads). Each input is tried as both.
//
// Space: ParseSweepSpace; an accepted space must print (CanonicalSweepSpaceText) to text that
// parses to the same canonical text, and is then enumerated (SweepEnumeration::Create, the
// shard split, a scenario and its StepSpec). Shard file: ParseShardFile; a file refused only for
// its fingerprint is re-read with the fingerprint of its space lines (so that the fuzzer gets
// past the hash), and an accepted file is merged on its own (MergeShards: re-parses and
// re-enumerates its space and checks the shard's points).
//
// Checked: nothing crashes, hangs or trips a sanitizer; a rejected space is an InvalidArgument
// starting "fuzz.textproto:", a rejected shard file an InvalidArgument starting "fuzz.shard:"
// (or "merge:" for the merge's whole-set errors); enumeration errors are InvalidArgument or
// NotFound (an unknown model or chip). Spaces that name files (a model, chip or routing path)
// are not enumerated, so that the fuzzer never opens paths.
//
//   ./sweep_fuzzer -max_len=4096 fuzz-corpus/sweep
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"
#include "sim/sweep/shard_file.h"
#include "sim/sweep/space.h"

namespace {

// A broken promise of the loader contract: abort so that libFuzzer records the input.
void Require(bool condition, const char* what) {
  if (!condition) {
    fprintf(stderr, "sweep_fuzzer: broken contract: %s\n", what);
    std::abort();
  }
}

void CheckRejection(const absl::Status& status, absl::string_view prefix,
                    absl::string_view other_prefix = "") {
  if (status.code() != absl::StatusCode::kInvalidArgument ||
      !(absl::StartsWith(status.message(), prefix) ||
        (!other_prefix.empty() && absl::StartsWith(status.message(), other_prefix)))) {
    fprintf(stderr, "sweep_fuzzer: rejection: %s\n", status.ToString().c_str());
    std::abort();
  }
}

// Only names of built-in things: a '/' or '.' would make a path that Create opens.
bool SafeName(absl::string_view name) {
  for (char c : name) {
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_')) return false;
  }
  return true;
}

bool Enumerable(const perfsim::SweepSpace& space) {
  if (!SafeName(space.model) || !SafeName(space.hw)) return false;
  for (const std::string& r : space.routings) {
    if (absl::StartsWith(r, "file:")) return false;
  }
  // Bounded work per input: the product of the list lengths (blocks per factorisation).
  const size_t lists = (space.backends.empty() ? 8 : space.backends.size()) *
                       space.batch_per_device.size() * space.tilings.size() *
                       space.routings.size();
  return lists <= 4096;
}

void FuzzSpace(absl::string_view text) {
  absl::StatusOr<perfsim::SweepSpace> space = perfsim::ParseSweepSpace(text, "fuzz.textproto");
  if (!space.ok()) {
    CheckRejection(space.status(), "fuzz.textproto:");
    return;
  }
  const std::string canonical = perfsim::CanonicalSweepSpaceText(*space);
  absl::StatusOr<perfsim::SweepSpace> again = perfsim::ParseSweepSpace(canonical, "canonical");
  Require(again.ok(), "the canonical text parses");
  Require(perfsim::CanonicalSweepSpaceText(*again) == canonical, "canonical text round trip");
  if (!Enumerable(*space)) return;
  absl::StatusOr<perfsim::SweepEnumeration> e = perfsim::SweepEnumeration::Create(*space);
  if (!e.ok()) {
    Require(e.status().code() == absl::StatusCode::kInvalidArgument ||
                e.status().code() == absl::StatusCode::kNotFound,
            "enumeration errors are InvalidArgument or NotFound");
    return;
  }
  Require(e->num_points() > 0, "an enumerated space has points");
  const perfsim::SweepScenario last = e->ScenarioAt(e->num_points() - 1);
  (void)e->Label(last);
  (void)e->SpecOf(last);
  const std::vector<int64_t> points = e->ShardPoints(1, 3);
  for (int64_t p : points) Require(p >= 0 && p < e->num_points(), "shard points in range");
}

void FuzzShard(absl::string_view text) {
  absl::StatusOr<perfsim::ShardFile> file = perfsim::ParseShardFile(text, "fuzz.shard");
  std::string patched;
  constexpr absl::string_view kFingerprintError =
      "fuzz.shard:2:13: expected the fingerprint of the space lines, ";
  if (!file.ok() && absl::StartsWith(file.status().message(), kFingerprintError)) {
    // Put the right fingerprint on line 2 and read again.
    std::vector<std::string> lines = absl::StrSplit(text, '\n');
    std::string space_text;
    for (size_t k = 6; k < lines.size() && absl::StartsWith(lines[k], "space "); ++k) {
      absl::StrAppend(&space_text, lines[k].substr(6), "\n");
    }
    lines[1] = absl::StrCat("fingerprint ", perfsim::Fingerprint(space_text));
    patched = absl::StrJoin(lines, "\n");
    file = perfsim::ParseShardFile(patched, "fuzz.shard");
    Require(file.ok() || !absl::StartsWith(file.status().message(), kFingerprintError),
            "the patched fingerprint matches");
  }
  if (!file.ok()) {
    CheckRejection(file.status(), "fuzz.shard:");
    return;
  }
  Require(file->shard >= 0 && file->shard < file->shard_count, "0 <= shard < N");
  absl::StatusOr<perfsim::SweepSpace> space = perfsim::ParseSweepSpace(file->space_text, "s");
  if (space.ok() && !Enumerable(*space)) return;
  absl::StatusOr<perfsim::MergedSweep> merged = perfsim::MergeShards({*file});
  if (!merged.ok()) {
    if (merged.status().code() == absl::StatusCode::kNotFound) return;  // unknown model or chip
    CheckRejection(merged.status(), "fuzz.shard", "merge:");
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const absl::string_view text(reinterpret_cast<const char*>(data), size);
  FuzzSpace(text);
  FuzzShard(text);
  return 0;
}
