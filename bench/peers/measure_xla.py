"""XLA's side of the peer table (bench/peers/peer_table.sh, issue 5 item 3), and the table itself.

  python measure_xla.py small OUT.json [NAME...]   the corpus programs (jax_programs.py) at their
                                                   committed small shapes
  python measure_xla.py dump-large ROOT            writes ROOT/NAME/before_optimizations.hlo and
                                                   the small inputs of the large-shape programs
                                                   (one subprocess each, with --xla_dump_to)
  python measure_xla.py large OUT.json             measures the large-shape programs
  python measure_xla.py dump-real ROOT             the same for the real-size programs (REAL), each
                                                   with floor.json (its bandwidth floor's bytes)
  python measure_xla.py real OUT.json              measures the real-size programs (PEER_REAL_CALLS)
  python measure_xla.py report SMALL_XLA LARGE_XLA INSITU.jsonl OUT.md COMMAND [REAL_XLA BANDWIDTH]
                                                   writes RESULTS.md from the JSON of this run

Per program, XLA:CPU (the pinned jaxlib) is measured as:
  compile   median over reps of jax.jit(fresh_f, ...).lower(*args).compile() (a new function
            object each rep, jax_enable_compilation_cache off, so nothing is reused); the
            compile() part alone is reported too
  call      median over calls of compiled(*device_args) + block_until_ready; donated arguments
            are replaced by the outputs they alias (input_output_alias), as a decode loop does
  copies    copy instructions of the optimized module (compiled.as_text()), fusion bodies
            included, each times the trip counts (known_trip_count) of the while loops around it;
            a loop without a known trip count counts once (marked static); both branches of a
            conditional: the costlier one counts (an upper bound)
  memory    memory_analysis(): argument + output + temp - alias
"""

import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import jax_programs  # noqa: E402
# the programs measured (and what bench/python reads through this module)
from peer_programs import LARGE, REAL, SETS, _gpt_layer_shapes, _training_step, transformer_loss  # noqa: E402,F401

COMPILE_REPS = int(os.environ.get("PEER_COMPILE_REPS", "5"))
CALLS = int(os.environ.get("PEER_CALLS", "200"))
LARGE_COMPILE_REPS = int(os.environ.get("PEER_LARGE_COMPILE_REPS", "10"))
LARGE_CALLS = int(os.environ.get("PEER_LARGE_CALLS", "10"))


def _setup_jax():
    import jax

    jax.config.update("jax_enable_x64", False)
    jax.config.update("jax_platforms", "cpu")
    jax.config.update("jax_enable_compilation_cache", False)
    return jax




# --- copies in the optimized module, times trip counts ------------------------------------

_HEADER = re.compile(r"^(ENTRY\s+)?%?([\w.\-]+)\s.*\{\s*$")
# name = shape opcode(...): a tuple shape has spaces, so the opcode is the first " word(".
_INSTR = re.compile(r"^\s*(?:ROOT\s+)?%?([\w.\-]+)\s*=\s*(.*?)\s([a-z][\w\-]*)\(")
_TRIP = re.compile(r'"known_trip_count":\{"n":"(\d+)"\}')
_CALLEES = re.compile(r"\b(?:calls|to_apply|body|condition|true_computation|false_computation)=%?([\w.\-]+)")
_BRANCHES = re.compile(r"branch_computations=\{([^}]*)\}")


def _shape_bytes(shape):
    match = jax_programs._SHAPE.match(shape)
    if not match:
        return 0
    size = jax_programs._BYTES[match.group(1)]
    for dim in filter(None, match.group(2).split(",")):
        size *= int(dim)
    return size


def count_copies_with_trips(hlo_text):
    """(copies executed, bytes copied, static copy count, note) for one run of the module."""
    computations, entry, current = {}, None, None
    for line in hlo_text.splitlines():
        header = _HEADER.match(line)
        if header and not line.startswith(" "):
            current = header.group(2)
            computations[current] = {"copies": [], "calls": [], "conditions": {}}
            if header.group(1):
                entry = current
            continue
        instr = _INSTR.match(line)
        if not instr or current is None:
            continue
        _, shape, opcode = instr.groups()
        if opcode == "copy":
            computations[current]["copies"].append(_shape_bytes(shape))
        trip = None
        if opcode == "while":
            found = _TRIP.search(line)
            trip = int(found.group(1)) if found else None
        callees = _CALLEES.findall(line)
        branches = _BRANCHES.search(line)
        if branches:
            callees += [c.strip().lstrip("%") for c in branches.group(1).split(",") if c.strip()]
        condition = re.search(r"\bcondition=%?([\w.\-]+)", line)
        if opcode == "while" and condition:
            computations[current]["conditions"][instr.group(1)] = condition.group(1)
        for callee in callees:
            computations[current]["calls"].append((callee, opcode, trip, instr.group(1)))

    unknown = []

    def cost(name, depth=0):
        """(copies, bytes) of one run of computation `name` and what it calls."""
        node = computations.get(name)
        if node is None or depth > 50:
            return 0, 0
        copies, size = len(node["copies"]), sum(node["copies"])
        branches = {}
        for callee, opcode, trip, site in node["calls"]:
            c, b = cost(callee, depth + 1)
            if opcode == "conditional":  # one branch runs: the costliest counts
                best = branches.get(site, (0, 0))
                branches[site] = max(best, (b, c))
                continue
            factor = 1
            if opcode == "while":
                if trip is None:
                    unknown.append(callee)
                else:  # the body runs n times, the condition n + 1
                    factor = trip + 1 if callee == node["conditions"].get(site) else trip
            copies += factor * c
            size += factor * b
        for b, c in branches.values():
            copies += c
            size += b
        return copies, size

    totals = dict(zip(("copies", "bytes"), cost(entry)))
    static = sum(len(c["copies"]) for c in computations.values())
    note = "while without a known trip count: its copies count once (static)" if unknown else ""
    return totals["copies"], totals["bytes"], static, note


def _input_output_alias(hlo_text):
    """[(output leaf, parameter number)] from the module header's input_output_alias."""
    header = hlo_text.split("\n", 1)[0]
    found = re.search(r"input_output_alias=\{(.*?)\}\s*(?:,\s*\w+=|$)", header)
    pairs = []
    if found:
        for out, param in re.findall(r"\{(\d*)\}:\s*\((\d+),", found.group(1)):
            pairs.append((int(out or 0), int(param)))
    return pairs


# --- measuring ------------------------------------------------------------------------------

def measure(name, builder, compile_reps, calls):
    jax = _setup_jax()
    import numpy as np

    function, args, jit_options, *extra = builder()
    treedef = jax.tree_util.tree_structure(args)

    lower_compile, compile_only = [], []
    compiled = None
    for _ in range(compile_reps):
        def fresh(*a, _f=function):
            return _f(*a)

        fresh.__name__ = name
        start = time.perf_counter()
        lowered = jax.jit(fresh, keep_unused=True, **jit_options).lower(*args)
        middle = time.perf_counter()
        compiled = lowered.compile()
        end = time.perf_counter()
        lower_compile.append(end - start)
        compile_only.append(end - middle)

    text = compiled.as_text()
    memory = compiled.memory_analysis()
    copies, copy_bytes, static_copies, copy_note = count_copies_with_trips(text)
    alias = _input_output_alias(text)

    leaves = [jax.device_put(np.asarray(leaf)) for leaf in jax.tree_util.tree_leaves(args)]
    del args
    times = []
    for call in range(3 + calls):
        start = time.perf_counter()
        out = compiled(*jax.tree_util.tree_unflatten(treedef, leaves))
        jax.block_until_ready(out)
        if call >= 3:
            times.append(time.perf_counter() - start)
        out_leaves = jax.tree_util.tree_leaves(out)
        for out_index, param in alias:
            leaves[param] = out_leaves[out_index]
    return {
        "program": name,
        "compile_seconds": statistics.median(lower_compile),
        "compile_only_seconds": statistics.median(compile_only),
        "compile_reps": compile_reps,
        "call_seconds": statistics.median(times),
        "calls": calls,
        "copies": copies,
        "copy_bytes": copy_bytes,
        "static_copies": static_copies,
        "copy_note": copy_note,
        "memory_bytes": int(memory.argument_size_in_bytes + memory.output_size_in_bytes
                            + memory.temp_size_in_bytes - memory.alias_size_in_bytes),
        "memory_analysis": {k: int(getattr(memory, k)) for k in (
            "argument_size_in_bytes", "output_size_in_bytes", "alias_size_in_bytes", "temp_size_in_bytes")},
        "donated_parameters": sorted({p for _, p in alias}),
        "io_bytes": int(memory.argument_size_in_bytes + memory.output_size_in_bytes - memory.alias_size_in_bytes),
        "floor_bytes": int(extra[0]) if extra else 0,
        "flops": int(extra[1]) if len(extra) > 1 else 0,
    }


def dump_large_one(set_name, name, out_dir):
    """In a subprocess whose XLA_FLAGS dumps to INSITU_DUMP_DIR: the HLO XLA receives."""
    jax = _setup_jax()
    import numpy as np

    function, args, jit_options, *floor = SETS[set_name][name]()
    function.__name__ = name
    specs = jax.tree_util.tree_map(lambda a: jax.ShapeDtypeStruct(np.shape(a), np.asarray(a).dtype), args)
    jax.jit(function, keep_unused=True, **jit_options).lower(*specs).compile()
    dump_dir = os.environ["INSITU_DUMP_DIR"]
    before = [f for f in sorted(os.listdir(dump_dir))
              if f.split(".")[1:2] == ["jit_" + name] and f.endswith(".before_optimizations.txt")]
    os.makedirs(out_dir, exist_ok=True)
    shutil.copyfile(os.path.join(dump_dir, before[-1]), os.path.join(out_dir, "before_optimizations.hlo"))
    # Inputs under 64 MiB as .npy; insitu_measure makes the big (all-zero) ones itself.
    for i, leaf in enumerate(jax.tree_util.tree_leaves(args)):
        leaf = np.asarray(leaf)
        if leaf.nbytes < (64 << 20):
            np.save(os.path.join(out_dir, "input_%d.npy" % i), leaf)
        else:
            assert not leaf.any(), "large inputs must be zeros (insitu_measure fills them with zeros)"
    if floor:
        with open(os.path.join(out_dir, "floor.json"), "w") as f:
            json.dump({"floor_bytes": int(floor[0])}, f)


def dump_large(set_name, root):
    for name in SETS[set_name]:
        with tempfile.TemporaryDirectory() as dump_dir:
            env = dict(os.environ, XLA_FLAGS="--xla_dump_to=%s --xla_dump_hlo_as_text --xla_dump_large_constants" % dump_dir,
                       INSITU_DUMP_DIR=dump_dir, JAX_PLATFORMS="cpu")
            subprocess.run([sys.executable, os.path.abspath(__file__), "dump-large-one", set_name, name,
                            os.path.join(root, name)], env=env, check=True)


def measure_set(programs, out_path, compile_reps, calls):
    results = []
    for name, builder in programs.items():
        result = measure(name, builder, compile_reps, calls)
        print("xla %-28s compile %.4fs call %.3gs copies %d (%d B) memory %d B" % (
            name, result["compile_seconds"], result["call_seconds"], result["copies"], result["copy_bytes"],
            result["memory_bytes"]), flush=True)
        results.append(result)
    with open(out_path, "w") as f:
        json.dump(results, f, indent=1)


# --- the report -----------------------------------------------------------------------------

def _ratio(a, b):
    if b == 0:
        return "-" if a == 0 else "inf"
    text = "%.3g" % (a / b)
    if a != b and float(text) == 1:  # a difference too small for 3 digits still shows
        text = "%.7f" % (a / b)
    return text


def _time(seconds):
    if seconds >= 1:
        return "%.3g s" % seconds
    if seconds >= 1e-3:
        return "%.3g ms" % (seconds * 1e3)
    return "%.3g us" % (seconds * 1e6)


def _table(xla, insitu):
    rows = [
        ("compile (XLA: lower+compile)", _time(xla["compile_seconds"]), _time(insitu["compile_seconds"]),
         _ratio(insitu["compile_seconds"], xla["compile_seconds"])),
        ("compile (XLA: compile() only)", _time(xla["compile_only_seconds"]), _time(insitu["compile_seconds"]),
         _ratio(insitu["compile_seconds"], xla["compile_only_seconds"])),
        ("time per call (median)", _time(xla["call_seconds"]), _time(insitu["call_seconds"]),
         _ratio(insitu["call_seconds"], xla["call_seconds"])),
        ("copies executed per call", str(xla["copies"]), str(insitu["copies_executed"]),
         _ratio(insitu["copies_executed"], xla["copies"])),
        ("bytes copied per call", str(xla["copy_bytes"]), str(insitu["bytes_copied"]),
         _ratio(insitu["bytes_copied"], xla["copy_bytes"])),
        ("memory (bytes)", str(xla["memory_bytes"]), str(insitu["peak_memory_bytes"]),
         _ratio(insitu["peak_memory_bytes"], xla["memory_bytes"])),
    ]
    lines = ["| | XLA:CPU | insitu | insitu/XLA |", "|---|---:|---:|---:|"]
    lines += ["| %s | %s | %s | %s |" % row for row in rows]
    return lines


# Why insitu loses where it does (found with insitu_measure --dump-to; the memory-usage report
# and the copies' insitu_copy_reason). Printed under a program's table only when this run shows
# the loss. Keys: (program, shape, figure).
_FUSION = ("insitu fuses elementwise chains (with their broadcasts) into loop fusions but not "
           "yet into reductions or dots, so a reduce's or dot's input is still a full-size temp "
           "where XLA's input fusions compute it on the fly; insitu's peak also counts constants, "
           "which memory_analysis leaves out. What it would take: fusing producers into reduce and "
           "dot (XLA's input/output fusion) and not counting read-only constants")
WHY = {
    ("kv_cache_decode_loop", "large", "memory"): (
        "about 1 KiB: insitu keeps the [1,256] dot result live beside the fused add+tanh result, "
        "where XLA fuses dot+add+tanh into one; see the fusion note"),
    ("kv_cache_decode_loop", "small", "memory"): ("the [1,8] dot result beside the fused result; see the fusion note"),
    ("softmax", "small", "memory"): (
        "8 bytes: the two reduce init constants (-inf and 0), which insitu's peak counts and "
        "memory_analysis leaves out; argument, output and the one [6] temp are the same as XLA's"),
    ("embedding_lookup", "small", "memory"): (
        "the clamped indices (s32[2,3]) and the in-bounds mask (pred[2,3,1]) are buffers of their "
        "own, where XLA fuses the clamp, the gather and the mask into one loop fusion. What it "
        "would take: fusing elementwise producers into gather"),
    ("reshape_transpose_concat", "small", "memory"): (
        "insitu's fusion pass fuses elementwise ops only, so concatenate, reshape, transpose, pad, "
        "reverse and slice each write a buffer, where XLA fuses the whole chain into one loop "
        "fusion that writes only the result. What it would take: data-movement ops inside loop "
        "fusions (an index map per op, as XLA's elemental emitter computes them)"),
}


def _why(name, kind, figure):
    if (name, kind, figure) in WHY:
        return WHY[(name, kind, figure)]
    if figure == "memory":
        return _FUSION
    if figure == "call":
        return ("ops that run through the reference evaluator fallback (see fallback_ops_executed) "
                "or are not fused; XLA's time includes Python dispatch (a few us)")
    return ""


def _real_section(real, insitu, bandwidth, out, summary):
    """The real-size rows: each beside XLA, with its bandwidth floor from this run."""
    out.append("## Real sizes (issue 9)")
    out.append("")
    out.append("The bandwidth floor is the bytes a program must read and write per call (every argument "
               "read once, every output written once, a donated cache only where it changes) divided "
               "by this machine's memory bandwidth measured in the same run (`insitu_measure "
               "--bandwidth`: a 1 GiB copy on %d threads, read + write bytes): %.1f GB/s. For the "
               "compute-bound rows (matmul, convolution) the floor is far below the time; "
               "GFLOP/s are given instead." % (bandwidth["threads"], bandwidth["bandwidth_bytes_per_second"] / 1e9))
    out.append("")
    out.append("| program | XLA:CPU per call | insitu per call | insitu/XLA | floor | insitu/floor | XLA/floor "
               "| bytes copied insitu / XLA | peak insitu / XLA (bytes) | arguments + outputs |")
    out.append("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for name, x in real.items():
        record = insitu.get(("real", name))
        if record is None or "error" in record:
            out.append("| %s | %s | failed: %s | | | | | | | |" % (name, _time(x["call_seconds"]),
                                                                (record or {}).get("error", "no result")))
            continue
        floor = x["floor_bytes"] / bandwidth["bandwidth_bytes_per_second"]
        flops = x.get("flops", 0)
        extra = ""
        if flops:
            extra = " (%.0f / %.0f GFLOP/s)" % (flops / record["call_seconds"] / 1e9, flops / x["call_seconds"] / 1e9)
        out.append("| %s | %s | %s%s | %s | %s | %.2f | %.2f | %d / %d | %d / %d | %d |" % (
            name, _time(x["call_seconds"]), _time(record["call_seconds"]), extra,
            _ratio(record["call_seconds"], x["call_seconds"]), _time(floor), record["call_seconds"] / floor,
            x["call_seconds"] / floor, record["bytes_copied"], x["copy_bytes"], record["peak_memory_bytes"],
            x["memory_bytes"], x["io_bytes"]))
        summary.append(("real", name, x, record))
    out.append("")
    out.append("insitu ran no instruction through the evaluator fallback on these rows unless the table "
               "of failures below says so. Where the time goes: bench/README.md (a per-step profile, "
               "`insitu_measure --profile`).")
    out.append("")


def report(small_path, large_path, insitu_path, out_path, command, real_path=None, bandwidth_path=None):
    import platform

    small = {r["program"]: r for r in json.load(open(small_path))}
    large = {r["program"]: r for r in json.load(open(large_path))}
    real = {r["program"]: r for r in json.load(open(real_path))} if real_path else {}
    bandwidth = json.load(open(bandwidth_path)) if bandwidth_path else None
    insitu = {}
    for line in open(insitu_path):
        line = line.strip()
        if line:
            record = json.loads(line)
            parent = os.path.basename(os.path.dirname(record["dir"].rstrip("/")))
            kind = parent if parent in ("large", "real") else "small"
            insitu[(kind, os.path.basename(record["dir"].rstrip("/")))] = record
    cpu = "unknown"
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    load = " ".join("%.2f" % x for x in os.getloadavg())
    import jax

    out = ["# Peer table: insitu beside XLA:CPU", "",
           "Generated by `%s` on %s. Every number below comes from that one run." % (
               command, time.strftime("%Y-%m-%d %H:%M:%S %Z")), "",
           "Machine: %d cores (nproc), %s, load average %s at the end of the run, %s, Python %s, "
           "jax/jaxlib %s." % (os.cpu_count(), cpu, load, platform.platform(), platform.python_version(),
                                jax.__version__), "",
           "How each figure is measured is in bench/peers/README.md (section \"The peer table\"). "
           "Ratios are insitu/XLA: below 1 means insitu is faster or smaller. XLA's copies are the "
           "`copy` instructions of its optimized module times loop trip counts; insitu's are "
           "counted by its runtime in one call. XLA's memory is argument + output + temp - alias; "
           "insitu's is the peak of its buffer assignment.", ""]
    failures, summary = [], []

    def section(kind, name, xla_record):
        record = insitu.get((kind, name))
        out.append("### %s%s" % (name, " (large: a 1 GiB donated array)" if kind == "large" else ""))
        out.append("")
        if record is None or "error" in record:
            out.append("insitu failed: %s" % (record or {}).get("error", "no result"))
            failures.append((kind, name))
            out.append("")
            return
        out.extend(_table(xla_record, record))
        notes = []
        if xla_record["copy_note"]:
            notes.append("XLA copies: " + xla_record["copy_note"] + ".")
        if record["bytes_copied"] > xla_record["copy_bytes"]:
            notes.append("insitu copies more bytes: " + _why(name, kind, "bytes") + ".")
        if record["peak_memory_bytes"] > xla_record["memory_bytes"]:
            notes.append("insitu uses more memory: " + _why(name, kind, "memory") + ".")
        if kind == "large" and record["call_seconds"] > xla_record["call_seconds"]:
            notes.append("insitu is slower per call: " + _why(name, kind, "call") + ".")
        notes.append("insitu ran %d instruction(s) through the evaluator fallback per call." %
                     record.get("fallback_ops_executed", 0))
        if xla_record["donated_parameters"]:
            notes.append("Donated (fed back each call): parameters %s." % xla_record["donated_parameters"])
        if notes:
            out.append("")
            out.extend("- " + note for note in notes)
        out.append("")
        summary.append((kind, name, xla_record, record))

    out.append("## Small shapes (the committed corpus, tests/data/jax)")
    out.append("")
    for name, record in small.items():
        section("small", name, record)
    out.append("## Large shapes (in-place programs with a 1 GiB cache/array)")
    out.append("")
    for name, record in large.items():
        section("large", name, record)

    if real and bandwidth:
        _real_section(real, insitu, bandwidth, out, summary)

    out.append("## Summary")
    out.append("")
    out.append("| program | shape | compile insitu/XLA | call insitu/XLA | bytes copied insitu - XLA | memory insitu/XLA |")
    out.append("|---|---|---:|---:|---:|---:|")
    for kind, name, x, i in summary:
        out.append("| %s | %s | %s | %s | %d | %s |" % (
            name, kind, _ratio(i["compile_seconds"], x["compile_seconds"]),
            _ratio(i["call_seconds"], x["call_seconds"]), i["bytes_copied"] - x["copy_bytes"],
            _ratio(i["peak_memory_bytes"], x["memory_bytes"])))
    out.append("")
    slow = [n for k, n, x, i in summary if i["compile_seconds"] * 20 > x["compile_seconds"]]
    more_bytes = [(k, n) for k, n, x, i in summary if i["bytes_copied"] > x["copy_bytes"]]
    more_memory = [(k, n) for k, n, x, i in summary if i["peak_memory_bytes"] > x["memory_bytes"]]
    slower_large = [n for k, n, x, i in summary if k == "large" and i["call_seconds"] > x["call_seconds"]]
    out.append("- Compile at least 20x faster than XLA's lower+compile: %s." % (
        "every program" if not slow else "not on " + ", ".join(slow)))
    slow_only = [n for k, n, x, i in summary if i["compile_seconds"] * 20 > x["compile_only_seconds"]]
    out.append("- ... and than XLA's compile() alone: %s (smallest factor %.1fx)." % (
        "every program" if not slow_only else "not on " + ", ".join(slow_only),
        min(x["compile_only_seconds"] / i["compile_seconds"] for k, n, x, i in summary)))
    out.append("- insitu copies more bytes than XLA on: %s." % (
        ", ".join("%s (%s)" % p[::-1] for p in more_bytes) or "none"))
    out.append("- insitu uses more memory than XLA on: %s." % (
        ", ".join("%s (%s)" % p[::-1] for p in more_memory) or "none"))
    out.append("- Large in-place programs slower per call than XLA: %s." % (", ".join(slower_large) or "none"))
    if failures:
        out.append("- insitu failed on: %s." % ", ".join("%s (%s)" % f[::-1] for f in failures))
    out.append("")
    with open(out_path, "w") as f:
        f.write("\n".join(out))


def main(argv):
    mode = argv[1] if len(argv) > 1 else ""
    if mode == "small":
        names = argv[3:] or list(jax_programs.PROGRAMS)
        measure_set({n: jax_programs.PROGRAMS[n][1] for n in names}, argv[2], COMPILE_REPS, CALLS)
    elif mode == "large":
        measure_set(LARGE, argv[2], LARGE_COMPILE_REPS, LARGE_CALLS)
    elif mode == "real":
        measure_set(REAL, argv[2], LARGE_COMPILE_REPS, int(os.environ.get("PEER_REAL_CALLS", "20")))
    elif mode == "dump-large":
        dump_large("large", argv[2])
    elif mode == "dump-real":
        dump_large("real", argv[2])
    elif mode == "dump-large-one":
        dump_large_one(argv[2], argv[3], argv[4])
    elif mode == "report":
        report(*argv[2:9])
    else:
        print(__doc__)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
