"""Complex values lowered as pairs of reals: compiled results agree with numpy's complex arithmetic (Smith's division
included, special values too), contractions stay contractions, and complex values cross program and control-flow
boundaries packed."""
import numpy as np
import pytest

import tracegrad
import tracegrad.numpy as tnp
from tracegrad import lax
from tracegrad.ir import Graph, Ops, UOp, dtypes
from tracegrad.lower.complex_split import from_packed, split_complex, to_packed

EPS = np.finfo(np.float32).eps
SPECIAL = [0.0, -0.0, 1.0, -2.5, 3e-3, np.inf, -np.inf, np.nan]   # no overflow: numpy may fuse a*c - b*d


def _grid():
  vals = np.array([complex(a, b) for a in SPECIAL for b in SPECIAL], np.complex64)
  x, y = np.meshgrid(vals, vals, indexing="ij")
  return x.ravel(), y.ravel()


def _same(got: np.ndarray, want: np.ndarray, scale: np.ndarray, ulps: float = 4):
  """Equal part by part: nan where numpy has nan, infinities alike, else within ulps of `scale` (the size of the
  terms, since numpy may fuse a*c - b*d into one rounding)."""
  for g, w in ((got.real, want.real), (got.imag, want.imag)):
    assert np.array_equal(np.isnan(g), np.isnan(w))
    ok = ~np.isnan(w)
    assert np.all((g[ok] == w[ok]) | (np.abs(g[ok] - w[ok]) <= ulps * EPS * scale[ok]))


@pytest.mark.parametrize("op", ["add", "sub", "mul", "div"])
def test_arithmetic_on_special_values_matches_numpy(op):
  x, y = _grid()
  fn = {"add": lambda a, b: a + b, "sub": lambda a, b: a - b, "mul": lambda a, b: a * b,
        "div": lambda a, b: a / b}[op]
  got = np.asarray(tracegrad.jit(fn)(x, y))
  with np.errstate(all="ignore"):
    want = fn(x, y)
    scale = np.abs(want) if op == "div" else np.abs(x) * np.abs(y) + np.abs(x) + np.abs(y)
  _same(got, want, scale)


def test_reciprocal_and_comparisons():
  x, y = _grid()
  r, eq, ne = tracegrad.jit(lambda a, b: (tnp.reciprocal(a), a == b, a != b))(x, y)
  with np.errstate(all="ignore"): want = np.reciprocal(x)
  _same(np.asarray(r), want, np.abs(want))
  assert np.array_equal(np.asarray(eq), x == y) and np.array_equal(np.asarray(ne), x != y)


def test_complex_contraction_is_four_real_contractions():
  a, b = UOp.param((8, 5), dtypes.complex64), UOp.param((5, 3), dtypes.complex64)
  prod = a.reshape((8, 5, 1)).broadcast((8, 5, 3)) * b.reshape((1, 5, 3)).broadcast((8, 5, 3))
  g = split_complex(Graph((a, b), (prod.reduce(Ops.REDUCE_SUM, (1,)),)))
  sums = [u for u in g.nodes() if u.op is Ops.REDUCE_SUM]
  assert len(sums) == 4 and all(s.src[0].op is Ops.MUL for s in sums)
  assert g.inputs[0].shape == (8, 5, 2) and g.inputs[0].dtype is dtypes.float32
  assert all(u.dtype is not dtypes.complex64 for u in g.nodes())


def test_matmul_and_einsum_compiled_match_numpy():
  r = np.random.RandomState(0)
  a = (r.randn(16, 12) + 1j * r.randn(16, 12)).astype(np.complex64)
  b = (r.randn(12, 9) + 1j * r.randn(12, 9)).astype(np.complex64)
  mm, es = tracegrad.jit(lambda x, y: (x @ y, tnp.einsum("ij,ij->i", x, tnp.conj(x))))(a, b)
  want = a.astype(np.complex128) @ b
  assert np.abs(np.asarray(mm) - want).max() <= 16 * EPS * np.abs(want).max()
  assert np.allclose(np.asarray(es), (np.abs(a) ** 2).sum(1), rtol=16 * EPS)


def test_packed_views_round_trip():
  z = (np.arange(6) + 1j * np.arange(6)[::-1]).astype(np.complex64).reshape(2, 3)
  p = to_packed(z)
  assert p.shape == (2, 3, 2) and np.shares_memory(p, z)
  assert np.array_equal(from_packed(p, np.complex64), z)


def test_scan_and_cond_carry_complex_values_compiled():
  def f(z0, ws):
    def body(c, w):
      c = lax.cond(w.real > 0, lambda c: c * w, lambda c: c + w, c)
      return c, c.imag
    return lax.scan(body, z0, ws)
  z0 = np.complex64(1 + 1j)
  ws = np.array([0.5 + 1j, -1 + 2j, 2 - 1j], np.complex64)
  c, ys = tracegrad.jit(f)(z0, ws)
  want, wy = complex(z0), []
  for w in ws:
    want = want * w if w.real > 0 else want + w
    wy.append(want.imag)
  assert np.allclose(complex(c), want, rtol=8 * EPS) and np.allclose(np.asarray(ys), wy, rtol=8 * EPS)


def test_callback_takes_and_gives_complex_values_compiled():
  def double(z): return np.asarray(z) * 2
  f = tracegrad.jit(lambda z: tracegrad.pure_callback(double, tracegrad.ShapeDtypeStruct(z.shape, z.dtype), z) + 1j)
  z = np.array([1 + 1j, 2j], np.complex64)
  assert np.array_equal(np.asarray(f(z)), z * 2 + 1j)


def test_casts_between_complex_and_real():
  z = np.array([1.5 + 2j, -0.0 - 3j, 0j], np.complex64)
  re, b, back = tracegrad.jit(lambda z: (z.astype(tnp.float32), z.astype(bool), z.real.astype(tnp.complex64)))(z)
  assert np.array_equal(np.asarray(re), z.real) and np.array_equal(np.asarray(b), z != 0)
  assert np.asarray(back).dtype == np.complex64 and np.array_equal(np.asarray(back), z.real.astype(np.complex64))
