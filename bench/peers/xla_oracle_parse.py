"""`xla_oracle.py parse`: HLO modules through XLA's parser and through `insitu fmt`, with XLA:CPU's
compile verdict on the ones insitu rejects (xla_oracle.py's docstring says what it prints). Its
worker processes run as `xla_oracle.py parse-worker` and `compile-one`."""
import os
import re
import subprocess
import sys
import tempfile

from xla_oracle import _xla, compile_on_xla, modules_in

ORACLE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "xla_oracle.py")


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
        worker = subprocess.run([sys.executable, ORACLE, "parse-worker", listing, str(first)],
                                capture_output=True, text=True)
        for line in worker.stdout.splitlines():
            index, _, verdict = line.partition("\t")
            verdicts[int(index)] = None if verdict == "ok" else verdict
        first = max(verdicts) + 1 if verdicts else first
        if worker.returncode != 0 and first < len(paths):
            verdicts[first] = "XLA's parser crashed (exit %d)" % worker.returncode
            first += 1
    return [verdicts.get(i, "?") for i in range(len(paths))]


def xla_compile_verdict(module_path, timeout):
    """XLA:CPU's verdict on compiling one module: 'compiles', 'refuses: MESSAGE' or 'crashes'
    (a fresh process: XLA aborts on some invalid modules)."""
    try:
        result = subprocess.run([sys.executable, ORACLE, "compile-one", module_path],
                                capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return "times out"
    lines = result.stdout.strip().splitlines()
    return lines[-1] if result.returncode == 0 and lines else "crashes"


def compile_one(module_path):
    with open(module_path) as f:
        text = f.read()
    try:
        compile_on_xla(text)
        print("compiles")
    except Exception as error:  # jaxlib raises its own error types
        print("refuses: " + ((str(error).strip().splitlines() or ["?"])[0][:160] or "?"))
    return 0


def parse_modules(options):
    files = []
    for path in options.paths:
        if os.path.isdir(path):
            for root, _, names in os.walk(path):
                files += [os.path.join(root, n) for n in sorted(names) if n.endswith((".hlo", ".cc"))]
        else:
            files.append(path)
    counts = {"modules": 0, "xla-accepts": 0, "both-accept": 0, "insitu-rejects": 0, "insitu-only": 0,
              "parser-accepts": 0}
    compile_counts = {}
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
                # the parser alone (fmt --no-verify), as XLA's parser: the verifier refused it?
                unverified = subprocess.run([options.insitu, "fmt", "--no-verify", module], capture_output=True,
                                            text=True, timeout=120)
                stage = "verifier" if unverified.returncode == 0 else "parser"
                counts["parser-accepts"] += unverified.returncode == 0
                lines.append("insitu-rejects %s (%s) %s" % (name, stage, message))
                if options.xla_compile:
                    verdict = xla_compile_verdict(module, options.xla_timeout)
                    kind = verdict.split(":")[0]
                    compile_counts[kind] = compile_counts.get(kind, 0) + 1
                    lines[-1] += " | xla: " + verdict
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
    counts["parsed"] = counts["both-accept"] + counts["parser-accepts"]
    summary = ("%(modules)d modules: XLA's parser accepts %(xla-accepts)d; insitu accepts %(both-accept)d of those "
               "and rejects %(insitu-rejects)d (its parser alone, fmt --no-verify, accepts %(parsed)d: its verifier "
               "refuses %(parser-accepts)d); insitu accepts %(insitu-only)d that XLA rejects" % counts)
    if options.xla_compile:
        summary += "; of the modules insitu rejects, XLA:CPU's compiler %s" % ", ".join(
            "%s %d" % (kind, count) for kind, count in sorted(compile_counts.items()))
    print(summary)
    if options.report:
        with open(options.report, "w") as f:
            f.write("`python bench/peers/xla_oracle.py parse %s`\n\n%s\n\n```\n%s\n```\n"
                    % (" ".join(options.paths), summary, "\n".join(lines)))
    return 0
