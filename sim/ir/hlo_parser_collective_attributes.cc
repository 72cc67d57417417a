// Attributes of collectives: replica_groups in every form XLA prints (explicit lists, iota
// `[2,4]<=[4,2]T(1,0)`, and the mesh-axes form `mesh['a'=2,'b'=4] {'b'}` of SPMD-partitioned
// modules) and source_target_pairs. Split from hlo_parser_attributes.cc, which reads the rest.
#include <algorithm>
#include <limits>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "sim/ir/collective_groups.h"
#include "sim/ir/hlo_parser_internal.h"
#include "sim/util/status.h"

namespace perfsim {
namespace {

// The mesh-axes form of replica_groups after `mesh`, scanned on the raw text because its
// quoted names ('axis_0') are no HLO tokens: `['a'=2,'b'=4] {'b','a':(1)2}`. Names may also be
// written bare (a_0=2). `end` is the offset just past the closing '}'; on error `error` says
// what was expected and `error_offset` where.
struct MeshAxesScan {
  ReplicaGroups::MeshAxes mesh;
  size_t end = 0;
  std::string error;
  size_t error_offset = 0;
};

MeshAxesScan ScanMeshAxes(absl::string_view text, size_t p, int64_t max_devices) {
  MeshAxesScan scan;
  auto fail = [&](size_t at, std::string message) {
    scan.error = std::move(message);
    scan.error_offset = at;
    return false;
  };
  auto got = [&](size_t at) {
    return at >= text.size() ? std::string("end of file")
                             : absl::StrCat("'", text.substr(at, 1), "'");
  };
  auto skip_space = [&] {
    while (p < text.size() && absl::ascii_isspace(static_cast<unsigned char>(text[p]))) ++p;
  };
  auto expect = [&](char c, absl::string_view what) {
    skip_space();
    if (p < text.size() && text[p] == c) {
      ++p;
      return true;
    }
    return fail(p, absl::StrCat("expected ", what, " in mesh replica_groups; got ", got(p)));
  };
  auto name = [&](std::string* out) {
    skip_space();
    const size_t start = p;
    if (p < text.size() && text[p] == '\'') {
      const size_t close = text.find('\'', p + 1);
      if (close == absl::string_view::npos || close == p + 1) {
        return fail(start, "expected a quoted mesh axis name; got an unterminated or empty one");
      }
      *out = std::string(text.substr(p + 1, close - p - 1));
      p = close + 1;
      return true;
    }
    while (p < text.size() && (absl::ascii_isalnum(static_cast<unsigned char>(text[p])) ||
                               text[p] == '_' || text[p] == '.')) {
      ++p;
    }
    if (p == start) return fail(p, absl::StrCat("expected a mesh axis name; got ", got(p)));
    *out = std::string(text.substr(start, p - start));
    return true;
  };
  auto number = [&](int64_t* out) {
    skip_space();
    const size_t start = p;
    while (p < text.size() && absl::ascii_isdigit(static_cast<unsigned char>(text[p]))) ++p;
    if (p == start || p - start > 15 || !absl::SimpleAtoi(text.substr(start, p - start), out)) {
      return fail(start, absl::StrCat("expected a positive size in mesh replica_groups; got ",
                                      got(start)));
    }
    return true;
  };
  if (!expect('[', "'['")) return scan;
  int64_t devices = 1;
  while (true) {
    ReplicaGroups::MeshAxes::Axis axis;
    const size_t axis_at = p;
    if (!name(&axis.name) || !expect('=', "'='") || !number(&axis.size)) return scan;
    if (axis.size <= 0 || devices > max_devices / axis.size) {
      fail(axis_at, absl::StrCat("expected mesh axis sizes whose product is at most ", max_devices,
                                 "; got '", axis.name, "'=", axis.size));
      return scan;
    }
    for (const auto& other : scan.mesh.axes) {
      if (other.name == axis.name) {
        fail(axis_at, absl::StrCat("expected distinct mesh axis names; got '", axis.name, "' twice"));
        return scan;
      }
    }
    devices *= axis.size;
    scan.mesh.axes.push_back(std::move(axis));
    skip_space();
    if (p < text.size() && text[p] == ',') {
      ++p;
      continue;
    }
    if (!expect(']', "',' or ']'")) return scan;
    break;
  }
  if (!expect('{', "'{' to start the grouped axes")) return scan;
  skip_space();
  while (p < text.size() && text[p] != '}') {
    ReplicaGroups::MeshAxes::AxisRef ref;
    const size_t ref_at = p;
    std::string axis_name;
    if (!name(&axis_name)) return scan;
    ref.axis = -1;
    for (size_t a = 0; a < scan.mesh.axes.size(); ++a) {
      if (scan.mesh.axes[a].name == axis_name) ref.axis = static_cast<int64_t>(a);
    }
    if (ref.axis < 0) {
      fail(ref_at, absl::StrCat("expected an axis of the mesh; got '", axis_name, "'"));
      return scan;
    }
    skip_space();
    if (p < text.size() && text[p] == ':') {
      ++p;
      if (!expect('(', "'(' before a sub-axis pre-size") || !number(&ref.pre_size) ||
          !expect(')', "')' after a sub-axis pre-size") || !number(&ref.size)) {
        return scan;
      }
    }
    scan.mesh.group_axes.push_back(ref);
    skip_space();
    if (p < text.size() && text[p] == ',') {
      ++p;
      skip_space();
    } else {
      break;
    }
  }
  if (!expect('}', "',' or '}' after a grouped axis")) return scan;
  scan.end = p;
  return scan;
}

}  // namespace

absl::Status HloParser::ParseReplicaGroups(InstructionAttributes* attributes) {
  ReplicaGroups groups;
  if (AtKeyword("mesh") && lexer_.PeekChar() == '[') {
    // Mesh axes: mesh['a'=2,'b'=2] {'a'}, what XLA prints after SPMD partitioning.
    const SourceLocation location = LocationOf(tok_);
    const HloLexer::State start = lexer_.state();
    MeshAxesScan scan = ScanMeshAxes(lexer_.text(), start.position, kMaxReplicaGroupDevices);
    if (!scan.error.empty()) {
      SourceLocation at;
      lexer_.LocationOf(scan.error_offset, &at.line, &at.column);
      return ErrorAt(at, scan.error);
    }
    absl::StatusOr<std::vector<std::vector<int64_t>>> expanded =
        ExpandMeshAxesReplicaGroups(scan.mesh);
    if (!expanded.ok()) return ErrorAt(location, expanded.status().message());
    // Resume lexing after the closing '}', keeping line numbers right across line breaks.
    HloLexer::State resume = start;
    for (size_t i = start.position; i < scan.end; ++i) {
      if (lexer_.text()[i] == '\n') {
        ++resume.line;
        resume.line_start = i + 1;
      }
    }
    resume.position = scan.end;
    lexer_.set_state(resume);
    Advance();
    groups.groups = *std::move(expanded);
    groups.mesh_axes = std::move(scan.mesh);
    attributes->replica_groups = std::move(groups);
    return absl::OkStatus();
  }
  if (At(TokenKind::kLbrace)) {
    // Explicit: {{0,1},{2,3}}; {} means one group of every device.
    Advance();
    while (!At(TokenKind::kRbrace)) {
      PERFSIM_ASSIGN_OR_RETURN(std::vector<int64_t> group, ParseIntList("a replica group"));
      groups.groups.push_back(std::move(group));
      if (!At(TokenKind::kComma)) break;
      Advance();
    }
    PERFSIM_RETURN_IF_ERROR(Expect(TokenKind::kRbrace, "',' or '}' in replica_groups"));
    attributes->replica_groups = std::move(groups);
    return absl::OkStatus();
  }
  // Iota: [G,S]<=[d0,d1,...] or [G,S]<=[d0,d1]T(perm).
  const SourceLocation location = LocationOf(tok_);
  PERFSIM_RETURN_IF_ERROR(Expect(TokenKind::kLsquare, "'{' or '[' to start replica_groups"));
  ReplicaGroups::Iota iota;
  PERFSIM_ASSIGN_OR_RETURN(iota.num_groups, ParseInt64("the number of replica groups"));
  PERFSIM_RETURN_IF_ERROR(Expect(TokenKind::kComma, "',' between group count and group size"));
  PERFSIM_ASSIGN_OR_RETURN(iota.group_size, ParseInt64("the replica group size"));
  PERFSIM_RETURN_IF_ERROR(Expect(TokenKind::kRsquare, "']' after the group size"));
  PERFSIM_RETURN_IF_ERROR(Expect(TokenKind::kLeq, "'<=' in iota replica groups"));
  PERFSIM_RETURN_IF_ERROR(Expect(TokenKind::kLsquare, "'[' to start the iota reshape dimensions"));
  while (true) {
    PERFSIM_ASSIGN_OR_RETURN(int64_t d, ParseInt64("an iota reshape dimension"));
    iota.reshape_dimensions.push_back(d);
    if (!At(TokenKind::kComma)) break;
    Advance();
  }
  PERFSIM_RETURN_IF_ERROR(Expect(TokenKind::kRsquare, "',' or ']' in the iota reshape dimensions"));
  if (AtKeyword("T")) {
    Advance();
    PERFSIM_RETURN_IF_ERROR(Expect(TokenKind::kLparen, "'(' after T"));
    while (true) {
      PERFSIM_ASSIGN_OR_RETURN(int64_t p, ParseInt64("a transpose dimension"));
      iota.transpose_permutation.push_back(p);
      if (!At(TokenKind::kComma)) break;
      Advance();
    }
    PERFSIM_RETURN_IF_ERROR(Expect(TokenKind::kRparen, "',' or ')' in the transpose"));
  }
  // Checked before expanding so that no number in the text can make us allocate much.
  int64_t devices = 1;
  for (int64_t d : iota.reshape_dimensions) {
    if (d <= 0 || devices > kMaxReplicaGroupDevices / d) {
      return ErrorAt(location, absl::StrCat("expected iota reshape dimensions that are positive "
                                            "with a product of at most ",
                                            kMaxReplicaGroupDevices, "; got [",
                                            absl::StrJoin(iota.reshape_dimensions, ","), "]"));
    }
    devices *= d;
  }
  if (iota.num_groups <= 0 || iota.group_size <= 0 || iota.num_groups > devices / iota.group_size ||
      iota.num_groups * iota.group_size != devices) {
    return ErrorAt(location, absl::StrCat("expected groups x size to equal the ", devices,
                                          " devices of the iota; got [", iota.num_groups, ",",
                                          iota.group_size, "]"));
  }
  if (!iota.transpose_permutation.empty()) {
    std::vector<int64_t> sorted = iota.transpose_permutation;
    std::sort(sorted.begin(), sorted.end());
    bool ok = sorted.size() == iota.reshape_dimensions.size();
    for (size_t i = 0; ok && i < sorted.size(); ++i) ok = sorted[i] == static_cast<int64_t>(i);
    if (!ok) {
      return ErrorAt(location, absl::StrCat("expected a permutation of 0..",
                                            iota.reshape_dimensions.size() - 1, "; got T(",
                                            absl::StrJoin(iota.transpose_permutation, ","), ")"));
    }
  }
  groups.groups = ExpandIotaReplicaGroups(iota);
  groups.iota = std::move(iota);
  attributes->replica_groups = std::move(groups);
  return absl::OkStatus();
}

absl::Status HloParser::ParseSourceTargetPairs(InstructionAttributes* attributes) {
  // source_target_pairs={{0,1},{1,2}}
  PERFSIM_RETURN_IF_ERROR(Expect(TokenKind::kLbrace, "'{' to start source_target_pairs"));
  std::vector<std::pair<int64_t, int64_t>> pairs;
  while (!At(TokenKind::kRbrace)) {
    const SourceLocation location = LocationOf(tok_);
    PERFSIM_ASSIGN_OR_RETURN(std::vector<int64_t> pair, ParseIntList("a source-target pair"));
    if (pair.size() != 2) {
      return ErrorAt(
          location, absl::StrCat("expected a {source,target} pair; got ", pair.size(), " numbers"));
    }
    pairs.emplace_back(pair[0], pair[1]);
    if (!At(TokenKind::kComma)) break;
    Advance();
  }
  PERFSIM_RETURN_IF_ERROR(Expect(TokenKind::kRbrace, "',' or '}' in source_target_pairs"));
  attributes->source_target_pairs = std::move(pairs);
  return absl::OkStatus();
}


}  // namespace perfsim
