// backend_config JSON read into typed messages (proto/backend_config.proto) with protobuf's JSON
// parser; the braces form `{"a":1}` and the quoted string form `"{\"a\":1}"` both read.
//
//   WhileBackendConfig w;
//   PERFSIM_RETURN_IF_ERROR(ReadBackendConfig(while_op, &w));   // absent config: w stays empty
//   std::optional<int64_t> n = KnownTripCountOf(while_op);        // 8, or nullopt
#ifndef PERFSIM_SIM_IR_BACKEND_CONFIG_H_
#define PERFSIM_SIM_IR_BACKEND_CONFIG_H_

#include <cstdint>
#include <optional>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "google/protobuf/message.h"
#include "proto/backend_config.pb.h"
#include "sim/ir/instruction.h"

namespace perfsim {

// Parses the instruction's backend_config into `out` (cleared first; unknown fields ignored).
// No backend_config leaves `out` empty and is OK. Malformed JSON, or a field of the wrong type,
// is InvalidArgument "<name>: expected backend_config JSON for <message>; got <text>: <why>".
absl::Status ReadBackendConfig(const Instruction& instruction, google::protobuf::Message* out);

// ReadBackendConfig on backend_config text, for callers whose errors name no instruction (the
// interpreter's custom calls: its evaluator adds the name). Empty text leaves `out` empty;
// otherwise as above, without the "<name>: " prefix:
//   ParseBackendConfig(R"({"tiling":"wide"})", &kernel)
//     -> "expected backend_config JSON for KernelBackendConfig; got {"tiling":"wide"}: ..."
absl::Status ParseBackendConfig(absl::string_view text, google::protobuf::Message* out);

// XLA's known_trip_count.n of a while; nullopt when absent, unreadable or negative.
std::optional<int64_t> KnownTripCountOf(const Instruction& while_op);

}  // namespace perfsim

#endif  // PERFSIM_SIM_IR_BACKEND_CONFIG_H_
