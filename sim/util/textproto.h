// Loading configuration textprotos (hardware/*.textproto, models/*.textproto) with every problem
// reported as "file:line:col: message".
//
//   HardwareSpec spec;
//   absl::StatusOr<TextProtoSource> source =
//       ParseTextProto(text, "hardware/tpu_v5p.textproto", &spec);
//   // On a syntax error: InvalidArgument listing EVERY problem, one per line:
//   //   hardware/tpu_v5p.textproto:3:5: Message type "perfsim.HardwareSpec" has no field named
//   "nme".
//   //   hardware/tpu_v5p.textproto:9:28: Expected double, got: fast
//   source->Where("memory.hbm_bytes_per_second");   // "hardware/tpu_v5p.textproto:12:3"
//
// Validators then collect semantic problems with ConfigProblems, which prefixes each with the
// location of the offending field (or of its enclosing message when the field is missing):
//
//   ConfigProblems problems(&*source);
//   if (spec.memory().hbm_bytes_per_second() <= 0)
//     problems.Add("memory.hbm_bytes_per_second", "expected > 0; got 0");
//   return problems.ToStatus();   // OK, or InvalidArgument with all problems
//
// The parser never crashes or aborts on garbage input: bytes that are not text format become
// errors. After a syntax error it skips the offending field (a whole `name { ... }` block when
// the error is on its first line) and parses on, so one run reports every independent problem.
#ifndef PERFSIM_SIM_UTIL_TEXTPROTO_H_
#define PERFSIM_SIM_UTIL_TEXTPROTO_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "google/protobuf/descriptor.h"
#include "google/protobuf/message.h"
#include "google/protobuf/text_format.h"

namespace perfsim {

// Where the fields of a parsed textproto came from. Cheap to copy (shares the location tree).
class TextProtoSource {
 public:
  // A source with no locations: Where() returns just the file name (may be empty).
  explicit TextProtoSource(std::string filename = "");

  const std::string& filename() const { return filename_; }

  // Location of the field at `field_path` as "file:line:col" (1-based). A path is a dotted list
  // of field names with an index for repeated fields: "interconnect.dimensions[1].size_chips".
  // When the field itself was not written in the file, the location of the innermost enclosing
  // message that was is returned; when nothing on the path was written, just "file". Returns ""
  // for a source without a file name and no location.
  std::string Where(absl::string_view field_path) const;

 private:
  friend absl::StatusOr<TextProtoSource> ParseTextProto(absl::string_view text,
                                                        absl::string_view filename,
                                                        google::protobuf::Message* out);
  std::string filename_;
  const google::protobuf::Descriptor* descriptor_ = nullptr;
  std::shared_ptr<google::protobuf::TextFormat::ParseInfoTree> tree_;
};

// Parses `text` (protobuf text format) into `out`, which is cleared first. `filename` is used in
// messages only. Returns the field locations, or InvalidArgument whose message lists every
// syntax problem as "filename:line:col: message", one per line, in file order (at most
// kMaxTextProtoErrors of them). On error `out` holds an unspecified partial parse.
absl::StatusOr<TextProtoSource> ParseTextProto(absl::string_view text, absl::string_view filename,
                                               google::protobuf::Message* out);

inline constexpr int kMaxTextProtoErrors = 50;

// Collects the semantic problems of one config so that Validate() can report all at once.
class ConfigProblems {
 public:
  // `source` may be null (a proto built in code): problems are then prefixed with the field path
  // only. The source must outlive this object.
  explicit ConfigProblems(const TextProtoSource* source) : source_(source) {}

  // Records "where: field_path: message", where = source->Where(field_path).
  void Add(absl::string_view field_path, absl::string_view message);
  // Same, but located at another field: for a missing field that another one requires
  // (dense_ffn_dim is needed because num_dense_layers > 0), point at the one that was written.
  void AddAt(absl::string_view location_path, absl::string_view field_path,
             absl::string_view message);

  bool empty() const { return problems_.empty(); }
  const std::vector<std::string>& problems() const { return problems_; }

  // OK when there are no problems; otherwise InvalidArgument with one problem per line.
  absl::Status ToStatus() const;

 private:
  const TextProtoSource* source_;
  std::vector<std::string> problems_;
};

// A textproto compiled into the binary at build time (see sim/hw/embed_textprotos.cmake).
struct EmbeddedTextProto {
  absl::string_view name;      // file stem: "tpu_v5p"
  absl::string_view path;      // path relative to the source root: "hardware/tpu_v5p.textproto"
  absl::string_view contents;  // the file's text
};

// The entry of `files` whose name is `name`, or nullptr.
const EmbeddedTextProto* FindEmbeddedTextProto(absl::Span<const EmbeddedTextProto> files,
                                               absl::string_view name);

// True when a `--hw`/`--model` argument names a file rather than a built-in: it contains a '/'
// or ends in ".textproto".
bool LooksLikeTextProtoPath(absl::string_view name_or_path);

// Reads a whole regular file of at most 16 MiB. NotFound naming the path when it cannot be
// opened; InvalidArgument for a directory, a device or a larger file (sim/util/file_io.h).
absl::StatusOr<std::string> ReadTextFile(const std::string& path);

}  // namespace perfsim

#endif  // PERFSIM_SIM_UTIL_TEXTPROTO_H_
