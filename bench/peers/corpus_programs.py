"""The JAX corpus's programs of the first sessions and those insitu cannot run yet (registered
in jax_programs.PROGRAMS on import; jax_programs.py says what the corpus is and how it is dumped)."""
from jax_programs import (_f32, _mlp, _mlp_params, _rng, at_index_add_fn, kv_cache_decode_loop_fn,
                          kv_cache_decode_step_fn, program)


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
