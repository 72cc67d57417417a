// Typed backend_config reading (backend_config.h).
#include "sim/ir/backend_config.h"

#include <string>

#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "google/protobuf/util/json_util.h"

namespace perfsim {

absl::Status ReadBackendConfig(const Instruction& instruction, google::protobuf::Message* out) {
  out->Clear();
  const std::optional<std::string>& config = instruction.attributes().backend_config;
  if (!config.has_value()) return absl::OkStatus();
  std::string json(absl::StripAsciiWhitespace(*config));
  if (json.empty()) return absl::OkStatus();
  auto error = [&](absl::string_view why) {
    return absl::InvalidArgumentError(
        absl::StrCat(instruction.name(), ": expected backend_config JSON for ",
                     out->GetDescriptor()->name(), "; got ", *config, ": ", why));
  };
  if (json.size() >= 2 && json.front() == '"' && json.back() == '"') {
    std::string unescaped, why;
    if (!absl::CUnescape(json.substr(1, json.size() - 2), &unescaped, &why)) return error(why);
    json = std::move(unescaped);
  }
  google::protobuf::util::JsonParseOptions options;
  options.ignore_unknown_fields = true;
  const auto status = google::protobuf::util::JsonStringToMessage(json, out, options);
  if (!status.ok()) return error(std::string(status.message()));
  return absl::OkStatus();
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
