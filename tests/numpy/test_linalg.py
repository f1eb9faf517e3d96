"""tracegrad.numpy.linalg against numpy.linalg and jax.numpy.linalg: values, shapes and dtypes (eager, traced, jit,
batched), gradients (against jax.grad and finite differences), vmap against slicing, errors, and graphs whose size
does not grow with the matrices'."""
import math
import re
import time

import numpy as np
import pytest
from hypothesis import given, strategies as st

import tracegrad
import tracegrad.numpy as tnp
from tracegrad.ir import Ops, toposort
from oracles import INTS, arrays, assert_close, check, check_vmap, np_dtype, tol, traced, ulps
from tracegrad.test_util import check_grads

jax = pytest.importorskip("jax")
jnp = jax.numpy

TOL = tol("float32", 1680, 168)


def well_conditioned(rng, batch, n, dtype=np.float32):
  """Random matrices made diagonally dominant: A = R + n*I with R ~ N(0, 1), rows shuffled so pivoting matters."""
  a = rng.standard_normal((*batch, n, n)) + n * np.eye(n)
  perm = rng.permutation(n)
  return a[..., perm, :].astype(dtype)


RNG = np.random.default_rng(7)
A = well_conditioned(RNG, (), 4)
AS = well_conditioned(RNG, (2,), 4)
G = RNG.standard_normal((4, 4)).astype(np.float32)
SPD = (G @ G.T + 4 * np.eye(4)).astype(np.float32)
SYM = (G + G.T).astype(np.float32)
TALL = RNG.standard_normal((5, 3)).astype(np.float32)
WIDE = TALL.T.copy()
V = RNG.standard_normal(4).astype(np.float32)
RANK3 = np.array([[1, 2, 3, 4], [2, 4, 6, 8], [0, 1, 1, 1], [1, 0, 2, 5]], np.float32)   # rank n - 1
RANK2 = np.array([[1, 2, 3, 4], [2, 4, 6, 8], [3, 6, 9, 12], [1, 0, 2, 5]], np.float32)  # rank n - 2


# ---- against numpy, on random shapes ----

@st.composite
def matrices(draw, max_n=6):
  seed = draw(st.integers(0, 2**31))
  batch = tuple(draw(st.lists(st.integers(1, 3), max_size=2)))
  n = draw(st.integers(1, max_n))
  return np.random.default_rng(seed), batch, n


@given(matrices())
def test_det_slogdet_inv(case):
  rng, batch, n = case
  a = well_conditioned(rng, batch, n)
  f = lambda x: (tnp.linalg.det(x), *tnp.linalg.slogdet(x), tnp.linalg.inv(x))  # noqa: E731
  want = [w.astype(np.float32) for w in (np.linalg.det(a), *np.linalg.slogdet(a), np.linalg.inv(a))]
  for got in (f(a), traced(f, tnp.asarray(a))):
    for g, w in zip(got, want): assert_close(g, w, **TOL)
  res = tnp.linalg.slogdet(a)
  assert isinstance(res, tnp.linalg.SlogdetResult) and res.sign.shape == batch


@st.composite
def solve_case(draw):
  rng, batch, n = draw(matrices())
  a = well_conditioned(rng, batch, n)
  kind = draw(st.sampled_from(["vector", "matrix", "broadcast"]))
  if kind == "vector": b = rng.standard_normal((n,))
  elif kind == "matrix": b = rng.standard_normal((*batch, n, draw(st.integers(1, 3))))
  else:  # b's batch broadcasts against a's (and may add axes)
    bb = [1 if draw(st.booleans()) else m for m in batch]
    extra = [draw(st.integers(1, 2))] if draw(st.booleans()) else []
    b = rng.standard_normal((*extra, *bb, n, draw(st.integers(1, 3))))
  return a, b.astype(np.float32)


@given(solve_case())
def test_solve(case):
  a, b = case
  check(tnp.linalg.solve, np.linalg.solve, a, b, **TOL)


def test_pivoting_needed():
  # a zero leading entry: elimination without row swaps would divide by zero
  a = np.array([[0.0, 1.0, 2.0, 1.0], [1.0, 0.0, 3.0, 0.0], [4.0, -3.0, 8.0, 1.0], [0.0, 0.0, 1.0, 5.0]], np.float32)
  check(tnp.linalg.det, np.linalg.det, a, **TOL)
  check(tnp.linalg.inv, np.linalg.inv, a, **TOL)
  check(tnp.linalg.solve, np.linalg.solve, a, np.array([1.0, 2.0, 3.0, 4.0], np.float32), **TOL)
  p = np.eye(5, dtype=np.float32)[[2, 0, 3, 1, 4]]
  check(tnp.linalg.det, np.linalg.det, p)


def test_large_n():
  rng = np.random.default_rng(0)
  a = well_conditioned(rng, (2,), 48)
  b = rng.standard_normal((48,)).astype(np.float32)
  check(tnp.linalg.solve, np.linalg.solve, a, b, **TOL)
  check(lambda x: tnp.linalg.slogdet(x)[1], lambda x: np.linalg.slogdet(x)[1], a, **TOL)


def test_singular_gives_inf_nan_not_error():
  s = np.array([[1.0, 2.0], [2.0, 4.0]], np.float32)
  assert float(np.asarray(tnp.linalg.det(s))) == 0.0
  sign, logdet = tnp.linalg.slogdet(s)
  assert float(np.asarray(sign)) == 0.0 and float(np.asarray(logdet)) == -math.inf
  sign, logdet = tnp.linalg.slogdet(RANK3)
  assert float(np.asarray(sign)) == 0.0 and float(np.asarray(logdet)) == -math.inf
  assert not np.isfinite(np.asarray(tnp.linalg.inv(RANK3))).all()
  assert not np.isfinite(np.asarray(tnp.linalg.solve(RANK3, np.ones(4, np.float32)))).all()
  assert float(np.asarray(tnp.linalg.det(np.zeros((4, 4), np.float32)))) == 0.0
  assert float(np.asarray(traced(tnp.linalg.det, tnp.asarray(RANK2)))) == 0.0


def test_dtypes():
  # integers promote to float32; half types compute in float32 and come back in their own dtype
  a = np.array([[2, 1], [1, 3]], np.int32)
  for f in (tnp.linalg.det, tnp.linalg.inv, tnp.linalg.cholesky, tnp.linalg.svdvals, tnp.linalg.pinv):
    assert f(a).dtype == tnp.float32
  check(tnp.linalg.det, lambda x: np.linalg.det(x.astype(np.float64)), a, want_dtype="float32")
  for name in ("float16", "bfloat16"):
    h = a.astype(np_dtype(name))
    assert tnp.linalg.det(h).dtype.name == name and tnp.linalg.eigh(h).eigenvectors.dtype.name == name
    assert_close(tnp.linalg.inv(h), np.linalg.inv(a.astype(np.float64)).astype(np_dtype(name)), dtype=name)
  assert tnp.linalg.solve(a, np.array([1, 2], np.int8)).dtype == tnp.float32
  x, resid, rank, s = tnp.linalg.lstsq(a, np.array([1, 2]))
  assert (x.dtype, resid.dtype, rank.dtype, s.dtype) == (tnp.float32, tnp.float32, tnp.int32, tnp.float32)
  assert tnp.linalg.det(np.zeros((0, 0), np.float32)).tolist() == 1.0
  assert tnp.linalg.solve(np.zeros((0, 0), np.float32), np.zeros(0, np.float32)).shape == (0,)
  assert tnp.linalg.inv(np.zeros((3, 0, 0), np.float32)).shape == (3, 0, 0)


# ---- the decompositions and what is built on them, against numpy.linalg ----

def _same(mine, want, tol=2e-4, dtypes=True):
  mine, want = tracegrad.tree.leaves(mine), jax.tree.leaves(want)
  assert len(mine) == len(want), (len(mine), len(want))
  for a, b in zip(mine, want):
    a, b = np.asarray(a), np.asarray(b)
    assert a.shape == b.shape, (a.shape, b.shape)
    if dtypes: assert a.dtype == b.dtype, (a.dtype, b.dtype)
    scale = max(1.0, float(np.nanmax(np.abs(b), initial=0))) if b.dtype.kind == "f" else 1.0
    np.testing.assert_allclose(a, b, rtol=tol, atol=tol * scale, equal_nan=True)


def _sign_fixed(q, r):
  """q and r with each column of q (row of r) multiplied by the sign of r's diagonal: unique factors."""
  d = np.sign(np.diagonal(np.asarray(r), 0, -2, -1))[..., None, :]
  k = d.shape[-1]
  return np.asarray(q)[..., :k] * d, np.asarray(r)[..., :k, :] * np.swapaxes(d, -1, -2)


def _reconstruct_svd(u, s, vh):
  k = np.asarray(s).shape[-1]
  return (np.asarray(u)[..., :k] * np.asarray(s)[..., None, :]) @ np.asarray(vh)[..., :k, :]


def _eigh_reconstructs(w, v):
  return (np.asarray(v) * np.asarray(w)[..., None, :]) @ np.swapaxes(np.asarray(v), -1, -2)


# (id, f(linalg module) -> function, arguments, post): post (on numpy arrays) makes the factors that LAPACK may sign
# either way unique, or reconstructs the matrix from them; tracegrad's float32 results are compared with numpy's
# float64 ones, eagerly and under jit
CASES = [
  ("cholesky", lambda L: lambda x: (L.cholesky(x), L.cholesky(x[0], upper=True)), (np.stack([SPD, 2 * SPD]),), None),
  ("qr", lambda L: lambda x, y: (L.qr(x), L.qr(y), L.qr(x, mode="r"), L.qr(x, mode="complete")), (TALL, WIDE),
   lambda q, r, q2, r2, r3, qc, rc: (*_sign_fixed(q, r), *_sign_fixed(q2, r2), abs(r3), qc.shape, rc.shape)),
  ("eigh", lambda L: lambda x, y: (L.eigh(x), L.eigh(y, UPLO="U")[0], L.eigvalsh(x)), (np.stack([SYM, SPD]), SYM),
   lambda w, v, *rest: (w, _eigh_reconstructs(w, v), *rest)),
  ("svd", lambda L: lambda x, y: (L.svd(x), L.svd(y, full_matrices=False), L.svd(x, hermitian=False, compute_uv=False)),
   (WIDE, np.stack([TALL] * 2)),
   lambda u, s, vh, u2, s2, vh2, s3: (_reconstruct_svd(u, s, vh), u.shape, vh.shape, _reconstruct_svd(u2, s2, vh2),
                                      u2.shape, vh2.shape, s, s3)),
  ("svd hermitian", lambda L: lambda x: (L.svd(x, hermitian=True), L.svd(x, hermitian=True, compute_uv=False)), (SYM,),
   lambda u, s, vh, s2: (_reconstruct_svd(u, s, vh), abs(u), s, s2)),
  ("lstsq", lambda L: lambda a, b, c: (L.lstsq(a, b)[::2], L.lstsq(a, c, rcond=0.2)[::2], L.lstsq(RANK2, V)[::2]),
   (TALL, TALL[:, 0] + 1, TALL[:, :2] + 1), None),
  ("pinv", lambda L: lambda *xs: [L.pinv(x) for x in xs] + [L.pinv(xs[-1], rtol=0.1), L.pinv(SPD, hermitian=True)],
   (TALL, WIDE, RANK2, np.stack([SPD, SYM])), None),
  ("cond", lambda L: lambda x, y: [L.cond(x, p) for p in (None, 2, -2, "fro", "nuc", 1, -1, np.inf, -np.inf)]
   + [L.cond(y), L.cond(y, -2), L.cond(RANK2, 1)], (AS, WIDE), None),
  ("tensorinv tensorsolve", lambda L: lambda x, b: (
    L.tensorinv(x.reshape(4, 2, 2), ind=1), L.tensorsolve(x.reshape(2, 2, 4), b),
    L.tensorsolve(x.reshape(4, 2, 2), b, axes=(0,))), (A, V.reshape(2, 2)), None),
  ("matrix_power", lambda L: lambda x: [L.matrix_power(x, n) for n in (-3, -1, 0, 1, 2, 5)], (AS / 4,), None),
]


@pytest.mark.parametrize("name,f,args,post", CASES, ids=[c[0] for c in CASES])
def test_matches_numpy(name, f, args, post):
  post = post or (lambda *xs: xs)
  leaves = lambda tree: [np.asarray(x) for x in tracegrad.tree.leaves(tree)]  # noqa: E731
  want = [np.asarray(w, np.float32) if np.asarray(w).dtype == np.float64 else w
          for w in post(*leaves(f(np.linalg)(*(np.asarray(a, np.float64) for a in args))))]
  _same(post(*leaves(f(tnp.linalg)(*args))), want)
  _same(post(*leaves(tracegrad.jit(f(tnp.linalg))(*args))), want)


# ---- where jax.numpy.linalg differs from numpy: against JAX, each group in one compiled JAX function ----
JAX_CASES = [
  ("solve batching and dtypes", lambda L: lambda a, b, c, i: (
    L.solve(a, V), L.solve(a[:, None], b), L.solve(i, i[0]), L.inv(i), L.det(i), L.slogdet(i), L.cholesky(c),
    L.svd(i, compute_uv=False), L.matrix_rank(i)),
   (AS, np.stack([TALL[:4]] * 3), SPD, np.array([[2, 1], [1, 3]]))),
  ("det and slogdet at the edges", lambda L: lambda a, b, c: (
    [L.det(x) for x in (a[:2, :2], a[:3, :3], c, b, RANK3, RANK2, np.zeros((4, 4), np.float32))],
    [L.slogdet(x) for x in (a[:1, :1], a[:2, :2], -b, RANK3)], L.slogdet(b, method="qr"), L.cholesky(-SPD)),
   (A, AS, RNG.standard_normal((3, 5, 5)).astype(np.float32))),
  ("lstsq pinv matrix_rank cond", lambda L: lambda a, b, c, m: (
    L.lstsq(a, b), L.lstsq(a, c, rcond=0.2), L.lstsq(WIDE, V[:3]), L.lstsq(RANK2, V),
    L.lstsq(np.zeros((0, 2), np.float32), np.zeros(0, np.float32)), L.pinv(np.zeros((0, 3), np.float32)),
    L.pinv(m, rtol=np.array([0.1, 0.5, 0.01], np.float32)),
    L.matrix_rank(m), L.matrix_rank(m, rtol=3.0), L.matrix_rank(m, tol=0.5), L.matrix_rank(m[0, 0]),
    L.matrix_rank(m[0, 0] * 0), L.matrix_rank(SYM, hermitian=True), L.cond(RANK2, "fro"), L.cond(RANK2, np.inf)),
   (TALL, TALL[:, 0] + 1, TALL[:, :2] + 1, np.stack([RANK3, RANK2, SPD]))),
  ("svd hermitian and eigh upper", lambda L: lambda x, u: (
    L.svd(x, hermitian=True), L.eigh(u, UPLO="U", symmetrize_input=False), L.multi_dot([V[:3], WIDE, TALL, A[:3]])),
   (SYM, np.triu(SYM))),
]


@pytest.mark.parametrize("name,f,args", JAX_CASES, ids=[c[0] for c in JAX_CASES])
def test_matches_jax(name, f, args):
  _same(f(tnp.linalg)(*args), jax.jit(f(jnp.linalg))(*args))


def test_lstsq_numpy_resid_as_jax():
  for a, b in ((np.ones((5, 2), np.float32), TALL[:, 1]),):   # rank deficient: no residuals
    _same(tnp.linalg.lstsq(a, b, numpy_resid=True), jnp.linalg.lstsq(a, b, numpy_resid=True))
  assert tnp.linalg.lstsq(TALL, TALL[:, 1], numpy_resid=True)[1].shape == (1,)
  assert tnp.linalg.lstsq(WIDE, V[:3], numpy_resid=True)[1].shape == (0,)


def test_result_types():
  assert type(tnp.linalg.eigh(SPD)) is tnp.linalg.EighResult and tnp.linalg.eigh(SPD).eigenvectors.shape == (4, 4)
  assert type(tnp.linalg.qr(TALL)) is tnp.linalg.QRResult and tnp.linalg.qr(TALL).R.shape == (3, 3)
  assert type(tnp.linalg.svd(TALL)) is tnp.linalg.SVDResult and tnp.linalg.svd(TALL).Vh.shape == (3, 3)
  assert type(tracegrad.jit(tnp.linalg.svd)(TALL)) is tnp.linalg.SVDResult
  assert type(tnp.linalg.lstsq(TALL, TALL[:, 0])) is tuple


# ---- gradients ----

# scalar losses, checked by finite differences (in float64, forward and reverse mode)
LOSSES = {
  "solve a and b": (lambda L, x: (L.solve(x, x[:, :2] * 2) ** 2).sum() + L.solve(x, x[0]).sum(), A),
  "inv": (lambda L, x: (L.inv(x) ** 2).sum(), AS),
  "det": (lambda L, x: L.det(x).sum() + L.det(x[:, :3, :3]).sum(), AS),
  "det rank n-1": (lambda L, x: L.det(x), RANK3),
  "slogdet": (lambda L, x: L.slogdet(x).logabsdet.sum() + L.slogdet(x[:, :2, :2]).logabsdet.sum(), AS),
  "cholesky": (lambda L, x: (L.cholesky(x @ x.T + 4 * np.eye(4), upper=True) ** 2).sum(), G),
  "qr": (lambda L, x: (L.qr(x)[1] ** 2).sum() + (L.qr(x)[0][:, 0] ** 3).sum(), TALL),
  "eigh": (lambda L, x: (L.eigh(x)[0] ** 2).sum() + (L.eigh(x)[1][:, 0] ** 4).sum() + L.eigvalsh(x)[0], SYM),
  "svd": (lambda L, x: (L.svd(x, full_matrices=False)[0][:, 0] ** 4).sum() + L.svdvals(x).sum(), TALL),
  "lstsq": (lambda L, x: (L.lstsq(x, x[:, 0] + 1)[0] ** 2).sum() + L.lstsq(x, x[:, :2])[1].sum(), TALL + 1),
  "pinv": (lambda L, x: (L.pinv(x) ** 2).sum() + L.pinv(x.T).sum(), TALL),
  "norms": (lambda L, x: L.norm(x, 2) + L.norm(x, "nuc") + L.norm(x, -2) + L.norm(x, 1) + L.norm(x, np.inf)
            + L.norm(x, "fro") + L.vector_norm(x, ord=3) + L.matrix_norm(x, ord=-1), TALL),
  "cond": (lambda L, x: L.cond(x) + L.cond(x, "fro") + L.cond(x, 1), A),
  "tensorsolve matrix_power": (lambda L, x: L.tensorsolve(x.reshape(2, 2, 4), x[0].reshape(2, 2)).sum()
                               + L.matrix_power(x / 4, -2).sum() + L.multi_dot([x, x.T, x]).sum(), A),
}


@pytest.mark.parametrize("name", LOSSES)
def test_gradients_match_finite_differences(name):
  loss, x = LOSSES[name]
  with tracegrad.enable_x64(True):
    check_grads(lambda v: loss(tnp.linalg, v), (x.astype(np.float64),), order=1, modes=("fwd", "rev"))


def test_gradients_match_jax():
  # where JAX's derivative is its own (det at singular matrices, symmetrized inputs, the pseudo-inverse's formula,
  # least squares through the SVD), and a few others; one compiled JAX function for all
  def losses(L, a, r3, r2, s, t):
    return (L.det(r3) + L.det(r2) + 2 * L.det(r3[:3, :3]) + 3 * L.det(a),
            (L.eigh(s)[0] ** 2).sum() + (L.eigh(s)[1][:, 0] ** 4).sum()
            + (L.cholesky(a @ a.T + 4 * np.eye(4)) ** 2).sum()
            + (L.svd(s, hermitian=True, compute_uv=False) ** 3).sum() + (L.pinv(s, hermitian=True) ** 2).sum(),
            (L.pinv(t) ** 2).sum() + (L.lstsq(t, t[:, 0] + 1)[0] ** 2).sum() + L.lstsq(t, t[:, :2])[1].sum()
            + (L.qr(t)[1] ** 2).sum() + L.slogdet(a).logabsdet + (L.solve(a, t[:4, :2]) ** 2).sum()
            + (L.inv(a) ** 2).sum())

  args = (A, RANK3, RANK2, SYM, TALL)
  for i in range(3):
    mine = tracegrad.grad(lambda *xs: losses(tnp.linalg, *xs)[i], argnums=(0, 1, 2, 3, 4))(*args)
    theirs = jax.jit(jax.grad(lambda *xs: losses(jnp.linalg, *xs)[i], argnums=(0, 1, 2, 3, 4)))(*args)
    _same(mine, theirs, 2e-3)


def test_second_derivatives():
  f = lambda L: lambda x: L.det(x) + L.slogdet(x).logabsdet  # noqa: E731
  with tracegrad.enable_x64(True):
    check_grads(f(tnp.linalg), (A.astype(np.float64),), order=2, modes=("rev",))


# ---- vmap and jit ----

VMAPS = [
  ("solve", lambda a, b: tnp.linalg.solve(a, b), (AS, np.stack([V, 2 * V]))),
  ("inv det slogdet", lambda a: (tnp.linalg.inv(a), tnp.linalg.det(a), tnp.linalg.slogdet(a)), (AS,)),
  ("cholesky eigvalsh svdvals", lambda a: (tnp.linalg.cholesky(a), tnp.linalg.eigvalsh(a), tnp.linalg.svdvals(a)),
   (np.stack([SPD, 2 * SPD]),)),
  ("lstsq pinv rank", lambda a, b: (tnp.linalg.lstsq(a, b)[:3], tnp.linalg.pinv(a), tnp.linalg.matrix_rank(a)),
   (np.stack([TALL, TALL * 2]), np.stack([TALL[:, 0], TALL[:, 1]]))),
  ("norm cond", lambda a: (tnp.linalg.norm(a, 2), tnp.linalg.cond(a, 1)), (AS,)),
]


@pytest.mark.parametrize("name,f,args", VMAPS, ids=[c[0] for c in VMAPS])
def test_vmap_matches_slicing(name, f, args):
  check_vmap(f, args, **tol("float32", 840, 84))


# ---- graphs: one named node whose body does not grow with n ----
NAMED = {
  "solve": (tnp.linalg.solve, (AS[..., :3, :3], TALL[:3, :2]), "c:f32[2,3,2] = solve a b"),
  "inv": (tnp.linalg.inv, (AS[..., :3, :3],), "b:f32[2,3,3] = inv a"),
  "det": (tnp.linalg.det, (AS,), "b:f32[2] = det a"),
  "slogdet": (tnp.linalg.slogdet, (AS,), "b:f32[2] c:f32[2] = slogdet a"),
  "matrix_power": (lambda x: tnp.linalg.matrix_power(x, -3), (AS / 3,), "b:f32[2,4,4] = matrix_power a"),
  "eigh": (tnp.linalg.eigh, (AS,), "b:f32[2,4] c:f32[2,4,4] = eigh a"),
  "lstsq": (tnp.linalg.lstsq, (TALL, TALL), "c:f32[3,3] d:f32[3] e:i32[] f:f32[3] = lstsq a b"),
}


@pytest.mark.parametrize("name", NAMED)
def test_traced_as_one_named_node(name):
  f, args, node = NAMED[name]
  g = tracegrad.make_graph(f)(*args)
  outs, call = node.split(" = ")
  outs = " ".join(r"[a-z]+:" + re.escape(o.split(":")[1]) for o in outs.split())
  assert re.search(rf"\n    {outs} = {call.split()[0]}( [a-z]+)+\n", str(g)), g
  # whatever else the graph holds are constants the node's body uses, lifted out of it: nothing reads the inputs
  reads = {u.op for u in toposort(list(g.outputs)) if any(i in toposort([u]) for i in g.inputs)}
  assert reads == {Ops.PARAM, Ops.COMPOSITE, Ops.PROJ}, reads
  eager = f(*args)
  got = tracegrad.jit(f)(*args)
  assert type(got) is type(eager)
  for g, e in zip(tracegrad.tree.leaves(got), tracegrad.tree.leaves(eager)):
    assert_close(g, e, **tol("float32", 84, 84))


def _body_size(f, *args) -> int:
  """The number of nodes in the body of the one named node of f's graph."""
  node, = [u for u in tracegrad.make_graph(f)(*args).nodes() if u.op is Ops.COMPOSITE]
  return len(node.arg[0].nodes())


SIZED = {"solve": lambda x: tnp.linalg.solve(x, x[0]), "inv": tnp.linalg.inv, "det": tnp.linalg.det,
         "slogdet": lambda x: tnp.linalg.slogdet(x).logabsdet, "lstsq": lambda x: tnp.linalg.lstsq(x, x)[0],
         "pinv": tnp.linalg.pinv}


@pytest.mark.parametrize("name", SIZED)
def test_graph_size_does_not_depend_on_n(name):
  f = SIZED[name]
  sizes = [_body_size(f, tnp.ones((n, n))) for n in (8, 256)]
  assert sizes[0] == sizes[1] and sizes[0] < 200, sizes
  grads = [len(tracegrad.make_graph(tracegrad.grad(lambda x: f(x).sum()))(tnp.ones((n, n))).nodes()) for n in (8, 64)]
  assert grads[0] == grads[1], grads


def test_jit_solve_compiles_a_few_kernels_at_n_256():
  n = 256
  a = well_conditioned(np.random.default_rng(1), (), n)
  b = np.random.default_rng(2).standard_normal(n).astype(np.float32)
  f = tracegrad.jit(tnp.linalg.solve)
  start = time.perf_counter()
  compiled = f.lower(a, b).compile()
  print(f"jit(solve) at n={n}: {time.perf_counter() - start:.2f}s to lower and compile, {len(compiled.kernels)} "
        f"kernels")
  assert len(compiled.kernels) <= 8
  x = f(a, b)
  np.testing.assert_allclose(np.asarray(a, np.float64) @ np.asarray(x, np.float64), b, atol=1e-4)


# ---- errors: JAX's exception types, messages naming the function and the argument ----
ERRORS = [
  ("solve", lambda L: L.solve(np.ones(3), np.ones(3)), ValueError, r"solve: a must be a square"),
  ("solve", lambda L: L.solve(np.eye(3), np.ones(2)), ValueError, r"solve: a of shape \(3, 3\) needs b .*\(2,\)"),
  ("solve", lambda L: L.solve(np.eye(3), np.ones((2, 3))), ValueError, r"solve: .*b of shape \(2, 3\)"),
  ("solve", lambda L: L.solve(np.ones((2, 3, 3)), np.ones((4, 3, 1))), ValueError, r"solve"),
  ("solve", lambda L: L.solve(np.ones((2, 3, 3)), np.ones((2, 3))), ValueError, r"solve: .*b\[\.\.\., None\]"),
  ("solve", lambda L: L.solve(np.eye(3), 1.0), ValueError, r"solve: b must have shape"),
  ("solve", lambda L: L.solve([[1.0]], [1.0]), TypeError, r"solve requires ndarray"),
  ("inv", lambda L: L.inv(np.ones((2, 3))), ValueError, r"inv: a must be a square .*\(2, 3\)"),
  ("det", lambda L: L.det(np.ones(3)), ValueError, r"det: a must be a square .*\(3,\)"),
  ("slogdet", lambda L: L.slogdet(np.ones((2, 3))), ValueError, r"slogdet: a must be a square"),
  ("slogdet", lambda L: L.slogdet(np.eye(3), method="svd"), ValueError, r"slogdet: unknown method 'svd'"),
  ("cholesky", lambda L: L.cholesky(np.ones((2, 3))), TypeError, r"cholesky: a must be a square"),
  ("qr", lambda L: L.qr(np.ones(3)), TypeError, r"qr: a must be a matrix"),
  ("qr", lambda L: L.qr(np.eye(3), mode="economic"), ValueError, r"qr: unsupported mode 'economic'"),
  ("eigh", lambda L: L.eigh(np.eye(3), UPLO="X"), ValueError, r"eigh: UPLO must be"),
  ("eigh", lambda L: L.eigh(np.ones((2, 3))), TypeError, r"eigh: a must be a square"),
  ("eigvalsh", lambda L: L.eigvalsh(np.ones((2, 3))), TypeError, r"eigvalsh: a must be a square"),
  ("svd", lambda L: L.svd(np.ones(3)), TypeError, r"svd: a must be a matrix"),
  ("svdvals", lambda L: L.svdvals(np.ones(3)), TypeError, r"svdvals: x must be a matrix"),
  ("lstsq", lambda L: L.lstsq(np.ones((2, 3, 3)), np.ones((2, 3))), TypeError, r"lstsq: a must be a matrix"),
  ("lstsq", lambda L: L.lstsq(np.ones((3, 2)), np.ones((3, 2, 2))), TypeError, r"lstsq: b must be 1-D or 2-D"),
  ("lstsq", lambda L: L.lstsq(np.ones((3, 2)), np.ones(4)), ValueError, r"lstsq: a and b must have the same number"),
  ("pinv", lambda L: L.pinv(np.eye(2), rtol=1e-3, rcond=1e-3), ValueError, r"pinv: pass one of rtol and rcond"),
  ("pinv", lambda L: L.pinv(np.ones(3)), ValueError, r"pinv: a must be a matrix"),
  ("matrix_rank", lambda L: L.matrix_rank(np.eye(2), rtol=1e-3, tol=1e-3), ValueError, r"matrix_rank: pass one of"),
  ("cond", lambda L: L.cond(np.ones(3)), ValueError, r"cond: x must be a matrix"),
  ("cond", lambda L: L.cond(np.ones((0, 0))), ValueError, r"cond: x must not be empty"),
  ("cond", lambda L: L.cond(np.ones((2, 3)), p=1), ValueError, r"cond: x must be square for p=1"),
  ("cond", lambda L: L.cond(np.eye(3), p=3), ValueError, r"cond: invalid p 3"),
  ("tensorinv", lambda L: L.tensorinv(np.ones((2, 2)), ind=0), ValueError, r"tensorinv: ind must be a positive"),
  ("tensorinv", lambda L: L.tensorinv(np.ones((2, 3, 4)), ind=1), ValueError, r"tensorinv: the product"),
  ("tensorsolve", lambda L: L.tensorsolve(np.ones((2, 3, 6)), np.ones((2, 2))), ValueError, r"tensorsolve: a's lead"),
  ("tensorsolve", lambda L: L.tensorsolve(np.ones((2, 3, 4)), np.ones((2, 3))), ValueError, r"tensorsolve: a's trail"),
  ("norm", lambda L: L.norm(np.ones((2, 2, 2)), ord="nuc"), ValueError, r"norm: axis must name one axis"),
  ("norm", lambda L: L.norm(np.ones((2, 2)), ord=3), ValueError, r"norm: invalid ord 3 for a matrix norm"),
  ("norm", lambda L: L.norm(np.ones(2), ord="fro"), ValueError, r"norm: invalid ord 'fro' for a vector norm"),
  ("norm", lambda L: L.norm(np.ones((2, 2)), axis=(0, 0)), ValueError, r"norm: repeated axis"),
  ("matrix_norm", lambda L: L.matrix_norm(np.ones(3)), ValueError, r"matrix_norm: x must be a matrix"),
  ("matrix_power", lambda L: L.matrix_power(np.ones((2, 3)), 2), TypeError, r"matrix_power: a must be a square"),
  ("matrix_power", lambda L: L.matrix_power(np.eye(2), 1.5), TypeError, r"matrix_power: the exponent n must be an"),
  ("multi_dot", lambda L: L.multi_dot([np.ones((2, 2, 2)), np.eye(2)]), ValueError, r"multi_dot: the arrays must be"),
  ("multi_dot", lambda L: L.multi_dot([np.ones((2, 3)), np.eye(2)]), ValueError, r"multi_dot: each array's last"),
]


@pytest.mark.parametrize("name,call,error,match", ERRORS, ids=[f"{e[0]}-{i}" for i, e in enumerate(ERRORS)])
def test_errors_as_jax(name, call, error, match):
  with pytest.raises(error, match=match): call(tnp.linalg)
  with pytest.raises(error): call(jnp.linalg)


def test_errors_under_jit_and_not_implemented():
  with pytest.raises(ValueError, match=r"det: a must be a square .*\(2, 3\)"):
    tracegrad.jit(tnp.linalg.det)(np.ones((2, 3), np.float32))
  with pytest.raises(ValueError, match=r"solve: a of shape \(3, 3\) needs b .*\(2,\)"):
    tracegrad.jit(tnp.linalg.solve)(np.eye(3, dtype=np.float32), np.ones(2, np.float32))
  with pytest.raises(tracegrad.errors.ConcretizationTypeError, match="lstsq: numpy_resid=True needs a concrete rank"):
    tracegrad.jit(lambda a, b: tnp.linalg.lstsq(a, b, numpy_resid=True))(TALL, TALL[:, 0])
  with pytest.raises(NotImplementedError, match="qr: mode='raw'"): tnp.linalg.qr(TALL, mode="raw")
  with pytest.raises(NotImplementedError, match="svd: subset_by_index"): tnp.linalg.svd(TALL, subset_by_index=(0, 1))


# ---- norms against numpy ----
VECTOR_ORDS = [None, 1, 2, np.inf, -np.inf, 0, 3, 0.5, -1]
MATRIX_ORDS = [None, "fro", "nuc", 1, -1, 2, -2, np.inf, -np.inf]
NORM_ULPS = {"float32": (168, 84), "float16": (2, 0.01), "bfloat16": (2.5, 0.00125)}   # (rtol, atol): atol is 1e-5


@st.composite
def norm_case(draw):
  dtype = draw(st.sampled_from(["float32", "float32", "float16", "bfloat16", "int8", "int32"]))
  nd = draw(st.integers(1, 3))
  shape = [draw(st.integers(1, 4)) for _ in range(nd)]
  x = draw(arrays(dtype, tuple(shape), low=-5, high=5))
  mode = draw(st.sampled_from(["none", "vector", "matrix"] if nd >= 2 else ["none", "vector"]))
  if mode == "none":
    ord = None if nd > 2 else draw(st.sampled_from(MATRIX_ORDS if nd == 2 else VECTOR_ORDS))
    axis = None
  elif mode == "vector":
    ord, axis = draw(st.sampled_from(VECTOR_ORDS)), draw(st.integers(-nd, nd - 1))
  else:
    ord = draw(st.sampled_from(MATRIX_ORDS))
    axis = tuple(draw(st.permutations(range(nd)))[:2])
  return x, ord, axis, draw(st.booleans()), dtype


@given(norm_case())
def test_norm(case):
  x, ord, axis, keepdims, dtype = case
  out = "float32" if dtype in INTS else dtype
  check(lambda x: tnp.linalg.norm(x, ord=ord, axis=axis, keepdims=keepdims),
        lambda x: np.linalg.norm(x.astype(np.float64), ord=ord, axis=axis, keepdims=keepdims), x,
        want_dtype=out, **tol(out, *NORM_ULPS[out]))


@given(st.data())
def test_vector_and_matrix_norm(data):
  x = data.draw(arrays("float32", (2, 3, 4), low=-5, high=5))
  ord = data.draw(st.sampled_from([1, 2, np.inf, -np.inf, 0]))
  keep = data.draw(st.booleans())
  check(lambda x: tnp.linalg.vector_norm(x, ord=ord, axis=(0, 2), keepdims=keep),
        lambda x: np.linalg.vector_norm(x, ord=ord, axis=(0, 2), keepdims=keep), x)
  check(lambda x: tnp.linalg.vector_norm(x, ord=ord), lambda x: np.linalg.vector_norm(x, ord=ord), x)
  mord = data.draw(st.sampled_from(MATRIX_ORDS[1:]))
  check(lambda x: tnp.linalg.matrix_norm(x, ord=mord, keepdims=keep),
        lambda x: np.linalg.matrix_norm(x, ord=mord, keepdims=keep), x, **tol("float32", 840, 84))


def test_norms_of_empty_arrays_as_jax():
  f = lambda L: lambda x, y: (L.norm(x, ord=2), L.norm(x, ord=1), L.norm(y, ord=np.inf), L.norm(x.T, "nuc"))  # noqa
  args = np.ones((0, 3), np.float32), np.ones((0,), np.float32)
  _same(f(tnp.linalg)(*args), jax.jit(f(jnp.linalg))(*args))


# ---- aliases ----
def test_aliases():
  rng = np.random.default_rng(1)
  a, b = rng.standard_normal((2, 3, 4)).astype(np.float32), rng.standard_normal((4, 5)).astype(np.float32)
  check(tnp.linalg.matmul, np.matmul, a, b, atol=ulps(84))
  check(tnp.linalg.matrix_transpose, lambda x: np.swapaxes(x, -1, -2), a)
  check(lambda x, y: tnp.linalg.tensordot(x, y, 1), lambda x, y: np.tensordot(x, y, 1), a, b, atol=ulps(84))
  check(tnp.linalg.vecdot, lambda x, y: np.sum(x * y, -1), a, a[0], atol=ulps(84))
  check(tnp.linalg.outer, np.outer, a[0, 0], b[0])
  with pytest.raises(ValueError, match="outer"):
    tnp.linalg.outer(a, b)
  check(lambda x: tnp.linalg.trace(x), lambda x: np.trace(x, axis1=-2, axis2=-1), a, atol=ulps(84))
  check(lambda x: tnp.linalg.trace(x, offset=1), lambda x: np.trace(x, 1, axis1=-2, axis2=-1), a, atol=ulps(84))
  check(lambda x, y, z: tnp.linalg.multi_dot([x, y, z]), lambda x, y, z: np.linalg.multi_dot([x, y, z]),
        a[0], b, b[0], atol=ulps(840))


def test_matrix_power_of_integers():
  m = np.array([[1, 1], [0, 1]], np.int32)
  for n in (0, 1, 2, 3, 5):
    check(lambda x: tnp.linalg.matrix_power(x, n), lambda x: np.linalg.matrix_power(x, n), m)
