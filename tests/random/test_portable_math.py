"""portable_math: log, exp and cos(2 pi u) within 3 ulp of float64 numpy, and the same bits eagerly and compiled."""
import numpy as np
import pytest

import tracegrad as tg
import tracegrad.numpy as tnp
from tracegrad.random import portable_math as pm
from oracles import ulps, x64

RNG = np.random.default_rng(0)
CASES = {
  "log": (pm.log, np.log, lambda d: np.concatenate([RNG.uniform(0, 1, 20000), RNG.uniform(1, 1e30, 2000),
                                                     [np.finfo(d).tiny, 0.5, 1.0, 2.0, np.finfo(d).max]])),
  "exp": (pm.exp, np.exp, lambda d: np.concatenate([RNG.uniform(-80, 80, 20000), [0.0, -1e-30, 1.0]])),
}


def _ulps(got, want, d):
  want_d = want.astype(d)
  return np.max(np.abs(got.astype(np.float64) - want) / np.spacing(np.abs(want_d)).astype(np.float64))


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("name", CASES)
def test_within_two_ulp_and_identical_under_jit(name, dtype):
  f, ref, inputs = CASES[name]
  d = np.dtype(dtype)
  with x64(dtype == "float64"):
    x = inputs(d).astype(d)
    x = x[x > 0] if name == "log" else x
    got = np.asarray(f(tnp.asarray(x)))
    assert got.dtype == d
    assert _ulps(got, ref(x.astype(np.float64)), d) <= 3
    np.testing.assert_array_equal(np.asarray(tg.jit(f)(tnp.asarray(x))), got)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_cos_2pi(dtype):
  with x64(dtype == "float64"):
    u = np.concatenate([RNG.uniform(0, 1, 20000), [0.0, 0.125, 0.25, 0.5, 0.75, 1.0]]).astype(dtype)
    got = np.asarray(pm.cos_2pi(tnp.asarray(u)))
    np.testing.assert_allclose(got, np.cos(2 * np.pi * u.astype(np.float64)), rtol=0, atol=ulps(4, dtype))
    np.testing.assert_array_equal(np.asarray(tg.jit(pm.cos_2pi)(tnp.asarray(u))), got)


def test_log_of_zero_is_minus_infinity():
  assert float(pm.log(tnp.float32(0.0))) == -np.inf


def _nearest(q, d) -> float:
  """The float of dtype d nearest the exact rational q (ties to even)."""
  from fractions import Fraction
  f = d.type(float(q))
  cands = [f, np.nextafter(f, d.type(np.inf)), np.nextafter(f, d.type(-np.inf))]
  dist = [abs(Fraction(float(c)) - q) for c in cands]
  best = min(dist)
  near = [c for c, e in zip(cands, dist) if e == best]
  return min(near, key=lambda c: int(np.asarray(c).view(np.uint32 if d == np.float32 else np.uint64)) & 1)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_fma_rounds_once_on_every_device(dtype):
  """fma is a FUSED product: a * b + c rounded once (the nearest float to the exact value), where a * b then + c
  would round twice; compiled (one TG_FMA[F]_EXACT) and eagerly alike."""
  from fractions import Fraction
  d = np.dtype(dtype)
  with x64(dtype == "float64"):
    eps = float(np.finfo(d).eps)
    a = np.concatenate([[1 + eps, 1 + eps / 2 * 3], RNG.uniform(-2, 2, 300)]).astype(d)
    b = np.concatenate([[1 - eps, 1 - eps], RNG.uniform(-2, 2, 300)]).astype(d)
    c = -(a[2:].astype(np.float64) * b[2:]) * (1 + RNG.uniform(-1e-6, 1e-6, 300))
    c = np.concatenate([[-1.0, -1.0], c]).astype(d)
    want = np.array([_nearest(Fraction(float(x)) * Fraction(float(y)) + Fraction(float(z)), d)
                     for x, y, z in zip(a, b, c)], d)
    assert not np.array_equal(a * b + c, want)   # the cases tell one rounding from two
    np.testing.assert_array_equal(np.asarray(pm.fma(a, b, c)), want)
    np.testing.assert_array_equal(np.asarray(tg.jit(pm.fma)(a, b, c)), want)
    if tg.default_backend() == "cpu":
      src = tg.jit(pm.fma).lower(a, b, c).compile().as_text()
      assert ("TG_FMAF_EXACT(" if dtype == "float32" else "TG_FMA_EXACT(") in src
