"""tracegrad.scipy.linalg against jax.scipy.linalg: values, shapes and dtypes (factors whose signs LAPACK chooses
compared through what they reconstruct, or in absolute value), batched inputs, gradients (against JAX, and against
finite differences in float64), vmap against slicing, the errors, and a Gaussian-process marginal likelihood and its
gradient under jit."""
import warnings

import numpy as np
import pytest

import tracegrad as tg
import tracegrad.numpy as tnp
import tracegrad.scipy.linalg as tsl
from tracegrad.test_util import check_grads

jax = pytest.importorskip("jax")
import jax.scipy.linalg as jsl  # noqa: E402
from oracles import close_to_jax  # noqa: E402

RNG = np.random.default_rng(0)
A = RNG.standard_normal((4, 4)).astype(np.float32)
SPD = (A @ A.T + 4 * np.eye(4)).astype(np.float32)
SPDS = np.stack([SPD, 2 * SPD + np.eye(4, dtype=np.float32)])
B = RNG.standard_normal((4, 2)).astype(np.float32)
V = RNG.standard_normal(4).astype(np.float32)
TALL = RNG.standard_normal((5, 3)).astype(np.float32)
WIDE = TALL.T.copy()
COEFFS = RNG.standard_normal(7).astype(np.float32)
EPS32 = np.finfo(np.float32).eps


def _signs(la, q, r):
  """q and r with r's diagonal made non-negative (the factors' one freedom)."""
  np_ = jax.numpy if la is jsl else tnp
  s = np_.where(np_.diagonal(r, axis1=-2, axis2=-1) < 0, -1.0, 1.0)
  return q[..., :, :s.shape[-1]] * s[..., None, :], r[..., :s.shape[-1], :] * s[..., :, None]


# (name, function of the library's scipy.linalg, arguments)
CASES = [
  ("cholesky upper", lambda la, a: la.cholesky(a), (SPD,)),
  ("cholesky lower batched", lambda la, a: la.cholesky(a, lower=True), (SPDS,)),
  ("cho_factor", lambda la, a: la.cho_factor(a), (SPD,)),
  ("cho_solve upper vector", lambda la, a, b: la.cho_solve(la.cho_factor(a), b), (SPD, V)),
  ("cho_solve lower batched", lambda la, a, b: la.cho_solve(la.cho_factor(a, lower=True), b), (SPDS, B)),
  ("solve_triangular lower", lambda la, a, b: la.solve_triangular(a, b, lower=True), (SPD, B)),
  ("solve_triangular trans 1", lambda la, a, b: la.solve_triangular(a, b, trans=1), (SPD, B)),
  ("solve_triangular trans C lower vector", lambda la, a, b: la.solve_triangular(a, b, trans="C", lower=True),
   (SPD, V)),
  ("solve_triangular trans T unit batched", lambda la, a, b: la.solve_triangular(a, b, trans="T", unit_diagonal=True),
   (SPDS, B)),
  ("lu square", lambda la, a: la.lu(a), (A,)),
  ("lu tall", lambda la, a: la.lu(a), (TALL,)),
  ("lu wide permute_l", lambda la, a: la.lu(a, permute_l=True), (WIDE,)),
  ("lu_factor", lambda la, a: la.lu_factor(a), (A,)),
  ("lu_solve", lambda la, a, b: la.lu_solve(la.lu_factor(a), b), (A, B)),
  ("lu_solve trans 1 vector", lambda la, a, b: la.lu_solve(la.lu_factor(a), b, trans=1), (A, V)),
  ("lu_solve trans 2 batched", lambda la, a, b: la.lu_solve(la.lu_factor(a), b, trans=2), (SPDS, B)),
  ("qr full", lambda la, a: _signs(la, *la.qr(a)), (TALL,)),
  ("qr economic", lambda la, a: _signs(la, *la.qr(a, mode="economic")), (TALL,)),
  ("qr r wide", lambda la, a: abs(la.qr(a, mode="r")[0]), (WIDE,)),
  ("qr shapes", lambda la, a: [la.qr(a, mode=m) for m in ("full", "r", "economic")], (TALL,)),
  ("qr_multiply left", lambda la, a, c: abs(la.qr_multiply(a, c, mode="left")[0]), (TALL, B[:3])),
  ("qr_multiply right vector shapes", lambda la, a, c: la.qr_multiply(a, c), (TALL, np.ones(5))),
  ("eigh values", lambda la, a: la.eigh(a, eigvals_only=True), (SPD,)),
  ("eigh upper batched", lambda la, a: [la.eigh(a, lower=False)[0], abs(la.eigh(a, lower=False)[1])], (SPDS,)),
  ("eigh_tridiagonal", lambda la, d, e: la.eigh_tridiagonal(d, e, eigvals_only=True), (V, V[:3])),
  ("eigh_tridiagonal select i", lambda la, d, e: la.eigh_tridiagonal(d, e, eigvals_only=True, select="i",
                                                                     select_range=(1, 2)), (V, V[:3])),
  ("svd values", lambda la, a: la.svd(a, compute_uv=False), (TALL,)),
  ("svd shapes", lambda la, a: [la.svd(a, full_matrices=f) for f in (True, False)], (WIDE,)),
  ("polar right", lambda la, a: la.polar(a), (TALL,)),
  ("polar left svd", lambda la, a: la.polar(a, side="left", method="svd"), (A,)),
  ("hessenberg", lambda la, a: abs(la.hessenberg(a)), (A,)),
  ("solve gen", lambda la, a, b: la.solve(a, b), (A, B)),
  ("solve sym vector", lambda la, a, b: la.solve(a, b, assume_a="sym"), (SPD, V)),
  ("solve pos upper", lambda la, a, b: la.solve(a, b, assume_a="pos"), (SPD, B)),
  ("solve pos lower batched", lambda la, a, b: la.solve(a, b, assume_a="pos", lower=True), (SPDS, np.stack([B, B]))),
  ("solve gen broadcast", lambda la, a, b: la.solve(a, b), (A, np.stack([B, 2 * B]))),
  ("inv batched", lambda la, a: la.inv(a), (np.stack([A, SPD]),)),
  ("det 2x2", lambda la, a: la.det(a), (A[:2, :2],)),
  ("det 3x3 batched", lambda la, a: la.det(a), (np.stack([A[:3, :3], SPD[1:, 1:]]),)),
  ("det 4x4", lambda la, a: la.det(a), (A,)),
  ("det singular", lambda la, a: la.det(a), (np.ones((5, 5), np.float32),)),
  ("det integers", lambda la, a: la.det(a), (np.array([[1, 2], [3, 4]]),)),
  ("expm", lambda la, a: la.expm(a), (np.stack([0.01 * A, A / np.abs(A).sum(0).max(), 0.5 * A, 3 * A]),)),
  ("expm upper triangular, too many squarings", lambda la, a: la.expm(a, upper_triangular=True, max_squarings=3),
   (np.stack([np.triu(A), 100 * np.triu(A)]),)),
  ("expm_frechet", lambda la, a, e: la.expm_frechet(a, e), (A, SPD / 8)),
  ("block_diag", lambda la: la.block_diag(np.ones((2, 2), np.float32), 3, np.arange(3, dtype=np.int32)), ()),
  ("matrices of arrays", lambda la, v, m: [
    la.toeplitz(v), la.toeplitz(m, v[:3]), la.hankel(v[:3], m[0]), la.circulant(v), la.leslie(v, v[:3]),
    la.companion(m), la.fiedler(v), la.fiedler_companion(COEFFS),
    *(la.convolution_matrix(v, 3, mode) for mode in ("full", "same", "valid")),
    la.circulant(np.arange(4, dtype=np.int32)), la.toeplitz(3.0)], (V, B.T.copy())),
  ("matrices of a size", lambda la: [la.hilbert(4), la.invhilbert(4), la.pascal(4), la.pascal(4, "upper"),
                                     la.invpascal(4), la.invpascal(4, "lower"), la.helmert(4, full=True),
                                     la.hadamard(4)], ()),
]


@pytest.mark.parametrize("name,f,args", CASES, ids=[c[0] for c in CASES])
def test_matches_jax(name, f, args):
  with warnings.catch_warnings():
    warnings.simplefilter("ignore", FutureWarning)
    mine = f(tsl, *args)
    if "shapes" in name:
      theirs = jax.eval_shape(lambda *a: f(jsl, *a), *args)
      assert [(x.shape, x.dtype) for x in tg.tree.leaves(mine)] == [(x.shape, x.dtype) for x in jax.tree.leaves(theirs)]
    else: close_to_jax(mine, jax.jit(lambda *a: f(jsl, *a))(*args), 2e-4 if "expm" in name else 200 * EPS32)


def test_factors_reconstruct_their_matrix():
  p, l, u = tsl.lu(TALL)
  np.testing.assert_allclose(np.asarray(p @ l @ u), TALL, atol=1e-5)
  q, r = tsl.qr(WIDE)
  np.testing.assert_allclose(np.asarray(q @ r), WIDE, atol=1e-5)
  h, q = tsl.hessenberg(np.stack([A, SPD]), calc_q=True)
  np.testing.assert_allclose(np.asarray(q @ h @ q.mT), np.stack([A, SPD]), atol=1e-4)
  assert np.all(np.tril(np.asarray(h), -2) == 0)
  w, v = tsl.eigh_tridiagonal(V, V[:3])
  t = np.diag(V) + np.diag(V[:3], 1) + np.diag(V[:3], -1)
  np.testing.assert_allclose(np.asarray(v * w) @ np.asarray(v).T, t, atol=1e-5)


def test_float64_against_jax():
  was = jax.config.jax_enable_x64
  jax.config.update("jax_enable_x64", True)
  try:
    with tg.enable_x64(True):
      xs = np.stack([0.002 * A, 0.05 * A, 0.3 * A, A, 4 * A]).astype(np.float64)   # each Padé degree, and squarings
      close_to_jax(tsl.expm(xs), jsl.expm(xs), 1e-12)
      x = A.astype(np.float64)
      close_to_jax(tsl.solve(x, B.astype(np.float64)), jsl.solve(x, B.astype(np.float64)), 1e-12)
      close_to_jax(tsl.det(x), jsl.det(x), 1e-12)
  finally:
    jax.config.update("jax_enable_x64", was)


# scalar losses, whose gradients are compared with JAX's
def _pd(np_, x): return x @ x.T + 4 * np_.eye(x.shape[0], dtype=x.dtype)


LOSSES = [
  ("cholesky upper", lambda la, np_, x: (la.cholesky(_pd(np_, x)) ** 2 * np_.arange(16.0).reshape(4, 4)).sum(), A),
  ("cho_solve", lambda la, np_, x: (la.cho_solve(la.cho_factor(_pd(np_, x), lower=True), x[:, :2] + 1) ** 2).sum(), A),
  ("solve_triangular", lambda la, np_, x: (la.solve_triangular(x, x[:, :2] + 1.0, trans=1, lower=True) ** 2).sum(),
   SPD),
  ("lu", lambda la, np_, x: sum(((f * w) ** 2).sum() for f, w in zip(la.lu(x)[1:], (1.0, 2.0))), A),
  ("lu_solve", lambda la, np_, x: (la.lu_solve(la.lu_factor(x), x[:, :2] + 1.0, trans=1) ** 2).sum(), A),
  ("qr", lambda la, np_, x: (la.qr(x, mode="economic")[0][:, 0] ** 3).sum() + (la.qr(x, mode="r")[0] ** 2).sum(), A),
  ("eigh", lambda la, np_, x: (la.eigh(x)[0] ** 2).sum() + (la.eigh(x)[1][:, 0] ** 4).sum(), SPD),
  ("svd", lambda la, np_, x: (la.svd(x, compute_uv=False) ** 3).sum(), TALL),
  ("polar", lambda la, np_, x: (la.polar(x, method="svd")[0] ** 3).sum() + (la.polar(x, method="svd")[1] ** 2).sum(),
   TALL),   # JAX's default 'qdwh' iterates in a while loop, which it cannot differentiate in reverse mode
  ("solve gen", lambda la, np_, x: (la.solve(x, x[:, :2] + 1.0) ** 2).sum(), A),
  ("solve pos", lambda la, np_, x: (la.solve(_pd(np_, x), x[:, 0], assume_a="pos") ** 2).sum(), A),
  ("inv", lambda la, np_, x: (la.inv(x) ** 2).sum(), A),
  ("det 3x3", lambda la, np_, x: la.det(x[:3, :3]), A),
  ("det", lambda la, np_, x: la.det(x), A),
  ("expm", lambda la, np_, x: (la.expm(x) ** 2).sum(), A),
]


@pytest.mark.parametrize("name,loss,x", LOSSES, ids=[c[0] for c in LOSSES])
def test_gradients_match_jax(name, loss, x):
  mine = tg.grad(lambda v: loss(tsl, tnp, v))(x)
  theirs = jax.jit(jax.grad(lambda v: loss(jsl, jax.numpy, v)))(x)
  close_to_jax(mine, theirs, 2e-3)


GRAD_CHECKS = [
  ("solve", lambda x: tsl.solve(x, x[:, 1:] * 2.0 + 1.0)),
  ("solve pos", lambda x: tsl.solve(x @ x.T + 4 * tnp.eye(4), x[:, 0], assume_a="pos")),
  ("inv and det", lambda x: tsl.inv(x) * tsl.det(x)),
  ("expm", lambda x: tsl.expm(x)),
  ("cho_solve and lu_solve", lambda x: tsl.cho_solve(tsl.cho_factor(x @ x.T + 4 * tnp.eye(4)), x)
   + tsl.lu_solve(tsl.lu_factor(x), x, trans=1)),
  ("polar", lambda x: tsl.polar(x[:, :3])[1]),
]


@pytest.mark.parametrize("name,f", GRAD_CHECKS, ids=[c[0] for c in GRAD_CHECKS])
def test_gradients_match_finite_differences(name, f):
  with tg.enable_x64(True):
    check_grads(f, (A.astype(np.float64),), order=1, modes=("fwd", "rev"))


def test_vmap_matches_slicing():
  xs = np.stack([A, SPD, A + 2 * np.eye(4, dtype=np.float32)])
  for f in (lambda x: tsl.solve(x, x[:, :1]), tsl.det, tsl.inv, tsl.expm, lambda x: tsl.hessenberg(x, calc_q=True),
            lambda x: tsl.lu_solve(tsl.lu_factor(x), x[0]), lambda x: tsl.cho_solve(tsl.cho_factor(x @ x.T), x[0])):
    batched = tg.vmap(f)(xs)
    for i, x in enumerate(xs): close_to_jax(tg.tree.map(lambda y: y[i], batched), tg.tree.map(np.asarray, f(x)), 1e-5)


def test_jit_matches_eager():
  f = lambda x: (tsl.expm(0.5 * x), tsl.det(x), tsl.solve(x, x[:, :2], assume_a="pos"), tsl.lu_factor(x))
  close_to_jax(tg.jit(f)(SPD), tg.tree.map(np.asarray, f(SPD)), 1e-5)


# ---- a Gaussian process: the log marginal likelihood of 50 noisy observations under an RBF kernel ----

def _gp_log_likelihood(la, np_, params, x, y):
  length, noise = params[0], params[1]
  k = np_.exp(-0.5 * ((x[:, None] - x[None, :]) / length) ** 2) + noise * np_.eye(x.shape[0], dtype=x.dtype)
  c, lower = la.cho_factor(k, lower=True)
  alpha = la.cho_solve((c, lower), y)
  return -0.5 * y @ alpha - np_.log(np_.diagonal(c)).sum() - 0.5 * x.shape[0] * np.log(2 * np.pi)


def test_gaussian_process_marginal_likelihood_and_its_gradient_under_jit():
  rng = np.random.default_rng(1)
  x = np.sort(rng.uniform(0, 5, 50)).astype(np.float32)
  y = (np.sin(2 * x) + 0.1 * rng.standard_normal(50)).astype(np.float32)
  params = np.array([0.7, 0.05], np.float32)
  mine = tg.jit(tg.value_and_grad(lambda p, x, y: _gp_log_likelihood(tsl, tnp, p, x, y)))(params, x, y)
  theirs = jax.jit(jax.value_and_grad(lambda p, x, y: _gp_log_likelihood(jsl, jax.numpy, p, x, y)))(params, x, y)
  close_to_jax(mine, theirs, 2e-3)
  assert np.all(np.isfinite(np.asarray(mine[1]))) and abs(float(mine[1][1])) > 1.0


def test_errors():
  with pytest.raises(ValueError, match="assume_a"): tsl.solve(A, B, assume_a="banded")
  with pytest.raises(ValueError, match="trans"): tsl.solve_triangular(A, B, trans=3)
  with pytest.raises(ValueError, match="lu_solve: trans"): tsl.lu_solve(tsl.lu_factor(A), B, trans="T")
  with pytest.raises(ValueError, match="qr: mode"): tsl.qr(A, mode="raw")
  with pytest.raises(ValueError, match="cholesky: a must be a square"): tsl.cholesky(TALL)
  with pytest.raises(ValueError, match="solve: b must have 4 rows"): tsl.solve(A, TALL)
  with pytest.raises(ValueError, match="solve: b of shape"): tsl.solve(np.stack([A, A]), np.ones((2, 4)))
  with pytest.raises(NotImplementedError, match="generalized"): tsl.eigh(A, SPD)
  with pytest.raises(NotImplementedError, match="subset_by_index"): tsl.eigh(A, subset_by_index=(0, 1))
  with pytest.raises(NotImplementedError, match="pivoting"): tsl.qr(A, pivoting=True)
  with pytest.raises(NotImplementedError, match="select='v'"): tsl.eigh_tridiagonal(V, V[:3], select="v")
  with pytest.raises(TypeError, match="expm: A must be float32 or float64"): tsl.expm(A.astype(np.float16))
  with pytest.raises(ValueError, match="hadamard"): tsl.hadamard(6)
  with pytest.raises(ValueError, match="block_diag"): tsl.block_diag(np.ones((2, 2, 2)))
  with pytest.warns(FutureWarning, match="batch of vectors"): tsl.cho_solve(tsl.cho_factor(SPDS), np.ones((2, 4)))


def test_det_gradient_at_a_singular_matrix_is_the_adjugate():
  a = np.array([[1, 2, 3, 4], [2, 4, 6, 8], [0, 1, 1, 1], [1, 0, 2, 5]], np.float32)
  mine = tg.grad(tg.scipy.linalg.det)(a)
  np.testing.assert_allclose(np.asarray(mine), np.asarray(jax.grad(jax.scipy.linalg.det)(a)), atol=1e-5)
