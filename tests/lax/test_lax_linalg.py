"""tracegrad.lax.linalg against jax.lax.linalg: values, shapes and dtypes of each decomposition, gradients (against
JAX and finite differences), forward mode, vmap against slicing, jit, and its errors."""
import numpy as np
import pytest

import tracegrad as tg
import tracegrad.numpy as tnp
from tracegrad import lax
from tracegrad.test_util import check_grads
from oracles import close_to_jax

jax = pytest.importorskip("jax")
jla = jax.lax.linalg

RNG = np.random.default_rng(0)
A = RNG.standard_normal((4, 4)).astype(np.float32)
SPD = (A @ A.T + 4 * np.eye(4)).astype(np.float32)
TALL = RNG.standard_normal((5, 3)).astype(np.float32)
WIDE = TALL.T.copy()
RHS = RNG.standard_normal((4, 2)).astype(np.float32)


# (name, function of the library's lax.linalg, arguments); results whose sign LAPACK may choose are made unique
CASES = [
  ("cholesky", lambda la, x: la.cholesky(x), (SPD,)),
  ("cholesky batched", lambda la, x: la.cholesky(x), (np.stack([SPD, 2 * SPD]),)),
  ("cholesky not positive definite", lambda la, x: la.cholesky(x), (-SPD,)),
  ("triangular_solve left lower", lambda la, a, b: la.triangular_solve(a, b, left_side=True, lower=True),
   (np.tril(SPD), RHS)),
  ("triangular_solve right upper transposed", lambda la, a, b: la.triangular_solve(a, b, transpose_a=True),
   (np.triu(SPD), RHS.T.copy())),
  ("triangular_solve unit diagonal", lambda la, a, b: la.triangular_solve(a, b, left_side=True, lower=True,
                                                                          unit_diagonal=True), (SPD, RHS)),
  ("lu", lambda la, x: la.lu(x), (A,)),
  ("lu tall", lambda la, x: la.lu(x), (TALL,)),
  ("lu wide", lambda la, x: la.lu(x), (WIDE,)),
  ("lu_pivots_to_permutation", lambda la, p: la.lu_pivots_to_permutation(p, 5), (np.array([2, 2, 4], np.int32),)),
  ("qr r", lambda la, x: abs(la.qr(x)[1]), (TALL,)),
  ("qr reduced shapes", lambda la, x: [y.shape for y in la.qr(x, full_matrices=False)], (TALL,)),
  ("eigh values", lambda la, x: la.eigh(x)[1], (SPD,)),
  ("eigh vectors", lambda la, x: abs(la.eigh(x)[0]), (SPD,)),
  ("svd values", lambda la, x: la.svd(x, compute_uv=False), (TALL,)),
  ("svd shapes", lambda la, x: [y.shape for y in la.svd(x)], (WIDE,)),
]


@pytest.mark.parametrize("name,f,args", CASES, ids=[c[0] for c in CASES])
def test_matches_jax(name, f, args):
  mine, theirs = f(lax.linalg, *args), f(jla, *args)
  if "shapes" in name: assert mine == theirs
  else: close_to_jax(mine, theirs)


def _reconstructs():
  q, r = lax.linalg.qr(TALL, full_matrices=False)
  np.testing.assert_allclose(np.asarray(q @ r), TALL, atol=1e-5)
  u, s, vh = lax.linalg.svd(TALL, full_matrices=False)
  np.testing.assert_allclose(np.asarray((u * s) @ vh), TALL, atol=1e-5)
  v, w = lax.linalg.eigh(SPD)
  np.testing.assert_allclose(np.asarray((v * w) @ v.T), SPD, atol=1e-4)


def test_factors_reconstruct_their_matrix(): _reconstructs()


# scalar losses of each decomposition, whose gradients are compared with JAX's and with finite differences
LOSSES = [
  ("cholesky", lambda la, np_, x: (la.cholesky(x @ x.T + 4 * np_.eye(4)) ** 2).sum(), A),
  ("triangular_solve", lambda la, np_, x: (la.triangular_solve(x, x[:, :2] + 1.0, left_side=True, lower=True) ** 2
                                          ).sum(), SPD),
  ("lu", lambda la, np_, x: (la.lu(x)[0] ** 2).sum(), A),
  ("qr", lambda la, np_, x: (la.qr(x, full_matrices=False)[0][:, 0] ** 3).sum()
   + (la.qr(x, full_matrices=False)[1] ** 2).sum(), TALL),
  ("eigh", lambda la, np_, x: (la.eigh(x)[1] ** 2).sum() + (la.eigh(x)[0][:, 0] ** 4).sum(), SPD),
  ("svd values", lambda la, np_, x: (la.svd(x, compute_uv=False) ** 2).sum(), TALL),
  ("svd vectors tall", lambda la, np_, x: (la.svd(x, full_matrices=False)[0][:, 0] ** 4).sum(), TALL),
  ("svd vectors wide", lambda la, np_, x: (la.svd(x, full_matrices=False)[2][0] ** 4).sum(), WIDE),
]


@pytest.mark.parametrize("name,loss,x", LOSSES, ids=[c[0] for c in LOSSES])
def test_gradients_match_jax(name, loss, x):
  mine = tg.jit(tg.grad(lambda v: loss(lax.linalg, tnp, v)))(x)
  theirs = jax.grad(lambda v: loss(jla, jax.numpy, v))(x)
  close_to_jax(mine, theirs, 2e-3)


@pytest.mark.parametrize("name,loss,x", LOSSES, ids=[c[0] for c in LOSSES])
def test_gradients_match_finite_differences(name, loss, x):
  with tg.enable_x64(True):
    check_grads(lambda v: loss(lax.linalg, tnp, v), (x.astype(np.float64),), order=1, modes=("fwd", "rev"))


def test_vmap_matches_slicing_and_jit_matches_eager():
  xs = np.stack([SPD, 2 * SPD, SPD + np.eye(4, dtype=np.float32)])
  for f in (lax.linalg.cholesky, lambda x: lax.linalg.eigh(x)[1], lambda x: lax.linalg.svd(x, compute_uv=False),
            lambda x: lax.linalg.triangular_solve(x, x[:, :1], left_side=True, lower=True)):
    batched = tg.vmap(f)(xs)
    for i, x in enumerate(xs): np.testing.assert_allclose(np.asarray(batched[i]), np.asarray(f(x)), rtol=1e-5)
    np.testing.assert_allclose(np.asarray(tg.jit(f)(xs[0])), np.asarray(f(xs[0])), rtol=1e-5)


@pytest.mark.parametrize("shape", [(96, 96), (2, 96, 96)])
def test_a_large_cholesky_factors_the_lower_triangle_of_its_input(shape):
  """Without symmetrizing, the factor is that of the matrix whose lower triangle the input holds, whatever its upper
  one (LAPACK reads the row-major input as its column-major transpose, and factors that one's upper triangle). Large
  matrices one at a time, as JAX gives them."""
  b = RNG.standard_normal(shape).astype(np.float32)
  spd = b @ np.swapaxes(b, -1, -2) + 96 * np.eye(96, dtype=np.float32)
  x = np.tril(spd) + np.triu(RNG.standard_normal(shape).astype(np.float32), 1)   # an upper triangle to ignore
  got = np.asarray(lax.linalg.cholesky(x, symmetrize_input=False))
  want = np.linalg.cholesky(spd.astype(np.float64))
  np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4 * np.abs(want).max())
  assert not np.triu(got, 1).any()
  close_to_jax(got, jla.cholesky(x, symmetrize_input=False), 1e-4)


def test_second_derivative_of_a_log_determinant():
  logdet = lambda la, np_: lambda x: 2 * np_.log(np_.diagonal(la.cholesky(x))).sum()
  mine = tg.hessian(logdet(lax.linalg, tnp))(SPD)
  theirs = jax.hessian(logdet(jla, jax.numpy))(SPD)
  close_to_jax(mine, theirs, 2e-3)


def test_errors():
  with pytest.raises(ValueError, match="cholesky: x must be square"): lax.linalg.cholesky(TALL)
  with pytest.raises(TypeError, match="cholesky: x must be floating point"): lax.linalg.cholesky(np.eye(3, dtype=int))
  with pytest.raises(ValueError, match="at least 2 dimensions"): lax.linalg.eigh(np.ones(3, np.float32))
  with pytest.raises(ValueError, match="triangular_solve: with left_side=True, b's axis -2 must have a's size 4"):
    lax.linalg.triangular_solve(SPD, TALL, left_side=True)
  with pytest.raises(NotImplementedError, match="pivoting"): lax.linalg.qr(A, pivoting=True)
