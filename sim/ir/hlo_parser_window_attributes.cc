// The spatial attributes of HLO instructions (hlo_parser_internal.h): slice={[0:8:2], ...},
// padding=0_0x1_1_2 and window={size=3x3 stride=2x2 pad=0_0x1_1 ...}. Split from
// hlo_parser_attributes.cc, whose ParseAttribute calls these.
#include <utility>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "sim/ir/hlo_parser_internal.h"
#include "sim/util/status.h"

namespace perfsim {
namespace {

// Splits a kDimList/kNumber text such as "0_0x1_1_2" into per-dimension integer groups.
bool SplitDimList(absl::string_view text, std::vector<std::vector<int64_t>>* out) {
  for (absl::string_view dimension : absl::StrSplit(text, 'x')) {
    std::vector<int64_t> parts;
    for (absl::string_view part : absl::StrSplit(dimension, '_')) {
      int64_t value = 0;
      if (!absl::SimpleAtoi(part, &value)) return false;
      parts.push_back(value);
    }
    out->push_back(std::move(parts));
  }
  return true;
}

}  // namespace

absl::Status HloParser::ParseSlice(InstructionAttributes* attributes) {
  // slice={[0:8000], [2:10:2]}
  PERFSIM_RETURN_IF_ERROR(Expect(TokenKind::kLbrace, "'{' to start a slice"));
  std::vector<SliceDimension> slice;
  while (!At(TokenKind::kRbrace)) {
    PERFSIM_RETURN_IF_ERROR(Expect(TokenKind::kLsquare, "'[' to start a slice dimension"));
    SliceDimension dimension;
    PERFSIM_ASSIGN_OR_RETURN(dimension.start, ParseInt64("a slice start"));
    PERFSIM_RETURN_IF_ERROR(Expect(TokenKind::kColon, "':' in a slice dimension"));
    PERFSIM_ASSIGN_OR_RETURN(dimension.limit, ParseInt64("a slice limit"));
    if (At(TokenKind::kColon)) {
      Advance();
      PERFSIM_ASSIGN_OR_RETURN(dimension.stride, ParseInt64("a slice stride"));
    }
    PERFSIM_RETURN_IF_ERROR(Expect(TokenKind::kRsquare, "':' or ']' in a slice dimension"));
    slice.push_back(dimension);
    if (!At(TokenKind::kComma)) break;
    Advance();
  }
  PERFSIM_RETURN_IF_ERROR(Expect(TokenKind::kRbrace, "',' or '}' in a slice"));
  attributes->slice = std::move(slice);
  return absl::OkStatus();
}

absl::Status HloParser::ParsePadding(InstructionAttributes* attributes) {
  // padding=0_0x1_1_2: per dimension low_high[_interior], dimensions joined by 'x'.
  std::vector<std::vector<int64_t>> groups;
  if (!(At(TokenKind::kDimList) || At(TokenKind::kNumber)) || !SplitDimList(tok_.text, &groups)) {
    return Expected("padding such as 0_0x1_1_0");
  }
  std::vector<PaddingDimension> padding;
  for (const std::vector<int64_t>& group : groups) {
    if (group.size() != 2 && group.size() != 3) {
      return Expected("padding low_high or low_high_interior per dimension");
    }
    padding.push_back({group[0], group[1], group.size() == 3 ? group[2] : 0});
  }
  Advance();
  attributes->padding = std::move(padding);
  return absl::OkStatus();
}

absl::Status HloParser::ParseWindow(InstructionAttributes* attributes) {
  // window={size=1x1x3 stride=1x1x2 pad=0_0x0_0x1_1 lhs_dilate=... rhs_dilate=...
  // rhs_reversal=0x0x1}
  PERFSIM_RETURN_IF_ERROR(Expect(TokenKind::kLbrace, "'{' to start a window"));
  std::vector<WindowDimension> window;
  struct Field {
    std::string key;
    std::vector<std::vector<int64_t>> groups;
    SourceLocation location;
  };
  std::vector<Field> fields;
  while (!At(TokenKind::kRbrace)) {
    if (!At(TokenKind::kIdentifier))
      return Expected("a window field (size, stride, pad, ...) or '}'");
    Field field{std::string(tok_.text), {}, LocationOf(tok_)};
    if (field.key != "size" && field.key != "stride" && field.key != "pad" &&
        field.key != "lhs_dilate" && field.key != "rhs_dilate" && field.key != "rhs_reversal") {
      return Expected("a window field (size, stride, pad, lhs_dilate, rhs_dilate, rhs_reversal)");
    }
    Advance();
    PERFSIM_RETURN_IF_ERROR(Expect(TokenKind::kEqual, "'='"));
    if (!(At(TokenKind::kDimList) || At(TokenKind::kNumber)) ||
        !SplitDimList(tok_.text, &field.groups)) {
      return Expected("window sizes such as 3x3 or pads such as 0_0x1_1");
    }
    Advance();
    fields.push_back(std::move(field));
  }
  Advance();  // }
  const Field* size = nullptr;
  for (const Field& field : fields) {
    if (field.key == "size") size = &field;
  }
  if (size == nullptr) {
    if (!fields.empty())
      return ErrorAt(fields.front().location, "expected size= in the window; got none");
    attributes->window = std::move(window);
    return absl::OkStatus();
  }
  window.resize(size->groups.size());
  for (const Field& field : fields) {
    if (field.groups.size() != window.size()) {
      return ErrorAt(field.location,
                     absl::StrCat("expected ", window.size(), " dimensions in window ", field.key,
                                  "; got ", field.groups.size()));
    }
    const size_t parts = field.key == "pad" ? 2 : 1;
    for (size_t i = 0; i < window.size(); ++i) {
      const std::vector<int64_t>& g = field.groups[i];
      if (g.size() != parts) {
        return ErrorAt(
            field.location,
            absl::StrCat("expected ", parts == 2 ? "low_high" : "one integer",
                         " per dimension in window ", field.key, "; got ", absl::StrJoin(g, "_")));
      }
      WindowDimension& d = window[i];
      if (field.key == "size") d.size = g[0];
      if (field.key == "stride") d.stride = g[0];
      if (field.key == "pad") {
        d.padding_low = g[0];
        d.padding_high = g[1];
      }
      if (field.key == "lhs_dilate") d.base_dilation = g[0];
      if (field.key == "rhs_dilate") d.window_dilation = g[0];
      if (field.key == "rhs_reversal") d.window_reversal = g[0] != 0;
    }
  }
  attributes->window = std::move(window);
  return absl::OkStatus();
}

}  // namespace perfsim
