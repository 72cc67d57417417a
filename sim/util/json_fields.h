// Reads top-level fields of the small JSON objects HLO text carries in `backend_config`.
//
//   JsonTopLevelIntArray(R"({"tiling":[512,1024,128]})", "tiling")   // {512, 1024, 128}
//   JsonTopLevelInt(R"({"nested":{"n":3},"n":"5"})", "n")            // 5: the top-level one
//   JsonTopLevelValue(R"({"known_trip_count":{"n":"5"}})", "known_trip_count")  // {"n":"5"}
//
// The text may be the braces form `{"a":1}` or the quoted string form `"{\"a\":1}"`. Integers
// may be numbers or quoted strings. A field that is absent, or not of the asked kind, or text
// that is malformed reads as nullopt.
#ifndef PERFSIM_SIM_UTIL_JSON_FIELDS_H_
#define PERFSIM_SIM_UTIL_JSON_FIELDS_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"

namespace perfsim {

// The text of the value of top-level member `key`, whitespace-trimmed: `5`, `"5"`, `[1,2]`,
// `{"n":"5"}`; nullopt when absent.
std::optional<std::string> JsonTopLevelValue(absl::string_view json, absl::string_view key);
std::optional<int64_t> JsonTopLevelInt(absl::string_view json, absl::string_view key);
std::optional<bool> JsonTopLevelBool(absl::string_view json, absl::string_view key);
std::optional<std::vector<int64_t>> JsonTopLevelIntArray(absl::string_view json,
                                                         absl::string_view key);

}  // namespace perfsim

#endif  // PERFSIM_SIM_UTIL_JSON_FIELDS_H_
