// libFuzzer target for routing specs and routing files (sim/moe/routing.h), what
// `--routing uniform|zipf:S|hot:P|file:PATH` and a sweep space's `routings` read.
//
// The input is used twice: as the text of a routing file (ParseRoutingFileText, what
// ParseRoutingSpec("file:PATH") calls on the file's contents) and as a spec string
// (ParseRoutingSpec; inputs starting "file:" are skipped so that the fuzzer never opens paths).
// Whatever parses is turned into a routing matrix with small sizes taken from the input (for a
// file: as many experts as its first line has numbers, and 1 or one source per line).
//
// Checked: nothing crashes, hangs or trips a sanitizer; a rejected file is an InvalidArgument
// starting with the file name ("fuzz.routing:"), a rejected spec one starting "--routing:";
// a built matrix keeps the documented contract: every count is in [0, T] (a token picks K
// distinct experts) and every source's counts sum to T·K.
//
//   ./routing_fuzzer -max_len=1024 fuzz-corpus/routing
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>

#include "absl/status/statusor.h"
#include "absl/strings/match.h"
#include "absl/strings/string_view.h"
#include "sim/moe/routing.h"

namespace {

constexpr absl::string_view kFile = "fuzz.routing";

// A broken promise of the loader contract: abort so that libFuzzer records the input.
void Require(bool condition, const char* what) {
  if (!condition) {
    fprintf(stderr, "routing_fuzzer: broken contract: %s\n", what);
    std::abort();
  }
}

void CheckRejection(const absl::Status& status, absl::string_view prefix) {
  Require(status.code() == absl::StatusCode::kInvalidArgument, "rejection is InvalidArgument");
  Require(absl::StartsWith(status.message(), prefix), "rejection names the file");
}

// Sizes from the input's bytes: 1..16 tokens per source, K in 1..E.
void CheckMatrix(const perfsim::RoutingSpec& spec, int64_t sources, int64_t experts,
                 absl::string_view text) {
  const uint8_t a = text.empty() ? 0 : static_cast<uint8_t>(text[0]);
  const uint8_t b = text.size() < 2 ? 0 : static_cast<uint8_t>(text[text.size() - 1]);
  const int64_t tokens = 1 + a % 16;
  const int64_t k = 1 + b % experts;
  absl::StatusOr<perfsim::RoutingMatrix> m =
      perfsim::BuildRoutingMatrix(spec, sources, tokens, k, experts);
  Require(m.ok(), "a well-formed routing builds a matrix");
  Require(m->sources() == sources && m->experts() == experts, "matrix size");
  for (int64_t s = 0; s < sources; ++s) {
    int64_t sum = 0;
    for (int64_t e = 0; e < experts; ++e) {
      const int64_t count = m->at(s, e);
      Require(count >= 0 && count <= tokens, "0 <= count <= T");
      sum += count;
    }
    if (sum != tokens * k) {
      fprintf(stderr, "source %lld: sum %lld != T·K = %lld·%lld\n", static_cast<long long>(s),
              static_cast<long long>(sum), static_cast<long long>(tokens),
              static_cast<long long>(k));
    }
    Require(sum == tokens * k, "each source's counts sum to T·K");
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const absl::string_view text(reinterpret_cast<const char*>(data), size);
  absl::StatusOr<std::vector<std::vector<double>>> weights =
      perfsim::ParseRoutingFileText(text, kFile);
  if (!weights.ok()) {
    CheckRejection(weights.status(), absl::StrCat(kFile, ":"));
  } else {
    const auto& rows = *weights;
    const int64_t experts = static_cast<int64_t>(rows[0].size());
    bool rectangular = true;
    for (const auto& row : rows) rectangular = rectangular && row.size() == rows[0].size();
    if (experts <= 4096 && rectangular) {
      perfsim::RoutingSpec spec;
      spec.kind = perfsim::RoutingSpec::Kind::kFile;
      spec.path = std::string(kFile);
      spec.file_weights = rows;
      CheckMatrix(spec, static_cast<int64_t>(rows.size()), experts, text);
      if (rows.size() == 1) CheckMatrix(spec, 3, experts, text);  // one row for every source
    }
  }
  if (absl::StartsWith(text, "file:")) return 0;
  absl::StatusOr<perfsim::RoutingSpec> spec = perfsim::ParseRoutingSpec(text);
  if (!spec.ok()) {
    CheckRejection(spec.status(), "--routing:");
    return 0;
  }
  const uint8_t c = static_cast<uint8_t>(text[size / 2]);
  CheckMatrix(*spec, 2, 1 + c % 64, text);
  return 0;
}
