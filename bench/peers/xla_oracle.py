"""XLA:CPU as a second oracle: runs HLO text modules on XLA:CPU (through jaxlib) and on insitu,
and compares the results.

Usage (inside the pinned virtualenv of venv.sh; xla_oracle.sh wraps it):
  python xla_oracle.py run MODULE.hlo [--arg X.npy]... [--save DIR]
        runs one module on XLA:CPU and prints (or saves output_0.npy, ...) its flattened results
  python xla_oracle.py compare [--insitu PATH] [--report OUT.md] FILE_OR_DIR...
        every .hlo under the arguments on both XLA:CPU and `insitu run`, with the same inputs;
        prints one line per module and a summary (parsed by XLA, ran on XLA, ran on insitu, agree)

  python xla_oracle.py parse [--insitu PATH] [--report OUT.md] [--save-rejected DIR] FILE_OR_DIR...
        every HLO module under the arguments (.hlo files, and the modules written as raw string
        literals in C++ test sources, e.g. XLA's own *_test.cc) through XLA's parser and through
        `insitu fmt` (parse and verify); prints each module XLA accepts and insitu rejects with
        insitu's message, and the counts

Inputs: given --arg files (compare: a corpus folder's input_N.npy), else element i of every
array parameter is (i % 7) + 1 (pred: i % 2 == 0); written as .npy and passed to both sides, so
both see the same bits.
Comparison: integers and pred bit-exact; floats |a - b| <= 1e-6 + 1e-5 |b|, infinities and NaN
only where the other has them.

Known limit: jaxlib 0.12 compiles HLO only through its HLO -> StableHLO converter, which drops
instruction layouts and refuses some modules with non-default ones ("layout minor_to_major
field contains ..."): such modules are reported as `xla-refused`, not compared.
"""

import argparse
import os
import re
import subprocess
import sys
import tempfile

import numpy as np


def _xla():
    import jax
    from jax._src.lib import xla_client as xc

    jax.config.update("jax_platforms", "cpu")
    return jax, xc


def default_arguments(xc, computation):
    arguments = []
    for shape in computation.program_shape().parameter_shapes():
        if shape.is_tuple():
            raise ValueError("tuple parameters are not supported by the oracle")
        dims = tuple(shape.dimensions())
        count = int(np.prod(dims)) if dims else 1
        dtype = shape.numpy_dtype()
        index = np.arange(count)
        values = (index % 2 == 0) if dtype == np.bool_ else (index % 7) + 1
        arguments.append(np.asarray(values).astype(dtype).reshape(dims))
    return arguments


def compile_on_xla(text):
    """(jax, executable, computation) for an HLO text module; raises with XLA's message."""
    jax, xc = _xla()
    module = xc.hlo.hlo_module_from_text(text)
    computation = xc.XlaComputation(module.as_serialized_hlo_module_proto())
    mlir = xc._xla.mlir.xla_computation_to_mlir_module(computation)
    client = jax.devices("cpu")[0].client
    return jax, client.compile_and_load(mlir, jax.devices("cpu")[:1], xc.CompileOptions()), computation, xc


def run_on_xla(executable, jax, arguments):
    results = executable.execute([jax.device_put(a) for a in arguments])
    return [np.asarray(r) for r in results]


def same(a, b):
    if a.shape != b.shape or a.dtype != b.dtype:
        return False, "shape/type %s %s vs %s %s" % (a.dtype, a.shape, b.dtype, b.shape)
    if not np.issubdtype(a.dtype, np.floating) and a.dtype.name != "bfloat16":
        ok = np.array_equal(a, b)
        return ok, "" if ok else "bits differ"
    x, y = a.astype(np.float64), b.astype(np.float64)
    both_nan = np.isnan(x) & np.isnan(y)
    infinite = np.isinf(x) | np.isinf(y)
    close = np.where(infinite, x == y, np.abs(x - y) <= 1e-6 + 1e-5 * np.abs(y))
    ok = bool(np.all(both_nan | (close & ~np.isnan(x) & ~np.isnan(y))))
    if ok:
        return True, ""
    good = (both_nan | (close & ~np.isnan(x) & ~np.isnan(y))).flatten()
    bad = int(np.flatnonzero(~good)[0])
    return False, "element %d (of %d differ): insitu %r, xla %r" % (bad, int((~good).sum()), x.flatten()[bad],
                                                                   y.flatten()[bad])


def compare_one(path, insitu):
    """One module: XLA in a subprocess (its CHECK failures abort the process), then insitu."""
    with tempfile.TemporaryDirectory() as work:
        # a corpus folder's committed inputs (input_0.npy, ...) when it has them
        folder, given = os.path.dirname(path), []
        while os.path.exists(os.path.join(folder, "input_%d.npy" % (len(given) // 2))):
            given += ["--arg", os.path.join(folder, "input_%d.npy" % (len(given) // 2))]
        xla = subprocess.run([sys.executable, os.path.abspath(__file__), "run", path, "--save", work + "/xla",
                              "--write-args", work] + given, capture_output=True, text=True, timeout=300)
        if xla.returncode != 0:
            lines = [l for l in xla.stderr.splitlines() if l.strip() and "Warning" not in l and "warn(" not in l]
            message = next((l for l in lines if "Error" in l or "error" in l or "Check failed" in l), lines[-1] if lines else "?")
            kind = "xla-crashed" if xla.returncode < 0 else (
                "xla-refused" if "layout" in message or "bitcast" in message else "xla-rejects")
            return kind, message.strip()[:200]
        arguments = sorted(n for n in os.listdir(work) if n.startswith("arg_"))
        arguments.sort(key=lambda n: int(n[4:-4]))
        expected_names = sorted(os.listdir(work + "/xla"), key=lambda n: int(n[7:-4]))
        command = [insitu, "run", path, "--save", work + "/insitu"]
        for name in arguments:
            command += ["--arg", os.path.join(work, name)]
        result = subprocess.run(command, capture_output=True, text=True, timeout=300)
        if result.returncode != 0:
            return "insitu-failed", (result.stderr.strip().splitlines() or ["?"])[-1][:200]
        for i, name in enumerate(expected_names):
            actual_path = os.path.join(work, "insitu", name)
            if not os.path.exists(actual_path):
                return "disagree", "insitu has no %s" % name
            ok, why = same(np.load(actual_path), np.load(os.path.join(work, "xla", name)))
            if not ok:
                return "disagree", "output %d: %s" % (i, why)
    return "agree", ""


def modules_in(path):
    """(name, text) of each HLO module in a file: a .hlo file is one module; a C++ source holds
    one per raw string literal R"delimiter(...)delimiter" that contains an ENTRY computation."""
    with open(path, errors="replace") as f:
        text = f.read()
    if not path.endswith((".cc", ".h", ".cpp")):
        return [(path, text)]
    found = []
    for number, match in enumerate(re.finditer(r'R"([^(\s]{0,16})\((.*?)\)\1"', text, re.S)):
        body = match.group(2)
        if "ENTRY" in body and ("HloModule" in body or "{" in body):
            line = text.count("\n", 0, match.start()) + 1
            found.append(("%s:%d" % (path, line), body))
    return found


def xla_parse_worker(paths_file, first):
    """Parses the modules listed in paths_file from line `first` on with XLA's parser, printing
    `index<TAB>ok` or `index<TAB>message` per module as it goes (XLA's parser can crash the
    process: the caller restarts after the module that did)."""
    _, xc = _xla()
    with open(paths_file) as f:
        paths = f.read().splitlines()
    for index in range(first, len(paths)):
        with open(paths[index]) as f:
            text = f.read()
        try:
            xc.hlo.hlo_module_from_text(text)
            verdict = "ok"
        except Exception as error:  # jaxlib raises its own error types
            verdict = ((str(error).strip().splitlines() or ["?"])[0][:200] or "?").replace("\t", " ")
        print("%d\t%s" % (index, verdict), flush=True)
    return 0


def xla_parse_all(paths, work):
    """XLA's verdict per module file: None (accepted) or its message; a crash is a message."""
    listing = os.path.join(work, "modules.txt")
    with open(listing, "w") as f:
        f.write("\n".join(paths))
    verdicts, first = {}, 0
    while first < len(paths):
        worker = subprocess.run([sys.executable, os.path.abspath(__file__), "parse-worker", listing, str(first)],
                                capture_output=True, text=True)
        for line in worker.stdout.splitlines():
            index, _, verdict = line.partition("\t")
            verdicts[int(index)] = None if verdict == "ok" else verdict
        first = max(verdicts) + 1 if verdicts else first
        if worker.returncode != 0 and first < len(paths):
            verdicts[first] = "XLA's parser crashed (exit %d)" % worker.returncode
            first += 1
    return [verdicts.get(i, "?") for i in range(len(paths))]


def parse_modules(options):
    files = []
    for path in options.paths:
        if os.path.isdir(path):
            for root, _, names in os.walk(path):
                files += [os.path.join(root, n) for n in sorted(names) if n.endswith((".hlo", ".cc"))]
        else:
            files.append(path)
    counts = {"modules": 0, "xla-accepts": 0, "both-accept": 0, "insitu-rejects": 0, "insitu-only": 0}
    lines = []
    if options.save_rejected:
        os.makedirs(options.save_rejected, exist_ok=True)
    with tempfile.TemporaryDirectory() as work:
        modules = [module for path in sorted(files) for module in modules_in(path)]
        module_paths = []
        for number, (_, text) in enumerate(modules):
            module_paths.append(os.path.join(work, "module_%d.hlo" % number))
            with open(module_paths[-1], "w") as f:
                f.write(text)
        xla_verdicts = xla_parse_all(module_paths, work)
        for (name, text), module, xla in zip(modules, module_paths, xla_verdicts):
            counts["modules"] += 1
            result = subprocess.run([options.insitu, "fmt", module], capture_output=True, text=True, timeout=120)
            message = (result.stderr.strip().splitlines() or ["?"])[0].replace(module, "")[:200]
            if xla is None:
                counts["xla-accepts"] += 1
                if result.returncode == 0:
                    counts["both-accept"] += 1
                    continue
                counts["insitu-rejects"] += 1
                lines.append("insitu-rejects %s %s" % (name, message))
                if options.save_rejected:
                    safe = re.sub(r"[^A-Za-z0-9_.-]", "_", name)[-120:]
                    with open(os.path.join(options.save_rejected, safe + ".hlo"), "w") as f:
                        f.write(text)
            elif result.returncode == 0:
                counts["insitu-only"] += 1
                lines.append("insitu-only    %s %s" % (name, xla))
            else:
                continue
            print(lines[-1], flush=True)
    summary = ("%(modules)d modules: XLA's parser accepts %(xla-accepts)d; insitu accepts %(both-accept)d of those "
               "and rejects %(insitu-rejects)d; insitu accepts %(insitu-only)d that XLA rejects" % counts)
    print(summary)
    if options.report:
        with open(options.report, "w") as f:
            f.write("`python bench/peers/xla_oracle.py parse %s`\n\n%s\n\n```\n%s\n```\n"
                    % (" ".join(options.paths), summary, "\n".join(lines)))
    return 0


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    run = sub.add_parser("run")
    run.add_argument("module")
    run.add_argument("--arg", action="append", default=[])
    run.add_argument("--save")
    run.add_argument("--write-args", help="also write the arguments used as DIR/arg_N.npy")
    compare = sub.add_parser("compare")
    compare.add_argument("paths", nargs="+")
    compare.add_argument("--insitu", default="build/tools/insitu")
    compare.add_argument("--report")
    parse = sub.add_parser("parse")
    parse.add_argument("paths", nargs="+")
    parse.add_argument("--insitu", default="build/tools/insitu")
    parse.add_argument("--report")
    parse.add_argument("--save-rejected", help="write each module insitu rejects to DIR")
    worker = sub.add_parser("parse-worker")
    worker.add_argument("paths_file")
    worker.add_argument("first", type=int)
    options = parser.parse_args(argv[1:])
    if options.command == "parse":
        return parse_modules(options)
    if options.command == "parse-worker":
        return xla_parse_worker(options.paths_file, options.first)

    if options.command == "run":
        with open(options.module) as f:
            jax, executable, computation, xc = compile_on_xla(f.read())
        arguments = [np.load(a) for a in options.arg] or default_arguments(xc, computation)
        if options.write_args:
            for i, argument in enumerate(arguments):
                np.save(os.path.join(options.write_args, "arg_%d.npy" % i), argument)
        results = run_on_xla(executable, jax, arguments)
        for i, result in enumerate(results):
            if options.save:
                os.makedirs(options.save, exist_ok=True)
                np.save(os.path.join(options.save, "output_%d.npy" % i), result)
            else:
                print("output %d: %s %s\n%s" % (i, result.dtype, result.shape, result))
        return 0

    files = []
    for path in options.paths:
        if os.path.isdir(path):
            for root, _, names in os.walk(path):
                files += [os.path.join(root, n) for n in sorted(names) if n.endswith(".hlo")]
        else:
            files.append(path)
    counts, lines = {}, []
    for path in sorted(files):
        kind, why = compare_one(path, options.insitu)
        counts[kind] = counts.get(kind, 0) + 1
        lines.append("%-14s %s %s" % (kind, path, why))
        print(lines[-1], flush=True)
    summary = "%d modules: " % len(files) + ", ".join("%s %d" % item for item in sorted(counts.items()))
    print(summary)
    if options.report:
        with open(options.report, "w") as f:
            f.write("# XLA:CPU as a second oracle\n\n`python bench/peers/xla_oracle.py compare %s`\n\n%s\n\n```\n%s\n```\n"
                    % (" ".join(options.paths), summary, "\n".join(lines)))
    return 1 if counts.get("disagree") else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
