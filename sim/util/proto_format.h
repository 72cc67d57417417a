// Printing config protos for people and for machines.
//
// Field names carry their unit (STYLE rule 2), so a generic printer can say what a number means:
//
//   FormatQuantity("hbm_bytes_per_second", 2.765e12)        -> "2.77 TB/s"
//   FormatQuantity("vmem_bytes_per_core", 67108864)         -> "64 MiB"
//   FormatQuantity("peak_bf16_flops_per_second", 4.59e14)   -> "459 TFLOP/s"
//   FormatQuantity("latency_seconds", 1e-6)                 -> "1 us"
//   FormatQuantity("size_chips", 4)                         -> ""   (a plain count)
//
//   DescribeProtoFields(spec) -> {{"memory.hbm_bytes_per_second", "2.765e+12", "2.77 TB/s"}, ...}
//   ProtoToJson(spec)         -> {"name": "tpu_v5p", "memory": {"hbm_bytes_per_second": 2.765e+12
//   ...
//
// Unlike protobuf's JSON printer, ProtoToJson keeps 64-bit integers as JSON numbers and the
// .proto field names, which is what scripts reading `--format=json` want.
#ifndef PERFSIM_SIM_UTIL_PROTO_FORMAT_H_
#define PERFSIM_SIM_UTIL_PROTO_FORMAT_H_

#include <optional>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "google/protobuf/message.h"
#include "google/protobuf/struct.pb.h"

namespace perfsim {

// A human-readable rendering of `value` in the unit its field name ends with; "" when the name
// carries no unit this function knows (counts, elements, chips) or the value is 0.
std::string FormatQuantity(absl::string_view field_name, double value);

// Shortest decimal text that reads back as exactly `value` ("0.1", "4.59e+14", "1").
std::string FormatDouble(double value);

// Quotes and escapes `text` as a JSON string literal.
std::string JsonString(absl::string_view text);

struct ProtoFieldLine {
  std::string path;   // "interconnect.dimensions[0].size_chips"
  std::string value;  // "4", "2.765e+12", "CHIP_KIND_TPU", "\"tpu_v5p\""
  std::string human;  // FormatQuantity of the value, or ""
};

// One line per scalar field set in `message`, recursing into sub-messages, in field order.
// With `include_unset`, every field of the schema is listed, unset ones with their default
// (0, false, ""), so that "0 = not available" entries show up too.
std::vector<ProtoFieldLine> DescribeProtoFields(const google::protobuf::Message& message,
                                                bool include_unset = false);

// The message as pretty-printed JSON (2-space indent). Every field of the schema is present,
// unset scalars with their default; enums as names; non-finite doubles as null.
std::string ProtoToJson(const google::protobuf::Message& message);

// A --format=json report (proto/report.proto), byte for byte as protobuf's JSON printer writes
// it, with a final newline: the .proto field names, every scalar and repeated field present
// (zeros too), an unset sub-message or `optional` field absent, 64-bit integers as strings,
// non-finite doubles as "NaN" / "Infinity" / "-Infinity". Written by reflection
// (sim/util/report_json.cc), ten times faster than protobuf's printer; a string that is not
// UTF-8 prints its bad bytes as U+FFFD (protobuf's printer drops them).
//
//   io.out << ReportJson(report);   // {"step_seconds": 0.0123, ...} with 1-space indents
std::string ReportJson(const google::protobuf::Message& report);

// A JSON array of reports, each as ReportJson prints it (`hw list`, `models list`).
template <typename Reports>
std::string ReportJsonArray(const Reports& reports) {
  std::string out = "[";
  bool first = true;
  for (const google::protobuf::Message& report : reports) {
    std::string element = ReportJson(report);
    element.pop_back();  // its final newline
    out += first ? "\n" : ",\n";
    out += element;
    first = false;
  }
  return out + "\n]\n";
}

// Report fields that may be missing (google.protobuf.Value): the number, or null for nullopt;
// the text, or null when it is empty.
google::protobuf::Value NumberOrNull(std::optional<double> value);
google::protobuf::Value StringOrNull(absl::string_view text);

}  // namespace perfsim

#endif  // PERFSIM_SIM_UTIL_PROTO_FORMAT_H_
