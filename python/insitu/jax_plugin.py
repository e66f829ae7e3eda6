"""insitu as a JAX device: the PJRT plugin (src/insitu/pjrt/plugin.h), so plain ``jax.jit`` runs on insitu.

After ``pip install .`` JAX finds the plugin through the ``jax_plugins`` entry point and calls
:func:`initialize`; in a build tree (``PYTHONPATH=build/python``), call it before JAX makes its
first array. Then::

    dev = jax.devices("insitu")[0]          # CPU stays JAX's default device
    x = jax.device_put(np.ones(4, np.float32), dev)
    f = jax.jit(lambda c: c + 1, donate_argnums=0)
    y = f(x)                                # runs on insitu; x's memory is y's, and x is deleted

or ``JAX_PLATFORMS=insitu`` (or ``jax.config.update("jax_platforms", "insitu,cpu")``) to make it
the default. What runs is the StableHLO JAX hands every plugin, read by insitu's own reader
(no jaxlib API), compiled by insitu's pipeline and run by its runtime.

What :func:`initialize` changes in JAX, all through private JAX APIs (no public hook exists):

- ``"insitu"`` joins the platforms JAX writes donation for
  (``jax._src.interpreters.mlir._platforms_with_donation``); without it JAX warns "Some donated
  buffers were not usable" and sends no donation at all;
- the CPU's own lowering rules (LAPACK calls for ``eigh``, ``lu``, ``cholesky`` ..., the CPU's dot
  and convolution rules) serve ``"insitu"`` too, where insitu has none of its own;
- ``pl.pallas_call`` lowers through insitu's Pallas rule (:mod:`insitu.pallas`), natively and in
  place;
- JAX's persistent compilation cache (``jax_compilation_cache_dir``), which JAX keeps to its own
  platforms, serves insitu too.
"""
from __future__ import annotations

import logging

__all__ = ["initialize", "available", "report"]

PLATFORM = "insitu"
# Below the CPU's 0: JAX lists insitu but keeps the CPU as its default unless the user asks.
PRIORITY = -1

_initialized = False


def available() -> bool:
    """Whether this build of insitu carries the PJRT plugin (built against pjrt_c_api.h)."""
    from insitu import _insitu

    return hasattr(_insitu, "_pjrt_api")


def _lend_cpu_rules(mlir):
    """The CPU's platform-specific lowering rules for insitu, where insitu has none of its own."""
    for primitive, entry in list(mlir._platform_specific_lowerings["cpu"].items()):
        mlir._platform_specific_lowerings[PLATFORM].setdefault(primitive, entry)


def _register_pallas(mlir):
    try:
        from jax._src.pallas.pallas_call import pallas_call_p
    except ImportError:  # a jax without Pallas
        return
    from insitu import pallas

    mlir.register_lowering(pallas_call_p, pallas._lowering_rule, platform=PLATFORM)


def report(compiled) -> dict:
    """What insitu made of a program JAX compiled for the insitu device.

    ``compiled``: ``jax.jit(f).lower(*args).compile()`` (JAX shares the executable with
    ``jax.jit(f)(*args)``). Returns ``optimized_hlo`` (insitu's optimized module as HLO text:
    ``compiled.as_text()`` shows the StableHLO JAX sent), ``explain`` (why each copy exists,
    text), ``explain_json`` and ``stats`` (the last call's: ``bytes_copied``, ``bytes_written``,
    ``peak_memory_bytes``, ...). Raises ValueError for a program not compiled by the plugin.
    """
    import json

    from insitu import _insitu

    executable = compiled.runtime_executable() if hasattr(compiled, "runtime_executable") else compiled
    found = _insitu._pjrt_program(executable.fingerprint) if available() else None
    if found is None:
        raise ValueError("not a program compiled for the insitu device (jax.devices('insitu'))")
    return {"optimized_hlo": found["optimized_text"], "explain": found["explain_text"],
            "explain_json": json.loads(found["explain_json"]), "stats": json.loads(found["stats_json"])}


def _client_options():
    """The client's options, read when JAX makes the backend: insitu.default_threads then
    (worker threads per call; 0: every core)."""
    import insitu

    return {"threads": int(insitu.default_threads)}


def _allow_persistent_cache():
    """JAX's persistent compilation cache for insitu programs: JAX keeps it to a list of its own
    platforms (jax._src.compilation_cache.is_cache_used); insitu's executables serialize (the
    program) and load again (compiled anew), so the cache applies to them as to the CPU's."""
    from jax._src import compilation_cache

    original = compilation_cache.is_cache_used
    if getattr(original, "_insitu", False):
        return

    def is_cache_used(backend):
        if getattr(backend, "platform", None) == PLATFORM:
            return compilation_cache._is_cache_enabled()
        return original(backend)

    is_cache_used._insitu = True
    compilation_cache.is_cache_used = is_cache_used


def initialize():
    """Registers the insitu device with JAX (the ``jax_plugins`` entry point calls this).

    Idempotent. Must run before JAX initializes its backends (its first array or device
    query); a later call registers nothing and says so in the log.
    """
    global _initialized
    if _initialized:
        return
    if not available():
        logging.getLogger(__name__).warning("insitu was built without its PJRT plugin (no pjrt_c_api.h at build time)")
        return
    from jax._src import xla_bridge
    from jax._src.interpreters import mlir

    from insitu import _insitu

    if PLATFORM not in mlir._platforms_with_donation:
        mlir._platforms_with_donation.append(PLATFORM)
    _lend_cpu_rules(mlir)
    _allow_persistent_cache()
    xla_bridge.register_plugin(PLATFORM, priority=PRIORITY, c_api=_insitu._pjrt_api(), options=_client_options)
    _register_pallas(mlir)  # after register_plugin: JAX takes rules only for platforms it knows
    _initialized = True
