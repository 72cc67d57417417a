#include "sim/util/proto_format.h"

#include <cmath>
#include <cstdlib>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "google/protobuf/descriptor.h"
#include "sim/util/status.h"

namespace perfsim {
namespace {

using ::google::protobuf::FieldDescriptor;
using ::google::protobuf::Message;
using ::google::protobuf::Reflection;

// Up to four significant digits, no trailing zeros: 459, 2.765, 0.5.
std::string Short(double value) { return absl::StrFormat("%.4g", value); }

// Picks the largest prefix that keeps the mantissa >= 1.
std::string Scaled(double value, const std::vector<std::pair<double, const char*>>& units) {
  for (const auto& [scale, unit] : units) {
    if (std::fabs(value) >= scale) return absl::StrCat(Short(value / scale), " ", unit);
  }
  const auto& [scale, unit] = units.back();
  return absl::StrCat(Short(value / scale), " ", unit);
}

// Text of element `index` of `field` (-1 for a singular field).
std::string ScalarText(const Message& message, const FieldDescriptor* field, int index, bool json) {
  const Reflection* r = message.GetReflection();
  const bool repeated = index >= 0;
  switch (field->cpp_type()) {
    case FieldDescriptor::CPPTYPE_INT32:
      return absl::StrCat(repeated ? r->GetRepeatedInt32(message, field, index)
                                   : r->GetInt32(message, field));
    case FieldDescriptor::CPPTYPE_INT64:
      return absl::StrCat(repeated ? r->GetRepeatedInt64(message, field, index)
                                   : r->GetInt64(message, field));
    case FieldDescriptor::CPPTYPE_UINT32:
      return absl::StrCat(repeated ? r->GetRepeatedUInt32(message, field, index)
                                   : r->GetUInt32(message, field));
    case FieldDescriptor::CPPTYPE_UINT64:
      return absl::StrCat(repeated ? r->GetRepeatedUInt64(message, field, index)
                                   : r->GetUInt64(message, field));
    case FieldDescriptor::CPPTYPE_DOUBLE:
    case FieldDescriptor::CPPTYPE_FLOAT: {
      const double value = field->cpp_type() == FieldDescriptor::CPPTYPE_DOUBLE
                               ? (repeated ? r->GetRepeatedDouble(message, field, index)
                                           : r->GetDouble(message, field))
                               : (repeated ? r->GetRepeatedFloat(message, field, index)
                                           : r->GetFloat(message, field));
      if (json && !std::isfinite(value)) return "null";
      return FormatDouble(value);
    }
    case FieldDescriptor::CPPTYPE_BOOL:
      return (repeated ? r->GetRepeatedBool(message, field, index) : r->GetBool(message, field))
                 ? "true"
                 : "false";
    case FieldDescriptor::CPPTYPE_ENUM: {
      const std::string& name = repeated ? r->GetRepeatedEnum(message, field, index)->name()
                                         : r->GetEnum(message, field)->name();
      return json ? JsonString(name) : name;
    }
    case FieldDescriptor::CPPTYPE_STRING: {
      const std::string value =
          repeated ? r->GetRepeatedString(message, field, index) : r->GetString(message, field);
      return JsonString(value);
    }
    case FieldDescriptor::CPPTYPE_MESSAGE:
      break;
  }
  return "";
}

double ScalarNumber(const Message& message, const FieldDescriptor* field, int index) {
  return std::strtod(ScalarText(message, field, index, /*json=*/false).c_str(), nullptr);
}

bool IsNumeric(const FieldDescriptor* field) {
  switch (field->cpp_type()) {
    case FieldDescriptor::CPPTYPE_INT32:
    case FieldDescriptor::CPPTYPE_INT64:
    case FieldDescriptor::CPPTYPE_UINT32:
    case FieldDescriptor::CPPTYPE_UINT64:
    case FieldDescriptor::CPPTYPE_DOUBLE:
    case FieldDescriptor::CPPTYPE_FLOAT:
      return true;
    case FieldDescriptor::CPPTYPE_BOOL:
    case FieldDescriptor::CPPTYPE_ENUM:
    case FieldDescriptor::CPPTYPE_STRING:
    case FieldDescriptor::CPPTYPE_MESSAGE:
      return false;
  }
  return false;
}

void Describe(const Message& message, const std::string& prefix, bool include_unset,
              std::vector<ProtoFieldLine>& lines) {
  std::vector<const FieldDescriptor*> fields;
  if (include_unset) {
    for (int i = 0; i < message.GetDescriptor()->field_count(); ++i) {
      fields.push_back(message.GetDescriptor()->field(i));
    }
  } else {
    message.GetReflection()->ListFields(message, &fields);
  }
  for (const FieldDescriptor* field : fields) {
    const std::string path =
        prefix.empty() ? field->name() : absl::StrCat(prefix, ".", field->name());
    const int count = field->is_repeated() ? message.GetReflection()->FieldSize(message, field) : 1;
    for (int i = 0; i < count; ++i) {
      const int index = field->is_repeated() ? i : -1;
      const std::string element_path =
          field->is_repeated() ? absl::StrCat(path, "[", i, "]") : path;
      if (field->cpp_type() == FieldDescriptor::CPPTYPE_MESSAGE) {
        const Message& child = field->is_repeated()
                                   ? message.GetReflection()->GetRepeatedMessage(message, field, i)
                                   : message.GetReflection()->GetMessage(message, field);
        Describe(child, element_path, include_unset, lines);
        continue;
      }
      ProtoFieldLine line{element_path, ScalarText(message, field, index, /*json=*/false), ""};
      if (IsNumeric(field)) {
        line.human = FormatQuantity(field->name(), ScalarNumber(message, field, index));
      }
      lines.push_back(std::move(line));
    }
  }
}

void AppendJson(const Message& message, int depth, std::string& out) {
  const std::string indent(2 * (depth + 1), ' ');
  const Reflection* r = message.GetReflection();
  const auto* descriptor = message.GetDescriptor();
  out += "{";
  for (int f = 0; f < descriptor->field_count(); ++f) {
    const FieldDescriptor* field = descriptor->field(f);
    absl::StrAppend(&out, f == 0 ? "\n" : ",\n", indent, JsonString(field->name()), ": ");
    auto append_element = [&](int index) {
      if (field->cpp_type() != FieldDescriptor::CPPTYPE_MESSAGE) {
        out += ScalarText(message, field, index, /*json=*/true);
      } else if (index >= 0) {
        AppendJson(r->GetRepeatedMessage(message, field, index), depth + 1, out);
      } else {
        AppendJson(r->GetMessage(message, field), depth + 1, out);
      }
    };
    if (!field->is_repeated()) {
      append_element(-1);
      continue;
    }
    const int count = r->FieldSize(message, field);
    out += "[";
    for (int i = 0; i < count; ++i) {
      absl::StrAppend(&out, i == 0 ? "" : ", ");
      append_element(i);
    }
    out += "]";
  }
  absl::StrAppend(&out, descriptor->field_count() == 0 ? "" : "\n", std::string(2 * depth, ' '),
                  "}");
}

}  // namespace

std::string FormatDouble(double value) {
  if (!std::isfinite(value)) return absl::StrFormat("%g", value);
  for (int precision = 1; precision < 17; ++precision) {
    std::string text = absl::StrFormat("%.*g", precision, value);
    if (std::strtod(text.c_str(), nullptr) == value) return text;
  }
  return absl::StrFormat("%.17g", value);
}

std::string FormatQuantity(absl::string_view name, double value) {
  // A zero (unset, "not available") needs no unit; the raw value already says 0.
  if (value == 0) return "";
  if (absl::EndsWith(name, "_flops_per_second")) {
    return Scaled(value, {{1e12, "TFLOP/s"}, {1e9, "GFLOP/s"}});
  }
  if (absl::EndsWith(name, "_ops_per_second")) {
    return Scaled(value, {{1e12, "TOP/s"}, {1e9, "GOP/s"}});
  }
  if (absl::StrContains(name, "bytes_per_second")) {
    return Scaled(value, {{1e12, "TB/s"}, {1e9, "GB/s"}, {1e6, "MB/s"}});
  }
  if (absl::EndsWith(name, "_per_second")) {
    return Scaled(value, {{1e12, "T/s"}, {1e9, "G/s"}, {1e6, "M/s"}});
  }
  if (absl::EndsWith(name, "_bytes") || absl::StrContains(name, "_bytes_per_") ||
      absl::StartsWith(name, "bytes")) {
    return Scaled(
        value,
        {{1024.0 * 1024 * 1024, "GiB"}, {1024.0 * 1024, "MiB"}, {1024.0, "KiB"}, {1.0, "B"}});
  }
  if (absl::EndsWith(name, "_seconds")) {
    return Scaled(value, {{1.0, "s"}, {1e-3, "ms"}, {1e-6, "us"}, {1e-9, "ns"}});
  }
  if (absl::EndsWith(name, "_fraction_of_peak")) {
    return absl::StrCat(Short(100 * value), "% of peak");
  }
  return "";
}

std::string JsonString(absl::string_view text) {
  std::string out = "\"";
  for (const char c : text) {
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\t':
        out += "\\t";
        break;
      case '\r':
        out += "\\r";
        break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          out += absl::StrFormat("\\u%04x", static_cast<int>(c));
        } else {
          out += c;
        }
    }
  }
  out += "\"";
  return out;
}

std::vector<ProtoFieldLine> DescribeProtoFields(const Message& message, bool include_unset) {
  std::vector<ProtoFieldLine> lines;
  Describe(message, "", include_unset, lines);
  return lines;
}

std::string ProtoToJson(const Message& message) {
  std::string out;
  AppendJson(message, 0, out);
  out += "\n";
  return out;
}

google::protobuf::Value NumberOrNull(std::optional<double> value) {
  google::protobuf::Value v;
  if (value.has_value()) {
    v.set_number_value(*value);
  } else {
    v.set_null_value(google::protobuf::NULL_VALUE);
  }
  return v;
}

google::protobuf::Value StringOrNull(absl::string_view text) {
  google::protobuf::Value v;
  if (text.empty()) {
    v.set_null_value(google::protobuf::NULL_VALUE);
  } else {
    v.set_string_value(std::string(text));
  }
  return v;
}

}  // namespace perfsim
