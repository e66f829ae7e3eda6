"""Partitioned JAX programs for insitu's collectives (tests/data/jax_collectives) and the script
that dumps them.

Each program runs under jax 0.12 on N forced host devices (--xla_force_host_platform_device_count),
partitioned by XLA itself: shard_map with psum, all_gather, ppermute, psum_scatter, all_to_all,
or jax.jit with in/out shardings over the mesh (the SPMD partitioner inserts the collectives). For every program and N in (2, 4) it writes OUT/NAME.N/:
  module.hlo                    the optimized per-device module XLA:CPU runs (compile().as_text())
  device_D/input_I.npy          device D's entry arguments (its shards), in parameter order
  device_D/output_I.npy         device D's results from JAX, the flattened result leaves
  jax.json                      devices, donation, the collectives in the module

Usage (inside the pinned virtualenv, scripts/python-env):
  python jax_collectives.py OUT            every program, each N in a subprocess of its own
  python jax_collectives.py --one NAME N OUT
  python jax_collectives.py --bench OUT    the benchmark's sizes (BENCH_SIZES) on 1, 2 and 4 devices,
                                           as OUT/NAME_bench.N (for bench/mpi_dp_step_bench.cc)
"""

import json
import os
import subprocess
import sys

PROGRAMS = {}


def program(description, automatic=False):
    """automatic: jax.jit with in/out shardings (XLA's SPMD partitioner decides the collectives)
    instead of shard_map (the program says them)."""
    def register(fn):
        PROGRAMS[fn.__name__] = (description, fn, automatic)
        return fn
    return register


@program("every collective once: psum, all_gather, ppermute (ring), psum_scatter, all_to_all, axis_index")
def collectives_mix(n):
    import jax
    import jax.numpy as jnp
    from jax.sharding import PartitionSpec as P

    def f(a, b):
        return (jax.lax.psum(a, "x"), jax.lax.all_gather(b, "x", tiled=True),
                jax.lax.ppermute(a, "x", [(i, (i + 1) % n) for i in range(n)]),
                jax.lax.psum_scatter(b, "x", scatter_dimension=0, tiled=True),
                jax.lax.all_to_all(b, "x", 0, 0, tiled=True), jax.lax.axis_index("x")[None])

    a = jnp.arange(2.0 * n).reshape(2 * n, 1)
    b = jnp.arange(8.0 * n * n).reshape(4 * n, 2 * n) / 7.0
    return f, (a, b), (P("x"), P("x")), (P("x"),) * 6, ()


@program("data-parallel MLP training step: per-device gradients, psum-mean, SGD on donated replicated params")
def dp_mlp_step(n, batch=None, d_in=8, hidden=16, d_out=4):
    import jax
    import jax.numpy as jnp
    from jax.sharding import PartitionSpec as P

    def step(params, x, y):
        def loss(params):
            h = jnp.tanh(x @ params["w1"] + params["b1"])
            return jnp.mean((h @ params["w2"] - y) ** 2)

        value, grads = jax.value_and_grad(loss)(params)
        grads = jax.lax.pmean(grads, "x")
        return jax.tree_util.tree_map(lambda p, g: p - 0.1 * g, params, grads), jax.lax.pmean(value, "x")

    key = jax.random.PRNGKey(0)
    k1, k2, k3, k4 = jax.random.split(key, 4)
    batch = batch or 4 * n  # the global batch, split over the devices
    params = {"w1": jax.random.normal(k1, (d_in, hidden)) * 0.3, "b1": jnp.zeros(hidden),
              "w2": jax.random.normal(k2, (hidden, d_out)) * 0.3}
    x = jax.random.normal(k3, (batch, d_in))
    y = jax.random.normal(k4, (batch, d_out))
    return step, (params, x, y), (P(), P("x"), P("x")), (P(), P()), (0,)


@program("tensor-parallel transformer MLP block (Megatron): column-parallel fc1, row-parallel fc2, psum")
def tp_block(n):
    import jax
    import jax.numpy as jnp
    from jax.sharding import PartitionSpec as P

    def block(x, w1, w2, scale):
        mean = x.mean(-1, keepdims=True)
        h = (x - mean) / jnp.sqrt(((x - mean) ** 2).mean(-1, keepdims=True) + 1e-5) * scale
        h = jax.nn.gelu(h @ w1)        # w1 split by columns: each device its slice of hidden units
        return x + jax.lax.psum(h @ w2, "x")  # w2 split by rows: partial sums, summed

    key = jax.random.PRNGKey(1)
    k1, k2, k3 = jax.random.split(key, 3)
    d, hidden = 16, 8 * n
    x = jax.random.normal(k1, (6, d))
    w1 = jax.random.normal(k2, (d, hidden)) * 0.2
    w2 = jax.random.normal(k3, (hidden, d)) * 0.2
    return block, (x, w1, w2, jnp.ones(d)), (P(), P(None, "x"), P("x", None), P()), P(), ()


@program("ring: n steps of collective-permute passing a running sum around (a fori_loop)")
def ring_permute(n):
    import jax
    import jax.numpy as jnp
    from jax.sharding import PartitionSpec as P

    def ring(v):
        def body(i, carry):
            acc, token = carry
            token = jax.lax.ppermute(token, "x", [(j, (j + 1) % n) for j in range(n)])
            return acc + token * (i + 1), token

        return jax.lax.fori_loop(0, n, body, (v, v))[0]

    return ring, (jnp.arange(3.0 * n).reshape(n, 3),), (P("x"),), P("x"), ()


@program("jit over a mesh, no shard_map: an MLP's loss and gradients with the batch sharded; XLA inserts the "
         "all-reduces", automatic=True)
def jit_sharded_mlp_grad(n):
    import jax
    import jax.numpy as jnp
    from jax.sharding import PartitionSpec as P

    def grad_step(params, x, y):
        def loss(params):
            return jnp.mean((jnp.tanh(x @ params["w1"]) @ params["w2"] - y) ** 2)

        value, grads = jax.value_and_grad(loss)(params)
        return value, grads

    key = jax.random.PRNGKey(2)
    k1, k2, k3, k4 = jax.random.split(key, 4)
    params = {"w1": jax.random.normal(k1, (8, 16)) * 0.3, "w2": jax.random.normal(k2, (16, 4)) * 0.3}
    x = jax.random.normal(k3, (4 * n, 8))
    y = jax.random.normal(k4, (4 * n, 4))
    return grad_step, (params, x, y), (P(), P("x"), P("x")), (P(), P()), ()


# The data-parallel step at a benchmark's size (bench/mpi_dp_step_bench.cc): one global batch of
# 512 split over N devices, a 512 -> 1024 -> 512 MLP (1.05M parameters, 4.2 MB of gradients
# all-reduced per step).
BENCH_SIZES = {"dp_mlp_step": dict(batch=512, d_in=512, hidden=1024, d_out=512)}


def dump_one(name, n, out_root, bench=False):
    os.environ["XLA_FLAGS"] = f"--xla_force_host_platform_device_count={n}"
    import jax
    import numpy as np
    from jax.sharding import Mesh, NamedSharding

    jax.config.update("jax_platforms", "cpu")
    jax.config.update("jax_hlo_source_file_canonicalization_regex", ".*/")
    devices = jax.devices()[:n]
    mesh = Mesh(np.array(devices), ("x",))
    _, build, automatic = PROGRAMS[name]
    fn, args, in_specs, out_specs, donate = build(n, **(BENCH_SIZES[name] if bench else {}))
    fn.__name__ = name
    as_sharding = lambda specs: jax.tree_util.tree_map(  # noqa: E731
        lambda s: NamedSharding(mesh, s), specs, is_leaf=lambda s: isinstance(s, jax.sharding.PartitionSpec))
    shardings = as_sharding(in_specs)
    placed = tuple(jax.device_put(a, s) for a, s in zip(args, shardings))
    if automatic:
        jitted = jax.jit(fn, in_shardings=shardings, out_shardings=as_sharding(out_specs), donate_argnums=donate,
                         keep_unused=True)
    else:
        mapped = jax.shard_map(fn, mesh=mesh, in_specs=in_specs, out_specs=out_specs)
        jitted = jax.jit(mapped, donate_argnums=donate, keep_unused=True)
    compiled = jitted.lower(*placed).compile()
    text = compiled.as_text()

    def per_device(tree):
        rows = [[] for _ in range(n)]
        for leaf in jax.tree_util.tree_leaves(tree):
            for shard in leaf.addressable_shards:
                rows[devices.index(shard.device)].append(np.asarray(shard.data))
        return rows

    inputs = per_device(placed)
    outputs = per_device(jitted(*placed))
    out_dir = os.path.join(out_root, f"{name}{'_bench' if bench else ''}.{n}")
    os.makedirs(out_dir, exist_ok=True)
    with open(os.path.join(out_dir, "module.hlo"), "w") as f:
        f.write(text)
    for d in range(n):
        sub = os.path.join(out_dir, f"device_{d}")
        os.makedirs(sub, exist_ok=True)
        for i, value in enumerate(inputs[d]):
            np.save(os.path.join(sub, f"input_{i}.npy"), value)
        for i, value in enumerate(outputs[d]):
            np.save(os.path.join(sub, f"output_{i}.npy"), value)
    collectives = sorted({op for op in ("all-reduce", "all-gather", "reduce-scatter", "all-to-all", "collective-permute",
                                        "partition-id", "replica-id") if f" {op}(" in text})
    with open(os.path.join(out_dir, "jax.json"), "w") as f:
        json.dump({"program": name, "description": PROGRAMS[name][0], "jax_version": jax.__version__, "devices": n,
                   "donate_argnums": list(donate), "collectives": collectives}, f, indent=2)
        f.write("\n")


def main(argv):
    if argv[:1] in (["--one"], ["--one-bench"]):
        dump_one(argv[1], int(argv[2]), argv[3], bench=argv[0] == "--one-bench")
        return
    if argv[:1] == ["--bench"]:  # the benchmark's programs, on 1, 2 and 4 devices (not in the suite)
        for name in BENCH_SIZES:
            for n in (1, 2, 4):
                subprocess.run([sys.executable, __file__, "--one-bench", name, str(n), argv[1]], check=True)
                print(f"{name}_bench.{n}")
        return
    out = argv[0]
    for name in PROGRAMS:
        for n in (2, 4):
            subprocess.run([sys.executable, __file__, "--one", name, str(n), out], check=True)
            print(f"{name}.{n}")


if __name__ == "__main__":
    main(sys.argv[1:])
