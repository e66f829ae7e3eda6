"""The real-size programs of bench/peers (measure_xla.REAL: GPT-2-small decode steps, training
steps, matmuls, a convolution) under plain jax.jit, on XLA:CPU and on the insitu JAX device (the
PJRT plugin, issue 38), in one process: milliseconds per call (median, rounds alternating
between the two), insitu's bytes copied and written per call (insitu.jax_plugin.report), and the
largest difference from XLA's values (relative to the largest value).

Donated arguments are fed back from the outputs they alias, as a decode loop does, on both.

    PYTHONPATH=build/python $(scripts/python-env)/bin/python bench/python/jax_device_real.py [--rounds N] [--calls N]
"""
import argparse
import statistics
import sys
import time
from pathlib import Path

import numpy as np

import insitu.jax_plugin

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "peers"))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--calls", type=int, default=3, help="calls per round")
    parser.add_argument("programs", nargs="*", help="names from measure_xla.REAL (default: all)")
    options = parser.parse_args()
    insitu.jax_plugin.initialize()

    import jax

    import measure_xla

    devices = {"XLA:CPU": jax.devices("cpu")[0], "insitu": jax.devices("insitu")[0]}
    print("| program | XLA:CPU ms | insitu device ms | ratio | insitu bytes copied | insitu bytes written | "
          "max difference |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for name, builder in measure_xla.REAL.items():
        if options.programs and name not in options.programs:
            continue
        function, args, jit_options = builder()[:3]
        treedef = jax.tree_util.tree_structure(args)
        host = [np.asarray(leaf) for leaf in jax.tree_util.tree_leaves(args)]
        del args
        jitted = jax.jit(function, keep_unused=True, **jit_options)
        runs = {}
        for system, device in devices.items():
            leaves = [jax.device_put(leaf, device) * 1 if leaf.ndim else jax.device_put(leaf, device) for leaf in host]
            compiled = jitted.lower(*jax.tree_util.tree_unflatten(treedef, leaves)).compile()
            runs[system] = {"compiled": compiled, "leaves": leaves, "times": [], "first": None}
        alias = measure_xla._input_output_alias(runs["XLA:CPU"]["compiled"].as_text())

        def call(run):
            start = time.perf_counter()
            out = run["compiled"](*jax.tree_util.tree_unflatten(treedef, run["leaves"]))
            jax.block_until_ready(out)
            seconds = time.perf_counter() - start
            out_leaves = jax.tree_util.tree_leaves(out)
            if run["first"] is None:
                run["first"] = [np.array(leaf) for leaf in out_leaves]
            for out_index, param in alias:
                run["leaves"][param] = out_leaves[out_index]
            return seconds

        for run in runs.values():
            call(run)  # first calls: the values compared, and warm-up
        for _ in range(options.rounds):
            for run in runs.values():
                run["times"] += [call(run) for _ in range(options.calls)]
        want, got = runs["XLA:CPU"]["first"], runs["insitu"]["first"]
        difference = max(float(np.max(np.abs(g.astype(np.float64) - w)) / max(1.0, float(np.max(np.abs(w)))))
                         if w.size else 0.0 for g, w in zip(got, want))
        stats = insitu.jax_plugin.report(runs["insitu"]["compiled"])["stats"]
        xla, ours = (statistics.median(runs[s]["times"]) * 1e3 for s in ("XLA:CPU", "insitu"))
        print(f"| {name} | {xla:.2f} | {ours:.2f} | {ours / xla:.2f}x | {stats['bytes_copied']} | "
              f"{stats['bytes_written']} | {difference:.1e} |", flush=True)


if __name__ == "__main__":
    main()
