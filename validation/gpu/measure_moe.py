#!/usr/bin/env python3
"""Measures MoE building blocks with JAX on one GPU and writes perfsim measurement rows.

What it times (each one jit-compiled function, on device-resident inputs):
  * jax.lax.ragged_dot forward  x[m, D] @ W[E, D, F] with group sizes from the routing,
    and the down projection h[m, F] @ W[E, F, D];
  * both backward grouped matmuls of the up projection, each alone: the input gradient
    dx = ragged_dot(dy, W^T) ("dlhs") and the weight gradient dW[g] = x_g^T dy_g ("drhs",
    the ragged-contracting form JAX's VJP emits), taken from jax.vjp with respect to one
    operand only so that XLA removes the other;
  * the dense einsum MoE (every token through every expert, gated combine);
  * the argsort + gather permutation of tokens by expert;
  * the router: logits, softmax, top-k.
Points: DeepSeek-V3 (D=7168, F=2048, 256 experts, top-8) and Mixtral 8x7B (D=4096, F=14336,
8 experts, top-2) shapes at several token counts, expert counts per device (the local experts
of an EP shard) and routing skews (uniform, Zipf).

Method: inputs are created on the device and made ready first; every function is compiled
and run `--warmup` times; then each of `--reps` runs is timed from dispatch to
block_until_ready() (host wall clock, so a run includes its launch); the row's value is the
median, and the notes give min/max. Group sizes are deterministic (no random draw).

Output: CSV rows in the format of shared/reference/calibration.csv (same 27 columns, same
order), one per measurement, with the device kind as the hardware, the software versions in
the source column and the time in "us". `perfsim accuracy FILE.csv` reads them: the
ragged_dot rows become grouped-GEMM scenarios (category kernel_grouped_gemm, op_shape
"group_sizes=[...]; K=..; N=..; op=fwd|dlhs|drhs"); the other rows are listed as skipped
until perfsim maps their categories.

Usage (on a GPU machine with jax[cuda] installed):
  python3 validation/gpu/measure_moe.py --out validation/gpu/h100_measurements.csv
CPU check of the script itself (timings meaningless, do not commit them):
  python3 validation/gpu/measure_moe.py --platform cpu --tiny --out /tmp/cpu_check.csv
"""

import argparse
import csv
import datetime
import os
import statistics
import sys
import time

# The columns of shared/reference/calibration.csv, in order.
COLUMNS = [
    "id", "group", "category", "hardware", "num_chips", "interconnect_topology", "model",
    "E", "K", "D", "F", "shared_experts", "tokens", "seq_len", "global_batch", "dtype",
    "parallelism", "backend_kernel", "op_shape", "metric", "value", "unit", "derived",
    "completeness", "date", "source", "notes",
]
UNIT = "us"  # perfsim's MeasurementUnit spelling for microseconds

# (name, model, D, F, top-k, experts per device, tokens per device)
FULL_POINTS = [
    ("dsv3_ep8", "DeepSeek-V3", 7168, 2048, 8, 32, 4096),
    ("dsv3_ep32", "DeepSeek-V3", 7168, 2048, 8, 8, 4096),
    ("dsv3_ep8_small", "DeepSeek-V3", 7168, 2048, 8, 32, 512),
    ("mixtral_8x7b", "Mixtral-8x7B", 4096, 14336, 2, 8, 4096),
    ("mixtral_8x7b_small", "Mixtral-8x7B", 4096, 14336, 2, 8, 512),
]
TINY_POINTS = [
    ("tiny_a", "tiny (D != F != E)", 64, 96, 2, 4, 32),
    ("tiny_b", "tiny (D != F != E)", 128, 48, 2, 8, 16),
]
SKEWS = [0.0, 1.2]  # Zipf exponent of the expert popularity; 0 = uniform


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--out", required=True, help="CSV file to write (overwritten)")
    p.add_argument("--platform", default=None,
                   help="JAX platform (gpu, cpu); default: JAX's choice")
    p.add_argument("--tiny", action="store_true", help="small shapes (a CPU check)")
    p.add_argument("--warmup", type=int, default=3)
    p.add_argument("--reps", type=int, default=20)
    p.add_argument("--dtype", default="bfloat16", choices=["bfloat16", "float32"])
    p.add_argument("--id-prefix", default="G", help="row ids are PREFIX001, PREFIX002, ...")
    p.add_argument("--skip-layers", action="store_true",
                   help="leave out the whole MoE layer rows (moe_block, moe_block_fwd_bwd)")
    return p.parse_args(argv)


def group_sizes(rows, experts, skew):
    """Rows per expert: proportional to 1 / (rank + 1)^skew, rounded to sum to `rows`."""
    weights = [1.0 / (r + 1) ** skew for r in range(experts)]
    total = sum(weights)
    exact = [rows * w / total for w in weights]
    sizes = [int(x) for x in exact]
    # Largest remainders get the leftover rows (ties: lower expert first): deterministic.
    order = sorted(range(experts), key=lambda e: (-(exact[e] - sizes[e]), e))
    for e in order[: rows - sum(sizes)]:
        sizes[e] += 1
    return sizes


class Timer:
    """Two timings of a jitted function on device-resident inputs.

    single: each of `reps` calls timed alone, from dispatch to block_until_ready (host wall
        clock): includes the launch and the host synchronisation of one call.
    pipelined: `reps` calls dispatched back to back, then one block_until_ready, divided by
        `reps`; the median of `batches` such batches. The host's dispatch of call i+1 overlaps
        the device's run of call i, as in a training step, so this is the device time per call
        (kernel time plus the gaps between the function's kernels) whenever the device time
        exceeds the dispatch time. The row's value.
    """

    def __init__(self, warmup, reps, batches=5):
        self.warmup = warmup
        self.reps = reps
        self.batches = batches

    def __call__(self, fn, *args):
        import jax
        for _ in range(self.warmup):
            jax.block_until_ready(fn(*args))
        samples = []
        for _ in range(self.reps):
            start = time.perf_counter()
            jax.block_until_ready(fn(*args))
            samples.append((time.perf_counter() - start) * 1e6)
        pipelined = []
        for _ in range(self.batches):
            start = time.perf_counter()
            outs = [fn(*args) for _ in range(self.reps)]
            jax.block_until_ready(outs)
            pipelined.append((time.perf_counter() - start) * 1e6 / self.reps)
            del outs
        return {"value": statistics.median(pipelined), "low": min(pipelined),
                "high": max(pipelined), "single": statistics.median(samples),
                "single_low": min(samples), "single_high": max(samples)}


def software_versions(device):
    import jax
    import jaxlib
    parts = [f"jax {jax.__version__}", f"jaxlib {jaxlib.__version__}",
             f"platform {device.platform}"]
    try:
        from jax.extend import backend as jex_backend
        parts.append(f"backend {jex_backend.get_backend().platform_version}")
    except Exception:  # the platform version is informative only
        pass
    return "; ".join(parts)


# Attention points: (name, batch, sequence, query heads, KV heads, head dim).
# Llama-3-8B-like GQA (32 query heads over 8 KV heads, head dim 128) at 8192 tokens per
# call, as one sequence of 8192 and as two of 4096; and an MHA point (32 KV heads).
FULL_ATTENTION = [
    ("gqa_s4096", 2, 4096, 32, 8, 128),
    ("gqa_s8192", 1, 8192, 32, 8, 128),
    ("mha_s4096", 2, 4096, 32, 32, 128),
]
TINY_ATTENTION = [("tiny_gqa", 1, 64, 4, 2, 16)]


def moe_layer(x, w_router, wi_0, wi_1, wo, k):
    """One routed MoE layer, forward: router (softmax, top-k), argsort permutation, SwiGLU
    experts as three ragged_dots, unpermute and the gate-weighted combine. No shared expert, no
    capacity (dropless), weights not renormalised over the top-k."""
    import jax
    import jax.numpy as jnp
    t, _ = x.shape
    e = w_router.shape[1]
    probs = jax.nn.softmax((x @ w_router).astype(jnp.float32), axis=-1)
    weights, experts = jax.lax.top_k(probs, k)
    flat = experts.reshape(-1)
    order = jnp.argsort(flat, stable=True)
    xs = jnp.take(x, order // k, axis=0)
    sizes = jnp.bincount(flat, length=e).astype(jnp.int32)
    h = jax.nn.silu(jax.lax.ragged_dot(xs, wi_0, sizes)) * jax.lax.ragged_dot(xs, wi_1, sizes)
    ys = jax.lax.ragged_dot(h, wo, sizes)
    y = jnp.zeros_like(ys).at[order].set(ys).reshape(t, k, -1)
    return jnp.einsum("tkd,tk->td", y, weights.astype(x.dtype))


def measure_moe_layers(args, points, dtype, rng, timer, add, device):
    """The whole routed MoE layer on one device (category moe_block: forward, which `perfsim
    accuracy` simulates; moe_block_fwd_bwd: forward and the gradients of x and every weight,
    listed as skipped until perfsim maps it). E is the point's experts per device: the layer
    holds all of them."""
    import jax
    import jax.numpy as jnp
    import numpy as np
    for name, model, d, f, k, e, tokens in points:
        x = jnp.asarray(rng.standard_normal((tokens, d)), dtype)
        w_router = jnp.asarray(rng.standard_normal((d, e)) / np.sqrt(d), dtype)
        wi_0 = jnp.asarray(rng.standard_normal((e, d, f)) / np.sqrt(d), dtype)
        wi_1 = jnp.asarray(rng.standard_normal((e, d, f)) / np.sqrt(d), dtype)
        wo = jnp.asarray(rng.standard_normal((e, f, d)) / np.sqrt(f), dtype)
        ct = jnp.asarray(rng.standard_normal((tokens, d)), dtype)
        jax.block_until_ready((x, w_router, wi_0, wi_1, wo, ct))
        fwd = jax.jit(lambda a, r, w0, w1, w2: moe_layer(a, r, w0, w1, w2, k))

        def fwd_bwd(a, r, w0, w1, w2, c):
            out, vjp = jax.vjp(lambda *p: moe_layer(*p, k), a, r, w0, w1, w2)
            return out, vjp(c)

        both = jax.jit(fwd_bwd)
        backend = (f"argsort + jax.lax.ragged_dot, SwiGLU experts ({device.platform}, jit; "
                   "perfsim backend sparse_ragged_dot)")
        shape = (f"x[{tokens}, {d}]; router[{d}, {e}]; wi_0, wi_1[{e}, {d}, {f}]; "
                 f"wo[{e}, {f}, {d}]; top-{k}")
        note = (f"point {name}; routing from random router weights (near uniform); the layer "
                f"holds {e} experts (the experts of one expert-parallel shard of {model})")
        add("moe_block", model, d, f, k, e, tokens, backend, shape,
            "device time of the routed MoE layer (forward)", timer(fwd, x, w_router, wi_0, wi_1, wo),
            note)
        add("moe_block_fwd_bwd", model, d, f, k, e, tokens, backend, shape,
            "device time of the routed MoE layer (forward and backward: gradients of x, the "
            "router and every expert weight)",
            timer(both, x, w_router, wi_0, wi_1, wo, ct), note)
        del x, w_router, wi_0, wi_1, wo, ct


def measure_attention(args, dtype, rng, timer, add, device):
    """Causal self-attention through jax.nn.dot_product_attention, forward and forward +
    backward (gradients of q, k and v), with each implementation the platform has ("cudnn":
    cuDNN's fused flash attention; "xla": the plain einsum-softmax-einsum XLA compiles).
    Category op_attention; `perfsim accuracy` lists these rows as skipped until it maps them."""
    import jax
    import jax.numpy as jnp
    points = TINY_ATTENTION if args.tiny else FULL_ATTENTION
    impls = ["xla"] if device.platform == "cpu" else ["cudnn", "xla"]
    for name, b, s, h, kv, dh in points:
        q = jnp.asarray(rng.standard_normal((b, s, h, dh)), dtype)
        kk = jnp.asarray(rng.standard_normal((b, s, kv, dh)), dtype)
        v = jnp.asarray(rng.standard_normal((b, s, kv, dh)), dtype)
        ct = jnp.asarray(rng.standard_normal((b, s, h, dh)), dtype)
        jax.block_until_ready((q, kk, v, ct))
        # One S x S x Dh matmul over the causal half (the upper triangle is skipped by the
        # fused kernels): 2*B*H*S*S*Dh / 2 FLOPs. Forward: 2 such matmuls (scores, weighted
        # values); forward + backward: 7 (the backward recomputes the scores, then dV, dP, dQ
        # and dK).
        half_flops = b * h * s * s * dh
        for impl in impls:
            def attention(q_, k_, v_, impl=impl):
                return jax.nn.dot_product_attention(q_, k_, v_, is_causal=True,
                                                    implementation=impl)

            fwd = jax.jit(attention)
            both = jax.jit(lambda q_, k_, v_, c: jax.vjp(attention, q_, k_, v_)[1](c))
            shape = (f"B={b}; S={s}; H={h}; KV={kv}; Dh={dh}; causal; q[{b}, {s}, {h}, {dh}]; "
                     f"k, v[{b}, {s}, {kv}, {dh}]")
            for op, fn, fn_args, matmuls in (("fwd", fwd, (q, kk, v), 2),
                                             ("fwd_bwd", both, (q, kk, v, ct), 7)):
                try:
                    timing = timer(fn, *fn_args)
                except Exception as error:  # an implementation this platform lacks
                    print(f"skip attention {name} {impl} {op}: {type(error).__name__}: "
                          f"{str(error)[:200]}", flush=True)
                    break
                flops = matmuls * half_flops
                add("op_attention", "Llama-3-8B-like attention", "", "", "", "", b * s,
                    f"jax.nn.dot_product_attention implementation={impl} ({device.platform}, "
                    "jit)", f"{shape}; op={op}",
                    f"device time of causal self-attention ({op})", timing,
                    f"point {name}; {flops / 1e12:.3f} TFLOP counting the causal half "
                    f"({matmuls} matmuls of 2*B*H*S*S*Dh/2 each)")
        del q, kk, v, ct


def main(argv):
    args = parse_args(argv)
    if args.platform:
        os.environ["JAX_PLATFORMS"] = args.platform
    import jax
    import jax.numpy as jnp
    import numpy as np

    device = jax.devices()[0]
    dtype = jnp.bfloat16 if args.dtype == "bfloat16" else jnp.float32
    dtype_word = "bf16" if args.dtype == "bfloat16" else "f32"
    timer = Timer(args.warmup, args.reps)
    today = datetime.date.today().isoformat()
    source = (f"validation/gpu/measure_moe.py on {device.device_kind}; "
              f"{software_versions(device)}")
    method = (f"value: median over {timer.batches} batches of {args.reps} calls dispatched back "
              f"to back, per call; after {args.warmup} warm-up calls")
    rows = []

    out_file = open(args.out, "w", newline="")
    writer = csv.DictWriter(out_file, fieldnames=COLUMNS, lineterminator="\n")
    writer.writeheader()

    def add(category, model, d, f, k, e, tokens, backend, op_shape, metric, timing, notes):
        rows.append({
            "id": f"{args.id_prefix}{len(rows) + 1:03d}",
            "group": "perfsim validation/gpu",
            "category": category,
            "hardware": device.device_kind,
            "num_chips": "1",
            "interconnect_topology": "n/a",
            "model": model,
            "E": str(e), "K": str(k), "D": str(d), "F": str(f),
            "shared_experts": "",
            "tokens": f"{tokens} tokens",
            "seq_len": "", "global_batch": "",
            "dtype": dtype_word,
            "parallelism": "single device",
            "backend_kernel": backend,
            "op_shape": op_shape,
            "metric": metric,
            "value": f"{timing['value']:.2f}",
            "unit": UNIT,
            "derived": (f"batches min {timing['low']:.2f} us, max {timing['high']:.2f} us; "
                        f"one call alone (dispatch to block_until_ready): median "
                        f"{timing['single']:.2f} us, min {timing['single_low']:.2f} us, max "
                        f"{timing['single_high']:.2f} us"),
            "completeness": "full",
            "date": today,
            "source": source,
            "notes": f"{method}; {notes}",
        })
        # Written as it goes: a run cut short keeps what it measured.
        writer.writerow(rows[-1])
        out_file.flush()
        print(f"{rows[-1]['id']} {category} {op_shape[:70]}: {timing['value']:.2f} us "
              f"(alone {timing['single']:.2f} us)", flush=True)

    rng = np.random.default_rng(0)
    points = TINY_POINTS if args.tiny else FULL_POINTS
    for name, model, d, f, k, e, tokens in points:
        m = tokens * k  # rows entering the grouped matmuls (every token's k copies)
        x = jnp.asarray(rng.standard_normal((m, d)), dtype)
        w_up = jnp.asarray(rng.standard_normal((e, d, f)) / np.sqrt(d), dtype)
        w_down = jnp.asarray(rng.standard_normal((e, f, d)) / np.sqrt(f), dtype)
        h = jnp.asarray(rng.standard_normal((m, f)), dtype)
        dy = jnp.asarray(rng.standard_normal((m, f)), dtype)
        jax.block_until_ready((x, w_up, w_down, h, dy))
        for skew in SKEWS:
            sizes = group_sizes(m, e, skew)
            gs = jnp.asarray(sizes, jnp.int32)
            routing = "uniform" if skew == 0 else f"zipf:{skew}"
            listed = ",".join(str(s) for s in sizes)
            note = f"point {name}, routing {routing}"
            fwd = jax.jit(lambda a, b, g: jax.lax.ragged_dot(a, b, g))
            # dlhs: the input gradient only (XLA drops the weight gradient).
            dlhs = jax.jit(lambda a, b, g, ct: jax.vjp(
                lambda a_: jax.lax.ragged_dot(a_, b, g), a)[1](ct)[0])
            # drhs: the weight gradient only (the ragged-contracting ragged_dot_general).
            drhs = jax.jit(lambda a, b, g, ct: jax.vjp(
                lambda b_: jax.lax.ragged_dot(a, b_, g), b)[1](ct)[0])
            backend = f"jax.lax.ragged_dot ({device.platform}, jit)"
            for op, timing, kk, nn in (
                    ("fwd", timer(fwd, x, w_up, gs), d, f),
                    ("dlhs", timer(dlhs, x, w_up, gs, dy), d, f),
                    ("drhs", timer(drhs, x, w_up, gs, dy), d, f),
                    ("fwd", timer(fwd, h, w_down, gs), f, d)):
                add("kernel_grouped_gemm", model, d, f, k, e, tokens, backend,
                    f"group_sizes=[{listed}]; K={kk}; N={nn}; op={op}",
                    f"device time of the {op} grouped matmul", timing, note)

        # Dense einsum MoE: every token through every expert, gated combine (no routing).
        t = tokens
        xt = x[:t]
        gate = jax.nn.softmax(jnp.asarray(rng.standard_normal((t, e)), jnp.float32), axis=-1)
        dense = jax.jit(lambda a, g, wu, wd: jnp.einsum(
            "tef,efd,te->td", jax.nn.silu(jnp.einsum("td,edf->tef", a, wu)), wd,
            g.astype(a.dtype)))
        add("op_dense_einsum_moe", model, d, f, k, e, t, "jnp.einsum (dense, every expert)",
            f"x[{t}, {d}]; wi[{e}, {d}, {f}]; wo[{e}, {f}, {d}]",
            "device time of the dense einsum MoE layer (forward)",
            timer(dense, xt, gate, w_up, w_down), f"point {name}")

        # Argsort + gather permutation of the token copies by expert.
        ids = jnp.asarray(rng.integers(0, e, size=(t, k)), jnp.int32)
        permute = jax.jit(lambda a, i: jnp.take(
            a, jnp.argsort(i.reshape(-1), stable=True) // i.shape[1], axis=0))
        add("op_permute", model, d, f, k, e, t, "jnp.argsort + jnp.take",
            f"x[{t}, {d}] by expert ids[{t}, {k}] -> [{t * k}, {d}]",
            "device time of the argsort + gather permutation", timer(permute, xt, ids),
            f"point {name}, uniform random expert ids")

        # Router: logits, softmax, top-k.
        w_router = jnp.asarray(rng.standard_normal((d, e)) / np.sqrt(d), dtype)
        router = jax.jit(lambda a, wr: jax.lax.top_k(
            jax.nn.softmax((a @ wr).astype(jnp.float32), axis=-1), k))
        add("op_router", model, d, f, k, e, t, "x @ w_router, softmax, lax.top_k",
            f"x[{t}, {d}] @ w_router[{d}, {e}], top-{k}", "device time of the router",
            timer(router, xt, w_router), f"point {name}")

    if not args.skip_layers:
        measure_moe_layers(args, points, dtype, rng, timer, add, device)
    measure_attention(args, dtype, rng, timer, add, device)
    out_file.close()
    print(f"wrote {len(rows)} rows to {args.out} ({device.device_kind})")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
