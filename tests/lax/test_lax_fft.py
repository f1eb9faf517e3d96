"""tracegrad.lax.fft against numpy.fft (values over one to three trailing axes) and jax.lax.fft (dtypes, gradients,
jvp): each FftType, its errors, vmap against a loop and jit."""
import math

import numpy as np
import pytest

import tracegrad
import tracegrad.numpy as tnp
from oracles import check_vmap, x64, x64_both
from tracegrad import lax
from tracegrad.test_util import check_grads

jax = pytest.importorskip("jax")
jnp = jax.numpy

EPS = float(np.finfo(np.float32).eps)
RNG = np.random.default_rng(5)
TYPES = ["FFT", "IFFT", "RFFT", "IRFFT"]


@pytest.fixture(autouse=True)
def _fresh_rng():
  """Each test draws the same inputs whichever tests ran before it in its process."""
  global RNG
  RNG = np.random.default_rng(5)


def real(*shape, dtype=np.float32): return RNG.standard_normal(shape).astype(dtype)


def cplx(*shape, dtype=np.complex64):
  return (RNG.standard_normal(shape) + 1j * RNG.standard_normal(shape)).astype(dtype)


def operand(kind, shape, lengths):
  """An input of the shape `kind` takes for `lengths` over the trailing axes of `shape`."""
  if kind == "RFFT": return real(*shape[:-len(lengths)], *lengths)
  last = lengths[-1] // 2 + 1 if kind == "IRFFT" else lengths[-1]
  return cplx(*shape[:-len(lengths)], *lengths[:-1], last)


def reference(kind, x, lengths):
  axes = tuple(range(x.ndim - len(lengths), x.ndim))
  wide = x.astype(np.float64 if x.dtype.kind == "f" else np.complex128)
  name = {"FFT": "fftn", "IFFT": "ifftn", "RFFT": "rfftn", "IRFFT": "irfftn"}[kind]
  return getattr(np.fft, name)(wide, s=lengths, axes=axes)


def assert_fft_close(got, want, n, dtype, units=8.0, err=""):
  """Within `units` float32 eps times sqrt(log2 n + 1) of want's largest magnitude, with the given dtype."""
  got = np.asarray(got)
  assert got.shape == want.shape and got.dtype == np.dtype(dtype), (err, got.shape, got.dtype, want.shape, dtype)
  atol = units * EPS * math.sqrt(math.log2(max(n, 1)) + 1) * (float(np.abs(want).max(initial=0.0)) or 1.0)
  np.testing.assert_allclose(got.astype(want.dtype), want, rtol=0, atol=atol, err_msg=err)


@pytest.mark.parametrize("kind", TYPES)
def test_values_over_one_to_three_axes(kind):
  for lengths in [(1,), (2,), (5,), (8,), (13,), (16,), (17,), (64,), (100,), (3, 4), (1, 7), (6, 5), (2, 3, 4),
                  (5, 1, 6), (3, 3, 3)]:
    for batch in ((), (2,)):
      x = operand(kind, batch + lengths, lengths)
      want = reference(kind, x, lengths)
      for fft_type in (getattr(lax.FftType, kind), kind, kind.lower()):
        got = lax.fft(x, fft_type, lengths)
        assert_fft_close(got, want, math.prod(lengths), np.float32 if kind == "IRFFT" else np.complex64,
                         err=f"{kind} {lengths}")


def test_dtypes_match_jax():
  for kind, dt in [("FFT", np.complex64), ("IFFT", np.complex64), ("RFFT", np.float32), ("IRFFT", np.complex64)]:
    x = operand(kind, (3, 8), (8,)).astype(dt)
    got, want = lax.fft(x, kind, (8,)), jax.lax.fft(x, kind, (8,))
    assert (got.shape, str(got.dtype)) == (want.shape, str(want.dtype)), kind
  # float16 and bfloat16 are widened for RFFT (JAX raises)
  assert lax.fft(np.ones(4, np.float16), "rfft", (4,)).dtype == tnp.complex64
  with x64_both():
    for kind, dt in [("FFT", np.complex128), ("IFFT", np.complex128), ("RFFT", np.float64), ("IRFFT", np.complex128)]:
      x = operand(kind, (2, 6), (6,)).astype(dt)
      got, want = lax.fft(x, kind, (6,)), jax.lax.fft(x, kind, (6,))
      assert (got.shape, str(got.dtype)) == (want.shape, str(want.dtype)), kind
      np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=0,
                                 atol=64 * np.finfo(np.float64).eps * np.abs(np.asarray(want)).max())


@pytest.mark.parametrize("call,exc,msg", [
  (lambda: lax.fft(cplx(4), "dft", (4,)), ValueError, r"lax.fft: fft_type must be one of .*'FFT'.*got 'dft'"),
  (lambda: lax.fft(cplx(2, 2, 2, 2), "fft", (2, 2, 2, 2)), ValueError, r"fft_lengths must name 1 to 3 trailing axes"),
  (lambda: lax.fft(cplx(4), "fft", ()), ValueError, r"fft_lengths must name 1 to 3 trailing axes"),
  (lambda: lax.fft(cplx(4), "fft", (4, 1)), ValueError, r"fft_lengths must name 1 to 3 trailing axes"),
  (lambda: lax.fft(cplx(3, 4), "fft", (4, 4)), ValueError, r"FFT of lengths \(4, 4\) needs trailing axes"),
  (lambda: lax.fft(cplx(8), "irfft", (8,)), ValueError, r"IRFFT of lengths \(8,\) needs trailing axes \(5,\)"),
  (lambda: lax.fft(real(4), "fft", (4,)), TypeError, r"lax.fft: FFT takes a complex array, got float32"),
  (lambda: lax.fft(cplx(4), "rfft", (4,)), TypeError, r"lax.fft: RFFT takes a real floating array, got complex64"),
  (lambda: lax.fft(np.arange(4), "rfft", (4,)), TypeError, r"RFFT takes a real floating array, got int32"),
])
def test_errors(call, exc, msg):
  with pytest.raises(exc, match=msg):
    call()


# ---- transforms ----

LOSSES = [
  ("FFT", lambda f, p, x: p.abs(f(x, "FFT", (4, 6))).sum(), cplx(3, 4, 6)),
  ("IFFT", lambda f, p, x: (p.real(f(x, "IFFT", (6,))) * p.arange(6.0)).sum(), cplx(3, 4, 6)),
  ("RFFT", lambda f, p, x: p.abs(f(x, "RFFT", (3, 4, 6))).sum(), real(3, 4, 6)),
  ("IRFFT", lambda f, p, x: p.sin(f(x, "IRFFT", (4, 10))).sum(), cplx(3, 4, 6)),
  ("IRFFT odd", lambda f, p, x: (f(x, "IRFFT", (11,)) ** 2).sum(), cplx(3, 4, 6)),
]


@pytest.mark.parametrize("kind,loss,x", LOSSES, ids=[c[0] for c in LOSSES])
def test_grad_matches_jax(kind, loss, x):
  got = tracegrad.grad(lambda v: loss(lax.fft, tnp, v))(x)
  want = np.asarray(jax.grad(lambda v: loss(jax.lax.fft, jnp, v))(x))
  assert_fft_close(got, want.astype(np.complex128 if want.dtype.kind == "c" else np.float64), 64, want.dtype,
                   units=16, err=kind)


def test_jvp_is_the_transform_of_the_tangent():
  for kind in TYPES:
    x, t = operand(kind, (2, 6, 8), (6, 8)), operand(kind, (2, 6, 8), (6, 8))
    out, tan = tracegrad.jvp(lambda v: lax.fft(v, kind, (6, 8)), (x,), (t,))
    assert_fft_close(out, reference(kind, x, (6, 8)), 48, np.asarray(out).dtype, err=kind)
    assert_fft_close(tan, reference(kind, t, (6, 8)), 48, np.asarray(tan).dtype, err=kind)


def test_grads_by_finite_differences():
  """In float64 (x64), where second differences are accurate."""
  with x64():
    x = real(3, 5, dtype=np.float64)
    parts = lambda z: (tnp.real(z), tnp.imag(z))  # noqa: E731  (check_grads compares real outputs)
    check_grads(lambda v: parts(lax.fft(v, "RFFT", (3, 5))), (x,), order=2)
    check_grads(lambda v: parts(lax.fft(v * (1 - 2j), "IFFT", (3, 5))), (x,), order=2)
    check_grads(lambda v: lax.fft(lax.fft(v + 0j, "FFT", (5,)), "IRFFT", (8,)), (x,), order=2)


def test_vmap_matches_a_loop():
  check_vmap(lambda v: lax.fft(v, "FFT", (5,)), (cplx(3, 4, 5),))
  check_vmap(lambda v: lax.fft(v, "IFFT", (4, 5)), (cplx(4, 3, 5),), in_axes=1)
  check_vmap(lambda v: lax.fft(v, "RFFT", (4, 6)), (real(4, 6, 3),), in_axes=2, out_axes=1)
  check_vmap(lambda v: lax.fft(v, "IRFFT", (4, 8)), (cplx(2, 4, 5),))


def test_jit_matches_eager():
  """One compiled program with each type (the cpu backend compiles FFT with lower/fft_stages.py)."""
  x, z = real(2, 6, 12), cplx(2, 6, 12)

  def f(x, z):
    return (lax.fft(z, "FFT", (12,)), lax.fft(z, "IFFT", (6, 12)), lax.fft(x, "RFFT", (2, 6, 12)),
            lax.fft(z[..., :7], "IRFFT", (6, 12)), lax.fft(z[:, :5, :11], "FFT", (5, 11)))

  for g, e in zip(tracegrad.jit(f)(x, z), f(x, z)):
    e = np.asarray(e)
    assert_fft_close(g, e.astype(np.complex128 if e.dtype.kind == "c" else np.float64), 144, e.dtype)
