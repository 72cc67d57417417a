#include "sim/moe/routing.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "sim/util/file_io.h"
#include "sim/util/status.h"

namespace perfsim {

std::vector<int64_t> RoutingMatrix::ExpertTotals() const {
  std::vector<int64_t> totals(experts_, 0);
  for (int64_t s = 0; s < sources(); ++s) {
    const int64_t* r = row(s);
    for (int64_t e = 0; e < experts_; ++e) totals[e] += r[e];
  }
  return totals;
}

RoutingMatrix RoutingMatrix::OneRow(int64_t sources, std::vector<int64_t> row) {
  RoutingMatrix m(sources, static_cast<int64_t>(row.size()));
  m.counts_ = std::move(row);
  return m;
}

RoutingMatrix RoutingMatrix::RowPerSource(int64_t sources, int64_t experts) {
  RoutingMatrix m(sources, experts);
  m.counts_.assign(sources * experts, 0);
  for (int64_t s = 0; s < sources; ++s) m.row_of_[s] = s;
  return m;
}

namespace {

absl::Status ReadFile(const std::string& path, RoutingSpec* spec) {
  // A routing file is one line per source device; 64 MiB is far past any real one.
  PERFSIM_ASSIGN_OR_RETURN(std::string text, ReadRegularFile(path, int64_t{64} << 20));
  PERFSIM_ASSIGN_OR_RETURN(spec->file_weights, ParseRoutingFileText(text, path));
  return absl::OkStatus();
}

// Integers summing to `total` proportional to `weights`, each at most `cap` (when feasible).
std::vector<int64_t> Apportion(std::vector<double> weights, int64_t total, int64_t cap) {
  const int64_t n = static_cast<int64_t>(weights.size());
  std::vector<int64_t> counts(n, 0);
  std::vector<bool> capped(n, false);
  int64_t remaining = total;
  // Weights whose sum overflows (two of 1e308) are taken relative to the largest.
  if (!std::isfinite(std::accumulate(weights.begin(), weights.end(), 0.0))) {
    const double largest = *std::max_element(weights.begin(), weights.end());
    for (double& w : weights) w /= largest;
  }
  // Fix experts that would exceed the cap, then spread the rest over the others. When only
  // experts of weight 0 are left (a file's zeros, zipf weights that underflow, or everything
  // else capped) while assignments remain, the rest goes to them in equal parts: a token picks
  // K distinct experts, so every source still routes T·K assignments.
  for (int round = 0; round < n + 2 && remaining > 0; ++round) {
    double sum = 0;
    for (int64_t e = 0; e < n; ++e) {
      if (!capped[e]) sum += weights[e];
    }
    if (sum <= 0) {
      bool any = false;
      for (int64_t e = 0; e < n; ++e) {
        if (!capped[e]) {
          weights[e] = 1;
          any = true;
        }
      }
      if (!any) break;
      continue;
    }
    bool changed = false;
    for (int64_t e = 0; e < n; ++e) {
      if (!capped[e] && weights[e] / sum * remaining > cap) {
        capped[e] = true;
        counts[e] = cap;
        changed = true;
      }
    }
    if (changed) {
      remaining = total;
      for (int64_t e = 0; e < n; ++e) {
        if (capped[e]) remaining -= counts[e];
      }
      continue;
    }
    std::vector<std::pair<double, int64_t>> remainders;
    int64_t given = 0;
    for (int64_t e = 0; e < n; ++e) {
      if (capped[e]) continue;
      const double exact = weights[e] / sum * remaining;
      counts[e] = static_cast<int64_t>(std::floor(exact));
      given += counts[e];
      remainders.push_back({-(exact - counts[e]), e});
    }
    std::sort(remainders.begin(), remainders.end());
    for (size_t i = 0; given < remaining && i < remainders.size(); ++i, ++given) {
      ++counts[remainders[i].second];
    }
    break;
  }
  return counts;
}

}  // namespace

absl::StatusOr<std::vector<std::vector<double>>> ParseRoutingFileText(
    absl::string_view text, absl::string_view filename) {
  std::vector<std::vector<double>> weights;
  int line_number = 0;
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    ++line_number;
    absl::string_view content = line;
    const size_t hash = content.find('#');
    if (hash != absl::string_view::npos) content = content.substr(0, hash);
    std::vector<double> row;
    for (absl::string_view token : absl::StrSplit(content, absl::ByAnyChar(" \t,"))) {
      if (token.empty()) continue;
      const size_t column = static_cast<size_t>(token.data() - line.data()) + 1;
      double value = 0;
      if (!absl::SimpleAtod(token, &value) || value < 0 || !std::isfinite(value)) {
        return absl::InvalidArgumentError(absl::StrCat(filename, ":", line_number, ":", column,
                                                       ": expected a non-negative number; got '",
                                                       token, "'"));
      }
      row.push_back(value);
    }
    if (!row.empty() && *std::max_element(row.begin(), row.end()) == 0) {
      return absl::InvalidArgumentError(
          absl::StrCat(filename, ":", line_number,
                       ":1: expected a line with a positive count (its tokens are spread in "
                       "proportion); got only zeros"));
    }
    if (!row.empty()) weights.push_back(std::move(row));
  }
  if (weights.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat(filename, ":1:1: expected tokens per expert; got an empty file"));
  }
  return weights;
}

absl::StatusOr<RoutingSpec> ParseRoutingSpec(absl::string_view text) {
  RoutingSpec spec;
  auto bad = [&] {
    return absl::InvalidArgumentError(absl::StrCat(
        "--routing: expected uniform, zipf:S (S >= 0), hot:P (0 <= P <= 1) or file:PATH; got '",
        text, "'"));
  };
  if (text == "uniform") return spec;
  if (absl::ConsumePrefix(&text, "file:")) {
    spec.kind = RoutingSpec::Kind::kFile;
    spec.path = std::string(text);
    if (absl::Status s = ReadFile(spec.path, &spec); !s.ok()) return s;
    return spec;
  }
  absl::string_view rest = text;
  if (absl::ConsumePrefix(&rest, "zipf:")) {
    spec.kind = RoutingSpec::Kind::kZipf;
  } else if (absl::ConsumePrefix(&rest, "hot:")) {
    spec.kind = RoutingSpec::Kind::kHot;
  } else {
    return bad();
  }
  if (!absl::SimpleAtod(rest, &spec.parameter) || spec.parameter < 0 ||
      !std::isfinite(spec.parameter) ||
      (spec.kind == RoutingSpec::Kind::kHot && spec.parameter > 1)) {
    return bad();
  }
  return spec;
}

std::string RoutingSpecToString(const RoutingSpec& spec) {
  switch (spec.kind) {
    case RoutingSpec::Kind::kUniform: return "uniform";
    case RoutingSpec::Kind::kZipf: return absl::StrCat("zipf:", spec.parameter);
    case RoutingSpec::Kind::kHot: return absl::StrCat("hot:", spec.parameter);
    case RoutingSpec::Kind::kFile: return absl::StrCat("file:", spec.path);
  }
  return "?";
}

absl::StatusOr<RoutingMatrix> BuildRoutingMatrix(const RoutingSpec& spec, int64_t sources,
                                                 int64_t tokens_per_source, int64_t k,
                                                 int64_t experts) {
  if (k > experts) {
    return absl::InvalidArgumentError(
        absl::StrCat("expected K <= E for routing; got K = ", k, ", E = ", experts));
  }
  if (spec.kind == RoutingSpec::Kind::kFile) {
    const int64_t rows = static_cast<int64_t>(spec.file_weights.size());
    if (rows != 1 && rows != sources) {
      return absl::InvalidArgumentError(absl::StrCat(
          spec.path, ": expected 1 line or one per token shard (", sources, "); got ", rows));
    }
    for (int64_t r = 0; r < rows; ++r) {
      if (static_cast<int64_t>(spec.file_weights[r].size()) != experts) {
        return absl::InvalidArgumentError(absl::StrCat(spec.path, ":", r + 1,
                                                       ":1: expected ", experts,
                                                       " counts (one per expert); got ",
                                                       spec.file_weights[r].size()));
      }
    }
  }
  // One row serves every source unless a file gives one per source.
  const bool per_source =
      spec.kind == RoutingSpec::Kind::kFile && spec.file_weights.size() != 1;
  RoutingMatrix m = per_source ? RoutingMatrix::RowPerSource(sources, experts)
                                : RoutingMatrix(sources, experts);
  for (int64_t s = 0; s < (per_source ? sources : std::min<int64_t>(sources, 1)); ++s) {
    std::vector<double> w(experts, 1.0);
    switch (spec.kind) {
      case RoutingSpec::Kind::kUniform: break;
      case RoutingSpec::Kind::kZipf:
        for (int64_t e = 0; e < experts; ++e) w[e] = std::pow(e + 1.0, -spec.parameter);
        break;
      case RoutingSpec::Kind::kHot:
        for (int64_t e = 0; e < experts; ++e) {
          w[e] = e == 0 ? spec.parameter : (1 - spec.parameter) / std::max<int64_t>(1, experts - 1);
        }
        break;
      case RoutingSpec::Kind::kFile:
        w = spec.file_weights[spec.file_weights.size() == 1 ? 0 : s];
        break;
    }
    std::vector<int64_t> counts = Apportion(w, tokens_per_source * k, tokens_per_source);
    if (!per_source) return RoutingMatrix::OneRow(sources, std::move(counts));
    std::copy(counts.begin(), counts.end(), m.MutableRow(s));
  }
  return m;
}

}  // namespace perfsim
