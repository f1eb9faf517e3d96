"""Reductions against numpy, eagerly and traced, in value, shape and dtype (JAX's dtype where it differs)."""
import warnings

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, strategies as st
from hypothesis.extra import numpy as hnp

import tracegrad as tg
import tracegrad.numpy as tnp
from oracles import ALL, FLOATS, INTS, arrays, check, np_dtype, shapes, ulps

NUMERIC = INTS + FLOATS


def jax_sum_dtype(name: str) -> str:
  """The dtype jnp.sum gives: bool and narrow ints widen to int32/uint32, everything else stays."""
  if name in ("bool", "int8", "int16"): return "int32"
  if name in ("uint8", "uint16"): return "uint32"
  return name


def wide(a: np.ndarray) -> np.ndarray:
  """a in a dtype numpy computes the reference in exactly (int64 / float64)."""
  if a.dtype == np.bool_ or a.dtype.kind in "iu": return a.astype(np.int64)
  return a.astype(np.float64)


def quiet(f):
  def g(*args, **kwargs):
    with warnings.catch_warnings():
      warnings.simplefilter("ignore")
      return f(*args, **kwargs)
  return g


@st.composite
def axes(draw, ndim: int, allow_tuple: bool = True):
  """None, an int (possibly negative) or a tuple of distinct axes."""
  opts = [st.none()]
  if ndim:
    opts.append(st.integers(-ndim, ndim - 1))
    if allow_tuple:
      opts.append(st.lists(st.integers(0, ndim - 1), unique=True, max_size=ndim)
                  .flatmap(lambda ax: st.tuples(*[st.sampled_from([a, a - ndim]) for a in ax])))
  return draw(st.one_of(*opts))


def floats_with_nan(dtype: str, shape, low=-10, high=10):
  el = st.one_of(st.floats(low, high, width=32), st.just(np.nan))
  return hnp.arrays(np.float32, shape, elements=el).map(lambda a: a.astype(np_dtype(dtype)))


@st.composite
def case(draw, dtypes=ALL, min_side=1, low=-10, high=10, nan=False):
  dtype = draw(st.sampled_from(dtypes))
  shape = draw(shapes(min_dims=0, max_dims=3, min_side=min_side, max_side=5))
  if nan and dtype in FLOATS and draw(st.booleans()): a = draw(floats_with_nan(dtype, shape, low, high))
  else: a = draw(arrays(dtype, shape, low=low, high=high))
  return dtype, a, draw(axes(a.ndim)), draw(st.booleans())


# ---- sum, prod ----
@given(case(min_side=0))
def test_sum(c):
  dtype, a, axis, keepdims = c
  check(lambda x: tnp.sum(x, axis=axis, keepdims=keepdims), lambda x: np.sum(wide(x), axis=axis, keepdims=keepdims),
        a, want_dtype=jax_sum_dtype(dtype))


@given(case(min_side=0, low=-2, high=2))
def test_prod(c):
  dtype, a, axis, keepdims = c
  # integer products wrap identically in int64 and in the narrower result type
  check(lambda x: tnp.prod(x, axis=axis, keepdims=keepdims), lambda x: np.prod(wide(x), axis=axis, keepdims=keepdims),
        a, want_dtype=jax_sum_dtype(dtype))


@given(case(dtypes=NUMERIC, nan=True))
def test_nansum_nanprod(c):
  dtype, a, axis, keepdims = c
  check(lambda x: tnp.nansum(x, axis=axis, keepdims=keepdims),
        lambda x: np.nansum(wide(x), axis=axis, keepdims=keepdims), a, want_dtype=jax_sum_dtype(dtype))
  b = np.clip(a, -2, 2).astype(a.dtype)  # keeps products finite (NaN stays NaN)
  rel = {"float32": 84000, "float16": 10, "bfloat16": 1.25}   # ulps of each dtype
  check(lambda x: tnp.nanprod(x, axis=axis), lambda x: np.nanprod(wide(x), axis=axis), b,
        want_dtype=jax_sum_dtype(dtype), rtol=ulps(rel[dtype], dtype) if dtype in FLOATS else None)


@given(case(), st.sampled_from(["int32", "float32", "float16", "uint32"]))
def test_sum_dtype_argument(c, out):
  dtype, a, axis, keepdims = c
  if out == "uint32" and dtype in FLOATS: a = np.abs(a)  # negative float -> unsigned is undefined
  # as in JAX, the elements are converted to `dtype` first, then summed (float16 accumulating in float32)
  check(lambda x: tnp.sum(x, axis=axis, dtype=out), lambda x: np.sum(wide(x.astype(np_dtype(out))), axis=axis), a,
        want_dtype=out)


def test_sum_small_float_accumulates_in_float32():
  a = np.full(4096, 1.0, np.float16)  # a float16 running sum sticks at 2048
  out = check(lambda x: tnp.sum(x), lambda x: np.float16(np.sum(x, dtype=np.float32)), a)
  assert out.dtype == tnp.float16 and float(out) == 4096.0
  b = np.full(1000, 0.1, ml_dtypes.bfloat16)
  out = check(lambda x: tnp.sum(x), lambda x: np.sum(x.astype(np.float32)).astype(ml_dtypes.bfloat16), b)
  assert out.dtype == tnp.bfloat16


def within_numpy(got, exact, want, slack: int = 4):
  """got is as close to the exact float32 result as numpy's `want` is, give or take `slack` ulps of it."""
  got, exact = np.asarray(got, np.float64), np.asarray(exact, np.float64)
  allowed = np.abs(np.asarray(want, np.float64) - exact) + slack * np.spacing(np.abs(exact).astype(np.float32))
  assert np.all(np.abs(got - exact) <= allowed), (got.ravel()[:4], exact.ravel()[:4], np.asarray(want).ravel()[:4])


def test_long_float32_sum_is_as_accurate_as_numpy():
  """2^24 + 2^25 ones (a running float32 sum stops at 2^24): a sum adds blocks, each summed on its own, exactly."""
  n = 2 ** 24 + 2 ** 25
  x = np.ones(n, np.float32)
  for got in (tnp.ones(n).sum(), tnp.asarray(x).sum(), tg.jit(lambda a: a.sum())(x)):
    within_numpy(got, float(n), x.sum())


def test_long_float32_mean_is_as_accurate_as_numpy():
  x = np.full(2 ** 25, 0.1, np.float32)
  for got in (tnp.full(x.size, 0.1, tnp.float32).mean(), tnp.asarray(x).mean(), tg.jit(lambda a: a.mean())(x)):
    within_numpy(got, float(x[0]), x.mean())


@pytest.mark.parametrize("shape,axis", [((1 << 20, 4), 0), ((3, 1 << 20), 1), ((512, 3, 2048), (0, 2)),
                                        ((2048, 7, 300), (0, 1)), ((128, 256, 256), None)], ids=str)
def test_long_float32_sums_over_axes_are_as_accurate_as_numpy(shape, axis):
  """0.1 summed a million times along axes of several layouts (a constant's rounding errors add up rather than cancel)."""
  x = np.full(shape, 0.1, np.float32)
  within_numpy(tg.jit(lambda a: a.sum(axis))(x), x.astype(np.float64).sum(axis), x.sum(axis))


@given(case(dtypes=NUMERIC), st.data())
def test_sum_prod_where_initial(c, data):
  dtype, a, axis, keepdims = c
  w = data.draw(hnp.arrays(np.bool_, a.shape))
  init = data.draw(st.integers(0, 3))
  check(lambda x, m: tnp.sum(x, axis=axis, keepdims=keepdims, where=m, initial=init),
        lambda x, m: np.sum(wide(x), axis=axis, keepdims=keepdims, where=m, initial=init), a, w,
        want_dtype=jax_sum_dtype(dtype))
  b = np.clip(a, -2, 2).astype(a.dtype)
  check(lambda x, m: tnp.prod(x, axis=axis, where=m, initial=init),
        lambda x, m: np.prod(wide(x), axis=axis, where=m, initial=init), b, w, want_dtype=jax_sum_dtype(dtype))


def test_bool_sum_and_prod_dtype():
  a = np.array([[True, False], [True, True]])
  check(lambda x: tnp.sum(x, axis=0), lambda x: np.sum(x, axis=0), a, want_dtype="int32")
  check(lambda x: tnp.sum(x, dtype=bool), lambda x: np.any(x), a)
  check(lambda x: tnp.prod(x, axis=1, dtype=bool), lambda x: np.all(x, axis=1), a)


# ---- max, min, ptp ----
@given(case(nan=True))
def test_max_min(c):
  dtype, a, axis, keepdims = c
  ref = a.astype(np.float32) if dtype in ("float16", "bfloat16") else a
  for t, n in ((tnp.max, np.max), (tnp.min, np.min), (tnp.amax, np.amax), (tnp.amin, np.amin)):
    check(lambda x: t(x, axis=axis, keepdims=keepdims), lambda x: n(ref, axis=axis, keepdims=keepdims), a,
          want_dtype=dtype)


@given(case(dtypes=NUMERIC, min_side=0), st.data())
def test_max_min_where_initial(c, data):
  dtype, a, axis, keepdims = c
  w = data.draw(hnp.arrays(np.bool_, a.shape))
  init = data.draw(st.integers(-3, 3)) if dtype not in ("uint8", "uint16", "uint32") else data.draw(st.integers(0, 3))
  ref = a.astype(np.float32) if dtype in ("float16", "bfloat16") else a
  check(lambda x, m: tnp.max(x, axis=axis, keepdims=keepdims, where=m, initial=init),
        lambda x, m: np.max(ref, axis=axis, keepdims=keepdims, where=m, initial=init), a, w, want_dtype=dtype)
  check(lambda x: tnp.min(x, axis=axis, initial=init), lambda x: np.min(ref, axis=axis, initial=init), a,
        want_dtype=dtype)


def test_max_propagates_nan():
  a = np.array([[1.0, np.nan, 3.0], [4.0, 5.0, 6.0]], np.float32)
  out = check(lambda x: tnp.max(x, axis=1), lambda x: np.max(x, axis=1), a)
  assert np.isnan(np.asarray(out)[0]) and np.asarray(out)[1] == 6.0
  check(lambda x: tnp.min(x), lambda x: np.min(x), a)


@given(case(dtypes=NUMERIC, nan=True))
def test_nanmax_nanmin(c):
  dtype, a, axis, keepdims = c
  ref = a.astype(np.float32) if dtype in ("float16", "bfloat16") else a
  check(quiet(lambda x: tnp.nanmax(x, axis=axis, keepdims=keepdims)),
        quiet(lambda x: np.nanmax(ref, axis=axis, keepdims=keepdims)), a, want_dtype=dtype)
  check(quiet(lambda x: tnp.nanmin(x, axis=axis)), quiet(lambda x: np.nanmin(ref, axis=axis)), a, want_dtype=dtype)


@given(case(dtypes=NUMERIC))
def test_ptp(c):
  dtype, a, axis, keepdims = c
  ref = a.astype(np.float32) if dtype in ("float16", "bfloat16") else a
  check(lambda x: tnp.ptp(x, axis=axis, keepdims=keepdims), lambda x: np.ptp(ref, axis=axis, keepdims=keepdims), a,
        want_dtype=dtype)


# ---- argmax, argmin ----
@st.composite
def arg_case(draw):
  dtype = draw(st.sampled_from(ALL))
  shape = draw(shapes(min_dims=0, max_dims=3, max_side=5))
  # few distinct values, so ties are common and the first occurrence matters
  if dtype in FLOATS: a = draw(floats_with_nan(dtype, shape, -2, 2).map(np.round))
  else: a = draw(arrays(dtype, shape, low=-2, high=2))
  return dtype, a, draw(axes(a.ndim, allow_tuple=False)), draw(st.booleans())


@given(arg_case())
def test_argmax_argmin(c):
  dtype, a, axis, keepdims = c
  ref = a.astype(np.float32) if dtype in ("float16", "bfloat16") else a
  for t, n in ((tnp.argmax, np.argmax), (tnp.argmin, np.argmin)):
    check(lambda x: t(x, axis=axis, keepdims=keepdims), lambda x: n(ref, axis=axis, keepdims=keepdims), a,
          want_dtype="int32")


def test_argmax_first_occurrence_and_first_nan():
  a = np.array([[1.0, 3.0, 3.0, np.nan], [np.nan, 2.0, np.nan, 7.0], [5.0, 5.0, 1.0, 1.0]], np.float32)
  got = check(lambda x: tnp.argmax(x, axis=1), lambda x: np.argmax(x, axis=1), a, want_dtype="int32")
  assert got.tolist() == [3, 0, 0]
  got = check(lambda x: tnp.argmin(x, axis=1), lambda x: np.argmin(x, axis=1), a, want_dtype="int32")
  assert got.tolist() == [3, 0, 2]
  assert int(tnp.argmax(np.array([2, 9, 9, 1]))) == 1


# ---- any, all, count_nonzero ----
@given(case(min_side=0, low=-1, high=1), st.data())
def test_any_all(c, data):
  dtype, a, axis, keepdims = c
  check(lambda x: tnp.any(x, axis=axis, keepdims=keepdims), lambda x: np.any(x, axis=axis, keepdims=keepdims), a)
  check(lambda x: tnp.all(x, axis=axis, keepdims=keepdims), lambda x: np.all(x, axis=axis, keepdims=keepdims), a)
  w = data.draw(hnp.arrays(np.bool_, a.shape))
  check(lambda x, m: tnp.any(x, axis=axis, where=m), lambda x, m: np.any(x, axis=axis, where=m), a, w)
  check(lambda x, m: tnp.all(x, axis=axis, where=m), lambda x, m: np.all(x, axis=axis, where=m), a, w)


@given(case(min_side=0, low=-1, high=1))
def test_count_nonzero(c):
  dtype, a, axis, keepdims = c
  check(lambda x: tnp.count_nonzero(x, axis=axis, keepdims=keepdims),
        lambda x: np.count_nonzero(x, axis=axis, keepdims=keepdims), a, want_dtype="int32")


# ---- mean, var, std, average ----
def mean_dtype(name: str) -> str: return name if name in FLOATS else "float32"


@given(case(min_side=0))
def test_mean(c):
  dtype, a, axis, keepdims = c
  check(quiet(lambda x: tnp.mean(x, axis=axis, keepdims=keepdims)),
        quiet(lambda x: np.mean(wide(x), axis=axis, keepdims=keepdims)), a, want_dtype=mean_dtype(dtype))


@given(case(), st.data())
def test_mean_where_and_dtype(c, data):
  dtype, a, axis, keepdims = c
  w = data.draw(hnp.arrays(np.bool_, a.shape))
  check(quiet(lambda x, m: tnp.mean(x, axis=axis, keepdims=keepdims, where=m)),
        quiet(lambda x, m: np.mean(wide(x), axis=axis, keepdims=keepdims, where=m)), a, w, want_dtype=mean_dtype(dtype))
  check(lambda x: tnp.mean(x, axis=axis, dtype="float16"), lambda x: np.mean(wide(x), axis=axis), a,
        want_dtype="float16")


@given(case(), st.sampled_from([0, 1]))
def test_var_std(c, ddof):
  dtype, a, axis, keepdims = c
  for t, n in ((tnp.var, np.var), (tnp.std, np.std)):
    check(quiet(lambda x: t(x, axis=axis, keepdims=keepdims, ddof=ddof)),
          quiet(lambda x: n(wide(x), axis=axis, keepdims=keepdims, ddof=ddof)), a, want_dtype=mean_dtype(dtype))


@given(case(dtypes=FLOATS, nan=True))
def test_nanmean_nanvar_nanstd(c):
  dtype, a, axis, keepdims = c
  for t, n in ((tnp.nanmean, np.nanmean), (tnp.nanvar, np.nanvar), (tnp.nanstd, np.nanstd)):
    check(quiet(lambda x: t(x, axis=axis, keepdims=keepdims)),
          quiet(lambda x: n(wide(x), axis=axis, keepdims=keepdims)), a, want_dtype=dtype)


def test_var_where_and_correction():
  a = np.arange(12, dtype=np.float32).reshape(3, 4)
  w = a % 3 != 0
  check(lambda x, m: tnp.var(x, axis=1, where=m), lambda x, m: np.var(x, axis=1, where=m), a, w)
  check(lambda x: tnp.std(x, axis=0, correction=1), lambda x: np.std(x, axis=0, ddof=1), a)
  with pytest.raises(ValueError, match="ddof and correction"): tnp.var(a, ddof=1, correction=1)


@given(case(dtypes=NUMERIC), st.data())
def test_average(c, data):
  dtype, a, axis, keepdims = c
  check(quiet(lambda x: tnp.average(x, axis=axis, keepdims=keepdims)),
        quiet(lambda x: np.average(wide(x), axis=axis, keepdims=keepdims)), a, want_dtype=mean_dtype(dtype))
  w = data.draw(hnp.arrays(np.float32, a.shape, elements=st.floats(0.5, 2, width=32)))
  want = "float32"  # float32 weights promote every input dtype to float32
  check(lambda x, v: tnp.average(x, axis=axis, weights=v, keepdims=keepdims),
        lambda x, v: np.average(wide(x), axis=axis, weights=v, keepdims=keepdims), a, w, want_dtype=want)


def test_average_1d_weights_and_returned():
  a = np.arange(6, dtype=np.float32).reshape(2, 3)
  w = np.array([1.0, 2.0, 3.0], np.float32)
  check(lambda x, v: tnp.average(x, axis=1, weights=v), lambda x, v: np.average(x, axis=1, weights=v), a, w)
  avg, ws = tnp.average(a, axis=1, weights=w, returned=True)
  ravg, rws = np.average(a, axis=1, weights=w, returned=True)
  np.testing.assert_allclose(np.asarray(avg), ravg, rtol=ulps(8))
  np.testing.assert_allclose(np.asarray(ws), rws)
  with pytest.raises(ValueError, match="axis must be specified"): tnp.average(a, weights=w)
  with pytest.raises(ValueError, match="length of weights"): tnp.average(a, axis=0, weights=w)


# ---- cumulative ----
@st.composite
def cum_case(draw, low=-10, high=10):
  dtype = draw(st.sampled_from(ALL))
  shape = draw(shapes(min_dims=0, max_dims=3, min_side=0, max_side=7))
  a = draw(arrays(dtype, shape, low=low, high=high))
  axis = draw(st.one_of(st.none(), st.integers(-a.ndim, a.ndim - 1))) if a.ndim else None
  return dtype, a, axis


def jax_cum_dtype(name: str) -> str: return "int32" if name == "bool" else name


def cum_ref(n, dtype):
  if dtype in ("float16", "bfloat16"): return lambda x, axis: n(x.astype(np.float32), axis=axis)
  return lambda x, axis: n(wide(x), axis=axis)


@given(cum_case())
def test_cumsum(c):
  dtype, a, axis = c
  ref = cum_ref(np.cumsum, dtype)
  check(lambda x: tnp.cumsum(x, axis=axis), lambda x: ref(x, axis), a, want_dtype=jax_cum_dtype(dtype))


@given(cum_case(low=-2, high=2))
def test_cumprod(c):
  dtype, a, axis = c
  ref = cum_ref(np.cumprod, dtype)
  check(lambda x: tnp.cumprod(x, axis=axis), lambda x: ref(x, axis), a, want_dtype=jax_cum_dtype(dtype))


@given(cum_case(), st.sampled_from(["int32", "float32", "bool"]))
def test_cumsum_dtype_argument(c, out):
  dtype, a, axis = c
  if out == "bool":
    check(lambda x: tnp.cumsum(x, axis=axis, dtype=bool), lambda x: np.cumsum(x != 0, axis=axis) > 0, a)
  else:
    check(lambda x: tnp.cumsum(x, axis=axis, dtype=out), lambda x: np.cumsum(wide(x.astype(np_dtype(out))), axis=axis),
          a, want_dtype=out)


def test_cumsum_long_axis():
  a = np.arange(100, dtype=np.int32).reshape(4, 25)  # several doubling steps, non-power-of-two length
  check(lambda x: tnp.cumsum(x, axis=1), lambda x: np.cumsum(x, axis=1), a, want_dtype="int32")
  check(lambda x: tnp.cumprod(x, axis=0), lambda x: np.cumprod(x, axis=0), a, want_dtype="int32")
  check(lambda x: tnp.cumsum(x), lambda x: np.cumsum(x), a, want_dtype="int32")


def test_nancumsum_nancumprod():
  a = np.array([[1.0, np.nan, 2.0], [np.nan, np.nan, 3.0]], np.float32)
  check(lambda x: tnp.nancumsum(x, axis=1), lambda x: np.nancumsum(x, axis=1), a)
  check(lambda x: tnp.nancumprod(x), lambda x: np.nancumprod(x), a)


@given(cum_case(), st.booleans())
def test_cumulative_sum(c, include_initial):
  dtype, a, axis = c
  if a.ndim == 0 or (a.ndim > 1 and axis is None): return
  ref = a.astype(np.float32) if dtype in ("float16", "bfloat16") else wide(a)
  check(lambda x: tnp.cumulative_sum(x, axis=axis, include_initial=include_initial),
        lambda x: np.cumulative_sum(ref, axis=axis, include_initial=include_initial), a,
        want_dtype=jax_sum_dtype(dtype))


def test_cumulative_sum_needs_axis_beyond_1d():
  with pytest.raises(ValueError, match="axis must be given"): tnp.cumulative_sum(np.ones((2, 2)))
  with pytest.raises(ValueError, match="non-scalar"): tnp.cumulative_prod(np.float32(1.0))
  check(lambda x: tnp.cumulative_prod(x, axis=1, include_initial=True),
        lambda x: np.cumulative_prod(x, axis=1, include_initial=True), np.arange(1, 7, dtype=np.int32).reshape(2, 3),
        want_dtype="int32")


# ---- methods, traced dtypes and errors ----
def test_array_methods():
  x = tnp.asarray(np.arange(6, dtype=np.float32).reshape(2, 3))
  assert float(x.sum()) == 15.0 and x.max(axis=0).tolist() == [3.0, 4.0, 5.0]
  assert x.argmax(axis=1).tolist() == [2, 2] and x.cumsum(axis=1).tolist() == [[0, 1, 3], [3, 7, 12]]


@pytest.mark.parametrize("f", [tnp.sum, tnp.prod, tnp.max, tnp.min, tnp.mean, tnp.var, tnp.std, tnp.any, tnp.all,
                               tnp.count_nonzero, tnp.ptp, tnp.nansum, tnp.nanmax])
def test_axis_out_of_range(f):
  a = np.ones((2, 3), np.float32)
  with pytest.raises(ValueError, match=rf"{f.__name__}.*axis 2 .*dimension 2"): f(a, axis=2)
  with pytest.raises(ValueError, match=rf"{f.__name__}.*axis -3 .*dimension 2"): f(a, axis=(0, -3))
  with pytest.raises(ValueError, match="repeated axis"): f(a, axis=(1, -1))


@pytest.mark.parametrize("f", [tnp.argmax, tnp.argmin, tnp.cumsum, tnp.cumprod])
def test_single_axis_out_of_range(f):
  with pytest.raises(ValueError, match=rf"{f.__name__}.*axis 3 .*dimension 2"): f(np.ones((2, 3)), axis=3)


def test_empty_errors():
  e = np.zeros((2, 0), np.float32)
  for f in (tnp.max, tnp.min, tnp.amax, tnp.nanmax, tnp.ptp):
    with pytest.raises(ValueError, match="zero-size array to reduction operation"): f(e)
    with pytest.raises(ValueError, match="zero-size array"): f(e, axis=1)
  assert tnp.max(e, axis=0).shape == (0,)  # reducing a non-empty axis of an empty array is fine
  assert tnp.max(e, axis=1, initial=-1.0).tolist() == [-1.0, -1.0]
  for f in (tnp.argmax, tnp.argmin):
    with pytest.raises(ValueError, match="empty sequence"): f(e)
    with pytest.raises(ValueError, match="empty sequence"): f(e, axis=1)
  with pytest.raises(ValueError, match="initial"): tnp.max(np.ones(3), where=np.array([True, False, True]))


def test_out_is_rejected():
  with pytest.raises(NotImplementedError, match="out"): tnp.sum(np.ones(3), out=np.ones(()))


def test_weak_type_preserved_for_python_scalars():
  assert tnp.sum(3.0).weak_type and not tnp.sum(3.0, dtype="float32").weak_type
  assert tnp.argmax(3.0).dtype == tnp.int32


N40 = 2 ** 40
# a reduction of a broadcast constant takes no loop over its copies; the values are jax.jit's (XLA folds these too):
# an int32 sum wraps as adding the copies would
HUGE = [
  (lambda: tnp.ones((N40,), bool).sum(), 0, "int32"),
  (lambda: tnp.full((2 ** 33,), 2, tnp.int8).sum(), 0, "int32"),
  (lambda: tnp.full((2 ** 32 + 3,), 5, tnp.int32).sum(), 15, "int32"),
  (lambda: tnp.ones((N40,), tnp.int32).sum(), 0, "int32"),
  (lambda: tnp.zeros((N40,)).sum(), 0.0, "float32"),
  (lambda: tnp.ones((N40,)).sum(), float(N40), "float32"),
  (lambda: tnp.full((N40,), 0.1).sum(), float(np.float32(0.1)) * N40, "float32"),
  (lambda: tnp.ones((N40,)).mean(), 1.0, "float32"),
  (lambda: tnp.full((N40,), 2.0).mean(), 2.0, "float32"),
  (lambda: tnp.full((N40,), -7.0).max(), -7.0, "float32"),
  (lambda: (tnp.zeros((2 ** 20, 2 ** 20)) + 3).min(axis=0)[:2], [3.0, 3.0], "float32"),
]


@pytest.mark.parametrize("i", range(len(HUGE)))
def test_reducing_a_huge_broadcast_constant_eagerly_and_under_jit(i):
  make, want, dtype = HUGE[i]
  for out in (make(), tg.jit(lambda z: make() + z)(tnp.zeros((), dtype))):
    assert out.dtype is getattr(tnp, dtype) and out.tolist() == want

