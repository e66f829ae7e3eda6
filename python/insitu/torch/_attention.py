"""Lowerings of scaled dot-product attention: the CPU flash-attention forward, with its true
logsumexp, and its backward.

torch routes ``F.scaled_dot_product_attention`` on a CPU to
``aten._scaled_dot_product_flash_attention_for_cpu`` (out, logsumexp) and its gradient to
``..._for_cpu_backward``, which reads that logsumexp. core_aten_decompositions() rewrites the
forward with the attention matrix where the logsumexp belongs, so the backend keeps it out of its
table (see __init__._decompositions) and both ops lower here, with the kernel's own conventions:

- scores ``S = scale * Q K^T``, then the mask (a bool mask keeps True, a float mask is added),
  then the causal mask (key j after query i is -inf, top-left aligned as ``tril(ones(L, S))``);
- a row whose every score is -inf gives 0 (its max taken as 0 and its sum as 1, so its
  logsumexp is 0), as torch's kernel and its math path give;
- f16 and bf16 accumulate in f32, as the kernel does; the logsumexp has the type torch says.

Dropout needs torch's random stream, which insitu cannot reproduce: it is refused (the whole
graph then runs as eager torch would run it).
"""
from __future__ import annotations

import math

import torch

from ._lowering import _lower, aten
from ._types import Unsupported


def _accumulator(dtype):
    return torch.float32 if dtype in (torch.float16, torch.bfloat16) else dtype


def _batched_dot(L, a, b, a_contract, b_contract, batch, dtype, dims):
    """dot over the leading `batch` dimensions of a and b, contracting a's dimension a_contract
    with b's b_contract (counted after the batch)."""
    batch_dims = ",".join(map(str, range(batch)))
    return L.emit("dot", dtype, dims,
                  f"dot({a}, {b}), lhs_batch_dims={{{batch_dims}}}, rhs_batch_dims={{{batch_dims}}}, "
                  f"lhs_contracting_dims={{{batch + a_contract}}}, rhs_contracting_dims={{{batch + b_contract}}}")


class _Attention:
    """The operands of one attention op as HLO values in the accumulation type."""

    def __init__(self, L, name, query, key, value, dropout_p, is_causal, attn_mask, scale):
        if dropout_p:
            raise Unsupported(f"{name} with dropout_p={dropout_p}: dropout needs torch's random stream")
        if is_causal and attn_mask is not None:
            raise Unsupported(f"{name} with both is_causal and attn_mask")
        self.L = L
        self.dtype = L.types[L.value(query)][0]
        self.acc = _accumulator(self.dtype)
        self.q, self.k, self.v = (L.convert(L.value(x), self.acc) for x in (query, key, value))
        q_dims, k_dims, v_dims = (L.types[x][1] for x in (self.q, self.k, self.v))
        if len(q_dims) < 3 or not (len(q_dims) == len(k_dims) == len(v_dims)):
            raise Unsupported(f"{name} of ranks {len(q_dims)}, {len(k_dims)}, {len(v_dims)}: "
                              "query, key and value of one rank, at least 3")
        self.batch = len(q_dims) - 2
        self.batch_dims = q_dims[:-2]
        if k_dims[:-2] != self.batch_dims or v_dims[:-2] != self.batch_dims:
            raise Unsupported(f"{name} with batch dimensions {q_dims[:-2]}, {k_dims[:-2]}, {v_dims[:-2]} "
                              "that differ (grouped-query attention reaches it expanded)")
        if k_dims[-2] != v_dims[-2] or k_dims[-1] != q_dims[-1]:
            raise Unsupported(f"{name} of shapes {q_dims}, {k_dims}, {v_dims}")
        self.queries, self.keys = q_dims[-2], k_dims[-2]
        self.q_dims, self.k_dims, self.v_dims = q_dims, k_dims, v_dims
        self.scores_dims = self.batch_dims + (self.queries, self.keys)
        self.rows_dims = self.batch_dims + (self.queries,)
        self.scale = 1.0 / math.sqrt(q_dims[-1]) if scale is None else float(scale)
        self.mask, self.is_causal = attn_mask, is_causal

    def scores(self):
        """scale * Q K^T with the mask and the causal mask applied."""
        L, acc, dims = self.L, self.acc, self.scores_dims
        scores = _batched_dot(L, self.q, self.k, 1, 1, self.batch, acc, dims)
        scores = L.emit("multiply", acc, dims, f"multiply({scores}, {L.constant(self.scale, acc, dims)})")
        minus_inf = L.constant(-math.inf, acc, dims)
        if self.mask is not None:
            mask = L.value(self.mask)
            if L.types[mask][0] == torch.bool:
                scores = L.emit("select", acc, dims, f"select({L.broadcast(mask, dims)}, {scores}, {minus_inf})")
            else:
                scores = L.emit("add", acc, dims, f"add({scores}, {L.broadcast(L.convert(mask, acc), dims)})")
        if self.is_causal:
            rank = len(dims)
            row = L.emit("iota", torch.int32, dims, f"iota(), iota_dimension={rank - 2}")
            column = L.emit("iota", torch.int32, dims, f"iota(), iota_dimension={rank - 1}")
            visible = L.emit("compare", torch.bool, dims, f"compare({column}, {row}), direction=LE")
            scores = L.emit("select", acc, dims, f"select({visible}, {scores}, {minus_inf})")
        return scores

    def rows(self, value):
        """`value` of shape rows_dims broadcast along the keys."""
        L = self.L
        return L.broadcast(L.reshape(value, self.rows_dims + (1,)), self.scores_dims)


@_lower(aten._scaled_dot_product_flash_attention_for_cpu.default)
def _flash_attention(L, node, query, key, value, dropout_p=0.0, is_causal=False, *, attn_mask=None, scale=None):
    a = _Attention(L, "flash attention", query, key, value, dropout_p, is_causal, attn_mask, scale)
    acc, dims, rows = a.acc, a.scores_dims, a.rows_dims
    scores = a.scores()
    top = L.reduce(scores, [len(dims) - 1], "maximum", -math.inf, acc)
    top = L.emit("select", acc, rows,  # a fully masked row: max 0, so exp gives 0 and not NaN
                 f"select({L.emit('compare', torch.bool, rows, f'compare({top}, {L.constant(-math.inf, acc, rows)}), direction=EQ')}, "
                 f"{L.constant(0, acc, rows)}, {top})")
    weights = L.emit("exponential", acc, dims, f"exponential({L.emit('subtract', acc, dims, f'subtract({scores}, {a.rows(top)})')})")
    total = L.reduce(weights, [len(dims) - 1], "add", 0, acc)
    total = L.emit("select", acc, rows,  # ... and its sum 1, so its output is 0
                   f"select({L.emit('compare', torch.bool, rows, f'compare({total}, {L.constant(0, acc, rows)}), direction=EQ')}, "
                   f"{L.constant(1, acc, rows)}, {total})")
    out_dims = a.rows_dims + (a.v_dims[-1],)
    unscaled = _batched_dot(L, weights, a.v, 1, 0, a.batch, acc, out_dims)
    out = L.emit("divide", acc, out_dims,
                 f"divide({unscaled}, {L.broadcast(L.reshape(total, rows + (1,)), out_dims)})")
    out_meta, lse_meta = node.meta["val"][:2]
    logsumexp = L.emit("add", acc, rows, f"add({top}, {L.emit('log', acc, rows, f'log({total})')})")
    return (L.convert(out, out_meta.dtype), L.reshape(L.convert(logsumexp, lse_meta.dtype), tuple(lse_meta.shape)))


@_lower(aten._scaled_dot_product_flash_attention_for_cpu_backward.default)
def _flash_attention_backward(L, node, grad_out, query, key, value, out, logsumexp, dropout_p, is_causal, *,
                              attn_mask=None, scale=None):
    a = _Attention(L, "flash attention backward", query, key, value, dropout_p, is_causal, attn_mask, scale)
    acc, dims, batch = a.acc, a.scores_dims, a.batch
    out_dims = a.rows_dims + (a.v_dims[-1],)
    grad = L.operand(grad_out, acc, out_dims)
    output = L.operand(out, acc, out_dims)
    lse = L.reshape(L.convert(L.value(logsumexp), acc), a.rows_dims)
    # P = exp(S - logsumexp): the forward's softmax, 0 where the scores were -inf
    shifted = L.emit("subtract", acc, dims, f"subtract({a.scores()}, {a.rows(lse)})")
    weights = L.emit("exponential", acc, dims, f"exponential({shifted})")
    grad_value = _batched_dot(L, weights, grad, 0, 0, batch, acc, a.v_dims)  # P^T dO
    grad_weights = _batched_dot(L, grad, a.v, 1, 1, batch, acc, dims)  # dO V^T
    product = L.emit("multiply", acc, out_dims, f"multiply({grad}, {output})")
    delta = L.reduce(product, [len(out_dims) - 1], "add", 0, acc)  # rowsum(dO * O)
    centered = L.emit("subtract", acc, dims, f"subtract({grad_weights}, {a.rows(delta)})")
    grad_scores = L.emit("multiply", acc, dims, f"multiply({weights}, {centered})")
    scale = L.constant(a.scale, acc, dims)
    grad_scores = L.emit("multiply", acc, dims, f"multiply({grad_scores}, {scale})")
    grad_query = _batched_dot(L, grad_scores, a.k, 1, 0, batch, acc, a.q_dims)  # scale dS K
    grad_key = _batched_dot(L, grad_scores, a.q, 0, 0, batch, acc, a.k_dims)  # scale dS^T Q
    metas = node.meta["val"]
    return tuple(L.convert(x, m.dtype) for x, m in zip((grad_query, grad_key, grad_value), metas))
