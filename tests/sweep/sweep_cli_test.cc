// `perfsim sweep` and `perfsim sweep merge` through the command-line library: exit codes,
// outputs, files.
#include <csignal>
#include <istream>
#include <sstream>
#include <streambuf>
#include <string>
#include <utility>
#include <vector>

#include "cli/cli.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/cli/cli_test_util.h"
#include "tests/sweep/sweep_test_util.h"

namespace perfsim {
namespace {

using ::perfsim::testing::CliResult;
using ::testing::HasSubstr;

// `perfsim sweep ARGS...`.
CliResult RunSweepCli(std::vector<std::string> args) {
  args.insert(args.begin(), "sweep");
  return ::perfsim::testing::RunCli(args);
}

const std::vector<std::string> kNano = {"--model", "nano", "--hw",  "gpu_h100", "--mesh", "8",
                                        "--phase", "fwd",  "--seq", "4",        "--quiet"};

std::vector<std::string> Nano(std::vector<std::string> more) {
  std::vector<std::string> args = kNano;
  args.insert(args.end(), more.begin(), more.end());
  return args;
}

TEST(SweepCli, RanksASmallSpaceAndWritesTheCsv) {
  const std::string csv = ::testing::TempDir() + "/points.csv";
  CliResult r =
      RunSweepCli(Nano({"--backends", "dense_einsum,ep_ragged_a2a", "--top", "3", "--csv", csv}));
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("points: 40, evaluated 40, feasible 23"));
  EXPECT_THAT(r.out, HasSubstr("top 3 by step time"));
  EXPECT_THAT(r.out, HasSubstr("why: "));
  EXPECT_THAT(r.out, HasSubstr("pareto front"));
  const std::string text = ReadFileOrDie(csv);
  EXPECT_EQ(std::count(text.begin(), text.end(), '\n'), 41);
  CliResult json =
      RunSweepCli(Nano({"--backends", "ep_ragged_a2a", "--format=json", "--rank-by", "mfu"}));
  ASSERT_EQ(json.code, 0) << json.err;
  EXPECT_THAT(json.out, HasSubstr("\"rank_by\": \"mfu\""));
  EXPECT_THAT(json.out, HasSubstr("\"rank\": 1,"));
}

TEST(SweepCli, ShardFilesMergeIntoTheSingleRunsOutput) {
  const std::vector<std::string> space =
      Nano({"--backends", "ep_ragged_a2a,dense_einsum", "--routings", "uniform,zipf:1.2"});
  CliResult whole = RunSweepCli(space);
  ASSERT_EQ(whole.code, 0) << whole.err;
  std::vector<std::string> merge = {"merge"};
  for (int i = 0; i < 3; ++i) {
    const std::string out = ::testing::TempDir() + "/part" + std::to_string(i) + ".shard";
    std::vector<std::string> args = space;
    args.insert(args.end(), {"--shard", std::to_string(i) + "/3", "--out", out});
    CliResult r = RunSweepCli(args);
    ASSERT_EQ(r.code, 0) << r.err;
    EXPECT_THAT(r.out, HasSubstr("shard " + std::to_string(i) + "/3"));
    merge.push_back(out);
  }
  CliResult merged = RunSweepCli(merge);
  ASSERT_EQ(merged.code, 0) << merged.err;
  EXPECT_EQ(merged.out, whole.out);
  // Two of three shards: exit 2, naming what is missing.
  merge.pop_back();
  CliResult missing = RunSweepCli(merge);
  EXPECT_EQ(missing.code, 2);
  EXPECT_THAT(missing.err, HasSubstr("missing 2/3"));
}

TEST(SweepCli, JobsDoNotChangeTheOutput) {
  const std::vector<std::string> space =
      Nano({"--backends", "ep_ragged_a2a,ring_of_experts", "--hw", "tpu_v5p", "--mesh", "2x2x2"});
  CliResult one = RunSweepCli(space);
  std::vector<std::string> two = space;
  two.insert(two.end(), {"--jobs", "2"});
  CliResult r = RunSweepCli(two);
  ASSERT_EQ(one.code, 0) << one.err;
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(one.out, r.out);
}

TEST(SweepCli, BadInputExitsTwo) {
  const struct {
    std::vector<std::string> args;
    const char* message;
  } cases[] = {
      {Nano({"--shard", "3/3"}), "--shard: expected i/N with 0 <= i < N; got '3/3'"},
      {Nano({"--shard", "x"}), "--shard: expected i/N"},
      {Nano({"--backends", "warp_drive"}), "warp_drive"},
      {Nano({"--ep", "3"}), "ep: expected values dividing the 8 devices"},
      {Nano({"--ep", "8", "--tp", "2"}), "expected dp·fsdp·ep·tp = 8"},
      {Nano({"--routings", "zipf"}), "expected uniform, zipf:S"},
      {Nano({"--tiling-wi", "1,2"}), "--tiling-wi: expected tm,tk,tn"},
      {Nano({"--rank-by", "speed"}), "--rank-by: expected step, tokens or mfu"},
      {Nano({"--jobs", "0"}), "--jobs: expected a positive integer"},
      {Nano({"--batch-per-device", "0"}), "--batch-per-device: expected"},
      {Nano({"--space", "/nonexistent/space.textproto"}), "cannot open"},
      {{"merge"}, "expected shard files"},
      {{"merge", "/nonexistent.shard"}, "cannot open"},
  };
  for (const auto& c : cases) {
    CliResult r = RunSweepCli(c.args);
    EXPECT_EQ(r.code, 2) << c.message << "\n" << r.err;
    EXPECT_THAT(r.err, HasSubstr(c.message));
  }
}

TEST(SweepCli, HelpDocumentsEveryExitCodeTheInterruptionIncluded) {
  CliResult r = RunSweepCli({"--help"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("exit codes:"));
  for (const char* line :
       {"\n  0 ", "\n  2 ", "\n  3 ", "\n  130  interrupted by Ctrl-C (SIGINT"}) {
    EXPECT_THAT(r.out, HasSubstr(line));
  }
}

TEST(SweepCli, SpaceFileErrorsPointIntoTheFile) {
  const std::string path = WriteTempFile("bad_space.textproto",
                                         "model: \"nano\"\nbackends: \"ep_ragged_a2a\"\n"
                                         "tilings { wi: [8, 8] }\n");
  CliResult r = RunSweepCli({"--space", path, "--quiet"});
  EXPECT_EQ(r.code, 2);
  EXPECT_THAT(r.err, HasSubstr(path + ":3:"));
  const std::string good =
      WriteTempFile("space.textproto",
                    "model: \"nano\"\nhw: \"gpu_h100\"\nmesh: \"8\"\nphase: \"fwd\"\nseq: 4\n"
                    "ep { values: [4] }\ntp { values: [1] }\nbackends: \"ep_ragged_a2a\"\n"
                    "routings: [\"uniform\", \"hot:0.5\"]\n");
  CliResult ok = RunSweepCli({"--space", good, "--quiet"});
  ASSERT_EQ(ok.code, 0) << ok.err;
  // ep = 4, tp = 1: dp·fsdp = 2 -> (1, 2) and (2, 1); two routings.
  EXPECT_THAT(ok.out, HasSubstr("points: 4, evaluated 4, feasible 4"));
}

TEST(SweepCli, MergeRefusesShardsOfDifferentSpaces) {
  const std::string a = ::testing::TempDir() + "/a.shard";
  const std::string b = ::testing::TempDir() + "/b.shard";
  ASSERT_EQ(RunSweepCli(Nano({"--backends", "dense_einsum", "--shard", "0/2", "--out", a})).code,
            0);
  ASSERT_EQ(
      RunSweepCli(Nano({"--backends", "dense_einsum", "--seq", "8", "--shard", "1/2", "--out", b}))
          .code,
      0);
  CliResult r = RunSweepCli({"merge", a, b});
  EXPECT_EQ(r.code, 2);
  EXPECT_THAT(r.err, HasSubstr(b + ":2:13: expected the space of " + a));
}

TEST(SweepCli, JobsAreCappedAndTheCapIsInTheHelp) {
  CliResult r = RunSweepCli(Nano({"--jobs", "10000"}));
  EXPECT_EQ(r.code, 2);
  EXPECT_THAT(r.err, HasSubstr("--jobs: expected a positive integer at most 256; got '10000'"));
  EXPECT_THAT(RunSweepCli({"--help"}).out,
              HasSubstr("--jobs J         threads (default 1, at most 256)"));
}

TEST(SweepCli, AHugeSpaceIsRefusedWithItsCountBeforeItIsEnumerated) {
  // The default space (220 factorisations of 512 devices x 8 backends) times 600 batches is
  // 1,056,000 points, beyond the 1,000,000 limit.
  std::string batches = "1";
  for (int b = 2; b <= 600; ++b) batches += "," + std::to_string(b);
  CliResult r = RunSweepCli({"--batch-per-device", batches, "--quiet"});
  EXPECT_EQ(r.code, 2) << r.err;
  EXPECT_THAT(r.err, HasSubstr("sweep space: expected at most 1000000 points; got 1056000 (220 "
                               "factorisations x 8 backend and tiling choices x 600 batches x 1 "
                               "routings)"));
  // 2,000 x 2,000 tilings: the cross product is refused before it is built, let alone 10^10
  // points enumerated.
  std::string tilings = "128,128,128";
  for (int t = 1; t < 2000; ++t) tilings += ":128,128,128";
  r = RunSweepCli({"--tiling-wi", tilings, "--tiling-wo", tilings, "--quiet"});
  EXPECT_EQ(r.code, 2) << r.err;
  EXPECT_THAT(r.err, HasSubstr("--tiling-wi x --tiling-wo: expected at most 1000000 tiling "
                               "choices; got 2000 x 2000"));
}

// A stream that delivers Ctrl-C the first time it is read, then `text`: SIGINT while the space
// is being read, before any point is evaluated.
class InterruptingStreambuf : public std::streambuf {
 public:
  explicit InterruptingStreambuf(std::string text) : text_(std::move(text)) {}

 protected:
  int_type underflow() override {
    if (served_) return traits_type::eof();
    served_ = true;
    std::raise(SIGINT);
    setg(text_.data(), text_.data(), text_.data() + text_.size());
    return traits_type::to_int_type(*gptr());
  }

 private:
  std::string text_;
  bool served_ = false;
};

TEST(SweepCli, CtrlCBeforeTheFirstPointPrintsAnEmptyRankingAndExits130) {
  // Ignored around the command so that, were the command not to handle it, the test process
  // would not die; the command installs its own handler while it runs.
  const auto previous = std::signal(SIGINT, SIG_IGN);
  InterruptingStreambuf buffer(
      "model: \"nano\"\nhw: \"gpu_h100\"\nmesh: \"8\"\nphase: \"fwd\"\nseq: 4\n"
      "backends: \"ep_ragged_a2a\"\n");
  std::istream in(&buffer);
  std::ostringstream out, err;
  const int code = RunPerfsim({"sweep", "--space", "-", "--quiet"}, in, out, err);
  std::signal(SIGINT, previous);
  EXPECT_EQ(code, 130) << err.str();
  EXPECT_THAT(out.str(), HasSubstr("INTERRUPTED after 0 of 20 points"));
  // The next sweep starts afresh.
  CliResult next = RunSweepCli(Nano({"--backends", "ep_ragged_a2a"}));
  EXPECT_EQ(next.code, 0) << next.err;
  EXPECT_THAT(next.out, HasSubstr("points: 20, evaluated 20"));
}

}  // namespace
}  // namespace perfsim
