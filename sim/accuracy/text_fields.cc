// Forgiving readers for free-text measurement cells (text_fields.h).
#include "sim/accuracy/text_fields.h"

#include <cctype>
#include <cmath>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "sim/hw/chip_registry.h"

namespace perfsim {
namespace {

// "≈" in UTF-8.
constexpr absl::string_view kApproximatelyEqual = "\xE2\x89\x88";

// The integers of the first "[a,b,...]" at or after `from` (positive each), or nullopt.
std::optional<std::vector<int64_t>> BracketDims(absl::string_view text, size_t from) {
  if (from == absl::string_view::npos) return std::nullopt;
  const size_t open = text.find('[', from);
  const size_t close = open == absl::string_view::npos ? open : text.find(']', open);
  if (close == absl::string_view::npos) return std::nullopt;
  std::vector<int64_t> dims;
  for (absl::string_view piece : absl::StrSplit(text.substr(open + 1, close - open - 1), ',')) {
    const std::optional<int64_t> d = ParseInteger(piece);
    if (!d.has_value() || *d <= 0) return std::nullopt;
    dims.push_back(*d);
  }
  return dims;
}

bool IsWordChar(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '_' || c == '.';
}

// Bytes per unit; nullopt for an unknown unit. Case matters for the B (bytes, not bits).
std::optional<double> ByteUnit(absl::string_view unit) {
  static const std::pair<absl::string_view, double> kUnits[] = {{"B", 1},
                                                                {"KB", 1e3},
                                                                {"kB", 1e3},
                                                                {"MB", 1e6},
                                                                {"GB", 1e9},
                                                                {"TB", 1e12},
                                                                {"KiB", 1024.0},
                                                                {"MiB", 1048576.0},
                                                                {"GiB", 1073741824.0},
                                                                {"TiB", 1099511627776.0},
                                                                {"bytes", 1}};
  for (const auto& [name, bytes] : kUnits) {
    if (unit == name) return bytes;
  }
  return std::nullopt;
}

}  // namespace

std::optional<std::string> KeyValues::Find(std::initializer_list<absl::string_view> keys) const {
  for (const auto& [key, value] : pairs) {
    for (absl::string_view want : keys) {
      if (key == want) return value;
    }
  }
  return std::nullopt;
}

KeyValues ParseKeyValues(absl::string_view text) {
  KeyValues out;
  std::vector<std::string> pieces;
  std::string current;
  int depth = 0;  // inside [...]
  for (char c : text) {
    if (c == '[') ++depth;
    if (c == ']' && depth > 0) --depth;
    if (depth == 0 && (c == ';' || c == ',' || c == '(' || c == ')' || c == ':')) {
      pieces.push_back(current);
      current.clear();
      continue;
    }
    current.push_back(c);
  }
  pieces.push_back(current);
  for (const std::string& piece : pieces) {
    absl::string_view p = absl::StripAsciiWhitespace(piece);
    if (p.empty()) continue;
    const size_t eq = p.find('=');
    if (eq != absl::string_view::npos) {
      out.pairs.emplace_back(std::string(absl::StripAsciiWhitespace(p.substr(0, eq))),
                             std::string(absl::StripAsciiWhitespace(p.substr(eq + 1))));
      continue;
    }
    // "M~32768" or "M ≈ 32768": an approximate value under a one-word key. "~370" (no key) and
    // "4 groups x ~8192" (a phrase ParseOpShape reads) stay phrases.
    size_t mark = p.find('~');
    size_t mark_size = 1;
    if (mark == absl::string_view::npos) {
      mark = p.find(kApproximatelyEqual);
      mark_size = kApproximatelyEqual.size();
    }
    if (mark != absl::string_view::npos) {
      const absl::string_view key = absl::StripAsciiWhitespace(p.substr(0, mark));
      const absl::string_view value = absl::StripAsciiWhitespace(p.substr(mark + mark_size));
      if (!key.empty() && !value.empty() && !absl::StrContains(key, ' ')) {
        out.pairs.emplace_back(std::string(key), std::string(value));
        out.approximate.emplace_back(key);
        continue;
      }
    }
    out.phrases.push_back(std::string(p));
  }
  return out;
}

KeyValues ParseOpShape(absl::string_view text) {
  KeyValues out = ParseKeyValues(text);
  std::vector<std::pair<std::string, std::string>> derived;
  for (const std::string& phrase : out.phrases) {
    const bool approximate =
        absl::StrContains(phrase, '~') || absl::StrContains(phrase, kApproximatelyEqual);
    // "4 groups x ~8192"
    const std::vector<std::string> words = Words(phrase);
    if (words.size() == 4 && (words[1] == "groups" || words[1] == "group") && words[2] == "x" &&
        ParseInteger(words[0]).has_value() && ParseInteger(words[3]).has_value()) {
      derived.emplace_back("groups", words[0]);
      derived.emplace_back("M_per_group", words[3]);
      if (approximate) {
        out.approximate.push_back("groups");
        out.approximate.push_back("M_per_group");
      }
      continue;
    }
    // "[262144,2560] x [64,2560,1280]"
    const std::optional<std::vector<int64_t>> lhs = BracketDims(phrase, 0);
    if (!lhs.has_value() || lhs->size() != 2) continue;
    const size_t second = phrase.find('[', phrase.find(']'));
    const std::optional<std::vector<int64_t>> rhs = BracketDims(phrase, second);
    if (!rhs.has_value() || rhs->size() != 3 || (*lhs)[1] != (*rhs)[1]) continue;
    const absl::string_view between = absl::StripAsciiWhitespace(absl::string_view(phrase).substr(
        phrase.find(']') + 1, second - phrase.find(']') - 1));
    if (between != "x" && between != "@" && between != "\xC3\x97") continue;
    derived.emplace_back("m", absl::StrCat((*lhs)[0]));
    derived.emplace_back("K", absl::StrCat((*lhs)[1]));
    derived.emplace_back("groups", absl::StrCat((*rhs)[0]));
    derived.emplace_back("N", absl::StrCat((*rhs)[2]));
  }
  for (auto& pair : derived) out.pairs.push_back(std::move(pair));
  return out;
}

std::optional<int64_t> ParseInteger(absl::string_view text) {
  int64_t value = 0;
  if (!absl::SimpleAtoi(absl::StripAsciiWhitespace(text), &value) || value < 0 ||
      value > kMaxCellInteger) {
    return std::nullopt;
  }
  return value;
}

std::optional<int64_t> LeadingInteger(absl::string_view text) {
  absl::string_view t = absl::StripLeadingAsciiWhitespace(text);
  size_t digits = 0;
  while (digits < t.size() && std::isdigit(static_cast<unsigned char>(t[digits]))) ++digits;
  if (digits == 0 || digits > 18) return std::nullopt;
  // "4096 tokens" and "2+ nodes" count; "1.5 GB" or "8x4" do not start with a whole integer.
  if (digits < t.size() && (t[digits] == '.' || t[digits] == 'x')) return std::nullopt;
  return ParseInteger(t.substr(0, digits));
}

std::optional<int64_t> IntegerBefore(absl::string_view text, absl::string_view word) {
  const std::vector<std::string> words = Words(text);
  for (size_t i = 1; i < words.size(); ++i) {
    if (absl::StartsWith(words[i], word)) {
      if (std::optional<int64_t> n = ParseInteger(words[i - 1])) return n;
    }
  }
  return std::nullopt;
}

std::optional<std::pair<int64_t, int64_t>> ParseDimsPair(absl::string_view text) {
  std::string t(absl::StripAsciiWhitespace(text));
  // "×" (U+00D7) is written in some tables.
  t = absl::StrReplaceAll(t, {{"\xC3\x97", "x"}, {" ", ""}});
  const std::vector<std::string> parts = absl::StrSplit(t, 'x');
  if (parts.size() != 2) return std::nullopt;
  const std::optional<int64_t> a = ParseInteger(parts[0]);
  const std::optional<int64_t> b = ParseInteger(parts[1]);
  if (!a.has_value() || !b.has_value() || *a <= 0 || *b <= 0) return std::nullopt;
  return std::make_pair(*a, *b);
}

std::optional<std::string> FindSliceShape(absl::string_view text) {
  for (const std::string& word : Words(text)) {
    const std::vector<std::string> parts = absl::StrSplit(word, 'x');
    if (parts.size() < 2) continue;
    bool all = true;
    for (const std::string& part : parts) {
      const std::optional<int64_t> n = ParseInteger(part);
      all = all && n.has_value() && *n > 0;
    }
    if (all) return word;
  }
  return std::nullopt;
}

std::optional<double> ParseByteSize(absl::string_view text) {
  absl::string_view t = absl::StripAsciiWhitespace(text);
  size_t end = 0;
  while (end < t.size() && (std::isdigit(static_cast<unsigned char>(t[end])) || t[end] == '.'))
    ++end;
  double number = 0;
  if (end == 0 || !absl::SimpleAtod(t.substr(0, end), &number)) return std::nullopt;
  const std::optional<double> unit = ByteUnit(absl::StripAsciiWhitespace(t.substr(end)));
  if (!unit.has_value() || !std::isfinite(number)) return std::nullopt;
  return number * *unit;
}

std::optional<double> FindByteSize(absl::string_view text) {
  for (size_t i = 0; i < text.size(); ++i) {
    if (!std::isdigit(static_cast<unsigned char>(text[i]))) continue;
    if (i > 0 && (IsWordChar(text[i - 1]) || text[i - 1] == '[')) continue;
    size_t end = i;
    while (end < text.size() &&
           (std::isdigit(static_cast<unsigned char>(text[end])) || text[end] == '.')) {
      ++end;
    }
    size_t unit_start = end;
    while (unit_start < text.size() && text[unit_start] == ' ') ++unit_start;
    size_t unit_end = unit_start;
    while (unit_end < text.size() && std::isalpha(static_cast<unsigned char>(text[unit_end])))
      ++unit_end;
    double number = 0;
    const std::optional<double> unit = ByteUnit(text.substr(unit_start, unit_end - unit_start));
    if (unit.has_value() && absl::SimpleAtod(text.substr(i, end - i), &number)) {
      return number * *unit;
    }
    i = end;
  }
  return std::nullopt;
}

std::optional<std::string> ResolveHardwareName(absl::string_view text) {
  const std::vector<std::string> words = Words(text);
  auto has = [&](absl::string_view w) {
    for (const std::string& word : words) {
      if (word == w) return true;
    }
    return false;
  };
  for (const std::string& name : BuiltinChipNames()) {
    if (has(name)) return name;
    const size_t underscore = name.find('_');
    if (underscore == std::string::npos) continue;
    const std::string family = name.substr(0, underscore);  // "gpu", "tpu"
    const std::string token = name.substr(underscore + 1);  // "h800", "v5e"
    if (family == "tpu") {
      // "TPU v5e", or Google's "TPU7x" spelling of v7x.
      if ((has("tpu") && has(token)) || has(absl::StrCat("tpu", token.substr(1)))) return name;
    } else if (has(token)) {
      return name;
    }
  }
  return std::nullopt;
}

std::optional<HardwareMatch> ResolveHardware(absl::string_view text) {
  if (std::optional<std::string> name = ResolveHardwareName(text)) {
    return HardwareMatch{*std::move(name), ""};
  }
  // An architecture without a SKU: the part of it perfsim has, said out loud.
  struct Family {
    absl::string_view sm, name, chip, assumption;
  };
  static constexpr Family kFamilies[] = {
      {"sm90", "hopper", "gpu_h100",
       "the Hopper SKU is not stated: simulated as H100 SXM (H800 has less NVLink, H200 more "
       "HBM)"},
      {"sm100", "blackwell", "gpu_b200",
       "the Blackwell SKU is not stated: simulated as B200 (HGX, 8-GPU NVLink domain)"},
      {"sm80", "ampere", "gpu_a100", "the Ampere SKU is not stated: simulated as A100 SXM 80GB"},
  };
  const std::vector<std::string> words = Words(text);
  for (const Family& family : kFamilies) {
    for (const std::string& word : words) {
      if (word == family.sm || word == family.name) {
        return HardwareMatch{std::string(family.chip), std::string(family.assumption)};
      }
    }
  }
  return std::nullopt;
}

std::optional<PrimitiveType> ParseDtypeWord(absl::string_view word) {
  const std::string w = absl::AsciiStrToLower(word);
  if (w == "bf16" || w == "bfloat16") return PrimitiveType::kBF16;
  if (w == "fp8" || w == "f8" || w == "e4m3" || w == "f8e4m3fn" || w == "float8_e4m3fn") {
    return PrimitiveType::kF8E4M3FN;
  }
  if (w == "e5m2" || w == "f8e5m2" || w == "float8_e5m2") return PrimitiveType::kF8E5M2;
  if (w == "fp16" || w == "f16" || w == "float16") return PrimitiveType::kF16;
  if (w == "fp32" || w == "f32" || w == "float32") return PrimitiveType::kF32;
  if (w == "int8" || w == "s8") return PrimitiveType::kS8;
  return std::nullopt;
}

std::optional<PrimitiveType> FindDtypeWord(absl::string_view text, absl::string_view label) {
  const std::vector<std::string> words = Words(text);
  for (size_t i = 0; i < words.size(); ++i) {
    if (!label.empty() && words[i] != label) continue;
    // The label's own dtype is within the next few words ("rhs fp8", "lhs bf16 (M,4096)").
    for (size_t j = label.empty() ? i : i + 1; j < words.size() && j <= i + 3; ++j) {
      if (std::optional<PrimitiveType> t = ParseDtypeWord(words[j])) return t;
    }
  }
  return std::nullopt;
}

std::optional<PrimitiveType> FindDtypeWordBefore(absl::string_view text, absl::string_view label) {
  const std::vector<std::string> words = Words(text);
  for (size_t i = 1; i < words.size(); ++i) {
    if (words[i] != label) continue;
    for (size_t back = 1; back <= 3 && back <= i; ++back) {
      if (std::optional<PrimitiveType> t = ParseDtypeWord(words[i - back])) return t;
    }
  }
  return std::nullopt;
}

std::vector<std::string> Words(absl::string_view text) {
  std::vector<std::string> words;
  std::string current;
  for (char c : text) {
    if (IsWordChar(c)) {
      current.push_back(static_cast<char>(std::tolower(static_cast<unsigned char>(c))));
      continue;
    }
    if (!current.empty()) words.push_back(std::move(current));
    current.clear();
  }
  if (!current.empty()) words.push_back(std::move(current));
  // A sentence's full stop is not part of its last word ("4 nodes." -> "nodes").
  for (std::string& w : words) {
    while (!w.empty() && w.back() == '.') w.pop_back();
  }
  return words;
}

bool ContainsNoCase(absl::string_view text, absl::string_view needle) {
  return absl::StrContains(absl::AsciiStrToLower(text), needle);
}

}  // namespace perfsim
