#include "sim/sweep/space.h"

#include <algorithm>
#include <utility>

#include "absl/strings/escaping.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "sim/hw/chip_registry.h"
#include "sim/lowering/lowering.h"
#include "sim/moe/model_registry.h"
#include "sim/util/checked_math.h"
#include "sim/util/status.h"

namespace perfsim {
namespace {

std::vector<int64_t> Divisors(int64_t n) {
  std::vector<int64_t> out;
  for (int64_t d = 1; d <= n; ++d) {
    if (n % d == 0) out.push_back(d);
  }
  return out;
}

std::string TilingsText(const ProjectionTilings& t) {
  const auto one = [](const GmmTiling& g) { return absl::StrCat(g.tm, ",", g.tk, ",", g.tn); };
  if (t.fwd.tm == t.dlhs.tm && t.fwd.tk == t.dlhs.tk && t.fwd.tn == t.dlhs.tn &&
      t.fwd.tm == t.drhs.tm && t.fwd.tk == t.drhs.tk && t.fwd.tn == t.drhs.tn) {
    return one(t.fwd);
  }
  return absl::StrCat(one(t.fwd), "/", one(t.dlhs), "/", one(t.drhs));
}

std::vector<int64_t> TilingsValues(const ProjectionTilings& t) {
  return {t.fwd.tm,  t.fwd.tk,  t.fwd.tn,  t.dlhs.tm, t.dlhs.tk,
          t.dlhs.tn, t.drhs.tm, t.drhs.tk, t.drhs.tn};
}

std::string Quoted(absl::string_view s) { return absl::StrCat("\"", absl::CEscape(s), "\""); }

}  // namespace

absl::StatusOr<ProjectionTilings> ParseProjectionTilings(const std::vector<int64_t>& v,
                                                         absl::string_view where) {
  const bool positive = std::all_of(v.begin(), v.end(), [](int64_t x) { return x >= 1; });
  if ((v.size() != 3 && v.size() != 9) || !positive) {
    return absl::InvalidArgumentError(absl::StrCat(
        where, ": expected tm,tk,tn (3 positive integers) or 9 for fwd,dlhs,drhs; got [",
        absl::StrJoin(v, ","), "]"));
  }
  std::vector<int64_t> all = v;
  if (all.size() == 3) all.insert(all.end(), {v[0], v[1], v[2], v[0], v[1], v[2]});
  return ProjectionTilings{.fwd = {all[0], all[1], all[2]},
                           .dlhs = {all[3], all[4], all[5]},
                           .drhs = {all[6], all[7], all[8]}};
}

std::string SweepTilingLabel(const SweepTiling& tiling) {
  if (tiling.search) return "search";
  if (!tiling.wi.has_value() && !tiling.wo.has_value()) return "default";
  std::vector<std::string> parts;
  if (tiling.wi.has_value()) parts.push_back(absl::StrCat("wi=", TilingsText(*tiling.wi)));
  if (tiling.wo.has_value()) parts.push_back(absl::StrCat("wo=", TilingsText(*tiling.wo)));
  return absl::StrJoin(parts, " ");
}

bool BackendTakesTilings(absl::string_view backend) {
  // The lowerings that read BackendKnobs::wi/wo: the megablox kernels (megablox_calls.cc,
  // ring_of_experts.cc) and the fused FFN's row and default tiles (fused_expert_ffn.cc);
  // ep_ragged_a2a runs ragged_dot (MaxText's megablox=False path), which takes none.
  return backend == "megablox_gmm" || backend == "ring_of_experts" || backend == "fused_expert_ffn";
}

std::string Fingerprint(absl::string_view text) {
  uint64_t h = 14695981039346656037ull;
  for (unsigned char c : text) {
    h ^= c;
    h *= 1099511628211ull;
  }
  return absl::StrFormat("%016x", h);
}

absl::StatusOr<SweepSpace> SweepSpaceFromProto(const SweepSpaceProto& proto,
                                               const TextProtoSource* source) {
  ConfigProblems problems(source);
  SweepSpace s;
  if (!proto.model().empty()) s.model = proto.model();
  if (!proto.hw().empty()) s.hw = proto.hw();
  // A chip named without a mesh runs on its default slice, not on the v7x default's 4x8x8.
  if (!proto.hw().empty() || !proto.mesh().empty()) s.mesh = proto.mesh();
  if (!proto.phase().empty()) {
    absl::StatusOr<Phase> phase = ParsePhase(proto.phase());
    if (!phase.ok()) {
      problems.Add("phase", phase.status().message());
    } else {
      s.phase = *phase;
    }
  }
  if (proto.seq() < 0) problems.Add("seq", absl::StrCat("expected >= 1; got ", proto.seq()));
  if (proto.seq() > 0) s.seq = proto.seq();
  s.adam = proto.adam();
  const SweepAxisProto* axes[4] = {&proto.dp(), &proto.fsdp(), &proto.ep(), &proto.tp()};
  const bool present[4] = {proto.has_dp(), proto.has_fsdp(), proto.has_ep(), proto.has_tp()};
  for (int a = 0; a < 4; ++a) {
    if (!present[a]) continue;
    for (int64_t v : axes[a]->values()) {
      if (v < 1) {
        problems.Add(kSweepAxisNames[a], absl::StrCat("expected values >= 1; got ", v));
      }
    }
    if (axes[a]->values().empty()) {
      problems.Add(kSweepAxisNames[a], "expected at least one value (omit the axis for any)");
    }
    s.axes[a].assign(axes[a]->values().begin(), axes[a]->values().end());
  }
  s.backends.assign(proto.backends().begin(), proto.backends().end());
  if (!proto.batch_per_device().empty()) {
    s.batch_per_device.assign(proto.batch_per_device().begin(), proto.batch_per_device().end());
  }
  for (int i = 0; i < proto.batch_per_device_size(); ++i) {
    if (proto.batch_per_device(i) < 1) {
      problems.Add(absl::StrCat("batch_per_device"),
                   absl::StrCat("expected positive integers; got ", proto.batch_per_device(i)));
    }
  }
  if (!proto.tilings().empty()) s.tilings.clear();
  for (int i = 0; i < proto.tilings_size(); ++i) {
    const SweepTilingProto& t = proto.tilings(i);
    const std::string path = absl::StrCat("tilings[", i, "]");
    SweepTiling tiling{.search = t.search()};
    if (t.search() && (!t.wi().empty() || !t.wo().empty())) {
      problems.Add(path, "expected either search or wi/wo tilings; got both");
    }
    if (!t.wi().empty()) {
      absl::StatusOr<ProjectionTilings> wi =
          ParseProjectionTilings({t.wi().begin(), t.wi().end()}, "wi");
      if (wi.ok()) {
        tiling.wi = *wi;
      } else {
        problems.Add(absl::StrCat(path, ".wi"), wi.status().message());
      }
    }
    if (!t.wo().empty()) {
      absl::StatusOr<ProjectionTilings> wo =
          ParseProjectionTilings({t.wo().begin(), t.wo().end()}, "wo");
      if (wo.ok()) {
        tiling.wo = *wo;
      } else {
        problems.Add(absl::StrCat(path, ".wo"), wo.status().message());
      }
    }
    s.tilings.push_back(tiling);
  }
  if (!proto.routings().empty())
    s.routings.assign(proto.routings().begin(), proto.routings().end());
  PERFSIM_RETURN_IF_ERROR(problems.ToStatus());
  return s;
}

absl::StatusOr<SweepSpace> ParseSweepSpace(absl::string_view text, absl::string_view filename) {
  SweepSpaceProto proto;
  PERFSIM_ASSIGN_OR_RETURN(TextProtoSource source, ParseTextProto(text, filename, &proto));
  return SweepSpaceFromProto(proto, &source);
}

std::string CanonicalSweepSpaceText(const SweepSpace& s) {
  std::string out;
  absl::StrAppend(&out, "model: ", Quoted(s.model), "\n");
  absl::StrAppend(&out, "hw: ", Quoted(s.hw), "\n");
  absl::StrAppend(&out, "mesh: ", Quoted(s.mesh), "\n");
  absl::StrAppend(&out, "phase: ", Quoted(PhaseName(s.phase)), "\n");
  absl::StrAppend(&out, "seq: ", s.seq, "\n");
  absl::StrAppend(&out, "adam: ", s.adam ? "true" : "false", "\n");
  for (int a = 0; a < 4; ++a) {
    if (s.axes[a].empty()) continue;
    absl::StrAppend(&out, kSweepAxisNames[a], " { values: [", absl::StrJoin(s.axes[a], ", "),
                    "] }\n");
  }
  for (const std::string& b : s.backends) absl::StrAppend(&out, "backends: ", Quoted(b), "\n");
  for (int64_t b : s.batch_per_device) absl::StrAppend(&out, "batch_per_device: ", b, "\n");
  for (const SweepTiling& t : s.tilings) {
    std::vector<std::string> fields;
    if (t.wi.has_value()) {
      fields.push_back(absl::StrCat("wi: [", absl::StrJoin(TilingsValues(*t.wi), ", "), "]"));
    }
    if (t.wo.has_value()) {
      fields.push_back(absl::StrCat("wo: [", absl::StrJoin(TilingsValues(*t.wo), ", "), "]"));
    }
    if (t.search) fields.push_back("search: true");
    absl::StrAppend(&out, "tilings { ", absl::StrJoin(fields, " "), fields.empty() ? "" : " ",
                    "}\n");
  }
  for (const std::string& r : s.routings) absl::StrAppend(&out, "routings: ", Quoted(r), "\n");
  return out;
}

absl::StatusOr<std::pair<int64_t, int64_t>> ParseShardSpec(absl::string_view text) {
  std::vector<absl::string_view> parts = absl::StrSplit(text, '/');
  int64_t i = -1, n = 0;
  if (parts.size() != 2 || !absl::SimpleAtoi(parts[0], &i) || !absl::SimpleAtoi(parts[1], &n) ||
      n < 1 || i < 0 || i >= n) {
    return absl::InvalidArgumentError(
        absl::StrCat("--shard: expected i/N with 0 <= i < N; got '", text, "'"));
  }
  return std::make_pair(i, n);
}

absl::Status CheckSweepPointCount(size_t factorisations, const std::vector<std::string>& backends,
                                  const SweepSpace& space) {
  // points = factorisations x (tiling slots summed over backends) x batches x routings,
  // multiplied with overflow checks: the lists come from flags and files.
  int64_t slots = 0;
  for (const std::string& backend : backends) {
    const int64_t tilings =
        BackendTakesTilings(backend) ? static_cast<int64_t>(space.tilings.size()) : 1;
    if (!TryAdd(slots, tilings, &slots)) slots = kInt64Max;
  }
  int64_t points = 0;
  const bool fits =
      TryMul(static_cast<int64_t>(factorisations), slots, &points) &&
      TryMul(points, static_cast<int64_t>(space.batch_per_device.size()), &points) &&
      TryMul(points, static_cast<int64_t>(space.routings.size()), &points);
  if (fits && points <= kMaxSweepPoints) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat(
      "sweep space: expected at most ", kMaxSweepPoints, " points; got ",
      fits ? absl::StrCat(points) : std::string("more than 2^63"), " (", factorisations,
      " factorisations x ", slots, " backend and tiling choices x ",
      space.batch_per_device.size(), " batches x ", space.routings.size(),
      " routings): narrow the axes, backends, batches, tilings or routings, or split the "
      "space into several sweeps"));
}

absl::StatusOr<SweepEnumeration> SweepEnumeration::Create(const SweepSpace& space) {
  SweepEnumeration e;
  e.space_ = space;
  absl::StatusOr<ModelConfig> model = ResolveModel(space.model);
  if (!model.ok()) return Annotate(model.status(), "model");
  absl::StatusOr<Chip> chip = ResolveChip(space.hw);
  if (!chip.ok()) return Annotate(chip.status(), "hw");
  e.mesh_ = space.mesh.empty() ? chip->DefaultSliceShape() : space.mesh;
  absl::StatusOr<Topology> topology = Topology::Create(*chip, e.mesh_);
  if (!topology.ok()) return Annotate(topology.status(), absl::StrCat("mesh ", e.mesh_));
  e.model_ = std::move(model).value();
  e.chip_ = std::move(chip).value();
  e.topology_ = std::move(topology).value();
  const Chip& resolved_chip = *e.chip_;
  if (space.seq < 1) {
    return absl::InvalidArgumentError(absl::StrCat("seq: expected >= 1; got ", space.seq));
  }

  // Backends: every one when none is named; an unknown name is an error (NotFound -> exit 2).
  std::vector<std::string>& backends = e.space_.backends;
  if (backends.empty()) {
    for (const MoeBackend* b : Backends()) backends.emplace_back(b->name());
  }
  for (const std::string& b : backends) {
    absl::StatusOr<const MoeBackend*> found = FindBackend(b);
    if (!found.ok()) {
      return absl::InvalidArgumentError(absl::StrCat("backends: ", found.status().message()));
    }
  }
  if (space.batch_per_device.empty() || space.tilings.empty() || space.routings.empty()) {
    return absl::InvalidArgumentError(
        "expected at least one batch per device, tiling and routing; got an empty list");
  }
  for (int64_t b : space.batch_per_device) {
    if (b < 1) {
      return absl::InvalidArgumentError(
          absl::StrCat("batch per device: expected positive integers; got ", b));
    }
  }
  // Factorisations of the device count.
  const int64_t devices = e.topology_->num_devices();
  // Every point's step has b·devices·seq tokens: refused here, before enumeration, above the
  // StepSpec limit (step_spec.h), rather than wrapping into a small batch later.
  for (int64_t b : space.batch_per_device) {
    PERFSIM_ASSIGN_OR_RETURN(const int64_t tokens,
                             CheckedProduct(absl::StrCat("tokens = batch per device ", b, " * ",
                                                         devices, " devices * seq ", space.seq),
                                            {b, devices, space.seq}));
    PERFSIM_RETURN_IF_ERROR(CheckAtMost(
        absl::StrCat("tokens = batch per device ", b, " * ", devices, " devices * seq ", space.seq),
        tokens, kMaxStepTokens));
  }
  std::array<std::vector<int64_t>, 4> choices;
  for (int a = 0; a < 4; ++a) {
    if (space.axes[a].empty()) {
      choices[a] = Divisors(devices);
      continue;
    }
    for (int64_t v : space.axes[a]) {
      if (v < 1 || devices % v != 0) {
        return absl::InvalidArgumentError(
            absl::StrCat(kSweepAxisNames[a], ": expected values dividing the ", devices,
                         " devices of ", e.mesh_, " ", resolved_chip.name(), "; got ", v));
      }
    }
    choices[a] = space.axes[a];
    std::sort(choices[a].begin(), choices[a].end());
    choices[a].erase(std::unique(choices[a].begin(), choices[a].end()), choices[a].end());
  }
  // tp is determined by the other three: three nested loops over divisors (a few hundred at
  // most for a slice of up to 2^20 devices), not four.
  for (int64_t dp : choices[kSweepDp]) {
    for (int64_t fsdp : choices[kSweepFsdp]) {
      if ((devices / dp) % fsdp != 0) continue;
      for (int64_t ep : choices[kSweepEp]) {
        if ((devices / dp / fsdp) % ep != 0) continue;
        const int64_t tp = devices / dp / fsdp / ep;
        if (std::binary_search(choices[kSweepTp].begin(), choices[kSweepTp].end(), tp)) {
          e.factorisations_.push_back(Parallelism{.dp = dp, .ep = ep, .tp = tp, .fsdp = fsdp});
        }
      }
    }
  }
  if (e.factorisations_.empty()) {
    std::vector<std::string> lists;
    for (int a = 0; a < 4; ++a) {
      lists.push_back(absl::StrCat(kSweepAxisNames[a], " {",
                                   space.axes[a].empty() ? "any" : absl::StrJoin(choices[a], ","),
                                   "}"));
    }
    return absl::InvalidArgumentError(
        absl::StrCat("expected dp·fsdp·ep·tp = ", devices, " (the devices of ", e.mesh_, " ",
                     resolved_chip.name(), ") for some choice of ", absl::StrJoin(lists, " "),
                     "; got no such factorisation"));
  }

  // Counted before anything per point is allocated or any routing file is read.
  PERFSIM_RETURN_IF_ERROR(CheckSweepPointCount(e.factorisations_.size(), backends, space));
  for (const std::string& r : space.routings) {
    absl::StatusOr<RoutingSpec> routing = ParseRoutingSpec(r);
    if (!routing.ok()) return routing.status();
    e.routings_.push_back(std::move(routing).value());
  }

  for (int64_t f = 0; f < static_cast<int64_t>(e.factorisations_.size()); ++f) {
    for (int64_t b = 0; b < static_cast<int64_t>(backends.size()); ++b) {
      const int64_t tilings =
          BackendTakesTilings(backends[b]) ? static_cast<int64_t>(space.tilings.size()) : 1;
      for (int64_t n = 0; n < static_cast<int64_t>(space.batch_per_device.size()); ++n) {
        for (int64_t t = 0; t < tilings; ++t) {
          e.blocks_.push_back(
              SweepBlock{.factorisation = f, .backend = b, .batch = n, .tiling = t});
        }
      }
    }
  }
  e.canonical_ = CanonicalSweepSpaceText(e.space_);
  e.fingerprint_ = Fingerprint(e.canonical_);
  return e;
}

SweepScenario SweepEnumeration::ScenarioAt(int64_t index) const {
  const int64_t r = static_cast<int64_t>(routings_.size());
  const SweepBlock& block = blocks_[index / r];
  // A backend without tilings takes the default (its single slot), whatever the list holds.
  static const SweepTiling kDefault;
  const bool tiled = BackendTakesTilings(space_.backends[block.backend]);
  return SweepScenario{.index = index,
                  .block = index / r,
                  .routing = index % r,
                  .parallelism = factorisations_[block.factorisation],
                  .backend = space_.backends[block.backend],
                  .batch_per_device = space_.batch_per_device[block.batch],
                  .tiling = tiled ? &space_.tilings[block.tiling] : &kDefault,
                  .tiling_index = block.tiling};
}

StepSpec SweepEnumeration::SpecOf(const SweepScenario& scenario) const {
  StepSpec spec = StepSpec::Defaults(*model_);
  spec.batch = scenario.batch_per_device * num_devices();
  spec.seq = space_.seq;
  spec.phase = space_.phase;
  spec.parallelism = scenario.parallelism;
  spec.backend = scenario.backend;
  if (scenario.tiling->wi.has_value()) spec.knobs.wi = *scenario.tiling->wi;
  if (scenario.tiling->wo.has_value()) spec.knobs.wo = *scenario.tiling->wo;
  return spec;
}

std::string SweepEnumeration::Label(const SweepScenario& s) const {
  const Parallelism& p = s.parallelism;
  return absl::StrCat("dp=", p.dp, " fsdp=", p.fsdp, " ep=", p.ep, " tp=", p.tp, " ", s.backend,
                      " b=", s.batch_per_device, " ", SweepTilingLabel(*s.tiling), " ",
                      space_.routings[s.routing]);
}

std::vector<int64_t> SweepEnumeration::ShardPoints(int64_t shard, int64_t count) const {
  std::vector<int64_t> points;
  const int64_t r = static_cast<int64_t>(routings_.size());
  const int64_t blocks = static_cast<int64_t>(blocks_.size());
  if (blocks >= count) {
    for (int64_t b = shard; b < blocks; b += count) {
      for (int64_t i = 0; i < r; ++i) points.push_back(b * r + i);
    }
  } else {
    for (int64_t p = shard; p < num_points(); p += count) points.push_back(p);
  }
  return points;
}

}  // namespace perfsim
