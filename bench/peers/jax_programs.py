"""The JAX programs of insitu's peer corpus (tests/data/jax) and the script that dumps them. The
programs live in corpus_programs.py and corpus_models.py; this file holds their registry, the
helpers they share and the dump.

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


def _mlp_params(rng):
    return {"w1": _f32(rng, 8, 16) * 0.3, "b1": _f32(rng, 16) * 0.1,
            "w2": _f32(rng, 16, 4) * 0.3, "b2": _f32(rng, 4) * 0.1}


def _mlp(params, x):
    import jax
    import jax.numpy as jnp

    hidden = jax.nn.relu(x @ params["w1"] + params["b1"])
    return jnp.tanh(hidden @ params["w2"] + params["b2"])


# --- the programs -------------------------------------------------------------------------
# Each returns (function, args tuple, jit keyword arguments). The function's __name__ becomes
# the module name (jit_NAME), so it is set to the program's name.

PROGRAMS = {}


def program(description):
    def register(builder):
        PROGRAMS[builder.__name__] = (description, builder)
        return builder

    return register


# The programs register themselves: corpus_programs.py (the first sessions' and those insitu
# cannot run yet) and corpus_models.py (jax 0.12's real-model code). They import this module's
# registry, so they come after it.
import corpus_programs  # noqa: E402,F401,I001
import corpus_models  # noqa: E402,F401,I001


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
    import jax_programs  # this file as a module: the registry the program files filled

    sys.exit(jax_programs.main(sys.argv))
