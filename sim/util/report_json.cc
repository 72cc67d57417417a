// ReportJson: the text protobuf's JSON printer writes for a report (add_whitespace,
// preserve_proto_field_names, always_print_primitive_fields), written directly from the message
// by reflection.
//
// Why not protobuf's printer: it serialises the message to the wire format and re-reads it
// through a type resolver, which costs ~17 us per op row; `predict --hlo` of a 100,000-
// instruction module prints 66,000 rows and spent 1.2 s of its 1.7 s there. This printer costs
// about a tenth of that. tests/report/report_json_test.cc checks that both print the same bytes
// for every report perfsim writes, so scripts see no difference.
//
// The format, as protobuf 3.21 writes it:
//   - one space of indent per level; "key": value; an empty object {} and an empty array [];
//   - fields in field-number order, an unset sub-message absent; then, in number order, the
//     set members of oneofs (proto3 `optional` fields included) and the google.protobuf.Value
//     fields that hold anything but an object;
//   - doubles as "%.15g" when that reads back exactly, else "%.17g" (protobuf's SimpleDtoa);
//     non-finite ones as the strings "NaN", "Infinity", "-Infinity"; 64-bit integers quoted;
//   - strings with '"', '\\', control characters, '<', '>' and DEL escaped (\u003c ...).
// Where the two may differ: a string that is not valid UTF-8 (protobuf drops the bad bytes and
// logs an error; this printer writes U+FFFD for each), and rare format characters beyond the
// ones escaped below (both forms read back as the same string).
#include <algorithm>
#include <charconv>
#include <cmath>
#include <string>
#include <system_error>
#include <vector>

#include "absl/container/node_hash_map.h"

#include "absl/strings/string_view.h"
#include "google/protobuf/descriptor.h"
#include "google/protobuf/message.h"
#include "google/protobuf/struct.pb.h"
#include "sim/util/proto_format.h"
#include "sim/util/status.h"

namespace perfsim {
namespace {

using ::google::protobuf::Descriptor;
using ::google::protobuf::FieldDescriptor;
using ::google::protobuf::Message;
using ::google::protobuf::Reflection;

constexpr char kHex[] = "0123456789abcdef";

void AppendUnicodeEscape(uint32_t code_point, std::string& out) {
  out += "\\u";
  for (int shift = 12; shift >= 0; shift -= 4) out += kHex[(code_point >> shift) & 0xf];
}

// Code points above ASCII that protobuf's printer escapes: C1 controls and the invisible
// format characters that break JavaScript or hide text (soft hyphen, zero-width spaces, line
// and paragraph separators, byte-order mark).
bool EscapedAboveAscii(uint32_t c) {
  return (c >= 0x80 && c <= 0x9f) || c == 0xad || (c >= 0x600 && c <= 0x603) ||
         (c >= 0x200b && c <= 0x200f) || (c >= 0x2028 && c <= 0x202e) ||
         (c >= 0x2060 && c <= 0x2064) || c == 0xfeff;
}

// Length of the UTF-8 sequence at text[i] and its code point; 0 when the bytes there are not
// valid UTF-8 (truncated, overlong, a surrogate, or above U+10FFFF).
int DecodeUtf8(absl::string_view text, size_t i, uint32_t& code_point) {
  const auto byte = [&](size_t k) { return static_cast<unsigned char>(text[k]); };
  const unsigned char lead = byte(i);
  int length = 0;
  uint32_t min = 0;
  if (lead >= 0xc2 && lead <= 0xdf) {
    length = 2, code_point = lead & 0x1f, min = 0x80;
  } else if (lead >= 0xe0 && lead <= 0xef) {
    length = 3, code_point = lead & 0x0f, min = 0x800;
  } else if (lead >= 0xf0 && lead <= 0xf4) {
    length = 4, code_point = lead & 0x07, min = 0x10000;
  } else {
    return 0;
  }
  if (i + length > text.size()) return 0;
  for (int k = 1; k < length; ++k) {
    if ((byte(i + k) & 0xc0) != 0x80) return 0;
    code_point = (code_point << 6) | (byte(i + k) & 0x3f);
  }
  if (code_point < min || code_point > 0x10ffff) return 0;
  if (code_point >= 0xd800 && code_point <= 0xdfff) return 0;
  return length;
}

// Printable ASCII that needs no escape.
bool Plain(unsigned char c) { return c >= 0x20 && c < 0x7f && c != '"' && c != '\\' && c != '<' && c != '>'; }

void AppendJsonString(absl::string_view text, std::string& out) {
  out += '"';
  for (size_t i = 0; i < text.size();) {
    const unsigned char c = static_cast<unsigned char>(text[i]);
    if (Plain(c)) {  // a run of plain characters in one append
      size_t end = i + 1;
      while (end < text.size() && Plain(static_cast<unsigned char>(text[end]))) ++end;
      out.append(text.data() + i, end - i);
      i = end;
      continue;
    }
    if (c < 0x80) {
      switch (c) {
        case '"': out += "\\\""; break;
        case '\\': out += "\\\\"; break;
        case '\b': out += "\\b"; break;
        case '\f': out += "\\f"; break;
        case '\n': out += "\\n"; break;
        case '\r': out += "\\r"; break;
        case '\t': out += "\\t"; break;
        default:
          if (c < 0x20 || c == '<' || c == '>' || c == 0x7f) {
            AppendUnicodeEscape(c, out);
          } else {
            out += static_cast<char>(c);
          }
      }
      ++i;
      continue;
    }
    uint32_t code_point = 0;
    const int length = DecodeUtf8(text, i, code_point);
    if (length == 0) {
      out += "\xef\xbf\xbd";  // U+FFFD REPLACEMENT CHARACTER for one bad byte
      ++i;
    } else if (EscapedAboveAscii(code_point)) {
      AppendUnicodeEscape(code_point, out);
      i += length;
    } else {
      out.append(text.data() + i, length);
      i += length;
    }
  }
  out += '"';
}

// protobuf's SimpleDtoa / SimpleFtoa: the shorter precision when it reads back exactly.
template <typename T>
void AppendNumber(T value, int short_precision, std::string& out) {
  if (std::isnan(value)) {
    out += "\"NaN\"";
    return;
  }
  if (std::isinf(value)) {
    out += value > 0 ? "\"Infinity\"" : "\"-Infinity\"";
    return;
  }
  char buffer[64];
  auto printed = std::to_chars(buffer, buffer + sizeof(buffer), value,
                               std::chars_format::general, short_precision);
  PERFSIM_CHECK(printed.ec == std::errc());
  T back = 0;
  const auto read = std::from_chars(buffer, printed.ptr, back);
  if (read.ec != std::errc() || back != value) {
    printed = std::to_chars(buffer, buffer + sizeof(buffer), value, std::chars_format::general,
                            short_precision + (sizeof(T) == sizeof(double) ? 2 : 3));
    PERFSIM_CHECK(printed.ec == std::errc());
  }
  out.append(buffer, printed.ptr);
}

void AppendDouble(double value, std::string& out) { AppendNumber(value, 15, out); }

class Printer {
 public:
  explicit Printer(std::string& out) : out_(out) {}

  void Object(const Message& message, int depth) {
    if (message.GetDescriptor() == value_descriptor_) {
      Value(static_cast<const google::protobuf::Value&>(message), depth);
      return;
    }
    const Descriptor* descriptor = message.GetDescriptor();
    const Reflection* reflection = message.GetReflection();
    bool first = true;
    auto member = [&](const FieldDescriptor* field) {
      Key(field->name(), depth, first);
      FieldValue(message, field, depth + 1);
    };
    out_ += '{';
    // protobuf's printer lays out the fields of the schema in number order, then appends the
    // ones that have no place in that layout: set members of a oneof (a proto3 `optional` field
    // is the one member of a synthetic oneof), and a google.protobuf.Value field holding
    // anything but an object (null, a number, a string, a bool or a list).
    auto deferred = [&](const FieldDescriptor* field) {
      if (field->containing_oneof() != nullptr) return true;
      if (field->is_repeated() || field->message_type() != value_descriptor_) {
        return false;
      }
      const auto& value =
          static_cast<const google::protobuf::Value&>(reflection->GetMessage(message, field));
      return value.kind_case() != google::protobuf::Value::kStructValue;
    };
    for (const FieldDescriptor* field : FieldsByNumber(descriptor)) {
      PERFSIM_CHECK(!field->is_map());  // reports have no maps (their order is not stable)
      const bool present = field->is_repeated() || !field->has_presence() ||
                           reflection->HasField(message, field);
      if (present && !deferred(field)) member(field);
    }
    for (const FieldDescriptor* field : FieldsByNumber(descriptor)) {
      if (!field->is_repeated() && reflection->HasField(message, field) && deferred(field)) {
        member(field);
      }
    }
    Close(first, depth, '}');
  }

 private:
  // The descriptor's fields sorted by number, computed once per message type.
  const std::vector<const FieldDescriptor*>& FieldsByNumber(const Descriptor* descriptor) {
    if (descriptor == last_descriptor_) return *last_fields_;
    auto [it, inserted] = fields_.try_emplace(descriptor);
    if (inserted) {
      for (int i = 0; i < descriptor->field_count(); ++i) it->second.push_back(descriptor->field(i));
      std::sort(it->second.begin(), it->second.end(),
                [](const FieldDescriptor* a, const FieldDescriptor* b) {
                  return a->number() < b->number();
                });
    }
    last_descriptor_ = descriptor;
    last_fields_ = &it->second;
    return it->second;
  }

  void Newline(int depth) {
    static constexpr char kIndent[] = "\n                                ";
    if (depth < static_cast<int>(sizeof(kIndent)) - 1) {
      out_.append(kIndent, depth + 1);
    } else {
      out_ += '\n';
      out_.append(depth, ' ');
    }
  }

  void Key(absl::string_view name, int depth, bool& first) {
    if (!first) out_ += ',';
    first = false;
    Newline(depth + 1);
    AppendJsonString(name, out_);
    out_ += ": ";
  }

  // Ends an object or array opened at `depth`; `first` still set means it was empty.
  void Close(bool first, int depth, char bracket) {
    if (!first) Newline(depth);
    out_ += bracket;
  }

  void FieldValue(const Message& message, const FieldDescriptor* field, int depth) {
    if (!field->is_repeated()) {
      Element(message, field, -1, depth);
      return;
    }
    const int count = message.GetReflection()->FieldSize(message, field);
    out_ += '[';
    for (int i = 0; i < count; ++i) {
      if (i > 0) out_ += ',';
      Newline(depth + 1);
      Element(message, field, i, depth + 1);
    }
    Close(count == 0, depth, ']');
  }

  // Element `index` of a repeated field, or the singular field when index < 0.
  void Element(const Message& message, const FieldDescriptor* field, int index, int depth) {
    const Reflection* r = message.GetReflection();
    const bool repeated = index >= 0;
    switch (field->cpp_type()) {
      case FieldDescriptor::CPPTYPE_INT32:
        out_ += std::to_string(repeated ? r->GetRepeatedInt32(message, field, index)
                                        : r->GetInt32(message, field));
        return;
      case FieldDescriptor::CPPTYPE_UINT32:
        out_ += std::to_string(repeated ? r->GetRepeatedUInt32(message, field, index)
                                        : r->GetUInt32(message, field));
        return;
      case FieldDescriptor::CPPTYPE_INT64:  // proto3 JSON quotes 64-bit integers
        out_ += '"';
        out_ += std::to_string(repeated ? r->GetRepeatedInt64(message, field, index)
                                        : r->GetInt64(message, field));
        out_ += '"';
        return;
      case FieldDescriptor::CPPTYPE_UINT64:
        out_ += '"';
        out_ += std::to_string(repeated ? r->GetRepeatedUInt64(message, field, index)
                                        : r->GetUInt64(message, field));
        out_ += '"';
        return;
      case FieldDescriptor::CPPTYPE_DOUBLE:
        AppendDouble(repeated ? r->GetRepeatedDouble(message, field, index)
                              : r->GetDouble(message, field),
                     out_);
        return;
      case FieldDescriptor::CPPTYPE_FLOAT:
        AppendNumber(repeated ? r->GetRepeatedFloat(message, field, index)
                              : r->GetFloat(message, field),
                     6, out_);
        return;
      case FieldDescriptor::CPPTYPE_BOOL:
        out_ += (repeated ? r->GetRepeatedBool(message, field, index) : r->GetBool(message, field))
                    ? "true"
                    : "false";
        return;
      case FieldDescriptor::CPPTYPE_ENUM: {
        const int number = repeated ? r->GetRepeatedEnumValue(message, field, index)
                                    : r->GetEnumValue(message, field);
        const auto* value = field->enum_type()->FindValueByNumber(number);
        if (value == nullptr) {
          out_ += std::to_string(number);  // a value this build's schema does not name
        } else {
          AppendJsonString(value->name(), out_);
        }
        return;
      }
      case FieldDescriptor::CPPTYPE_STRING: {
        // Reports hold text; a `bytes` field would need base64 (there are none).
        PERFSIM_CHECK(field->type() == FieldDescriptor::TYPE_STRING);
        std::string scratch;
        const std::string& text =
            repeated ? r->GetRepeatedStringReference(message, field, index, &scratch)
                     : r->GetStringReference(message, field, &scratch);
        AppendJsonString(text, out_);
        return;
      }
      case FieldDescriptor::CPPTYPE_MESSAGE:
        Object(repeated ? r->GetRepeatedMessage(message, field, index)
                        : r->GetMessage(message, field),
               depth);
        return;
    }
  }

  // google.protobuf.Value prints as the JSON value it holds.
  void Value(const google::protobuf::Value& value, int depth) {
    switch (value.kind_case()) {
      case google::protobuf::Value::kNumberValue:
        AppendDouble(value.number_value(), out_);
        return;
      case google::protobuf::Value::kStringValue:
        AppendJsonString(value.string_value(), out_);
        return;
      case google::protobuf::Value::kBoolValue:
        out_ += value.bool_value() ? "true" : "false";
        return;
      case google::protobuf::Value::kStructValue: {
        // Keys sorted, so that the text is deterministic (protobuf prints its map's order).
        std::vector<const std::string*> keys;
        for (const auto& [key, unused] : value.struct_value().fields()) keys.push_back(&key);
        std::sort(keys.begin(), keys.end(),
                  [](const std::string* a, const std::string* b) { return *a < *b; });
        bool first = true;
        out_ += '{';
        for (const std::string* key : keys) {
          Key(*key, depth, first);
          Value(value.struct_value().fields().at(*key), depth + 1);
        }
        Close(first, depth, '}');
        return;
      }
      case google::protobuf::Value::kListValue: {
        const auto& values = value.list_value().values();
        out_ += '[';
        for (int i = 0; i < values.size(); ++i) {
          if (i > 0) out_ += ',';
          Newline(depth + 1);
          Value(values[i], depth + 1);
        }
        Close(values.empty(), depth, ']');
        return;
      }
      case google::protobuf::Value::kNullValue:
      case google::protobuf::Value::KIND_NOT_SET:
        out_ += "null";
        return;
    }
  }

  std::string& out_;
  const Descriptor* const value_descriptor_ = google::protobuf::Value::descriptor();
  // Node-based: Object recurses while holding a reference to its type's entry.
  absl::node_hash_map<const Descriptor*, std::vector<const FieldDescriptor*>> fields_;
  const Descriptor* last_descriptor_ = nullptr;
  const std::vector<const FieldDescriptor*>* last_fields_ = nullptr;
};

}  // namespace

std::string ReportJson(const google::protobuf::Message& report) {
  std::string out;
  Printer(out).Object(report, 0);
  out += '\n';
  return out;
}

}  // namespace perfsim
