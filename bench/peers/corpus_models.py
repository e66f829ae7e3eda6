"""The JAX corpus's programs added for jax 0.12 (issue 13): real-model shapes of code at small
sizes (registered in jax_programs.PROGRAMS on import; jax_programs.py says what the corpus is)."""
from jax_programs import _f32, _mlp, _mlp_params, _rng, program

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
