"""Compare a tracegrad.numpy function with jax.numpy's (and numpy's, where it has one): values, shapes, dtypes."""
import numpy as np
import pytest

import tracegrad
import tracegrad.numpy as tnp

jax = pytest.importorskip("jax")
jnp = jax.numpy


def _flat(v):
  return [z for e in v for z in _flat(e)] if isinstance(v, (list, tuple)) else [v]


def same(got, want, rtol=1e-5, atol=1e-6, dtype=True):
  gs, ws = _flat(got), _flat(want)
  assert len(gs) == len(ws), f"{len(gs)} outputs != {len(ws)}"
  for g, w in zip(gs, ws):
    g, w = np.asarray(g), np.asarray(w)
    assert g.shape == w.shape, f"shape {g.shape} != {w.shape}"
    if dtype: assert g.dtype == w.dtype, f"dtype {g.dtype} != {w.dtype}"
    np.testing.assert_allclose(g.astype(np.float64), w.astype(np.float64), rtol=rtol, atol=atol, equal_nan=True)


def check(name, *args, np_too=False, jit=False, rtol=1e-5, atol=1e-6, **kw):
  """tnp.name(*args, **kw) equals jnp.name's (and np.name's in value with np_too; and under jit with jit=True)."""
  want = getattr(jnp, name)(*args, **kw)
  same(getattr(tnp, name)(*args, **kw), want, rtol, atol)
  if np_too: same(getattr(np, name)(*args, **kw), want, rtol=1e-4, atol=1e-5, dtype=False)
  if jit:
    arrays = [i for i, a in enumerate(args) if isinstance(a, np.ndarray)]

    def f(*xs):
      full = list(args)
      for i, x in zip(arrays, xs): full[i] = x
      return getattr(tnp, name)(*full, **kw)

    same(tracegrad.jit(f)(*(args[i] for i in arrays)), want, rtol, atol)
