"""Random Pallas kernels, each run by insitu and by JAX's interpret mode and compared.

    python python/tests/pallas_generator.py --seeds 0:1000 [--stop-on-failure] [--verbose]
    python python/tests/pallas_generator.py --describe 17

make_case(seed) -> (make_call, args, exact, donate), as test_pallas.py's cases: make_call(interpret)
is the function to jit (insitu.jax.jit(make_call(False), donate_argnums=donate) against
jax.jit(make_call(True))). Seeds are deterministic (numpy default_rng(seed)). A kernel combines:

- a grid of rank 1-3 (size-1 axes included); the last axis is sometimes a reduction axis that no
  output depends on (pl.when zero-init at its first step, accumulate into the output or a VMEM
  scratch, write at its last step);
- operands of rank up to 4: Blocked and squeezed (None) block dimensions, broadcast inputs (size-1
  and missing leading dimensions), inputs stored transposed, ragged grids (pl.cdiv, the last
  block past the array's end) on dimensions every in-bounds output element depends on alone;
- index maps: identity, reversed, transposed (another grid axis), constant, offset by one
  (rotated, clamped, shifted), read from a scalar-prefetch array (PrefetchScalarGridSpec);
- bodies: elementwise jnp expressions (add, sub, mul, max, min, neg, abs, exp, tanh, where on
  comparisons, iota masks, program_id/num_programs and prefetched scalars as values), sum/max
  reductions (keepdims or not, jnp or a fori_loop), jnp.dot of 2-D blocks (f32 accumulation,
  transposed operands, a bias epilogue); written directly, row by row in a fori_loop (with a
  running carry), in two static slices (x_ref[0:h], pl.ds), through a scratch temporary,
  under pl.when branches, or with a step counter in scratch that persists across the grid;
- 1-2 outputs (the second computed from the first: a cast, a comparison, a reduction);
  input_output_aliases with and without donation (partial coverage where aliased);
- f32 mostly, some int32 and bf16 bodies (bf16 dots accumulate in f32), some inputs of another
  dtype;
- jnp code around the call: inputs computed first (the aliased one is then no parameter),
  outputs transformed with the aliased input returned beside them, two calls chained through the
  alias, jax.vmap over the call.

Only kernels whose meaning Pallas defines: every output block is written by one grid step or by
the consecutive steps of the reduction axis, nothing reads an output or scratch before it is
written, blocks past an array's end only feed elements past its end, and an aliased input is
read only at its output's block. Comparison is bit for bit where no rounding can differ (no
transcendental, no sum, no product feeding a sum that XLA may contract into an FMA), else within
a tolerance that grows with the number of terms summed.
"""
from __future__ import annotations

import argparse
import sys

import numpy as np

import jax
import jax.numpy as jnp
from jax import lax
from jax.experimental import pallas as pl
from jax.experimental.pallas import tpu as pltpu

from pallas_generator_kernel import (_BINARY, _COMPARE, _DTYPES, _FLOAT_BINARY, _FLOAT_UNARY, _INEXACT,  # noqa: E402,F401
                                    _INT_BINARY, _INT_UNARY, _MOVING, _OP_CLASS, _PREFIX, _UNARY, BodyDim, CaseKernel,
                                    Dim, Operand)


class Case(CaseKernel):
    """One random kernel, built from its seed."""

    def __init__(self, seed):
        self.seed = seed
        rng = self.rng = np.random.default_rng(seed)
        self.dtype = str(rng.choice(["f32", "i32", "bf16"], p=[0.7, 0.15, 0.15]))
        rank = int(rng.choice([1, 2, 3], p=[0.35, 0.45, 0.2]))
        self.grid = tuple(int(g) for g in rng.choice([1, 2, 3], size=rank, p=[0.25, 0.45, 0.3]))
        self.red = rank - 1 if rng.random() < 0.35 else None
        self.par_axes = [a for a in range(rank) if a != self.red]
        self.prefetch = rng.random() < 0.3
        self.table = [int(v) for v in rng.integers(0, 4, size=3)]  # s[0:3]: values the body reads
        floating = self.dtype != "i32"
        self.kind = str(rng.choice(["elementwise", "reduce", "dot"], p=[0.45, 0.3, 0.25] if floating else [0.55, 0.35, 0.1]))
        self.aliased = rng.random() < 0.3
        self.ops = set()
        self.terms = 1
        self._body_dims()
        self._pattern()
        self._operands()
        self._outputs()
        wraps, weights = ["none", "pre", "post", "vmap"] + (["chain"] if self.aliased else []), [0.6, 0.12, 0.14, 0.1, 0.12]
        self.wrap = str(rng.choice(wraps, p=np.array(weights[:len(wraps)]) / sum(weights[:len(wraps)])))
        self.shared = None  # drawn last: the seeds drawn before it keep their kernels
        if (self.aliased and self.pattern not in ("row_loop", "slices") and rng.random() < 0.4
                and not (self.o2 == "cmp" and "mul" in self.o1_ops)):  # (cmp needs an exact output 0)
            self._shared_input()
        self.exact = [self._exact(o) for o in range(len(self.outputs))]
        self.tolerance = [self._tolerance(o) for o in range(len(self.outputs))]

    # ----- generation -----

    def _block_size(self, choices=(1, 2, 3, 4, 8), p=(0.1, 0.25, 0.15, 0.3, 0.2)):
        return int(self.rng.choice(choices, p=p))

    def _body_dims(self):
        rng = self.rng
        free = list(self.par_axes)
        rng.shuffle(free)

        def driver():
            if free and rng.random() < 0.75:
                return ("par", free.pop())
            return ("whole",)

        self.q = self.K = None
        if self.kind == "dot":
            self.E = [BodyDim(self._block_size((1, 2, 3, 4, 8), (0.1, 0.2, 0.2, 0.25, 0.25)), driver()) for _ in range(2)]
            k_driver = ("red", self.red) if self.red is not None and rng.random() < 0.8 else ("whole",)
            self.K = BodyDim(self._block_size((1, 2, 3, 4, 8, 16), (0.05, 0.2, 0.2, 0.25, 0.2, 0.1)), k_driver)
        else:
            rank = int(rng.choice([1, 2, 3], p=[0.35, 0.5, 0.15]))
            self.E = [BodyDim(self._block_size(), driver()) for _ in range(rank)]
            if self.kind == "reduce":
                self.q = int(rng.integers(rank))
                if self.red is not None and rng.random() < 0.6:
                    self.E[self.q].driver = ("red", self.red)
                self.reduce_op = str(rng.choice(["sum", "max"]))
                self.keepdims = bool(rng.random() < 0.5) or rank == 1 and self.E[self.q].driver[0] != "par"
                self.reduce_method = str(rng.choice(["jnp", "fori"], p=[0.7, 0.3]))
                if self.E[self.q].size == 1 and rng.random() < 0.7:
                    self.E[self.q].size = 4
                self.ops.add(self.reduce_op if self.reduce_op == "sum" else "max")
                if self.reduce_op == "sum":
                    self.terms *= self.E[self.q].size
        while np.prod([d.size for d in self.E]) > 256:
            max(self.E, key=lambda d: d.size).size //= 2
        if not self.aliased:  # ragged blocks of an aliased pair: insitu refuses them by design
            for d, dim in enumerate(self.E):
                if dim.driver[0] == "par" and dim.size >= 2 and d != self.q and rng.random() < 0.25:
                    g = self.grid[dim.driver[1]]
                    dim.ragged_extent = (g - 1) * dim.size + int(rng.integers(1, dim.size))
        self.ragged = any(dim.ragged_extent is not None for dim in self.E)

    def _pattern(self):
        rng = self.rng
        if self.red is not None:
            self.pattern = str(rng.choice(["acc_out", "acc_scratch"], p=[0.6, 0.4]))
            self.acc_op = str(rng.choice(["sum", "max"], p=[0.7, 0.3]))
            self.acc_init = str(rng.choice(["zero", "first"]))  # zero-init, or the first step's value
            self.ops.add("add" if self.acc_op == "sum" else "max")
            if self.acc_op == "sum":
                self.ops.add("sum")
                self.terms *= self.grid[self.red]
            self.post = str(rng.choice(["id", "scale", "tanh"] if self.dtype != "i32" else ["id", "scale"]))
            if self.pattern == "acc_scratch":
                self.ops |= {"id": set(), "scale": {"mul"}, "tanh": {"tanh"}}[self.post]
        else:
            choices, weights = ["direct", "scratch_temp", "step_counter", "branch"], [1, 1, 1, 1]
            if self.kind == "elementwise" and self.E[0].size >= 2:
                choices, weights = choices + ["row_loop", "slices"], weights + [2, 1.5]
            self.pattern = str(rng.choice(choices, p=np.array(weights) / sum(weights)))
            if self.pattern == "row_loop":
                self.cumulative = bool(rng.random() < 0.4)
                if self.cumulative:
                    self.ops.add("add")
            if self.pattern == "slices":
                self.split = int(rng.integers(1, self.E[0].size))
            if self.pattern in ("scratch_temp", "step_counter"):
                self.ops.add("add")
            if self.pattern == "branch":
                self.branch_axis = int(rng.choice(self.par_axes)) if self.par_axes else 0
                self.branch_test = str(rng.choice(["first", "even", "last"]))
        if self.aliased and self.red is None:  # (the reduction patterns accumulate onto it)
            self.combine = str(rng.choice(["add", "max", "blend"]))
            self.ops.add({"add": "add", "max": "max", "blend": "where"}[self.combine])

    def _index(self, axis=None, hows=("id", "rev", "rot", "clamp", "shift", "pref"), p=(0.35, 0.2, 0.15, 0.1, 0.1, 0.1)):
        """An input's index entry over `axis` (or a constant): (blocks along the dim, index)."""
        rng = self.rng
        if axis is None:
            blocks = int(rng.integers(1, 4))
            return blocks, ("const", int(rng.integers(blocks)))
        hows, p = list(hows), np.array(p, float)
        if not self.prefetch:
            p[hows.index("pref")] = 0
        how = str(rng.choice(hows, p=p / p.sum()))
        g = self.grid[axis]
        if how == "shift":
            return g + 1, ("axis", axis, "shift", 1)
        if how == "pref":
            offset = len(self.table)
            self.table += [int(v) for v in rng.integers(0, g, size=g)]
            return g, ("axis", axis, "pref", offset)
        return g, ("axis", axis, how, 0)

    def _input_dim(self, body_dim, present):
        """The array dimension an input holds for one body dimension ("full" or "one")."""
        rng = self.rng
        grid_axes = list(range(len(self.grid)))
        if present == "one":
            axis = int(rng.choice(grid_axes)) if rng.random() < 0.6 else None
            blocks, index = self._index(axis=axis)
            return Dim(1, blocks, index)
        if body_dim.ragged_extent is not None:  # every in-bounds element reads only its own
            return Dim(body_dim.size, body_dim.ragged_extent, ("axis", body_dim.driver[1], "id", 0))
        roll = rng.random()
        if body_dim.driver[0] in ("par", "red") and roll < 0.65:
            axis = body_dim.driver[1]
        elif roll < 0.85:
            axis = int(rng.choice(grid_axes))  # another grid axis: a transposed map
        else:
            axis = None
        blocks, index = self._index(axis=axis)
        return Dim(body_dim.size, blocks * body_dim.size, index)

    def _input(self, name, dtype, ref_dims, allow_broadcast=True, allow_transpose=True):
        rng = self.rng
        present = ["full"] * len(ref_dims)
        if allow_broadcast and rng.random() < 0.35:
            for d in range(len(ref_dims)):
                if ref_dims[d].ragged_extent is None and rng.random() < 0.5:
                    present[d] = "one"
            for d in range(len(ref_dims)):  # leading size-1 dims may be left out (numpy broadcasting)
                if present[d] != "one" or rng.random() < 0.5:
                    break
                present[d] = "absent"
        dims = []
        for body_dim, how in zip(ref_dims, present):
            if how == "absent":
                if rng.random() < 0.5:
                    blocks, index = self._index(axis=int(rng.integers(len(self.grid))) if rng.random() < 0.5 else None)
                    dims.append(Dim(None, blocks, index))
            else:
                dims.append(self._input_dim(body_dim, how))
        transposed = allow_transpose and present == ["full", "full"] and rng.random() < 0.2
        if transposed:
            dims.reverse()
        if rng.random() < 0.25 or not dims:
            extra = self.red if self.red is not None and rng.random() < 0.6 else None
            blocks, index = self._index(axis=extra)
            dims.insert(int(rng.integers(len(dims) + 1)), Dim(None, blocks, index))
        return Operand(name, dtype, dims, present, transposed)

    def _operands(self):
        rng = self.rng
        self.inputs = []
        if self.kind == "dot":
            M, N = self.E
            in_dtype = self.dtype
            self.out_dtype = "i32" if self.dtype == "i32" else "f32"  # the dot's accumulation type
            self.transpose_y = bool(rng.random() < 0.3)
            self.x_pre = str(rng.choice(["none", "tanh", "abs"], p=[0.7, 0.15, 0.15] if self.dtype != "i32" else [0.8, 0, 0.2]))
            self.ops.update({"dot", "sum"})
            self.terms *= self.K.size
            self.inputs.append(self._input("x0", in_dtype, [M, self.K], allow_broadcast=False))
            y = self._input("x1", in_dtype, [self.K, N], allow_broadcast=False, allow_transpose=False)
            if self.transpose_y:  # stored (N, K): the body contracts x with y.T
                y.dims.reverse()
            self.inputs.append(y)
            biases = int(rng.choice([0, 1, 2], p=[0.4, 0.4, 0.2]))
            for b in range(biases):
                self.inputs.append(self._input(f"x{2 + b}", self.out_dtype, self.E))
            self.expr_inputs = list(range(2, 2 + biases))
        else:
            self.out_dtype = self.dtype
            count = int(rng.choice([1, 2, 3, 4], p=[0.3, 0.35, 0.25, 0.1]))
            for i in range(count):  # some inputs of another dtype, converted in the body
                dtype = self.dtype if rng.random() < 0.85 else str(rng.choice(["f32", "i32", "bf16"]))
                self.inputs.append(self._input(f"x{i}", dtype, self.E))
            self.expr_inputs = list(range(count))
        self.expr = self._expression(self.expr_inputs, self.E) if self.expr_inputs or self.kind != "dot" else None
        self.expr2 = self._expression(self.expr_inputs, self.E) if self.pattern in ("slices", "branch") else None

    # expressions: nested tuples, evaluated by _evaluate

    def _leaf(self, inputs, body):
        rng = self.rng
        roll = rng.random()
        if inputs and roll < 0.6:
            return ("in", int(rng.choice(inputs)))
        if roll < 0.75:
            value = rng.choice([0.5, 1.5, -2.0, 3.0, 0.25]) if self._floating() else rng.choice([1, 2, -3, 5])
            return ("const", value.item())
        if roll < 0.85:
            return ("pid" if rng.random() < 0.7 else "nprog", int(rng.integers(len(self.grid))))
        if roll < 0.93 or not self.prefetch:
            d = int(rng.integers(len(body)))
            return ("iota", d, body[d].driver[0] == "par" and rng.random() < 0.5)
        return ("pref", int(rng.integers(3)))

    def _node(self, inputs, body, depth):
        rng = self.rng
        if depth == 0 or rng.random() < 0.25:
            return self._leaf(inputs, body)
        floating = self._floating()
        roll = rng.random()
        if roll < 0.45:
            ops = list(_BINARY) + list(_FLOAT_BINARY if floating else _INT_BINARY)
            op = str(rng.choice(ops, p=self._weights(len(_BINARY), len(ops))))
            self.ops |= _OP_CLASS.get(op, {op})
            return ("bin", op, self._node(inputs, body, depth - 1), self._node(inputs, body, depth - 1))
        if roll < 0.62:
            ops = list(_UNARY) + list(_FLOAT_UNARY if floating else _INT_UNARY)
            op = str(rng.choice(ops))
            self.ops |= _OP_CLASS.get(op, {op})
            return ("un", op, self._node(inputs, body, depth - 1))
        if roll < 0.7:
            ops = list(_PREFIX) + ([] if self.ragged else list(_MOVING))
            op = str(rng.choice(ops))
            self.ops |= _OP_CLASS.get(op, {op})
            return ("move", op, int(rng.integers(len(body))), self._node(inputs, body, depth - 1))
        if roll < 0.88:
            cmp = str(rng.choice(list(_COMPARE)))
            return ("where", cmp, self._leaf(inputs, body), self._leaf(inputs, body),
                    self._node(inputs, body, depth - 1), self._node(inputs, body, depth - 1))
        d = int(rng.integers(len(body)))
        glob = body[d].driver[0] == "par" and rng.random() < 0.6
        limit = int(rng.integers(1, body[d].size * (self.grid[body[d].driver[1]] if glob else 1) + 1))
        return ("mask", d, glob, limit, self._node(inputs, body, depth - 1), self._node(inputs, body, depth - 1))

    def _floating(self):
        return jnp.issubdtype(self._value_dtype(), jnp.floating)

    @staticmethod
    def _weights(common, total):
        """Choice weights: the common ops twice as likely as the rest."""
        weights = np.array([2.0] * common + [1.0] * (total - common))
        return weights / weights.sum()

    def _expression(self, inputs, body):
        node = self._node(inputs, body, int(self.rng.integers(1, 4)))
        used = set()

        def collect(n):
            if n[0] == "in":
                used.add(n[1])
            for child in n[1:]:
                if isinstance(child, tuple):
                    collect(child)

        collect(node)
        for i in inputs:  # every input feeds the value
            if i not in used:
                op = str(self.rng.choice(["add", "max", "sub"]))
                self.ops |= _OP_CLASS.get(op, {op})
                node = ("bin", op, node, ("in", i))
        return node

    def _output_dims(self, value_dims, aliased):
        """Array dims of an output: one per value dim, plus a squeezed dim for each parallel axis
        no value dim moves with; each parallel axis > 1 maps one-to-one onto blocks (onto some of
        them where the output is aliased: the others keep the input's values)."""
        rng = self.rng
        dims = []
        hows = ["id", "rev", "rot"] + (["pref"] if self.prefetch else []) + (["shift"] if aliased else [])

        def entry(axis, block):
            g = self.grid[axis]
            how = str(rng.choice(hows))
            if how == "shift":
                return g + 1, ("axis", axis, "shift", 1)
            if how == "pref":
                offset = len(self.table)
                blocks = g + (int(rng.integers(0, 2)) if aliased else 0)
                self.table += [int(v) for v in rng.choice(blocks, size=g, replace=False)]
                return blocks, ("axis", axis, "pref", offset)
            return g, ("axis", axis, how, 0)

        moved = set()
        for vd in value_dims:
            if vd.driver[0] == "par":
                moved.add(vd.driver[1])
                if vd.ragged_extent is not None:
                    dims.append(Dim(vd.size, vd.ragged_extent, ("axis", vd.driver[1], "id", 0)))
                else:
                    blocks, index = entry(vd.driver[1], vd.size)
                    dims.append(Dim(vd.size, blocks * vd.size, index))
            elif aliased and rng.random() < 0.3:  # a constant block of a bigger aliased array
                blocks = int(rng.integers(2, 4))
                dims.append(Dim(vd.size, blocks * vd.size, ("const", int(rng.integers(blocks)))))
            else:
                dims.append(Dim(vd.size, vd.size, ("const", 0)))
        for axis in self.par_axes:
            if axis not in moved and (self.grid[axis] > 1 or rng.random() < 0.5):
                blocks, index = entry(axis, 1)
                dims.insert(int(rng.integers(len(dims) + 1)), Dim(None, blocks, index))
        if not dims:  # a scalar block of a one-element array
            dims.append(Dim(None, 1, ("const", 0)))
        return dims

    def _shared_input(self):
        """The aliased array passed again as one more input with its own blocks: its reads see
        the array as the call got it, whatever the steps write through the aliased output."""
        rng = self.rng
        z = self.inputs[self.z]
        dims = []
        for dim in z.dims:
            block = dim.block or 1
            blocks = dim.extent // block
            axes = [a for a in range(len(self.grid)) if self.grid[a] == blocks]
            if axes and rng.random() < 0.7:
                axis = int(rng.choice(axes))
                how = str(rng.choice(["id", "rev", "rot", "clamp"]))
                index = ("axis", axis, how, 0)
            else:
                index = ("const", int(rng.integers(blocks)))
            dims.append(Dim(dim.block, dim.extent, index))
        self.shared = len(self.inputs)
        self.inputs.append(Operand("z_again", z.dtype, dims, list(z.present)))
        self.o1_ops.add("add")

    def _reduced(self, value_dims, q, keepdims):
        dim = value_dims[q]
        if keepdims:
            kept = BodyDim(1, dim.driver if dim.driver[0] == "par" else ("whole",))
            return value_dims[:q] + [kept] + value_dims[q + 1:]
        return value_dims[:q] + value_dims[q + 1:]

    def _outputs(self):
        rng = self.rng
        if self.kind == "reduce":
            self.o1_value = self._reduced(self.E, self.q, self.keepdims)
        else:
            self.o1_value = list(self.E)
        o1 = Operand("o0", self.out_dtype, self._output_dims(self.o1_value, self.aliased), ["full"] * len(self.o1_value))
        self.outputs = [o1]
        self.o1_ops = set(self.ops)
        self.z = None
        self.read_z = False  # the old value through the aliased input's ref, not the output's
        if self.aliased:
            self.read_z = self.pattern in ("direct", "scratch_temp", "step_counter", "branch") and rng.random() < 0.5
            self.z = int(rng.integers(len(self.inputs) + 1))
            z = Operand("z", o1.dtype, list(o1.dims), list(o1.present))
            self.inputs.insert(self.z, z)
            self.donate = bool(rng.random() < 0.5)
        self.o2 = None
        if rng.random() < 0.3:
            # (o0 > 0) needs o0's sign exact: a quotient's is, whatever its last bit
            choices = ["affine", "reduce"] + (["cmp"] if self._exact(0, signs=True) else []) + (["cast"] if o1.dtype != "i32" else [])
            self.o2 = str(rng.choice(choices))
            value = list(self.o1_value)
            dtype = o1.dtype
            if self.o2 == "reduce":
                last = value[-1] if value else None
                if not value or last.ragged_extent is not None:
                    self.o2 = "affine"
                else:
                    self.o2_op = str(rng.choice(["sum", "max"]))
                    self.o2_keep = bool(rng.random() < 0.5) or len(value) == 1 and last.driver[0] != "par"
                    value = self._reduced(value, len(value) - 1, self.o2_keep)
            if self.o2 == "cmp":
                dtype = "i32"
            if self.o2 == "cast":
                dtype = "bf16" if o1.dtype == "f32" else "f32"
            self.outputs.append(Operand("o1", dtype, self._output_dims(value, False), ["full"] * len(value)))

    def _exact(self, o, signs=False):
        ops = set(self.o1_ops) - ({"div"} if signs else set())
        dtype = self.outputs[0].dtype if o == 0 else self.outputs[1].dtype
        if o == 1:
            ops |= {"affine": {"abs", "mul", "add"}, "cmp": set(), "cast": set(),
                    "reduce": {getattr(self, "o2_op", "max")}}[self.o2]
        if self.dtype == "i32" and dtype == "i32":
            return True
        if self.dtype == "bf16" or dtype == "bf16":
            return False
        return not ops & _INEXACT and not ("mul" in ops and "add" in ops)

    def _tolerance(self, o):
        terms = self.terms
        if o == 1 and self.o2 == "reduce" and self.o2_op == "sum":
            terms *= self.o1_value[-1].size
        # bf16 roundings where the two may differ: a bf16 body or output, a bf16 tanh before a dot
        low = self.outputs[o].dtype == "bf16" or self.dtype == "bf16" and (self.kind != "dot" or self.x_pre == "tanh"
                                                                           or self.outputs[0].dtype == "bf16")
        return (1e-2 + 4e-3 * terms) if low else (1e-5 + 1e-6 * terms)

    # ----- the kernel -----


# ----- running a case -----

def generate(seed):
    """The Case of a seed (its description, per-output exactness and tolerances)."""
    return Case(seed)


def make_case(seed):
    """(make_call, args, exact, donate) of a seed, as test_pallas.py's _both takes them."""
    case = Case(seed)
    return case.make_call, case.args(), all(case.exact), case.donate_argnums


def compare(expected, actual, exact, tolerance):
    """None when they agree, else a short text: where and by how much they differ."""
    e = np.asarray(expected).astype(np.float64)
    a = np.asarray(actual).astype(np.float64)
    if e.shape != a.shape:
        return f"shape {a.shape} != expected {e.shape}"
    same = (a == e) | (np.isnan(a) & np.isnan(e))
    if not exact:
        scale = max(1.0, float(np.max(np.abs(e[np.isfinite(e)]), initial=0.0)))
        with np.errstate(invalid="ignore"):
            same |= np.isfinite(a) & np.isfinite(e) & (np.abs(a - e) <= tolerance * (scale + np.abs(e)))
    if same.all():
        return None
    bad = np.argwhere(~same)
    first = tuple(int(i) for i in bad[0])
    with np.errstate(invalid="ignore"):
        diff = np.nanmax(np.abs(a - e)[~same]) if np.isfinite(a[~same]).any() else float("nan")
    return (f"{len(bad)}/{e.size} elements differ, max |diff| {diff:.3g}; at {first}: "
            f"insitu {a[first]!r}, interpret {e[first]!r}")


def _short(error):
    text = f"{type(error).__name__}: {error}".strip()
    lines = [line for line in text.splitlines() if line.strip()]
    return " / ".join(lines[:3])[:400]


def run_case(seed):
    """(status, text): status "ok", "mismatch", "insitu-error", "modified-input" or
    "generator-error" (interpret mode itself failed: the generator's fault)."""
    import insitu.jax

    try:
        case = Case(seed)
        args = case.args()
        expected = jax.block_until_ready(jax.jit(case.make_call(True))(*args))
    except Exception as error:  # noqa: BLE001 - reported per seed
        return "generator-error", _short(error)
    try:
        fn = insitu.jax.jit(case.make_call(False), donate_argnums=case.donate_argnums)
        copies = [jnp.array(a) for a in args]  # donation deletes the arguments
        actual = jax.block_until_ready(fn(*copies))
    except Exception as error:  # noqa: BLE001
        return "insitu-error", _short(error)
    problems = []
    outputs = zip(jax.tree_util.tree_leaves(expected), jax.tree_util.tree_leaves(actual), case.exact, case.tolerance)
    for o, (e, a, exact, tolerance) in enumerate(outputs):
        problem = compare(e, a, exact, tolerance)
        if problem:
            problems.append(f"output {o}: {problem}")
    if problems:
        return "mismatch", "; ".join(problems)
    for k, (original, copy) in enumerate(zip(args, copies)):
        if k not in case.donate_argnums and not np.array_equal(np.asarray(original), np.asarray(copy), equal_nan=True):
            return "modified-input", f"argument {k} (not donated) changed"
    kernels = fn.executable(*args).stats.get("pallas_kernels", [])
    return "ok", "parallel" if any(kernel["parallel_axes"] for kernel in kernels) else ""


def seed_main(doc, run_case, describe, argv=None):
    """The command line of a kernel generator (this one and triton_generator.py): --seeds A:B runs
    run_case(seed) -> (status, text) for each and prints a line per failure (describe(seed)) and a
    summary; --describe SEED prints one kernel. Exits 1 when a kernel failed."""
    parser = argparse.ArgumentParser(description=doc.splitlines()[0])
    parser.add_argument("--seeds", help="A:B, the seeds A..B-1")
    parser.add_argument("--describe", type=int, metavar="SEED", help="print the kernel of SEED and exit")
    parser.add_argument("--stop-on-failure", action="store_true")
    parser.add_argument("--verbose", action="store_true", help="a line for every seed, passing ones too")
    options = parser.parse_args(argv)
    if options.describe is not None:
        print(describe(options.describe))
        return 0
    if not options.seeds:
        parser.error("--seeds A:B or --describe SEED")
    start, stop = (int(v) for v in options.seeds.split(":"))
    matched = failed = parallel = skipped = 0
    for seed in range(start, stop):
        status, text = run_case(seed)
        if status == "ok":
            matched += 1
            parallel += text == "parallel"
            skipped += text.startswith("skipped")
            if options.verbose:
                print(f"seed {seed} ok {text}", flush=True)
            continue
        failed += 1
        try:
            description = describe(seed)
        except Exception as error:  # noqa: BLE001
            description = f"seed {seed} (no description: {_short(error)})"
        print(f"FAIL {status}: {description} || {text}", flush=True)
        if options.stop_on_failure:
            break
    refused = f", {skipped} refused by interpret mode" if skipped else ""
    print(f"{matched + failed} kernels, {matched} matched ({parallel} with grid steps on threads{refused}), "
          f"{failed} failed", flush=True)
    return 1 if failed else 0


def main(argv=None):
    return seed_main(__doc__, run_case, lambda seed: Case(seed).describe(), argv)


if __name__ == "__main__":
    sys.exit(main())
