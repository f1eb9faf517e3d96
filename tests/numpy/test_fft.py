"""tracegrad.numpy.fft against numpy.fft (values, computed in float64 from the same inputs) and jax.numpy.fft
(dtypes, gradients): every transform over sizes 1..20, primes and powers of two, n / s cutting and padding, each
norm, axes in any order; frequencies and shifts; errors; grad against jax.grad, vmap against a loop, jit."""
import math

import numpy as np
import pytest
from hypothesis import given, strategies as st

import tracegrad
import tracegrad.numpy as tnp
from oracles import check_vmap, x64, x64_both
from tracegrad.test_util import check_grads

jax = pytest.importorskip("jax")
jnp = jax.numpy

EPS = float(np.finfo(np.float32).eps)
RNG = np.random.default_rng(11)
SIZES = list(range(1, 21)) + [23, 31, 64, 97, 100]
NORMS = [None, "backward", "ortho", "forward"]
ONE_AXIS = ["fft", "ifft", "rfft", "irfft", "hfft", "ihfft"]
N_AXES = ["fftn", "ifftn", "rfftn", "irfftn"]
TWO_AXES = ["fft2", "ifft2", "rfft2", "irfft2"]
REAL_IN = {"rfft", "ihfft", "rfftn", "rfft2"}          # the transforms of a real input
HERMITIAN = {"irfft", "hfft", "irfftn", "irfft2"}      # output length 2 * (m - 1) along the last axis by default


@pytest.fixture(autouse=True)
def _fresh_rng():
  """Each test draws the same inputs whichever tests ran before it in its process."""
  global RNG
  RNG = np.random.default_rng(11)


def real(*shape, dtype=np.float32): return RNG.standard_normal(shape).astype(dtype)


def cplx(*shape, dtype=np.complex64):
  return (RNG.standard_normal(shape) + 1j * RNG.standard_normal(shape)).astype(dtype)


def signal(name, *shape):
  return real(*shape) if name in REAL_IN else cplx(*shape)


def reference(name, x, **kw):
  """numpy.fft's result on x widened to 64 bits (the exact answer, to float32's precision)."""
  wide = x.astype(np.float64 if x.dtype.kind == "f" else np.complex128)
  return getattr(np.fft, name)(wide, **kw)


def assert_fft_close(got, want, n, dtype, units=8.0, err=""):
  """got has want's shape, the given dtype, and agrees with want to `units` float32 eps times sqrt(log2 n + 1) times
  want's largest magnitude (the error of an FFT of length n grows as sqrt(log n) of the output's scale)."""
  got = np.asarray(got)
  assert got.shape == want.shape, f"{err}: shape {got.shape} != {want.shape}"
  assert got.dtype == np.dtype(dtype), f"{err}: dtype {got.dtype} != {np.dtype(dtype)}"
  scale = float(np.abs(want).max(initial=0.0)) or 1.0
  atol = units * EPS * math.sqrt(math.log2(max(n, 1)) + 1) * scale
  np.testing.assert_allclose(got.astype(want.dtype), want, rtol=0, atol=atol, err_msg=err)


def out_dtype(name, x):
  d = np.dtype(x.dtype)
  real_out = name in HERMITIAN
  wide = d.itemsize == 8 and d.kind in "fiu" or d == np.complex128
  if real_out: return np.float64 if wide else np.float32
  return np.complex128 if wide else np.complex64


def test_names_match_jax():
  assert {n for n in dir(jnp.fft) if not n.startswith("_")} == set(tnp.fft.__all__)
  assert all(callable(getattr(tnp.fft, n)) and getattr(tnp.fft, n).__doc__ for n in tnp.fft.__all__)


# ---- values against numpy ----

@pytest.mark.parametrize("norm", NORMS)
@pytest.mark.parametrize("name", ONE_AXIS)
def test_one_axis_values(name, norm):
  fn = getattr(tnp.fft, name)
  for m in SIZES:
    x = signal(name, 2, m)
    for n in (None, max(1, m - 3), m + 1, 2 * m + 1):
      if n is None and name in HERMITIAN and m == 1: continue   # no default length: 2 * (1 - 1) = 0 points
      want = reference(name, x, n=n, norm=norm)
      length = n or (2 * (m - 1) if name in HERMITIAN else m)
      assert_fft_close(fn(x, n=n, norm=norm), want, length, out_dtype(name, x), err=f"{name} m={m} n={n}")


@pytest.mark.parametrize("name", ONE_AXIS)
def test_one_axis_along_any_axis(name):
  fn = getattr(tnp.fft, name)
  x = signal(name, 3, 5, 4)
  for axis in (0, 1, 2, -1, -2, -3):
    for n in (None, 3, 8):
      want = reference(name, x, n=n, axis=axis)
      assert_fft_close(fn(x, n=n, axis=axis), want, 8, out_dtype(name, x), err=f"{name} axis={axis} n={n}")


@pytest.mark.parametrize("norm", [None, "ortho", "forward"])
@pytest.mark.parametrize("name", N_AXES)
def test_n_axes_values(name, norm):
  fn = getattr(tnp.fft, name)
  x = signal(name, 4, 5, 6, 3)
  for axes in (None, (0,), (1, 3), (3, 1), (-1, 0, 2), (2, 0, 3, 1), (0, 1, 2, 3), (-4, -3)):
    ns = [] if axes is None else [[7, 3, 2, 5][:len(axes)], [1] * len(axes), [4, 9, 1, 6][:len(axes)]]
    for s in [None] + ns:
      want = reference(name, x, s=s, axes=axes, norm=norm)
      assert_fft_close(fn(x, s=s, axes=axes, norm=norm), want, want.size, out_dtype(name, x),
                       err=f"{name} axes={axes} s={s}")


@pytest.mark.parametrize("name", N_AXES)
def test_n_axes_with_s_and_no_axes_take_the_last_axes(name):
  x = signal(name, 3, 4, 6)
  for s in ([5], [2, 7], [3, 3, 3]):
    want = reference(name, x, s=s, axes=range(3 - len(s), 3))
    assert_fft_close(getattr(tnp.fft, name)(x, s=s), want, want.size, out_dtype(name, x), err=f"{name} s={s}")


@pytest.mark.parametrize("name", TWO_AXES)
def test_two_axes_values(name):
  fn = getattr(tnp.fft, name)
  for shape in ((1, 1), (2, 3), (5, 8), (7, 4), (2, 3, 6), (3, 16, 5)):
    x = signal(name, *shape)
    for s, axes, norm in ((None, (-2, -1), None), ((4, 3), (-2, -1), "ortho"), (None, (-1, -2), "forward"),
                          ((3, 9), (0, -1), None), ((2, 2), (-1, 0), "backward")):
      if name in HERMITIAN and s is None and x.shape[axes[-1]] == 1: continue
      want = reference(name, x, s=s, axes=axes, norm=norm)
      assert_fft_close(fn(x, s=s, axes=axes, norm=norm), want, want.size, out_dtype(name, x),
                       err=f"{name} {shape} s={s} axes={axes}")


@pytest.mark.parametrize("name", ["fft", "ifft", "rfft", "fftn", "rfftn"])
def test_inverse_round_trips(name):
  inv = {"fft": "ifft", "ifft": "fft", "rfft": "irfft", "fftn": "ifftn", "rfftn": "irfftn"}[name]
  for shape in ((1,), (17,), (6, 10), (3, 4, 5)):
    x = signal(name, *shape)
    for norm in NORMS:
      kw = {"n": shape[-1]} if name == "rfft" else {"s": shape} if name == "rfftn" else {}
      back = getattr(tnp.fft, inv)(getattr(tnp.fft, name)(x, norm=norm), norm=norm, **kw)
      assert_fft_close(back, x.astype(np.asarray(back).dtype), x.size, np.asarray(back).dtype, units=16)


def test_more_than_three_axes_and_zero_axes():
  x = cplx(2, 3, 2, 4, 3)
  for name in ("fftn", "ifftn"):
    want = reference(name, x)
    assert_fft_close(getattr(tnp.fft, name)(x), want, x.size, np.complex64, err=name)
  y = real(2, 3, 2, 4, 3)
  for name, inp in (("rfftn", y), ("irfftn", x)):
    want = reference(name, inp, s=(3, 2, 1, 2, 6), axes=range(5))
    assert_fft_close(getattr(tnp.fft, name)(inp, s=(3, 2, 1, 2, 6)), want, want.size,
                     out_dtype(name, inp), err=name)
  # no axes: fftn and ifftn are the identity (in the complex dtype), a 0-d array included
  r = real(2, 3)
  for name in ("fftn", "ifftn"):
    np.testing.assert_array_equal(getattr(tnp.fft, name)(r, axes=()), r.astype(np.complex64))
    assert getattr(tnp.fft, name)(np.float32(2.5)).dtype == jnp.fft.fftn(np.float32(2.5)).dtype
  # an empty axis that is not transformed
  assert tnp.fft.fft(np.zeros((0, 4), np.float32)).shape == (0, 4)
  assert tnp.fft.rfftn(np.zeros((3, 0, 4), np.float32), axes=(0, 2)).shape == (3, 0, 3)


@given(st.data())
def test_random_shapes_axes_and_lengths(data):
  ndim = data.draw(st.integers(1, 4), "ndim")
  shape = tuple(data.draw(st.lists(st.integers(1, 6), min_size=ndim, max_size=ndim), "shape"))
  name = data.draw(st.sampled_from(N_AXES), "name")
  k = data.draw(st.integers(1, ndim), "k")
  axes = tuple(data.draw(st.permutations(range(-ndim, 0)), "axes")[:k])
  s = data.draw(st.none() | st.lists(st.integers(1, 9), min_size=k, max_size=k), "s")
  norm = data.draw(st.sampled_from(NORMS), "norm")
  if name in HERMITIAN and s is None and shape[axes[-1]] == 1: s = [1] * k
  x = signal(name, *shape)
  want = reference(name, x, s=s, axes=axes, norm=norm)
  assert_fft_close(getattr(tnp.fft, name)(x, s=s, axes=axes, norm=norm), want, max(want.size, 2), out_dtype(name, x))


# ---- dtypes against jax.numpy.fft ----

DTYPES = [np.bool_, np.int8, np.uint8, np.int32, np.float16, jnp.bfloat16, np.float32, np.complex64]


@pytest.mark.parametrize("name", ONE_AXIS + N_AXES + TWO_AXES)
def test_dtypes_match_jax(name):
  for dt in DTYPES:
    x = (np.arange(12).reshape(3, 4) % 3).astype(dt)
    if name in REAL_IN and np.dtype(dt).kind == "c":
      # a complex input to a real transform: TypeError here, JAX's ValueError
      with pytest.raises(TypeError, match=f"{name}: a must be real, got complex64"): getattr(tnp.fft, name)(x)
      continue
    got = getattr(tnp.fft, name)(x)
    if name in REAL_IN and np.dtype(dt).itemsize == 2:
      want = getattr(jnp.fft, name)(x.astype(np.float32))   # JAX raises for float16 / bfloat16; tracegrad widens
    else:
      want = getattr(jnp.fft, name)(x)
    assert (got.shape, str(got.dtype)) == (want.shape, str(want.dtype)), (name, dt)
    np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-5, atol=1e-5)


def test_dtypes_under_x64():
  with x64_both():
    for dt in (np.int32, np.int64, np.uint64, np.float32, np.float64, np.complex64, np.complex128):
      x = (np.arange(10) % 4).astype(dt)
      for name in ONE_AXIS + ["fftn", "irfftn"]:
        if name in REAL_IN and np.dtype(dt).kind == "c": continue
        got, want = getattr(tnp.fft, name)(x), getattr(jnp.fft, name)(x)
        assert str(got.dtype) == str(want.dtype), (name, dt)
    x = cplx(3, 13, dtype=np.complex128)
    y = real(3, 13, dtype=np.float64)
    for name, inp in (("fft", x), ("ifft", x), ("rfft", y), ("irfft", x), ("hfft", x), ("ihfft", y)):
      got = getattr(tnp.fft, name)(inp, n=16, norm="ortho")
      want = getattr(np.fft, name)(inp, n=16, norm="ortho")
      assert got.dtype == want.dtype
      np.testing.assert_allclose(np.asarray(got), want, rtol=0, atol=64 * np.finfo(np.float64).eps * np.abs(want).max())
    assert tnp.fft.fftfreq(4).dtype == tnp.float64 and tnp.fft.rfftfreq(4).dtype == tnp.float64


# ---- frequencies and shifts ----

def test_fftfreq_rfftfreq_values():
  for n in (1, 2, 3, 4, 5, 8, 17, 100):
    for d in (1.0, 0.1, 3, 2.5):
      for name in ("fftfreq", "rfftfreq"):
        got = getattr(tnp.fft, name)(n, d)
        want = getattr(np.fft, name)(n, d)
        assert got.dtype == tnp.float32
        np.testing.assert_allclose(np.asarray(got), want, rtol=2 * EPS, atol=0, err_msg=f"{name}({n}, {d})")
  assert tnp.fft.fftfreq(0).shape == (0,)


def test_fftfreq_dtype_and_array_spacing_match_jax():
  for name in ("fftfreq", "rfftfreq"):
    for dtype in (None, np.float16, jnp.bfloat16, np.float32, np.complex64):
      got, want = getattr(tnp.fft, name)(6, 0.5, dtype=dtype), getattr(jnp.fft, name)(6, 0.5, dtype=dtype)
      assert str(got.dtype) == str(want.dtype), (name, dtype)
      np.testing.assert_allclose(np.asarray(got).astype(np.complex64), np.asarray(want).astype(np.complex64))
    d = np.float32(0.25)
    np.testing.assert_allclose(np.asarray(getattr(tnp.fft, name)(8, tnp.asarray(d))), getattr(jnp.fft, name)(8, d))
    # the spacing may be traced (the length may not)
    got = tracegrad.jit(lambda d, name=name: getattr(tnp.fft, name)(8, d))(d)
    np.testing.assert_allclose(np.asarray(got), getattr(np.fft, name)(8, d), rtol=2 * EPS)
  got, want = tnp.fft.fftfreq(5, dtype=np.int32), jnp.fft.fftfreq(5, dtype=np.int32)
  assert got.dtype == want.dtype and np.array_equal(np.asarray(got), np.asarray(want))


def test_fftshift_ifftshift():
  x = np.arange(5 * 4 * 3).reshape(5, 4, 3)
  for axes in (None, 0, 1, -1, (0,), (0, 2), (2, 0), (-1, -1), ()):
    for name in ("fftshift", "ifftshift"):
      got = getattr(tnp.fft, name)(x, axes)
      assert got.dtype == tnp.int32
      np.testing.assert_array_equal(np.asarray(got), getattr(np.fft, name)(x, axes), err_msg=f"{name} {axes}")
  for n in range(1, 8):
    f = tnp.fft.fftfreq(n)
    np.testing.assert_array_equal(np.asarray(tnp.fft.ifftshift(tnp.fft.fftshift(f))), np.asarray(f))
    want = np.fft.fftshift(np.fft.fftfreq(n).astype(np.float32))
    np.testing.assert_array_equal(np.asarray(tnp.fft.fftshift(f)), want)
  assert tnp.fft.fftshift(np.float32(3.0)).shape == ()


# ---- errors ----

X = np.ones((3, 4), np.float32)


@pytest.mark.parametrize("call,exc,msg", [
  (lambda: tnp.fft.fft(X, n=0), ValueError, r"fft: invalid number of data points \(0\) specified"),
  (lambda: tnp.fft.irfft(X, n=-2), ValueError, r"irfft: invalid number of data points \(-2\) specified"),
  (lambda: tnp.fft.irfft(np.ones(1, np.complex64)), ValueError, r"irfft: invalid number of data points \(0\)"),
  (lambda: tnp.fft.fft(np.ones((3, 0))), ValueError, r"fft: invalid number of data points \(0\)"),
  (lambda: tnp.fft.fftn(X, s=(2, 0)), ValueError, r"fftn: invalid number of data points \(0\)"),
  (lambda: tnp.fft.fft(X, n=2.0), TypeError, r"fft: n must be an integer, got 2.0"),
  (lambda: tnp.fft.fftn(X, s=3), TypeError, r"fftn: s must be a sequence of ints, got 3"),
  (lambda: tnp.fft.fftn(X, s=(2, None)), TypeError, r"fftn: s\[1\] must be an integer, got None"),
  (lambda: tnp.fft.ifftn(X, axes=1), TypeError, r"ifftn: axes must be a sequence of ints, got 1"),
  (lambda: tnp.fft.fftn(X, s=(2, None)), TypeError, r"fftn: s\[1\] must be an integer, got None"),
  (lambda: tnp.fft.ifftn(X, axes=1), TypeError, r"ifftn: axes must be a sequence of ints, got 1"),
  (lambda: tnp.fft.fft(X, axis=(0,)), TypeError, r"fft: axis must be an int, got \(0,\)"),
  (lambda: tnp.fft.rfft(X, axis=2), ValueError, r"rfft: axes 2 is out of bounds for an array of dimension 2"),
  (lambda: tnp.fft.fft(np.float32(1)), ValueError, r"fft: axes -1 is out of bounds for an array of dimension 0"),
  (lambda: tnp.fft.fftn(X, axes=(0, 0)), ValueError, r"fftn: repeated axes in axes=\(0, 0\)"),
  (lambda: tnp.fft.ifftn(X, axes=(0, -2)), ValueError, r"ifftn: repeated axes in axes=\(0, -2\)"),
  (lambda: tnp.fft.fftn(X, s=(2,), axes=(0, 1)), ValueError, r"fftn: s and axes must have the same length"),
  (lambda: tnp.fft.rfftn(X, s=(2, 2, 2)), ValueError, r"rfftn: s=\(2, 2, 2\) names 3 axes, but a has only 2"),
  (lambda: tnp.fft.fft2(X, axes=(0,)), ValueError, r"fft2: axes must name two axes, got axes=\(0,\)"),
  (lambda: tnp.fft.irfft2(np.ones(3)), ValueError, r"irfft2: axes -2 is out of bounds"),
  (lambda: tnp.fft.fft(X, norm="bad"), ValueError, r'fft: norm must be "backward", "ortho", "forward" or None, got'),
  (lambda: tnp.fft.hfft(X, norm="Ortho"), ValueError, r"hfft: norm must be"),
  (lambda: tnp.fft.rfft(X + 1j), TypeError, r"rfft: a must be real, got complex64"),
  (lambda: tnp.fft.ihfft(X + 1j), TypeError, r"ihfft: a must be real, got complex64"),
  (lambda: tnp.fft.rfftn(X, axes=()), ValueError, r"rfftn: axes must name at least one axis"),
  (lambda: tnp.fft.fft([1.0, 2.0]), TypeError, r"fft requires ndarray or scalar arguments"),
  (lambda: tnp.fft.fftfreq([3]), TypeError, r"fftfreq: n must be an integer, got \[3\]"),
  (lambda: tnp.fft.fftfreq(-1), ValueError, r"fftfreq: n must be at least 0, got -1"),
  (lambda: tnp.fft.rfftfreq(0), ValueError, r"rfftfreq: n must be at least 1, got 0"),
  (lambda: tnp.fft.fftfreq(4, d=[1.0]), TypeError, r"fftfreq: d must be a scalar"),
  (lambda: tnp.fft.fftshift(X, axes=2), ValueError, r"fftshift: axes 2 is out of bounds"),
])
def test_errors(call, exc, msg):
  with pytest.raises(exc, match=msg):
    call()


# ---- gradients against jax.grad ----

W = cplx(6, 8)
WR = real(6, 16)
# (name, loss as a function of the namespace `m` (tnp.fft or jnp.fft) and the numpy module `p` (tnp or jnp), input)
LOSSES = [
  ("fft abs", lambda m, p, x: p.abs(m.fft(x)).sum(), real(6, 8)),
  ("fft abs complex", lambda m, p, x: p.abs(m.fft(x, n=11, axis=0)).sum(), cplx(6, 8)),
  ("fft cut", lambda m, p, x: (p.abs(m.fft(x, n=5)) ** 2).sum(), real(6, 8)),
  ("ifft real", lambda m, p, x: p.real(m.ifft(x * W)).sum(), cplx(6, 8)),
  ("ifft ortho", lambda m, p, x: p.imag(m.ifft(x, n=12, norm="ortho") ** 2).sum(), cplx(6, 8)),
  ("rfft", lambda m, p, x: (p.abs(m.rfft(x)) * p.arange(5.0)).sum(), real(6, 8)),
  ("rfft pad", lambda m, p, x: p.real(m.rfft(x, n=13, axis=0, norm="forward") * W[0, :7, None]).sum(), real(6, 8)),
  ("irfft", lambda m, p, x: (m.irfft(x) * WR[:, :14]).sum(), cplx(6, 8)),
  ("irfft n odd", lambda m, p, x: (m.irfft(x, n=9, norm="ortho") ** 2).sum(), cplx(6, 8)),
  ("irfft n cut", lambda m, p, x: p.sin(m.irfft(x, n=4)).sum(), cplx(6, 8)),
  ("hfft", lambda m, p, x: (m.hfft(x, n=10) * WR[:, :10]).sum(), cplx(6, 8)),
  ("ihfft", lambda m, p, x: p.abs(m.ihfft(x, norm="ortho")).sum(), real(6, 8)),
  ("fftn", lambda m, p, x: p.abs(m.fftn(x, s=(4, 9), axes=(1, 0))).sum(), cplx(6, 8)),
  ("ifft2", lambda m, p, x: p.real(m.ifft2(x, norm="forward") * W).sum(), real(6, 8)),
  ("rfftn", lambda m, p, x: p.abs(m.rfftn(x, axes=(0, 1))).sum(), real(6, 8)),
  ("rfft2 s", lambda m, p, x: (p.abs(m.rfft2(x, s=(7, 6))) ** 2).sum(), real(6, 8)),
  ("irfftn", lambda m, p, x: (m.irfftn(x, s=(6, 8)) * WR[:, :8]).sum(), cplx(6, 8)),
  ("irfft2 axes", lambda m, p, x: p.cos(m.irfft2(x, axes=(1, 0))).sum(), cplx(6, 8)),
  ("fftshift", lambda m, p, x: (m.fftshift(x, axes=0) * WR[:, :8]).sum() + (m.ifftshift(x) * WR[:, 8:]).sum(),
   real(6, 8)),
]


@pytest.mark.parametrize("name,loss,x", LOSSES, ids=[c[0] for c in LOSSES])
def test_grad_matches_jax(name, loss, x):
  got = tracegrad.grad(lambda v: loss(tnp.fft, tnp, v))(x)
  want = np.asarray(jax.grad(lambda v: loss(jnp.fft, jnp, v))(x))
  assert_fft_close(got, want.astype(np.complex128 if want.dtype.kind == "c" else np.float64), 64, want.dtype,
                   units=16, err=name)


def test_grads_by_finite_differences():
  """In float64 (x64), where second differences are accurate."""
  with x64():
    x = real(5, 6, dtype=np.float64)
    check_grads(lambda v: tnp.abs(tnp.fft.rfftn(v, s=(4, 7))), (x,), order=2)
    check_grads(lambda v: tnp.fft.irfft(tnp.fft.fft(v, axis=0), n=7) ** 2, (x,), order=2)
    check_grads(lambda v: tnp.fft.hfft(tnp.fft.ihfft(v, n=9, norm="ortho")), (x,), order=1)


# ---- vmap and jit ----

def test_vmap_matches_a_loop():
  x, z = real(3, 4, 5), cplx(3, 4, 5)
  check_vmap(lambda v: tnp.fft.fft(v, axis=0), (z,))
  check_vmap(lambda v: tnp.fft.fft(v, n=7, norm="ortho"), (x,), in_axes=1)
  check_vmap(lambda v: tnp.fft.rfftn(v, s=(3, 6)), (x,), in_axes=2, out_axes=1)
  check_vmap(lambda v: tnp.fft.irfft(v, n=6, axis=0), (z,), in_axes=1)
  check_vmap(lambda v: tnp.fft.hfft(v), (z,))
  check_vmap(lambda v: tnp.fft.ifftn(v, axes=(1, 0)), (z,), in_axes=2)
  check_vmap(lambda v: tnp.fft.fftshift(v), (x,))
  g = tracegrad.vmap(tracegrad.grad(lambda v: tnp.abs(tnp.fft.rfft(v)).sum()))(x.reshape(12, 5))
  for i, row in enumerate(x.reshape(12, 5)):
    want = tracegrad.grad(lambda v: tnp.abs(tnp.fft.rfft(v)).sum())(row)
    np.testing.assert_allclose(np.asarray(g[i]), np.asarray(want), rtol=1e-5, atol=1e-5)


def _many(x, z):
  return (tnp.fft.fft(z), tnp.fft.ifft(z, n=9, axis=0), tnp.fft.rfft(x, norm="ortho"), tnp.fft.irfft(z, n=7),
          tnp.fft.hfft(z, axis=0), tnp.fft.ihfft(x, n=3), tnp.fft.fft2(x, s=(5, 4)), tnp.fft.ifft2(z),
          tnp.fft.rfft2(x, axes=(1, 0)), tnp.fft.irfft2(z, s=(3, 17)), tnp.fft.fftn(z[None], axes=(2, 0)),
          tnp.fft.irfftn(z, norm="forward"), tnp.fft.fftshift(x), tnp.fft.ifftshift(z, axes=1))


def test_jit_matches_eager_and_numpy():
  """One compiled program with every transform (the cpu backend compiles FFT with lower/fft_stages.py)."""
  x, z = real(6, 17), cplx(6, 17)
  got = tracegrad.jit(_many)(x, z)
  eager = _many(x, z)
  for i, (g, e) in enumerate(zip(got, eager)):
    e = np.asarray(e)
    assert_fft_close(g, e.astype(np.complex128 if e.dtype.kind == "c" else np.float64), 256, e.dtype, err=str(i))
  assert_fft_close(got[0], reference("fft", z), 17, np.complex64)
  assert_fft_close(got[9], reference("irfft2", z, s=(3, 17)), 51, np.float32)
  # grad and vmap under jit, in one more program
  loss = lambda v: tnp.abs(tnp.fft.rfftn(v, s=(8, 5))).sum() + tnp.real(tnp.fft.ifft(v * W[:, :1])).sum()  # noqa: E731
  gj = tracegrad.jit(lambda xs: tracegrad.vmap(tracegrad.grad(loss))(xs))(np.stack([x, 2 * x]))
  for i, xi in enumerate((x, 2 * x)):
    want = np.asarray(jax.grad(lambda v: jnp.abs(jnp.fft.rfftn(v, s=(8, 5))).sum()
                               + jnp.real(jnp.fft.ifft(v * W[:, :1])).sum())(xi))
    assert_fft_close(gj[i], want.astype(np.float64), 64, np.float32, units=16)
