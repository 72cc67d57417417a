#include "sim/util/file_io.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "absl/strings/str_cat.h"

namespace perfsim {
namespace {

std::string ErrnoText(int error) { return std::strerror(error); }

// What a non-regular file is, in the words of the messages.
std::string KindOf(mode_t mode) {
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISSOCK(mode)) return "a socket";
  return "not a regular file";
}

absl::Status TooLarge(absl::string_view name, int64_t max_bytes, int64_t got_bytes,
                      bool at_least) {
  const std::string in_words = InputLimitText(max_bytes);
  const std::string limit = absl::StrCat(max_bytes, " bytes");
  return absl::InvalidArgumentError(
      absl::StrCat(name, ": expected at most ", limit,
                   in_words == limit ? "" : absl::StrCat(" (", in_words, ")"), "; got ",
                   at_least ? "more" : absl::StrCat(got_bytes)));
}

// Writes all of `data` to `fd`, retrying short writes and EINTR.
bool WriteAll(int fd, absl::string_view data, int* error) {
  while (!data.empty()) {
    const ssize_t n = ::write(fd, data.data(), data.size());
    if (n < 0) {
      if (errno == EINTR) continue;
      *error = errno;
      return false;
    }
    data.remove_prefix(static_cast<size_t>(n));
  }
  return true;
}

// The mode a new file gets from open(..., 0666): 0666 less the process's umask.
mode_t DefaultFileMode() {
  const mode_t mask = ::umask(0);
  ::umask(mask);
  return 0666 & ~mask;
}

// Writes `contents` to a new temporary file beside `path` and returns its name; the caller
// renames it over `path` or removes it.
absl::StatusOr<std::string> WriteTemporary(const std::string& path, absl::string_view contents) {
  if (absl::Status s = CheckWritablePath(path); !s.ok()) return s;
  mode_t mode = DefaultFileMode();
  struct stat existing;
  if (::stat(path.c_str(), &existing) == 0) mode = existing.st_mode & 07777;
  std::string temporary = absl::StrCat(path, ".tmp.XXXXXX");
  const int fd = ::mkstemp(temporary.data());
  if (fd < 0) {
    const int error = errno;
    const std::string why = absl::StrCat(path, ": cannot write: ", ErrnoText(error));
    if (error == EACCES || error == EPERM || error == EROFS) {
      return absl::PermissionDeniedError(why);
    }
    return absl::InvalidArgumentError(why);
  }
  int error = 0;
  bool ok = ::fchmod(fd, mode) == 0 || (error = errno, false);
  ok = ok && WriteAll(fd, contents, &error);
  ok = ok && (::fsync(fd) == 0 || (error = errno, false));
  if (::close(fd) != 0 && ok) {
    error = errno;
    ok = false;
  }
  if (!ok) {
    ::unlink(temporary.c_str());
    return absl::DataLossError(absl::StrCat(path, ": write failed: ", ErrnoText(error)));
  }
  return temporary;
}

absl::Status RenameOver(const std::string& temporary, const std::string& target) {
  if (::rename(temporary.c_str(), target.c_str()) == 0) return absl::OkStatus();
  const int error = errno;
  ::unlink(temporary.c_str());
  return absl::DataLossError(absl::StrCat(target, ": cannot replace: ", ErrnoText(error)));
}

}  // namespace

std::string InputLimitText(int64_t max_bytes) {
  constexpr int64_t kGiB = int64_t{1} << 30;
  constexpr int64_t kMiB = int64_t{1} << 20;
  if (max_bytes % kGiB == 0) return absl::StrCat(max_bytes / kGiB, " GiB");
  if (max_bytes % kMiB == 0) return absl::StrCat(max_bytes / kMiB, " MiB");
  return absl::StrCat(max_bytes, " bytes");
}

absl::StatusOr<std::string> ReadRegularFile(const std::string& path, int64_t max_bytes) {
  // O_NONBLOCK: opening a FIFO must not wait for a writer; the type check below refuses it.
  const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) {
    const int error = errno;
    if (error == ENOENT || error == ENOTDIR) {
      return absl::NotFoundError(absl::StrCat(path, ": cannot open file: ", ErrnoText(error)));
    }
    if (error == EACCES || error == EPERM) {
      return absl::PermissionDeniedError(
          absl::StrCat(path, ": cannot open file: ", ErrnoText(error)));
    }
    return absl::InvalidArgumentError(absl::StrCat(path, ": cannot open file: ", ErrnoText(error)));
  }
  struct Closer {
    int fd;
    ~Closer() { ::close(fd); }
  } closer{fd};
  struct stat info;
  if (::fstat(fd, &info) != 0) {
    return absl::DataLossError(absl::StrCat(path, ": cannot stat: ", ErrnoText(errno)));
  }
  if (!S_ISREG(info.st_mode)) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": expected a regular file or '-'; got ", KindOf(info.st_mode)));
  }
  if (info.st_size > max_bytes) return TooLarge(path, max_bytes, info.st_size, false);
  // Regular files never block; clear O_NONBLOCK anyway so that reads behave plainly.
  ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) & ~O_NONBLOCK);
  std::string contents;
  contents.reserve(static_cast<size_t>(info.st_size));
  char buffer[1 << 16];
  while (true) {
    const ssize_t n = ::read(fd, buffer, sizeof(buffer));
    if (n < 0) {
      if (errno == EINTR) continue;
      return absl::DataLossError(absl::StrCat(path, ": read error: ", ErrnoText(errno)));
    }
    if (n == 0) break;
    // Files that grow while read, and /proc files that report size 0, are held to the limit.
    if (static_cast<int64_t>(contents.size()) + n > max_bytes) {
      return TooLarge(path, max_bytes, 0, true);
    }
    contents.append(buffer, static_cast<size_t>(n));
  }
  return contents;
}

absl::StatusOr<std::string> ReadInputFile(const std::string& path, std::istream& stdin_stream,
                                          int64_t max_bytes) {
  if (path != "-") return ReadRegularFile(path, max_bytes);
  std::string contents;
  char buffer[1 << 16];
  while (stdin_stream) {
    stdin_stream.read(buffer, sizeof(buffer));
    const std::streamsize n = stdin_stream.gcount();
    if (n <= 0) break;
    if (static_cast<int64_t>(contents.size()) + n > max_bytes) {
      return TooLarge("<stdin>", max_bytes, 0, true);
    }
    contents.append(buffer, static_cast<size_t>(n));
  }
  if (stdin_stream.bad()) return absl::DataLossError("<stdin>: read error");
  return contents;
}

absl::Status CheckWritablePath(const std::string& path) {
  if (path.empty()) return absl::InvalidArgumentError("expected a file path to write; got ''");
  struct stat info;
  if (::stat(path.c_str(), &info) != 0) return absl::OkStatus();
  if (S_ISREG(info.st_mode)) return absl::OkStatus();
  return absl::InvalidArgumentError(
      absl::StrCat(path, ": expected a regular file to write; got ", KindOf(info.st_mode)));
}

absl::Status WriteFileAtomically(const std::string& path, absl::string_view contents) {
  absl::StatusOr<std::string> temporary = WriteTemporary(path, contents);
  if (!temporary.ok()) return temporary.status();
  return RenameOver(*temporary, path);
}

AtomicFileSet::~AtomicFileSet() {
  if (committed_) return;
  for (const Staged& s : staged_) ::unlink(s.temporary.c_str());
}

absl::Status AtomicFileSet::Stage(const std::string& path, absl::string_view contents) {
  absl::StatusOr<std::string> temporary = WriteTemporary(path, contents);
  if (!temporary.ok()) return temporary.status();
  staged_.push_back({path, *std::move(temporary)});
  return absl::OkStatus();
}

absl::Status AtomicFileSet::Commit() {
  // Every file is already written in full; a rename in the same directory does not fail for
  // lack of space, so past this point the set lands whole unless the directory itself changes.
  committed_ = true;
  for (size_t i = 0; i < staged_.size(); ++i) {
    if (absl::Status s = RenameOver(staged_[i].temporary, staged_[i].target); !s.ok()) {
      for (size_t j = i + 1; j < staged_.size(); ++j) ::unlink(staged_[j].temporary.c_str());
      return s;
    }
  }
  return absl::OkStatus();
}

}  // namespace perfsim
