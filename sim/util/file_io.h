// Reading inputs and writing outputs safely: the only file I/O the rest of perfsim uses.
//
// Reading: an input is a regular file or standard input ("-"), read whole up to a size limit
// (kMaxInputBytes unless the caller states another); a directory, a device, a FIFO or a file
// past the limit is refused by name, before anything large is allocated:
//
//   PERFSIM_ASSIGN_OR_RETURN(std::string text, ReadInputFile(path, std::cin));
//   // "/dev/zero: expected a regular file or '-'; got a character device"
//   // "big.hlo: expected at most 1073741824 bytes (1 GiB); got 4294967296"
//
// Writing: every write is checked, and a file is replaced atomically: the contents go to a
// temporary file beside the target, which is flushed, closed and then renamed over it, so a
// reader sees the old file or the new one, never half of one. A failure leaves the target as
// it was and names the path. Several files are written all or nothing with AtomicFileSet:
//
//   AtomicFileSet files;
//   PERFSIM_RETURN_IF_ERROR(files.Stage("hardware/tpu_v5p.textproto", text_a));
//   PERFSIM_RETURN_IF_ERROR(files.Stage("hardware/gpu_h100.textproto", text_b));
//   PERFSIM_RETURN_IF_ERROR(files.Commit());   // renames only once every file was written
//
// Error codes: a path that cannot be written (no such directory, no permission, not a regular
// file) is InvalidArgument or PermissionDenied (bad input, exit 2); a write that fails part way
// (a full disk, an I/O error) is DataLoss (exit 3). Messages start with the path.
#ifndef PERFSIM_SIM_UTIL_FILE_IO_H_
#define PERFSIM_SIM_UTIL_FILE_IO_H_

#include <cstdint>
#include <istream>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace perfsim {

// The default size limit of one input: 1 GiB. The largest inputs perfsim reads are HLO dumps
// (a 100,000-instruction module is about 20 MB) and .npy arrays at test sizes.
inline constexpr int64_t kMaxInputBytes = int64_t{1} << 30;

// The limit in words for --help texts: "1 GiB".
std::string InputLimitText(int64_t max_bytes = kMaxInputBytes);

// Reads the regular file at `path` whole, or `stdin_stream` when path is "-", refusing
// anything over `max_bytes`. NotFound for a missing file; InvalidArgument for a directory, a
// device, a FIFO or socket, or a file over the limit; DataLoss for a read error.
absl::StatusOr<std::string> ReadInputFile(const std::string& path, std::istream& stdin_stream,
                                          int64_t max_bytes = kMaxInputBytes);

// As ReadInputFile for a path that is never "-" (a file named inside another input).
absl::StatusOr<std::string> ReadRegularFile(const std::string& path,
                                            int64_t max_bytes = kMaxInputBytes);

// OK when `path` could be replaced by a regular file: it does not exist, or it is a regular
// file; the directory it names is not checked. Else InvalidArgument "path: expected a regular
// file to write; got a directory". For checking an output flag before the work starts.
absl::Status CheckWritablePath(const std::string& path);

// Replaces `path` with `contents` atomically (temporary file + rename).
absl::Status WriteFileAtomically(const std::string& path, absl::string_view contents);

// Files written all or nothing: Stage writes each to its temporary file; Commit renames them
// all over their targets; destruction without Commit (or after a failed Stage) removes every
// temporary and leaves every target as it was.
class AtomicFileSet {
 public:
  AtomicFileSet() = default;
  AtomicFileSet(const AtomicFileSet&) = delete;
  AtomicFileSet& operator=(const AtomicFileSet&) = delete;
  ~AtomicFileSet();

  absl::Status Stage(const std::string& path, absl::string_view contents);
  absl::Status Commit();

 private:
  struct Staged {
    std::string target;
    std::string temporary;
  };
  std::vector<Staged> staged_;
  bool committed_ = false;
};

}  // namespace perfsim

#endif  // PERFSIM_SIM_UTIL_FILE_IO_H_
