// A main() for the fuzz targets without libFuzzer: runs LLVMFuzzerTestOneInput once on every
// file named on the command line, directories walked recursively in sorted order, so that the
// test suite re-checks the seed corpora and the inputs of past findings (fuzz/seeds/) with the
// compiler and sanitizers of the build at hand (gcc, and ASan + UBSan in CI's sanitized run).
// Fuzzing itself, which needs clang's libFuzzer, is scripts/fuzz.sh.
//
//   ./cli_replay fuzz/seeds/cli            # "cli_replay: 9 inputs"
//
// A target reports a broken property by aborting (a sanitizer report aborts too), so a bad
// input ends the process with a signal and the input's path on stderr. Exit 2 when a path
// cannot be read or no input was found (a replay of nothing must not pass).
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>
#include <string>
#include <system_error>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

namespace {

// The regular files under `path` (itself when it is a file), sorted; false if it is neither.
bool CollectInputs(const std::filesystem::path& path, std::vector<std::filesystem::path>& out) {
  std::error_code ec;
  if (std::filesystem::is_regular_file(path, ec)) {
    out.push_back(path);
    return true;
  }
  if (!std::filesystem::is_directory(path, ec)) return false;
  std::vector<std::filesystem::path> found;
  for (std::filesystem::recursive_directory_iterator it(path, ec), end; !ec && it != end;
       it.increment(ec)) {
    if (it->is_regular_file(ec)) found.push_back(it->path());
  }
  if (ec) return false;
  std::sort(found.begin(), found.end());
  out.insert(out.end(), found.begin(), found.end());
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string name = std::filesystem::path(argv[0]).filename().string();
  std::vector<std::filesystem::path> inputs;
  for (int i = 1; i < argc; ++i) {
    if (!CollectInputs(argv[i], inputs)) {
      std::cerr << name << ": expected a file or directory; got '" << argv[i] << "'\n";
      return 2;
    }
  }
  if (inputs.empty()) {
    std::cerr << name << ": expected at least one input file; got none\n";
    return 2;
  }
  for (const std::filesystem::path& input : inputs) {
    std::ifstream file(input, std::ios::binary);
    const std::vector<char> bytes((std::istreambuf_iterator<char>(file)),
                                  std::istreambuf_iterator<char>());
    if (!file.good() && !file.eof()) {
      std::cerr << name << ": cannot read '" << input.string() << "'\n";
      return 2;
    }
    // Named before the run, so that a crash's report follows the input that caused it.
    std::cerr << name << ": " << input.string() << "\n";
    LLVMFuzzerTestOneInput(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());
  }
  std::cout << name << ": " << inputs.size() << " inputs\n";
  return 0;
}
