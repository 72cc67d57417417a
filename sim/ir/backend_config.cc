// Typed backend_config reading (backend_config.h).
#include "sim/ir/backend_config.h"

#include <string>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "google/protobuf/util/json_util.h"

namespace perfsim {

absl::Status ParseBackendConfig(absl::string_view text, google::protobuf::Message* out) {
  out->Clear();
  std::string json(absl::StripAsciiWhitespace(text));
  if (json.empty()) return absl::OkStatus();
  auto error = [&](absl::string_view why) {
    return absl::InvalidArgumentError(absl::StrCat("expected backend_config JSON for ",
                                                   out->GetDescriptor()->name(), "; got ", text,
                                                   ": ", why));
  };
  if (json.size() >= 2 && json.front() == '"' && json.back() == '"') {
    std::string unescaped, why;
    if (!absl::CUnescape(json.substr(1, json.size() - 2), &unescaped, &why)) return error(why);
    json = std::move(unescaped);
  }
  google::protobuf::util::JsonParseOptions options;
  options.ignore_unknown_fields = true;
  const auto status = google::protobuf::util::JsonStringToMessage(json, out, options);
  if (!status.ok()) {
    // The first line: the parser's next lines repeat a window of the text, which `got` shows.
    const std::string why(status.message());
    return error(why.substr(0, why.find('\n')));
  }
  return absl::OkStatus();
}

absl::Status ReadBackendConfig(const Instruction& instruction, google::protobuf::Message* out) {
  const std::optional<std::string>& config = instruction.attributes().backend_config;
  const absl::Status status = ParseBackendConfig(config.value_or(""), out);
  if (status.ok()) return status;
  return absl::Status(status.code(), absl::StrCat(instruction.name(), ": ", status.message()));
}

std::optional<int64_t> KnownTripCountOf(const Instruction& while_op) {
  WhileBackendConfig config;
  if (!ReadBackendConfig(while_op, &config).ok() || !config.has_known_trip_count() ||
      config.known_trip_count().n() < 0) {
    return std::nullopt;
  }
  return config.known_trip_count().n();
}

}  // namespace perfsim
