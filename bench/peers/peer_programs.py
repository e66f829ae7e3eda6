"""The peer table's large-shape and real-size programs (measure_xla.py measures them on XLA:CPU
and dumps them for insitu_measure; bench/python/stablehlo_real.py reads them too). Each builder
returns (function, args, jit keyword arguments[, bandwidth floor in bytes])."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import jax_programs  # noqa: E402


# --- the large-shape programs (same bodies as jax_programs.py, a 1 GiB donated array) -------

def _large_kv_cache_decode_step():
    import numpy as np

    rng = np.random.RandomState(jax_programs.RNG_SEED)
    layers, heads, length, dim = 8, 8, 16384, 128  # cache: 2*8*8*16384*128 f32 = 1 GiB
    cache = np.zeros((2, layers, heads, length, dim), np.float32)
    new_kv = rng.standard_normal((2, layers, heads, 1, dim)).astype(np.float32)
    query = rng.standard_normal((layers, heads, dim)).astype(np.float32)
    pos = np.int32(5)

    return jax_programs.kv_cache_decode_step_fn(length, dim), (cache, new_kv, query, pos), \
        dict(donate_argnums=(0,))


def _large_kv_cache_decode_loop():
    import numpy as np

    rng = np.random.RandomState(jax_programs.RNG_SEED)
    length, dim = 1 << 20, 256  # cache: 2^20*256 f32 = 1 GiB
    cache = np.zeros((length, dim), np.float32)
    token = rng.standard_normal((1, dim)).astype(np.float32)
    weight = (rng.standard_normal((dim, dim)) * 0.05).astype(np.float32)

    return jax_programs.kv_cache_decode_loop_fn(), (cache, token, weight), dict(donate_argnums=(0,))


def _large_at_index_add():
    import numpy as np

    rng = np.random.RandomState(jax_programs.RNG_SEED)
    x = np.zeros((1 << 20, 256), np.float32)  # 1 GiB
    return jax_programs.at_index_add_fn, (x, np.int32(3), rng.standard_normal(256).astype(np.float32)), \
        dict(donate_argnums=(0,))


LARGE = {
    "kv_cache_decode_step": _large_kv_cache_decode_step,
    "kv_cache_decode_loop": _large_kv_cache_decode_loop,
    "at_index_add": _large_at_index_add,
}


# --- real sizes (issue 9): what people run, each with its bandwidth floor ------------------
#
# A builder returns (function, args, jit_options, floor_bytes[, flops]): floor_bytes is what any
# implementation must read and write per call (every argument read once, every output written
# once, except a donated cache written only where it changes). Arguments of 64 MiB or more are
# zeros (insitu_measure makes them itself); the others are random.

def _leaf_bytes(tree):
    import jax
    import numpy as np

    return sum(np.asarray(leaf).nbytes for leaf in jax.tree_util.tree_leaves(tree))


def _random_or_zeros(rng, shape, scale=0.02):
    import numpy as np

    if int(np.prod(shape)) * 4 >= (64 << 20):
        return np.full(shape, 0.0, np.float32)  # written, so its pages are real (np.zeros' may not be)
    return (rng.standard_normal(shape) * scale).astype(np.float32)


def _real_matmul(n):
    def builder():
        import numpy as np

        rng = np.random.RandomState(jax_programs.RNG_SEED)
        a, b = (rng.standard_normal((n, n)).astype(np.float32) for _ in range(2))
        return (lambda a, b: a @ b), (a, b), {}, 3 * n * n * 4, 2 * n ** 3
    return builder


def _real_conv3x3():
    """A ResNet 3x3 convolution, NHWC: 8x56x56x64 -> 64 features, SAME padding."""
    import numpy as np

    rng = np.random.RandomState(jax_programs.RNG_SEED)
    x = rng.standard_normal((8, 56, 56, 64)).astype(np.float32)
    w = (rng.standard_normal((3, 3, 64, 64)) * 0.05).astype(np.float32)

    def f(x, w):
        from jax import lax
        return lax.conv_general_dilated(x, w, (1, 1), "SAME", dimension_numbers=("NHWC", "HWIO", "NHWC"))

    return f, (x, w), {}, 2 * x.nbytes + w.nbytes, 2 * 8 * 56 * 56 * 64 * 64 * 9


# GPT-2 small's shape (12 layers, d=768, 12 heads), a 1024-position f32 KV cache, a vocabulary
# of 8192: one decode step of one token.
_GPT = dict(layers=12, d=768, heads=12, length=1024, vocab=8192)


def _gpt_layer_shapes(d):
    return dict(ln1_g=(d,), ln1_b=(d,), qkv=(d, 3 * d), qkv_b=(3 * d,), proj=(d, d), proj_b=(d,),
                ln2_g=(d,), ln2_b=(d,), fc=(d, 4 * d), fc_b=(4 * d,), fc2=(4 * d, d), fc2_b=(d,))


def _gpt_block(h, p, layer_cache, pos, heads, length):
    """One pre-LN transformer block for one token; layer_cache [2, heads, length, head_dim]."""
    import jax
    import jax.numpy as jnp
    from jax import lax

    d = h.shape[0]
    head_dim = d // heads

    def layer_norm(x, g, b):
        mean = x.mean()
        return (x - mean) * lax.rsqrt(((x - mean) ** 2).mean() + 1e-5) * g + b

    q, k, v = jnp.split(layer_norm(h, p["ln1_g"], p["ln1_b"]) @ p["qkv"] + p["qkv_b"], 3)
    q, k, v = (t.reshape(heads, head_dim) for t in (q, k, v))
    layer_cache = lax.dynamic_update_slice(layer_cache, jnp.stack([k, v])[:, :, None, :], (0, 0, pos, 0))
    scores = jnp.einsum("hd,htd->ht", q, layer_cache[0]) / jnp.sqrt(jnp.float32(head_dim))
    scores = jnp.where(jnp.arange(length) <= pos, scores, jnp.float32(-1e30))
    attention = jnp.einsum("ht,htd->hd", jax.nn.softmax(scores, axis=-1), layer_cache[1]).reshape(d)
    h = h + attention @ p["proj"] + p["proj_b"]
    x = layer_norm(h, p["ln2_g"], p["ln2_b"])
    return h + jax.nn.gelu(x @ p["fc"] + p["fc_b"]) @ p["fc2"] + p["fc2_b"], layer_cache


def _real_gpt_decode(spelling):
    """spelling "scan": stacked weights and the cache carried through lax.scan (dynamic index and
    update of the layer's cache); "unrolled": per-layer weights, then jnp.stack of the layer caches."""
    def builder():
        import jax.numpy as jnp
        import numpy as np
        from jax import lax

        layers, d, heads, length, vocab = (_GPT[k] for k in ("layers", "d", "heads", "length", "vocab"))
        rng = np.random.RandomState(jax_programs.RNG_SEED)
        shapes = _gpt_layer_shapes(d)
        if spelling == "scan":
            params = {k: _random_or_zeros(rng, (layers,) + s) for k, s in shapes.items()}
        else:
            params = [{k: _random_or_zeros(rng, s) for k, s in shapes.items()} for _ in range(layers)]
        cache = np.full((layers, 2, heads, length, d // heads), 0.0, np.float32)
        final_norm = np.stack([np.ones(d, np.float32), np.zeros(d, np.float32)])
        embedding = _random_or_zeros(rng, (vocab, d))
        x = rng.standard_normal(d).astype(np.float32)
        pos = np.int32(length - 24)

        def final(h, final_norm, embedding):
            mean = h.mean()
            normed = (h - mean) * lax.rsqrt(((h - mean) ** 2).mean() + 1e-5) * final_norm[0] + final_norm[1]
            return embedding @ normed

        if spelling == "scan":
            def f(cache, params, final_norm, embedding, x, pos):
                def layer(carry, inputs):
                    h, cache = carry
                    p, index = inputs
                    layer_cache = lax.dynamic_index_in_dim(cache, index, keepdims=False)
                    h, layer_cache = _gpt_block(h, p, layer_cache, pos, heads, length)
                    return (h, lax.dynamic_update_index_in_dim(cache, layer_cache, index, axis=0)), None

                (h, cache), _ = lax.scan(layer, (x, cache), (params, jnp.arange(layers)))
                return cache, final(h, final_norm, embedding)
        else:
            def f(cache, params, final_norm, embedding, x, pos):
                h, updated = x, []
                for layer in range(layers):
                    h, layer_cache = _gpt_block(h, params[layer], cache[layer], pos, heads, length)
                    updated.append(layer_cache)
                return jnp.stack(updated), final(h, final_norm, embedding)

        args = (cache, params, final_norm, embedding, x, pos)
        new_kv = layers * 2 * d * 4
        return f, args, dict(donate_argnums=(0,)), _leaf_bytes(args) + vocab * 4 + new_kv
    return builder


def _adam(params, grads, m, v, step):
    """One Adam update (lr 1e-3, betas 0.9/0.999, eps 1e-8) of a pytree."""
    import jax
    import jax.numpy as jnp

    t = step + 1
    m = jax.tree_util.tree_map(lambda m, g: 0.9 * m + 0.1 * g, m, grads)
    v = jax.tree_util.tree_map(lambda v, g: 0.999 * v + 0.001 * g * g, v, grads)
    scale_m = 1.0 / (1.0 - 0.9 ** t.astype(jnp.float32))
    scale_v = 1.0 / (1.0 - 0.999 ** t.astype(jnp.float32))
    params = jax.tree_util.tree_map(
        lambda p, m, v: p - 1e-3 * (m * scale_m) / (jnp.sqrt(v * scale_v) + 1e-8), params, m, v)
    return params, m, v, t


def _training_step(loss_fn, params, batch):
    """fn(params, m, v, step, *batch) -> (params, m, v, step, loss), params/m/v donated; the
    floor reads and writes params, m and v once and reads the batch."""
    import jax
    import numpy as np

    zeros = jax.tree_util.tree_map(lambda p: np.zeros_like(p), params)
    zeros_v = jax.tree_util.tree_map(lambda p: np.zeros_like(p), params)

    def f(params, m, v, step, *batch):
        loss, grads = jax.value_and_grad(loss_fn)(params, *batch)
        params, m, v, step = _adam(params, grads, m, v, step)
        return params, m, v, step, loss

    state = _leaf_bytes(params) * 3
    args = (params, zeros, zeros_v, np.int32(0)) + tuple(batch)
    return f, args, dict(donate_argnums=(0, 1, 2)), 2 * state + _leaf_bytes(batch)


def _real_mlp_training():
    """A 784-1024-1024-10 ReLU MLP, softmax cross-entropy, batch 512, Adam."""
    import jax
    import jax.numpy as jnp
    import numpy as np

    rng = np.random.RandomState(jax_programs.RNG_SEED)
    sizes = [784, 1024, 1024, 10]
    params = [(_random_or_zeros(rng, (a, b), 0.05), np.zeros(b, np.float32)) for a, b in zip(sizes, sizes[1:])]
    x = rng.standard_normal((512, 784)).astype(np.float32)
    labels = rng.randint(0, 10, 512).astype(np.int32)

    def loss(params, x, labels):
        h = x
        for w, b in params[:-1]:
            h = jax.nn.relu(h @ w + b)
        logits = h @ params[-1][0] + params[-1][1]
        logp = jax.nn.log_softmax(logits)
        return -jnp.mean(jnp.take_along_axis(logp, labels[:, None], axis=1))

    return _training_step(loss, params, (x, labels))


def transformer_loss(batch, tokens, d, heads):
    """loss(params, x, y): pre-LN causal transformer layers (one dict of _gpt_layer_shapes per
    layer, unrolled), a regression loss on the output. bench/python/compile_time.py uses it too."""
    import jax
    import jax.numpy as jnp
    import numpy as np

    head_dim = d // heads
    mask = np.tril(np.ones((tokens, tokens), bool))

    def layer_norm(x, g, b):
        mean = x.mean(-1, keepdims=True)
        return (x - mean) * jax.lax.rsqrt(((x - mean) ** 2).mean(-1, keepdims=True) + 1e-5) * g + b

    def loss(params, x, y):
        h = x
        for p in params:
            q, k, v = jnp.split(layer_norm(h, p["ln1_g"], p["ln1_b"]) @ p["qkv"] + p["qkv_b"], 3, axis=-1)
            q, k, v = (t.reshape(batch, tokens, heads, head_dim) for t in (q, k, v))
            scores = jnp.einsum("bthd,bshd->bhts", q, k) / jnp.sqrt(jnp.float32(head_dim))
            scores = jnp.where(mask, scores, jnp.float32(-1e30))
            attention = jnp.einsum("bhts,bshd->bthd", jax.nn.softmax(scores, -1), v).reshape(batch, tokens, d)
            h = h + attention @ p["proj"] + p["proj_b"]
            z = layer_norm(h, p["ln2_g"], p["ln2_b"])
            h = h + jax.nn.gelu(z @ p["fc"] + p["fc_b"]) @ p["fc2"] + p["fc2_b"]
        return jnp.mean((h - y) ** 2)

    return loss


def _real_transformer_training():
    """4 pre-LN transformer layers, d=512, 8 heads, causal, batch 4 x 128 tokens, a regression
    loss on the output, Adam."""
    import jax
    import jax.numpy as jnp
    import numpy as np

    rng = np.random.RandomState(jax_programs.RNG_SEED)
    layers, d, heads, batch, tokens = 4, 512, 8, 4, 128
    params = []
    for _ in range(layers):
        params.append({k: (_random_or_zeros(rng, s) if len(s) == 2 else np.ones(s, np.float32) if k.endswith("_g")
                           else np.zeros(s, np.float32)) for k, s in _gpt_layer_shapes(d).items()})
    x = rng.standard_normal((batch, tokens, d)).astype(np.float32)
    y = rng.standard_normal((batch, tokens, d)).astype(np.float32)
    return _training_step(transformer_loss(batch, tokens, d, heads), params, (x, y))


def _real_resnet_training():
    """A ResNet basic block (3x3 conv, batch norm, ReLU, 3x3 conv, batch norm, residual, ReLU),
    NHWC, batch 16, 32x32x64, a regression loss, Adam."""
    import jax
    import jax.numpy as jnp
    import numpy as np
    from jax import lax

    rng = np.random.RandomState(jax_programs.RNG_SEED)
    params = {"w1": _random_or_zeros(rng, (3, 3, 64, 64), 0.05), "w2": _random_or_zeros(rng, (3, 3, 64, 64), 0.05),
              "g1": np.ones(64, np.float32), "b1": np.zeros(64, np.float32),
              "g2": np.ones(64, np.float32), "b2": np.zeros(64, np.float32)}
    x = rng.standard_normal((16, 32, 32, 64)).astype(np.float32)
    y = rng.standard_normal((16, 32, 32, 64)).astype(np.float32)

    def conv(x, w):
        return lax.conv_general_dilated(x, w, (1, 1), "SAME", dimension_numbers=("NHWC", "HWIO", "NHWC"))

    def batch_norm(x, g, b):
        mean = x.mean((0, 1, 2))
        var = ((x - mean) ** 2).mean((0, 1, 2))
        return (x - mean) * lax.rsqrt(var + 1e-5) * g + b

    def loss(p, x, y):
        h = jax.nn.relu(batch_norm(conv(x, p["w1"]), p["g1"], p["b1"]))
        h = jax.nn.relu(batch_norm(conv(h, p["w2"]), p["g2"], p["b2"]) + x)
        return jnp.mean((h - y) ** 2)

    return _training_step(loss, params, (x, y))


REAL = {
    "matmul_1024": _real_matmul(1024),
    "matmul_2048": _real_matmul(2048),
    "conv3x3_resnet": _real_conv3x3,
    "gpt_decode_scan": _real_gpt_decode("scan"),
    "gpt_decode_unrolled": _real_gpt_decode("unrolled"),
    "mlp_training_step": _real_mlp_training,
    "transformer_training_step": _real_transformer_training,
    "resnet_block_training_step": _real_resnet_training,
}
SETS = {"large": LARGE, "real": REAL}
