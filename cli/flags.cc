#include "cli/flags.h"

#include <algorithm>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "sim/util/file_io.h"

namespace perfsim {
namespace {

int64_t EditDistance(const std::string& a, const std::string& b) {
  std::vector<int64_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = static_cast<int64_t>(j);
  for (size_t i = 1; i <= a.size(); ++i) {
    int64_t diagonal = row[0];
    row[0] = static_cast<int64_t>(i);
    for (size_t j = 1; j <= b.size(); ++j) {
      const int64_t above = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = above;
    }
  }
  return row[b.size()];
}

}  // namespace

std::string NearestName(const std::string& name, const std::vector<std::string>& candidates) {
  const int64_t limit = std::max<int64_t>(1, static_cast<int64_t>(name.size()) / 3);
  std::string best;
  int64_t best_distance = limit + 1;
  for (const std::string& candidate : candidates) {
    const int64_t d = EditDistance(name, candidate);
    if (d < best_distance) best_distance = d, best = candidate;
  }
  return best;
}

absl::StatusOr<ParsedFlags> ParseFlags(const std::vector<std::string>& args,
                                       const std::vector<FlagSpec>& specs) {
  ParsedFlags parsed;
  auto find_spec = [&](const std::string& name) -> const FlagSpec* {
    for (const FlagSpec& spec : specs) {
      if (spec.name == name) return &spec;
    }
    return nullptr;
  };
  bool flags_done = false;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& arg = args[i];
    if (flags_done || arg == "-" || !absl::StartsWith(arg, "-")) {
      parsed.positional_.push_back(arg);
      continue;
    }
    if (arg == "--") {
      flags_done = true;
      continue;
    }
    if (arg == "-h") {
      parsed.values_["help"] = "";
      continue;
    }
    std::string body = arg.substr(absl::StartsWith(arg, "--") ? 2 : 1);
    std::string name = body;
    std::string value;
    bool has_inline_value = false;
    if (size_t eq = body.find('='); eq != std::string::npos) {
      name = body.substr(0, eq);
      value = body.substr(eq + 1);
      has_inline_value = true;
    }
    if (name == "help") {
      parsed.values_["help"] = "";
      continue;
    }
    const FlagSpec* spec = find_spec(name);
    if (spec == nullptr) {
      std::vector<std::string> names;
      for (const FlagSpec& known : specs) names.push_back(known.name);
      names.push_back("help");
      if (std::string nearest = NearestName(name, names); !nearest.empty()) {
        return absl::InvalidArgumentError(
            absl::StrCat("unknown flag --", name, "; did you mean --", nearest, "?"));
      }
      std::sort(names.begin(), names.end());
      names.erase(std::unique(names.begin(), names.end()), names.end());
      return absl::InvalidArgumentError(
          absl::StrCat("unknown flag --", name, "; known: --", absl::StrJoin(names, ", --")));
    }
    if (!spec->takes_value) {
      if (has_inline_value) {
        return absl::InvalidArgumentError(
            absl::StrCat("--", name, ": expected no value; got '", value, "'"));
      }
      parsed.values_[name] = "";
      continue;
    }
    if (!has_inline_value) {
      if (i + 1 >= args.size()) {
        return absl::InvalidArgumentError(absl::StrCat("--", name, ": expected a value; got none"));
      }
      value = args[++i];
    }
    parsed.values_[name] = value;
  }
  return parsed;
}

absl::StatusOr<std::string> ReadInput(const std::string& path, std::istream& in) {
  return ReadInputFile(path, in);
}

}  // namespace perfsim
