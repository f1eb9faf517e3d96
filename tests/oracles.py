"""Test oracles: compare tracegrad with numpy eagerly and traced (make_graph, then run on the device)."""
from __future__ import annotations

import ml_dtypes
import numpy as np
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import tracegrad
from tracegrad import run
from tracegrad.ir import dtypes

FLOATS = ["float32", "float16", "bfloat16"]
INTS = ["int8", "int16", "int32", "uint8", "uint16", "uint32"]
ALL = ["bool"] + INTS + FLOATS

TOL = {"float32": (2e-5, 1e-6), "float16": (2e-3, 1e-4), "bfloat16": (2e-2, 1e-3), "float64": (1e-12, 1e-14)}


def np_dtype(name: str) -> np.dtype: return dtypes.as_dtype(name).np


def shapes(min_dims=0, max_dims=3, min_side=1, max_side=5):
  return hnp.array_shapes(min_dims=min_dims, max_dims=max_dims, min_side=min_side, max_side=max_side)


def arrays(dtype: str, shape, elements=None, low=-10, high=10):
  """Random numpy arrays of a tracegrad dtype name (bfloat16 drawn as float32 and rounded)."""
  d = np_dtype(dtype)
  if dtype == "bool": return hnp.arrays(np.bool_, shape)
  if dtype in INTS:
    info = np.iinfo(d)
    return hnp.arrays(d, shape, elements=elements or st.integers(max(info.min, low), min(info.max, high)))
  base = np.float32 if dtype in ("bfloat16", "float32") else d
  width = 32 if base == np.float32 else (16 if base == np.float16 else 64)
  exact = {32: np.float32, 16: np.float16, 64: np.float64}[width]
  el = elements or st.floats(float(exact(low)), float(exact(high)), width=width, allow_nan=False, allow_infinity=False)
  return hnp.arrays(base, shape, elements=el).map(lambda a: a.astype(d))


def traced(f, *args, **kwargs):
  """f's outputs computed by tracing it with make_graph and running the Graph."""
  g = tracegrad.make_graph(f)(*args, **kwargs)
  leaves = [np.asarray(x) for x in tracegrad.tree.leaves((args, kwargs))]
  return tracegrad.tree.unflatten(g.out_tree, run.run_graph(g, leaves))


def assert_close(got, want, dtype=None, rtol=None, atol=None, check_dtype=True, err=""):
  got_a, want_a = np.asarray(got), np.asarray(want)
  assert got_a.shape == want_a.shape, f"{err} shape {got_a.shape} != {want_a.shape}"
  if check_dtype: assert got_a.dtype == want_a.dtype, f"{err} dtype {got_a.dtype} != {want_a.dtype}"
  name = dtype or str(want_a.dtype)
  if want_a.dtype.kind in "fV" or want_a.dtype == ml_dtypes.bfloat16:
    r, a = TOL.get(name, TOL["float32"])
    np.testing.assert_allclose(got_a.astype(np.float64), want_a.astype(np.float64), rtol=rtol or r, atol=atol or a,
                               equal_nan=True, err_msg=err)
  else:
    np.testing.assert_array_equal(got_a, want_a, err_msg=err)


def check(tfn, nfn, *args, rtol=None, atol=None, check_dtype=True, want_dtype=None, **kwargs):
  """tfn(*args) eagerly and traced equals nfn on the numpy versions of args (dtype too, or want_dtype)."""
  with np.errstate(all="ignore"):
    want = nfn(*[np.asarray(a) if isinstance(a, (np.ndarray, tracegrad.Array)) else a for a in args], **kwargs)
  want = np.asarray(want)
  if want_dtype is not None: want = want.astype(np_dtype(want_dtype))
  eager = tfn(*args, **kwargs)
  assert_close(eager, want, rtol=rtol, atol=atol, check_dtype=check_dtype, err="eager")
  arr_idx = [i for i, a in enumerate(args) if isinstance(a, (np.ndarray, tracegrad.Array))]

  def f(*arrs):
    full = list(args)
    for i, a in zip(arr_idx, arrs): full[i] = a
    return tfn(*full, **kwargs)

  tr = traced(f, *[tracegrad.numpy.asarray(args[i]) for i in arr_idx])
  assert_close(tr, want, rtol=rtol, atol=atol, check_dtype=check_dtype, err="traced")
  return eager
