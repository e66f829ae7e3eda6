"""Which elements a Pallas kernel's grid steps touch, for the lowering's independence proof
(pallas.py, _independent_axes).

Two parts:

- :func:`access_boxes`: where the kernel body reads and writes inside its refs at every grid
  step. Each ref access (``x_ref[pl.ds(i * 256, 256)]``, ``o_ref[3] = ...``,
  ``plgpu.load``/``plgpu.store`` with or without a mask, ``ref.at[...]`` views) is a box whose start
  is integer arithmetic on ``pl.program_id``, ``pl.num_programs`` and constants, evaluated here
  for every grid point at once. A kernel whose refs are whole arrays (no BlockSpec, ``pl.ANY``:
  Triton's style) and that touches its own slice of them per step is then proven independent.
  What this does not follow widens the box, never narrows it: a start computed from data, a loop
  counter or a scalar-prefetch operand keeps the whole dimension; a gather index stops the
  narrowing; a ref handed to anything but get/swap/addupdate/masked load/store (an atomic, a DMA,
  a bitcast view) counts as touching all of it; a masked store counts its whole slice as written
  (the discharge writes the old values back where the mask is off); an access under ``pl.when``
  counts at every step. So the boxes always cover what the body may touch. Whether the grid sets
  every element of an output (so that it need not start as interpret mode's NaN) asks the
  opposite, boxes no wider than what is written: only exact boxes of stores count there, a
  masked store where its mask (evaluated over the steps when it is made of iotas, program ids
  and constants, as ``offsets < n`` is) is true.
- :func:`conflicts`: whether two steps of different outer iterations touch a common element where
  either writes, over boxes of any shapes (a sweep along the dimension that leaves the fewest
  candidate pairs).

Where the data goes is what the lowering's state discharge makes of an access: ``x_ref[...]``
indexing clamps a start the way dynamic_slice does, and so does a masked load (it reads the
clamped window and shifts the slice inside it); a masked store writes its slice where it starts,
its lanes past the end dropped (pallas_discharge.py). A negative start is treated as unknown (the
whole dimension), since a static negative index may count from the end. Per step, the walk also
says whether a masked access there is more than a plain slice (`special`: its slice may run past
the end, or its mask may be false somewhere), which picks the body the lowering runs there.
"""
from __future__ import annotations

import numpy as np

MAX_CANDIDATE_PAIRS = 1 << 22  # box pairs overlapping along the sweep dimension compared at most
MAX_VALUE_ELEMENTS = 1 << 22   # a value followed over the grid's steps (a mask: steps x slice) holds at most


class _Ref:
    """A kernel ref the proof follows: number k among [*inputs, *outputs]."""

    def __init__(self, k):
        self.k = k


class _Scratch:
    """A scratch ref (per worker: never shared between steps of different workers)."""


class _Walker:
    """Walks a kernel jaxpr (and the bodies it holds) with integer scalars as arrays over the grid's
    steps (None: not known), recording every access of a followed ref."""

    def __init__(self, indices, grid, axes, ref_shapes):
        self.indices, self.grid, self.axes, self.ref_shapes = indices, grid, axes, ref_shapes
        self.steps = len(indices)
        self.accesses = {}   # k -> [(starts [steps, rank], extent tuple, writes)]
        self.masks = {}      # k -> per access: a masked store's mask [steps, *slice] where known, else None
        self.opaque = set()  # refs counted as touching their whole block
        self.not_only_set = set()  # refs read, or written under a branch, loop or mask, somewhere
        self.nested = 0      # > 0 inside a cond branch or loop body: what runs there may not run
        # per step: a masked load or store there may need more than a plain slice (its slice may
        # run past its ref's end, or its mask may be false somewhere or is not known)
        self.special = np.zeros(self.steps, bool)
        self.lost = False    # a ref of unknown origin was accessed: nothing is proven

    # --- values ---------------------------------------------------------------------------------

    def value(self, v, env):
        from jax._src import core as jax_core

        if isinstance(v, (int, np.integer, bool, np.bool_)):
            return np.full(self.steps, int(v), np.int64)
        if isinstance(v, jax_core.Literal):
            val = np.asarray(v.val)
            if val.shape == () and val.dtype.kind in "iub":
                return np.full(self.steps, int(val), np.int64)
            return None
        return env.get(v)

    def scalar(self, values, outvar):
        """`values` (int64 [steps, *shape]) as `outvar`'s type, or None when it is not an integer or
        bool value of that shape (at most MAX_VALUE_ELEMENTS over the steps) or a value leaves
        its range (the kernel's arithmetic would wrap)."""
        aval = outvar.aval
        shape = tuple(getattr(aval, "shape", (None,)))
        if (values is None or not hasattr(values, "shape") or values.shape != (self.steps, *shape)
                or values.size > MAX_VALUE_ELEMENTS or np.dtype(aval.dtype).kind not in "iub"):
            return None
        dtype = np.dtype(aval.dtype)
        if dtype.kind == "b":
            return (values != 0).astype(np.int64)
        info = np.iinfo(dtype)
        if values.min(initial=0) < info.min or values.max(initial=0) > info.max:
            return None
        return values

    def arithmetic(self, name, params, xs, out):
        """An integer or bool primitive on known values (scalars and the small arrays a mask is
        made of: iota, broadcast_in_dim, elementwise ops), or None. `out`: the result's aval."""
        shape = tuple(getattr(out, "shape", ()))
        if int(np.prod(shape, dtype=np.int64)) * self.steps > MAX_VALUE_ELEMENTS:
            return None
        if name == "iota" and not xs:
            index = np.arange(shape[params["dimension"]], dtype=np.int64)
            index = index.reshape([-1 if d == params["dimension"] else 1 for d in range(len(shape))])
            return np.broadcast_to(index, (self.steps, *shape)).copy()
        if not xs or any(x is None for x in xs):
            return None
        if name == "broadcast_in_dim":
            operand = xs[0]
            dims = params["broadcast_dimensions"]
            placed = [1] * len(shape)
            for i, d in enumerate(dims):
                placed[d] = operand.shape[1 + i]
            return np.broadcast_to(operand.reshape(self.steps, *placed), (self.steps, *shape)).copy()
        # a scalar beside an array broadcasts along the array's dimensions
        xs = [x.reshape(x.shape + (1,) * (1 + len(shape) - x.ndim)) if x.ndim < 1 + len(shape) else x for x in xs]
        a = xs[0]
        b = xs[1] if len(xs) > 1 else None
        with np.errstate(all="ignore"):
            if name == "add":
                return a + b
            if name == "sub":
                return a - b
            if name == "mul":
                return a * b
            if name == "neg":
                return -a
            if name == "max":
                return np.maximum(a, b)
            if name == "min":
                return np.minimum(a, b)
            if name in ("div", "rem"):
                if np.any(b == 0):
                    return None
                quotient = np.sign(a) * np.sign(b) * (np.abs(a) // np.abs(b))  # C's: toward zero
                return quotient if name == "div" else a - b * quotient
            if name == "sign":
                return np.sign(a)
            if name == "abs":
                return np.abs(a)
            if name in ("eq", "ne", "lt", "le", "gt", "ge"):
                return getattr(np, {"eq": "equal", "ne": "not_equal", "lt": "less", "le": "less_equal",
                                    "gt": "greater", "ge": "greater_equal"}[name])(a, b).astype(np.int64)
            if name in ("and", "or", "xor"):
                return getattr(np, f"bitwise_{name}")(a, b)
            if name == "not":  # logical on bools; bitwise on integers is not followed
                return 1 - a if np.dtype(out.dtype).kind == "b" else None
            if name == "select_n":
                if np.any((a < 0) | (a >= len(xs) - 1)):
                    return None
                return np.choose(np.broadcast_to(a, (self.steps, *shape)), [np.broadcast_to(c, (self.steps, *shape))
                                                                             for c in xs[1:]])
            if name == "clamp":
                return np.minimum(np.maximum(xs[1], a), xs[2])
            if name == "convert_element_type":
                return a
        return None

    # --- the walk -------------------------------------------------------------------------------

    def walk(self, jaxpr, env):
        """Walks `jaxpr` with `env` (invars to values); returns its outvars' values."""
        from jax import tree_util
        from jax._src import core as jax_core
        from jax._src.lax import control_flow
        from jax._src.pallas import primitives as pallas
        from jax._src.pjit import jit_p
        from jax._src.state import primitives as state

        for eqn in jaxpr.eqns:
            p, params, invars = eqn.primitive, eqn.params, eqn.invars
            outs = [None] * len(eqn.outvars)
            if p is pallas.program_id_p or p is pallas.num_programs_p:
                axis = params["axis"]
                if axis < len(self.axes):
                    d = self.axes[axis]
                    outs = [self.indices[:, d].copy() if p is pallas.program_id_p
                            else np.full(self.steps, self.grid[d], np.int64)]
            elif p is state.get_p:
                self.access(env.get(invars[0]), tree_util.tree_unflatten(params["tree"], invars[1:]), False, env)
            elif p is state.swap_p or p is state.addupdate_p:
                self.access(env.get(invars[0]), tree_util.tree_unflatten(params["tree"], invars[2:]), True, env,
                            sets=p is state.swap_p)
            elif p is pallas.load_p or p is pallas.swap_p:
                args = tree_util.tree_unflatten(params["args_tree"], invars)
                given = args[3] if p is pallas.swap_p else args[2]
                if given is not None:
                    known = self.value(given, env)
                    if known is None or known.shape[0] != self.steps:
                        self.special[:] = True
                    else:
                        self.special |= ~np.all(known.reshape(self.steps, -1) != 0, axis=1)
                mask = None
                if p is pallas.swap_p and args[3] is not None:
                    mask = self.value(args[3], env)
                    mask = False if mask is None else mask  # False: a mask this cannot evaluate
                self.access(env.get(args[0]), args[1], p is pallas.swap_p, env,
                            sets=p is pallas.swap_p and mask is not False, masked_access=True,
                            mask=None if mask is False else mask, unclamped=p is pallas.swap_p)
            elif p is control_flow.cond_p:
                operands = [self.passed(v, env) for v in invars[1:]]
                self.nested += 1
                for branch in params["branches"]:
                    self.walk(branch.jaxpr, dict(zip(branch.jaxpr.invars, operands)))
                self.nested -= 1
            elif p is control_flow.while_p:
                cn, bn = params["cond_nconsts"], params["body_nconsts"]
                values = [self.passed(v, env) for v in invars]
                self.nested += 1
                self.walk(params["cond_jaxpr"].jaxpr, dict(zip(params["cond_jaxpr"].jaxpr.invars, values[:cn])))
                self.walk(params["body_jaxpr"].jaxpr, dict(zip(params["body_jaxpr"].jaxpr.invars, values[cn:cn + bn])))
                self.nested -= 1
            elif p is control_flow.scan_p:
                if "ft_in" in params:  # jax 0.12: the (consts, carry, xs) trees of the operands
                    consts_tree = params["ft_in"].unpack()[0]
                    nc = len(list(consts_tree.vals))
                else:
                    nc = params["num_consts"]
                body = params["jaxpr"].jaxpr
                self.nested += 1
                self.walk(body, dict(zip(body.invars, [self.passed(v, env) for v in invars[:nc]])))
                self.nested -= 1
            elif p is jit_p:
                body = params["jaxpr"].jaxpr
                outs = self.walk(body, dict(zip(body.invars, [self.passed(v, env) for v in invars])))
            else:
                values = [self.passed(v, env) for v in invars]
                refs = [x for x in values if isinstance(x, (_Ref, _Scratch))]
                for ref in refs:  # a ref handed to anything else (its bodies see refs only this way)
                    if isinstance(ref, _Ref):
                        self.opaque.add(ref.k)
                if not refs and len(eqn.outvars) == 1 and not any(True for _ in jax_core.jaxprs_in_params(params)):
                    outs = [self.arithmetic(p.name, params, values, eqn.outvars[0].aval)]
            for v, value in zip(eqn.outvars, outs):
                if not isinstance(v, jax_core.DropVar):
                    env[v] = value if isinstance(value, (_Ref, _Scratch)) else self.scalar(value, v)
        return [env.get(v) if isinstance(v, jax_core.Var) else self.value(v, env) for v in jaxpr.outvars]

    def passed(self, v, env):
        """What an operand holds: a ref as itself, a scalar's values (None: not known)."""
        from jax._src import core as jax_core

        held = env.get(v) if isinstance(v, jax_core.Var) else None
        return held if isinstance(held, (_Ref, _Scratch)) else self.value(v, env)

    def access(self, ref, transforms, writes, env, sets=False, masked_access=False, mask=None, unclamped=False):
        """Records an access of `ref`. `sets`: it writes every element of its box inside the ref
        (where `mask`, [steps, *slice], is true) without reading any (a store, not an
        accumulation). `masked_access`: a masked load or store (pallas_discharge.py), whose
        steps are special where its slice runs past the end."""
        if isinstance(ref, _Scratch) or not isinstance(ref, _Ref):
            if masked_access:
                self.special[:] = True  # (scratch refs are not followed)
            if not isinstance(ref, _Scratch):
                self.lost = True
            return
        box = self.box(self.ref_shapes[ref.k], transforms, env, unclamped)
        if masked_access:
            if box is None or box[4]:
                self.special[:] = True
            else:
                self.special |= box[2]
        # what sets its box only: not a widened box (a superset), nor a masked store moved back
        if not sets or self.nested or box is None or not box[3]:
            self.not_only_set.add(ref.k)
        if box is None:
            self.opaque.add(ref.k)
            return
        self.accesses.setdefault(ref.k, []).append((box[0], box[1], writes))
        self.masks.setdefault(ref.k, []).append(mask)

    def box(self, shape, transforms, env, unclamped=False):
        """(starts [steps, rank], extent, moved, exact, unknown) of an access through `transforms`
        on a ref of `shape` (moved [steps]: the step's slice was moved back to fit; exact: the box is what
        the access touches, not a wider one; unknown: some start was not followed, so whether it
        was moved is not known), or None for a transform this does not follow. `unclamped`: the
        last indexer's slices stay where they start, past the end too (a masked store writes only
        its in-bounds lanes there: pallas_discharge.py)."""
        from jax._src.state.indexing import NDIndexer, Slice

        rank = len(shape)
        starts = np.zeros((self.steps, rank), np.int64)
        extent = list(shape)
        view = list(range(rank))  # the current view's dimensions: the ref dimension each narrows, or None
        moved, exact, unknown = np.zeros(self.steps, bool), True, False
        transforms = tuple(transforms)
        for level, transform in enumerate(transforms):
            stays = unclamped and level == len(transforms) - 1
            if not isinstance(transform, NDIndexer) or len(transform.indices) != len(view):
                return None
            narrowed = []
            for j, index in enumerate(transform.indices):
                d = view[j]
                if isinstance(index, Slice):
                    size, stride = index.size, index.stride
                    start = self.value(index.start, env)
                    span = (size - 1) * stride + 1 if isinstance(size, int) and size > 0 else None
                    if (d is None or span is None or not isinstance(stride, int) or stride < 1 or start is None
                            or span > extent[d] or np.any(start < 0)):
                        narrowed.append(None)  # not followed: the interval so far stands
                        unknown = True
                        exact = exact and isinstance(size, int) and span == extent[d] if d is not None else False
                        continue
                    moved = moved | (start > extent[d] - span)
                    starts[:, d] += start if stays else np.minimum(start, extent[d] - span)
                    extent[d] = span
                    exact = exact and stride == 1
                    narrowed.append(d if stride == 1 else None)
                elif _is_scalar(index):
                    at = self.value(index, env)  # an integer index: the dimension goes
                    if d is not None and at is not None and not np.any(at < 0):
                        moved = moved | (at > extent[d] - 1)
                        starts[:, d] += np.minimum(at, extent[d] - 1)
                        extent[d] = 1
                    else:
                        exact, unknown = False, True
                else:  # a gather index: numpy's rules move dimensions; stop narrowing here
                    return starts, tuple(extent), moved, False, True
            view = narrowed
        return starts, tuple(extent), moved, exact, unknown


def _is_scalar(index):
    """Whether an indexer entry that is not a Slice is one integer (else a gather's array)."""
    if isinstance(index, (int, np.integer)):
        return True
    aval = getattr(index, "aval", None)
    return aval is not None and tuple(aval.shape) == ()


def access_boxes(jaxpr, grid, vmapped_dims, scalar_count, ref_shapes, scratch_count):
    """(boxes, fills, special). boxes: per ref k among the kernel's [*inputs, *outputs] refs (after
    `scalar_count` scalar-prefetch operands; `ref_shapes` as the kernel sees them, squeezed
    dimensions gone), a list of (starts [steps, rank], extent, writes), one per access (steps
    row-major over `grid`), or None where the ref is used in a way this does not follow; None for
    every ref when an access cannot be traced to its ref. fills: per ref, whether the grid
    writes every element of it and nothing reads it (every access an unmasked store outside any
    branch or loop, their boxes together covering the ref): its initial value is never seen.
    special: per step (bool [steps]), whether a masked load or store there needs more than a
    plain slice of its ref: its slice may run past the end (moved back, or a start this does not
    know) or its mask may be false at some lane (or is not known). Where a step is not special,
    its masked accesses are plain slices and their masks may be dropped."""
    steps = int(np.prod(grid, dtype=np.int64)) if grid else 1
    indices = np.indices(grid).reshape(len(grid), -1).T.astype(np.int64) if grid else np.zeros((1, 0), np.int64)
    walker = _Walker(indices, tuple(grid), [d for d in range(len(grid)) if d not in vmapped_dims], ref_shapes)
    refs = len(ref_shapes)
    env = {v: _Ref(k) for k, v in enumerate(jaxpr.invars[scalar_count:scalar_count + refs])}
    env.update({v: _Scratch() for v in jaxpr.invars[scalar_count + refs:scalar_count + refs + scratch_count]})
    walker.walk(jaxpr, env)
    if walker.lost or steps != len(indices):
        return [None] * refs, [False] * refs, np.ones(max(steps, 1), bool)
    boxes = [None if k in walker.opaque else walker.accesses.get(k, []) for k in range(refs)]
    fills = [found is not None and k not in walker.not_only_set and _covers(found, walker.masks.get(k, []), ref_shapes[k])
             for k, found in enumerate(boxes)]
    return boxes, fills, walker.special


def _covers(boxes, masks, shape, limit=1 << 26):
    """Whether `boxes` (clipped to `shape`), each where its mask ([steps, *slice] or None: all of
    it) is true, cover every element of it; False past `limit` elements."""
    size = int(np.prod(shape, dtype=np.int64))
    if not boxes or size > limit:
        return False
    seen = np.zeros(shape, bool)
    for (starts, extent, _), mask in zip(boxes, masks):
        if mask is None:
            for lo in np.unique(starts, axis=0):
                seen[tuple(slice(max(int(a), 0), max(int(a) + int(e), 0)) for a, e in zip(lo, extent))] = True
            continue
        rank = len(extent)
        if mask.size != len(starts) * int(np.prod(extent, dtype=np.int64)):
            return False
        mask = mask.reshape(len(starts), *extent) != 0
        # every step's set elements at once: per dimension, start + offset over [steps, *extent];
        # a masked store's lanes past the end are dropped (pallas_discharge.py)
        where = [np.broadcast_to(starts[(slice(None), d) + (None,) * rank]
                                 + np.arange(extent[d]).reshape([-1 if e == d else 1 for e in range(rank)]),
                                 mask.shape)[mask] for d in range(rank)]
        if rank == 0:  # one element, set where some step's mask is true
            seen[()] |= bool(mask.any())
            continue
        inside = np.ones(len(where[0]), bool)
        for d in range(rank):
            inside &= (where[d] >= 0) & (where[d] < shape[d])
        seen[tuple(w[inside] for w in where)] = True
    return bool(seen.all())


def conflicts(boxes, outer, max_pairs=MAX_CANDIDATE_PAIRS):
    """Whether two steps of different outer iterations touch a common element where at least one
    of them writes. `boxes`: (starts [steps, rank], extent (rank,), writes) in one array's
    coordinates; `outer` [steps]: each step's outer iteration. None when more than `max_pairs`
    pairs of boxes overlap along the best sweep dimension (not proven either way)."""
    rank = boxes[0][0].shape[1]
    rows = np.unique(np.concatenate([
        np.concatenate([starts, np.broadcast_to(np.asarray(extent, np.int64), starts.shape),
                        np.full((len(starts), 1), int(writes)), outer[:, None]], axis=1)
        for starts, extent, writes in boxes]), axis=0)
    lo, extent, writes, point = rows[:, :rank], rows[:, rank:2 * rank], rows[:, 2 * rank] == 1, rows[:, -1]
    keep = np.all(extent > 0, axis=1)
    lo, extent, writes, point = lo[keep], extent[keep], writes[keep], point[keep]
    if not np.any(writes) or len(np.unique(point)) < 2:
        return False
    if rank == 0:  # one element: every access touches it
        return True
    hi = lo + extent
    best = None
    for d in range(rank):  # the dimension along which the fewest pairs overlap
        order = np.argsort(lo[:, d], kind="stable")
        ends = np.searchsorted(lo[order, d], hi[order, d], side="left")
        counts = np.maximum(ends - np.arange(len(order)) - 1, 0)
        total = int(counts.sum())
        if best is None or total < best[0]:
            best = (total, order, counts)
    total, order, counts = best
    if total > max_pairs:
        return None
    if total == 0:
        return False
    first = np.repeat(np.arange(len(order)), counts)
    second = first + 1 + np.arange(total) - np.repeat(np.cumsum(counts) - counts, counts)
    i, j = order[first], order[second]
    overlap = np.all((lo[i] < hi[j]) & (lo[j] < hi[i]), axis=1)
    return bool(np.any(overlap & (point[i] != point[j]) & (writes[i] | writes[j])))
