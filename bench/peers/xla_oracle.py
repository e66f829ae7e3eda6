"""XLA:CPU as a second oracle: runs HLO text modules on XLA:CPU (through jaxlib) and on insitu,
and compares the results.

Usage (inside the pinned virtualenv of venv.sh; xla_oracle.sh wraps it):
  python xla_oracle.py run MODULE.hlo [--arg X.npy]... [--save DIR]
        runs one module on XLA:CPU and prints (or saves output_0.npy, ...) its flattened results
  python xla_oracle.py compare [--insitu PATH] [--report OUT.md] [--keep DIR] FILE_OR_DIR...
        every HLO module under the arguments (.hlo files and raw string literals of C++ sources,
        as parse finds them) on XLA:CPU and on `insitu run`, with the same inputs. XLA runs in one
        restartable worker process (compare-worker): a module that crashes it is `xla-crashed`,
        one with no result in --xla-timeout s `xla-timeout`. Modules with tuple/token parameters,
        host transfers or more than --max-mb of parameters and results are `xla-unsupported`.
        Modules with replica_count x num_partitions > 1 run on that many XLA CPU devices. XLA
        runs with --xla_allow_excess_precision=false (it rounds bf16/f16 intermediates as HLO
        says) unless --xla-excess-precision is given. Prints each module that is not `agree`
        and a summary; --keep DIR keeps the modules, results.tsv (kind, name, folder, message,
        seconds on XLA, seconds on insitu) and both sides' results of every module that is not
        `agree`

  python xla_oracle.py parse [--insitu PATH] [--report OUT.md] [--save-rejected DIR] [--xla-compile]
        FILE_OR_DIR...
        every HLO module under the arguments (.hlo files, and the modules written as raw string
        literals in C++ test sources, e.g. XLA's own *_test.cc) through XLA's parser and through
        `insitu fmt` (parse and verify); prints each module XLA accepts and insitu rejects with
        the stage that refused it (parser, or verifier: `insitu fmt --no-verify` parses it) and
        insitu's message, and the counts. With --xla-compile, each module insitu rejects is also
        compiled by XLA:CPU (its verifier and pipeline, in a fresh process per module) and the
        line ends with XLA's verdict: `| xla: compiles`, `| xla: refuses: MESSAGE` or
        `| xla: crashes`, with the counts of each

Inputs: given --arg files (compare: a corpus folder's input_N.npy), else element i of every
array parameter is (i % 7) + 1 (pred: i % 2 == 0); written as .npy and passed to both sides, so
both see the same bits.
Comparison: integers and pred bit-exact; floats |a - b| <= 1e-6 + max(1e-5, eps) |b| (eps of the
type: one epsilon for f16, bf16, f8), infinities and NaN only where the other has them; complex
numbers per part.

Known limit: jaxlib 0.12 compiles HLO only through its HLO -> StableHLO converter, which drops
instruction layouts and refuses some modules with non-default ones ("layout minor_to_major
field contains ..."): such modules are reported as `xla-refused`, not compared.
"""

import argparse
import json
import os
import re
import select
import shutil
import subprocess
import sys
import tempfile
import time

import numpy as np


MAX_DEVICES = 16


def _xla():
    import jax
    from jax._src.lib import xla_client as xc

    jax.config.update("jax_platforms", "cpu")
    jax.config.update("jax_num_cpu_devices", MAX_DEVICES)  # for modules with replica_count x num_partitions > 1
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
    """(jax, executable, computation, xc) for an HLO text module; raises with XLA's message."""
    jax, xc = _xla()
    module = xc.hlo.hlo_module_from_text(text)
    computation = xc.XlaComputation(module.as_serialized_hlo_module_proto())
    return jax, compile_computation(jax, xc, computation), computation, xc


def compile_computation(jax, xc, computation, replicas=1, partitions=1):
    """XLA:CPU's executable for replicas x partitions CPU devices; device d is replica d / partitions,
    partition d % partitions, as insitu numbers them."""
    mlir = xc._xla.mlir.xla_computation_to_mlir_module(computation)
    devices = jax.devices("cpu")[:replicas * partitions]
    options = xc.CompileOptions()
    if len(devices) > 1:
        options.num_replicas, options.num_partitions = replicas, partitions
        options.device_assignment = xc.DeviceAssignment.create(np.arange(len(devices)).reshape(replicas, partitions))
    return devices[0].client.compile_and_load(mlir, devices, options)


def run_on_xla(executable, jax, arguments):
    results = executable.execute([jax.device_put(a) for a in arguments])
    return [np.asarray(r) for r in results]


def run_on_xla_devices(executable, jax, arguments, devices):
    """Every device's results ([device][leaf]) of a many-device executable; every device gets the
    same arguments (as `insitu run` gives them)."""
    from jax._src import array, core

    replicated = jax.sharding.NamedSharding(jax.sharding.Mesh(np.array(devices), ("d",)), jax.sharding.PartitionSpec())
    inputs = [array.ArrayImpl(core.ShapedArray(a.shape, a.dtype), replicated, [jax.device_put(a, d) for d in devices],
                              committed=True, _skip_checks=True) for a in arguments]
    outputs = executable.execute_sharded(inputs).disassemble_into_single_device_arrays()
    return [[np.asarray(leaf[d]) for leaf in outputs] for d in range(len(devices))]


def _float_info(dtype):
    """finfo of a floating type, numpy's or ml_dtypes' (bfloat16, the float8s), else None."""
    if np.issubdtype(dtype, np.floating):
        return np.finfo(dtype)
    if dtype.kind == "V":
        try:
            import ml_dtypes
            return ml_dtypes.finfo(dtype)
        except Exception:
            return None
    return None


def same(a, b):
    """(equal, why) for insitu's result a and XLA's b."""
    if a.shape != b.shape or a.dtype != b.dtype:
        return False, "shape/type %s %s vs %s %s" % (a.dtype, a.shape, b.dtype, b.shape)
    if np.issubdtype(a.dtype, np.complexfloating):
        for part, name in ((np.real, "real"), (np.imag, "imag")):
            ok, why = same(part(a), part(b))
            if not ok:
                return False, "%s part: %s" % (name, why)
        return True, ""
    info = _float_info(a.dtype)
    if info is None:
        if a.dtype.kind == "V":  # ml_dtypes' narrow integers
            a, b = a.astype(np.int64), b.astype(np.int64)
        differ = (a != b).flatten()
        if not differ.any():
            return True, ""
        bad = int(np.flatnonzero(differ)[0])
        return False, "element %d (of %d differ): insitu %r, xla %r" % (bad, int(differ.sum()), a.flatten()[bad].item(),
                                                                       b.flatten()[bad].item())
    # floats: the f32 tolerance, or one epsilon of the type when that is coarser (f16, bf16, f8)
    rtol = max(1e-5, float(info.eps))
    x, y = a.astype(np.float64), b.astype(np.float64)
    both_nan = np.isnan(x) & np.isnan(y)
    infinite = np.isinf(x) | np.isinf(y)
    with np.errstate(invalid="ignore"):
        close = np.where(infinite, x == y, np.abs(x - y) <= 1e-6 + rtol * np.abs(y))
    good = (both_nan | (close & ~np.isnan(x) & ~np.isnan(y))).flatten()
    if good.all():
        return True, ""
    bad = int(np.flatnonzero(~good)[0])
    return False, "element %d (of %d differ): insitu %r, xla %r" % (bad, int((~good).sum()), float(x.flatten()[bad]),
                                                                   float(y.flatten()[bad]))


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


def _first_message(error):
    """XLA's first line, with the next when it ends in ':' (a parse error's place and reason)."""
    lines = [l.strip() for l in str(error).strip().splitlines() if l.strip()] or ["?"]
    message = lines[0] + (" " + lines[1] if lines[0].endswith(":") and len(lines) > 1 else "")
    return message[:300].replace("\t", " ")


def _leaves(shape):
    return [leaf for part in shape.tuple_shapes() for leaf in _leaves(part)] if shape.is_tuple() else [shape]


def _xla_run_job(jax, xc, job, max_bytes):
    """Runs one module of a compare listing on XLA:CPU, writing its arguments (arg_N.npy), results
    (output_N.npy) and result types (types.json) to job["out"]; returns `ok` or `kind<TAB>message`."""
    with open(job["module"]) as f:
        text = f.read()
    module = xc.hlo.hlo_module_from_text(text)
    blocking = re.search(r"\b(infeed|outfeed|send|recv)\(", text)
    if blocking:
        return "xla-unsupported\t%s (it would wait for the host forever)" % blocking.group(1)
    computation = xc.XlaComputation(module.as_serialized_hlo_module_proto())
    program = computation.program_shape()
    size = 0
    for number, shape in enumerate(program.parameter_shapes()):
        if shape.is_tuple() or shape.is_token():
            return "xla-unsupported\tparameter %d is a %s (the oracle passes arrays only)" % (
                number, "tuple" if shape.is_tuple() else "token")
    for shape in program.parameter_shapes() + _leaves(program.result_shape()):
        if shape.is_token():
            return "xla-unsupported\ta token result (the oracle compares arrays only)"
        if not shape.is_static():
            return "xla-unsupported\tdynamic shape %s" % shape
        size += int(np.prod(shape.dimensions())) * np.dtype(shape.numpy_dtype()).itemsize
    if size > max_bytes:
        return "xla-unsupported\tparameters and results of %d MB (limit %d MB)" % (size >> 20, max_bytes >> 20)
    header = re.search(r"HloModule[^\n]*", text)
    grid = [int(m.group(1)) if m else 1 for m in (re.search(r"\b%s=(\d+)" % field, header.group(0) if header else "")
                                                 for field in ("replica_count", "num_partitions"))]
    if grid[0] * grid[1] > MAX_DEVICES:
        return "xla-unsupported\t%d replicas x %d partitions (the oracle has %d CPU devices)" % (
            grid[0], grid[1], MAX_DEVICES)
    try:
        executable = compile_computation(jax, xc, computation, *grid)
    except Exception as error:
        message = _first_message(error)
        return "%s\t%s" % ("xla-refused" if "layout" in message or "bitcast" in message else "xla-rejects", message)
    arguments = [np.load(a) for a in job["args"]] or default_arguments(xc, computation)
    arguments = [a.view(np.dtype(shape.numpy_dtype())) if a.dtype.kind == "V" else a  # bf16 and narrower from .npy
                 for a, shape in zip(arguments, program.parameter_shapes())]
    try:
        if grid[0] * grid[1] == 1:
            results = {"": run_on_xla(executable, jax, arguments)}
        else:
            devices = jax.devices("cpu")[:grid[0] * grid[1]]
            results = {"device_%d" % d: leaves
                       for d, leaves in enumerate(run_on_xla_devices(executable, jax, arguments, devices))}
    except Exception as error:
        return "xla-failed\t" + _first_message(error)
    for i, argument in enumerate(arguments):
        np.save(os.path.join(job["out"], "arg_%d.npy" % i), argument)
    for folder, leaves in results.items():
        os.makedirs(os.path.join(job["out"], "xla", folder), exist_ok=True)
        for i, result in enumerate(leaves):
            np.save(os.path.join(job["out"], "xla", folder, "output_%d.npy" % i), result)
    with open(os.path.join(job["out"], "types.json"), "w") as f:
        json.dump({"devices": sorted(results), "types": [result.dtype.name for result in next(iter(results.values()))]}, f)
    return "ok"


def xla_compare_worker(listing, first, count, max_bytes):
    """Runs the modules of a compare listing (JSON lines: module, out, args) from line `first`
    on, at most `count` of them, printing `index<TAB>ok` or `index<TAB>kind<TAB>message` per
    module as it goes (XLA can crash the process: the caller restarts after the module that did)."""
    jax, xc = _xla()
    with open(listing) as f:
        jobs = [json.loads(line) for line in f]
    for index in range(first, min(len(jobs), first + count)):
        try:
            verdict = _xla_run_job(jax, xc, jobs[index], max_bytes)
        except Exception as error:  # jaxlib raises its own error types
            message = _first_message(error)
            verdict = "%s\t%s" % ("xla-refused" if "layout" in message or "bitcast" in message else "xla-rejects",
                                   message)
        print("%d\t%s" % (index, verdict), flush=True)
    return 0


def _crash_message(stderr_path):
    with open(stderr_path, errors="replace") as f:
        lines = [l.strip() for l in f.read().splitlines()
                 if l.strip() and "Warning" not in l and "warn(" not in l]
    message = next((l for l in lines if "Check failed" in l), None) or next(
        (l for l in lines if "error" in l.lower() or "fatal" in l.lower()), lines[-1] if lines else "?")
    return message[:200]


def xla_compare_all(listing, total, work, options):
    """Yields (index, kind, message) per module of the listing, in order; kind `ok` when XLA ran it.
    A worker that crashes or takes more than options.xla_timeout seconds for one module is ended,
    that module marked xla-crashed or xla-timeout, and a new worker goes on after it."""
    first, environment = 0, dict(os.environ)
    if not options.xla_excess_precision:
        environment["XLA_FLAGS"] = (environment.get("XLA_FLAGS", "") + " --xla_allow_excess_precision=false").strip()
    while first < total:
        stderr_path = os.path.join(work, "worker_stderr.txt")
        with open(stderr_path, "w") as stderr:
            worker = subprocess.Popen([sys.executable, os.path.abspath(__file__), "compare-worker", listing, str(first),
                                       "--count", str(options.worker_batch), "--max-mb", str(options.max_mb)],
                                      stdout=subprocess.PIPE, stderr=stderr, env=environment)
        fd, pending, timed_out, started = worker.stdout.fileno(), b"", False, first
        while True:
            while b"\n" not in pending:
                ready, _, _ = select.select([fd], [], [], options.xla_timeout)
                if not ready:
                    timed_out = True
                    break
                chunk = os.read(fd, 65536)
                if not chunk:
                    break
                pending += chunk
            if b"\n" not in pending:
                break
            line, pending = pending.split(b"\n", 1)
            index, _, verdict = line.decode(errors="replace").partition("\t")
            kind, _, message = verdict.partition("\t")
            first = int(index) + 1
            yield int(index), kind, message
        if timed_out:
            worker.kill()
        returncode = worker.wait()
        worker.stdout.close()
        if first < total and (timed_out or returncode != 0 or first == started):
            if timed_out:
                yield first, "xla-timeout", "no result in %d s" % options.xla_timeout
            else:
                yield first, "xla-crashed", "exit %d: %s" % (returncode, _crash_message(stderr_path))
            first += 1


def insitu_compare(job, options):
    """insitu's run of a module XLA ran, with the arguments XLA got, against XLA's results."""
    folder = job["out"]
    arguments = sorted((n for n in os.listdir(folder) if n.startswith("arg_")), key=lambda n: int(n[4:-4]))
    command = [options.insitu, "run", job["module"], "--threads", str(options.threads), "--max-memory",
               options.insitu_max_memory, "--save", os.path.join(folder, "insitu")]
    for name in arguments:
        command += ["--arg", os.path.join(folder, name)]
    try:
        result = subprocess.run(command, capture_output=True, text=True, timeout=options.insitu_timeout)
    except subprocess.TimeoutExpired:
        return "insitu-timeout", "no result in %d s" % options.insitu_timeout
    if result.returncode != 0:
        lines = result.stderr.strip().splitlines() or ["exit %d" % result.returncode]
        return "insitu-failed", lines[-1].replace(job["module"], "")[:200]
    with open(os.path.join(folder, "types.json")) as f:
        described = json.load(f)
    types = described["types"]
    for device in described["devices"]:  # "" for a one-device module, else device_0, device_1, ...
        where = " of %s" % device if device else ""
        produced = [n for n in os.listdir(os.path.join(folder, "insitu", device)) if n.startswith("output_")] \
            if os.path.isdir(os.path.join(folder, "insitu", device)) else []
        if len(produced) != len(types):
            return "disagree", "insitu has %d results%s, xla %d" % (len(produced), where, len(types))
        for i, type_name in enumerate(types):
            actual = np.load(os.path.join(folder, "insitu", device, "output_%d.npy" % i))
            expected = np.load(os.path.join(folder, "xla", device, "output_%d.npy" % i))
            if expected.dtype.kind == "V" or actual.dtype.kind == "V":  # bfloat16 and the narrow types
                import ml_dtypes
                wanted = np.dtype(getattr(ml_dtypes, type_name))
                expected = expected.view(wanted) if expected.dtype.kind == "V" else expected
                if actual.dtype.kind == "V" and actual.dtype.itemsize == wanted.itemsize:
                    actual = actual.view(wanted)
            ok, why = same(actual, expected)
            if not ok:
                return "disagree", "output %d%s: %s" % (i, where, why)
    return "agree", ""


def gather_modules(paths, extensions):
    """(name, text, inputs) of every module in the files under paths: names are path:line for
    modules of C++ sources, shown relative to the current folder or else to the argument's parent;
    inputs are a corpus folder's committed input_N.npy next to a .hlo file."""
    found = []
    for root in paths:
        if os.path.isdir(root):
            files = sorted(os.path.join(folder, n) for folder, _, names in os.walk(root) for n in names
                           if n.endswith(extensions))
        else:
            files = [root]
        base = os.path.dirname(os.path.abspath(root.rstrip("/")))
        for path in files:
            relative = os.path.relpath(path)
            shown = relative if not relative.startswith("..") else os.path.relpath(os.path.abspath(path), base)
            inputs = []
            if path.endswith(".hlo"):
                folder = os.path.dirname(path)
                while os.path.exists(os.path.join(folder, "input_%d.npy" % len(inputs))):
                    inputs.append(os.path.abspath(os.path.join(folder, "input_%d.npy" % len(inputs))))
            for name, text in modules_in(path):
                found.append((shown + name[len(path):], text, inputs))
    return found


def compare_modules(options):
    modules = gather_modules(options.paths, (".hlo", ".cc"))
    work = os.path.abspath(options.keep) if options.keep else tempfile.mkdtemp(prefix="xla_oracle_")
    os.makedirs(work, exist_ok=True)
    jobs = []
    for number, (name, text, inputs) in enumerate(modules):
        folder = os.path.join(work, "m%05d" % number)
        os.makedirs(folder, exist_ok=True)
        jobs.append({"name": name, "module": os.path.join(folder, "module.hlo"), "out": folder, "args": inputs})
        with open(jobs[-1]["module"], "w") as f:
            f.write(text)
    listing = os.path.join(work, "modules.jsonl")
    with open(listing, "w") as f:
        f.write("".join(json.dumps(job) + "\n" for job in jobs))
    counts, lines = {}, []
    results = open(os.path.join(work, "results.tsv"), "w")
    try:
        clock = time.time()
        for index, kind, message in xla_compare_all(listing, len(jobs), work, options):
            job = jobs[index]
            xla_seconds = time.time() - clock
            if kind == "ok":
                kind, message = insitu_compare(job, options)
            insitu_seconds, clock = time.time() - clock - xla_seconds, time.time()
            counts[kind] = counts.get(kind, 0) + 1
            results.write("%s\t%s\t%s\t%s\t%.2f\t%.2f\n" % (kind, job["name"], job["out"], message, xla_seconds,
                                                         insitu_seconds))
            results.flush()
            if kind == "agree":
                shutil.rmtree(job["out"], ignore_errors=True)
            else:
                lines.append("%-15s %s %s" % (kind, job["name"], message))
                print(lines[-1], flush=True)
            if (index + 1) % 200 == 0:
                print("# %d of %d: %s" % (index + 1, len(jobs), ", ".join("%s %d" % c for c in sorted(counts.items()))),
                      flush=True)
    finally:
        results.close()
        if not options.keep:
            shutil.rmtree(work, ignore_errors=True)
    summary = "%d modules: " % len(jobs) + ", ".join("%s %d" % item for item in sorted(counts.items()))
    print(summary)
    if options.report:
        with open(options.report, "w") as f:
            f.write("# XLA:CPU as a second oracle\n\n`python bench/peers/xla_oracle.py compare %s`\n\n%s\n\n"
                    "Every module that is not `agree`:\n\n```\n%s\n```\n"
                    % (" ".join(options.paths), summary, "\n".join(lines)))
    return 1 if counts.get("disagree") else 0


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
    compare.add_argument("--keep", metavar="DIR", help="work in DIR and keep it: modules, results.tsv, and the "
                         "arguments and both sides' results of every module that is not agree")
    compare.add_argument("--threads", type=int, default=1, help="insitu's worker threads (default 1)")
    compare.add_argument("--insitu-timeout", type=int, default=60, help="seconds per insitu run (default 60)")
    compare.add_argument("--insitu-max-memory", default="4G", help="insitu run --max-memory (default 4G)")
    compare.add_argument("--xla-timeout", type=int, default=60, help="seconds per module on XLA (default 60)")
    compare.add_argument("--max-mb", type=int, default=64,
                         help="skip modules whose parameters and results exceed this many MB (default 64)")
    compare.add_argument("--xla-excess-precision", action="store_true",
                         help="let XLA skip the roundings of bf16/f16 intermediates (its default; off here, so that "
                         "XLA rounds every op as HLO says, as insitu does)")
    compare.add_argument("--worker-batch", type=int, default=500,
                         help="modules per XLA worker process before a fresh one (default 500)")
    parse = sub.add_parser("parse")
    parse.add_argument("paths", nargs="+")
    parse.add_argument("--insitu", default="build/tools/insitu")
    parse.add_argument("--report")
    parse.add_argument("--save-rejected", help="write each module insitu rejects to DIR")
    parse.add_argument("--xla-compile", action="store_true",
                       help="also compile each module insitu rejects on XLA:CPU and give its verdict")
    parse.add_argument("--xla-timeout", type=int, default=120, help="seconds per XLA compile (default 120)")
    compile_one_parser = sub.add_parser("compile-one")
    compile_one_parser.add_argument("module")
    worker = sub.add_parser("parse-worker")
    worker.add_argument("paths_file")
    worker.add_argument("first", type=int)
    compare_worker = sub.add_parser("compare-worker")
    compare_worker.add_argument("listing")
    compare_worker.add_argument("first", type=int)
    compare_worker.add_argument("--count", type=int, default=1 << 30)
    compare_worker.add_argument("--max-mb", type=int, default=64)
    options = parser.parse_args(argv[1:])
    if options.command in ("parse", "compile-one", "parse-worker"):
        import xla_oracle_parse as parsing  # this file's helpers, imported back

        if options.command == "parse":
            return parsing.parse_modules(options)
        if options.command == "compile-one":
            return parsing.compile_one(options.module)
        return parsing.xla_parse_worker(options.paths_file, options.first)
    if options.command == "compare-worker":
        return xla_compare_worker(options.listing, options.first, options.count, options.max_mb << 20)

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

    return compare_modules(options)


if __name__ == "__main__":
    sys.exit(main(sys.argv))
