"""MoE forward/backward functions in JAX, and numpy references for them.

Parameter order everywhere (perfsim's `validate --hlo` contract):
  x [T, D], router_w [D, E], wi_0 [E, D, F], wi_1 [E, D, F], wo [E, F, D]
Output: [T, D]. Expert FFN: (silu(x @ wi_0) * (x @ wi_1)) @ wo.
Router: softmax over the E logits, top-k, renormalise the k weights to sum 1.

Backends (op sequences follow shared/reference/backends.md, MaxText
`sparse_matmul` with TP = 1 and a batch sharded over the expert axis):
  moe_dense_einsum   every token through every expert, weighted combine;
  moe_ragged_dot     argsort of expert ids, repeat + gather, bincount group
                     sizes, ragged_dot x3, unpermute, weighted sum;
  ep_ragged_a2a_body per-device body under shard_map: the above plus the
                     all-gathers of group sizes, ragged_all_to_all dispatch,
                     local permute and ragged_all_to_all combine.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Callable

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax
from jax.sharding import PartitionSpec as P

EP_AXIS = "expert"


@dataclasses.dataclass(frozen=True)
class MoeConfig:
  tokens: int = 64      # T (global)
  d_model: int = 24     # D
  d_ff: int = 40        # F (expert FFN width)
  num_experts: int = 16  # E
  top_k: int = 2        # K
  ep: int = 8           # devices on the expert axis

  @property
  def experts_per_device(self) -> int:
    return self.num_experts // self.ep

  @property
  def tokens_per_device(self) -> int:
    return self.tokens // self.ep

  @property
  def recv_buffer_rows(self) -> int:
    # MaxText get_ragged_buffer_size with ragged_buffer_factor <= 0:
    # R = T_l * K * min(EP, E / K); never drops a token.
    return (self.tokens_per_device * self.top_k *
            min(self.ep, self.num_experts // self.top_k))


# --- shared pieces ---------------------------------------------------------


def route(x, router_w, top_k):
  """Returns (weights [T, K] renormalised, expert ids [T, K] int32)."""
  probs = jax.nn.softmax(x @ router_w, axis=-1)
  weights, ids = lax.top_k(probs, top_k)
  weights = weights / jnp.sum(weights, axis=-1, keepdims=True)
  return weights, ids


def _exclusive_cumsum(v, axis=0):
  return jnp.cumsum(v, axis=axis) - v


# --- single-device backends ------------------------------------------------


def moe_dense_einsum(x, router_w, wi_0, wi_1, wo, *, top_k):
  weights, ids = route(x, router_w, top_k)
  num_experts = router_w.shape[1]
  # Dense combine weights [T, E]: zero for experts a token did not pick.
  combine = jnp.einsum("tk,tke->te", weights,
                       jax.nn.one_hot(ids, num_experts, dtype=x.dtype))
  h0 = jnp.einsum("td,edf->tef", x, wi_0)
  h1 = jnp.einsum("td,edf->tef", x, wi_1)
  act = jax.nn.silu(h0) * h1
  y = jnp.einsum("tef,efd->ted", act, wo)
  return jnp.einsum("ted,te->td", y, combine)


def _expert_ffn_ragged(rows, wi_0, wi_1, wo, group_sizes):
  h0 = lax.ragged_dot(rows, wi_0, group_sizes)
  h1 = lax.ragged_dot(rows, wi_1, group_sizes)
  return lax.ragged_dot(jax.nn.silu(h0) * h1, wo, group_sizes)


def _permute(x, ids, num_experts):
  """Sorts the T*K (token, choice) rows by expert id."""
  top_k = ids.shape[1]
  flat_ids = ids.reshape(-1)
  sort_idx = jnp.argsort(flat_ids)  # stable
  x_sorted = jnp.repeat(x, top_k, axis=0)[sort_idx]
  group_sizes = jnp.bincount(flat_ids, length=num_experts).astype(jnp.int32)
  return x_sorted, sort_idx, group_sizes


def _unpermute(y_sorted, sort_idx, weights):
  tokens, top_k = weights.shape
  y = y_sorted[jnp.argsort(sort_idx)].reshape(tokens, top_k, -1)
  return jnp.einsum("tkd,tk->td", y, weights)


def moe_ragged_dot(x, router_w, wi_0, wi_1, wo, *, top_k):
  weights, ids = route(x, router_w, top_k)
  x_sorted, sort_idx, group_sizes = _permute(x, ids, router_w.shape[1])
  y_sorted = _expert_ffn_ragged(x_sorted, wi_0, wi_1, wo, group_sizes)
  return _unpermute(y_sorted, sort_idx, weights)


# --- expert parallel: ragged all-to-all ------------------------------------


def ragged_all_to_all_emulated(operand, output, input_offsets, send_sizes,
                               output_offsets, recv_sizes, *, axis_name):
  """lax.ragged_all_to_all semantics built from all_to_all + gather/scatter.

  XLA:CPU cannot run ragged-all-to-all; this twin runs anywhere and is only
  used to compute golden numerics. One slice per device (P = axis size).
  Slice j of my operand (rows input_offsets[j] + [0, send_sizes[j])) goes to
  device j and lands at rows output_offsets[j] + [0, ...) of its result
  (sender-side offsets). Rows nobody writes keep `output`'s values.
  """
  rows_in = operand.shape[0]
  rows_out = output.shape[0]
  r = jnp.arange(rows_in, dtype=jnp.int32)
  src = input_offsets[:, None] + r[None, :]                      # [P, N]
  send_mask = r[None, :] < send_sizes[:, None]
  chunks = operand[jnp.clip(src, 0, rows_in - 1)]                # [P, N, ...]
  mask = send_mask.reshape(send_mask.shape + (1,) * (operand.ndim - 1))
  chunks = jnp.where(mask, chunks, jnp.zeros_like(chunks))
  received = lax.all_to_all(chunks, axis_name, 0, 0)             # [P, N, ...]
  # Where sender i wants its slice written on me.
  offsets_here = lax.all_to_all(output_offsets, axis_name, 0, 0)  # [P]
  dst = offsets_here[:, None] + r[None, :]
  dst = jnp.where(r[None, :] < recv_sizes[:, None], dst, rows_out)  # drop
  return output.at[dst.reshape(-1)].set(
      received.reshape((-1,) + operand.shape[1:]), mode="drop")


def ragged_all_to_all_numpy(operands, outputs, input_offsets, send_sizes,
                            output_offsets, recv_sizes):
  """Reference semantics over all devices at once (lists indexed by device)."""
  num_devices = len(operands)
  results = [np.array(o, copy=True) for o in outputs]
  for src in range(num_devices):
    for dst in range(num_devices):
      size = int(send_sizes[src][dst])
      if size == 0:
        continue
      if int(recv_sizes[dst][src]) != size:
        raise AssertionError("send_sizes and recv_sizes disagree")
      start_in = int(input_offsets[src][dst])
      start_out = int(output_offsets[src][dst])
      results[dst][start_out:start_out + size] = (
          operands[src][start_in:start_in + size])
  return results


def _ra2a_params(matrix, shard):
  """MaxText get_all_to_all_params, batch-sharded: matrix[i, j] = rows shard i
  sends to shard j. Returns (input_offsets, send_sizes, output_offsets,
  recv_sizes) for `shard`."""
  send_sizes = matrix[shard]
  input_offsets = _exclusive_cumsum(send_sizes)
  output_offsets = _exclusive_cumsum(matrix, axis=0)[shard]
  recv_sizes = matrix[:, shard]
  return input_offsets, send_sizes, output_offsets, recv_sizes


def _receive_buffer(shape, dtype):
  """The `output` operand of a ragged_all_to_all: zeros, typed device-varying.

  jax 0.10.2 gives ragged_all_to_all's result the varying-manual-axes type of
  its `output` operand. A plain jnp.zeros is device-invariant, so the result
  (which holds rows from other devices, different on every device) would be
  typed invariant, and autodiff would psum its cotangent over the axis,
  adding up the cotangents of different tokens on all 8 devices. pcast to
  'varying' is the identity on values and makes the typing true.
  """
  return lax.pcast(jnp.zeros(shape, dtype), EP_AXIS, to="varying")


def ep_ragged_a2a_body(x, router_w, wi_0, wi_1, wo, *, cfg: MoeConfig,
                       ra2a: Callable[..., Any]):
  """Per-device body (x [T_l, D], local experts [E_l, ...])."""
  ep, e_local, top_k = cfg.ep, cfg.experts_per_device, cfg.top_k
  shard = lax.axis_index(EP_AXIS)
  weights, ids = route(x, router_w, top_k)
  x_sorted, sort_idx, group_sizes = _permute(x, ids, cfg.num_experts)

  # Rows this shard sends to each expert shard, and the global traffic matrix.
  per_shard = group_sizes.reshape(ep, e_local).sum(axis=1)
  traffic = lax.all_gather(per_shard, EP_AXIS)                   # [EP, EP]
  recv_rows = cfg.recv_buffer_rows
  x_recv = ra2a(x_sorted, _receive_buffer((recv_rows, x.shape[1]), x.dtype),
                *_ra2a_params(traffic, shard), axis_name=EP_AXIS)

  # Local permute: the receive buffer is source-major; sort it expert-major.
  global_sizes = lax.all_gather(group_sizes, EP_AXIS)            # [EP, E]
  local_sizes = lax.dynamic_slice_in_dim(global_sizes, shard * e_local,
                                         e_local, axis=1)        # [EP, E_l]
  row_expert = jnp.repeat(
      jnp.arange(ep * e_local, dtype=jnp.int32) % e_local,
      local_sizes.reshape(-1), total_repeat_length=recv_rows)
  local_sort = jnp.argsort(row_expert)
  local_group_sizes = local_sizes.sum(axis=0)
  y_local = _expert_ffn_ragged(x_recv[local_sort], wi_0, wi_1, wo,
                               local_group_sizes)
  y_recv = y_local[jnp.argsort(local_sort)]

  # Combine: the same exchange with the traffic matrix transposed.
  y_back = ra2a(y_recv, _receive_buffer((x_sorted.shape[0], x.shape[1]),
                                        x.dtype),
                *_ra2a_params(traffic.T, shard), axis_name=EP_AXIS)
  return _unpermute(y_back, sort_idx, weights)


def make_ep_forward(mesh, cfg: MoeConfig, ra2a=lax.ragged_all_to_all):
  body = lambda *args: ep_ragged_a2a_body(*args, cfg=cfg, ra2a=ra2a)
  return jax.shard_map(
      body, mesh=mesh, in_specs=EP_IN_SPECS, out_specs=P(EP_AXIS))


EP_IN_SPECS = (P(EP_AXIS), P(), P(EP_AXIS), P(EP_AXIS), P(EP_AXIS))


def make_grad(forward):
  """(x, router_w, wi_0, wi_1, wo, cotangent) -> gradients of
  sum(forward(...) * cotangent) w.r.t. the five parameters."""

  def loss(x, router_w, wi_0, wi_1, wo, cotangent):
    return jnp.sum(forward(x, router_w, wi_0, wi_1, wo) * cotangent)

  def grad(x, router_w, wi_0, wi_1, wo, cotangent):
    return jax.grad(loss, argnums=(0, 1, 2, 3, 4))(x, router_w, wi_0, wi_1,
                                                   wo, cotangent)

  return grad


# --- numpy float64 references (independent of the JAX code above) ---------


def _sigmoid(z):
  return 1.0 / (1.0 + np.exp(-z))


def reference_route(x, router_w, top_k):
  logits = x.astype(np.float64) @ router_w.astype(np.float64)
  logits -= logits.max(axis=-1, keepdims=True)
  probs = np.exp(logits)
  probs /= probs.sum(axis=-1, keepdims=True)
  ids = np.argsort(-probs, axis=-1, kind="stable")[:, :top_k]
  return probs, ids


def routing_margin(x, router_w, top_k):
  """Smallest gap between the k-th and (k+1)-th router probability."""
  probs, _ = reference_route(x, router_w, top_k)
  ordered = -np.sort(-probs, axis=-1)
  return float(np.min(ordered[:, top_k - 1] - ordered[:, top_k]))


def reference_forward_and_grad(x, router_w, wi_0, wi_1, wo, cotangent, top_k):
  """Per-token loop in float64: returns (out, [dx, drouter, dwi_0, dwi_1, dwo])."""
  x, router_w, wi_0, wi_1, wo = (
      a.astype(np.float64) for a in (x, router_w, wi_0, wi_1, wo))
  probs, ids = reference_route(x, router_w, top_k)
  out = np.zeros_like(x)
  grads = [np.zeros_like(a) for a in (x, router_w, wi_0, wi_1, wo)]
  dx, drouter, dwi_0, dwi_1, dwo = grads
  for t in range(x.shape[0]):
    sel = ids[t]
    total = probs[t, sel].sum()
    w = probs[t, sel] / total
    g = None if cotangent is None else cotangent[t].astype(np.float64)
    dw = np.zeros(top_k)
    for k, e in enumerate(sel):
      h0 = x[t] @ wi_0[e]
      h1 = x[t] @ wi_1[e]
      s0 = _sigmoid(h0)
      act = h0 * s0 * h1
      y = act @ wo[e]
      out[t] += w[k] * y
      if g is None:
        continue
      dw[k] = g @ y
      dy = w[k] * g
      dwo[e] += np.outer(act, dy)
      dact = wo[e] @ dy
      dh0 = dact * h1 * s0 * (1.0 + h0 * (1.0 - s0))
      dh1 = dact * h0 * s0
      dwi_0[e] += np.outer(x[t], dh0)
      dwi_1[e] += np.outer(x[t], dh1)
      dx[t] += wi_0[e] @ dh0 + wi_1[e] @ dh1
    if g is None:
      continue
    # w_j = p_j / S  =>  dp_i = dw_i / S - (sum_j dw_j w_j) / S on the picks.
    dprobs = np.zeros(router_w.shape[1])
    dprobs[sel] = (dw - np.dot(dw, w)) / total
    dlogits = probs[t] * (dprobs - np.dot(probs[t], dprobs))
    drouter += np.outer(x[t], dlogits)
    dx[t] += router_w @ dlogits
  return out, grads
