"""Every primitive under vmap, against slicing the batch, calling per example and stacking (check_vmap): in_axes and
out_axes as ints, None, negative axes, tuples and pytree prefixes; nested vmap; axis_size."""
import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import tracegrad as tg
import tracegrad.numpy as tnp
from oracles import check_vmap, primitives_of, ulps, x64
from tracegrad.ir import Ops
from tracegrad.ir.ops import COLLECTIVE

FEW = settings(max_examples=10)


# ---- argument generators: gen(rng, shape) -> numpy array ----

def F(rng, s): return rng.standard_normal(s).astype(np.float32)
def POS(rng, s): return rng.uniform(0.5, 2.0, s).astype(np.float32)
def UNIT(rng, s): return rng.uniform(-0.8, 0.8, s).astype(np.float32)
def I(rng, s): return rng.integers(-20, 20, s).astype(np.int32)
def NZ(rng, s): return (rng.choice([-1, 1], s) * rng.integers(1, 6, s)).astype(np.int32)
def SHIFT(rng, s): return rng.integers(0, 40, s).astype(np.int32)
def I8(rng, s): return rng.integers(-128, 128, s).astype(np.int8)
def SHIFT_U8(rng, s): return rng.integers(0, 8, s).astype(np.uint8)
def U8(rng, s): return rng.integers(0, 256, s).astype(np.uint8)
def B(rng, s): return rng.random(s) < 0.5
def F16(rng, s): return rng.standard_normal(s).astype(np.float16)
def BF16(rng, s): return rng.standard_normal(s).astype(ml_dtypes.bfloat16)
def IDX(n): return lambda rng, s: rng.integers(-n, n, s).astype(np.int32)
def UNIQUE(n): return lambda rng, s: rng.permutation(n)[:s[0]].astype(np.int32)
def C(rng, s): return (rng.standard_normal(s) + 1j * rng.standard_normal(s)).astype(np.complex64)
def WELL(rng, s): return (rng.uniform(-0.5, 0.5, s) + 3 * np.eye(s[-1])).astype(np.float32)


def side_shapes(min_dims=0, max_dims=3, max_side=4):
  return st.lists(st.integers(1, max_side), min_size=min_dims, max_size=max_dims).map(tuple)


def axis_or_none(ndim: int): return st.none() | st.integers(-ndim - 1, ndim)


def draw_check(data, f, specs, batched=None, rtol=None, atol=None):
  """check_vmap of f on arguments made from specs [(gen, per-example shape)], each batched on a drawn axis (None or
  any valid one; `batched` forces which are), with a drawn batch size and out_axes."""
  b = data.draw(st.integers(1, 3), label="batch")
  if batched is None:
    axes = [data.draw(axis_or_none(len(s)), label=f"in_axis{i}") for i, (_, s) in enumerate(specs)]
    if all(a is None for a in axes): axes[0] = data.draw(st.integers(-len(specs[0][1]) - 1, len(specs[0][1])))
  else:
    axes = [data.draw(st.integers(-len(s) - 1, len(s)), label=f"in_axis{i}") if m else None
            for i, ((_, s), m) in enumerate(zip(specs, batched))]
  rng = np.random.default_rng(data.draw(st.integers(0, 2 ** 16), label="seed"))
  args = [gen(rng, s) if a is None else np.stack([gen(rng, s) for _ in range(b)], axis=a)
          for (gen, s), a in zip(specs, axes)]
  example = [gen(rng, s) for gen, s in specs]
  out = tg.eval_shape(f, *example)
  out_axes = tg.tree.map(lambda o: data.draw(st.integers(-len(o.shape) - 1, len(o.shape)), label="out_axis"), out)
  return check_vmap(f, tuple(args), in_axes=tuple(axes), out_axes=out_axes, rtol=rtol, atol=atol)


# ---- elementwise ----

UNARY = {
  "real": (tnp.real, C), "imag": (tnp.imag, C), "exp_complex": (tnp.exp, C),
  "fft": (lambda x: tnp.fft.fft(tnp.atleast_1d(x)), C),
  "neg": (lambda x: -x, F), "neg_int": (lambda x: -x, I), "recip": (tnp.reciprocal, POS), "sqrt": (tnp.sqrt, POS),
  "exp2": (tnp.exp2, F), "log2": (tnp.log2, POS), "sin": (tnp.sin, F), "cos": (tnp.cos, F), "floor": (tnp.floor, F),
  "tanh": (tnp.tanh, F), "arcsin": (tnp.arcsin, UNIT), "abs": (tnp.abs, F), "signbit_bitcast": (tnp.signbit, F),
  "cast_to_int": (lambda x: (x * 4).astype(tnp.int32), F), "cast_to_float": (lambda x: x.astype(tnp.float32), I),
  "cast_to_bool": (lambda x: x.astype(bool), I), "cast_from_bool": (lambda x: x.astype(tnp.int32), B),
  "cast_to_uint8": (lambda x: x.astype(tnp.uint8), U8), "cast_to_f16": (lambda x: x.astype(tnp.float16), F),
  "invert_int": (lambda x: ~x, I), "logical_not": (lambda x: ~x, B),
  "iota": (lambda x: x * tnp.arange(x.size).reshape(x.shape), F),
  "iota_int": (lambda x: x + tnp.arange(x.shape[-1], dtype=tnp.int32) if x.ndim else x + 1, I),
  "scalar_ops": (lambda x: 2.0 * x + 1, F), "sin_f16": (tnp.sin, F16), "exp_bf16": (tnp.exp, BF16),
  "f16_to_int8": (lambda x: (x * 8).astype(tnp.int8), F16),
  "round_sign_clip": (lambda x: (tnp.round(x), tnp.sign(x), tnp.clip(x, -0.5, 0.5)), F),
  "constant_output": (lambda x: (1.0, tnp.zeros(2, tnp.int32)), F), "stop_gradient": (tg.lax.stop_gradient, F),
  "optimization_barrier": (lambda x: tg.lax.optimization_barrier(x * 2.0) + 1.0, F),
  "nonzero_size": (lambda x: tnp.nonzero(tnp.atleast_1d(x), size=3), B),
}


@FEW
@given(data=st.data())
@pytest.mark.parametrize("name", sorted(UNARY))
def test_unary(name, data):
  f, gen = UNARY[name]
  shape = data.draw(side_shapes(), label="shape")
  draw_check(data, f, [(gen, shape)], batched=[True])


BINARY = {
  "complex": (lambda x, y: tg.lax.complex(*tnp.broadcast_arrays(x, y)), F, F), "div_complex": (lambda x, y: x / y, C, C),
  "add": (lambda x, y: x + y, F, F), "sub": (lambda x, y: x - y, F, F), "mul": (lambda x, y: x * y, F, F),
  "add_int": (lambda x, y: x + y, I, I), "mul_int": (lambda x, y: x * y, I, I),
  "mul_int8_wraps": (lambda x, y: x * y, I8, I8), "div": (lambda x, y: x / y, F, POS),
  "idiv": (lambda x, y: x // y, I, NZ), "fmod": (tnp.fmod, F, POS), "fmod_int": (tnp.fmod, I, NZ),
  "remainder": (lambda x, y: x % y, F, POS), "remainder_int": (lambda x, y: x % y, I, NZ),
  "max": (tnp.maximum, F, F), "min": (tnp.minimum, F, F), "max_int": (tnp.maximum, I, I),
  "min_u8": (tnp.minimum, U8, U8),
  "pow": (lambda x, y: x ** y, POS, F), "atan2": (tnp.arctan2, F, F), "lt": (lambda x, y: x < y, F, F),
  "ge_int": (lambda x, y: x >= y, I, I), "eq": (lambda x, y: x == y, I, I), "ne": (lambda x, y: x != y, I, I),
  "and": (lambda x, y: x & y, I, I), "or": (lambda x, y: x | y, I, I), "xor": (lambda x, y: x ^ y, I, I),
  "and_bool": (lambda x, y: x & y, B, B), "or_bool": (lambda x, y: x | y, B, B), "xor_bool": (lambda x, y: x ^ y, B, B),
  "shl": (lambda x, y: x << y, I, SHIFT), "shr": (lambda x, y: x >> y, I, SHIFT),
  "shr_u8": (lambda x, y: x >> y, U8, SHIFT_U8),
  "logaddexp": (tnp.logaddexp, F, F), "hypot": (tnp.hypot, F, F), "copysign": (tnp.copysign, F, F),
}


@FEW
@given(data=st.data())
@pytest.mark.parametrize("name", sorted(BINARY))
def test_binary(name, data):
  f, g1, g2 = BINARY[name]
  shape = data.draw(side_shapes(), label="shape")
  other = data.draw(st.sampled_from([shape, shape[1:], tuple(1 if i % 2 else d for i, d in enumerate(shape))]))
  s1, s2 = (shape, other) if data.draw(st.booleans(), label="broadcast rhs") else (other, shape)
  draw_check(data, f, [(g1, s1), (g2, s2)])


@FEW
@given(data=st.data())
def test_where(data):
  shape = data.draw(side_shapes(), label="shape")
  draw_check(data, tnp.where, [(B, shape), (F, shape), (F, shape)])
  draw_check(data, lambda c, x: tnp.where(c, x, 0.0), [(B, shape), (I, shape)])


# ---- reductions, scans and sorting along an axis of the example ----

REDUCE = {
  "sum": (lambda x, a, k: x.sum(axis=a, keepdims=k), F), "sum_int": (lambda x, a, k: x.sum(axis=a, keepdims=k), I),
  "prod": (lambda x, a, k: x.prod(axis=a, keepdims=k), POS), "max": (lambda x, a, k: x.max(axis=a, keepdims=k), F),
  "min": (lambda x, a, k: x.min(axis=a, keepdims=k), I), "mean": (lambda x, a, k: x.mean(axis=a, keepdims=k), F),
  "var": (lambda x, a, k: x.var(axis=a, keepdims=k), F), "any": (lambda x, a, k: x.any(axis=a, keepdims=k), B),
  "argmax": (lambda x, a, k: tnp.argmax(x, axis=a, keepdims=k), F),
  "argmin_int": (lambda x, a, k: tnp.argmin(x, axis=a, keepdims=k), I),
  "cumsum": (lambda x, a, k: tnp.cumsum(x, axis=a), F), "cumprod": (lambda x, a, k: tnp.cumprod(x, axis=a), POS),
  "sort": (lambda x, a, k: tnp.sort(x, axis=-1 if a is None else a), F),
  "sort_int": (lambda x, a, k: tnp.sort(x, axis=-1 if a is None else a), I),
  "sort_descending": (lambda x, a, k: tnp.sort(x, axis=-1 if a is None else a, descending=True), F),
  "argsort": (lambda x, a, k: tnp.argsort(x, axis=-1 if a is None else a), F),
  "argsort_int_ties": (lambda x, a, k: tnp.argsort(x // 8, axis=-1 if a is None else a), I),
  "sum_f16": (lambda x, a, k: x.sum(axis=a, keepdims=k), F16),
  "max_bf16": (lambda x, a, k: x.max(axis=a, keepdims=k), BF16),
  "diff": (lambda x, a, k: tnp.diff(x, axis=-1 if a is None else a), I),
}


@FEW
@given(data=st.data())
@pytest.mark.parametrize("name", sorted(REDUCE))
def test_reduce(name, data):
  f, gen = REDUCE[name]
  shape = data.draw(side_shapes(min_dims=1), label="shape")
  axis = data.draw(st.none() | st.integers(-len(shape), len(shape) - 1), label="axis")
  keep = data.draw(st.booleans(), label="keepdims")
  draw_check(data, lambda x: f(x, axis, keep), [(gen, shape)], batched=[True])


@FEW
@given(data=st.data())
def test_reduce_axis_tuples(data):
  shape = data.draw(side_shapes(min_dims=2), label="shape")
  axes = tuple(data.draw(st.lists(st.integers(-len(shape), len(shape) - 1), min_size=1, max_size=len(shape),
                                  unique_by=lambda a: a % len(shape)), label="axes"))
  draw_check(data, lambda x: (x.sum(axis=axes), x.max(axis=axes, keepdims=True), x.prod(axis=axes)), [(F, shape)],
             batched=[True])


# ---- movement ----

@FEW
@given(data=st.data())
def test_reshape_broadcast_expand(data):
  shape = data.draw(side_shapes(), label="shape")
  draw_check(data, lambda x: x.reshape(-1), [(F, shape)], batched=[True])
  draw_check(data, lambda x: x.reshape(shape[::-1]), [(I, shape)], batched=[True])
  draw_check(data, lambda x: tnp.broadcast_to(x, (2,) + shape), [(F, shape)], batched=[True])
  draw_check(data, lambda x: tnp.expand_dims(x, 0)[..., None], [(F, shape)], batched=[True])


@FEW
@given(data=st.data())
def test_permute(data):
  shape = data.draw(side_shapes(min_dims=1), label="shape")
  perm = tuple(data.draw(st.permutations(range(len(shape))), label="perm"))
  draw_check(data, lambda x: tnp.transpose(x, perm), [(F, shape)], batched=[True])
  draw_check(data, lambda x: x.T, [(I, shape)], batched=[True])


@FEW
@given(data=st.data())
def test_pad(data):
  shape = data.draw(side_shapes(min_dims=1), label="shape")
  widths = tuple(data.draw(st.tuples(st.integers(0, 2), st.integers(0, 2))) for _ in shape)
  draw_check(data, lambda x: tnp.pad(x, widths), [(F, shape)], batched=[True])
  draw_check(data, lambda x: tnp.pad(x, 1, constant_values=7), [(I, shape)], batched=[True])


@FEW
@given(data=st.data())
def test_slice_and_flip(data):
  shape = data.draw(side_shapes(min_dims=1), label="shape")
  key = tuple(slice(data.draw(st.none() | st.integers(-n, n)), data.draw(st.none() | st.integers(-n, n)),
                    data.draw(st.sampled_from([None, 1, 2, 3, -1, -2]))) for n in shape)
  draw_check(data, lambda x: x[key], [(F, shape)], batched=[True])
  axis = data.draw(st.integers(-len(shape), len(shape) - 1), label="flip axis")
  draw_check(data, lambda x: tnp.flip(x, axis), [(F, shape)], batched=[True])
  draw_check(data, lambda x: tnp.roll(x, 1, axis=axis), [(I, shape)], batched=[True])


@FEW
@given(data=st.data())
def test_concat_and_stack(data):
  shape = data.draw(side_shapes(min_dims=1), label="shape")
  axis = data.draw(st.integers(-len(shape), len(shape) - 1), label="axis")
  other = tuple(d + 1 if i == axis % len(shape) else d for i, d in enumerate(shape))
  draw_check(data, lambda x, y: tnp.concatenate([x, y, x], axis=axis), [(F, shape), (F, other)])
  draw_check(data, lambda x, y: tnp.stack([x, y], axis=axis), [(I, shape), (I, shape)])


# ---- gather and scatter with batched operands and indices ----

GATHER = {  # name: (f, specs of the arguments after an operand of shape (5, 4, 3))
  "getitem": (lambda x, i: x[i], [(IDX(5), (3,))]),
  "getitem_scalar_index": (lambda x, i: x[i], [(IDX(5), ())]),
  "getitem_axis1": (lambda x, i: x[:, i], [(IDX(4), (2, 3))]),
  "getitem_ellipsis": (lambda x, i: x[..., i], [(IDX(3), (2,))]),
  "getitem_slice_then_array": (lambda x, i: x[1:, i], [(IDX(4), (3,))]),
  "getitem_none_int_array": (lambda x, i: x[None, 2, i], [(IDX(4), (2, 2))]),
  "getitem_two_adjacent": (lambda x, i, j: x[i, j], [(IDX(5), (3,)), (IDX(4), (3,))]),
  "getitem_two_separated": (lambda x, i, j: x[i, :, j], [(IDX(5), (2, 1)), (IDX(3), (3,))]),
  "getitem_mask": (lambda x: x[:, np.array([True, False, True, True])], []),
  "take": (lambda x, i: tnp.take(x, i, axis=1), [(IDX(4), (3,))]),
  "take_clip": (lambda x, i: tnp.take(x, i + 3, axis=0, mode="clip"), [(IDX(5), (3,))]),
  "take_along_axis": (lambda x, i: tnp.take_along_axis(x, i, axis=1), [(IDX(4), (5, 2, 3))]),
  "at_get_fill": (lambda x, i: x.at[i + 2].get(mode="fill", fill_value=-1.0), [(IDX(5), (4,))]),
}


@FEW
@given(data=st.data())
@pytest.mark.parametrize("name", sorted(GATHER))
def test_gather(name, data):
  f, specs = GATHER[name]
  draw_check(data, f, [(F, (5, 4, 3))] + specs)


SCATTER = {  # name: (f, specs of the arguments after an operand of shape (5, 4))
  "add": (lambda x, i, u: x.at[i].add(u), [(IDX(5), (3,)), (F, (3, 4))]),
  "set": (lambda x, i, u: x.at[i].set(u), [(UNIQUE(5), (2,)), (F, (2, 4))]),
  "mul": (lambda x, i, u: x.at[i].multiply(u), [(IDX(5), (3,)), (F, (3, 4))]),
  "min": (lambda x, i, u: x.at[i].min(u), [(IDX(5), (3,)), (F, (3, 4))]),
  "max": (lambda x, i, u: x.at[i].max(u), [(IDX(5), (3,)), (F, (3, 4))]),
  "set_scalar": (lambda x, i: x.at[i].set(-1.0), [(UNIQUE(5), (3,))]),
  "add_slice": (lambda x, u: x.at[1:3, ::2].add(u), [(F, (2, 2))]),
  "add_axis1": (lambda x, i, u: x.at[:, i].add(u), [(IDX(4), (2,)), (F, (5, 2))]),
  "add_two_indices": (lambda x, i, j, u: x.at[i, j].add(u), [(IDX(5), (3,)), (IDX(4), (3,)), (F, (3,))]),
  "max_ellipsis": (lambda x, i, u: x.at[..., i].max(u), [(IDX(4), (2,)), (F, (2,))]),
  "set_mask": (lambda x, u: x.at[np.array([True, False, True, False, False])].set(u), [(F, (2, 4))]),
  "put_along_axis": (lambda x, i, u: tnp.put_along_axis(x, i, u, axis=1, inplace=False),
                     [(IDX(4), (5, 1)), (F, (5, 1))]),
}


@FEW
@given(data=st.data())
@pytest.mark.parametrize("name", sorted(SCATTER))
def test_scatter(name, data):
  f, specs = SCATTER[name]
  draw_check(data, f, [(F, (5, 4))] + specs)


@FEW
@given(data=st.data())
def test_scatter_int_operand(data):
  draw_check(data, lambda x, i, u: x.at[:, i].add(u), [(I, (2, 5)), (IDX(5), (4,)), (I, (2, 4))])
  draw_check(data, lambda x, i, u: x.at[i].max(u), [(U8, (6,)), (IDX(6), (4,)), (U8, (4,))])


# test_trace.py: composites; test_pure_callback.py: CALLBACK under vmap; lax/test_linalg.py: LINALG
CONTROL_FLOW = {Ops.PROJ, Ops.COND, Ops.SCAN, Ops.WHILE, Ops.CUSTOM_JVP, Ops.CUSTOM_VJP, Ops.REMAT, Ops.COMPOSITE,
                Ops.CALLBACK, Ops.LINALG}


def test_tables_cover_every_primitive():
  rng = np.random.default_rng(0)
  ex = lambda specs: [gen(rng, s) for gen, s in specs]
  seen = set()
  for f, gen in UNARY.values(): seen |= primitives_of(f, gen(rng, (2, 3)))
  for f, g1, g2 in BINARY.values(): seen |= primitives_of(f, g1(rng, (2, 3)), g2(rng, (2, 3)))
  for f, gen in REDUCE.values(): seen |= primitives_of(lambda x: f(x, 0, False), gen(rng, (2, 3)))
  for f, specs in GATHER.values(): seen |= primitives_of(f, *ex([(F, (5, 4, 3))] + specs))
  for f, specs in SCATTER.values(): seen |= primitives_of(f, *ex([(F, (5, 4))] + specs))
  # collectives: test_collectives.py; the sharding constraint (under vmap too): test_shard.py
  missing = set(Ops) - CONTROL_FLOW - COLLECTIVE - {Ops.SHARDING_CONSTRAINT} - seen
  assert not missing, f"no vmap case builds {sorted(o.name for o in missing)}"


# ---- contractions and linear algebra ----

@FEW
@given(data=st.data())
def test_contractions(data):
  draw_check(data, lambda x, y: x @ y, [(F, (3, 4)), (F, (4, 2))], rtol=ulps(84), atol=ulps(84))
  draw_check(data, lambda x, y: x @ y, [(F, (4,)), (F, (4,))], rtol=ulps(84), atol=ulps(84))
  draw_check(data, lambda x, y: tnp.einsum("ij,jk->ki", x, y), [(F, (2, 3)), (F, (3, 2))], rtol=ulps(84), atol=ulps(84))
  draw_check(data, tnp.linalg.solve, [(WELL, (3, 3)), (F, (3,))], rtol=ulps(840), atol=ulps(84))
  draw_check(data, tnp.linalg.det, [(WELL, (3, 3))], batched=[True], rtol=ulps(840), atol=ulps(84))
  draw_check(data, tnp.linalg.inv, [(WELL, (3, 3))], batched=[True], rtol=ulps(840), atol=ulps(84))
  draw_check(data, lambda x: (tnp.trace(x), tnp.diagonal(x), tnp.tril(x, -1), tnp.diag(x[0])), [(F, (3, 3))])
  draw_check(data, lambda x, y: (tnp.kron(x, y), tnp.outer(x, y)), [(F, (2,)), (I, (3,))])
  draw_check(data, lambda x: (tnp.tile(x, (2, 1)), tnp.repeat(x, 2, axis=0)), [(I, (2, 3))])


@FEW
@given(data=st.data())
def test_searchsorted(data):
  draw_check(data, lambda a, v: tnp.searchsorted(a, v), [(lambda rng, s: np.sort(F(rng, s)), (6,)), (F, (4,))])


def test_64_bit_types():
  rng = np.random.default_rng(6)
  with x64():
    x, n = rng.standard_normal((3, 4)), rng.integers(-100, 100, (3, 4))
    f = lambda x: (tnp.sin(x), x + tnp.arange(x.shape[0]), tnp.abs(x), x.astype(tnp.int64))
    check_vmap(f, (x,), in_axes=1, out_axes=-1)
    check_vmap(lambda a, b: (a << b, a >> b, a // (b + 1), a & b), (n, rng.integers(0, 70, (3, 4))))
    check_vmap(lambda x, i: (x[i], x.at[i].add(1.0), tnp.argsort(x)), (x, rng.integers(0, 4, (3, 2))))
    check_vmap(tnp.linalg.det, (rng.standard_normal((2, 3, 3)),))


# ---- the vmap API: axes spellings, pytrees, nesting, axis_size ----

def test_in_axes_pytree_prefix_dict():
  rng = np.random.default_rng(0)
  d = {"a": F(rng, (3, 4)), "b": F(rng, (4,))}
  f = lambda d, s: d["a"] * d["b"].sum() + s
  check_vmap(f, (d, 2.0), in_axes=({"a": 1, "b": None}, None))
  check_vmap(f, (d, np.float32(2.0)), in_axes=({"a": -1, "b": 0}, None))
  check_vmap(lambda d: d["a"].sum() * d["b"], (d,), in_axes=({"a": 0, "b": None},))


def test_in_axes_nested_tuple_and_negative():
  rng = np.random.default_rng(1)
  xy = (F(rng, (2, 3, 4)), F(rng, (4, 3)))
  check_vmap(lambda p: p[0] @ p[1], (xy,), in_axes=((-1, 0),), out_axes=-1)
  check_vmap(lambda x, y: (x * y).sum(), (xy[0], xy[1][0]), in_axes=(-1, None))


def test_out_axes_pytree_and_none():
  rng = np.random.default_rng(2)
  x, y = F(rng, (3, 2, 4)), F(rng, (4,))
  f = lambda x, y: (x * y, {"s": x.sum(0), "c": y + 1})
  check_vmap(f, (x, y), in_axes=(1, None), out_axes=(-1, {"s": 1, "c": None}))
  check_vmap(f, (x, y), in_axes=(0, None), out_axes=(2, {"s": -2, "c": None}))


def test_nested_vmap():
  rng = np.random.default_rng(3)
  x, y = F(rng, (2, 3, 4)), F(rng, (4, 5))
  inner = tg.vmap(lambda a, b: a * b.sum() + tnp.arange(a.shape[0]), in_axes=(1, 0), out_axes=-1)
  check_vmap(lambda a, b: a * b.sum() + tnp.arange(a.shape[0]), (x[0], y), in_axes=(1, 0), out_axes=-1)
  check_vmap(inner, (x, y), in_axes=(0, None), out_axes=1)
  idx = np.array([[0, 2], [1, 1]], np.int32)
  g = tg.vmap(lambda v, i: v[i], in_axes=(None, 0))
  check_vmap(g, (x, idx), in_axes=(0, None))


def test_axis_size_with_unbatched_inputs():
  rng = np.random.default_rng(4)
  x = F(rng, (3,))
  check_vmap(lambda x: x * 2.0, (x,), in_axes=None, axis_size=4)
  check_vmap(lambda x: (x.sum(), tnp.arange(3)), (x,), in_axes=(None,), out_axes=(0, -1), axis_size=2)
  check_vmap(lambda: tnp.ones(2) * 3.0, (), in_axes=(), axis_size=3)


def test_in_axes_list_is_a_tuple():
  x = np.arange(6.0, dtype=np.float32).reshape(2, 3)
  check_vmap(lambda x, y: x * y, (x, x[0]), in_axes=[0, None])


def test_bad_axes_raise():
  x = np.ones((2, 3), np.float32)
  with pytest.raises(ValueError):
    tg.vmap(lambda x, y: x + y)(x, np.ones((3, 3), np.float32))
  with pytest.raises(ValueError):
    tg.vmap(lambda x: x, in_axes=2)(x)
  with pytest.raises(ValueError):
    tg.vmap(lambda x: x, out_axes=3)(x)
  with pytest.raises(ValueError):
    tg.vmap(lambda x: x, axis_size=5)(x)
  with pytest.raises(ValueError):
    tg.vmap(lambda x: x * 2.0, in_axes=None)(x)


def test_vmap_of_grad_and_grad_of_vmap():
  rng = np.random.default_rng(5)
  xs = F(rng, (3, 4))
  f = lambda x: (tnp.sin(x) * x).sum()
  check_vmap(tg.grad(f), (xs,), rtol=ulps(84), atol=ulps(8))
  g = tg.grad(lambda xs: tg.vmap(f)(xs).sum())(xs)
  np.testing.assert_allclose(np.asarray(g), np.cos(xs) * xs + np.sin(xs), rtol=ulps(84), atol=ulps(8))
