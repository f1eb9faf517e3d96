"""Complex matrices: solve, inv, det and slogdet (LU), eigh, eigvalsh and cholesky of Hermitian matrices, qr and svd, against numpy
(values, both precisions, eager and jitted, batched) and JAX (dtypes, derivatives); lax.linalg.lu and
triangular_solve (conjugate_a too); pinv, lstsq, matrix_rank, cond and the norms built on svd."""
import numpy as np
import pytest

import tracegrad
import tracegrad.numpy as tnp
from tracegrad import lax
from tracegrad.test_util import check_grads
from oracles import x64


def _c(r, *shape, dtype=np.complex64):
  return (r.randn(*shape) + 1j * r.randn(*shape)).astype(dtype)


def _close(got, want, dtype, ulps=64):
  eps = np.finfo(np.float32 if dtype == np.complex64 else np.float64).eps
  got = np.asarray(got)
  assert got.dtype == want.dtype, (got.dtype, want.dtype)
  assert np.abs(got - want).max() <= ulps * eps * max(np.abs(want).max(), 1), np.abs(got - want).max()


@pytest.mark.parametrize("dtype", [np.complex64, np.complex128])
@pytest.mark.parametrize("jit", [False, True])
@pytest.mark.parametrize("n", [1, 3, 6])
def test_lu_functions_match_numpy(dtype, jit, n):
  r = np.random.RandomState(n)
  a, b, v = _c(r, 3, n, n, dtype=dtype), _c(r, 3, n, 2, dtype=dtype), _c(r, n, dtype=dtype)
  wrap = tracegrad.jit if jit else (lambda f: f)
  with x64(dtype == np.complex128):
    _close(wrap(tnp.linalg.solve)(a, b), np.linalg.solve(a, b), dtype)
    _close(wrap(tnp.linalg.solve)(a[0], v), np.linalg.solve(a[0], v), dtype)
    _close(wrap(tnp.linalg.inv)(a), np.linalg.inv(a), dtype)
    _close(wrap(tnp.linalg.det)(a), np.linalg.det(a), dtype)
    sign, logabs = wrap(tnp.linalg.slogdet)(a)
    want_sign, want_log = np.linalg.slogdet(a)
    _close(sign, want_sign, dtype)
    _close(logabs, want_log, dtype)


def test_mixed_real_and_complex_promote():
  r = np.random.RandomState(0)
  a, b = r.randn(4, 4).astype(np.float32), _c(r, 4)
  _close(tnp.linalg.solve(a, b), np.linalg.solve(a, b).astype(np.complex64), np.complex64)


def test_derivatives_in_both_modes():
  r = np.random.RandomState(1)
  with x64(True):   # float32's finite differences are too coarse to check against on every host
    a, b = tnp.asarray(_c(r, 4, 4, dtype=np.complex128)), tnp.asarray(_c(r, 4, 2, dtype=np.complex128))
    for f in (lambda m: tnp.linalg.solve(m, b), tnp.linalg.inv, tnp.linalg.det, lambda m: tnp.linalg.slogdet(m)[0],
              lambda m: tnp.linalg.slogdet(m)[1], lambda m: tnp.linalg.solve(a, m @ m)):
      check_grads(f, (a,), order=1, modes=("fwd", "rev"))


def test_gradients_match_jax():
  jax = pytest.importorskip("jax")
  jnp = jax.numpy
  r = np.random.RandomState(2)
  a, b = _c(r, 5, 5), _c(r, 5, 3)
  loss = lambda m, lib: (lib.abs(lib.linalg.det(m)) + lib.real(lib.linalg.solve(m, b).sum())
                         + lib.imag(lib.linalg.slogdet(m)[0]) + lib.linalg.slogdet(m)[1])
  got = np.asarray(tracegrad.grad(lambda m: loss(m, tnp))(tnp.asarray(a)))
  want = np.asarray(jax.grad(lambda m: loss(m, jnp))(jnp.asarray(a)))
  assert got.dtype == want.dtype and np.abs(got - want).max() <= 256 * np.finfo(np.float32).eps * np.abs(want).max()
  got = np.asarray(tracegrad.grad(lambda m: tnp.linalg.det(m), holomorphic=True)(tnp.asarray(a)))
  want = np.asarray(jax.grad(lambda m: jnp.linalg.det(m), holomorphic=True)(jnp.asarray(a)))
  assert np.abs(got - want).max() <= 256 * np.finfo(np.float32).eps * np.abs(want).max()


def test_vmap_matches_slices():
  r = np.random.RandomState(3)
  a, b = _c(r, 4, 3, 3), _c(r, 4, 3)
  got = np.asarray(tracegrad.vmap(tnp.linalg.solve)(a, b))
  want = np.stack([np.asarray(tnp.linalg.solve(a[i], b[i])) for i in range(4)])
  assert np.abs(got - want).max() <= 16 * np.finfo(np.float32).eps * np.abs(want).max()


def test_lax_lu_and_triangular_solve():
  r = np.random.RandomState(4)
  a = _c(r, 4, 4)
  lu, piv, perm = lax.linalg.lu(a)
  lu = np.asarray(lu)
  l, u = np.tril(lu, -1) + np.eye(4), np.triu(lu)
  assert lu.dtype == np.complex64 and np.abs(l @ u - a[np.asarray(perm)]).max() <= 64 * np.finfo(np.float32).eps * 4
  t, b = np.triu(_c(r, 3, 3)) + 3 * np.eye(3, dtype=np.complex64), _c(r, 3, 2)
  for transpose, conjugate, op in ((False, False, t), (True, False, t.T), (True, True, t.conj().T)):
    x = np.asarray(lax.linalg.triangular_solve(t, b, left_side=True, lower=False, transpose_a=transpose,
                                               conjugate_a=conjugate))
    assert np.abs(op @ x - b).max() <= 64 * np.finfo(np.float32).eps * 3, (transpose, conjugate)


def _hermitian(r, *shape, dtype=np.complex64):
  m = _c(r, *shape, dtype=dtype)
  return (m @ np.conj(np.swapaxes(m, -1, -2)) + shape[-1] * np.eye(shape[-1])).astype(dtype)


@pytest.mark.parametrize("dtype", [np.complex64, np.complex128])
@pytest.mark.parametrize("jit", [False, True])
def test_hermitian_eigh_and_cholesky_match_numpy(dtype, jit):
  h = _hermitian(np.random.RandomState(6), 3, 5, 5, dtype=dtype)
  wrap = tracegrad.jit if jit else (lambda f: f)
  with x64(dtype == np.complex128):
    w, v = wrap(tnp.linalg.eigh)(h)
    want_w = np.linalg.eigvalsh(h)
    _close(w, want_w, dtype)   # real eigenvalues
    v = np.asarray(v)
    assert v.dtype == dtype and np.abs(h @ v - v * want_w[..., None, :]).max() <= 256 * np.finfo(want_w.dtype).eps * 20
    _close(wrap(tnp.linalg.eigvalsh)(h), want_w, dtype)
    _close(wrap(tnp.linalg.cholesky)(h), np.linalg.cholesky(h), dtype)
    _close(wrap(lambda a: tnp.linalg.cholesky(a, upper=True))(h), np.conj(np.swapaxes(np.linalg.cholesky(h), -1, -2)),
           dtype)


def test_hermitian_derivatives_match_jax():
  jax = pytest.importorskip("jax")
  jnp = jax.numpy
  h = _hermitian(np.random.RandomState(7), 4, 4)
  def loss(a, lib):   # eigenvalues, a phase-free function of an eigenvector, the Cholesky factor
    w, v = lib.linalg.eigh(a)
    return (w ** 2).sum() + lib.abs(v[:, 0] * lib.conj(v[0, 0])).sum() + lib.abs(lib.linalg.cholesky(a)).sum()
  got = np.asarray(tracegrad.grad(lambda a: loss(a, tnp))(tnp.asarray(h)))
  want = np.asarray(jax.grad(lambda a: loss(a, jnp))(jnp.asarray(h)))
  assert np.abs(got - want).max() <= 512 * np.finfo(np.float32).eps * np.abs(want).max()
  with x64(True):   # finite differences of eigenvalues in float32 are too coarse to check against
    h = tnp.asarray(h.astype(np.complex128))
    check_grads(lambda a: tnp.linalg.eigvalsh(a), (h,), order=1, modes=("fwd", "rev"))
    check_grads(lambda a: tnp.linalg.cholesky(a), (h,), order=1, modes=("fwd", "rev"))
    check_grads(lambda a: tnp.abs(tnp.linalg.eigh(a)[1][:, 0]), (h,), order=1, modes=("fwd", "rev"))


@pytest.mark.parametrize("shape", [(4, 4), (2, 6, 3)])
def test_qr_matches_numpy_and_jax(shape):
  r = np.random.RandomState(8)
  a = _c(r, *shape)
  q, rr = map(np.asarray, tnp.linalg.qr(a))
  eps = np.finfo(np.float32).eps
  assert q.dtype == rr.dtype == np.complex64 and np.abs(q @ rr - a).max() <= 64 * eps * np.abs(a).max() * shape[-1]
  assert not np.imag(np.diagonal(rr, 0, -2, -1)).any()   # LAPACK's r has a real diagonal
  assert np.abs(np.abs(rr) - np.abs(np.linalg.qr(a)[1])).max() <= 64 * eps * np.abs(a).max() * shape[-1]
  jax = pytest.importorskip("jax")
  jnp = jax.numpy
  loss = lambda m, lib: (lambda f: lib.abs(f[0]).sum() + lib.real(f[1]).sum() + lib.imag(f[1] ** 2).sum())(
    lib.linalg.qr(m))
  got = np.asarray(tracegrad.grad(lambda m: loss(m, tnp))(tnp.asarray(a)))
  want = np.asarray(jax.grad(lambda m: loss(m, jnp))(jnp.asarray(a)))
  assert np.abs(got - want).max() <= 512 * eps * np.abs(want).max()
  with x64(True):
    check_grads(lambda m: tnp.linalg.qr(m)[0], (tnp.asarray(a.astype(np.complex128)),), order=1, modes=("fwd", "rev"))


@pytest.mark.parametrize("shape", [(4, 4), (2, 5, 3), (3, 5)])
def test_svd_matches_numpy_and_jax(shape):
  a = _c(np.random.RandomState(9), *shape)
  u, s, vh = map(np.asarray, tnp.linalg.svd(a, full_matrices=False))
  eps, scale = np.finfo(np.float32).eps, np.abs(a).max() * max(shape)
  assert s.dtype == np.float32 and u.dtype == vh.dtype == np.complex64
  assert np.abs((u * s[..., None, :]) @ vh - a).max() <= 64 * eps * scale
  assert np.abs(s - np.linalg.svd(a, compute_uv=False)).max() <= 64 * eps * scale
  assert np.asarray(tnp.linalg.svdvals(a)).dtype == np.float32
  jax = pytest.importorskip("jax")
  jnp = jax.numpy
  def loss(m, lib):   # functions of the factors that do not depend on the phase each pair of vectors shares
    u, s, vh = lib.linalg.svd(m, full_matrices=False)
    return (s ** 2).sum() + lib.abs(u).sum() + lib.real(u[..., :, :1] @ vh[..., :1, :]).sum() + \
      lib.imag(u[..., :, 1:2] @ vh[..., 1:2, :]).sum()
  got = np.asarray(tracegrad.grad(lambda m: loss(m, tnp))(tnp.asarray(a)))
  want = np.asarray(jax.grad(lambda m: loss(m, jnp))(jnp.asarray(a)))
  assert np.abs(got - want).max() <= 512 * eps * np.abs(want).max()
  with x64(True):
    a = tnp.asarray(a.astype(np.complex128))
    check_grads(lambda m: tnp.linalg.svd(m, compute_uv=False), (a,), order=1, modes=("fwd", "rev"))
    check_grads(lambda m: (lambda f: f[0][..., :, :1] @ f[2][..., :1, :])(tnp.linalg.svd(m, full_matrices=False)), (a,),
                order=1, modes=("fwd", "rev"))


def test_functions_built_on_svd_and_slogdet_by_qr():
  r = np.random.RandomState(5)
  a, tall, b = _c(r, 3, 3), _c(r, 5, 3), _c(r, 5, 2)
  sign, logabs = tnp.linalg.slogdet(a, method="qr")   # the sign from LU, |det| from QR's diagonal
  _close(sign, np.linalg.slogdet(a)[0], np.complex64)
  _close(logabs, np.linalg.slogdet(a)[1], np.complex64)
  for m in (tall, tall.T, np.stack([a, a.conj()])):
    _close(tnp.linalg.pinv(m), np.linalg.pinv(m), np.complex64)
    assert np.array_equal(np.asarray(tnp.linalg.matrix_rank(m)), np.linalg.matrix_rank(m))
  x, resid, rank, s = tnp.linalg.lstsq(tall, b)
  want = np.linalg.lstsq(tall, b, rcond=None)
  _close(x, want[0], np.complex64)
  _close(resid, want[1], np.complex64)
  _close(s, want[3], np.complex64)
  for ord in (None, "fro", "nuc", 1, -1, 2, -2, np.inf, -np.inf):
    _close(tnp.linalg.norm(tall, ord), np.linalg.norm(tall, ord).astype(np.float32), np.complex64)
  _close(tnp.linalg.norm(tall, 2, axis=0), np.linalg.norm(tall, 2, axis=0).astype(np.float32), np.complex64)
  _close(tnp.linalg.cond(a), np.linalg.cond(a).astype(np.float32), np.complex64)
  jax = pytest.importorskip("jax")
  jnp = jax.numpy
  for m in (tall, tall.T):
    got = np.asarray(tracegrad.grad(lambda z: tnp.abs(tnp.linalg.pinv(z)).sum())(tnp.asarray(m)))
    want = np.asarray(jax.grad(lambda z: jnp.abs(jnp.linalg.pinv(z)).sum())(jnp.asarray(m)))
    assert np.abs(got - want).max() <= 512 * np.finfo(np.float32).eps * np.abs(want).max()


@pytest.mark.parametrize("dtype", [np.float32, np.complex64])
def test_eigenvalue_gradient_at_repeated_eigenvalues(dtype):
  """A cotangent that does not reach the eigenvectors leaves their derivative (infinite where eigenvalues repeat)
  out, as JAX's symbolic zeros do: the gradient of sum(eigenvalues) at the identity is the identity, not NaN."""
  def total(x):
    w, v = tnp.linalg.eigh(x)
    return tnp.real(tnp.sum(w))
  x = np.eye(3, dtype=dtype)
  for f in (tracegrad.grad(total), tracegrad.jit(tracegrad.grad(total)), tracegrad.jit(tracegrad.grad(tracegrad.jit(total)))):
    got = np.asarray(f(x))
    assert got.dtype == dtype and np.array_equal(got, np.eye(3, dtype=dtype))
