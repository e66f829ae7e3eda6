"""Pallas kernels (``pl.pallas_call`` without ``interpret=``) compiled by insitu on a CPU.

JAX refuses them on a CPU ("Only interpret mode is supported on CPU backend") and its interpret
mode threads every operand through a loop as a copy and writes every block back, inputs
included: the cost is grid steps x array size. Inside :func:`insitu.jax.jit` (and the torch
path built on it) a ``pallas_call`` lowers instead, through :data:`lowering_parameters` (a scoped
override: a plain ``jax.jit`` keeps JAX's own rule), to a grid loop built for in-place runs:

- one loop over the grid in row-major order, each step computing its blocks' starts from the
  index maps (scalar-prefetch operands included), slicing its blocks, running the kernel body
  (JAX's own state discharge of the kernel jaxpr) and writing back only the blocks of refs the
  kernel writes (its write effects): a read-only input is never carried or written;
- an aliased input and output (``input_output_aliases``) are one array, so a donated input is
  updated in place by insitu's runtime (the loop's dynamic-update-slices write into it);
- outputs no step writes keep what JAX gives them (the aliased input, else uninitialized:
  NaN, the integer minimum, False), scratch starts the same way and persists across steps;
- a block past the array's end (a ragged grid) reads and writes the array padded to whole
  blocks, as interpret mode does.

That is interpret mode's meaning (tested against it), compiled by insitu's whole pipeline. The
loop carries the kernel's name, grid and aliases as frontend attributes (src/insitu/ir/grid_loop.h;
the body's own ops carry an empty name): ``stats["pallas_kernels"]`` and ``explain()`` report each
kernel by them. ``pl.program_id`` and ``pl.num_programs`` inside a ``pl.when`` branch or a loop
body of the kernel (which interpret mode cannot lower on a CPU) read the grid step: such a body is
evaluated with its nested bodies traced again inside the step (_eval_retracing). What
insitu cannot run is a located error naming the kernel: constants captured by the kernel,
``Element``/``BoundedSlice``/``Indirect`` block dimensions, mesh kernels, ragged blocks of an
aliased pair.

Grid steps on threads: the lowering evaluates every block's index map over the whole grid
(_independent_axes) and finds the longest run of leading grid axes whose points are
independent: no two points touch one element of an array where either writes it (a block, or
where a ref is a whole array, the slices the body reads and writes: pallas_footprints.py). The loop carries
that count (``insitu_pallas_parallel``) or why there is none (``insitu_pallas_in_order``: index
maps reading scalar prefetch, a dynamic grid, a block shared between points, scratch along an
axis not declared ``"parallel"``); the runtime runs those points on its workers, each point's
steps in order, each worker with its own scratch (src/insitu/analysis/parallel_grid.h).
"""
from __future__ import annotations

import functools
import re

import jax.numpy as jnp
from jax import lax

__all__ = ["lowering_parameters"]


class UnsupportedKernel(ValueError):
    """A pallas_call insitu cannot compile; the message names the kernel and what it holds."""


def _source_info(params):
    """'plus_one_kernel at file.py:3' (the kernel function and where it is), or None."""
    info = getattr(params["jaxpr"], "debug_info", None)
    return getattr(info, "func_src_info", None) if info is not None else None


def _short_name(params):
    """The kernel's name: pallas_call's name=, else its function's name."""
    where = _source_info(params)
    return params.get("name") or (where.split(" at ")[0] if where else "?")


def _kernel_name(params):
    where = _source_info(params)
    return f"pallas_call {params.get('name') or '?'}" + (f" ({where})" if where else "")


def _block_dims(grid_mapping, kernel):
    """Per block mapping: (block shape, which dimensions are squeezed)."""
    from jax._src.pallas import core as pallas_core

    shapes, squeezed = [], []
    for mapping in grid_mapping.block_mappings:
        sizes, flags = [], []
        for dim in mapping.block_shape:
            if isinstance(dim, pallas_core.Squeezed):
                sizes.append(1)
                flags.append(True)
            elif isinstance(dim, pallas_core.Blocked):
                sizes.append(dim.block_size)
                flags.append(False)
            else:
                raise UnsupportedKernel(f"{kernel}: block dimension {type(dim).__name__} of operand "
                                        f"{mapping.origin} is not supported by insitu yet (Blocked and Squeezed are)")
        shapes.append(tuple(sizes))
        squeezed.append(tuple(flags))
    return shapes, squeezed


def _uninitialized(shape, dtype):
    """What Pallas leaves in memory no one wrote (JAX's interpret-mode values)."""
    from jax._src.pallas import primitives

    return primitives.uninitialized_value(shape, dtype)


UNREAD_MEMORY_TARGET = "insitu_unread_memory"  # src/insitu/ir/instruction.h: kUnreadMemoryTarget


def _unread_memory(shape, dtype):
    """An array whose every element is written before it is read: insitu's runtime writes nothing
    to make it (its evaluator fills it with zeros)."""
    import jax

    return jax.ffi.ffi_call(UNREAD_MEMORY_TARGET, jax.ShapeDtypeStruct(tuple(shape), dtype))()


def _padded(value, block_shape):
    """`value` padded at the end of each dimension to a whole number of blocks."""
    widths = [(0, -size % block) for size, block in zip(value.shape, block_shape)]
    if not any(high for _, high in widths):
        return value
    return jnp.pad(value, widths, constant_values=_uninitialized((), value.dtype))


def _read_block(array, starts, block_shape, squeezed):
    block = lax.dynamic_slice(array, [jnp.asarray(s, jnp.int32) for s in starts], block_shape)
    return lax.squeeze(block, [d for d, flag in enumerate(squeezed) if flag])


def _write_block(array, block, starts, block_shape, squeezed):
    kept = [d for d, flag in enumerate(squeezed) if not flag]
    block = lax.broadcast_in_dim(block, block_shape, kept)
    return lax.dynamic_update_slice(array, block, [jnp.asarray(s, jnp.int32) for s in starts])


def _reads_grid_in_nested_bodies(jaxpr, top=True):
    """Whether pl.program_id or pl.num_programs is read inside a sub-jaxpr of `jaxpr` (a pl.when
    branch, a fori_loop body), where evaluating the top level alone leaves it unresolved."""
    from jax._src import core as jax_core
    from jax._src.pallas import primitives

    for eqn in jaxpr.eqns:
        if not top and eqn.primitive in (primitives.program_id_p, primitives.num_programs_p):
            return True
        if any(_reads_grid_in_nested_bodies(sub, top=False) for sub in jax_core.jaxprs_in_params(eqn.params)):
            return True
    return False


def _eval_retracing(jaxpr, consts, *args):
    """jax.core.eval_jaxpr, except that cond, while, scan and jit bodies are traced again through
    lax's API: the grid environment (pallas_core.grid_env) is active while they are traced, so
    pl.program_id inside a pl.when branch or a loop body reads the grid step, as at the top level
    (JAX's interpret mode leaves it unresolved there: 'no MLIR translation rule for program_id')."""
    from jax._src import core as jax_core

    def closed(body, *values):
        return _eval_retracing(body.jaxpr, body.consts, *values)

    env = dict(zip(jaxpr.all_invars, [*consts, *args]))
    read = lambda v: v.val if isinstance(v, jax_core.Literal) else env[v]  # noqa: E731
    for eqn in jaxpr.eqns:
        with eqn.ctx.manager:  # the eqn's own context (its xla metadata)
            outs = _eval_equation(eqn, [read(v) for v in eqn.invars], closed)
        for v, value in zip(eqn.outvars, outs):
            if not isinstance(v, jax_core.DropVar):
                env[v] = value
    return [read(v) for v in jaxpr.outvars]


def _eval_equation(eqn, values, closed):
    """The outputs of one equation of _eval_retracing (`closed` evaluates a closed sub-jaxpr)."""
    from jax._src.lax import control_flow
    from jax._src.pjit import jit_p

    params, primitive = eqn.params, eqn.primitive
    if primitive is control_flow.cond_p:
        return lax.switch(values[0], [functools.partial(closed, b) for b in params["branches"]], *values[1:])
    if primitive is control_flow.while_p:
        cn, bn = params["cond_nconsts"], params["body_nconsts"]
        cond_consts, body_consts, init = values[:cn], values[cn:cn + bn], values[cn + bn:]
        return lax.while_loop(lambda c: closed(params["cond_jaxpr"], *cond_consts, *c)[0],
                              lambda c: tuple(closed(params["body_jaxpr"], *body_consts, *c)), tuple(init))
    if primitive is control_flow.scan_p:
        if "ft_in" in params:  # jax 0.12: the (consts, carry, xs) trees of the operands, leaves in order
            consts_tree, carry_tree, _ = params["ft_in"].unpack()
            nc, ncarry = len(list(consts_tree.vals)), len(list(carry_tree.vals))
        else:
            nc, ncarry = params["num_consts"], params["num_carry"]
        scan_consts, carry, xs = values[:nc], values[nc:nc + ncarry], values[nc + ncarry:]

        def step(c, x):
            out = closed(params["jaxpr"], *scan_consts, *c, *x)
            return tuple(out[:ncarry]), tuple(out[ncarry:])

        carry_out, ys = lax.scan(step, tuple(carry), tuple(xs), length=params["length"], reverse=params["reverse"])
        return [*carry_out, *ys]
    if primitive is jit_p:
        return closed(params["jaxpr"], *values)
    outs = primitive.bind(*values, **primitive.get_bind_params(params))
    return outs if primitive.multiple_results else [outs]


_PARALLEL_SEMANTICS = ("parallel", "core_parallel", "subcore_parallel")
_MAX_CHECKED_BLOCKS = 1 << 16  # blocks of one array past which the independence check gives up


def _declared_parallel(grid, grid_mapping, compiler_params):
    """Per grid axis, whether the kernel declares it parallel (dimension_semantics; a vmapped
    axis is parallel, as Mosaic makes it), or None when it declares nothing."""
    semantics = getattr(compiler_params, "dimension_semantics", None)
    if semantics is None:
        return None
    names = iter(getattr(s, "value", s) for s in semantics)
    return [d in grid_mapping.vmapped_dims or next(names, "arbitrary") in _PARALLEL_SEMANTICS for d in range(len(grid))]


def _block_starts(grid, grid_mapping, padded_shapes, block_shapes):
    """Per ref, the start of its block at every grid step (row-major), an int64 array
    [steps, rank], clamped as dynamic_slice clamps them, or None for a ref whose index map reads
    scalar-prefetch operands (their values are known only at run time). None for them all when
    the grid has a dynamic size or more steps than insitu evaluates maps over."""
    import jax
    import numpy as np
    from jax._src import core as jax_core

    if any(not isinstance(d, int) for d in grid) or int(np.prod(grid, dtype=np.int64)) > _MAX_CHECKED_BLOCKS:
        return None
    indices = np.indices(grid).reshape(len(grid), -1).T.astype(np.int32) if grid else np.zeros((1, 0), np.int32)
    starts = []
    for k, mapping in enumerate(grid_mapping.block_mappings):
        jaxpr = mapping.index_map_jaxpr.jaxpr
        extra = jaxpr.invars[len(grid):]
        used = {v for eqn in jaxpr.eqns for v in eqn.invars if isinstance(v, jax_core.Var)}
        used |= {v for v in jaxpr.outvars if isinstance(v, jax_core.Var)}
        if any(v in used for v in extra):
            starts.append(None)
            continue
        dummies = [np.zeros(getattr(v.aval, "inner_aval", v.aval).shape, getattr(v.aval, "inner_aval", v.aval).dtype)
                   for v in extra]
        at = jax.jit(jax.vmap(lambda index: jnp.stack([jnp.asarray(x, jnp.int64 if jax.config.jax_enable_x64 else jnp.int32)
                                                      for x in mapping.compute_start_indices_interpret(
                                                          tuple(index[d] for d in range(len(grid))), *dummies)])))
        with jax.ensure_compile_time_eval():  # evaluated now, not traced into the kernel's lowering
            found = np.asarray(at(indices), dtype=np.int64).reshape(len(indices), -1)
        limit = np.asarray(padded_shapes[k], np.int64) - np.asarray(block_shapes[k], np.int64)
        starts.append(np.clip(found, 0, np.maximum(limit, 0)))
    return starts


def _inputs_read(jaxpr):
    """Per input of `jaxpr`, whether some output depends on it (an equation's outputs depend on
    all its inputs: a cond or loop as a whole)."""
    from jax._src import core as jax_core

    depends = {v: {i} for i, v in enumerate(jaxpr.invars)}
    for eqn in jaxpr.eqns:
        on = set().union(*(depends.get(v, set()) for v in eqn.invars if isinstance(v, jax_core.Var)))
        for v in eqn.outvars:
            depends[v] = on
    read = [False] * len(jaxpr.invars)
    for v in jaxpr.outvars:
        if isinstance(v, jax_core.Var):
            for i in depends.get(v, ()):
                read[i] = True
    return read


def _covers(starts, block_shape, padded_shape):
    """Whether blocks of `block_shape` at `starts` (multiples of it, as Blocked index maps give)
    cover every element of an array of `padded_shape` (a whole number of blocks)."""
    import numpy as np

    if starts is None or any(size % block for size, block in zip(padded_shape, block_shape)):
        return False
    blocks = int(np.prod([size // block for size, block in zip(padded_shape, block_shape)], dtype=np.int64))
    aligned = np.all(starts % np.maximum(np.asarray(block_shape, np.int64), 1) == 0)
    return bool(aligned) and len(np.unique(starts, axis=0)) == blocks


def _touched(k, starts, block_shapes, squeezed, written, accesses):
    """The boxes ref k touches at every step, in its array's coordinates: its block (`starts`:
    _block_starts), or, for a ref whose block is its whole array at every step (no BlockSpec,
    pl.ANY), the boxes of its accesses (pallas_footprints.access_boxes) where they are known.
    Only there: a step may write a whole block back, which is its own unless the block is the
    array, and the runtime keeps a loop whose step writes a whole shared array in order
    (src/insitu/runtime/parallel_grid_plan.cc)."""
    import numpy as np

    if accesses is None or accesses[k] is None:
        return [(starts[k], block_shapes[k], written[k])]
    kept = [d for d, flag in enumerate(squeezed[k]) if not flag]
    boxes = []
    for lo, extent, writes in accesses[k]:
        full_lo = np.zeros_like(starts[k])
        full_lo[:, kept] = lo
        full_extent = np.ones(len(block_shapes[k]), np.int64)
        full_extent[kept] = extent
        boxes.append((starts[k] + full_lo, tuple(full_extent), writes))
    return boxes


def _independent_axes(grid, grid_mapping, compiler_params, starts, block_shapes, array_of, written, carried,
                      has_scratch, squeezed=None, accesses=None):
    """(p, None) when the leading p >= 1 grid axes are independent: steps of different points of
    those axes write disjoint parts of every array and read nothing another point writes
    (`starts`: _block_starts; `accesses`: pallas_footprints.access_boxes, see _touched), so insitu
    may run those points on threads, each point's steps in order; (0, why) otherwise. With
    scratch, only axes the kernel declares parallel count (a worker's scratch persists across its
    own steps only, as on a TPU core)."""
    import numpy as np

    from insitu.pallas_footprints import MAX_CANDIDATE_PAIRS, conflicts

    if any(not isinstance(d, int) for d in grid):
        return 0, "its grid has a dynamic size"
    steps = int(np.prod(grid, dtype=np.int64)) if grid else 1
    if steps < 2:
        return 0, "its grid has one step"
    if starts is None:
        return 0, f"its grid has {steps} steps, more than insitu checks for independence ({_MAX_CHECKED_BLOCKS})"
    declared = _declared_parallel(grid, grid_mapping, compiler_params)
    limit = len(grid)
    if has_scratch:
        flags = declared or [d in grid_mapping.vmapped_dims for d in range(len(grid))]
        limit = next((d for d, flag in enumerate(flags) if not flag), len(grid))
        if limit == 0:
            return 0, ("its scratch persists across grid steps and its first grid axis is not declared parallel "
                       "(dimension_semantics)")
    refs = [k for k in range(len(array_of)) if array_of[k] in carried]
    if any(starts[k] is None for k in refs):
        return 0, "the index maps of arrays it writes read scalar-prefetch operands, known only at run time"
    squeezed = squeezed or [(False,) * len(shape) for shape in block_shapes]
    per_array = {a: [box for k in refs if array_of[k] == a
                     for box in _touched(k, starts, block_shapes, squeezed, written, accesses)] for a in carried}
    unproven = False
    for p in range(limit, 0, -1):
        points = int(np.prod(grid[:p], dtype=np.int64))
        if points < 2:
            break
        outer = np.arange(steps, dtype=np.int64) // (steps // points)
        found = [conflicts(boxes, outer) if boxes else False for boxes in per_array.values()]
        if not any(found) and None not in found:
            return p, None
        unproven = unproven or (None in found and True not in found)
    if unproven:
        return 0, (f"the parts of an array it writes overlap along every dimension in over {MAX_CANDIDATE_PAIRS} "
                   "pairs: more than insitu compares")
    return 0, "two of its grid's leading points touch one element and at least one writes it"


def _grid_loop(*args, jaxpr, debug, input_output_aliases, grid_mapping, mesh, compiler_params, cost_estimate,
               out_avals, metadata, name, **rest):
    """The pallas_call as a loop over its grid (see the module's text)."""
    from jax._src import core as jax_core
    from jax._src import state
    from jax._src.pallas import core as pallas_core
    from jax._src.pallas import hlo_interpreter

    kernel = _kernel_name({"name": name, "jaxpr": jaxpr})
    if mesh is not None:
        raise UnsupportedKernel(f"{kernel}: mesh kernels (pl.kernel, core_map) are not supported by insitu yet")
    dynamic_sizes, args = args[:grid_mapping.num_dynamic_grid_bounds], args[grid_mapping.num_dynamic_grid_bounds:]
    sizes = iter(dynamic_sizes)
    grid = tuple(next(sizes) if isinstance(d, pallas_core.DynamicGridDim) else d for d in grid_mapping.grid)
    scalar_count = grid_mapping.num_index_operands
    scalars = tuple(s.astype(jnp.int32) if isinstance(s.dtype, jax_core.bint) else s for s in args[:scalar_count])
    inputs = list(args[scalar_count:])
    input_count, output_count = len(inputs), len(out_avals)
    block_shapes, squeezed = _block_dims(grid_mapping, kernel)

    # The refs the kernel writes, by position among [*inputs, *outputs] (its write effects; a
    # ref only read inside a loop still comes back from the discharged body, so effects decide).
    written_vars = {effect.input for effect in jaxpr.effects
                    if isinstance(effect, (state.WriteEffect, state.AccumEffect))}
    ref_vars = jaxpr.invars[scalar_count:scalar_count + input_count + output_count]
    written = [var in written_vars for var in ref_vars]

    # Each block's start at every step, where the index maps can be evaluated before the run.
    shapes = [x.shape for x in inputs] + [tuple(aval.shape) for aval in out_avals]
    padded_shapes = [tuple(-(-size // block) * block for size, block in zip(shape, block_shapes[k]))
                     for k, shape in enumerate(shapes)]
    starts = _block_starts(grid, grid_mapping, padded_shapes, block_shapes)
    # Where the body reads and writes inside refs that are whole arrays (pallas_footprints.py):
    # finer than their blocks for the independence proof, and whether the grid sets every
    # element of such an output without reading it.
    accesses, fills, special = None, [False] * (input_count + output_count), None
    if starts is not None:
        from insitu.pallas_footprints import access_boxes

        ref_shapes = [tuple(size for size, flag in zip(block_shapes[k], squeezed[k]) if not flag)
                      for k in range(input_count + output_count)]
        try:
            accesses, fills, special = access_boxes(
                jaxpr, grid, grid_mapping.vmapped_dims, scalar_count, ref_shapes, len(grid_mapping.scratch_avals))
        except Exception:  # noqa: BLE001 -- a form the walk does not know: whole blocks, as before it
            accesses, fills = [None] * len(ref_shapes), [False] * len(ref_shapes)
        # followed only where the block is the whole array (see _touched)
        whole = [tuple(block_shapes[k]) == tuple(padded_shapes[k]) for k in range(len(ref_shapes))]
        accesses = [found if whole[k] else None for k, found in enumerate(accesses)]
        fills = [fill and whole[k] for k, fill in enumerate(fills)]
    from insitu.pallas_discharge import masked_access_rules

    # Masked loads and stores touch their window, not the whole ref. At a step where the walk
    # above saw every masked slice inside its ref and every mask true at every lane, they are
    # plain slices without masks (the `plain` body); the other steps need the shift a slice past
    # the end takes and the masks (the general body). Where both kinds of steps occur (a ragged
    # grid's last step), a cond picks the body per step.
    if special is None or special.all():
        plain_steps = None  # every step general
    elif not special.any():
        plain_steps = True  # every step plain
    else:
        plain_steps = ~special
    general = plain = None  # (discharged body, its consts)
    if plain_steps is not True:
        with masked_access_rules():
            *general, scratch_avals = hlo_interpreter.kernel_to_hlo_jaxpr(jaxpr, (), grid_mapping)
    if plain_steps is not None:
        with masked_access_rules(in_bounds=True, masks_true=True):
            *plain, scratch_avals = hlo_interpreter.kernel_to_hlo_jaxpr(jaxpr, (), grid_mapping)
    body = (general or plain)[0]  # for the analyses below: the general body reads all the plain one does
    evaluate = _eval_retracing if _reads_grid_in_nested_bodies(body) else jax_core.eval_jaxpr

    def run_body(i, *values):
        if general is None or plain is None:
            return evaluate(*(general or plain), *values)
        return lax.cond(jnp.asarray(plain_steps)[i], lambda *v: list(evaluate(*plain, *v)),
                        lambda *v: list(evaluate(*general, *v)), *values)

    if debug:
        print(f"insitu: the discharged body of {kernel}:\n{body}")
    # An output whose block's old value no result of the kernel body depends on (every step
    # writes the whole block, on every path, and reads none of it first), and whose blocks cover
    # it, starts as memory no one reads; so does a whole-array output the grid sets everywhere
    # without reading it (fills); other outputs start as JAX defines them.
    old_value_read = _inputs_read(body)

    def unread(k):
        return starts is not None and written[k] and (fills[k] or (
            not old_value_read[scalar_count + k] and _covers(starts[k], block_shapes[k], padded_shapes[k])))

    # Arrays: one per input and one per output not aliased to an input (an aliased output is
    # its input's array). array_of[k] for ref k among [*inputs, *outputs].
    aliased_input = {out: inp - scalar_count for inp, out in input_output_aliases}
    arrays = [_padded(x, block_shapes[k]) for k, x in enumerate(inputs)]
    array_of = list(range(input_count))
    for o, aval in enumerate(out_avals):
        k = input_count + o
        if o in aliased_input:
            if arrays[aliased_input[o]].shape != tuple(aval.shape):
                raise UnsupportedKernel(f"{kernel}: output {o} is aliased to input {aliased_input[o]} and its blocks "
                                        "do not tile it (a ragged block of an aliased pair)")
            array_of.append(aliased_input[o])
        else:
            array_of.append(len(arrays))
            arrays.append(_unread_memory(padded_shapes[k], aval.dtype) if unread(k)
                          else _padded(_uninitialized(aval.shape, aval.dtype), block_shapes[k]))
    # An array is carried through the loop when some ref over it is written.
    carried = sorted({array_of[k] for k in range(input_count + output_count) if written[k]})
    scratch = [_uninitialized(a.shape, a.dtype) for a in scratch_avals]
    steps = functools.reduce(lambda a, b: a * b, grid, 1)
    parallel_axes, in_order = _independent_axes(grid, grid_mapping, compiler_params, starts, block_shapes, array_of,
                                                written, carried, bool(scratch), squeezed, accesses)

    def step(i, state_values):
        from jax.experimental.xla_metadata import set_xla_metadata

        with set_xla_metadata(insitu_pallas_kernel=""):  # only the grid loop names the kernel
            return grid_step(i, state_values)

    def grid_step(i, state_values):
        values = dict(zip(carried, state_values[:len(carried)]))
        scratch_values = list(state_values[len(carried):])
        current = [values.get(a, arrays[a]) for a in range(len(arrays))]
        indices, rest_of_i = [], i  # row-major: the last grid axis moves fastest
        for size in reversed(grid):
            indices.append(lax.rem(rest_of_i, jnp.asarray(size, jnp.int32)))
            rest_of_i = lax.div(rest_of_i, jnp.asarray(size, jnp.int32))
        indices = tuple(reversed(indices))
        if grid_mapping.local_grid_env is not None:
            environment = grid_mapping.local_grid_env(indices, grid)
        else:
            environment = tuple(pallas_core.GridAxis(index, size) for d, (index, size) in enumerate(zip(indices, grid))
                                if d not in grid_mapping.vmapped_dims)
        with pallas_core.grid_env(environment):
            starts = [m.compute_start_indices_interpret(indices, *scalars) for m in grid_mapping.block_mappings]
            blocks = [_read_block(current[array_of[k]], starts[k], block_shapes[k], squeezed[k])
                      for k in range(input_count + output_count)]
            results = run_body(i, *scalars, *blocks, *scratch_values)
        new_blocks = results[scalar_count:scalar_count + input_count + output_count]
        new_scratch = results[scalar_count + input_count + output_count:]
        # Write back the written refs' blocks; for an aliased pair written through both refs the
        # input's block wins, as in interpret mode.
        for k in sorted(range(input_count + output_count), key=lambda k: k < input_count):
            if written[k]:
                a = array_of[k]
                current[a] = _write_block(current[a], new_blocks[k], starts[k], block_shapes[k], squeezed[k])
        return tuple(current[a] for a in carried) + tuple(new_scratch)

    # The loop carries the kernel's name, grid and aliases (ir/grid_loop.h): stats' pallas_kernels
    # and explain name it by them.
    from jax.experimental.xla_metadata import set_xla_metadata

    with set_xla_metadata(insitu_pallas_kernel=_short_name({"name": name, "jaxpr": jaxpr}),
                          insitu_pallas_grid="x".join(str(d) if isinstance(d, int) else "?" for d in grid) or "()",
                          insitu_pallas_aliases=",".join(f"{i}->{o}" for i, o in input_output_aliases),
                          insitu_pallas_parallel=str(parallel_axes),
                          **({"insitu_pallas_in_order": in_order} if in_order else {})):
        final = lax.fori_loop(jnp.int32(0), jnp.asarray(steps, jnp.int32), step,
                              tuple(arrays[a] for a in carried) + tuple(scratch))
    values = dict(zip(carried, final[:len(carried)]))
    outputs = []
    for o, aval in enumerate(out_avals):
        value = values.get(array_of[input_count + o], arrays[array_of[input_count + o]])
        if value.shape != tuple(aval.shape):
            value = lax.slice(value, (0,) * value.ndim, tuple(aval.shape))
        outputs.append(value)
    return outputs


def _lowering_rule(ctx, *in_nodes, interpret, **params):
    from jax._src.interpreters import mlir
    from jax._src.pallas import pallas_call

    if interpret:  # interpret= keeps JAX's meaning
        return pallas_call._pallas_call_lowering(ctx, *in_nodes, interpret=interpret, **params)
    if params["jaxpr"].constvars:
        raise UnsupportedKernel(f"{_kernel_name(params)}: a kernel that captures constants cannot be lowered")
    try:
        return mlir.lower_fun(functools.partial(_grid_loop, **params), multiple_results=True)(ctx, *in_nodes)
    except NotImplementedError as error:  # a primitive of the body with no lowering off its own device
        missing = re.search(r"primitive '([^']+)'", str(error))
        what = f"primitive {missing.group(1)}" if missing else "a primitive of its body"
        raise UnsupportedKernel(f"{_kernel_name(params)}: {what} has no CPU form, and insitu does not run it yet "
                                f"({error})") from error


@functools.cache
def lowering_parameters():
    """jax's LoweringParameters with insitu's pallas_call rule: what insitu.jax.jit lowers with."""
    from jax._src.interpreters import mlir
    from jax._src.pallas.pallas_call import pallas_call_p

    return mlir.LoweringParameters(override_lowering_rules=((pallas_call_p, _lowering_rule),))

