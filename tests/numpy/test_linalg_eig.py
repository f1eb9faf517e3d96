"""linalg.eig and eigvals of general matrices against numpy (values) and JAX (dtypes, derivatives)."""
import numpy as np
import pytest

import tracegrad
import tracegrad.numpy as tnp
from tracegrad import lax

EPS = np.finfo(np.float32).eps


@pytest.mark.parametrize("shape", [(1, 1), (4, 4), (3, 6, 6)])
@pytest.mark.parametrize("kind", ["real", "complex"])
def test_eig_matches_numpy(shape, kind):
  r = np.random.RandomState(sum(shape))
  a = r.randn(*shape) + (1j * r.randn(*shape) if kind == "complex" else 0)
  a = a.astype(np.complex64 if kind == "complex" else np.float32)
  w, v = tnp.linalg.eig(a)
  assert w.dtype == tnp.complex64 and v.dtype == tnp.complex64 and v.shape == a.shape
  w, v = np.asarray(w), np.asarray(v)
  scale = np.abs(a).max() * shape[-1]
  assert np.abs(a.astype(np.complex128) @ v - v * w[..., None, :]).max() <= 64 * EPS * scale   # a v = v diag(w)
  assert np.allclose(np.linalg.norm(v, axis=-2), 1, atol=16 * EPS)
  assert np.abs(np.sort_complex(w.reshape(-1, shape[-1])) - np.sort_complex(
    np.linalg.eigvals(a).reshape(-1, shape[-1]))).max() <= 64 * EPS * scale
  assert np.allclose(np.asarray(tnp.linalg.eigvals(a)), w, atol=16 * EPS * scale)


def test_eig_compiled_and_left_vectors():
  a = np.array([[2.0, 1.0, 0.0], [0.5, -1.0, 3.0], [1.0, 0.0, 1.0]], np.float32)
  w, vl, vr = tracegrad.jit(lambda a: lax.linalg.eig(a))(a)
  w, vl, vr = map(np.asarray, (w, vl, vr))
  assert np.abs(a @ vr - vr * w).max() <= 64 * EPS * 4
  assert np.abs(vl.conj().T @ a - w[:, None] * vl.conj().T).max() <= 64 * EPS * 4


def test_eigenvalue_gradient_matches_jax():
  jax = pytest.importorskip("jax")
  a = np.random.RandomState(0).randn(5, 5).astype(np.float32)

  def loss(lib, eig):
    return lambda m: (lib.abs(eig(m, compute_left_eigenvectors=False, compute_right_eigenvectors=False)[0]) ** 2).sum()
  got = tracegrad.grad(loss(tnp, lax.linalg.eig))(a)
  want = jax.grad(loss(jax.numpy, jax.lax.linalg.eig))(a)
  assert np.abs(np.asarray(got) - np.asarray(want)).max() <= 256 * EPS * np.abs(np.asarray(want)).max()


def test_eigenvector_derivatives_are_opt_in():
  a = tnp.eye(3) * tnp.arange(1.0, 4.0)
  with pytest.raises(NotImplementedError, match="enable_eigvec_derivs"):
    tracegrad.grad(lambda m: tnp.abs(lax.linalg.eig(m, compute_left_eigenvectors=False)[1]).sum())(a)
  with pytest.raises(TypeError, match="eig"): tnp.linalg.eig(tnp.ones(3))


@pytest.mark.parametrize("p", [[1.0, -3.0, 2.0], [0.0, 0.0, 1.0, 2.0, 3.0, 0.0, 0.0], [2.0, 1.0], [1.0, 0.0, 1.0],
                               [3.0], [0.0, 0.0]])
def test_roots_match_numpy(p):
  got = np.asarray(tnp.roots(tnp.array(p, tnp.float32)))
  want = np.roots(p)
  assert got.dtype == np.complex64 and got.shape == want.shape
  assert np.abs(np.sort_complex(got) - np.sort_complex(want)).max(initial=0) <= 64 * EPS * 4


def test_poly_of_a_matrix_is_its_characteristic_polynomial():
  a = np.array([[1.0, 2.0], [3.0, 4.0]], np.float32)
  got = tnp.poly(a)   # complex, as JAX's
  assert got.dtype == tnp.complex64 and np.allclose(np.asarray(got), np.poly(a), rtol=64 * EPS, atol=64 * EPS * 5)
