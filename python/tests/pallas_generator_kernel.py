"""The kernel half of pallas_generator.py: the op tables its random bodies draw from, what a case
is made of (BodyDim, Dim, Operand), and CaseKernel, which turns a Case's random choices
(pallas_generator.Case) into the kernel body, its index maps, block specs and scratch, the
pallas_call (wrapped in jnp code or vmap as chosen) and the one-line description `--describe`
prints."""
import dataclasses

import numpy as np

import jax
import jax.numpy as jnp
from jax import lax
from jax.experimental import pallas as pl
from jax.experimental.pallas import tpu as pltpu

_DTYPES = {"f32": jnp.float32, "i32": jnp.int32, "bf16": jnp.bfloat16}
_COMPARE = {"<": jnp.less, ">": jnp.greater, "<=": jnp.less_equal, "!=": jnp.not_equal}
_BINARY = {"add": jnp.add, "sub": jnp.subtract, "mul": jnp.multiply, "max": jnp.maximum, "min": jnp.minimum}
_FLOAT_BINARY = {"div": lambda a, b: a / (jnp.abs(b) + 1)}
_INT_BINARY = {"and": jnp.bitwise_and, "or": jnp.bitwise_or, "xor": jnp.bitwise_xor}
_UNARY = {"neg": jnp.negative, "abs": jnp.abs}
_FLOAT_UNARY = {"exp": jnp.exp, "tanh": jnp.tanh, "sqrt": lambda a: jnp.sqrt(jnp.abs(a)),
                "log1p": lambda a: jnp.log1p(jnp.abs(a)), "floor": jnp.floor, "sign": jnp.sign,
                "via_bf16": lambda a: jnp.asarray(a).astype(jnp.bfloat16).astype(jnp.asarray(a).dtype),
                "via_i32": lambda a: _via_i32(jnp.asarray(a))}
def _via_i32(a):  # (a float too big for int32, or NaN, converts differently on each side: 0 instead)
    return jnp.where(jnp.abs(a) < 1e6, a, 0).astype(jnp.int32).astype(a.dtype)


_INT_UNARY = {"floordiv2": lambda a: a // 2, "mod3": lambda a: a % 3, "shl1": lambda a: jnp.left_shift(a, 1)}
# ops on the whole value along a body dim d: they move elements, so not where a dim is ragged
# (cumsum and cummax only read earlier elements: fine there too)
_MOVING = {"flip": lambda v, d: jnp.flip(v, d), "roll": lambda v, d: jnp.roll(v, 1, d),
           "revflat": lambda v, d: v.reshape(-1)[::-1].reshape(v.shape)}
_PREFIX = {"cumsum": lambda v, d: jnp.cumsum(v, axis=d, dtype=v.dtype), "cummax": lambda v, d: lax.cummax(v, axis=d)}
# what an op means for exactness: a transcendental or a sum may round differently; a product
# feeding a sum may be contracted into an FMA by XLA; XLA:CPU divides by a constant or broadcast
# divisor as a product with its reciprocal (insitu's quotient is the correctly rounded one)
_OP_CLASS = {"sub": {"add"}, "div": {"div", "add"}, "log1p": {"exp"}, "cumsum": {"sum"}, "cummax": {"max"}}
_INEXACT = {"exp", "tanh", "sum", "dot", "div"}


def _all(tests):
    result = tests[0]
    for test in tests[1:]:
        result = jnp.logical_and(result, test)
    return result


# ----- what a case is made of (pallas_generator.Case builds them) -----

@dataclasses.dataclass
class BodyDim:
    """A dimension of the body's value: its block size, what moves its block (a parallel grid
    axis ("par", a), the reduction axis ("red", a) or nothing ("whole",)) and, where the grid is
    ragged along it, the array's extent."""
    size: int
    driver: tuple
    ragged_extent: int | None = None


@dataclasses.dataclass
class Dim:
    """One array dimension of an operand: block size (None: squeezed), extent, index map entry
    ("const", c) or ("axis", a, how, offset) with how in id, rev, rot, clamp, shift, pref."""
    block: int | None
    extent: int
    index: tuple


@dataclasses.dataclass
class Operand:
    name: str
    dtype: str
    dims: list               # Dim per array dimension
    present: list            # per reference body dim: "full", "one" (size 1) or "absent" (leading)
    transposed: bool = False  # the two value dimensions are stored swapped (read back with .T)

    @property
    def shape(self):
        return tuple(d.extent for d in self.dims)


class CaseKernel:
    """Methods of pallas_generator.Case that build and describe its kernel from its choices."""

    def _value_dtype(self):
        return _DTYPES[self.out_dtype] if self.kind == "dot" else _DTYPES[self.dtype]

    def _read(self, refs, i, rows):
        """Input i's value for the body (rows: an index on body dim 0, or None for the block)."""
        operand, ref = self.inputs[i], refs[i]
        ndim = sum(d.block is not None for d in operand.dims)
        index = [slice(None)] * ndim
        if rows is not None and operand.present[0] == "full":
            index[ndim - 1 if operand.transposed else 0] = rows
        value = ref[tuple(index)] if ndim else ref[...]
        return value.T if operand.transposed else value

    def _evaluate(self, node, env):
        kind = node[0]
        dtype = env["dtype"]
        if kind == "in":
            return self._read(env["refs"], self._input_at(node[1]), env["rows"]).astype(dtype)
        if kind == "const":
            return node[1]
        if kind == "pid":
            return env["pids"][node[1]].astype(dtype)
        if kind == "nprog":
            return jnp.full((), pl.num_programs(node[1]), dtype)
        if kind == "pref":
            return env["s"][node[1]].astype(dtype)
        if kind in ("iota", "mask"):
            d, glob = node[1], node[2]
            index = lax.broadcasted_iota(jnp.int32, env["shape"], d)
            if d == 0:
                index = index + env["row0"]
            if glob:
                index = index + env["pids"][self.E[d].driver[1]] * self.E[d].size
            if kind == "iota":
                return index.astype(dtype)
            return jnp.where(index < node[3], self._evaluate(node[4], env), self._evaluate(node[5], env))
        if kind == "un":
            return {**_UNARY, **_FLOAT_UNARY, **_INT_UNARY}[node[1]](self._evaluate(node[2], env))
        if kind == "bin":
            op = {**_BINARY, **_FLOAT_BINARY, **_INT_BINARY}[node[1]]
            return op(self._evaluate(node[2], env), self._evaluate(node[3], env))
        if kind == "move":
            value = jnp.broadcast_to(jnp.asarray(self._evaluate(node[3], env), dtype), env["shape"])
            return {**_MOVING, **_PREFIX}[node[1]](value, node[2])
        if kind == "where":
            test = _COMPARE[node[1]](self._evaluate(node[2], env), self._evaluate(node[3], env))
            return jnp.where(test, self._evaluate(node[4], env), self._evaluate(node[5], env))
        raise AssertionError(node)

    def _input_at(self, i):
        """Position among the kernel's input refs of generated input i (the aliased z shifts)."""
        return i + (1 if self.z is not None and i >= self.z else 0)

    def _value(self, node, refs, s, shape, rows=None, row0=0):
        env = {"refs": refs, "s": s, "shape": shape, "rows": rows, "row0": row0, "dtype": self._value_dtype(),
               "pids": self._pids}
        return jnp.broadcast_to(jnp.asarray(self._evaluate(node, env), env["dtype"]), shape)

    def _reduce(self, value, axis, op, keepdims, method):
        if method == "jnp":
            return (jnp.sum if op == "sum" else jnp.max)(value, axis=axis, keepdims=keepdims)
        combine = jnp.add if op == "sum" else jnp.maximum

        def step(j, carry):
            return combine(carry, lax.dynamic_slice_in_dim(value, j, 1, axis))

        result = lax.fori_loop(1, value.shape[axis], step, lax.slice_in_dim(value, 0, 1, axis=axis))
        return result if keepdims else jnp.squeeze(result, axis)

    def _contribution(self, refs, s, expr=None, rows=None, row0=0, shape=None):
        """The body's value for output 0 (before any accumulation), in the body's dtype."""
        value = self._body_value(refs, s, expr, rows, row0, shape)
        if self.shared is not None:
            value = value + refs[self.shared][...].astype(value.dtype)
        return value

    def _body_value(self, refs, s, expr, rows, row0, shape):
        shape = shape or tuple(d.size for d in self.E)
        if self.kind == "dot":
            x = self._read(refs, self._input_at(0), None)
            x = {"none": x, "tanh": jnp.tanh(x), "abs": jnp.abs(x)}[self.x_pre]
            y = self._read(refs, self._input_at(1), None)
            value = jnp.dot(x, y.T if self.transpose_y else y, preferred_element_type=self._value_dtype())
            if self.expr is not None:
                value = value + self._value(self.expr, refs, s, shape)
            return value
        value = self._value(expr or self.expr, refs, s, shape, rows, row0)
        if self.kind == "reduce":
            value = self._reduce(value, self.q, self.reduce_op, self.keepdims, self.reduce_method)
        return value

    def _combine(self, old, new):
        if self.combine == "add":
            return old + new
        if self.combine == "max":
            return jnp.maximum(old, new)
        return jnp.where(new > 0, old, new)

    def _second(self, o1):
        """Output 1 from output 0's value."""
        dtype = _DTYPES[self.outputs[1].dtype]
        if self.o2 == "affine":
            return (jnp.abs(o1) * 2 - 1).astype(dtype)
        if self.o2 == "cmp":
            return (o1 > 0).astype(dtype)
        if self.o2 == "cast":
            return o1.astype(dtype)
        axis = o1.ndim - 1
        return self._reduce(o1, axis, self.o2_op, self.o2_keep, "jnp").astype(dtype)

    def kernel(self, *refs):
        # program_id inside a pl.when or fori_loop body fails in JAX's interpret mode (and so in
        # insitu, which discharges the kernel the same way): the ids are read once, up here.
        self._pids = [pl.program_id(a) for a in range(len(self.grid))]
        s = refs[0] if self.prefetch else None
        refs = refs[1:] if self.prefetch else refs
        count = len(self.inputs)
        in_refs, out_refs, scratch = refs[:count], refs[count:count + len(self.outputs)], refs[count + len(self.outputs):]
        o1_ref = out_refs[0]
        o1_dtype = _DTYPES[self.outputs[0].dtype]
        write_second = None if self.o2 is None else (lambda value: out_refs[1].__setitem__(Ellipsis, self._second(value)))

        if self.red is not None:
            r = self.red
            first, last = pl.program_id(r) == 0, pl.program_id(r) == pl.num_programs(r) - 1
            combine = jnp.add if self.acc_op == "sum" else jnp.maximum
            acc = o1_ref if self.pattern == "acc_out" else scratch[0]
            zero = 0 if self.acc_op == "sum" else (jnp.iinfo(jnp.int32).min if acc.dtype == jnp.int32 else -jnp.inf)
            contribution = self._contribution(in_refs, s).astype(acc.dtype)

            if self.aliased:  # accumulate onto the aliased output's values
                if self.pattern == "acc_scratch":
                    @pl.when(first)
                    def _():
                        acc[...] = o1_ref[...].astype(acc.dtype)
                acc[...] = combine(acc[...], contribution)
            elif self.acc_init == "zero":
                @pl.when(first)
                def _():
                    acc[...] = jnp.full(acc.shape, zero, acc.dtype)
                acc[...] = combine(acc[...], contribution)
            else:
                @pl.when(first)
                def _():
                    acc[...] = contribution

                @pl.when(jnp.logical_not(first))
                def _():
                    acc[...] = combine(acc[...], contribution)

            @pl.when(last)
            def _():
                if self.pattern == "acc_scratch":
                    value = acc[...]
                    value = {"id": value, "scale": value * 2, "tanh": jnp.tanh(value.astype(jnp.float32))}[self.post]
                    o1_ref[...] = value.astype(o1_dtype)
                if write_second:
                    write_second(o1_ref[...])
            return

        def finish(value):
            if self.aliased:
                old = (in_refs[self.z] if self.read_z else o1_ref)[...]
                value = self._combine(old, value.astype(o1_dtype))
            o1_ref[...] = value.astype(o1_dtype)

        if self.pattern == "direct":
            finish(self._contribution(in_refs, s))
        elif self.pattern == "scratch_temp":
            scratch[0][...] = self._contribution(in_refs, s)
            finish(scratch[0][...] + 1)
        elif self.pattern == "step_counter":
            first = _all([pl.program_id(a) == 0 for a in range(len(self.grid))])

            @pl.when(first)
            def _():
                scratch[0][...] = jnp.zeros(scratch[0].shape, scratch[0].dtype)

            scratch[0][...] = scratch[0][...] + 1
            finish(self._contribution(in_refs, s) + scratch[0][0].astype(self._value_dtype()))
        elif self.pattern == "branch":
            pid = pl.program_id(self.branch_axis)
            test = {"first": pid == 0, "even": pid % 2 == 0, "last": pid == pl.num_programs(self.branch_axis) - 1}[self.branch_test]

            @pl.when(test)
            def _():
                finish(self._contribution(in_refs, s))

            @pl.when(jnp.logical_not(test))
            def _():
                finish(self._contribution(in_refs, s, expr=self.expr2))
        elif self.pattern == "row_loop":
            rows_shape = (1,) + tuple(d.size for d in self.E[1:])

            def row(j, carry):
                value = self._contribution(in_refs, s, rows=pl.ds(j, 1), row0=j, shape=rows_shape)
                if self.cumulative:
                    value = value + carry
                    carry = value
                if self.aliased:
                    value = self._combine(o1_ref[pl.ds(j, 1)], value.astype(o1_dtype))
                o1_ref[pl.ds(j, 1)] = value.astype(o1_dtype)
                return carry

            lax.fori_loop(0, self.E[0].size, row, jnp.zeros(rows_shape, self._value_dtype()))
        elif self.pattern == "slices":
            h, n = self.split, self.E[0].size
            rest = tuple(d.size for d in self.E[1:])
            top = self._contribution(in_refs, s, rows=slice(0, h), row0=0, shape=(h,) + rest)
            bottom = self._contribution(in_refs, s, expr=self.expr2, rows=pl.ds(h, n - h), row0=h, shape=(n - h,) + rest)
            if self.aliased:
                top = self._combine(o1_ref[0:h], top.astype(o1_dtype))
            o1_ref[0:h] = top.astype(o1_dtype)
            o1_ref[pl.ds(h, n - h)] = bottom.astype(o1_dtype)
        if write_second:
            write_second(o1_ref[...])

    # ----- the pallas_call -----

    def _index_map(self, operand):
        grid_rank = len(self.grid)

        def index_map(*ids):
            s = ids[grid_rank] if self.prefetch else None
            out = []
            for dim in operand.dims:
                if dim.index[0] == "const":
                    out.append(dim.index[1])
                    continue
                _, axis, how, offset = dim.index
                i, g = ids[axis], self.grid[axis]
                out.append({"id": lambda: i, "rev": lambda: g - 1 - i, "rot": lambda: (i + 1) % g,
                            "clamp": lambda: jnp.minimum(i + 1, g - 1), "shift": lambda: i + offset,
                            "pref": lambda: s[offset + i]}[how]())
            return tuple(out)

        return index_map

    def _spec(self, operand):
        return pl.BlockSpec(tuple(d.block for d in operand.dims), self._index_map(operand))

    def _scratch_shapes(self):
        if self.pattern == "acc_scratch":
            dtype = jnp.int32 if self.dtype == "i32" else jnp.float32
            return [pltpu.VMEM(tuple(d.size for d in self.o1_value), dtype)]
        if self.pattern == "scratch_temp":
            return [pltpu.VMEM(tuple(d.size for d in self.o1_value), self._value_dtype())]
        if self.pattern == "step_counter":
            return [pltpu.VMEM((1,), jnp.int32 if self.dtype == "i32" else jnp.float32)]
        return []

    def make_call(self, interpret):
        """The function to jit: the pallas_call, maybe with jnp code around it (self.wrap)."""
        call = self._pallas_call(interpret)
        first = int(self.prefetch)  # the prefetch table is never transformed or batched
        if self.wrap == "pre":  # inputs computed in jnp: the aliased one is no parameter
            def wrapped(*args):
                return call(*args[:first], *((-a if k % 2 else jnp.flip(a, 0)) for k, a in enumerate(args[first:])))
        elif self.wrap == "post":  # outputs transformed, and an input the kernel aliases returned beside them
            def wrapped(*args):
                outputs = call(*args)
                kept = [k for k in range(first, len(args)) if k not in self.donate_argnums]
                kept.sort(key=lambda k: k != first + (self.z if self.z is not None else -1))  # the aliased one first
                return jax.tree_util.tree_map(lambda o: o * 2, outputs), args[kept[0]] if kept else None
        elif self.wrap == "chain":  # the first call's output is the second's aliased input
            def wrapped(*args):
                outputs = call(*args)
                o0 = jax.tree_util.tree_leaves(outputs)[0]
                z = first + self.z
                return call(*args[:z], o0, *args[z + 1:])
        elif self.wrap == "vmap":
            wrapped = jax.vmap(call, in_axes=(None,) * first + (0,) * len(self.inputs[:self.shared]))
        else:
            wrapped = call
        return wrapped

    def _pallas_call(self, interpret):
        out_shape = [jax.ShapeDtypeStruct(o.shape, _DTYPES[o.dtype]) for o in self.outputs]
        in_specs = [self._spec(o) for o in self.inputs]
        out_specs = [self._spec(o) for o in self.outputs]
        if len(self.outputs) == 1 and self.seed % 2:
            out_shape, out_specs = out_shape[0], out_specs[0]
        aliases = {} if self.z is None else {self.z + int(self.prefetch): 0}

        def call(*args):
            if self.shared is not None:
                args = args + (args[self.z + int(self.prefetch)],)
            if self.prefetch:
                spec = pltpu.PrefetchScalarGridSpec(num_scalar_prefetch=1, grid=self.grid, in_specs=in_specs,
                                                    out_specs=out_specs, scratch_shapes=self._scratch_shapes())
                return pl.pallas_call(self.kernel, out_shape=out_shape, grid_spec=spec, input_output_aliases=aliases,
                                      interpret=interpret, name=f"generated_{self.seed}")(*args)
            return pl.pallas_call(self.kernel, out_shape=out_shape, grid=self.grid, in_specs=in_specs,
                                  out_specs=out_specs, scratch_shapes=self._scratch_shapes(),
                                  input_output_aliases=aliases, interpret=interpret,
                                  name=f"generated_{self.seed}")(*args)
        return call

    def args(self):
        rng = np.random.default_rng(self.seed + 1_000_003)
        args = [jnp.asarray(np.array(self.table, np.int32))] if self.prefetch else []
        batch = (2,) if self.wrap == "vmap" else ()
        for operand in self.inputs[:self.shared]:  # (the shared input is the aliased argument again)
            if operand.dtype == "i32":
                args.append(jnp.asarray(rng.integers(-5, 6, size=batch + operand.shape), jnp.int32))
            else:
                args.append(jnp.asarray(rng.standard_normal(batch + operand.shape), _DTYPES[operand.dtype]))
        return args

    @property
    def donate_argnums(self):
        return (self.z + int(self.prefetch),) if self.z is not None and self.donate else ()

    # ----- description -----

    def describe(self):
        def index_text(index, names):
            if index[0] == "const":
                return str(index[1])
            _, axis, how, offset = index
            i, g = names[axis], self.grid[axis]
            return {"id": i, "rev": f"{g - 1}-{i}", "rot": f"({i}+1)%{g}", "clamp": f"min({i}+1,{g - 1})",
                    "shift": f"{i}+{offset}", "pref": f"s[{offset}+{i}]"}[how]

        names = [f"i{a}" for a in range(len(self.grid))]

        def operand_text(o):
            blocks = ",".join("None" if d.block is None else str(d.block) for d in o.dims)
            index = ",".join(index_text(d.index, names) for d in o.dims)
            extra = " stored-transposed" if o.transposed else ""
            if any(p != "full" for p in o.present):
                extra += " broadcast(" + ",".join(o.present) + ")"
            return f"{o.name} {o.dtype}{list(o.shape)} block({blocks}) map({index}){extra}"

        def expr_text(n):
            if n is None:
                return "-"
            kind = n[0]
            if kind == "in":
                return self.inputs[self._input_at(n[1])].name
            if kind == "const":
                return repr(n[1])
            if kind in ("pid", "nprog"):
                return f"{kind}({n[1]})"
            if kind == "pref":
                return f"s[{n[1]}]"
            if kind == "iota":
                return ("giota" if n[2] else "iota") + str(n[1])
            if kind == "mask":
                return f"where({'giota' if n[2] else 'iota'}{n[1]}<{n[3]}, {expr_text(n[4])}, {expr_text(n[5])})"
            if kind == "un":
                return f"{n[1]}({expr_text(n[2])})"
            if kind == "move":
                return f"{n[1]}({expr_text(n[3])}, axis {n[2]})"
            if kind == "bin":
                return f"{n[1]}({expr_text(n[2])}, {expr_text(n[3])})"
            return f"where({expr_text(n[2])}{n[1]}{expr_text(n[3])}, {expr_text(n[4])}, {expr_text(n[5])})"

        grid = f"grid{self.grid}" + (f" reduction-axis={self.red}" if self.red is not None else "")
        body = self.kind
        if self.kind == "reduce":
            body += f"({self.reduce_op} axis {self.q}{' keepdims' if self.keepdims else ''} {self.reduce_method})"
        if self.kind == "dot":
            body += f"(K={self.K.size} {self.x_pre}(x0) @ x1{'.T' if self.transpose_y else ''})"
        pattern = self.pattern
        if self.red is not None:
            pattern += f"({self.acc_op} init={'aliased' if self.aliased else self.acc_init}" + (f" post={self.post}" if self.pattern == "acc_scratch" else "") + ")"
        elif self.pattern == "row_loop":
            pattern += "(cumulative)" if self.cumulative else ""
        elif self.pattern == "slices":
            pattern += f"(split {self.split})"
        elif self.pattern == "branch":
            pattern += f"({self.branch_test} of axis {self.branch_axis})"
        parts = [f"seed {self.seed}", grid, self.dtype, body, pattern,
                 "body " + expr_text(self.expr) + (f" / {expr_text(self.expr2)}" if self.expr2 else "")]
        parts += ["in " + operand_text(o) for o in self.inputs]
        parts += ["out " + operand_text(o) for o in self.outputs]
        if self.o2:
            parts.append(f"o1 = {self.o2}(o0)" + (f"[{self.o2_op}{' keepdims' if self.o2_keep else ''}]" if self.o2 == "reduce" else ""))
        if self.aliased:
            combine = f" combine={self.combine}" if self.red is None else ""
            parts.append(f"alias z->o0{combine}{' read-z' if self.read_z else ''}"
                         f"{' donated' if self.donate else ' not donated'}")
        if self.prefetch:
            parts.append(f"prefetch s={self.table}")
        if self.shared is not None:
            parts.append("z_again: the aliased argument passed again as an input")
        scratch = self._scratch_shapes()
        if scratch:
            parts.append("scratch " + ", ".join(f"{s.dtype}{list(s.shape)}" for s in scratch))
        if self.wrap != "none":
            parts.append({"pre": "inputs negated/flipped in jnp first", "post": "outputs*2 and an input returned",
                          "chain": "called twice, o0 aliased into the second call", "vmap": "jax.vmap over 2"}[self.wrap])
        parts.append("exact" if all(self.exact) else f"tolerance {max(self.tolerance):.1e}")
        return " | ".join(parts)
