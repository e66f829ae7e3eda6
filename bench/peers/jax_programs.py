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
