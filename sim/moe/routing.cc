#include "sim/moe/routing.h"

#include <algorithm>
#include <cmath>
#include <map>
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

RoutingMatrix RoutingMatrix::FromRows(std::vector<int64_t> row_of, std::vector<int64_t> rows,
                                      int64_t experts) {
  RoutingMatrix m(0, experts);
  m.row_of_ = std::move(row_of);
  m.counts_ = std::move(rows);
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

// Expected counts summing to `total` proportional to `weights`, each at most `cap` (when
// feasible).
std::vector<double> Shares(std::vector<double> weights, int64_t total, int64_t cap) {
  const int64_t n = static_cast<int64_t>(weights.size());
  std::vector<double> shares(n, 0);
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
      if (!capped[e] && weights[e] / sum * static_cast<double>(remaining) > cap) {
        capped[e] = true;
        shares[e] = static_cast<double>(cap);
        changed = true;
      }
    }
    if (changed) {
      remaining = total;
      for (int64_t e = 0; e < n; ++e) {
        if (capped[e]) remaining -= cap;
      }
      continue;
    }
    for (int64_t e = 0; e < n; ++e) {
      if (!capped[e]) shares[e] = weights[e] / sum * static_cast<double>(remaining);
    }
    break;
  }
  return shares;
}

// Integers summing to `total` proportional to `weights`, each at most `cap` (when feasible):
// the floors of the shares plus one for the largest remainders (ties to the lower expert).
std::vector<int64_t> Apportion(const std::vector<double>& weights, int64_t total, int64_t cap) {
  const std::vector<double> shares = Shares(weights, total, cap);
  const int64_t n = static_cast<int64_t>(shares.size());
  std::vector<int64_t> counts(n, 0);
  std::vector<std::pair<double, int64_t>> remainders;
  int64_t given = 0;
  for (int64_t e = 0; e < n; ++e) {
    counts[e] = std::min<int64_t>(cap, static_cast<int64_t>(std::floor(shares[e])));
    given += counts[e];
    remainders.push_back({-(shares[e] - static_cast<double>(counts[e])), e});
  }
  std::sort(remainders.begin(), remainders.end());
  for (size_t i = 0; given < total && i < remainders.size(); ++i) {
    if (remainders[i].first >= 0) break;  // nothing left to round up
    ++counts[remainders[i].second];
    ++given;
  }
  return counts;
}

// 0 .. n-1 in bit-reversed order: k = 0, 1, 2, ... reversed in the bits of n - 1 (values
// >= n skipped). n = 8: 0, 4, 2, 6, 1, 5, 3, 7. Every prefix is spread evenly over 0 .. n-1.
std::vector<int64_t> BitReversedOrder(int64_t n) {
  int bits = 0;
  while ((int64_t{1} << bits) < n) ++bits;
  std::vector<int64_t> order;
  order.reserve(n);
  for (int64_t k = 0; k < (int64_t{1} << bits); ++k) {
    int64_t reversed = 0;
    for (int b = 0; b < bits; ++b) reversed |= ((k >> b) & 1) << (bits - 1 - b);
    if (reversed < n) order.push_back(reversed);
  }
  return order;
}

// The rows of `sources` sources that share one distribution, exact in expectation per source:
// each source gets the floors of the shares, and the remainder assignments go, source after
// source, to the experts whose count so far lags their expectation most (ties in bit-reversed
// expert order); the sources are dealt to in bit-reversed order. The deficits restart every
// `cycle` sources. Distinct rows are stored once. Uniform, T·K = 64, E = 256, 128 sources: the
// deal visits sources 0, 64, 32, 96, 16, ...; the k-th source dealt to takes the 64 experts
// equal to 0, 2, 1, 3 (mod 4) for k = 0, 1, 2, 3 (mod 4), which makes source s take the
// experts equal to s / 32 (mod 4).
RoutingMatrix RotatedRows(const std::vector<double>& weights, int64_t sources, int64_t total,
                          int64_t cap, int64_t cycle) {
  const std::vector<double> shares = Shares(weights, total, cap);
  const int64_t n = static_cast<int64_t>(shares.size());
  std::vector<int64_t> base(n, 0);
  int64_t extra = total;  // remainder assignments per source
  for (int64_t e = 0; e < n; ++e) {
    base[e] = std::min<int64_t>(cap, static_cast<int64_t>(std::floor(shares[e])));
    extra -= base[e];
  }
  // Fractions in units of 2^-32, so that deficits add exactly and ties are exact; the
  // quantisation error is put on the largest fraction so that they sum to `extra`.
  constexpr double kUnit = 4294967296.0;
  std::vector<int64_t> fraction(n, 0);
  int64_t sum = 0;
  int64_t largest = 0;
  for (int64_t e = 0; e < n; ++e) {
    if (base[e] >= cap) continue;  // at the cap: never one more
    fraction[e] = std::llround((shares[e] - static_cast<double>(base[e])) * kUnit);
    sum += fraction[e];
    if (fraction[e] > fraction[largest]) largest = e;
  }
  const int64_t want = extra * static_cast<int64_t>(kUnit);
  if (extra <= 0 || sum <= 0) return RoutingMatrix::OneRow(sources, std::move(base));
  fraction[largest] += want - sum;
  // Only experts with a fraction are ever due one more: at least extra + 1 of them, since the
  // fractions (each below one) sum to `extra`.
  std::vector<int64_t> eligible;
  for (int64_t e = 0; e < n; ++e) {
    if (fraction[e] > 0) eligible.push_back(e);
  }
  const int64_t picks = std::min<int64_t>(extra, static_cast<int64_t>(eligible.size()));
  // Ties go in bit-reversed expert order (0, E/2, E/4, 3E/4, ... for E a power of two), so
  // that a source's extra assignments spread over the expert shards instead of filling the
  // first ones: T·K = 64 of E = 256 go to every fourth expert, one to each of 64 devices at
  // EP = 128, as random routing would spread them.
  const std::vector<int64_t> spread = BitReversedOrder(n);
  std::vector<int64_t> rank(n, 0);  // position of each expert in the spread order
  for (int64_t i = 0; i < n; ++i) rank[spread[i]] = i;
  std::vector<int64_t> deficit(n, 0);
  std::vector<int64_t> order;
  std::vector<int64_t> row_of(sources, 0);
  std::vector<int64_t> counts;
  std::map<std::vector<int64_t>, int64_t> index_of_row;
  // The sources of a cycle are dealt to in bit-reversed order too: consecutive deals go to
  // sources far apart on the mesh, so that the experts one stretch of the deal skips are
  // skipped by sources all over it, not by one corner (dealt in source order, the busiest link
  // of a decode dispatch moved only every other token; see tests/predict/routing_test.cc).
  const int64_t length = cycle > 0 ? std::min(cycle, sources) : sources;
  const std::vector<int64_t> deal = BitReversedOrder(length);
  for (int64_t first = 0; first < sources; first += length) {
    std::fill(deficit.begin(), deficit.end(), 0);
    for (int64_t position : deal) {
      const int64_t s = first + position;
      if (s >= sources) continue;
      for (int64_t e = 0; e < n; ++e) deficit[e] += fraction[e];
      order = eligible;
      std::partial_sort(
          order.begin(), order.begin() + picks, order.end(), [&](int64_t a, int64_t b) {
            return deficit[a] != deficit[b] ? deficit[a] > deficit[b] : rank[a] < rank[b];
          });
      std::vector<int64_t> row = base;
      for (int64_t i = 0; i < picks; ++i) {
        ++row[order[i]];
        deficit[order[i]] -= static_cast<int64_t>(kUnit);
      }
      auto [it, inserted] = index_of_row.emplace(row, static_cast<int64_t>(index_of_row.size()));
      if (inserted) counts.insert(counts.end(), row.begin(), row.end());
      row_of[s] = it->second;
    }
  }
  return RoutingMatrix::FromRows(std::move(row_of), std::move(counts), n);
}

}  // namespace

absl::StatusOr<std::vector<std::vector<double>>> ParseRoutingFileText(absl::string_view text,
                                                                      absl::string_view filename) {
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
    case RoutingSpec::Kind::kUniform:
      return "uniform";
    case RoutingSpec::Kind::kZipf:
      return absl::StrCat("zipf:", spec.parameter);
    case RoutingSpec::Kind::kHot:
      return absl::StrCat("hot:", spec.parameter);
    case RoutingSpec::Kind::kFile:
      return absl::StrCat("file:", spec.path);
  }
  return "?";
}

absl::StatusOr<RoutingMatrix> BuildRoutingMatrix(const RoutingSpec& spec, int64_t sources,
                                                 int64_t tokens_per_source, int64_t k,
                                                 int64_t experts, int64_t sources_per_cycle) {
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
        return absl::InvalidArgumentError(absl::StrCat(spec.path, ":", r + 1, ":1: expected ",
                                                       experts, " counts (one per expert); got ",
                                                       spec.file_weights[r].size()));
      }
    }
  }
  // A file with one row per source is taken as given, each row rounded on its own; every
  // other distribution is shared by all sources and rounded across them.
  const bool per_source = spec.kind == RoutingSpec::Kind::kFile && spec.file_weights.size() != 1;
  if (!per_source) {
    std::vector<double> w(experts, 1.0);
    switch (spec.kind) {
      case RoutingSpec::Kind::kUniform:
        break;
      case RoutingSpec::Kind::kZipf:
        for (int64_t e = 0; e < experts; ++e) w[e] = std::pow(e + 1.0, -spec.parameter);
        break;
      case RoutingSpec::Kind::kHot:
        for (int64_t e = 0; e < experts; ++e) {
          w[e] = e == 0 ? spec.parameter : (1 - spec.parameter) / std::max<int64_t>(1, experts - 1);
        }
        break;
      case RoutingSpec::Kind::kFile:
        w = spec.file_weights[0];
        break;
    }
    return RotatedRows(w, sources, tokens_per_source * k, tokens_per_source, sources_per_cycle);
  }
  RoutingMatrix m = RoutingMatrix::RowPerSource(sources, experts);
  for (int64_t s = 0; s < sources; ++s) {
    std::vector<int64_t> counts =
        Apportion(spec.file_weights[s], tokens_per_source * k, tokens_per_source);
    std::copy(counts.begin(), counts.end(), m.MutableRow(s));
  }
  return m;
}

}  // namespace perfsim
