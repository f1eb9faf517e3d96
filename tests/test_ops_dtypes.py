"""tracegrad.ops (segment reductions) and tracegrad.dtypes against jax.ops and jax.dtypes: values, dtypes, out-of-range
ids, gradients, x64 and errors."""
import contextlib

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, strategies as st

import tracegrad
import tracegrad.numpy as tnp
from tracegrad import dtypes as tdt, ops
from tracegrad.ir.dtypes import DType
from oracles import x64_both

jax = pytest.importorskip("jax")
jnp = jax.numpy

SEGMENTS = ("segment_sum", "segment_prod", "segment_max", "segment_min")
IDS = np.array([0, 0, 1, 3, -1, 5, 2, 2])     # -1 and 5 lie outside [0, 4)
DATA = np.array([1.5, -2.0, 3.0, 0.5, 4.0, -1.0, 2.0, 2.0], np.float32)


def same(got, want, rtol=1e-6):
  g, w = np.asarray(got), np.asarray(want)
  assert g.shape == w.shape and g.dtype == w.dtype, f"{g.dtype}{g.shape} != {w.dtype}{w.shape}"
  np.testing.assert_allclose(g.astype(np.float64), w.astype(np.float64), rtol=rtol, equal_nan=True)


def both(name, *args, **kw):
  same(getattr(ops, name)(*args, **kw), getattr(jax.ops, name)(*args, **kw))


@pytest.mark.parametrize("name", SEGMENTS)
def test_segments_match_jax(name):
  both(name, DATA, IDS, 4)
  both(name, DATA, IDS, 4, mode="clip")
  both(name, DATA, IDS % 3)                          # num_segments from the ids
  both(name, DATA.reshape(4, 2), np.array([2, 0, 2, 1]), 3)
  both(name, DATA, IDS, 4, bucket_size=3)
  both(name, (DATA * 4).astype(np.int32), IDS, 4)
  both(name, (DATA * 4).astype(np.uint8), IDS.astype(np.uint8), 4)
  both(name, np.float32(2.0), np.array(1), 2)
  both(name, DATA, IDS, 0)
  if name in ("segment_max", "segment_min"): both(name, DATA > 1, IDS, 4)
  f = tracegrad.jit(lambda d, i: getattr(ops, name)(d, i, num_segments=4))
  same(f(DATA, IDS), getattr(jax.ops, name)(DATA, IDS, 4))


def test_x64_wide_ids_and_values():
  with x64_both():
    both("segment_sum", DATA.astype(np.float64), IDS.astype(np.int64), 4)
    # jax.ops keeps only the low 32 bits of 64-bit ids (2**40 + 3 lands in segment 3); tracegrad drops them
    same(ops.segment_sum(DATA[:2].astype(np.float64), np.int64([1 << 40, 3]), 4), np.float64([0, 0, 0, -2]))
    both("segment_max", DATA.astype(np.int64), np.where(IDS < 0, 7, IDS).astype(np.uint64), 4, mode="clip")
    both("segment_prod", DATA.astype(np.float64), IDS, 4)


@given(st.lists(st.integers(-2, 6), min_size=1, max_size=9), st.integers(1, 6), st.sampled_from(SEGMENTS))
def test_random_ids_match_numpy(ids, n, name):
  data = np.arange(1, len(ids) + 1, dtype=np.float32) * 0.5
  reduce, empty = {"segment_sum": (np.sum, 0), "segment_prod": (np.prod, 1), "segment_max": (np.max, -np.inf),
                   "segment_min": (np.min, np.inf)}[name]
  ids = np.array(ids)
  want = np.array([reduce(data[ids == s]) if (ids == s).any() else empty for s in range(n)], np.float32)
  same(getattr(ops, name)(data, ids, n), want, rtol=1e-6)


def test_gradients():
  f = lambda lib: lambda x: (lib.ops.segment_sum(x, IDS, 4) ** 2).sum()  # noqa: E731
  same(tracegrad.grad(f(tracegrad))(DATA), jax.grad(f(jax))(DATA))
  ties = np.array([1.0, 1.0, 2.0, 3.0, 5.0, 4.0], np.float32)
  pairs = np.array([0, 0, 1, 1, 2, 2])
  for name in ("segment_max", "segment_min"):
    g = lambda lib: lambda x: (getattr(lib.ops, name)(x, pairs, 3) * np.arange(1, 4)).sum()  # noqa: E731
    same(tracegrad.grad(g(tracegrad))(ties), jax.grad(g(jax))(ties))
  # jax.ops.segment_prod has no gradient for repeated ids: compare with the product's rule
  d = tracegrad.grad(lambda x: ops.segment_prod(x, np.array([0, 0, 0, 1]), 2).sum())(np.float32([2, 3, 4, 5]))
  same(d, np.float32([12, 8, 6, 1]))
  same(tracegrad.vmap(lambda x: ops.segment_sum(x, IDS, 4))(np.stack([DATA, -DATA])),
       jax.vmap(lambda x: jax.ops.segment_sum(x, IDS, 4))(np.stack([DATA, -DATA])))


@pytest.mark.parametrize("call,error,match", [
  (lambda o: o.segment_sum(DATA, IDS, -1), ValueError, "segment_sum: num_segments must be non-negative"),
  (lambda o: o.segment_sum(DATA, IDS, 2.0), TypeError, "segment_sum: num_segments must be an integer"),
  (lambda o: o.segment_sum(DATA, IDS.astype(np.float32), 4), TypeError, "segment_sum: segment_ids must be integers"),
  (lambda o: o.segment_max(DATA, IDS[:3], 4), ValueError, "segment_max: data of shape"),
  (lambda o: o.segment_sum(DATA > 0, IDS, 4), TypeError, "segment_sum: data must be numbers"),
  (lambda o: o.segment_prod(list(DATA), IDS, 4), TypeError, "segment_prod requires ndarray"),
  (lambda o: o.segment_min(DATA, IDS, 4, mode="bogus"), ValueError, "segment_min: mode must be"),
])
def test_segment_errors_have_jax_types(call, error, match):
  with pytest.raises(error, match=match): call(ops)
  with pytest.raises(error): call(jax.ops)


def test_traced_ids_need_num_segments():
  with pytest.raises(tracegrad.errors.ConcretizationTypeError, match="segment_sum: .*num_segments must be given"):
    tracegrad.jit(ops.segment_sum)(DATA, IDS)


# ---- tracegrad.dtypes ----

NOT_IN_TRACEGRAD = {"extended", "prng_key", "TypePromotionError"}   # typed keys and strict promotion


def test_names_match_jax():
  assert {n for n in dir(jax.ops) if not n.startswith("_")} <= set(ops.__all__)
  want = {n for n in dir(jax.dtypes) if not n.startswith("_")} - NOT_IN_TRACEGRAD
  assert want == set(tdt.__all__) and all(hasattr(tdt, n) for n in want)
  assert tracegrad.dtypes is tdt and tracegrad.ops is ops


DTYPE_LIKES = [np.float64, float, int, bool, "bfloat16", "float16", np.dtype("uint64"), tnp.float32, "f8", np.int8,
               None, ml_dtypes.bfloat16, tnp.int64]


@pytest.mark.parametrize("wide", [False, True])
def test_canonicalize_dtype(wide):
  with x64_both() if wide else contextlib.nullcontext():
    for d in DTYPE_LIKES:
      assert tdt.canonicalize_dtype(d) == jax.dtypes.canonicalize_dtype(d), d
    assert tdt.canonicalize_dtype(tdt.float0) == jax.dtypes.canonicalize_dtype(jax.dtypes.float0)
    args = [(1, 2.0), (tnp.int8, 2.0), (int, tnp.int8), (float, tnp.bfloat16), (np.float64,), (np.ones(2), 1.0),
            (True, tnp.uint8), (tnp.uint32, tnp.int32), (1,), (float,), (None,), (tnp.bfloat16, tnp.float16)]
    for a in args:
      want = jax.dtypes.result_type(*(x.np if isinstance(x, DType) else x for x in a), return_weak_type_flag=True)
      assert tdt.result_type(*a, return_weak_type_flag=True) == want and tdt.result_type(*a) == want[0], a


def test_subtypes_sizes_and_limits():
  kinds = [np.generic, np.number, np.inexact, np.floating, np.integer, np.signedinteger, np.unsignedinteger]
  for a in ["bfloat16", "float16", "float32", "int8", "uint32", "bool", None]:
    for b in kinds + ["int8", "bfloat16"]:
      assert tdt.issubdtype(a, b) is jax.dtypes.issubdtype(a, b), (a, b)
  for a, b in [(tdt.float0, np.floating), (tdt.float0, tdt.float0), (np.float32, tdt.float0), (tdt.float0, np.void)]:
    assert tdt.issubdtype(a, b) is jax.dtypes.issubdtype(a, b)
  for x in [1, 1.0, True, np.float32(1), np.int64(3), np.ones(2, np.int8), np.bool_(1), "float32", np.float32]:
    assert tdt.scalar_type_of(x) is jax.dtypes.scalar_type_of(x), x
  assert tdt.scalar_type_of(tnp.ones(2, tnp.bfloat16)) is float and tdt.scalar_type_of(tnp.arange(2)) is int
  for d in [np.float32, "bfloat16", bool, np.int8, np.dtype("int64"), int, float, "uint16"]:
    assert tdt.itemsize_bits(d) == jax.dtypes.itemsize_bits(d), d
  assert tdt.itemsize_bits(tnp.ones(2)) == 32
  for d in ["int8", "uint16", "int32"]:
    assert (tdt.iinfo(d).min, tdt.iinfo(d).max, tdt.iinfo(d).bits) == (jax.dtypes.iinfo(d).min,
                                                                     jax.dtypes.iinfo(d).max, jax.dtypes.iinfo(d).bits)
  for d in ["bfloat16", "float16", "float32"]:
    assert (tdt.finfo(d).eps, tdt.finfo(d).max, tdt.finfo(d).tiny) == (jax.dtypes.finfo(d).eps,
                                                                     jax.dtypes.finfo(d).max, jax.dtypes.finfo(d).tiny)
  assert tdt.float0 == jax.dtypes.float0 and tdt.float0 is tracegrad.float0
  assert tdt.bfloat16 == jax.dtypes.bfloat16 and tnp.ones(2).astype(tdt.bfloat16).dtype == tnp.bfloat16
  assert np.dtype(tdt.bfloat16) == np.dtype(jax.dtypes.bfloat16)


@pytest.mark.parametrize("call,error,match", [
  (lambda d: d.canonicalize_dtype("foo"), TypeError, "canonicalize_dtype: 'foo' is not a data type"),
  (lambda d: d.canonicalize_dtype(np.ones(2)), TypeError, "canonicalize_dtype: dtype must be a data type"),
  (lambda d: d.result_type(), ValueError, "result_type: at least one"),
  (lambda d: d.result_type("foo"), TypeError, "result_type: 'foo'"),
  (lambda d: d.scalar_type_of(None), ValueError, "scalar_type_of: x"),
  (lambda d: d.itemsize_bits(None), ValueError, "itemsize_bits: dtype cannot be None"),
  (lambda d: d.itemsize_bits(d.float0), ValueError, "itemsize_bits: float0"),
  (lambda d: d.iinfo("float32"), ValueError, "iinfo: float32 is not an integer type"),
  (lambda d: d.finfo("int32"), ValueError, "finfo: int32 is not a floating type"),
])
def test_dtype_errors_have_jax_types(call, error, match):
  with pytest.raises(error, match=match): call(tdt)
  with pytest.raises(error): call(jax.dtypes)
