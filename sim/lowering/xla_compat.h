// XLA compatibility rewrite: turns a lowered MoE module into one that XLA itself can parse,
// verify and, in the dense mode, compile and run on XLA:CPU — an executable twin with the same
// semantics, so XLA can check everything else the module does (sorts, gathers, scatters,
// collectives) against perfsim's interpreter. `perfsim lower --xla-compat=MODE` prints it;
// tools/jax/xla_roundtrip.py feeds it to jaxlib.
//
//   PERFSIM_ASSIGN_OR_RETURN(LoweredStep step, LowerStep(spec));
//   PERFSIM_ASSIGN_OR_RETURN(std::unique_ptr<Module> twin,
//                            RewriteForXla(*step.module, XlaCompatMode::kDense,
//                                          spec.num_devices()));
//
// What is rewritten (a module-to-module copy; every other instruction keeps its name, attributes
// and metadata):
//   perfsim.gmm / perfsim.tgmm / perfsim.fused_ffn (kernel custom-calls XLA has no
//       implementation for):
//       kRaggedDot: ragged-dot (gmm: non-contracting ragged mode, tgmm: contracting ragged
//                   mode), fused_ffn as two ragged-dots, the activation and a third ragged-dot;
//       kDense:     the same products as dense dots masked by group membership (below).
//       A kernel leaves the rows no group owns unwritten (poisoned in the interpreter); the
//       rewrite gives 0 there. perfsim's lowerings slice those rows off before any use, so the
//       module's results are the same.
//   ragged-dot (kDense only): dense masked dots. Row r of the ragged dimension belongs to group
//       g when start_g <= r < start_g + size_g; rows past Σ size belong to none (0, as XLA).
//         non-contracting  lhs [m,k] x rhs [G,k,n]: dot -> [m,G,n], select(row in g, ., 0),
//                          reduce over G -> [m,n] (one non-zero term per row: exact);
//         contracting      lhs [m,k], rhs [m,n]: lhs masked per group -> [G,m,k], dot over m
//                          -> [G,k,n].
//   ragged-all-to-all (kDense only): an all-to-all of fixed-size chunks and a scatter.
//       Device i sends rows [in_off[j], in_off[j] + send[j]) to peer j, which writes them at
//       out_off[j] (the sender's offset into the receiver's output, JAX's convention). The
//       twin: chunk j = the input shifted up by in_off[j] (dynamic-slice of the input padded by
//       its own length); all-to-all of the chunks, of out_off and of send over the same
//       groups; the receiver scatters row r of the chunk from peer i to out_off_i + r when
//       r < send_i, else to an out-of-bounds row (which XLA's scatter drops).
//   AllocateBuffer: a broadcast constant of the interpreter's poison (NaN for floats,
//       kPoisonInteger for integers, true for pred), so a read of an uninitialised row shows
//       up the same in XLA and in the interpreter.
//   SPMD modules (num_devices > 1): XLA:CPU runs a per-device program only as a manually
//       partitioned one, so every instruction of the entry gets sharding={manual} and the
//       header num_partitions=N; all-gather, all-reduce and reduce-scatter get
//       use_global_device_ids=true (with channel_id and one replica, global device ids are
//       the partition ids their replica_groups already list: the same groups).
//       XLA:CPU (jaxlib 0.10.2) rejects these collectives in cross-partition mode without it
//       (all-gather: a verifier RET_CHECK; all-reduce: a runtime RET_CHECK).
// Any other custom-call target is left alone.
//
// Errors: InvalidArgument naming the instruction when a kernel call or a ragged op does not
// have the shapes of the convention in sim/interp/custom_calls.h; Unimplemented for ragged-dot
// in its batch mode (perfsim's lowerings never emit it).
#ifndef PERFSIM_SIM_LOWERING_XLA_COMPAT_H_
#define PERFSIM_SIM_LOWERING_XLA_COMPAT_H_

#include <cstdint>
#include <memory>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "sim/ir/instruction.h"

namespace perfsim {

enum class XlaCompatMode {
  // Kernel custom-calls become ragged-dot; ragged ops stay. XLA parses and verifies the result;
  // XLA:CPU (jaxlib 0.10.2) cannot emit code for ragged-dot or ragged-all-to-all.
  kRaggedDot,
  // No ragged op and no perfsim custom-call left: XLA:CPU compiles and runs the result.
  kDense,
};

// "ragged_dot", "dense".
absl::string_view XlaCompatModeName(XlaCompatMode mode);
// Parses "ragged_dot" or "dense"; InvalidArgument otherwise ("expected ragged_dot or dense;
// got 'x'").
absl::StatusOr<XlaCompatMode> ParseXlaCompatMode(absl::string_view text);

// The rewritten copy of `module` (verified), for a module that runs on `num_devices` devices.
absl::StatusOr<std::unique_ptr<Module>> RewriteForXla(const Module& module, XlaCompatMode mode,
                                                      int64_t num_devices);

}  // namespace perfsim

#endif  // PERFSIM_SIM_LOWERING_XLA_COMPAT_H_
