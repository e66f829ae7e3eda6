"""Where a torch_models.py benchmark's insitu graphs spend their time, op by op, on real inputs.

Runs the benchmark's step twice with backend="insitu", writing each graph insitu compiled (the
HLO text AOTAutograd's graph lowered to) and the arguments of its first call into DIR/gN/
(before_optimizations.hlo, input_i.npy: what build/bench/insitu_measure reads), then runs
`insitu_measure --profile` on each graph ROUNDS times and prints, per graph, the minimum over the
rounds of each instruction's time (the machine's noise only ever adds), summed over instructions
of one opcode, result shape and operand shapes, largest first; dots apart unless --dots.

    PYTHONPATH=build/python $(scripts/python-env)/bin/python bench/python/torch_graph_profile.py
        [--model transformer-adamw|mlp-adam|decode-per-layer] [--dir /tmp/graphs] [--rounds 3]
        [--threads 2] [--dots] [--top 25]

The graphs' names follow the optimized module (`insitu opt`), written beside each as opt.hlo.
"""
import argparse
import collections
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import torch

import insitu
import insitu.torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
import torch_models  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]


def dump(model, directory):
    """Runs the model's insitu step twice, writing each compiled graph and its first arguments."""
    count = [0]
    original = insitu.compile

    def compile_and_dump(text, **kwargs):
        executable = original(text, **kwargs)
        core = executable._core
        where = directory / f"g{count[0]}"
        count[0] += 1
        where.mkdir(parents=True, exist_ok=True)
        (where / "before_optimizations.hlo").write_text(text)
        saved = [False]

        def first_call_saved(args, **options):
            if not saved[0]:
                saved[0] = True
                fresh = []
                for i, arg in enumerate(args):  # DLPack capsules are used once: pass new ones on
                    tensor = arg if isinstance(arg, torch.Tensor) else torch.from_dlpack(arg)
                    np.save(where / f"input_{i}.npy", tensor.detach().cpu().numpy())
                    fresh.append(arg if isinstance(arg, torch.Tensor) else torch._C._to_dlpack(tensor))
                args = tuple(fresh)
            return core(args, **options)

        executable._core = first_call_saved
        return executable

    insitu.compile = compile_and_dump
    try:
        if model == "decode-per-layer":
            weights = torch_models.gpt2_weights(torch.Generator().manual_seed(0))
            step, reset = torch_models.decode_per_layer(weights)
            reset()
            compiled = torch_models.compiled(step, "insitu")
            for _ in range(2):
                compiled(torch.tensor([464]), torch.tensor([7]))
        else:
            factory = {"transformer-adamw": torch_models.transformer_adamw, "mlp-adam": torch_models.mlp_adam}[model]
            step = torch_models.compiled(factory()(), "insitu")
            for _ in range(2):
                step()
    finally:
        insitu.compile = original
    return [directory / f"g{i}" for i in range(count[0])]


def shapes_of(optimized):
    """Instruction name -> (opcode, result shape, operand shapes) in the optimized module."""
    found = {}
    for match in re.finditer(r"%([\w.\-]+) = (\([^=]*?\)|\S+) ([\w-]+)\((.*?)\)(?:, |$)", optimized, re.M):
        operands = re.sub(r"%[\w.\-]+", "", match.group(4))
        found[match.group(1)] = (match.group(3), match.group(2), operands[:120])
    return found


def profile(graph, rounds, threads):
    """Instruction name -> its least time (ms) over `rounds` profiled calls."""
    measure = ROOT / "build" / "bench" / "insitu_measure"
    least = {}
    for _ in range(rounds):
        run = subprocess.run([str(measure), "--threads", str(threads), "--calls", "3", "--compile-reps", "1",
                              "--profile", "100000", f"{graph}/"], capture_output=True, text=True, check=True)
        for line in (run.stdout + run.stderr).splitlines():
            fields = line.split()
            if len(fields) >= 6 and fields[1] == "ms" and fields[3] == "x":
                least[fields[5]] = min(least.get(fields[5], float("inf")), float(fields[0]))
    return least


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--model", default="transformer-adamw",
                        choices=["transformer-adamw", "mlp-adam", "decode-per-layer"])
    parser.add_argument("--dir", default="/tmp/graphs")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--dots", action="store_true", help="list dots too")
    parser.add_argument("--top", type=int, default=25)
    options = parser.parse_args()
    torch.set_num_threads(options.threads)
    graphs = dump(options.model, Path(options.dir) / options.model)
    cli = ROOT / "build" / "tools" / "insitu"
    for graph in graphs:
        optimized = subprocess.run([str(cli), "opt", str(graph / "before_optimizations.hlo")], capture_output=True,
                                   text=True, check=True).stdout
        (graph / "opt.hlo").write_text(optimized)
        shapes = shapes_of(optimized)
        least = profile(graph, options.rounds, options.threads)
        groups = collections.defaultdict(lambda: [0.0, 0, ""])
        for name, ms in least.items():
            opcode, result, operands = shapes.get(name, ("?", "?", ""))
            group = groups[(opcode, result, operands)]
            group[0] += ms
            group[1] += 1
            group[2] = group[2] or name
        total = sum(g[0] for g in groups.values())
        dots = sum(g[0] for key, g in groups.items() if key[0] == "dot")
        print(f"{graph}: {total:.2f} ms in instructions (least per instruction over {options.rounds} calls), "
              f"dots {dots:.2f}, the rest {total - dots:.2f}")
        listed = [(key, g) for key, g in groups.items() if options.dots or key[0] != "dot"]
        for (opcode, result, operands), (ms, count, example) in sorted(listed, key=lambda kv: -kv[1][0])[:options.top]:
            print(f"  {ms:8.3f} ms {count:4d}x {opcode:12s} {result[:40]:40s} {operands[:70]:70s} e.g. {example}")


if __name__ == "__main__":
    main()
