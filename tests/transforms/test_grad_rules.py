"""Every differentiable primitive, through the tracegrad.numpy functions that build it: jvp and vjp against finite
differences (orders 1 and 2), tie-breaking, zero derivatives, integer parts and pytree-shaped gradients."""
from collections import namedtuple

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import tracegrad as tg
import tracegrad.numpy as tnp
from oracles import check_grads, check_vmap, eps, primitives_of, tol, ulps
from tracegrad.ir import Ops

RNG = np.random.default_rng(1234)
BF16 = ml_dtypes.bfloat16


def unif(lo, hi, *shape): return RNG.uniform(lo, hi, shape).astype(np.float32)
def normal(*shape): return RNG.standard_normal(shape).astype(np.float32)
def away(*shape, gap=0.3): return (RNG.choice([-1.0, 1.0], shape) * RNG.uniform(gap, 2.0, shape)).astype(np.float32)
def distinct(*shape): return ((RNG.permutation(int(np.prod(shape))) - 3.0) * 0.37).reshape(shape).astype(np.float32)
def fractional(*shape): return (RNG.integers(-3, 3, shape) + RNG.uniform(0.2, 0.8, shape)).astype(np.float32)
def well_conditioned(n): return (RNG.uniform(-0.5, 0.5, (n, n)) + 3 * np.eye(n)).astype(np.float32)
def idx(*v): return np.asarray(v, np.int32)


W234, W65 = normal(2, 3, 4), unif(1, 2, 6, 5)


def _mod_pair(sign):
  y = unif(0.7, 1.3, 3, 4)
  return (sign * y * (RNG.integers(0, 3, (3, 4)) + unif(0.2, 0.8, 3, 4))).astype(np.float32), y


def _pair_no_ties():
  x = normal(3, 4)
  return x, (x + away(3, 4, gap=0.1)).astype(np.float32)


def _with_zero():
  x = unif(0.5, 1.5, 3, 4)
  x[1, 2] = 0.0
  return x


def _logsumexp(x):
  m = x.max(axis=1, keepdims=True)
  return tnp.log(tnp.exp(x - m).sum(axis=1)) + m[:, 0]


def _softmax(x):
  e = tnp.exp(x - x.max(axis=-1, keepdims=True))
  return e / e.sum(axis=-1, keepdims=True)


def _scatter_minmax(op):
  x = distinct(4, 3)
  return (lambda x, u: getattr(x.at[idx(3, 1)], op)(u)), (x, (x[[3, 1]] + away(2, 3, gap=0.1)).astype(np.float32))


def P(f, args, kw=None, *, id): return pytest.param(f, args, kw or {}, id=id)


CASES = [
  # unary primitives
  P(lambda x: -x, (normal(3, 4),), id="neg"),
  P(tnp.reciprocal, (away(3, 4, gap=0.5),), id="recip"),
  P(tnp.sqrt, (unif(0.5, 2.0, 3, 4),), id="sqrt"),
  P(tnp.exp2, (normal(3, 4),), id="exp2"),
  P(tnp.log2, (unif(0.5, 3.0, 3, 4),), id="log2"),
  P(tnp.sin, (normal(3, 4),), id="sin"),
  P(tnp.cos, (normal(3, 4),), id="cos"),
  P(lambda x: tnp.floor(x) * x, (fractional(3, 4),), id="floor"),
  # binary primitives
  P(lambda x, y: x + y, (normal(3, 4), normal(3, 4)), id="add"),
  P(lambda x, y: x - y, (normal(3, 4), normal(3, 4)), id="sub"),
  P(lambda x, y: x * y, (normal(3, 4), normal(3, 4)), id="mul"),
  P(lambda x, y: x / y, (normal(3, 4), away(3, 4, gap=0.5)), id="div"),
  P(tnp.fmod, _mod_pair(1.0), id="mod"),
  P(tnp.fmod, _mod_pair(-1.0), id="mod_negative_dividend"),
  P(lambda x, y: x % y, _mod_pair(-1.0), id="remainder"),
  P(tnp.maximum, _pair_no_ties(), id="max"),
  P(tnp.minimum, _pair_no_ties(), id="min"),
  P(lambda x, y: x ** y, (unif(0.5, 2.0, 3, 4), unif(-1.5, 1.5, 3, 4)), id="pow"),
  P(lambda x: x ** 3, (normal(3, 4),), id="pow_int_exponent_negative_base"),
  P(lambda x: 2.0 ** x, (normal(3, 4),), id="pow_scalar_base"),
  P(tnp.arctan2, (away(3, 4), normal(3, 4)), id="atan2"),
  P(lambda x, y: tnp.where(x > 0, x * y, tnp.sin(y)), (away(3, 4), normal(3, 4)), id="where"),
  P(lambda x: x.astype(tnp.float32) * x, (normal(3, 4),), dict(rtol=1e-2, atol=1e-2), id="cast"),
  # reductions
  P(lambda x: x.sum(), (normal(3, 4),), id="reduce_sum_all"),
  P(lambda x: x.sum(axis=(0, 2)), (normal(2, 3, 4),), id="reduce_sum_axes"),
  P(lambda x: x.prod(axis=1), (unif(0.5, 1.5, 3, 4),), id="reduce_prod"),
  P(lambda x: x.prod(axis=1), (_with_zero(),), id="reduce_prod_with_zero"),
  P(lambda x: x.prod(), (unif(0.5, 1.5, 5),), id="reduce_prod_all"),
  P(lambda x: x.max(axis=0), (distinct(3, 4),), id="reduce_max"),
  P(lambda x: x.min(axis=1), (distinct(3, 4),), id="reduce_min"),
  P(lambda x: tnp.max(x), (distinct(3, 4),), id="reduce_max_all"),
  # movement
  P(lambda x: x.reshape(4, 3) * tnp.arange(3.0), (normal(3, 4),), id="reshape"),
  P(lambda x: tnp.broadcast_to(x, (2, 3, 4)) * W234, (normal(3, 4),), id="broadcast_to"),
  P(lambda x, y: x * y, (normal(3, 1), normal(1, 4)), id="broadcast_implicit"),
  P(lambda x: tnp.transpose(x, (2, 0, 1)) * tnp.arange(3.0), (normal(2, 3, 4),), id="permute"),
  P(lambda x: tnp.pad(x, ((1, 2), (0, 1))) * W65, (normal(3, 4),), id="pad"),
  P(lambda x: x[1:3, ::2], (normal(4, 5),), id="slice"),
  P(lambda x: x[::3] * 2.0, (normal(7),), id="slice_step3"),
  P(lambda x: x[-2::-2, 1:], (normal(5, 3),), id="slice_negative_step"),
  P(lambda x: x[::-1, ::-1] * tnp.arange(4.0), (normal(3, 4),), id="flip"),
  P(lambda x: tnp.flip(x, 1) * tnp.arange(4.0), (normal(3, 4),), id="flip_axis"),
  P(lambda x, y: tnp.concatenate([x, y, x], axis=1), (normal(3, 2), normal(3, 4)), id="concat"),
  P(lambda x, y: tnp.stack([x, y]), (normal(3), normal(3)), id="stack"),
  # gather and scatter
  P(lambda x: x[idx(0, 2, 0)], (normal(4, 3),), id="gather_repeated"),
  P(lambda x: x[idx(0, 3, 1), idx(2, 2, 0)], (normal(4, 3),), id="gather_pointwise"),
  P(lambda x: x[:, idx(1, 1, 0)], (normal(4, 3),), id="gather_axis1"),
  P(lambda x: tnp.take(x, idx(2, 0, 2), axis=1), (normal(4, 3),), id="take"),
  P(lambda x: tnp.take_along_axis(x, idx([2], [0], [1], [2]), axis=1), (normal(4, 3),), id="take_along_axis"),
  P(lambda x, u: x.at[idx(0, 2, 0)].add(u), (normal(4, 3), normal(3, 3)), id="scatter_add_repeated"),
  P(lambda x, u: x.at[1:3, ::2].add(u), (normal(4, 3), normal(2, 2)), id="scatter_add_slice"),
  P(lambda x, u: x.at[idx(3, 1)].set(u), (normal(4, 3), normal(2, 3)), id="scatter_set"),
  P(lambda x, u: x.at[1].set(u), (normal(4, 3), normal(3)), id="scatter_set_int"),
  P(lambda x, u: x.at[idx(3, 1)].multiply(u), (normal(4, 3), normal(2, 3)), id="scatter_mul"),
  P(lambda x, u: x.at[idx(3, 1)].multiply(u), (normal(4, 3), np.array([[0, 1, 2], [0.5, 0, -1]], np.float32)),
    id="scatter_mul_zero_update"),
  P(*_scatter_minmax("min"), id="scatter_min"),
  P(*_scatter_minmax("max"), id="scatter_max"),
  P(lambda x, u: tnp.put_along_axis(x, idx([2], [0], [1], [2]), u, axis=1, inplace=False),
    (normal(4, 3), normal(4, 1)), id="put_along_axis"),
  # composites
  P(tnp.exp, (normal(3, 4),), id="exp"),
  P(tnp.log, (unif(0.5, 3.0, 3, 4),), id="log"),
  P(tnp.tanh, (normal(3, 4),), id="tanh"),
  P(tnp.sinh, (normal(3, 4),), id="sinh"),
  P(tnp.expm1, (normal(3, 4),), id="expm1"),
  P(tnp.log1p, (unif(-0.5, 2.0, 3, 4),), id="log1p"),
  P(tnp.tan, (unif(-1.0, 1.0, 3, 4),), id="tan"),
  P(tnp.arcsin, (unif(-0.8, 0.8, 3, 4),), id="arcsin"),
  P(tnp.arctan, (normal(3, 4),), id="arctan"),
  P(tnp.abs, (away(3, 4),), id="abs"),
  P(tnp.hypot, (away(3, 4), away(3, 4)), id="hypot"),
  P(tnp.logaddexp, (normal(3, 4), normal(3, 4)), id="logaddexp"),
  P(lambda x: tnp.clip(x, -1.0, 1.0), (away(3, 4, gap=0.1) * 1.5,), id="clip"),
  P(_logsumexp, (normal(3, 4),), id="logsumexp"),
  P(_softmax, (normal(3, 4),), id="softmax"),
  P(lambda x, y: x @ y, (normal(3, 4), normal(4, 2)), id="matmul"),
  P(lambda x, y: x @ y, (normal(2, 3, 4), normal(4)), id="matmul_batched_vector"),
  P(lambda x, y: tnp.einsum("bij,jk->bki", x, y), (normal(2, 3, 4), normal(4, 2)), id="einsum"),
  P(lambda x: (tnp.mean(x, axis=0), tnp.var(x, axis=1)), (normal(3, 4),), id="mean_var"),
  P(lambda x: tnp.std(x), (normal(3, 4),), id="std"),
  P(tnp.linalg.norm, (normal(3, 4),), id="norm"),
  P(tnp.linalg.solve, (well_conditioned(3), normal(3)), id="solve"),
  P(tnp.linalg.det, (well_conditioned(3),), id="det"),
  P(tnp.linalg.inv, (well_conditioned(3),), id="inv"),
  P(lambda x: tnp.sort(x, axis=-1) * tnp.arange(4.0), (distinct(3, 4),), id="sort"),
  P(lambda x: tnp.sort(x, axis=0) * tnp.arange(3.0)[:, None], (distinct(3, 4),), id="sort_axis0"),
  P(lambda x: tnp.cumsum(x, axis=1), (normal(3, 4),), id="cumsum"),
  P(lambda x: tnp.cumprod(x, axis=0), (unif(0.5, 1.5, 3, 4),), id="cumprod"),
  P(lambda x: tnp.linalg.slogdet(x)[1], (well_conditioned(3),), id="slogdet"),
  P(lambda x: tnp.linalg.matrix_power(x, 3), (well_conditioned(3) / 3,), id="matrix_power"),
  P(lambda x, y: tnp.tensordot(x, y, axes=([0, 2], [1, 0])), (normal(2, 3, 4), normal(4, 2, 2)), id="tensordot"),
  P(lambda x, y: (tnp.outer(x, y), tnp.kron(x, y), tnp.vdot(x, y)), (normal(3), normal(3)), id="outer_kron_vdot"),
  P(lambda x: (tnp.trace(x), tnp.diagonal(x, 1), tnp.tril(x), tnp.diag(x[0])), (normal(3, 3),), id="trace_diag_tril"),
  P(lambda x: (tnp.tile(x, (2, 1)), tnp.repeat(x, 2, axis=1), tnp.roll(x, 2, axis=1), tnp.diff(x, axis=1)),
    (normal(2, 3),), id="tile_repeat_roll_diff"),
  P(lambda x, w: tnp.average(x, axis=1, weights=w), (normal(3, 4), unif(0.5, 1.5, 4)), id="average_weights"),
  P(lambda x: tnp.where(x > 0, tnp.sqrt(x * x + 1.0), tnp.exp(x) * x), (away(3, 4),), id="where_of_composites"),
  # other float dtypes: the derivative keeps each argument's dtype
  P(tnp.sin, (normal(3, 4).astype(np.float16),), id="sin_float16"),
  P(lambda x, y: (x @ y).sum(axis=0), (normal(3, 4).astype(BF16), normal(4, 2).astype(BF16)), id="matmul_bfloat16"),
  P(lambda x, y: x * y + tnp.exp(y), (normal(3, 4), normal(4).astype(np.float16)), id="mixed_f32_f16"),
  P(lambda x: tnp.mean(tnp.tanh(x)), (normal(3, 4).astype(np.float16),), id="mean_float16"),
]


DIFFERENTIABLE = {Ops.NEG, Ops.RECIP, Ops.SQRT, Ops.EXP2, Ops.LOG2, Ops.SIN, Ops.COS, Ops.FLOOR, Ops.ADD, Ops.SUB,
                  Ops.MUL, Ops.DIV, Ops.MOD, Ops.MAX, Ops.MIN, Ops.POW, Ops.ATAN2, Ops.WHERE, Ops.CAST, Ops.REDUCE_SUM,
                  Ops.REDUCE_PROD, Ops.REDUCE_MAX, Ops.REDUCE_MIN, Ops.RESHAPE, Ops.BROADCAST, Ops.PERMUTE, Ops.PAD,
                  Ops.SLICE, Ops.FLIP, Ops.CONCAT, Ops.GATHER, Ops.SCATTER}


def test_cases_cover_every_differentiable_primitive():
  seen = set().union(*(primitives_of(p.values[0], *p.values[1]) for p in CASES))
  assert DIFFERENTIABLE <= seen, f"no check_grads case builds {sorted(o.name for o in DIFFERENTIABLE - seen)}"


@pytest.mark.parametrize("order", [1, 2])
@pytest.mark.parametrize("f,args,kw", CASES)
def test_check_grads(f, args, kw, order):
  check_grads(f, args, order=order, modes=("fwd", "rev"), **kw)


# ---- ties and zero derivatives ----

def _close(got, want):
  np.testing.assert_allclose(np.asarray(got, np.float64), np.asarray(want, np.float64), rtol=ulps(8), atol=ulps(1))


@pytest.mark.parametrize("op", [tnp.maximum, tnp.minimum])
def test_binary_max_min_split_ties(op):
  gx, gy = tg.grad(lambda x, y: op(x, y), argnums=(0, 1))(1.5, 1.5)
  _close(gx, 0.5)
  _close(gy, 0.5)
  _close(tg.grad(lambda x: op(x, x))(1.5), 1.0)
  _, t = tg.jvp(lambda x, y: op(x, y), (1.5, 1.5), (1.0, 3.0))
  _close(t, 2.0)


@pytest.mark.parametrize("red", ["max", "min"])
def test_reduce_max_min_split_ties(red):
  x = np.array([[1.0, 3.0, 3.0, -1.0], [2.0, 2.0, 2.0, 2.0]], np.float32)
  if red == "min": x = -x
  g = tg.grad(lambda x: getattr(x, red)(axis=1).sum())(x)
  _close(g, [[0, 0.5, 0.5, 0], [0.25, 0.25, 0.25, 0.25]])
  _close(tg.grad(lambda x: getattr(tnp, red)(x))(x[0]), [0, 0.5, 0.5, 0])
  _, t = tg.jvp(lambda x: getattr(x, red)(axis=1), (x,), (np.arange(8, dtype=np.float32).reshape(2, 4),))
  _close(t, [1.5, 5.5])


def test_floor_and_rounding_have_zero_gradient():
  x = np.array([-2.0, -1.5, 0.0, 0.3, 1.0, 2.7], np.float32)
  for f in (tnp.floor, tnp.ceil, tnp.round, tnp.trunc):
    _close(tg.grad(lambda x: f(x).sum())(x), np.zeros(6))
    _close(tg.jvp(f, (x,), (np.ones(6, np.float32),))[1], np.zeros(6))


def test_optimization_barrier_is_the_identity_to_every_transform():
  f = lambda x: (tg.lax.optimization_barrier(x * x) * x).sum()
  x = np.arange(1.0, 4.0, dtype=np.float32)
  _close(tg.grad(f)(x), 3 * x ** 2)
  _close(tg.jit(tg.grad(f))(x), 3 * x ** 2)
  _close(tg.jvp(f, (x,), (np.ones(3, np.float32),))[1], (3 * x ** 2).sum())
  _close(tg.vmap(lambda v: tg.lax.optimization_barrier(v) * 2.0)(np.ones((2, 3), np.float32)), np.full((2, 3), 2.0))
  # a pytree passes through leaf by leaf; bad input names the function
  a, (b,) = tg.lax.optimization_barrier((1.0, [np.int32(2)]))
  assert float(a) == 1.0 and int(b) == 2
  with pytest.raises(TypeError, match="optimization_barrier"): tg.lax.optimization_barrier("x")


def test_stop_gradient():
  _close(tg.grad(lambda x: x * tg.lax.stop_gradient(x))(3.0), 3.0)
  _close(tg.jvp(lambda x: tg.lax.stop_gradient(x) * 2.0 + x, (1.0,), (1.0,))[1], 1.0)


def test_derivatives_at_special_points():
  _close(tg.grad(lambda x: x ** 2)(0.0), 0.0)
  _close(tg.grad(lambda x: x ** 3.0)(0.0), 0.0)
  _close(tg.grad(lambda x: x.prod())(np.array([0.0, 0.0, 2.0], np.float32)), [0.0, 0.0, 0.0])
  _close(tg.grad(lambda x: x.prod())(np.array([0.0, 3.0, 2.0], np.float32)), [6.0, 0.0, 0.0])
  _close(tg.grad(lambda x, y: x ** y, argnums=1)(0.0, 2.0), 0.0)
  _close(tg.grad(lambda x: tnp.abs(x) + 0.0)(2.0), 1.0)
  _close(tg.grad(lambda x: tnp.abs(x) + 0.0)(-2.0), -1.0)
  _close(tg.grad(tnp.abs)(0.0), 1.0)


def test_scatter_mul_by_zero():
  x = np.array([5.0, 1.0], np.float32)
  gx, gu = tg.grad(lambda x, u: x.at[0].multiply(u).sum(), argnums=(0, 1))(x, np.float32(0.0))
  _close(gx, [0.0, 1.0])
  _close(gu, 5.0)


def test_det_at_singular_matrix():
  a = np.array([[1.0, 2.0], [2.0, 4.0]], np.float32)
  _close(tg.grad(tnp.linalg.det)(a), [[4.0, -2.0], [-2.0, 1.0]])
  check_grads(tnp.linalg.det, (np.array([[1, 2, 3], [2, 4, 6], [0, 1, 1]], np.float32),), order=1)


# ---- integer parts ----

def test_integer_valued_parts_have_zero_gradient():
  x = np.array([0.3, 1.7, -2.2, 2.9], np.float32)
  f = lambda x: (x.astype(tnp.int32) * 2).astype(tnp.float32).sum() + (x * x).sum()
  _close(tg.grad(f)(x), 2 * x)
  g = lambda x: x.sum() * tnp.argmax(x) + tnp.sum(x > 0)
  _close(tg.grad(g)(x), np.full(4, 3.0))
  _close(tg.grad(lambda x: x[tnp.argsort(x)][-1])(x), [0, 0, 0, 1])


def test_integer_outputs_get_zero_tangents():
  x = np.array([0.3, 1.7, -2.2], np.float32)
  (y, k), (ty, tk) = tg.jvp(lambda x: (x * 2.0, tnp.argmax(x)), (x,), (np.ones(3, np.float32),))
  _close(ty, np.full(3, 2.0))
  assert np.asarray(k) == 1
  tk = np.asarray(tk)
  assert tk.shape == () and (tk.dtype.kind == "V" or tk == 0)


def test_grad_of_integer_input_raises():
  with pytest.raises(TypeError):
    tg.grad(lambda n: (n * 2).astype(tnp.float32).sum())(np.arange(3, dtype=np.int32))


def test_nondifferentiated_integer_arguments():
  def f(x, n, scale):
    return (x[n] * scale).sum()
  x = np.array([1.0, 2.0, 3.0, 4.0], np.float32)
  n = np.array([0, 3, 3], np.int32)
  _close(tg.grad(f)(x, n, 2.0), [2.0, 0, 0, 4.0])
  _close(tg.grad(f, argnums=2)(x, n, 2.0), 9.0)


def test_vjp_with_integer_primal():
  x = np.array([1.0, 2.0, 3.0], np.float32)
  out, vjp_fn = tg.vjp(lambda x, n: x * n, x, np.array([1, 2, 3], np.int32))
  cx, cn = vjp_fn(np.ones(3, np.float32))
  _close(cx, [1.0, 2.0, 3.0])
  cn = np.asarray(cn)
  assert cn.shape == (3,) and (cn.dtype.kind == "V" or not cn.any())


# ---- pytrees ----

Params = namedtuple("Params", ["w", "b"])


def _loss(p):
  return (tnp.tanh(p["x"] @ p["w"] + p["b"]) ** 2).sum()


def test_grad_of_dict_keeps_structure():
  p = {"w": normal(3, 2), "b": normal(2), "x": normal(4, 3)}
  g = tg.grad(_loss)(p)
  assert isinstance(g, dict) and sorted(g) == ["b", "w", "x"]
  for k in p: assert g[k].shape == p[k].shape and g[k].dtype == tnp.float32
  check_grads(_loss, (p,), order=1)


def test_grad_of_namedtuple_tuple_and_nested():
  x = normal(4, 3)
  p = Params(normal(3, 2), normal(2))
  g = tg.grad(lambda p: (tnp.sin(x @ p.w + p.b)).sum())(p)
  assert type(g) is Params and g.w.shape == (3, 2) and g.b.shape == (2,)
  check_grads(lambda p: tnp.sin(x @ p.w + p.b), (p,), order=1)
  nested = {"layers": [Params(normal(3, 3), normal(3)), Params(normal(3, 2), normal(2))], "scale": (np.float32(0.5),)}

  def mlp(q):
    h = x
    for layer in q["layers"]: h = tnp.tanh(h @ layer.w + layer.b)
    return (h * q["scale"][0]).sum()

  gt = tg.grad(lambda t: (t[0] * tnp.exp(t[1])).sum())((normal(3), normal(3)))
  assert type(gt) is tuple and len(gt) == 2 and gt[1].shape == (3,)
  g = tg.grad(mlp)(nested)
  assert tg.tree.structure(g) == tg.tree.structure(nested)
  for a, b in zip(tg.tree.leaves(g), tg.tree.leaves(nested)): assert np.shape(a) == np.shape(b)
  check_grads(mlp, (nested,), order=1)


def test_grad_argnums_tuple_and_value_and_grad():
  x, y = normal(3), normal(3)
  f = lambda x, y: (x * tnp.exp(y)).sum()
  gx, gy = tg.grad(f, argnums=(0, 1))(x, y)
  _close(gx, np.exp(y.astype(np.float64)))
  _close(gy, x * np.exp(y.astype(np.float64)))
  v, (gx2, gy2) = tg.value_and_grad(f, argnums=(0, 1))(x, y)
  _close(v, (x * np.exp(y.astype(np.float64))).sum())
  _close(gx2, gx)
  _close(gy2, gy)


# ---- check_grads itself catches wrong rules ----

@tg.custom_jvp
def sin_wrong_first(x): return tnp.sin(x)


sin_wrong_first.defjvp(lambda p, t: (tnp.sin(p[0]), 1.01 * tnp.cos(p[0]) * t[0]))


@tg.custom_jvp
def sin_wrong_second(x): return tnp.sin(x)


sin_wrong_second.defjvp(lambda p, t: (tnp.sin(p[0]), tnp.cos(tg.lax.stop_gradient(p[0])) * t[0]))


@tg.custom_vjp
def sin_wrong_vjp(x): return tnp.sin(x)


sin_wrong_vjp.defvjp(lambda x: (tnp.sin(x), x), lambda x, g: (tnp.cos(x) * g * 1.01,))


def test_check_grads_catches_wrong_rules():
  x = normal(5)
  with pytest.raises(AssertionError): check_grads(sin_wrong_first, (x,), order=1, modes=("fwd",))
  with pytest.raises(AssertionError): check_grads(sin_wrong_first, (x,), order=1, modes=("rev",))
  check_grads(sin_wrong_second, (x,), order=1)
  with pytest.raises(AssertionError): check_grads(sin_wrong_second, (x,), order=2, modes=("fwd",))
  with pytest.raises(AssertionError): check_grads(sin_wrong_second, (x,), order=2, modes=("rev",))
  with pytest.raises(AssertionError): check_grads(sin_wrong_vjp, (x,), order=1, modes=("rev",))


# ---- the derivative functions batch like any other function ----

@pytest.mark.parametrize("f,args,kw", CASES)
def test_vmap_of_jvp_and_vjp(f, args, kw):
  rng = np.random.default_rng(7)
  batched = tuple(np.stack([a, (a * 0.9 + 0.05).astype(a.dtype)]) for a in args)
  tangents = tuple(rng.standard_normal((2,) + a.shape).astype(a.dtype) for a in args)
  # the batched and the per-slice derivatives round alike: within 840 ulps in float32, and with a float16 or bfloat16
  # argument within a tenth of its ulp (the same values)
  narrowest = max((a.dtype for a in args), key=eps)
  tols = tol(narrowest, 840, 840) if narrowest == np.float32 else tol(narrowest, 0.1, 0.1)
  check_vmap(lambda p, t: tg.jvp(f, p, t), (batched, tangents), **tols)
  out = tg.eval_shape(f, *args)
  cts = tg.tree.map(lambda o: rng.standard_normal((2,) + o.shape).astype(o.dtype.np), out)
  check_vmap(lambda p, ct: tg.vjp(f, *p)[1](ct), (batched, cts), **tols)


# ---- random programs ----

UNARY_SAFE = [tnp.sin, tnp.tanh, lambda x: x * x, lambda x: tnp.exp(-x * x), lambda x: tnp.log(1.0 + x * x),
              lambda x: tnp.sqrt(1.0 + x * x), lambda x: x * 0.5 - tnp.cos(x)]


@st.composite
def programs(draw):
  """A random chain of elementwise, movement and reduction steps, and its argument."""
  shape = draw(st.lists(st.integers(1, 4), min_size=1, max_size=3).map(tuple))
  steps, cur = [], shape
  for _ in range(draw(st.integers(1, 4))):
    kind = draw(st.sampled_from(["unary", "binary", "permute", "slice", "pad", "flip", "reduce", "reshape", "concat",
                                 "gather", "scatter", "sort", "cumsum"]))
    n = len(cur)
    if kind == "unary":
      steps.append(draw(st.sampled_from(UNARY_SAFE)))
    elif kind == "binary":
      steps.append(lambda x: x * tnp.sin(x[..., ::-1]) + x)
    elif kind == "permute" and n:
      perm = tuple(draw(st.permutations(range(n))))
      steps.append(lambda x, perm=perm: tnp.transpose(x, perm))
      cur = tuple(cur[p] for p in perm)
    elif kind == "slice" and n:
      ax, step = draw(st.integers(0, n - 1)), draw(st.sampled_from([1, 2, -1, -2]))
      key = (slice(None),) * ax + (slice(None, None, step),)
      steps.append(lambda x, key=key: x[key])
      cur = cur[:ax] + (len(range(cur[ax])[::step]),) + cur[ax + 1:]
    elif kind == "pad" and n:
      w = tuple((draw(st.integers(0, 2)), draw(st.integers(0, 2))) for _ in cur)
      steps.append(lambda x, w=w: tnp.pad(x, w) + 0.5)
      cur = tuple(d + lo + hi for d, (lo, hi) in zip(cur, w))
    elif kind == "flip" and n:
      ax = draw(st.integers(0, n - 1))
      w = np.arange(1.0, cur[ax] + 1.0, dtype=np.float32).reshape((-1,) + (1,) * (n - ax - 1))
      steps.append(lambda x, ax=ax, w=w: tnp.flip(x, ax) * w)
    elif kind == "reduce" and n > 1:
      ax, red = draw(st.integers(0, n - 1)), draw(st.sampled_from(["sum", "prod", "max", "min"]))
      steps.append(lambda x, ax=ax, red=red: getattr(x, red)(axis=ax))
      cur = cur[:ax] + cur[ax + 1:]
    elif kind == "reshape":
      steps.append(lambda x: x.reshape(-1)[::-1].reshape(x.shape[::-1]))
      cur = cur[::-1]
    elif kind == "concat" and n:
      ax = draw(st.integers(0, n - 1))
      steps.append(lambda x, ax=ax: tnp.concatenate([x, tnp.sin(x)], axis=ax))
      cur = cur[:ax] + (2 * cur[ax],) + cur[ax + 1:]
    elif kind == "gather" and n:
      i = np.asarray(draw(st.lists(st.integers(-cur[0], cur[0] - 1), min_size=1, max_size=4)), np.int32)
      steps.append(lambda x, i=i: x[i])
      cur = (len(i),) + cur[1:]
    elif kind == "scatter" and n:
      i = np.asarray(draw(st.lists(st.integers(-cur[0], cur[0] - 1), min_size=1, max_size=4)), np.int32)
      steps.append(lambda x, i=i: x.at[i].add(tnp.cos(x[i])))
    elif kind in ("sort", "cumsum") and n:
      ax = draw(st.integers(-n, n - 1))
      w = np.arange(1.0, cur[ax] + 1.0, dtype=np.float32).reshape((-1,) + (1,) * (-ax - 1 if ax < 0 else n - ax - 1))
      steps.append(lambda x, ax=ax, w=w, fn=getattr(tnp, kind): fn(x, axis=ax) * w)
  seed = draw(st.integers(0, 2 ** 16))
  return steps, np.random.default_rng(seed).uniform(-1.0, 1.5, shape).astype(np.float32)


@settings(max_examples=60)
@given(programs())
def test_random_programs(prog):
  steps, x = prog

  def f(x):
    for s in steps: x = s(x)
    return x

  check_grads(f, (x,), order=1, rtol=1e-4, atol=1e-4)


# ---- nested differentiation ----

def test_nested_grad_closes_over_outer_variable():
  _close(tg.grad(lambda x: x * tg.grad(lambda y: x + y)(1.0))(2.0), 1.0)
  _close(tg.grad(lambda x: tg.grad(lambda y: x * y * y)(x))(3.0), 12.0)
  _close(tg.grad(lambda x: tg.jvp(lambda y: x * tnp.sin(y), (x,), (1.0,))[1])(0.5),
         np.cos(0.5) - 0.5 * np.sin(0.5))
  x = normal(3)
  h = tg.jacfwd(tg.jacrev(lambda x: (tnp.sin(x) * x.sum()).sum()))(x)
  s, c = np.sin(x.astype(np.float64)), np.cos(x.astype(np.float64))
  want = c[:, None] + c[None, :] - np.diag(s) * x.sum()
  np.testing.assert_allclose(np.asarray(h), want, rtol=ulps(84), atol=ulps(84))


def test_has_aux():
  g, aux = tg.grad(lambda x: ((x * x).sum(), {"n": x.shape[0], "m": x.mean()}), has_aux=True)(normal(3))
  assert g.shape == (3,) and aux["n"] == 3
  out, vjp_fn, aux = tg.vjp(lambda x: (tnp.sin(x), x * 2), normal(3), has_aux=True)
  assert vjp_fn(np.ones(3, np.float32))[0].shape == (3,) and aux.shape == (3,)
  (v, aux), g = tg.value_and_grad(lambda x: (x.sum(), x[0]), has_aux=True)(normal(3))
  _close(g, np.ones(3))


def test_grad_errors():
  with pytest.raises(TypeError):
    tg.grad(lambda x: x * 2.0)(normal(3))
  with pytest.raises(TypeError):
    tg.grad(lambda x: (x > 0).sum())(normal(3))
