"""Contractions against numpy, eagerly and traced, in value, shape and JAX's dtype (int8 @ int8 stays int8)."""
import numpy as np
import pytest
from hypothesis import given, strategies as st

import tracegrad
import tracegrad.numpy as tnp
from tracegrad.ir import Ops
from oracles import ALL, arrays, check, np_dtype, ulps

ATOL_ULPS = {"float32": 840, "float16": 1, "bfloat16": 1.25}   # atol in ulps of each output dtype


def jax_dtype(*names: str) -> str: return tnp.promote_types(*names).name if len(names) == 2 else names[0]


def wide(a: np.ndarray) -> np.ndarray:
  """a in a dtype numpy contracts exactly in (bool stays bool: its sum is 'or')."""
  if a.dtype == np.bool_: return a
  return a.astype(np.int64) if a.dtype.kind in "iu" else a.astype(np.float64)


def ref(nfn, out: str):
  """nfn computed on wide operands, then cast to the JAX result dtype `out` (integers wrap)."""
  def f(*xs, **kw):
    r = np.asarray(nfn(*[wide(x) if isinstance(x, np.ndarray) else x for x in xs], **kw))
    return r.astype(np_dtype(out))
  return f


def atol(out: str): return ulps(ATOL_ULPS[out], out) if out in ATOL_ULPS else None


@st.composite
def operand(draw, dtype: str, shape):
  return draw(arrays(dtype, tuple(shape), low=-4, high=4))


@st.composite
def two_dtypes(draw):
  da = draw(st.sampled_from(ALL))
  db = da if draw(st.booleans()) else draw(st.sampled_from(ALL))
  return da, db


@st.composite
def batch_pair(draw, max_dims=2):
  """Two batch shapes that broadcast together: suffixes of one shape with some sizes replaced by 1."""
  base = draw(st.lists(st.integers(1, 3), max_size=max_dims))
  def one():
    s = base[len(base) - draw(st.integers(0, len(base))):]
    return [1 if draw(st.booleans()) else n for n in s]
  return one(), one()


@st.composite
def matmul_case(draw):
  da, db = draw(two_dtypes())
  m, k, n = (draw(st.integers(1, 4)) for _ in range(3))
  ba, bb = draw(batch_pair())
  sa = [k] if draw(st.integers(0, 3)) == 0 else ba + [m, k]
  sb = [k] if draw(st.integers(0, 3)) == 0 else bb + [k, n]
  return draw(operand(da, sa)), draw(operand(db, sb)), jax_dtype(da, db)


@given(matmul_case())
def test_matmul(case):
  a, b, out = case
  check(tnp.matmul, ref(np.matmul, out), a, b, atol=atol(out))


@given(matmul_case())
def test_matmul_traced_graph_is_one_contraction(case):
  a, b, _ = case
  outer = tracegrad.make_graph(tnp.matmul)(a, b)
  node, = [u for u in outer.nodes() if u.op is Ops.COMPOSITE]   # one node named matmul, its body the contraction
  assert node.arg[1] == "matmul" and " = matmul " in str(outer)
  g = node.arg[0]
  ops = {u.op for u in g.nodes()}
  assert ops <= {Ops.PARAM, Ops.CAST, Ops.RESHAPE, Ops.BROADCAST, Ops.PERMUTE, Ops.MUL, Ops.AND, Ops.REDUCE_SUM,
                 Ops.REDUCE_MAX}, ops
  red = [u for u in g.nodes() if u.op in (Ops.REDUCE_SUM, Ops.REDUCE_MAX)]
  assert len(red) == 1 and red[0].src[0].op in (Ops.MUL, Ops.AND)


@st.composite
def dot_case(draw):
  da, db = draw(two_dtypes())
  k = draw(st.integers(1, 4))
  na = draw(st.integers(0, 3))
  nb = draw(st.integers(0, 3))
  sa = [draw(st.integers(1, 3)) for _ in range(na - 1)] + [k] if na else []
  sb = [] if nb == 0 else [k] if nb == 1 else \
    [draw(st.integers(1, 3)) for _ in range(nb - 2)] + [k, draw(st.integers(1, 3))]
  return draw(operand(da, sa)), draw(operand(db, sb)), jax_dtype(da, db)


@given(dot_case())
def test_dot(case):
  a, b, out = case
  nfn = np.dot if a.ndim and b.ndim else np.multiply
  check(tnp.dot, ref(nfn, out), a, b, atol=atol(out))


@st.composite
def inner_case(draw):
  da, db = draw(two_dtypes())
  k = draw(st.integers(1, 4))
  sa = [draw(st.integers(1, 3)) for _ in range(draw(st.integers(0, 2)))] + [k]
  sb = [draw(st.integers(1, 3)) for _ in range(draw(st.integers(0, 2)))] + [k]
  return draw(operand(da, sa)), draw(operand(db, sb)), jax_dtype(da, db)


@given(inner_case())
def test_inner(case):
  a, b, out = case
  check(tnp.inner, ref(np.inner, out), a, b, atol=atol(out))


@given(inner_case())
def test_outer(case):
  a, b, out = case
  check(tnp.outer, ref(np.outer, out), a, b, atol=atol(out))


@given(inner_case())
def test_kron(case):
  a, b, out = case
  check(tnp.kron, ref(np.kron, out), a, b, atol=atol(out))


@given(inner_case())
def test_vdot(case):
  a, b, out = case
  b = np.resize(b, a.shape)
  check(tnp.vdot, ref(np.vdot, out), a, b, atol=atol(out))


@given(st.data())
def test_vecdot(data):
  da, db = data.draw(two_dtypes())
  k = data.draw(st.integers(1, 4))
  ba, bb = data.draw(batch_pair())
  a, b = data.draw(operand(da, ba + [k])), data.draw(operand(db, bb + [k]))
  out = jax_dtype(da, db)
  check(tnp.vecdot, ref(lambda x, y: np.sum(x * y, axis=-1) if x.dtype != np.bool_ else np.any(x & y, axis=-1), out),
        a, b, atol=atol(out))


@st.composite
def tensordot_case(draw):
  da, db = draw(two_dtypes())
  nc = draw(st.integers(0, 2))
  cs = [draw(st.integers(1, 3)) for _ in range(nc)]
  fa = [draw(st.integers(1, 3)) for _ in range(draw(st.integers(0, 2)))]
  fb = [draw(st.integers(1, 3)) for _ in range(draw(st.integers(0, 2)))]
  if draw(st.booleans()):
    return draw(operand(da, fa + cs)), draw(operand(db, cs + fb)), nc, jax_dtype(da, db)
  # explicit axes, shuffled
  sa, sb = fa + cs, cs + fb
  pa = draw(st.permutations(range(len(sa))))
  pb = draw(st.permutations(range(len(sb))))
  a = draw(operand(da, [sa[i] for i in pa]))
  b = draw(operand(db, [sb[i] for i in pb]))
  xa = [list(pa).index(len(fa) + i) for i in range(nc)]
  xb = [list(pb).index(i) for i in range(nc)]
  if xa and draw(st.booleans()): xa = [x - a.ndim for x in xa]  # negative axes
  return a, b, (xa, xb), jax_dtype(da, db)


@given(tensordot_case())
def test_tensordot(case):
  a, b, axes, out = case
  check(lambda x, y: tnp.tensordot(x, y, axes), ref(lambda x, y: np.tensordot(x, y, axes), out), a, b, atol=atol(out))


EINSUM = [
  ("ij,jk->ik", [(2, 3), (3, 4)]), ("ij,jk", [(2, 3), (3, 4)]), ("i,i->", [(3,), (3,)]), ("i,i", [(3,), (3,)]),
  ("i,j->ij", [(2,), (3,)]), ("ij->ji", [(2, 3)]), ("ij", [(2, 3)]), ("ji", [(2, 3)]), ("ij->", [(2, 3)]),
  ("ij->j", [(2, 3)]), ("ii->i", [(3, 3)]), ("ii", [(3, 3)]), ("iij->j", [(3, 3, 2)]), ("iji->j", [(2, 3, 2)]),
  ("iii->i", [(2, 2, 2)]), ("ii,ij->j", [(3, 3), (3, 4)]), ("bij,bjk->bik", [(2, 2, 3), (2, 3, 4)]),
  ("...ij,...jk->...ik", [(2, 1, 2, 3), (3, 3, 4)]), ("...i,...i->...", [(2, 3), (3,)]),
  ("...ij->...ji", [(2, 3, 4)]), ("i...->...", [(3, 2, 2)]), ("...,...->...", [(), (2,)]),
  ("...ii->...i", [(2, 3, 3)]), ("ij...,jk...->ik...", [(2, 3, 2), (3, 4, 1)]), ("ij,kl->ijkl", [(2, 3), (1, 2)]),
  ("ijk,ikj->i", [(2, 3, 4), (2, 4, 3)]), ("ij,jk,kl->il", [(2, 3), (3, 4), (4, 5)]),
  ("ab,bc,cd", [(2, 3), (3, 1), (1, 2)]), ("i,i,i->", [(3,), (3,), (3,)]), ("ij,ij->ij", [(2, 3), (2, 3)]),
  ("ij,i->j", [(2, 3), (2,)]), ("Ab,bC->AC", [(2, 3), (3, 2)]), ("Ab,bC", [(2, 3), (3, 2)]),
  ("i,->i", [(3,), ()]), ("ij,jk->", [(2, 3), (3, 2)]), ("ijk,jl,lk->il", [(2, 3, 4), (3, 2), (2, 4)]),
  ("ab,cd,bd->ac", [(2, 3), (2, 4), (3, 4)]), (" ij , jk -> ik ", [(2, 3), (3, 4)]),
]


@pytest.mark.parametrize("subs,shapes", EINSUM, ids=[s for s, _ in EINSUM])
@given(dtype=st.sampled_from(ALL), data=st.data())
def test_einsum(subs, shapes, dtype, data):
  ops = [data.draw(operand(dtype, s)) for s in shapes]
  check(lambda *xs: tnp.einsum(subs, *xs), ref(lambda *xs: np.einsum(subs, *xs), dtype), *ops, atol=atol(dtype))


def test_einsum_interleaved_and_optimize():
  a, b = np.arange(6.0, dtype=np.float32).reshape(2, 3), np.arange(12.0, dtype=np.float32).reshape(3, 4)
  want = a @ b
  np.testing.assert_allclose(np.asarray(tnp.einsum(a, [0, 1], b, [1, 2], [0, 2])), want)
  np.testing.assert_allclose(np.asarray(tnp.einsum(a, [0, 1], b, [1, 2])), want)
  np.testing.assert_allclose(np.asarray(tnp.einsum("ij,jk->ik", a, b, optimize="greedy")), want)
  np.testing.assert_allclose(np.asarray(tnp.einsum("ij,jk->ik", a, b, optimize=False)), want)


def test_einsum_mixed_dtypes_promote():
  a, b = np.ones((2, 3), np.int8), np.ones((3,), np.float16)
  out = tnp.einsum("ij,j->i", a, b)
  assert out.dtype == tnp.float16 and np.asarray(out).tolist() == [3.0, 3.0]


def test_einsum_sums_ellipsis_missing_from_output():
  # as jax (opt_einsum): ellipsis axes left out of an explicit output are summed
  x = np.arange(6.0, dtype=np.float32).reshape(2, 3)
  np.testing.assert_allclose(np.asarray(tnp.einsum("...i->i", x)), x.sum(0))


def test_half_types_accumulate_in_float32():
  # 4096 ones: float16 can't count past 2048 by ones, a float32 accumulator can
  a = np.ones((1, 4096), np.float16)
  assert float(np.asarray(tnp.matmul(a, a.T))[0, 0]) == 4096.0
  b = np.ones((4096,), tnp.bfloat16.np)
  assert float(np.asarray(tnp.dot(b, b))) == 4096.0


def test_int_wraps_in_own_dtype():
  a = np.full((2, 4), 100, np.int8)
  out = tnp.matmul(a, a.T)
  assert out.dtype == tnp.int8
  np.testing.assert_array_equal(np.asarray(out), (a @ a.T))


def test_bool_matmul():
  a = np.array([[True, False], [False, False]])
  out = tnp.matmul(a, a)
  assert out.dtype == tnp.bool_
  np.testing.assert_array_equal(np.asarray(out), a @ a)


def test_preferred_element_type():
  a = np.full((2, 4), 100, np.int8)
  out = tnp.matmul(a, a.T, preferred_element_type=tnp.int32)
  assert out.dtype == tnp.int32
  np.testing.assert_array_equal(np.asarray(out), a.astype(np.int32) @ a.T.astype(np.int32))


def test_weak_scalars_in_dot():
  out = tnp.dot(np.ones(3, np.float16), 2.0)
  assert out.dtype == tnp.float16 and out.shape == (3,)


def test_matrix_transpose():
  x = np.arange(24).reshape(2, 3, 4).astype(np.int32)
  check(tnp.matrix_transpose, lambda x: np.swapaxes(x, -1, -2), x)
  with pytest.raises(ValueError, match="matrix_transpose"):
    tnp.matrix_transpose(np.ones(3))


def test_einsum_path():
  path, desc = tnp.einsum_path("ij,jk,kl", np.ones((2, 3)), np.ones((3, 4)), np.ones((4, 5)))
  assert path == [(0, 1), (0, 1)] and isinstance(desc, str)


# ---- errors ----
def test_matmul_errors():
  with pytest.raises(TypeError, match=r"matmul: contraction dimension mismatch: \(2, 3\) @ \(4, 5\)"):
    tnp.matmul(np.ones((2, 3)), np.ones((4, 5)))
  with pytest.raises(TypeError, match=r"matmul.*\(3,\) @ \(4,\)"):
    tnp.matmul(np.ones(3), np.ones(4))
  with pytest.raises(ValueError, match="matmul.*at least one dimension"):
    tnp.matmul(np.float32(2), np.ones(3))
  with pytest.raises(ValueError, match="matmul.*at least one dimension"):
    tnp.matmul(np.ones(3), 2.0)
  with pytest.raises(ValueError, match="matmul"):
    tnp.matmul(np.ones((2, 2, 3)), np.ones((3, 3, 4)))  # batch axes 2 and 3 don't broadcast


def test_contraction_errors():
  with pytest.raises(TypeError, match=r"dot: contraction dimension mismatch.*\(2, 3\).*\(4,\)"):
    tnp.dot(np.ones((2, 3)), np.ones(4))
  with pytest.raises(TypeError, match="inner"):
    tnp.inner(np.ones((2, 3)), np.ones(4))
  with pytest.raises(TypeError, match="vdot"):
    tnp.vdot(np.ones(3), np.ones(4))
  with pytest.raises(TypeError, match="tensordot"):
    tnp.tensordot(np.ones((2, 3)), np.ones((4, 3)), 1)
  with pytest.raises(TypeError, match="tensordot"):
    tnp.tensordot(np.ones((2, 3)), np.ones((3, 2)), ([0], [0, 1]))
  with pytest.raises(TypeError, match="tensordot"):
    tnp.tensordot(np.ones((2, 3)), np.ones((3, 2)), 3)


@pytest.mark.parametrize("subs,shapes", [
  ("ij,jk->ik", [(2, 3)]), ("ij->ij", [(2, 3, 4)]), ("ij->k", [(2, 3)]), ("ij->ii", [(2, 2)]),
  ("ij,jk->ik", [(2, 3), (4, 5)]), ("ii->i", [(2, 3)]), ("i.j->i", [(2, 3)]), ("i1->i", [(2, 3)]),
])
def test_einsum_errors(subs, shapes):
  with pytest.raises(ValueError, match="einsum"):
    tnp.einsum(subs, *[np.ones(s, np.float32) for s in shapes])


def test_operands_that_are_broadcast_constants():
  np.testing.assert_allclose(np.asarray(tnp.vecdot(tnp.ones((2, 3)), tnp.ones((3,)))), [3.0, 3.0])
  np.testing.assert_allclose(np.asarray(tnp.einsum("ij,j->i", tnp.ones((2, 3)), tnp.ones(3))), [3.0, 3.0])


@pytest.mark.parametrize("f", [lambda a, b, p: tnp.matmul(a, b, precision=p), lambda a, b, p: tnp.dot(a, b, precision=p),
                               lambda a, b, p: tnp.einsum("ij,jk->ik", a, b, precision=p),
                               lambda a, b, p: tnp.tensordot(a, b, 1, precision=p)])
def test_contractions_check_their_precision(f):
  """precision takes what jax.numpy's does (a lax.Precision, its names, a pair); anything else is a ValueError that
  names it, on every device, and a valid one changes nothing on the CPU."""
  a = np.ones((2, 3), np.float32)
  b = np.ones((3, 4), np.float32)
  with pytest.raises(ValueError, match="precision 'bogus' is not a lax.Precision"):
    f(a, b, "bogus")
  for p in ("highest", ("default", "float32"), tracegrad.lax.Precision.HIGH):
    np.testing.assert_array_equal(np.asarray(f(a, b, p)), a @ b)
