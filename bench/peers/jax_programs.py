"""The JAX programs of insitu's peer corpus (tests/data/jax) and the script that dumps them.

For every program it writes, into OUT/NAME/:
  before_optimizations.hlo   the HLO module XLA receives (XLA_FLAGS --xla_dump_to ... as text)
  after_optimizations.hlo    the HLO module XLA:CPU runs (its optimized module)
  input_0.npy ...            the flattened argument leaves, in entry-parameter order
  output_0.npy ...           JAX's results, the flattened result leaves in order
  xla.json                   compile().memory_analysis() figures, donation, and the copies in
                             the optimized module

Usage (make_corpus.sh runs it inside the pinned virtualenv):
  python jax_programs.py OUT            every program, one subprocess each (XLA_FLAGS is read
                                        once per process, so each gets its own dump folder)
  python jax_programs.py OUT NAME...    only these
  python jax_programs.py --list         names and one-line descriptions
"""

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

# The shapes are small on purpose: the whole corpus is committed as test data.
RNG_SEED = 20440


def _rng():
    import numpy as np

    return np.random.RandomState(RNG_SEED)


def _f32(rng, *shape):
    return rng.standard_normal(shape).astype("float32")


# --- program functions shared with the large-shape peer measurements (measure_xla.py) -------


def kv_cache_decode_step_fn(length, dim):
    """The decode step over a [k|v, layer, head, position, dim] cache of `length` positions."""
    import jax
    import jax.numpy as jnp
    from jax import lax

    def f(cache, new_kv, query, pos):
        zero = jnp.int32(0)
        cache = lax.dynamic_update_slice(cache, new_kv, (zero, zero, zero, pos, zero))
        keys, values = cache[0], cache[1]
        scores = jnp.einsum("lhd,lhtd->lht", query, keys) / jnp.sqrt(jnp.float32(dim))
        mask = jnp.arange(length) <= pos
        scores = jnp.where(mask, scores, jnp.float32(-1e30))
        weights = jax.nn.softmax(scores, axis=-1)
        return cache, jnp.einsum("lht,lhtd->lhd", weights, values)

    return f


def kv_cache_decode_loop_fn():
    """Six decode steps in a fori_loop, each writing one position of the carried cache."""
    import jax.numpy as jnp
    from jax import lax

    def f(cache, token, weight):
        def step(i, carry):
            cache, token = carry
            token = jnp.tanh(token @ weight + cache[i][None, :] * 0.5)
            cache = lax.dynamic_update_slice(cache, token, (i + 4, jnp.int32(0)))
            return cache, token

        return lax.fori_loop(0, 6, step, (cache, token))

    return f


def at_index_add_fn(x, i, v):
    return x.at[i].add(v)


# --- the programs -------------------------------------------------------------------------
# Each returns (function, args tuple, jit keyword arguments). The function's __name__ becomes
# the module name (jit_NAME), so it is set to the program's name.

PROGRAMS = {}


def program(description):
    def register(builder):
        PROGRAMS[builder.__name__] = (description, builder)
        return builder

    return register


@program("KV-cache decode step: writes this step's key/value at `pos` (dynamic_update_slice) into "
         "the donated cache and attends over it")
def kv_cache_decode_step():
    import jax.numpy as jnp

    rng = _rng()
    layers, heads, length, dim = 2, 2, 16, 8
    cache = _f32(rng, 2, layers, heads, length, dim)  # [k|v, layer, head, position, dim]
    new_kv = _f32(rng, 2, layers, heads, 1, dim)
    query = _f32(rng, layers, heads, dim)
    pos = jnp.int32(5)

    return kv_cache_decode_step_fn(length, dim), (cache, new_kv, query, pos), dict(donate_argnums=(0,))


@program("decode loop: fori_loop of 6 steps, each writing one position of the donated cache")
def kv_cache_decode_loop():
    rng = _rng()
    length, dim = 16, 8
    cache = _f32(rng, length, dim)
    token = _f32(rng, 1, dim)
    weight = _f32(rng, dim, dim) * 0.3

    return kv_cache_decode_loop_fn(), (cache, token, weight), dict(donate_argnums=(0,))


@program("Adam step: donated params and first/second moments updated from gradients")
def adam_step():
    import jax
    import jax.numpy as jnp

    rng = _rng()
    params = {"w": _f32(rng, 16, 8), "b": _f32(rng, 8)}
    grads = {"w": _f32(rng, 16, 8), "b": _f32(rng, 8)}
    m = {"w": _f32(rng, 16, 8) * 0.1, "b": _f32(rng, 8) * 0.1}
    v = {"w": abs(_f32(rng, 16, 8)) * 0.1, "b": abs(_f32(rng, 8)) * 0.1}
    step = jnp.int32(3)

    def f(params, m, v, grads, step):
        b1, b2, lr, eps = 0.9, 0.999, 1e-3, 1e-8
        t = (step + 1).astype(jnp.float32)
        m = jax.tree_util.tree_map(lambda m, g: b1 * m + (1 - b1) * g, m, grads)
        v = jax.tree_util.tree_map(lambda v, g: b2 * v + (1 - b2) * g * g, v, grads)
        scale = lr * jnp.sqrt(1 - b2**t) / (1 - b1**t)
        params = jax.tree_util.tree_map(lambda p, m, v: p - scale * m / (jnp.sqrt(v) + eps), params, m, v)
        return params, m, v

    return f, (params, m, v, grads, step), dict(donate_argnums=(0, 1, 2))


@program("scan over 8 rows writing each step's result into the carried buffer with dynamic_update_slice")
def scan_dynamic_update_slice():
    import jax.numpy as jnp
    from jax import lax

    rng = _rng()
    xs = _f32(rng, 8, 4)
    buffer = jnp.zeros((8, 4), jnp.float32)

    def f(buffer, xs):
        def step(carry, x):
            buffer, i, total = carry
            total = total + x
            buffer = lax.dynamic_update_slice(buffer, (total * 2.0)[None, :], (i, jnp.int32(0)))
            return (buffer, i + 1, total), total.sum()

        (buffer, _, total), sums = lax.scan(step, (buffer, jnp.int32(0), jnp.zeros(4, jnp.float32)), xs)
        return buffer, total, sums

    return f, (buffer, xs), dict(donate_argnums=(0,))


def _cond_in_scan(update_first):
    import jax.numpy as jnp
    from jax import lax

    rng = _rng()
    state = _f32(rng, 8, 4)
    flags = (rng.rand(6) > 0.5).astype("bool")
    flags[0], flags[1] = True, False  # both branches run

    def update(state, i):
        return lax.dynamic_update_slice(state, state[i][None, :] + 1.0, (i + 1, jnp.int32(0)))

    def keep(state, i):
        return state

    def f(state, flags):
        def step(carry, flag):
            state, i = carry
            if update_first:
                state = lax.cond(flag, update, keep, state, i)
            else:
                state = lax.cond(jnp.logical_not(flag), keep, update, state, i)
            return (state, i + 1), state[0, 0]

        (state, _), firsts = lax.scan(step, (state, jnp.int32(0)), flags)
        return state, firsts

    return f, (state, flags), dict(donate_argnums=(0,))


@program("cond inside scan, true branch updates the carried state in place, false branch passes it through")
def cond_in_scan_update_first():
    return _cond_in_scan(True)


@program("cond inside scan with the branch order swapped (pass-through branch first)")
def cond_in_scan_keep_first():
    return _cond_in_scan(False)


@program("x.at[i].add(v) on a donated array")
def at_index_add():
    import jax.numpy as jnp

    rng = _rng()
    return at_index_add_fn, (_f32(rng, 8, 4), jnp.int32(3), _f32(rng, 4)), dict(donate_argnums=(0,))


@program("x.at[i].set(v) on a donated array")
def at_index_set():
    import jax.numpy as jnp

    rng = _rng()
    return (lambda x, i, v: x.at[i].set(v)), (_f32(rng, 8, 4), jnp.int32(6), _f32(rng, 4)), dict(donate_argnums=(0,))


@program("embedding gradient: jnp.zeros((vocab, dim)).at[ids].add(g) with repeated ids (scatter-add)")
def embedding_grad_scatter_add():
    import jax.numpy as jnp

    rng = _rng()
    ids = jnp.asarray([1, 4, 1, 7, 0, 4, 4, 9], jnp.int32)
    grads = _f32(rng, 8, 6)
    return (lambda ids, g: jnp.zeros((12, 6), jnp.float32).at[ids].add(g)), (ids, grads), {}


@program("embedding lookup: jnp.take(table, ids, axis=0) (gather)")
def embedding_lookup():
    import jax.numpy as jnp

    rng = _rng()
    table = _f32(rng, 12, 6)
    ids = jnp.asarray([[1, 4, 1], [7, 0, 11]], jnp.int32)
    return (lambda table, ids: jnp.take(table, ids, axis=0)), (table, ids), {}


def _mlp_params(rng):
    return {"w1": _f32(rng, 8, 16) * 0.3, "b1": _f32(rng, 16) * 0.1,
            "w2": _f32(rng, 16, 4) * 0.3, "b2": _f32(rng, 4) * 0.1}


def _mlp(params, x):
    import jax
    import jax.numpy as jnp

    hidden = jax.nn.relu(x @ params["w1"] + params["b1"])
    return jnp.tanh(hidden @ params["w2"] + params["b2"])


@program("two-layer MLP forward (matmul, bias, relu, tanh)")
def mlp_forward():
    rng = _rng()
    params = _mlp_params(rng)
    return _mlp, (params, _f32(rng, 5, 8)), {}


@program("gradient of the MLP's squared error with respect to its parameters (jax.grad)")
def mlp_grad():
    import jax
    import jax.numpy as jnp

    rng = _rng()
    params = _mlp_params(rng)
    x, y = _f32(rng, 5, 8), _f32(rng, 5, 4)

    def loss(params, x, y):
        return jnp.mean((_mlp(params, x) - y) ** 2)

    return jax.value_and_grad(loss), (params, x, y), {}


@program("softmax over the last axis (jax.nn.softmax: max, exp, sum, divide)")
def softmax():
    import jax

    rng = _rng()
    return (lambda x: jax.nn.softmax(x, axis=-1)), (_f32(rng, 6, 10) * 3.0,), {}


@program("layer normalization with scale and bias")
def layernorm():
    import jax.numpy as jnp

    rng = _rng()

    def f(x, scale, bias):
        mean = x.mean(axis=-1, keepdims=True)
        var = ((x - mean) ** 2).mean(axis=-1, keepdims=True)
        return (x - mean) / jnp.sqrt(var + 1e-5) * scale + bias

    return f, (_f32(rng, 6, 16), _f32(rng, 16), _f32(rng, 16)), {}


@program("openxla/xla#20440: read x[0,0] of a donated array, then return x.at[0,0].add(1)")
def read_then_update_donated():
    rng = _rng()
    return (lambda x: (x[0, 0], x.at[0, 0].add(1.0))), (_f32(rng, 4, 4),), dict(donate_argnums=(0,))


@program("cumulative sums along both axes (float and int)")
def cumsum():
    import jax.numpy as jnp

    rng = _rng()
    ints = jnp.asarray(rng.randint(-50, 50, size=(4, 9)), jnp.int32)
    return (lambda x, n: (jnp.cumsum(x, axis=1), jnp.cumsum(n, axis=0))), (_f32(rng, 4, 9), ints), {}


@program("argmax and argmin along an axis (variadic reduce), with ties")
def argmax():
    import jax.numpy as jnp

    rng = _rng()
    x = _f32(rng, 5, 7)
    x[2, 1] = x[2, 4] = 9.0  # a tie: the first index wins
    return (lambda x: (jnp.argmax(x, axis=1), jnp.argmin(x, axis=0))), (x,), {}


@program("sort: a float vector, rows of an int matrix, and a key/value sort by key")
def sort():
    import jax.numpy as jnp
    from jax import lax

    rng = _rng()
    keys = jnp.asarray(rng.randint(0, 5, size=(12,)), jnp.int32)
    return ((lambda x, m, k: (jnp.sort(x), jnp.sort(m, axis=1), lax.sort((k, x), num_keys=1)[1])),
            (_f32(rng, 12), jnp.asarray(rng.randint(-9, 9, size=(3, 6)), jnp.int32), keys), {})


@program("lax.top_k (k=3) over rows: the `topk` opcode, with a tie (the lower index first), "
         "-0 and 0, and a NaN (largest under the total order)")
def top_k():
    from jax import lax

    rng = _rng()
    x = _f32(rng, 4, 10)
    x[1, 2] = x[1, 7] = 5.0
    x[2, 3], x[2, 4] = -0.0, 0.0
    x[3, 6] = float("nan")
    return (lambda x: lax.top_k(x, 3)), (x,), {}


@program("top-k (k=3) over rows by a key/index sort and a slice (the same result as lax.top_k, "
         "built from sort; see top_k for lax.top_k itself)")
def top_k_by_sort():
    import jax.numpy as jnp
    from jax import lax

    rng = _rng()
    x = _f32(rng, 4, 10)
    x[1, 2] = x[1, 7] = 5.0  # a tie: the stable sort keeps the lower index first

    def f(x):
        indices = lax.broadcasted_iota(jnp.int32, x.shape, 1)
        negated, indices = lax.sort((-x, indices), dimension=1, num_keys=1, is_stable=True)
        return -negated[:, :3], indices[:, :3]

    return f, (x,), {}


@program("while_loop with a tuple carry (counter, float vector, int accumulator)")
def while_tuple_carry():
    import jax.numpy as jnp
    from jax import lax

    rng = _rng()

    def f(x, limit):
        def cond(carry):
            i, _, _ = carry
            return i < limit

        def body(carry):
            i, x, acc = carry
            return i + 1, x * 0.5 + jnp.float32(1.0), acc + i * i

        return lax.while_loop(cond, body, (jnp.int32(0), x, jnp.int32(0)))

    return f, (_f32(rng, 6), jnp.int32(7)), {}


@program("batched matmul (einsum bij,bjk->bik) and a transposed-operand dot")
def batched_matmul():
    import jax.numpy as jnp

    rng = _rng()
    return ((lambda a, b: (jnp.einsum("bij,bjk->bik", a, b), jnp.einsum("bji,bjk->bik", a, b))),
            (_f32(rng, 3, 4, 4), _f32(rng, 3, 4, 5)), {})


@program("jnp.where / select on comparisons, clip, and a boolean output")
def where_select():
    import jax.numpy as jnp

    rng = _rng()

    def f(x, y):
        mask = x > y
        return jnp.where(mask, x, y * 2.0), jnp.clip(x, -0.5, 0.5), mask, jnp.where(x < 0, 0, 1).astype(jnp.int32)

    return f, (_f32(rng, 5, 6), _f32(rng, 5, 6)), {}


@program("int32 arithmetic: floor division, remainder (negative operands), shifts, bit ops, min/max, abs")
def integer_ops():
    import jax.numpy as jnp

    rng = _rng()
    a = jnp.asarray(rng.randint(-1000, 1000, size=(16,)), jnp.int32)
    b = jnp.asarray(rng.choice([-7, -3, -1, 1, 2, 5, 13], size=(16,)), jnp.int32)
    s = jnp.asarray(rng.randint(0, 31, size=(16,)), jnp.int32)

    def f(a, b, s):
        return (a // b, a % b, jnp.left_shift(a, s), jnp.right_shift(a, s), a & b, a | b, a ^ b,
                jnp.maximum(a, b), jnp.minimum(a, b), jnp.abs(a), a * b - a, jnp.sign(a))

    return f, (a, b, s), {}


@program("log-sum-exp and mean/variance reductions with keepdims")
def reductions():
    import jax.numpy as jnp
    from jax.scipy.special import logsumexp

    rng = _rng()
    return (lambda x: (logsumexp(x, axis=0), x.max(axis=1), x.var(axis=0), x.prod(axis=1))), (_f32(rng, 6, 5),), {}


@program("concatenate, reshape, transpose, pad, reverse and slicing")
def reshape_transpose_concat():
    import jax.numpy as jnp

    rng = _rng()

    def f(x, y):
        z = jnp.concatenate([x, y], axis=0).reshape(4, 3, 4).transpose(2, 0, 1)
        return jnp.pad(z, ((1, 0), (0, 1), (2, 2)))[:, ::-1, 1:5], jnp.flip(x, axis=1)[::2]

    return f, (_f32(rng, 2, 12), _f32(rng, 2, 12)), {}


# --- programs added for jax 0.12 (issue 13): real-model shapes of code, small sizes ---------


def _attention(q, k, v, mask):
    import jax
    import jax.numpy as jnp

    scores = jnp.einsum("...td,...sd->...ts", q, k) / jnp.sqrt(jnp.float32(q.shape[-1]))
    scores = jnp.where(mask, scores, jnp.float32(-1e30))
    return jnp.einsum("...ts,...sd->...td", jax.nn.softmax(scores, axis=-1), v)


@program("12-layer-style decode step with the layers as lax.scan over stacked weights; the donated "
         "KV cache [L,2,T,D] is carried through the scan and each layer's slice updated with "
         "dynamic_update_slice (issue 13 class 8)")
def scan_decode_layers():
    import jax
    import jax.numpy as jnp
    from jax import lax

    rng = _rng()
    layers, length, dim = 3, 8, 8
    weights = _f32(rng, layers, dim, 3 * dim) * 0.3
    cache = _f32(rng, layers, 2, length, dim)
    x = _f32(rng, dim)
    pos = jnp.int32(3)

    def f(cache, weights, x, pos):
        def layer(carry, inputs):
            h, cache = carry
            w, index = inputs
            qkv = h @ w
            q, k, v = qkv[:dim], qkv[dim:2 * dim], qkv[2 * dim:]
            layer_cache = lax.dynamic_index_in_dim(cache, index, keepdims=False)
            layer_cache = lax.dynamic_update_slice(layer_cache, jnp.stack([k, v])[:, None, :], (0, pos, 0))
            cache = lax.dynamic_update_index_in_dim(cache, layer_cache, index, axis=0)
            mask = jnp.arange(length) <= pos
            out = _attention(q[None, :], layer_cache[0], layer_cache[1], mask[None, :])[0]
            return (jnp.tanh(h + out), cache), None

        (h, cache), _ = lax.scan(layer, (x, cache), (weights, jnp.arange(layers)))
        return cache, h

    return f, (cache, weights, x, pos), dict(donate_argnums=(0,))


@program("causal self-attention over [T,D] (einsum with transposed operands, mask, softmax)")
def attention_causal():
    import jax.numpy as jnp

    rng = _rng()
    t, d = 6, 4
    q, k, v = _f32(rng, t, d), _f32(rng, t, d), _f32(rng, t, d)
    return (lambda q, k, v: _attention(q, k, v, jnp.tril(jnp.ones((t, t), bool)))), (q, k, v), {}


@program("multi-head attention with a padding mask from sequence lengths ([B,H,T,D])")
def attention_padding_mask():
    import jax.numpy as jnp

    rng = _rng()
    b, h, t, d = 2, 2, 5, 4
    q, k, v = _f32(rng, b, h, t, d), _f32(rng, b, h, t, d), _f32(rng, b, h, t, d)
    lengths = jnp.array([3, 5], jnp.int32)

    def f(q, k, v, lengths):
        mask = (jnp.arange(t)[None, :] < lengths[:, None])[:, None, None, :]
        return _attention(q, k, v, mask)

    return f, (q, k, v, lengths), {}


@program("grouped-query attention: 4 query heads share 2 key/value heads (repeat), causal")
def attention_grouped_query():
    import jax.numpy as jnp

    rng = _rng()
    t, d = 5, 4
    q, k, v = _f32(rng, 4, t, d), _f32(rng, 2, t, d), _f32(rng, 2, t, d)

    def f(q, k, v):
        k, v = jnp.repeat(k, 2, axis=0), jnp.repeat(v, 2, axis=0)
        return _attention(q, k, v, jnp.tril(jnp.ones((t, t), bool)))

    return f, (q, k, v), {}


@program("a transformer block: pre-norm, causal multi-head attention, residual, GELU MLP")
def transformer_block():
    import jax
    import jax.numpy as jnp

    rng = _rng()
    t, d, heads = 6, 8, 2
    params = {"qkv": _f32(rng, d, 3 * d) * 0.3, "out": _f32(rng, d, d) * 0.3, "up": _f32(rng, d, 2 * d) * 0.3,
              "down": _f32(rng, 2 * d, d) * 0.3}
    x = _f32(rng, t, d)

    def norm(x):
        mean = x.mean(-1, keepdims=True)
        return (x - mean) / jnp.sqrt(((x - mean) ** 2).mean(-1, keepdims=True) + 1e-5)

    def f(params, x):
        q, k, v = jnp.split(norm(x) @ params["qkv"], 3, axis=-1)
        split = lambda a: a.reshape(t, heads, d // heads).transpose(1, 0, 2)
        out = _attention(split(q), split(k), split(v), jnp.tril(jnp.ones((t, t), bool)))
        x = x + out.transpose(1, 0, 2).reshape(t, d) @ params["out"]
        return x + jax.nn.gelu(norm(x) @ params["up"]) @ params["down"]

    return f, (params, x), {}


@program("einsums whose XLA:CPU lowering transposes into non-default layouts (bhtd,bhsd->bhts; ijk->kji)")
def einsum_layouts():
    import jax.numpy as jnp

    rng = _rng()
    a, b, c = _f32(rng, 2, 3, 4, 5), _f32(rng, 2, 3, 6, 5), _f32(rng, 3, 4, 6)
    return (lambda a, b, c: (jnp.einsum("bhtd,bhsd->bhts", a, b), jnp.einsum("ijk->kji", c) * 2.0,
                             jnp.einsum("bhtd->btdh", a).reshape(2, 4, 15))), (a, b, c), {}


@program("argsort (stable) and a two-key sort (lax.sort num_keys=2), with ties and NaN")
def argsort_multi_key():
    import jax.numpy as jnp
    import numpy as np
    from jax import lax

    x = np.array([3.0, np.nan, 1.0, -0.0, 0.0, 1.0, -np.inf, 2.0], np.float32)
    k1 = np.array([2, 1, 2, 1, 0, 2, 1, 0], np.int32)
    k2 = np.array([5.0, 4.0, 3.0, 2.0, 1.0, 0.0, -1.0, -2.0], np.float32)
    return (lambda x, k1, k2: (jnp.argsort(x, stable=True), jnp.argsort(-x, descending=False),
                               lax.sort((k1, k2, x), num_keys=2))), (x, k1, k2), {}


@program("mixed precision: bf16 and f16 matmuls accumulating in f32, int8 x int8 -> int32 dot, converts")
def mixed_precision():
    import jax.numpy as jnp
    from jax import lax

    rng = _rng()
    a, b = _f32(rng, 4, 8), _f32(rng, 8, 3)
    i = rng.randint(-128, 128, size=(4, 8)).astype("int8")
    j = rng.randint(-128, 128, size=(8, 3)).astype("int8")

    def f(a, b, i, j):
        bf = lax.dot(a.astype(jnp.bfloat16), b.astype(jnp.bfloat16), preferred_element_type=jnp.float32)
        hf = (a.astype(jnp.float16) * 2 + 1).astype(jnp.float32)
        ij = lax.dot(i, j, preferred_element_type=jnp.int32)
        return bf, hf, ij, a.astype(jnp.bfloat16)

    return f, (a, b, i, j), {}


@program("integer edge cases: wrapping overflow, x // 0 and x % 0, INT_MIN // -1, shifts past the width, "
         "unsigned compares, clz/popcount")
def integer_edge_cases():
    import jax.numpy as jnp
    import numpy as np
    from jax import lax

    a = np.array([2147483647, -2147483648, 7, -7, 0, 1], np.int32)
    b = np.array([1, -1, 0, 2, 0, 33], np.int32)

    def f(a, b):
        u = a.astype(jnp.uint32)
        return (a + b, a * 3, lax.div(a, b), lax.rem(a, b), lax.shift_left(a, b), lax.shift_right_logical(a, b),
                lax.shift_right_arithmetic(a, b), u > jnp.uint32(3), lax.clz(a), lax.population_count(a),
                a.astype(jnp.int8), jnp.abs(a))

    return f, (a, b), {}


@program("Elman RNN as lax.scan over a sequence (tanh cell), returning all hidden states")
def rnn_scan():
    import jax.numpy as jnp
    from jax import lax

    rng = _rng()
    wx, wh, xs, h0 = _f32(rng, 3, 4) * 0.5, _f32(rng, 4, 4) * 0.5, _f32(rng, 7, 3), _f32(rng, 4)

    def f(wx, wh, xs, h0):
        def cell(h, x):
            h = jnp.tanh(x @ wx + h @ wh)
            return h, h

        return lax.scan(cell, h0, xs)

    return f, (wx, wh, xs, h0), {}


@program("GRU cell scanned over a sequence (sigmoid gates)")
def gru_scan():
    import jax
    import jax.numpy as jnp
    from jax import lax

    rng = _rng()
    n, m = 3, 4
    w, u, xs, h0 = _f32(rng, n, 3 * m) * 0.5, _f32(rng, m, 3 * m) * 0.5, _f32(rng, 6, n), _f32(rng, m)

    def f(w, u, xs, h0):
        def cell(h, x):
            gx, gh = x @ w, h @ u
            z = jax.nn.sigmoid(gx[:m] + gh[:m])
            r = jax.nn.sigmoid(gx[m:2 * m] + gh[m:2 * m])
            c = jnp.tanh(gx[2 * m:] + r * gh[2 * m:])
            h = (1 - z) * h + z * c
            return h, h

        return lax.scan(cell, h0, xs)

    return f, (w, u, xs, h0), {}


@program("LSTM cell scanned over a sequence, and the gradient of its last state's sum")
def lstm_scan_grad():
    import jax
    import jax.numpy as jnp
    from jax import lax

    rng = _rng()
    n, m = 3, 4
    w, xs = _f32(rng, n + m, 4 * m) * 0.4, _f32(rng, 5, n)

    def run(w, xs):
        def cell(state, x):
            h, c = state
            g = jnp.concatenate([x, h]) @ w
            i, f, o, u = jax.nn.sigmoid(g[:m]), jax.nn.sigmoid(g[m:2 * m]), jax.nn.sigmoid(g[2 * m:3 * m]), jnp.tanh(g[3 * m:])
            c = f * c + i * u
            h = o * jnp.tanh(c)
            return (h, c), h

        (h, c), hs = lax.scan(cell, (jnp.zeros(m), jnp.zeros(m)), xs)
        return h.sum() + 0.5 * c.sum()

    return (lambda w, xs: (run(w, xs), jax.grad(run)(w, xs))), (w, xs), {}


@program("SGD with momentum: one training step of a 2-layer MLP (grad, update), params and "
         "velocity donated")
def sgd_momentum_step():
    import jax
    import jax.numpy as jnp

    rng = _rng()
    params = _mlp_params(rng)
    velocity = jax.tree_util.tree_map(lambda p: p * 0.0, params)
    x, y = _f32(rng, 5, 8), _f32(rng, 5, 4)

    def loss(params, x, y):
        return ((_mlp(params, x) - y) ** 2).mean()

    def f(params, velocity, x, y):
        grads = jax.grad(loss)(params, x, y)
        velocity = jax.tree_util.tree_map(lambda v, g: 0.9 * v + g, velocity, grads)
        params = jax.tree_util.tree_map(lambda p, v: p - 0.1 * v, params, velocity)
        return params, velocity, loss(params, x, y)

    return f, (params, velocity, x, y), dict(donate_argnums=(0, 1))


@program("rematerialization: jax.checkpoint around an MLP block inside jax.grad")
def remat_grad():
    import jax
    import jax.numpy as jnp

    rng = _rng()
    params = _mlp_params(rng)
    x = _f32(rng, 5, 8)

    def f(params, x):
        block = jax.checkpoint(lambda p, x: jnp.sin(_mlp(p, x)))
        return jax.grad(lambda p: (block(p, x) ** 2).sum())(params)

    return f, (params, x), {}


@program("nested control flow with data-dependent trip counts: a while_loop inside a scan whose "
         "bound comes from the data, and a fori_loop with a dynamic upper bound")
def nested_dynamic_loops():
    import jax.numpy as jnp
    from jax import lax

    counts = jnp.array([3, 0, 5, 1], jnp.int32)
    x = jnp.array([1.5, -2.0, 0.25, 4.0], jnp.float32)

    def f(counts, x, n):
        def step(acc, inputs):
            count, value = inputs
            _, v = lax.while_loop(lambda s: s[0] < count, lambda s: (s[0] + 1, s[1] * 0.5 + 1.0), (0, value))
            return acc + v, v

        total, values = lax.scan(step, jnp.float32(0), (counts, x))
        looped = lax.fori_loop(0, n, lambda i, a: a.at[i % 4].add(i.astype(jnp.float32)), x)
        return total, values, looped

    return f, (counts, x, jnp.int32(6)), {}


@program("average and max pooling (lax.reduce_window, 2x2 stride 2, SAME padding) and the average "
         "pool's gradient")
def pooling():
    import jax
    import jax.numpy as jnp
    from jax import lax

    rng = _rng()
    x = _f32(rng, 2, 5, 6, 3)

    def avg(x):
        return lax.reduce_window(x, 0.0, lax.add, (1, 2, 2, 1), (1, 2, 2, 1), "SAME") / 4.0

    def f(x):
        mx = lax.reduce_window(x, -jnp.inf, lax.max, (1, 2, 2, 1), (1, 2, 2, 1), "VALID")
        return avg(x), mx, jax.grad(lambda x: (avg(x) ** 2).sum())(x)

    return f, (x,), {}


@program("batch normalization in training mode (batch mean/variance over N,H,W), with scale and "
         "shift and the running-average update")
def batch_norm():
    import jax.numpy as jnp

    rng = _rng()
    x, gamma, beta = _f32(rng, 4, 3, 3, 2), _f32(rng, 2), _f32(rng, 2)
    running = (jnp.zeros(2), jnp.ones(2))

    def f(x, gamma, beta, running):
        mean, var = x.mean((0, 1, 2)), x.var((0, 1, 2))
        y = (x - mean) / jnp.sqrt(var + 1e-5) * gamma + beta
        return y, (0.9 * running[0] + 0.1 * mean, 0.9 * running[1] + 0.1 * var)

    return f, (x, gamma, beta, running), {}


@program("jax.random samplers (threefry): uniform, normal, bernoulli, categorical, permutation")
def random_samplers():
    import jax

    def f(key):
        keys = jax.random.split(key, 5)
        return (jax.random.uniform(keys[0], (6,)), jax.random.normal(keys[1], (2, 3)),
                jax.random.bernoulli(keys[2], 0.3, (8,)), jax.random.categorical(keys[3], jax.numpy.zeros((2, 4))),
                jax.random.permutation(keys[4], 6))

    import numpy as np

    return f, (np.asarray(jax.random.key_data(jax.random.key(7))),), {}


@program("a Pallas kernel in interpret mode (pallas_call with input_output_aliases={0:0}): adds one "
         "to a block of a donated buffer")
def pallas_interpret_inplace():
    import jax
    import jax.numpy as jnp
    from jax.experimental import pallas as pl

    rng = _rng()
    x = _f32(rng, 8, 4)

    def kernel(x_ref, o_ref):
        o_ref[...] = x_ref[...] + 1.0

    def f(x):
        return pl.pallas_call(kernel, out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype), grid=(2,),
                              in_specs=[pl.BlockSpec((4, 4), lambda i: (i, 0))],
                              out_specs=pl.BlockSpec((4, 4), lambda i: (i, 0)),
                              input_output_aliases={0: 0}, interpret=True)(x)

    return f, (x,), dict(donate_argnums=(0,))


@program("image resize (jax.image.resize bilinear, 4x5 -> 7x3) and a cumulative max")
def image_resize():
    import jax
    import jax.numpy as jnp
    from jax import lax

    rng = _rng()
    x = _f32(rng, 4, 5)
    return (lambda x: (jax.image.resize(x, (7, 3), "bilinear"), lax.cummax(x, axis=1))), (x,), {}


@program("decode step with the layers as lax.scan whose xs are the per-layer caches and whose ys are "
         "the updated ones (the other spelling of issue 13 class 8), cache donated")
def scan_decode_layers_xs():
    import jax.numpy as jnp
    from jax import lax

    rng = _rng()
    layers, length, dim = 3, 8, 8
    weights = _f32(rng, layers, dim, 3 * dim) * 0.3
    cache = _f32(rng, layers, 2, length, dim)
    x = _f32(rng, dim)

    def f(cache, weights, x, pos):
        def layer(h, inputs):
            w, layer_cache = inputs
            q, k, v = jnp.split(h @ w, 3)
            layer_cache = lax.dynamic_update_slice(layer_cache, jnp.stack([k, v])[:, None, :], (0, pos, 0))
            out = _attention(q[None, :], layer_cache[0], layer_cache[1], (jnp.arange(length) <= pos)[None, :])[0]
            return jnp.tanh(h + out), layer_cache

        h, cache = lax.scan(layer, x, (weights, cache))
        return cache, h

    return f, (cache, weights, x, jnp.int32(5)), dict(donate_argnums=(0,))


@program("unrolled decode step: per-layer dynamic_update_slice, then jnp.stack of the layer caches")
def decode_unrolled_stack():
    import jax.numpy as jnp
    from jax import lax

    rng = _rng()
    layers, length, dim = 3, 8, 4
    caches = [_f32(rng, length, dim) for _ in range(layers)]
    new = _f32(rng, layers, 1, dim)

    def f(caches, new, pos):
        updated = [lax.dynamic_update_slice(c, new[i], (pos, 0)) for i, c in enumerate(caches)]
        return jnp.stack(updated), [u.sum(0) for u in updated]

    return f, (caches, new, jnp.int32(2)), dict(donate_argnums=(0,))


@program("softmax cross-entropy with integer labels (take_along_axis) and its gradient")
def cross_entropy_grad():
    import jax
    import jax.numpy as jnp

    rng = _rng()
    logits = _f32(rng, 5, 7)
    labels = jnp.array([0, 6, 3, 3, 1], jnp.int32)

    def loss(logits, labels):
        logp = jax.nn.log_softmax(logits)
        return -jnp.take_along_axis(logp, labels[:, None], axis=1).mean()

    return (lambda l, y: (loss(l, y), jax.grad(loss)(l, y))), (logits, labels), {}


@program("layer norm's gradient with respect to input, scale and bias")
def layernorm_grad():
    import jax
    import jax.numpy as jnp

    rng = _rng()
    x, g, b = _f32(rng, 4, 6), _f32(rng, 6), _f32(rng, 6)

    def ln(x, g, b):
        mean = x.mean(-1, keepdims=True)
        var = ((x - mean) ** 2).mean(-1, keepdims=True)
        return (((x - mean) / jnp.sqrt(var + 1e-5)) * g + b).sum() ** 2 / 10.0

    return jax.grad(ln, argnums=(0, 1, 2)), (x, g, b), {}


@program("segment sums and maxima (jax.ops.segment_sum/segment_max: scatter-add and scatter-max)")
def segment_reductions():
    import jax
    import jax.numpy as jnp

    rng = _rng()
    data = _f32(rng, 7, 3)
    ids = jnp.array([0, 2, 2, 1, 0, 3, 2], jnp.int32)
    return (lambda d, i: (jax.ops.segment_sum(d, i, 4), jax.ops.segment_max(d, i, 4),
                          jax.ops.segment_min(d[:, 0], i, 4))), (data, ids), {}


@program("cumulative product, log-cumsum-exp and a reverse cumulative sum")
def cumulative_ops():
    import jax.numpy as jnp
    from jax import lax

    rng = _rng()
    x = _f32(rng, 3, 6) * 0.5
    return (lambda x: (jnp.cumprod(x, axis=1), lax.cumlogsumexp(x, axis=1), lax.cumsum(x, axis=0, reverse=True))), \
        (x,), {}


@program("sliding windows: lax.dynamic_slice in a fori_loop, summed into a carried buffer")
def sliding_windows():
    import jax.numpy as jnp
    from jax import lax

    rng = _rng()
    x = _f32(rng, 10, 3)

    def f(x):
        def body(i, acc):
            return acc.at[i].set(lax.dynamic_slice(x, (i, 0), (3, 3)).sum(0))

        return lax.fori_loop(0, 8, body, jnp.zeros((8, 3), jnp.float32))

    return f, (x,), {}


@program("lax.switch over three branches by a runtime index, inside a scan")
def switch_in_scan():
    import jax.numpy as jnp
    from jax import lax

    rng = _rng()
    x = _f32(rng, 4)
    choices = jnp.array([2, 0, 1, 1, 0, 2], jnp.int32)

    def f(x, choices):
        branches = [lambda v: v * 2.0, lambda v: jnp.sin(v), lambda v: v[::-1] + 1.0]
        return lax.scan(lambda v, c: (lax.switch(c, branches, v), v.sum()), x, choices)

    return f, (x, choices), {}


@program("a while_loop that runs until convergence (Newton's square root), trip count from the data")
def newton_while():
    import jax.numpy as jnp
    from jax import lax

    a = jnp.array([2.0, 9.0, 0.25, 1e4], jnp.float32)

    def f(a):
        def cond(state):
            x, i = state
            return (jnp.max(jnp.abs(x * x - a)) > 1e-3 * jnp.max(a)) & (i < 50)

        return lax.while_loop(cond, lambda s: ((s[0] + a / s[0]) / 2, s[1] + 1), (a, 0))

    return f, (a,), {}


@program("advanced indexing x[rows, cols], x.at[idx].max/min/mul, and vmap of a dynamic_slice")
def indexing_and_vmap():
    import jax
    import jax.numpy as jnp
    from jax import lax

    rng = _rng()
    x = _f32(rng, 5, 6)
    rows, cols = jnp.array([0, 4, 2, 2], jnp.int32), jnp.array([5, 0, 1, 1], jnp.int32)
    starts = jnp.array([0, 3, 1], jnp.int32)

    def f(x, rows, cols, starts):
        picked = x[rows, cols]
        scattered = (x.at[rows].max(1.0), x.at[cols % 5].min(-1.0), x.at[rows, cols].multiply(3.0))
        windows = jax.vmap(lambda s: lax.dynamic_slice(x, (s, s), (2, 3)))(starts)
        return picked, scattered, windows

    return f, (x, rows, cols, starts), {}


# --- programs with ops insitu cannot run yet (issue 13 class 5): in the corpus so the gap shows


@program("2-D convolutions: NHWC 3x3 SAME, NCHW strided, grouped, dilated")
def convolutions():
    from jax import lax

    rng = _rng()
    x, w = _f32(rng, 1, 6, 6, 4), _f32(rng, 3, 3, 4, 4)
    y, wg = _f32(rng, 1, 4, 7, 7), _f32(rng, 4, 2, 3, 3)

    def f(x, w, y, wg):
        nhwc = lax.conv_general_dilated(x, w, (1, 1), "SAME", dimension_numbers=("NHWC", "HWIO", "NHWC"))
        nchw = lax.conv_general_dilated(y, wg, (2, 2), "VALID", feature_group_count=2)
        dilated = lax.conv_general_dilated(y, wg, (1, 1), "SAME", rhs_dilation=(2, 2), feature_group_count=2)
        return nhwc, nchw, dilated

    return f, (x, w, y, wg), {}


@program("convolution gradients (input and kernel; plain, strided and grouped) and a transposed "
         "convolution")
def conv_gradients():
    import jax
    from jax import lax

    rng = _rng()
    x, w = _f32(rng, 2, 6, 6, 4), _f32(rng, 3, 3, 4, 6)
    y, wg = _f32(rng, 2, 4, 7, 7), _f32(rng, 4, 2, 3, 3)

    def loss(x, w, y, wg):
        a = lax.conv_general_dilated(x, w, (2, 2), "SAME", dimension_numbers=("NHWC", "HWIO", "NHWC"))
        b = lax.conv_general_dilated(y, wg, (1, 1), "VALID", feature_group_count=2)
        return (a ** 2).sum() + (b ** 2).sum()

    def f(x, w, y, wg):
        grads = jax.grad(loss, argnums=(0, 1, 2, 3))(x, w, y, wg)
        t = lax.conv_transpose(x, w[:, :, :, :4], (2, 2), "SAME", dimension_numbers=("NHWC", "HWIO", "NHWC"))
        return grads + (t,)

    return f, (x, w, y, wg), {}


@program("batched linear algebra: cholesky, solve, triangular solve, eigh, svd, slogdet")
def linalg_batched():
    import jax.numpy as jnp
    from jax.scipy.linalg import solve_triangular

    rng = _rng()
    a = _f32(rng, 3, 4, 4)
    spd = a @ jnp.swapaxes(a, -1, -2) + 4 * jnp.eye(4)
    b = _f32(rng, 3, 4, 2)

    def f(spd, b):
        lower = jnp.linalg.cholesky(spd)
        return (lower, jnp.linalg.solve(spd, b), solve_triangular(lower, b, lower=True, trans=1),
                jnp.linalg.eigh(spd)[0], jnp.linalg.svd(b, compute_uv=False), jnp.linalg.slogdet(spd)[1])

    return f, (spd, b), {}


@program("fft of lengths that are not powers of two: fft 5, rfft 7, irfft to 9, fftn 3x5")
def fft_odd():
    import jax.numpy as jnp

    rng = _rng()
    x = _f32(rng, 2, 3, 5)
    r = _f32(rng, 4, 7)

    def f(x, r):
        spectrum = jnp.fft.rfft(r)
        return (jnp.abs(jnp.fft.fft(x)), jnp.real(jnp.fft.ifft(jnp.fft.fft(x))), jnp.abs(spectrum),
                jnp.fft.irfft(jnp.fft.rfft(r, n=9), n=9), jnp.abs(jnp.fft.fftn(x, axes=(1, 2))))

    return f, (x, r), {}


@program("rng-bit-generator (lax.rng_bit_generator): default, threefry and philox; u8, u32, u64; "
         "odd shapes, a scalar; jax.random with the rbg key")
def rng_bits():
    import jax
    import numpy as np
    from jax import lax

    key = np.array([1, 2, 3, 4], dtype=np.uint32)

    def f(key):
        results = []
        for algorithm in (lax.RandomAlgorithm.RNG_DEFAULT, lax.RandomAlgorithm.RNG_THREE_FRY,
                          lax.RandomAlgorithm.RNG_PHILOX):
            for shape, dtype in (((3, 5), np.uint32), ((4, 2), np.uint64), ((7,), np.uint8), ((), np.uint32)):
                new_key, bits = lax.rng_bit_generator(key, shape, dtype=dtype, algorithm=algorithm)
                results += [new_key, bits]
        rbg = jax.random.wrap_key_data(key, impl="rbg")
        results.append(jax.random.uniform(rbg, (2, 3)))
        return tuple(results)

    return f, (key,), {}


@program("linear algebra: cholesky, solve, inv, det, qr, eigh, svd")
def linalg():
    import jax.numpy as jnp

    rng = _rng()
    a = _f32(rng, 4, 4)
    spd = a @ a.T + 4 * jnp.eye(4)
    b = _f32(rng, 4, 2)
    return (lambda spd, b: (jnp.linalg.cholesky(spd), jnp.linalg.solve(spd, b), jnp.linalg.inv(spd),
                            jnp.linalg.det(spd), jnp.linalg.qr(spd)[1], jnp.linalg.eigh(spd)[0],
                            jnp.linalg.svd(spd, compute_uv=False))), (spd, b), {}


@program("fft: complex FFT/IFFT and real RFFT/IRFFT in 1-3 dimensions")
def fft():
    import jax.numpy as jnp

    rng = _rng()
    x = _f32(rng, 4, 6)
    return (lambda x: (jnp.abs(jnp.fft.fft(x)), jnp.fft.irfft(jnp.fft.rfft(x)), jnp.abs(jnp.fft.fft2(x)),
                       jnp.real(jnp.fft.ifftn(jnp.fft.fftn(x))))), (x,), {}


@program("max pooling's gradient (select-and-scatter before XLA rewrites it)")
def max_pool_grad():
    import jax
    import jax.numpy as jnp
    from jax import lax

    rng = _rng()
    x = _f32(rng, 1, 4, 6, 2)
    pool = lambda x: lax.reduce_window(x, -jnp.inf, lax.max, (1, 2, 2, 1), (1, 2, 2, 1), "VALID")
    return (lambda x: jax.grad(lambda x: (pool(x) ** 2).sum())(x)), (x,), {}


# --- dumping ------------------------------------------------------------------------------

_SHAPE = re.compile(r"^(pred|s8|s16|s32|s64|u8|u16|u32|u64|f16|bf16|f32|f64)\[([0-9,]*)\]")
_BYTES = {"pred": 1, "s8": 1, "u8": 1, "s16": 2, "u16": 2, "f16": 2, "bf16": 2,
          "s32": 4, "u32": 4, "f32": 4, "s64": 8, "u64": 8, "f64": 8}
_COPY = re.compile(r"^\s*(?:ROOT\s+)?%?([\w.\-]+)\s*=\s*(\S+)\s+copy\(")
_COMPUTATION = re.compile(r"^(?:ENTRY\s+)?%?([\w.\-]+)\s.*\{\s*$")


def count_copies(hlo_text):
    """The copy instructions of an HLO module (fusion bodies included): name, computation, bytes."""
    copies, computation = [], None
    for line in hlo_text.splitlines():
        header = _COMPUTATION.match(line)
        if header and not line.startswith(" "):
            computation = header.group(1)
            continue
        match = _COPY.match(line)
        if not match:
            continue
        shape = _SHAPE.match(match.group(2))
        size = 0
        if shape:
            size = _BYTES[shape.group(1)]
            for dim in filter(None, shape.group(2).split(",")):
                size *= int(dim)
        copies.append({"name": match.group(1), "computation": computation, "bytes": size})
    return copies


def dump_one(name, out_dir):
    """Runs in a fresh process whose XLA_FLAGS points at a private dump folder."""
    import jax

    jax.config.update("jax_enable_x64", False)
    jax.config.update("jax_platforms", "cpu")
    # Metadata names the source file without this checkout's directory, so dumps are reproducible.
    jax.config.update("jax_hlo_source_file_canonicalization_regex", ".*/")
    import numpy as np

    _, builder = PROGRAMS[name]
    function, args, jit_options = builder()
    function.__name__ = name
    args = jax.tree_util.tree_map(lambda a: np.asarray(a), args)
    input_leaves = [np.asarray(leaf) for leaf in jax.tree_util.tree_leaves(args)]

    jitted = jax.jit(function, keep_unused=True, **jit_options)
    compiled = jitted.lower(*args).compile()
    memory = compiled.memory_analysis()
    # Fresh device arrays: donated ones are consumed by the call.
    outputs = jitted(*jax.tree_util.tree_map(jax.numpy.asarray, args))
    output_leaves = [np.asarray(leaf) for leaf in jax.tree_util.tree_leaves(outputs)]

    os.makedirs(out_dir, exist_ok=True)
    for i, leaf in enumerate(input_leaves):
        np.save(os.path.join(out_dir, "input_%d.npy" % i), leaf)
    for i, leaf in enumerate(output_leaves):
        np.save(os.path.join(out_dir, "output_%d.npy" % i), leaf)

    dump_dir = os.environ["INSITU_DUMP_DIR"]
    files = sorted(os.listdir(dump_dir))
    module = "jit_" + name

    def pick(suffix):
        matches = [f for f in files if f.split(".")[1:2] == [module] and f.endswith(suffix)
                   and not f.endswith("-" + suffix)]
        if not matches:
            raise SystemExit("%s: no dumped file ending in %s among %s" % (name, suffix, files))
        return os.path.join(dump_dir, matches[-1])

    before = pick(".before_optimizations.txt")
    after = pick("after_optimizations.txt")
    shutil.copyfile(before, os.path.join(out_dir, "before_optimizations.hlo"))
    shutil.copyfile(after, os.path.join(out_dir, "after_optimizations.hlo"))
    with open(after) as f:
        copies = count_copies(f.read())

    figures = {
        "program": name,
        "description": PROGRAMS[name][0],
        "jax_version": jax.__version__,
        "donate_argnums": list(jit_options.get("donate_argnums", ())),
        "inputs": len(input_leaves),
        "outputs": len(output_leaves),
        "memory_analysis": {
            "argument_size_in_bytes": int(memory.argument_size_in_bytes),
            "output_size_in_bytes": int(memory.output_size_in_bytes),
            "alias_size_in_bytes": int(memory.alias_size_in_bytes),
            "temp_size_in_bytes": int(memory.temp_size_in_bytes),
        },
        "after_optimizations_copies": {"count": len(copies), "bytes": sum(c["bytes"] for c in copies),
                                       "instructions": copies},
        "dumped_files": {"before_optimizations": os.path.basename(before),
                         "after_optimizations": os.path.basename(after)},
    }
    with open(os.path.join(out_dir, "xla.json"), "w") as f:
        json.dump(figures, f, indent=2)
        f.write("\n")


def main(argv):
    if argv[1:2] == ["--list"]:
        for name, (description, _) in PROGRAMS.items():
            print("%-28s %s" % (name, description))
        return 0
    if argv[1:2] == ["--one"]:
        dump_one(argv[2], argv[3])
        return 0
    if len(argv) < 2:
        print(__doc__)
        return 2
    out_root = argv[1]
    names = argv[2:] or list(PROGRAMS)
    failed = []
    for name in names:
        if name not in PROGRAMS:
            raise SystemExit("unknown program %r (see --list)" % name)
        out_dir = os.path.join(out_root, name)
        shutil.rmtree(out_dir, ignore_errors=True)
        with tempfile.TemporaryDirectory() as dump_dir:
            env = dict(os.environ)
            env["XLA_FLAGS"] = "--xla_dump_to=%s --xla_dump_hlo_as_text" % dump_dir
            env["INSITU_DUMP_DIR"] = dump_dir
            env["JAX_PLATFORMS"] = "cpu"
            result = subprocess.run([sys.executable, os.path.abspath(__file__), "--one", name, out_dir], env=env)
        print("%-28s %s" % (name, "ok" if result.returncode == 0 else "FAILED"), flush=True)
        if result.returncode != 0:
            failed.append(name)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
