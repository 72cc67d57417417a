// A small flag parser for perfsim's subcommands.
//
//   absl::StatusOr<ParsedFlags> f = ParseFlags(args, {{"format", true}, {"help", false}});
//   f->Get("format", "table");      // "--format=json" or "--format json"
//   f->Has("help");                 // "--help" or "-h"
//   f->positional();                // everything that is not a flag; "-" means stdin
//
// Unknown flags, a missing value and a value given to a boolean flag are usage errors
// (InvalidArgument) naming the flag; an unknown flag's message suggests the nearest known one
// ("unknown flag --bach; did you mean --batch?") or lists them all. "--" ends flag parsing.
#ifndef PERFSIM_CLI_FLAGS_H_
#define PERFSIM_CLI_FLAGS_H_

#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace perfsim {

struct FlagSpec {
  std::string name;
  bool takes_value;
};

class ParsedFlags {
 public:
  bool Has(const std::string& name) const { return values_.count(name) > 0; }
  std::string Get(const std::string& name, const std::string& fallback = "") const {
    auto it = values_.find(name);
    return it == values_.end() ? fallback : it->second;
  }
  const std::vector<std::string>& positional() const { return positional_; }

 private:
  friend absl::StatusOr<ParsedFlags> ParseFlags(const std::vector<std::string>&,
                                                const std::vector<FlagSpec>&);
  std::map<std::string, std::string> values_;
  std::vector<std::string> positional_;
};

absl::StatusOr<ParsedFlags> ParseFlags(const std::vector<std::string>& args,
                                       const std::vector<FlagSpec>& specs);

// The candidate nearest to `name` by edit distance when it is close enough to be a typo (at
// most a third of the name's length, and at least 1, edits away), else "".
//   NearestName("bach", {"batch", "seq"}) == "batch"
std::string NearestName(const std::string& name, const std::vector<std::string>& candidates);

// Reads a whole regular file, or standard input when path is "-", up to kMaxInputBytes
// (sim/util/file_io.h: directories, devices and larger files are refused by name).
absl::StatusOr<std::string> ReadInput(const std::string& path, std::istream& in);

}  // namespace perfsim

#endif  // PERFSIM_CLI_FLAGS_H_
