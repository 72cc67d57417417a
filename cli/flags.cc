#include "cli/flags.h"

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "sim/util/file_io.h"

namespace perfsim {

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
      return absl::InvalidArgumentError(absl::StrCat("unknown flag --", name));
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
