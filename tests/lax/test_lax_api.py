"""The jax.lax functions of tracegrad.lax against jax.lax itself: values, shapes and dtypes, jax.lax's errors on
mixed dtypes, derivatives against jax.grad, and a few under jit and vmap."""
import numpy as np
import pytest

import tracegrad as tg
import tracegrad.numpy as tnp
from tracegrad import lax

jax = pytest.importorskip("jax")
jl, jnp = jax.lax, jax.numpy

rng = np.random.default_rng(0)
X = rng.standard_normal((3, 5)).astype(np.float32)
XP = np.abs(X) + 0.5
I = rng.integers(-9, 9, (3, 5)).astype(np.int32)
J = np.array([[0, 1, -1, 3, 2]] * 3, np.int32)


def same(got, want, rtol=1e-5, atol=1e-6, equal_nan=True):
  got, want = (got if isinstance(got, (tuple, list)) else [got]), (want if isinstance(want, (tuple, list)) else [want])
  assert len(got) == len(want)
  for g, w in zip(got, want):
    g, w = np.asarray(g), np.asarray(w)
    assert g.shape == w.shape, (g.shape, w.shape)
    assert g.dtype == w.dtype, (g.dtype, w.dtype)
    if g.dtype.kind in "biu": np.testing.assert_array_equal(g, w)
    else: np.testing.assert_allclose(g, w, rtol=rtol, atol=atol, equal_nan=equal_nan)


def grads_match(tfn, jfn, *args, rtol=1e-4, atol=1e-5):
  same(tg.grad(lambda *a: tfn(*a).sum())(*args), jax.grad(lambda *a: jfn(*a).sum())(*args), rtol, atol)


# ---- slicing ----
@pytest.mark.parametrize("start", [(1, 2), (-1, 4), (5, -9)])
def test_dynamic_slice(start):
  same(lax.dynamic_slice(X, start, (2, 3)), jl.dynamic_slice(X, start, (2, 3)))
  f = tg.jit(lambda x, i, j: lax.dynamic_slice(x, (i, j), (2, 3)))
  same(f(X, *start), jl.dynamic_slice(X, start, (2, 3)))
  upd = np.ones((2, 2), np.float32)
  same(lax.dynamic_update_slice(X, upd, start), jl.dynamic_update_slice(X, upd, start))
  g = tg.jit(lambda x, i, j: lax.dynamic_update_slice(x, upd, (i, j)))
  same(g(X, *start), jl.dynamic_update_slice(X, upd, start))


def test_dynamic_slice_grad_and_vmap():
  grads_match(lambda x, i: lax.dynamic_slice(x, (i, i), (2, 3)) ** 2,
              lambda x, i: jl.dynamic_slice(x, (i, i), (2, 3)) ** 2,
              X, 1)
  upd = np.full((1, 2), 2.0, np.float32)
  same(tg.grad(lambda u: (lax.dynamic_update_slice(X, u, (tnp.int32(1), 2)) ** 2).sum())(upd),
       jax.grad(lambda u: (jl.dynamic_update_slice(X, u, (1, 2)) ** 2).sum())(upd))
  same(tg.grad(lambda x: (lax.dynamic_update_slice(x, upd, (tnp.int32(1), 2)) ** 2).sum())(X),
       jax.grad(lambda x: (jl.dynamic_update_slice(x, upd, (1, 2)) ** 2).sum())(X))
  idx = np.array([0, 3, 4], np.int32)
  same(tg.vmap(lambda i: lax.dynamic_slice_in_dim(X, i, 2, 1))(idx),
       jax.vmap(lambda i: jl.dynamic_slice_in_dim(X, i, 2, 1))(idx))


def test_in_dim_forms():
  same(lax.dynamic_slice_in_dim(X, 1, 2, axis=1), jl.dynamic_slice_in_dim(X, 1, 2, axis=1))
  same(lax.dynamic_index_in_dim(X, 2, 1, False), jl.dynamic_index_in_dim(X, 2, 1, False))
  same(lax.dynamic_index_in_dim(X, -1), jl.dynamic_index_in_dim(X, -1))
  u = np.ones((3, 1), np.float32)
  same(lax.dynamic_update_slice_in_dim(X, u, 4, 1), jl.dynamic_update_slice_in_dim(X, u, 4, 1))
  same(lax.dynamic_update_index_in_dim(X, np.ones(5, np.float32), 1, 0),
       jl.dynamic_update_index_in_dim(X, np.ones(5, np.float32), 1, 0))
  same(lax.slice_in_dim(X, 1, -1, 2, axis=1), jl.slice_in_dim(X, 1, -1, 2, axis=1))
  same(lax.index_in_dim(X, -2, 1, keepdims=False), jl.index_in_dim(X, -2, 1, keepdims=False))
  i0, i1 = np.array([1, -1, 0]), np.array([4, 0, 2])
  same(lax.index_take(X, (i0, i1), (0, 1)), jl.index_take(X, (i0, i1), (0, 1)))


def test_slicing_errors():
  with pytest.raises(TypeError, match="dynamic_update_slice.*int32.*float32"):
    lax.dynamic_update_slice(X, np.ones((1, 1), np.int32), (0, 0))
  with pytest.raises(TypeError, match="dynamic_slice: slice_sizes"):
    lax.dynamic_slice(X, (0, 0), (4, 1))


# ---- gather and scatter ----
GDN = lax.GatherDimensionNumbers(offset_dims=(1,), collapsed_slice_dims=(0,), start_index_map=(0, 1))
JGDN = jl.GatherDimensionNumbers(offset_dims=(1,), collapsed_slice_dims=(0,), start_index_map=(0, 1))
SDN = lax.ScatterDimensionNumbers((1,), (0,), (0, 1))
JSDN = jl.ScatterDimensionNumbers((1,), (0,), (0, 1))
IDX = np.array([[1, 2], [2, 4], [-1, 0], [0, 0]], np.int32)
UPD = np.arange(1.0, 9.0, dtype=np.float32).reshape(4, 2)


@pytest.mark.parametrize("mode", [None, "clip", "fill"])
def test_gather_scatter(mode):
  same(lax.gather(X, IDX, GDN, (1, 2), mode=mode), jl.gather(X, IDX, JGDN, (1, 2), mode=mode))
  for name in ["scatter", "scatter_add", "scatter_sub", "scatter_mul", "scatter_min", "scatter_max"]:
    same(getattr(lax, name)(X, IDX, UPD, SDN, mode=mode), getattr(jl, name)(X, IDX, UPD, JSDN, mode=mode))


def test_gather_scatter_batching_grad_and_apply():
  xb, ib = X.reshape(3, 5, 1), np.array([[[1], [4]], [[0], [2]], [[3], [3]]], np.int32)
  dn = dict(offset_dims=(2,), collapsed_slice_dims=(1,), start_index_map=(1,), operand_batching_dims=(0,),
            start_indices_batching_dims=(0,))
  same(lax.gather(xb, ib, lax.GatherDimensionNumbers(**dn), (1, 1, 1)),
       jl.gather(xb, ib, jl.GatherDimensionNumbers(**dn), (1, 1, 1)))
  grads_match(lambda x: lax.gather(x, IDX, GDN, (1, 2), mode="clip") ** 2,
              lambda x: jl.gather(x, IDX, JGDN, (1, 2), mode="clip") ** 2, X)
  grads_match(lambda u: lax.scatter_add(X, IDX, u, SDN) ** 2, lambda u: jl.scatter_add(X, IDX, u, JSDN) ** 2, UPD)
  dn1, jdn1 = lax.ScatterDimensionNumbers((), (0,), (0,)), jl.ScatterDimensionNumbers((), (0,), (0,))
  v = np.arange(5.0, dtype=np.float32)
  same(lax.scatter_apply(v, np.array([[1], [3]]), lambda t: t * 10, dn1, update_shape=(2,)),
       jl.scatter_apply(v, np.array([[1], [3]]), lambda t: t * 10, jdn1, update_shape=(2,)))
  assert lax.GatherScatterMode.from_any("clip") is lax.GatherScatterMode.CLIP


# ---- contractions ----
@pytest.mark.parametrize("dn,shapes", [((((1,), (0,)), ((), ())), ((2, 3), (3, 4))),
                                       ((((2,), (1,)), ((0,), (0,))), ((2, 3, 4), (2, 4, 5))),
                                       ((((0,), (1,)), ((), ())), ((3, 2), (4, 3, 2)))])
def test_dot_general(dn, shapes):
  a, b = (rng.standard_normal(s).astype(np.float32) for s in shapes)
  same(lax.dot_general(a, b, dn, precision=lax.Precision.HIGHEST), jl.dot_general(a, b, dn), 1e-5, 1e-5)
  grads_match(lambda a: lax.dot_general(a, b, dn), lambda a: jl.dot_general(a, b, dn), a)


def test_dot_batch_matmul_precision():
  a, b = rng.standard_normal((4, 2, 3)).astype(np.float32), rng.standard_normal((4, 3, 5)).astype(np.float32)
  same(lax.batch_matmul(a, b), jl.batch_matmul(a, b), 1e-5, 1e-5)
  same(lax.dot(a[0], b[0][:, 0], precision="highest"), jl.dot(a[0], b[0][:, 0]), 1e-5, 1e-5)
  i8 = np.ones((2, 3), np.int8)
  same(lax.dot(i8, i8[0], preferred_element_type=np.int32), jl.dot(i8, i8[0], preferred_element_type=np.int32))
  assert lax.Precision("highest") is lax.Precision.HIGHEST and str(lax.Precision.HIGH) == "HIGH"
  with pytest.raises(ValueError, match="precision"):
    lax.dot(a[0], b[0], precision="fast-ish")


# ---- elementwise ----
FLOAT1 = ["sin", "cos", "tan", "atan", "sinh", "cosh", "tanh", "asinh", "exp", "exp2", "expm1", "log1p", "logistic",
          "cbrt", "floor", "ceil", "round", "is_finite", "abs", "sign", "neg", "square"]
POS1 = ["log", "sqrt", "rsqrt", "reciprocal", "acosh"]
UNIT1 = ["asin", "acos", "atanh"]


@pytest.mark.parametrize("name", FLOAT1 + POS1 + UNIT1)
def test_unary(name):
  x = XP + 1 if name in POS1 else X / 4 if name in UNIT1 else X
  same(getattr(lax, name)(x), getattr(jl, name)(x), 2e-6, 1e-6)
  if name not in ("floor", "ceil", "round", "is_finite", "sign"):
    grads_match(getattr(lax, name), getattr(jl, name), x)


@pytest.mark.parametrize("name", ["div", "rem", "shift_left", "shift_right_arithmetic", "shift_right_logical",
                                  "bitwise_and", "bitwise_or", "bitwise_xor", "eq", "ne", "lt", "le", "gt", "ge"])
def test_integer_binary(name):
  a = np.array([7, -7, 5, -2147483648, 3, 8], np.int32)
  b = np.array([0, 0, -2, -1, 2, 40], np.int32)
  same(getattr(lax, name)(a, b), getattr(jl, name)(a, b))
  same(getattr(lax, name)(I, 3), getattr(jl, name)(I, 3))


@pytest.mark.parametrize("name", ["population_count", "clz", "bitwise_not", "abs", "sign", "neg"])
def test_integer_unary(name):
  same(getattr(lax, name)(I), getattr(jl, name)(I))
  if name == "abs":
    with pytest.raises(TypeError, match="abs does not accept dtype uint8"): lax.abs(I.astype(np.uint8))
  else:
    same(getattr(lax, name)(I.astype(np.uint8)), getattr(jl, name)(I.astype(np.uint8)))


def test_float_binary_and_others():
  for name in ["atan2", "div", "rem", "pow", "nextafter"]:
    same(getattr(lax, name)(XP, X), getattr(jl, name)(XP, X), 1e-5, 1e-6)
  grads_match(lambda x: lax.atan2(x, XP), lambda x: jl.atan2(x, XP), X)
  grads_match(lambda x: lax.pow(XP, x), lambda x: jl.pow(XP, x), X)
  same(lax.pow(XP, np.int32(3)), jl.pow(XP, np.int32(3)), 1e-5)
  same(lax.integer_pow(XP, -2), jl.integer_pow(XP, -2))
  same(lax.integer_pow(I, 3), jl.integer_pow(I, 3))
  same(lax.round(X * 2, lax.RoundingMethod.TO_NEAREST_EVEN), jl.round(X * 2, jl.RoundingMethod.TO_NEAREST_EVEN))
  same(lax.round(np.array([0.5, -2.5, 1.5], np.float32)), jl.round(np.array([0.5, -2.5, 1.5], np.float32)))
  same(lax.clamp(-0.5, X, 0.5), jl.clamp(-0.5, X, 0.5))
  same(lax.clamp(np.float32(0), X, XP), jl.clamp(np.float32(0), X, XP))
  w = np.array([[0, 1, 2, 1, 0]] * 3, np.int32)
  same(lax.select_n(w, X, XP, -X), jl.select_n(w, X, XP, -X))
  same(lax.select_n(X > 0, X, XP), jl.select_n(X > 0, X, XP))
  same(lax.exp(X.astype(np.float16)), jl.exp(X.astype(np.float16)), 1e-3, 1e-3)
  f = tg.jit(lambda x: lax.tanh(x) * lax.logistic(x))
  same(f(X), jl.tanh(X) * jl.logistic(X))
  same(tg.vmap(lambda x: lax.rem(x, 0.7))(X), jax.vmap(lambda x: jl.rem(x, 0.7))(X))


def test_elementwise_errors():
  with pytest.raises(TypeError, match="lax.add|lax.div.*int32, float32"):
    lax.div(I, X)
  with pytest.raises(TypeError, match="sin does not accept dtype int32"):
    lax.sin(I)
  with pytest.raises(TypeError, match="shift_left does not accept dtype float32"):
    lax.shift_left(X, X)


# ---- shapes ----
def test_shapes():
  same(lax.broadcast(X, (2,)), jl.broadcast(X, (2,)))
  same(lax.broadcast_to_rank(X[0], 3), jl.broadcast_to_rank(X[0], 3))
  same(lax.broadcasted_iota(np.float32, (2, 3), 1), jl.broadcasted_iota(np.float32, (2, 3), 1))
  same(lax.iota(np.int32, 4), jl.iota(np.int32, 4))
  same(lax.full((2, 2), 3.0, np.float32), jl.full((2, 2), 3.0, np.float32))
  same(lax.full_like(I, 7), jl.full_like(I, 7))
  same(lax.empty((2,), np.float32).shape, jl.empty((2,), np.float32).shape)
  same(lax.expand_dims(X, (0, 3)), jl.expand_dims(X, (0, 3)))
  same(lax.squeeze(X[None, :, None], (0, 2)), jl.squeeze(X[None, :, None], (0, 2)))
  same(lax.collapse(X[None], 1), jl.collapse(X[None], 1))
  same(lax.concatenate([X, XP], 1), jl.concatenate([X, XP], 1))
  same(lax.stack([X, XP], 1), jl.stack([X, XP], 1))
  same(lax.unstack(X, 1), jl.unstack(X, 1))
  same(lax.split(X, (2, 3), 1), jl.split(X, (2, 3), 1))
  same(lax.tile(X, (2, 1)), jl.tile(X, (2, 1)))
  same(lax.rev(X, (0, 1)), jl.rev(X, (0, 1)))
  assert lax.dtype(1.0) == jl.dtype(1.0) and lax.broadcast_shapes((2, 1), (3,)) == jl.broadcast_shapes((2, 1), (3,))
  grads_match(lambda x: lax.tile(lax.rev(x, (1,)), (2, 1)) * XP.sum(),
              lambda x: jl.tile(jl.rev(x, (1,)), (2, 1)) * XP.sum(), X)
  with pytest.raises(TypeError, match="concatenate.*dtype"):
    lax.concatenate([X, I], 0)


# ---- reductions and scans ----
@pytest.mark.parametrize("name", ["reduce_max", "reduce_min", "reduce_prod"])
def test_reduce_float(name):
  same(getattr(lax, name)(X, (1,)), getattr(jl, name)(X, (1,)))
  grads_match(lambda x: getattr(lax, name)(x, (0,)), lambda x: getattr(jl, name)(x, (0,)), X)


@pytest.mark.parametrize("name", ["reduce_and", "reduce_or", "reduce_xor"])
def test_reduce_bits(name):
  same(getattr(lax, name)(I, (0, 1)), getattr(jl, name)(I, (0, 1)))
  same(getattr(lax, name)(I > 0, (1,)), getattr(jl, name)(I > 0, (1,)))


@pytest.mark.parametrize("name", ["cumsum", "cumprod", "cummax", "cummin", "cumlogsumexp"])
@pytest.mark.parametrize("reverse", [False, True])
def test_cumulative(name, reverse):
  same(getattr(lax, name)(X, 1, reverse), getattr(jl, name)(X, 1, reverse))
  w = np.arange(5.0, dtype=np.float32)
  grads_match(lambda x: getattr(lax, name)(x, 1, reverse) * w, lambda x: getattr(jl, name)(x, 1, reverse) * w, X)


def test_reduce_argmax_associative_scan():
  same(lax.argmax(X, 1, np.int32), jl.argmax(X, 1, np.int32))
  same(lax.argmin(X, 0, np.int32), jl.argmin(X, 0, np.int32))
  same(lax.reduce(X, 0.0, lax.add, (1,)), jl.reduce(X, 0.0, jl.add, (1,)))
  same(lax.reduce(X, -np.inf, lax.max, (0,)), jl.reduce(X, -np.inf, jl.max, (0,)))
  sq = lambda a, b: a + b * b
  same(lax.reduce(X, np.float32(0), sq, (1,)), jl.reduce(X, np.float32(0), sq, (1,)))
  same(lax.associative_scan(lax.add, X, axis=1, reverse=True), jl.associative_scan(jl.add, X, axis=1, reverse=True))
  pair = lambda a, b: (a[0] * b[0], a[1] * b[0] + b[1])
  same(lax.associative_scan(pair, (XP, X)), jl.associative_scan(pair, (XP, X)))
  # reversed, fn still takes the one earlier in the reversed order first (JAX flips, scans, flips back)
  same(lax.associative_scan(pair, (XP, X), reverse=True, axis=1),
       jl.associative_scan(pair, (XP, X), reverse=True, axis=1))


# ---- sorting ----
def test_sort_top_k():
  y = np.array([[3.0, np.nan, -1.0, 2.0, -0.0, 0.0, -np.inf], [1, 1, 1, 0, 0, 5, 2]], np.float32)
  same(lax.sort(y), jl.sort(y))
  same(lax.sort(y, 0), jl.sort(y, 0))
  k = np.array([3, 1, 2, 1, 3], np.int32)
  same(lax.sort((k, -k, np.arange(5, dtype=np.int32)), num_keys=2), jl.sort((k, -k, jnp.arange(5)), num_keys=2))
  same(lax.sort_key_val(k, X[0]), jl.sort_key_val(k, X[0]))
  same(lax.top_k(y[1], 3), jl.top_k(y[1], 3))
  same(lax.top_k(I, 2), jl.top_k(I, 2))
  same(lax.approx_max_k(X, 2), jl.top_k(X, 2))
  same(lax.approx_min_k(X, 2)[0], -jl.top_k(-X, 2)[0])
  for ours, theirs in [(lax.top_k(I, 2), jl.top_k(I, 2)), (lax.approx_max_k(X, 2), jl.approx_max_k(X, 2)),
                       (lax.approx_min_k(X, 2), jl.approx_min_k(X, 2)), (lax.sort_key_val(k, X[0]), jl.sort_key_val(k, X[0]))]:
    assert type(ours) is type(theirs)   # a list, or a tuple, as JAX's
  grads_match(lambda x: lax.top_k(x, 2)[0], lambda x: jl.top_k(x, 2)[0], X)
  grads_match(lambda x: lax.sort(x, 0) * XP, lambda x: jl.sort(x, 0) * XP, X)


def test_sort_ties_zeros_of_both_signs_and_puts_every_nan_last_as_jax():
  x = np.array([np.nan, -np.nan, -0.0, 0.0, 1, -1, np.inf, -np.inf, 0.0, -0.0], np.float32)
  same(lax.sort((x, np.arange(10, dtype=np.int32)), num_keys=1), jl.sort((x, jnp.arange(10)), num_keys=1))


@pytest.mark.parametrize("dtype", [np.int8, np.uint8, np.int16, np.uint16, np.int32, np.uint32, np.float16, np.float32])
def test_sort_and_top_k_of_keys_packed_with_their_index_at_the_extremes_of_the_dtype(dtype):
  """A key of at most 32 bits travels through the network packed with its index in one int64: the dtype's least and
  greatest values, and ties among them, keep JAX's order."""
  r = np.random.default_rng(3)
  if np.issubdtype(dtype, np.integer):
    ii = np.iinfo(dtype)
    pool = np.array([ii.min, ii.min + 1, 0, 1, ii.max - 1, ii.max], dtype)
  else:
    fi = np.finfo(dtype)
    pool = np.array([-np.inf, -fi.max, -fi.tiny, -0.0, 0.0, fi.tiny, fi.max, np.inf, np.nan], dtype)
  x = r.choice(pool, (3, 45))
  iota = np.broadcast_to(np.arange(45, dtype=np.int32), x.shape)
  same(lax.sort((x, iota), num_keys=1), jl.sort((x, iota), num_keys=1))
  same(lax.top_k(x, 30), jl.top_k(x, 30))
  same(tnp.argsort(x), jnp.argsort(x))


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int64, np.uint8, np.bool_, np.float16])
def test_top_k_by_passes_matches_jax_and_the_sort(dtype):
  """Up to PASSES_K entries take a pass each; more sort the row: both give JAX's values and indices (nan largest,
  -0.0 below 0.0, the first of equals first), and the passes' gradient reaches the picked entries."""
  from tracegrad.lax.sorting import PASSES_K
  r = np.random.default_rng(7)
  x = r.integers(0, 6, (4, 3, 40)).astype(dtype) if not np.issubdtype(dtype, np.floating) else \
      r.normal(size=(4, 3, 40)).round(1).astype(dtype)
  if np.issubdtype(dtype, np.floating):
    x[0, 0, [3, 9]], x[0, 1, 5], x[1, 0, :6], x[2, 2, 1] = np.nan, -np.nan, -0.0, np.inf
    x[1, 0, 6:9] = 0.0
  for k in (0, 1, PASSES_K, PASSES_K + 1):
    got, want = lax.top_k(x, k), jl.top_k(x, k)
    same(got, want, rtol=0, atol=0)
    assert [g.dtype for g in got] == [w.dtype for w in want]
    assert np.array_equal(np.signbit(np.asarray(got[0], np.float64)), np.signbit(np.asarray(want[0], np.float64)))
  same(tg.jit(lambda x: lax.top_k(x, 4))(x), jl.top_k(x, 4), rtol=0, atol=0)
  same(tg.vmap(lambda x: lax.top_k(x, 3), 1)(x), jax.vmap(lambda x: jl.top_k(x, 3), 1)(x), rtol=0, atol=0)
  if dtype in (np.float32, np.float64):
    y = r.normal(size=(3, 40)).astype(dtype)
    grads_match(lambda x: lax.top_k(x, 6)[0] * np.arange(6.0), lambda x: jl.top_k(x, 6)[0] * np.arange(6.0), y)


@pytest.mark.parametrize("n,k", [(17, 17), (40, 17), (40, 33), (100, 40), (1000, 50), (300, 129)])
def test_top_k_by_merging_sorted_blocks_matches_jax(n, k):
  """Past PASSES_K, blocks of a power of two at least k are sorted and merged in pairs, each keeping its half: JAX's
  values, indices (ties: the lower index first) and gradients, batched and under jit."""
  r = np.random.default_rng(n + k)
  x = r.integers(-20, 20, (2, 3, n)).astype(np.float32) / 4
  x[0, 0, :5] = -0.0
  x[1, 2, [3, 7]] = np.nan
  same(lax.top_k(x, k), jl.top_k(x, k), rtol=0, atol=0)
  same(tg.jit(lambda x: lax.top_k(x, k))(x), jl.top_k(x, k), rtol=0, atol=0)
  same(tg.vmap(lambda x: lax.top_k(x, k), 1)(x), jax.vmap(lambda x: jl.top_k(x, k), 1)(x), rtol=0, atol=0)
  i = r.integers(-5, 5, (3, n)).astype(np.int16)
  same(lax.top_k(i, k), jl.top_k(i, k))
  y = r.normal(size=(3, n)).astype(np.float32)
  w = np.arange(k, dtype=np.float32)
  grads_match(lambda x: lax.top_k(x, k)[0] * w, lambda x: jl.top_k(x, k)[0] * w, y)


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32, np.uint8])
def test_approx_min_k_is_the_first_k_of_a_stable_sort(dtype):
  """Exact: by passes (k <= PASSES_K), by merging blocks or by a sort (64-bit keys); NaN last, -0.0 tied with 0.0."""
  r = np.random.default_rng(5)
  pool = np.array([np.nan, -0.0, 0.0, 1, -1, 2]) if np.dtype(dtype).kind == "f" else np.arange(4)
  y = r.choice(pool.astype(dtype), (3, 70))
  for k in (0, 5, 17, 40, 70):
    vals, idx = lax.approx_min_k(y, k)
    want = np.argsort(np.where(y == 0, 0, y), axis=-1, kind="stable")[:, :k]
    np.testing.assert_array_equal(np.asarray(idx), want)
    np.testing.assert_array_equal(np.asarray(vals), np.take_along_axis(y, want, -1))
  with pytest.raises(ValueError, match=r"approx_min_k: k must be in \[0, 70\] .* shape \(3, 70\)\), got 71"):
    lax.approx_min_k(y, 71)
  with pytest.raises(TypeError, match="approx_min_k: operand must have at least one axis"):
    lax.approx_min_k(y[0, 0], 1)


# ---- convolutions ----
def test_conv_helpers():
  dn = ("NHWC", "HWIO", "NHWC")
  assert lax.conv_dimension_numbers((1, 5, 5, 3), (3, 3, 3, 8), dn) == \
      jl.conv_dimension_numbers((1, 5, 5, 3), (3, 3, 3, 8), dn)
  assert lax.conv_general_permutations(dn) == jl.conv_general_permutations(dn)
  for pad in ["SAME", "VALID", [(1, 2), (0, 1)]]:
    assert lax.conv_general_shape_tuple((1, 8, 9, 3), (3, 2, 3, 4), (2, 1), pad, dn) == \
        tuple(int(n) for n in jl.conv_general_shape_tuple((1, 8, 9, 3), (3, 2, 3, 4), (2, 1), pad, dn))
    assert lax.conv_shape_tuple((1, 3, 8, 9), (4, 3, 2, 3), (2, 1), pad) == \
        tuple(int(n) for n in jl.conv_shape_tuple((1, 3, 8, 9), (4, 3, 2, 3), (2, 1), pad))
  for pad in ["SAME", "VALID"]:
    assert lax.conv_transpose_shape_tuple((1, 4, 5, 3), (3, 2, 3, 8), (2, 1), pad, dn) == \
        tuple(int(n) for n in jl.conv_transpose_shape_tuple((1, 4, 5, 3), (3, 2, 3, 8), (2, 1), pad, dn))
  assert lax.padtype_to_pads((5, 6), (2, 3), (2, 1), "SAME_LOWER") == \
      jl.padtype_to_pads((5, 6), (2, 3), (2, 1), "SAME_LOWER")
  assert lax.reduce_window_shape_tuple((5, 6), (2, 3), (2, 1), ((1, 0), (0, 2)), (2, 1), (1, 2)) == \
      tuple(int(n) for n in jl.reduce_window_shape_tuple((5, 6), (2, 3), (2, 1), ((1, 0), (0, 2)), (2, 1), (1, 2)))


def test_conv_variants():
  x = rng.standard_normal((2, 5, 6, 3)).astype(np.float32)
  w = rng.standard_normal((3, 2, 3, 4)).astype(np.float32)
  for pad, tk in [("SAME", False), ("VALID", True), ([(1, 0), (2, 1)], False)]:
    ww = w if not tk else rng.standard_normal((3, 2, 4, 3)).astype(np.float32)
    same(lax.conv_transpose(x, ww, (2, 1), pad, transpose_kernel=tk),
         jl.conv_transpose(x, ww, (2, 1), pad, transpose_kernel=tk),
         1e-4, 1e-4)
  dn = ("NWHC", "WHIO", "NCHW")
  wt = w.transpose(1, 0, 2, 3)
  same(lax.conv_general_dilated(x, wt, (1, 1), "SAME", dimension_numbers=dn, precision=lax.Precision.HIGHEST),
       jl.conv_general_dilated(x, wt, (1, 1), "SAME", dimension_numbers=dn), 1e-4, 1e-4)
  cdn = lax.conv_dimension_numbers(x.shape, wt.shape, dn)
  same(lax.conv_general_dilated(x, wt, (1, 1), "SAME", dimension_numbers=cdn),
       jl.conv_general_dilated(x, wt, (1, 1), "SAME", dimension_numbers=dn), 1e-4, 1e-4)
  pdn = ("NHWC", "OIHW", "NHWC")
  same(lax.conv_general_dilated_patches(x, (2, 3), (1, 2), "SAME", dimension_numbers=pdn),
       jl.conv_general_dilated_patches(x, (2, 3), (1, 2), "SAME", dimension_numbers=pdn))
  xc, wc = x.transpose(0, 3, 1, 2), w.transpose(3, 2, 0, 1)
  same(lax.conv_with_general_padding(xc, wc, (1, 1), [(1, 1), (0, 2)], (2, 1), (1, 2)),
       jl.conv_with_general_padding(xc, wc, (1, 1), [(1, 1), (0, 2)], (2, 1), (1, 2)), 1e-4, 1e-4)
  grads_match(lambda x: lax.conv_transpose(x, w, (2, 1), "SAME"), lambda x: jl.conv_transpose(x, w, (2, 1), "SAME"), x,
              rtol=1e-3, atol=1e-4)


# ---- the rest ----
def test_misc():
  same(lax.map(lambda r: r * 2, X), jl.map(lambda r: r * 2, X))
  same(tg.vmap(lambda x: x * lax.axis_size("i"), axis_name="i")(X),
       jax.vmap(lambda x: x * jl.axis_size("i"), axis_name="i")(X))
  for e, m in [(8, 7), (5, 10), (8, 23), (4, 3)]:
    same(lax.reduce_precision(X * 1000, e, m), jl.reduce_precision(X * 1000, e, m))
  assert lax.platform_dependent(2.0, cpu=lambda v: v + 1, default=lambda v: v) == 3.0
  same(lax.custom_linear_solve(lambda v: 2.0 * v, tnp.asarray(X), lambda mv, b: b / 2.0), X / 2)
  same(lax.custom_root(lambda v: v * v - 4.0, 1.0, lambda f, x0: tnp.float32(2.0), None), np.float32(2.0))
