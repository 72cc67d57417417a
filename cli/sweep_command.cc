// `perfsim sweep`: evaluate a space of plans (parallelism, backend, tiling, batch, routing),
// rank them, and scale out as shards that `perfsim sweep merge` combines.
#include <signal.h>
#include <unistd.h>

#include <iostream>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "cli/cli.h"
#include "cli/cli_util.h"
#include "cli/flags.h"
#include "sim/sweep/progress.h"
#include "sim/sweep/ranking.h"
#include "sim/sweep/runner.h"
#include "sim/sweep/shard_file.h"
#include "sim/sweep/space.h"
#include "sim/sweep/sweep_report.h"
#include "sim/util/file_io.h"
#include "sim/util/status.h"

namespace perfsim {
namespace {

// 128 + SIGINT, as shells report a command stopped by Ctrl-C: the output is partial.
constexpr int kExitInterrupted = 130;

constexpr char kSweepUsage[] =
    R"(usage: perfsim sweep [space flags] [--space FILE.textproto] [--rank-by step|tokens|mfu]
                     [--top N] [--format=table|json] [--csv FILE] [--jobs J] [--quiet]
                     [--shard i/N --out FILE]
       perfsim sweep merge SHARD_FILE... [--rank-by ...] [--top N] [--format ...] [--csv FILE]

Evaluates every point of a space of plans with the `perfsim predict` model and ranks them.
Default space: DeepSeek-V3 MoE layer, fwd_bwd, seq 4096, TPU v7x 4x8x8 (256 chips, 512
devices), every factorisation dp·fsdp·ep·tp = 512, every backend, 1 sequence per device,
the default tiling, uniform routing.

space flags (a --space textproto, proto/sweep.proto, gives the same; flags override it):
  --model NAME|FILE --hw NAME|FILE --mesh AxBxC --phase fwd|fwd_bwd --seq S --adam
  --dp LIST --fsdp LIST --ep LIST --tp LIST
                   values of each mesh axis, e.g. --ep 64,128,256; '*' (default): every divisor
                   of the device count. dp·fsdp·ep·tp must equal the device count.
  --backends LIST  comma-separated backend names, or 'all' (default)
  --batch-per-device LIST   sequences per device (global batch = b·devices), default 1
  --tiling-wi T1:T2:...  --tiling-wo T1:T2:...
                   kernel tilings tm,tk,tn (or 9 numbers fwd,dlhs,drhs) to try; every wi
                   choice is crossed with every wo choice
  --search         also try, per kernel, the fastest tiling that fits (perfsim fit --search)
  --routings LIST  comma-separated: uniform, zipf:S, hot:P, file:PATH (default uniform)

output:
  --rank-by        step (step time, default), tokens (tokens/s/chip) or mfu
  --top N          plans to show (default 10)
  --format=json    the report as JSON (SweepReport in proto/report.proto)
  --csv FILE       every evaluated point, feasible or not, with its reason
  --quiet          no progress on stderr (a bar on a terminal, else a line every 5 s)
Infeasible points are counted by reason: divisibility, backend_refusal, tiling_misfit,
lowering_failed, hbm_over_capacity, error.

scale-out:
  --shard i/N      evaluate shard i of N (round robin over blocks of points that share a
                   lowered module); with --out FILE, write the shard's results for merge
  --jobs J         threads (default 1, at most 256); results are identical for every J
  merge            combine shard files into the ranking one run gives, byte for byte; refuses
                   shards of different spaces, missing, duplicate or interrupted shards

Each point's figures are `perfsim predict`'s on the same scenario, bit for bit: a block of
points sharing a lowered module is prepared once, and each point re-does only what its
routing changes.

A space of more than 1000000 points is refused (exit 2) with its count, before anything is
enumerated: split it into narrower sweeps.

Ctrl-C at any point, reading the space included, stops the evaluation and prints the ranking
of the points evaluated so far (none when it came before the first point).

exit codes:
  0    the space was evaluated (infeasible points are results, not failures)
  2    bad input or usage (flags, space file, shard files), with the reason on stderr
  3    internal error
  130  interrupted by Ctrl-C (SIGINT; 128 + 2, as shells report it): the ranking is of the
       points evaluated so far, and a shard written with --out is marked incomplete, which
       merge refuses
)";

std::vector<FlagSpec> SweepFlagSpecs() {
  std::vector<FlagSpec> specs;
  for (const char* name : {"model",
                           "hw",
                           "mesh",
                           "phase",
                           "seq",
                           "dp",
                           "fsdp",
                           "ep",
                           "tp",
                           "backends",
                           "batch-per-device",
                           "tiling-wi",
                           "tiling-wo",
                           "routings",
                           "space",
                           "rank-by",
                           "top",
                           "format",
                           "csv",
                           "shard",
                           "out",
                           "jobs"}) {
    specs.push_back({name, true});
  }
  for (const char* name : {"adam", "search", "quiet", "help"}) specs.push_back({name, false});
  return specs;
}

absl::Status UsageError(absl::string_view message) { return absl::InvalidArgumentError(message); }

absl::StatusOr<std::vector<int64_t>> IntList(const std::string& flag, const std::string& text) {
  std::vector<int64_t> out;
  for (absl::string_view part : absl::StrSplit(text, ',')) {
    int64_t v = 0;
    if (!absl::SimpleAtoi(part, &v) || v < 1) {
      return UsageError(absl::StrCat(
          "--", flag, ": expected comma-separated positive integers; got '", text, "'"));
    }
    out.push_back(v);
  }
  return out;
}

absl::StatusOr<std::vector<ProjectionTilings>> TilingList(const std::string& flag,
                                                          const std::string& text) {
  std::vector<ProjectionTilings> out;
  for (absl::string_view choice : absl::StrSplit(text, ':')) {
    std::vector<int64_t> values;
    for (absl::string_view part : absl::StrSplit(choice, ',')) {
      int64_t v = 0;
      if (!absl::SimpleAtoi(part, &v)) {
        return UsageError(absl::StrCat(
            "--", flag, ": expected tilings tm,tk,tn separated by ':'; got '", text, "'"));
      }
      values.push_back(v);
    }
    PERFSIM_ASSIGN_OR_RETURN(ProjectionTilings t,
                             ParseProjectionTilings(values, absl::StrCat("--", flag)));
    out.push_back(t);
  }
  return out;
}

// The space: the --space file (or the default), then every flag given on top of it.
absl::StatusOr<SweepSpace> SpaceFromFlags(const ParsedFlags& flags, CliIo& io) {
  SweepSpace space;
  if (flags.Has("space")) {
    PERFSIM_ASSIGN_OR_RETURN(std::string text, ReadInput(flags.Get("space"), io.in));
    PERFSIM_ASSIGN_OR_RETURN(space, ParseSweepSpace(text, flags.Get("space")));
  }
  if (flags.Has("model")) space.model = flags.Get("model");
  if (flags.Has("hw")) {
    space.hw = flags.Get("hw");
    space.mesh = "";  // the chip's default slice unless --mesh says otherwise
  }
  if (flags.Has("mesh")) space.mesh = flags.Get("mesh");
  if (flags.Has("phase")) {
    absl::StatusOr<Phase> phase = ParsePhase(flags.Get("phase"));
    if (!phase.ok()) return Annotate(phase.status(), "--phase");
    space.phase = *phase;
  }
  if (flags.Has("seq")) {
    PERFSIM_ASSIGN_OR_RETURN(std::vector<int64_t> seq, IntList("seq", flags.Get("seq")));
    if (seq.size() != 1)
      return UsageError(
          absl::StrCat("--seq: expected one positive integer; got '", flags.Get("seq"), "'"));
    space.seq = seq[0];
  }
  if (flags.Has("adam")) space.adam = true;
  for (int a = 0; a < 4; ++a) {
    const std::string name = kSweepAxisNames[a];
    if (!flags.Has(name)) continue;
    const std::string text = flags.Get(name);
    if (text == "*" || text == "any") {
      space.axes[a].clear();
      continue;
    }
    PERFSIM_ASSIGN_OR_RETURN(space.axes[a], IntList(name, text));
  }
  if (flags.Has("backends")) {
    space.backends.clear();
    if (flags.Get("backends") != "all") {
      space.backends = absl::StrSplit(flags.Get("backends"), ',');
    }
  }
  if (flags.Has("batch-per-device")) {
    PERFSIM_ASSIGN_OR_RETURN(space.batch_per_device,
                             IntList("batch-per-device", flags.Get("batch-per-device")));
  }
  if (flags.Has("tiling-wi") || flags.Has("tiling-wo") || flags.Has("search")) {
    std::vector<std::optional<ProjectionTilings>> wi = {std::nullopt}, wo = {std::nullopt};
    if (flags.Has("tiling-wi")) {
      PERFSIM_ASSIGN_OR_RETURN(std::vector<ProjectionTilings> list,
                               TilingList("tiling-wi", flags.Get("tiling-wi")));
      wi.assign(list.begin(), list.end());
    }
    if (flags.Has("tiling-wo")) {
      PERFSIM_ASSIGN_OR_RETURN(std::vector<ProjectionTilings> list,
                               TilingList("tiling-wo", flags.Get("tiling-wo")));
      wo.assign(list.begin(), list.end());
    }
    // The cross product is a list of its own: counted before it is built.
    if (static_cast<int64_t>(wi.size()) > kMaxSweepPoints / static_cast<int64_t>(wo.size())) {
      return UsageError(absl::StrCat("--tiling-wi x --tiling-wo: expected at most ",
                                     kMaxSweepPoints, " tiling choices; got ", wi.size(), " x ",
                                     wo.size()));
    }
    space.tilings.clear();
    if (flags.Has("tiling-wi") || flags.Has("tiling-wo") || !flags.Has("search")) {
      for (const auto& i : wi) {
        for (const auto& o : wo) space.tilings.push_back(SweepTiling{.wi = i, .wo = o});
      }
    }
    if (flags.Has("search")) space.tilings.push_back(SweepTiling{.search = true});
  }
  if (flags.Has("routings")) space.routings = absl::StrSplit(flags.Get("routings"), ',');
  return space;
}

struct OutputOptions {
  SweepReportOptions report;
  std::string format = "table";
  std::string csv;
};

absl::StatusOr<OutputOptions> OutputFromFlags(const ParsedFlags& flags) {
  OutputOptions o;
  PERFSIM_ASSIGN_OR_RETURN(o.format, TableOrJsonFormat(flags));
  PERFSIM_ASSIGN_OR_RETURN(o.report.rank_by, ParseRankBy(flags.Get("rank-by", "step")));
  if (flags.Has("top")) {
    if (!absl::SimpleAtoi(flags.Get("top"), &o.report.top) || o.report.top < 0) {
      return UsageError(
          absl::StrCat("--top: expected a non-negative integer; got '", flags.Get("top"), "'"));
    }
  }
  o.csv = flags.Get("csv");
  // Refuse an output that cannot be written before the evaluation, not after it.
  if (!o.csv.empty()) PERFSIM_RETURN_IF_ERROR(Annotate(CheckWritablePath(o.csv), "--csv"));
  if (flags.Has("out")) {
    PERFSIM_RETURN_IF_ERROR(Annotate(CheckWritablePath(flags.Get("out")), "--out"));
  }
  return o;
}

absl::Status WriteText(const std::string& flag, const std::string& path, const std::string& text) {
  return Annotate(WriteFileAtomically(path, text), absl::StrCat("--", flag));
}

absl::Status Emit(const SweepEnumeration& e, const std::vector<PointResult>& results,
                  const SweepSummary& summary, const OutputOptions& o, CliIo& io) {
  if (!o.csv.empty())
    PERFSIM_RETURN_IF_ERROR(WriteText("csv", o.csv, SweepCsv(e, results, summary)));
  io.out << (o.format == "json" ? SweepJson(e, results, summary, o.report)
                                : FormatSweepTable(e, results, summary, o.report));
  return absl::OkStatus();
}

int RunMerge(const std::vector<std::string>& args, CliIo& io) {
  std::vector<FlagSpec> specs;
  for (const char* name : {"rank-by", "top", "format", "csv"}) specs.push_back({name, true});
  specs.push_back({"help", false});
  absl::StatusOr<ParsedFlags> flags = ParseFlags(args, specs);
  if (!flags.ok()) return ReportStatus(flags.status(), io);
  if (flags->Has("help")) {
    io.out << kSweepUsage;
    return kExitOk;
  }
  absl::StatusOr<OutputOptions> output = OutputFromFlags(*flags);
  if (!output.ok()) return ReportStatus(output.status(), io);
  if (flags->positional().empty()) {
    return ReportStatus(UsageError("sweep merge: expected shard files; got none"), io);
  }
  std::vector<ShardFile> shards;
  for (const std::string& path : flags->positional()) {
    absl::StatusOr<std::string> text = ReadInput(path, io.in);
    if (!text.ok()) return ReportStatus(UsageError(text.status().message()), io);
    absl::StatusOr<ShardFile> shard = ParseShardFile(*text, path);
    if (!shard.ok()) return ReportStatus(shard.status(), io);
    shards.push_back(std::move(shard).value());
  }
  absl::StatusOr<MergedSweep> merged = MergeShards(shards);
  if (!merged.ok()) return ReportStatus(merged.status(), io);
  const SweepSummary summary =
      Summarize(merged->results, output->report.rank_by, merged->enumeration.num_points(), false);
  return ReportStatus(Emit(merged->enumeration, merged->results, summary, *output, io), io);
}

void OnSigint(int) { RequestSweepInterrupt(); }

// Ctrl-C handling for the whole command, from before the flags are read until it returns:
// the handler only sets the atomic flag the evaluation loop checks, so an interrupt while the
// space is read or enumerated stops the run before its first point. SA_RESETHAND lets a
// second Ctrl-C end the process at once. The previous handler comes back on return.
class SigintScope {
 public:
  SigintScope() {
    ClearSweepInterrupt();
    struct sigaction action = {};
    action.sa_handler = OnSigint;
    action.sa_flags = SA_RESETHAND;
    sigemptyset(&action.sa_mask);
    sigaction(SIGINT, &action, &previous_);
  }
  ~SigintScope() { sigaction(SIGINT, &previous_, nullptr); }
  SigintScope(const SigintScope&) = delete;
  SigintScope& operator=(const SigintScope&) = delete;

 private:
  struct sigaction previous_ = {};
};

}  // namespace

int RunSweepCommand(const std::vector<std::string>& args, CliIo& io) {
  if (!args.empty() && args[0] == "merge") {
    return RunMerge(std::vector<std::string>(args.begin() + 1, args.end()), io);
  }
  const SigintScope sigint;
  absl::StatusOr<ParsedFlags> flags = ParseFlags(args, SweepFlagSpecs());
  if (!flags.ok()) return ReportStatus(flags.status(), io);
  if (flags->Has("help")) {
    io.out << kSweepUsage;
    return kExitOk;
  }
  if (!flags->positional().empty()) {
    return ReportStatus(UsageError(absl::StrCat("sweep: expected flags or 'merge'; got '",
                                                flags->positional()[0], "'")),
                        io);
  }
  absl::StatusOr<OutputOptions> output = OutputFromFlags(*flags);
  if (!output.ok()) return ReportStatus(output.status(), io);
  SweepRunOptions run_options;
  if (flags->Has("shard")) {
    absl::StatusOr<std::pair<int64_t, int64_t>> shard = ParseShardSpec(flags->Get("shard"));
    if (!shard.ok()) return ReportStatus(shard.status(), io);
    run_options.shard = shard->first;
    run_options.shard_count = shard->second;
    output->report.scope = absl::StrCat("shard ", shard->first, "/", shard->second);
  }
  if (flags->Has("out") && !flags->Has("shard")) {
    run_options.shard_count = 1;
    output->report.scope = "shard 0/1";
  }
  if (flags->Has("jobs") &&
      (!absl::SimpleAtoi(flags->Get("jobs"), &run_options.jobs) || run_options.jobs < 1 ||
       run_options.jobs > kMaxSweepJobs)) {
    return ReportStatus(UsageError(absl::StrCat("--jobs: expected a positive integer at most ",
                                                kMaxSweepJobs, "; got '", flags->Get("jobs"),
                                                "'")),
                        io);
  }
  absl::StatusOr<SweepSpace> space = SpaceFromFlags(*flags, io);
  if (!space.ok()) return ReportStatus(space.status(), io);
  absl::StatusOr<SweepEnumeration> e = SweepEnumeration::Create(*space);
  if (!e.ok()) return ReportStatus(e.status(), io);

  const bool terminal = &io.err == &std::cerr && isatty(STDERR_FILENO) == 1;
  std::optional<ProgressMeter> meter;
  const int64_t planned =
      static_cast<int64_t>(e->ShardPoints(run_options.shard, run_options.shard_count).size());
  if (!flags->Has("quiet")) {
    meter.emplace(io.err, planned, ProgressOptions{.terminal = terminal});
    run_options.progress = [&meter](int64_t done, int64_t) { meter->Update(done); };
  }
  SweepRun run = RunSweep(*e, run_options);
  if (meter.has_value()) meter->Finish(static_cast<int64_t>(run.results.size()), run.interrupted);

  if (flags->Has("out")) {
    absl::Status written = WriteText("out", flags->Get("out"),
                                     WriteShardFile(*e, run_options.shard, run_options.shard_count,
                                                    run.results, run.planned, !run.interrupted));
    if (!written.ok()) return ReportStatus(written, io);
  }
  const SweepSummary summary =
      Summarize(run.results, output->report.rank_by, run.planned, run.interrupted);
  if (absl::Status s = Emit(*e, run.results, summary, *output, io); !s.ok()) {
    return ReportStatus(s, io);
  }
  return run.interrupted ? kExitInterrupted : kExitOk;
}

}  // namespace perfsim
