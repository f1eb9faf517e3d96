"""hyp1f1, hyp2f1, owens_t and bessel_jn against jax.scipy.special (values, dtypes, shapes, gradients) and, for
accuracy, scipy.special in float64: tolerances in units of the dtype's eps.

JAX is inaccurate in parts of these domains, and there they are checked against scipy only, each assertion saying where:
hyp1f1 for x < -5 (its series cancels; NaN below -100); hyp2f1 for x < -1/2 (its series diverges below -1) and for
x > 0.9 (250 terms of a slowly converging series); bessel_jn for |z| beyond about 20 at n_iter=50 and for small |z| in
float32 (NaN there, from overflow); owens_t for large h in float64 (13 quadrature points).
"""
import contextlib

import numpy as np
import pytest

import tracegrad as tg
import tracegrad.numpy as tnp
from tracegrad.scipy import special

from oracles import x64_both

jax = pytest.importorskip("jax")
jspecial = pytest.importorskip("jax.scipy.special")
sp = pytest.importorskip("scipy.special")
rng = np.random.default_rng(7)


def precision(dt):
  """float64 on in both libraries for dt float64."""
  return contextlib.nullcontext() if dt is np.float32 else x64_both()


def _u(lo, hi, n, dt): return rng.uniform(lo, hi, n).astype(dt)


def _check(ours, theirs, ref, dt, ref_ulps, jax_ok=16, jax_ulps=100, atol_ulps=0.0):
  """ours against scipy's float64 ref within ref_ulps (where ref is a normal number of dt), and against JAX within
  jax_ulps where JAX is itself within jax_ok of ref. Returns where JAX was (among the normal ref) and that mask."""
  ours, theirs = np.asarray(ours), np.asarray(theirs)
  assert ours.dtype == theirs.dtype == dt and ours.shape == theirs.shape
  eps, fi = np.finfo(dt).eps, np.finfo(dt)
  fin = np.isfinite(ref) & (np.abs(ref) < fi.max / 16) & (np.abs(ref) > fi.tiny * 1e4)
  np.testing.assert_allclose(ours[fin], ref[fin], rtol=ref_ulps * eps, atol=atol_ulps * eps)
  good = fin & (np.abs(theirs - ref) <= jax_ok * eps * np.abs(ref))
  np.testing.assert_allclose(ours[good], theirs[good], rtol=jax_ulps * eps, atol=atol_ulps * eps)
  return good[fin], fin


DTYPES = [np.float32, np.float64]


def _with(points, *arrays):
  """The arrays with the rows of points (one per argument) appended, and the count of random points before them."""
  pts = np.asarray(points, arrays[0].dtype).T
  return [np.concatenate([v, p]) for v, p in zip(arrays, pts)], arrays[0].size


@pytest.mark.parametrize("dt", DTYPES)
def test_hyp1f1(dt):
  n = 24
  x = np.concatenate([_u(lo, hi, n, dt) for lo, hi in [(-150, -100), (-60, -5), (-5, 0), (0, 5), (5, 60), (100, 150)]])
  a, b = _u(0.1, 6, x.size, dt), _u(0.2, 8, x.size, dt)
  # JAX's conventions: 1 at a = 0 (also at b = 0), e^x at a = b, inf at b = 0; polynomials for a = 0, -1, ...
  conventions = [(0, 0, 1), (0, 3, 2), (2, 2, -3), (1, 0, 1), (-2, 3, 1), (2, -1.5, 1), (1, 2, -np.inf)]
  (a, b, x), k = _with(conventions, a, b, x)
  with precision(dt):
    ours, theirs = special.hyp1f1(a, b, x), jspecial.hyp1f1(a, b, x)
    ref = sp.hyp1f1(*(v[:k].astype(np.float64) for v in (a, b, x)))
    good, fin = _check(ours[:k], theirs[:k], ref, dt, 400 if dt is np.float32 else 4000)
    assert good[x[:k][fin] >= 0].mean() > 0.9 and not good[x[:k][fin] < -100].any()   # JAX: NaN below -100
    np.testing.assert_allclose(ours[k:], theirs[k:], rtol=8 * np.finfo(dt).eps)
    # better than JAX: NaN in, NaN out; the polynomial 1F1(-2; 3; x) = 1 - 2x/3 + x^2/12 for x <= -100; inf at inf
    r = special.hyp1f1(np.asarray([1, -2, 1], dt), np.asarray([2, 3, 2], dt), np.asarray([np.nan, -200, np.inf], dt))
    np.testing.assert_allclose(r, [np.nan, 1 + 400 / 3 + 40000 / 12, np.inf], rtol=8 * np.finfo(dt).eps)


@pytest.mark.parametrize("dt", DTYPES)
def test_hyp2f1(dt):
  n = 20
  x = np.concatenate([_u(lo, hi, n, dt) for lo, hi in [(-30, -1), (-1, -0.5), (-0.5, 0), (0, 0.5), (0.5, 0.9),
                                                       (0.9, 0.999)]])
  a, b, c = _u(0.1, 4, x.size, dt), _u(-3, 4, x.size, dt), _u(0.2, 5, x.size, dt)
  # JAX's conventions at the edges of the domain, and the closed forms it uses
  cases = [(1, 1, 2, 2), (2, 3, -2, .5), (2, 3, 0, .5), (1, 2, 3, 1), (1, 2, 2.5, 1), (2, 3, 7, 1), (0, 1, 0, .5),
           (1, 0, 2, .5), (1, 2, 2, .5), (2, 1, 1, .5), (1, 1, 2, 0), (-3, 2, 3, -3), (-3, 2, 3, 1), (2, 2, 4, .95)]
  (a, b, c, x), k = _with(cases, a, b, c, x)
  with precision(dt):
    ours, theirs = special.hyp2f1(a, b, c, x), jspecial.hyp2f1(a, b, c, x)
    ref = sp.hyp2f1(*(v[:k].astype(np.float64) for v in (a, b, c, x)))
    # b < 0 makes some values small beside their terms (an absolute tolerance of 1 eps); the connection formula
    # in 1 - x loses digits as c - a - b nears an integer (256 eps from JAX's where JAX's series still converges)
    good, fin = _check(ours[:k], theirs[:k], ref, dt, 2000 if dt is np.float32 else 40000, jax_ulps=256, atol_ulps=1)
    mid = x[:k][fin]
    assert good[(mid >= -0.5) & (mid <= 0.9)].mean() > 0.9 and not good[mid < -1].any()   # JAX diverges below -1
    np.testing.assert_allclose(ours[k:], theirs[k:], rtol=16 * np.finfo(dt).eps)
    # better than JAX (as scipy): a polynomial for x > 1 or ending before a pole of c, NaN in and NaN out
    a, b, c, x = np.asarray([(-2, 1, 1, 2), (-3, 2, -5, .5), (1.5, -3, 2.5, 3), (1, 1, 2, np.nan)], dt).T
    np.testing.assert_allclose(special.hyp2f1(a, b, c, x), [1, 1.875, -64 / 35, np.nan], rtol=16 * np.finfo(dt).eps)


@pytest.mark.parametrize("dt", DTYPES)
def test_owens_t(dt):
  n, sign = 32, np.asarray([-1, 1], dt)
  h = np.concatenate([_u(lo, hi, n, dt) for lo, hi in [(0, 0.5), (0.5, 2), (2, 5), (5, 9)]]) * rng.choice(sign, 4 * n)
  a = np.concatenate([_u(lo, hi, n, dt) for lo, hi in [(0, 0.5), (0.5, 1), (1, 5), (5, 100)]]) * rng.choice(sign, 4 * n)
  a = rng.permutation(a)
  (h, a), k = _with([(0, 1), (1, 0), (np.inf, 1), (-np.inf, 2), (np.nan, 1), (1, np.inf), (2, -np.inf), (0.3, 1),
                     (-0.3, -1)], h, a)
  with precision(dt):
    ours, theirs = special.owens_t(h, a), jspecial.owens_t(h, a).astype(dt)   # see test_promotion_as_jax
    ref = sp.owens_t(h[:k].astype(np.float64), a[:k].astype(np.float64))
    # float64: lax.erfc is only within 700 eps of erfc near 2 (1 - erf there), which |a| > 1 uses; scipy is within
    # about 5000 eps for h > 5
    wide = dt is np.float64
    good, fin = _check(ours[:k], theirs[:k], ref, dt, 8000 if wide else 100, jax_ulps=1000 if wide else 100)
    assert good[np.abs(h[:k][fin]) < 2].all()
    np.testing.assert_allclose(ours[k:], theirs[k:], rtol=64 * np.finfo(dt).eps)
    assert float(special.owens_t(np.asarray(0, dt), np.asarray(np.inf, dt))) == 0.25   # JAX: NaN


def test_bessel_jn_float32():
  z = np.concatenate([np.linspace(-25, 25, 101), [0.0, 1e-30, 60.0, -150.0, np.nan, np.inf]]).astype(np.float32)
  ours, theirs = special.bessel_jn(z, v=4), jspecial.bessel_jn(z, v=4)
  ref = np.stack([sp.jv(k, z.astype(np.float64)) for k in range(5)])
  ours, theirs = np.asarray(ours), np.asarray(theirs)
  assert ours.shape == theirs.shape == (5, z.size) and ours.dtype == theirs.dtype == np.float32
  eps = np.finfo(np.float32).eps
  # JAX is NaN for |z| < 5 or so in float32 (its unscaled recurrence overflows) and loses J_k(z) for |z| > 20
  np.testing.assert_allclose(ours[:, :-2], ref[:, :-2], rtol=16 * eps, atol=8 * eps)
  ok = np.isfinite(theirs) & (np.abs(z) <= 20)
  np.testing.assert_allclose(ours[ok], theirs[ok], rtol=16 * eps, atol=4 * eps)
  assert np.isnan(ours[:, -2:]).all()
  np.testing.assert_array_equal(ours[:, z.size - 6], [1, 0, 0, 0, 0])   # J_k(0); JAX: NaN


def test_bessel_jn_float64_shapes_and_dtypes():
  z = np.concatenate([np.linspace(-15, 15, 31), [1e-3, 40.0, -300.0]])
  with precision(np.float64):
    ours, theirs = special.bessel_jn(z, v=3, n_iter=60), jspecial.bessel_jn(z, v=3, n_iter=60)
    ref = np.stack([sp.jv(k, z) for k in range(4)])
    _check(ours, theirs, ref, np.float64, 64, jax_ok=64, jax_ulps=64, atol_ulps=64)
    assert special.bessel_jn(np.arange(3), v=1).dtype == tnp.float64
  assert special.bessel_jn(np.arange(3), v=1).dtype == tnp.float32
  assert special.bessel_jn(np.float32(1), v=0).shape == (1,)
  # JAX stops at order n_iter when v is larger
  assert special.bessel_jn(np.ones((2, 3), np.float32), v=12, n_iter=10).shape == (11, 2, 3)
  with pytest.raises(TypeError):
    special.bessel_jn(1.0, v=1.5)


def test_promotion_as_jax():
  """The dtypes and shapes jax.scipy.special gives for these arguments (integers promote to the default float)."""
  f32, f64 = tnp.float32, tnp.float64
  cases = [(special.hyp1f1, (1, 2, 3), (f32, f64), ()),
           (special.hyp2f1, (1, 1, np.int32(2), np.float32(0.5)), (f32, f32), ()),
           (special.hyp2f1, (np.ones((2, 1)), 1.0, 2.0, np.full(3, 0.5, np.float32)), (f32, f64), (2, 3)),
           (special.owens_t, (1, 2), (f32, f64), ()),
           (special.hyp1f1, (np.float32(1), 2, np.arange(3)), (f32, f32), (3,)),
           (special.hyp1f1, (np.float16(1), np.float16(2), np.float16(0.5)), (tnp.float16, tnp.float16), ())]
  for wide in (False, True):
    with precision(np.float64 if wide else np.float32):
      for f, args, dtypes, shape in cases:
        r = f(*args)
        assert r.dtype == dtypes[wide] and r.shape == shape, (f.__name__, args, wide)
  # JAX returns owens_t in float32 for float16 arguments (and in float64 for float32 ones under x64), against its
  # documentation ("dtype matching the promoted inputs"); here it is the promoted inputs' dtype
  assert special.owens_t(np.float16(1), np.float16(0.5)).dtype == tnp.float16


def _fd(f, args, i, step=1e-4):
  """The central difference of sum(f(*args)) in argument i, elementwise (float64)."""
  up, down = list(args), list(args)
  up[i], down[i] = args[i] + step, args[i] - step
  return (f(*up) - f(*down)) / (2 * step)


@pytest.mark.parametrize("name,args", [
  ("hyp1f1", ([0.5, 1.5, 2.0, 3.0, 1.0], [1.5, 2.5, 1.2, 4.0, 2.0], [0.3, -0.4, 0.6, 2.0, -30.0])),
  ("hyp2f1", ([0.5, 1.5, 2.0, 3.0, 1.0], [1.5, 2.5, 1.2, 4.0, 2.0], [2.5, 3.5, 4.2, 5.0, 3.5],
              [0.3, -0.4, 0.6, 0.2, -3.0]))])
def test_hypergeometric_gradients(name, args):
  """Against central differences of scipy's values (JAX differentiates these by the same series; its compile of them
  takes seconds)."""
  args = [np.asarray(v) for v in args]
  f = getattr(special, name)
  ours = tg.grad(lambda *v: tnp.sum(f(*v)), argnums=tuple(range(len(args))))(*(v.astype(np.float32) for v in args))
  for i, o in enumerate(ours):
    np.testing.assert_allclose(np.asarray(o), _fd(getattr(sp, name), args, i), rtol=1e-5, atol=1e-6)


def test_owens_t_gradient():
  """Against the derivatives JAX's rule gives: -exp(-h^2 / 2) erf(a h / sqrt 2) / (2 sqrt(2 pi)) in h and
  exp(-(1 + a^2) h^2 / 2) / (2 pi (1 + a^2)) in a."""
  h, a = np.asarray([0.3, -1.0, 2.0, 0.0]), np.asarray([0.5, 2.0, -0.7, 1.0])
  dh, da = tg.grad(lambda *v: tnp.sum(special.owens_t(*v)), argnums=(0, 1))(h.astype(np.float32), a.astype(np.float32))
  eps = np.finfo(np.float32).eps
  want_h = -np.exp(-h * h / 2) * sp.erf(a * h / np.sqrt(2)) / (2 * np.sqrt(2 * np.pi))
  np.testing.assert_allclose(np.asarray(dh), want_h, rtol=16 * eps, atol=eps)
  want_a = np.exp(-(1 + a * a) * h * h / 2) / (2 * np.pi * (1 + a * a))
  np.testing.assert_allclose(np.asarray(da), want_a, rtol=16 * eps)


def test_bessel_jn_gradient():
  # JAX differentiates its recurrence: right in float64, NaN or wrong in float32 (as its values)
  z = np.asarray([0.5, 1.0, 3.0, 7.0])
  with precision(np.float64):
    ours = tg.grad(lambda v: tnp.sum(special.bessel_jn(v, v=3) * tnp.arange(1.0, 5.0)[:, None]))(z)
    theirs = jax.grad(lambda v: jax.numpy.sum(jspecial.bessel_jn(v, v=3) * jax.numpy.arange(1.0, 5.0)[:, None]))(z)
    np.testing.assert_allclose(np.asarray(ours), np.asarray(theirs), rtol=1e-12)
  ours = tg.grad(lambda v: tnp.sum(special.bessel_jn(v, v=2)[1]))(z.astype(np.float32))
  np.testing.assert_allclose(ours, sp.jvp(1, z), rtol=16 * np.finfo(np.float32).eps)


def test_jit_and_vmap():
  a, b, x = (np.asarray(v, np.float32) for v in ([0.5, 2.0, 3.0], [1.5, 1.2, 4.0], [-20.0, 0.6, 2.0]))
  eps = np.finfo(np.float32).eps
  np.testing.assert_allclose(tg.jit(special.hyp1f1)(a, b, x), special.hyp1f1(a, b, x), rtol=8 * eps)
  np.testing.assert_allclose(tg.vmap(special.owens_t)(a, x), special.owens_t(a, x), rtol=8 * eps)
  jn = tg.jit(lambda z: special.bessel_jn(z, v=2))
  np.testing.assert_allclose(jn(x), special.bessel_jn(x, v=2), rtol=8 * eps, atol=eps)
  np.testing.assert_allclose(tg.vmap(lambda z: special.bessel_jn(z, v=2), out_axes=1)(x), special.bessel_jn(x, v=2),
                             rtol=8 * eps)
