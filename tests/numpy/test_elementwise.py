"""Elementwise functions against numpy, eagerly and traced, in value, shape and dtype (JAX's dtype where it differs).

numpy references are computed in the dtype JAX computes in: the promoted dtype for arithmetic, float32 for
integer inputs of float functions and for float16/bfloat16 transcendentals (XLA widens half types), then cast to
the dtype JAX returns, which the result must have.
"""
import math

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, strategies as st
from hypothesis.extra import numpy as hnp

import tracegrad.numpy as tnp
from oracles import ALL, FLOATS, INTS, arrays, assert_close, check, np_dtype, shapes, traced, ulps, x64

NUMERIC = INTS + FLOATS
F32 = np.float32


def cast(x: np.ndarray, name: str) -> np.ndarray:
  with np.errstate(all="ignore"): return x.astype(np_dtype(name))


def jax_dtype(*names: str) -> str: return tnp.promote_types(*names).name if len(names) > 1 else names[0]
def float_of(name: str) -> str: return name if name in FLOATS else "float32"


def ref(nfn, compute: str, want: str):
  """nfn on the operands converted to `compute`, the result converted to `want`."""
  def f(*xs):
    with np.errstate(all="ignore"): return g(*xs)

  def g(*xs):
    out = nfn(*[np.asarray(x).astype(np_dtype(compute)) for x in xs])
    return tuple(np.asarray(o).astype(np_dtype(want)) for o in out) if isinstance(out, tuple) \
      else np.asarray(out).astype(np_dtype(want))
  return f


# ---- float functions of one argument: (tracegrad, numpy, element range) ----
UNARY_FLOAT = {
  "sqrt": (tnp.sqrt, np.sqrt, (0, 100)), "cbrt": (tnp.cbrt, np.cbrt, (-100, 100)), "exp": (tnp.exp, np.exp, (-10, 10)),
  "exp2": (tnp.exp2, np.exp2, (-10, 10)), "expm1": (tnp.expm1, np.expm1, (-10, 10)),
  "log": (tnp.log, np.log, (0.01, 100)), "log2": (tnp.log2, np.log2, (0.01, 100)),
  "log10": (tnp.log10, np.log10, (0.01, 100)), "log1p": (tnp.log1p, np.log1p, (-0.99, 100)),
  "sin": (tnp.sin, np.sin, (-10, 10)), "cos": (tnp.cos, np.cos, (-10, 10)), "tan": (tnp.tan, np.tan, (-1.4, 1.4)),
  "arcsin": (tnp.arcsin, np.arcsin, (-1, 1)), "arccos": (tnp.arccos, np.arccos, (-1, 1)),
  "arctan": (tnp.arctan, np.arctan, (-10, 10)), "sinh": (tnp.sinh, np.sinh, (-10, 10)),
  "cosh": (tnp.cosh, np.cosh, (-10, 10)), "tanh": (tnp.tanh, np.tanh, (-10, 10)),
  "arcsinh": (tnp.arcsinh, np.arcsinh, (-100, 100)), "arccosh": (tnp.arccosh, np.arccosh, (1, 100)),
  "arctanh": (tnp.arctanh, np.arctanh, (-0.99, 0.99)), "deg2rad": (tnp.deg2rad, np.deg2rad, (-360, 360)),
  "rad2deg": (tnp.rad2deg, np.rad2deg, (-10, 10)), "degrees": (tnp.degrees, np.degrees, (-10, 10)),
  "radians": (tnp.radians, np.radians, (-360, 360)), "sinc": (tnp.sinc, np.sinc, (-10, 10)),
  "fabs": (tnp.fabs, np.fabs, (-10, 10)), "reciprocal": (tnp.reciprocal, np.reciprocal, (0.1, 10)),
  "rint": (tnp.rint, np.rint, (-10, 10)),
  "asin": (tnp.asin, np.arcsin, (-1, 1)), "acos": (tnp.acos, np.arccos, (-1, 1)),
  "atan": (tnp.atan, np.arctan, (-5, 5)),
  "asinh": (tnp.asinh, np.arcsinh, (-5, 5)), "acosh": (tnp.acosh, np.arccosh, (1, 5)),
  "atanh": (tnp.atanh, np.arctanh, (-0.9, 0.9)),
}


def _range(dtype: str, lo, hi):
  """[lo, hi] as bounds for arrays() of `dtype` (integers: the integers in it)."""
  return (int(np.ceil(lo)), int(np.floor(hi))) if dtype in INTS else (lo, hi)


@pytest.mark.parametrize("name", sorted(UNARY_FLOAT))
@given(data=st.data())
def test_unary_float(name, data):
  tfn, nfn, (lo, hi) = UNARY_FLOAT[name]
  opts = FLOATS + [d for d in INTS if np.ceil(lo) <= np.floor(hi) and (np.iinfo(np_dtype(d)).min <= lo or lo >= 0)]
  if lo <= 0 and hi >= 1: opts = opts + ["bool"]
  dtype = data.draw(st.sampled_from(opts), label="dtype")
  low, high = _range(dtype, lo, hi)
  x = data.draw(arrays(dtype, shapes(), low=low, high=high), label="x")
  check(tfn, ref(nfn, "float32", float_of(dtype)), x)


@pytest.mark.parametrize("name", ["exp", "expm1", "log", "log1p", "tanh", "sinh", "cosh", "arcsinh", "arccosh",
                                  "arctanh", "sqrt", "cbrt", "sin", "cos", "tan", "arcsin", "arccos", "arctan", "sinc",
                                  "exp2", "log2", "log10", "fabs", "rint", "reciprocal", "deg2rad", "rad2deg"])
def test_unary_float_special_values(name):
  tfn, nfn, _ = UNARY_FLOAT[name]
  x = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 1e-40, -1e-40, 1e-30, 1e-20, -1e-7, 1e-7, 1e-4, 0.5, -0.5, 0.99,
                -0.99, 1.0, -1.0, 1.5, 2.5, -2.5, 3.0, 20.0, -20.0, 50.0, 88.0, -88.0, 89.0, -100.0, 100.0, 1e10,
                -1e10, 3e38, -3e38], F32)
  check(tfn, nfn, x)
  check(tfn, ref(nfn, "float32", "float16"), cast(x, "float16"))


def test_tanh_float32_over_a_dense_grid():
  """A rational fit in float32 (as XLA's): within 7 ulp of the exact value, odd, and never beyond +-1."""
  x = np.arange(0, np.float32(12).view(np.uint32), 1009, dtype=np.uint32).view(np.float32)
  got = np.asarray(tnp.tanh(np.concatenate([x, -x])))
  exact = np.tanh(x.astype(np.float64))
  ulps = np.abs(got[:x.size] - exact) / np.spacing(exact.astype(np.float32))
  assert ulps.max() <= 7 and np.abs(got).max() <= 1.0
  np.testing.assert_array_equal(got[x.size:], -got[:x.size])


def test_expm1_log1p_tiny_and_huge():
  x = np.array([1e-38, 1e-30, -1e-30, 1e-12, 3e-8, -3e-8, 1e-5, 30.0, 80.0, 88.7, 89.0], F32)
  check(tnp.expm1, np.expm1, x)
  check(tnp.log1p, np.log1p, np.array([1e-38, 1e-30, -1e-30, 1e-12, 3e-8, -3e-8, -0.5, -0.9999, -1.0, -2.0, 1e30,
                                       np.inf], F32))
  check(tnp.tanh, np.tanh, np.array([1e-38, 1e-30, -1e-12, 1e-6, 0.01, 9.0, 10.0, 19.9, 25.0, -1e30], F32))


# ---- integer-valued and dtype-preserving unary functions ----
UNARY_SAME = {
  "negative": (tnp.negative, np.negative, NUMERIC), "positive": (tnp.positive, np.positive, NUMERIC),
  "abs": (tnp.abs, np.abs, ALL), "absolute": (tnp.absolute, np.absolute, ALL), "sign": (tnp.sign, np.sign, NUMERIC),
  "floor": (tnp.floor, np.floor, ALL), "ceil": (tnp.ceil, np.ceil, ALL), "trunc": (tnp.trunc, np.trunc, ALL),
  "fix": (tnp.fix, np.fix, ALL), "round": (tnp.round, np.round, NUMERIC), "around": (tnp.around, np.round, NUMERIC),
  "bitwise_not": (tnp.bitwise_not, np.bitwise_not, ["bool"] + INTS), "invert": (tnp.invert, np.invert, ["bool"] + INTS),
  "conj": (tnp.conj, np.conj, NUMERIC), "real": (tnp.real, np.real, NUMERIC),
}


@pytest.mark.parametrize("name", sorted(UNARY_SAME))
@given(data=st.data())
def test_unary_same_dtype(name, data):
  tfn, nfn, opts = UNARY_SAME[name]
  dtype = data.draw(st.sampled_from(opts), label="dtype")
  x = data.draw(arrays(dtype, shapes(), low=-100, high=100), label="x")
  compute = "float32" if dtype in ("float16", "bfloat16") else dtype
  check(tfn, ref(nfn, compute, dtype), x)


@pytest.mark.parametrize("name,tfn,nfn", [("isnan", tnp.isnan, np.isnan), ("isinf", tnp.isinf, np.isinf),
                                          ("isfinite", tnp.isfinite, np.isfinite),
                                          ("isposinf", tnp.isposinf, np.isposinf),
                                          ("isneginf", tnp.isneginf, np.isneginf), ("signbit", tnp.signbit, np.signbit),
                                          ("logical_not", tnp.logical_not, np.logical_not)])
@given(data=st.data())
def test_predicates(name, tfn, nfn, data):
  dtype = data.draw(st.sampled_from(ALL), label="dtype")
  x = data.draw(arrays(dtype, shapes()), label="x")
  compute = "float32" if dtype in ("float16", "bfloat16") else dtype
  check(tfn, ref(nfn, compute, "bool"), x)
  special = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 1.0, -1.0, -np.nan], F32)
  for d in FLOATS: check(tfn, ref(nfn, "float32", "bool"), special.astype(np_dtype(d)))


@given(dtype=st.sampled_from(ALL), x=st.data())
def test_square(dtype, x):
  a = x.draw(arrays(dtype, shapes()), label="x")
  want = "int32" if dtype == "bool" else dtype
  check(tnp.square, ref(np.square, "float32" if dtype in ("float16", "bfloat16") else want, want), a)


@given(dtype=st.sampled_from(FLOATS), data=st.data(), decimals=st.integers(-2, 3))
def test_round_decimals(dtype, data, decimals):
  x = data.draw(arrays(dtype, shapes(), low=-1000, high=1000), label="x")
  check(lambda a: tnp.round(a, decimals), ref(lambda a: np.round(a, decimals), "float32", dtype), x)


@given(dtype=st.sampled_from(INTS), data=st.data(), decimals=st.integers(-3, 1))
def test_round_int_decimals(dtype, data, decimals):
  x = data.draw(arrays(dtype, shapes(), low=-3000, high=3000), label="x")
  check(lambda a: tnp.round(a, decimals), lambda a: np.round(a, decimals), x)


def test_round_half_to_even():
  x = np.array([0.5, 1.5, 2.5, -0.5, -1.5, -2.5, 0.49999997, -0.49999997, 8388607.5, 8388608.0, 1e30, np.inf,
                -np.inf, np.nan, -0.0, -0.4], F32)
  check(tnp.round, np.round, x)
  check(tnp.rint, np.rint, x)
  assert np.signbit(np.asarray(tnp.round(np.array([-0.4, -0.0], F32)))).all()
  for d in ("float16", "bfloat16"): check(tnp.round, ref(np.round, "float32", d), cast(x, d))


@given(dtype=st.sampled_from(ALL), data=st.data())
def test_nan_to_num(dtype, data):
  x = data.draw(arrays(dtype, shapes()), label="x")
  check(tnp.nan_to_num, lambda a: a, x)
  if dtype in FLOATS:
    d = np_dtype(dtype)
    big = ml_dtypes.finfo(d).max
    sp = np.array([np.nan, np.inf, -np.inf, 1.0], F32).astype(d)
    check(tnp.nan_to_num, lambda a: np.array([0, big, -big, 1], d), sp)
    check(lambda a: tnp.nan_to_num(a, nan=-1.0, posinf=5.0, neginf=-5.0), lambda a: np.array([-1, 5, -5, 1], d), sp)


# ---- two-argument functions ----

@st.composite
def operands(draw, opts, low=-10, high=10, elements=None, second=None, opts2=None):
  """Two arrays of mutually broadcastable shapes and independently drawn dtypes from `opts` (and `opts2`)."""
  d1, d2 = draw(st.sampled_from(opts)), draw(st.sampled_from(opts2 or opts))
  s1, s2 = draw(hnp.mutually_broadcastable_shapes(num_shapes=2, max_dims=3, max_side=4)).input_shapes
  x = draw(arrays(d1, s1, low=low, high=high, elements=elements(d1) if elements else None))
  lo2, hi2, el2 = second if second else (low, high, elements)
  y = draw(arrays(d2, s2, low=lo2, high=hi2, elements=el2(d2) if el2 else None))
  return x, y


def _names(x, y): return str(x.dtype) if x.dtype != ml_dtypes.bfloat16 else "bfloat16", \
  str(y.dtype) if y.dtype != ml_dtypes.bfloat16 else "bfloat16"


def _compute(rt: str) -> str: return "float32" if rt in ("float16", "bfloat16") else rt


ARITH = {"add": (tnp.add, np.add), "subtract": (tnp.subtract, np.subtract), "multiply": (tnp.multiply, np.multiply),
         "maximum": (tnp.maximum, np.maximum), "minimum": (tnp.minimum, np.minimum), "fmax": (tnp.fmax, np.fmax),
         "fmin": (tnp.fmin, np.fmin), "floor_divide": (tnp.floor_divide, np.floor_divide),
         "remainder": (tnp.remainder, np.remainder), "mod": (tnp.mod, np.mod), "fmod": (tnp.fmod, np.fmod)}
NUMERIC_ONLY = {"floor_divide", "remainder", "mod", "fmod"}  # bool operands compute as int32 (as JAX)


@pytest.mark.parametrize("name", sorted(ARITH))
@given(data=st.data())
def test_arithmetic(name, data):
  tfn, nfn = ARITH[name]
  x, y = data.draw(operands(ALL), label="xy")
  rt = jax_dtype(*_names(x, y))
  if rt == "bool" and name == "subtract":
    with pytest.raises(TypeError, match="subtract"): tfn(x, y)
    return
  if rt == "bool" and name in NUMERIC_ONLY: rt = "int32"
  check(tfn, ref(nfn, _compute(rt), rt), x, y)


def test_divmod():
  x = np.array([7, -7, 7, -7, 0, 5, -128], np.int8)
  y = np.array([2, 2, -2, -2, 3, 0, -1], np.int8)
  check(tnp.divmod, lambda a, b: (np.floor_divide(a, b), np.remainder(a, b)), x, y)
  xf, yf = x.astype(F32) + 0.5, y.astype(F32)
  check(tnp.divmod, lambda a, b: np.divmod(a, b), xf, yf)
  q, r = tnp.array([7, -7]).__divmod__(3)
  assert q.tolist() == [2, -3] and r.tolist() == [1, 2]


@pytest.mark.parametrize("dtype", INTS)
def test_integer_division_edge_cases(dtype):
  d = np_dtype(dtype)
  info = np.iinfo(d)
  vals = np.array(sorted({0, 1, 2, 7, info.max, info.min, info.max - 1} | ({-1, -7, -2} if info.min < 0 else set())),
                  d)
  x, y = np.meshgrid(vals, vals)
  for tfn, nfn in [(tnp.floor_divide, np.floor_divide), (tnp.remainder, np.remainder), (tnp.fmod, np.fmod)]:
    check(tfn, nfn, x, y)  # numpy: x // 0 == x % 0 == 0, INT_MIN // -1 wraps


def test_float_division_edge_cases():
  v = np.array([0.0, -0.0, 1.0, -1.0, 2.5, -7.0, 1e-30, 3e38, np.inf, -np.inf, np.nan], F32)
  x, y = np.meshgrid(v, v)
  for tfn, nfn in [(tnp.floor_divide, np.floor_divide), (tnp.remainder, np.remainder), (tnp.fmod, np.fmod),
                   (tnp.true_divide, np.true_divide)]:
    check(tfn, nfn, x, y)
    check(tfn, ref(nfn, "float32", "float16"), cast(x, "float16"), cast(y, "float16"))


@given(data=st.data())
def test_true_divide(data):
  x, y = data.draw(operands(ALL, second=(-10, 10, None)), label="xy")
  rt = float_of(jax_dtype(*_names(x, y)))
  for fn in (tnp.true_divide, tnp.divide):
    check(fn, ref(np.true_divide, "float32" if rt != "float32" else rt, rt), x, y)


FLOAT_BINARY = {"arctan2": (tnp.arctan2, np.arctan2), "atan2": (tnp.atan2, np.arctan2), "hypot": (tnp.hypot, np.hypot),
                "logaddexp": (tnp.logaddexp, np.logaddexp), "logaddexp2": (tnp.logaddexp2, np.logaddexp2),
                "copysign": (tnp.copysign, np.copysign), "heaviside": (tnp.heaviside, np.heaviside)}


@pytest.mark.parametrize("name", sorted(FLOAT_BINARY))
@given(data=st.data())
def test_float_binary(name, data):
  tfn, nfn = FLOAT_BINARY[name]
  x, y = data.draw(operands(ALL), label="xy")
  rt = float_of(jax_dtype(*_names(x, y)))
  check(tfn, ref(nfn, "float32", rt), x, y)


@pytest.mark.parametrize("name", sorted(FLOAT_BINARY))
def test_float_binary_special_values(name):
  tfn, nfn = FLOAT_BINARY[name]
  v = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 1e-30, -1.0, 2.0, 1e30, 3e38, -3e38], F32)
  x, y = np.meshgrid(v, v)
  check(tfn, nfn, x, y)


@given(data=st.data())
def test_power_float(data):
  x, y = data.draw(operands(FLOATS, low=0.1, high=5, second=(-3, 3, None), opts2=FLOATS + INTS), label="xy")
  rt = float_of(jax_dtype(*_names(x, y)))
  for fn in (tnp.power, tnp.pow, tnp.float_power):
    check(fn, ref(np.power, "float32", rt), x, y)


@given(data=st.data())
def test_power_int(data):
  x, y = data.draw(operands(["bool"] + INTS, low=-10, high=10, second=(0, 40, None)), label="xy")
  rt = jax_dtype(*_names(x, y))
  rt = "int32" if rt == "bool" else rt
  check(tnp.power, ref(np.power, rt, rt), x, y)


def test_power_int_edge_cases():
  base = np.array([0, 1, -1, 2, -2, 3, 7, -128], np.int8)
  expo = np.array([0, 1, 2, 7, 8, 9, 31, 127], np.int8)
  b, e = np.meshgrid(base, expo)
  check(tnp.power, np.power, b, e)  # wraps like numpy
  check(tnp.power, np.power, np.array([3, 255], np.uint8), np.array([200, 255], np.uint8))
  check(tnp.power, np.power, np.array([3, -3, 2**30], np.int32), np.array([2**31 - 1, 41, 2], np.int32))
  # negative exponents: numpy raises, JAX gives 0 except for bases 1 and -1
  got = tnp.power(np.array([2, 1, -1, -1, 0, -5], np.int32), np.array([-1, -5, -3, -2, -1, -2], np.int32))
  assert got.dtype == tnp.int32 and got.tolist() == [0, 1, -1, 1, 0, 0]


SHIFTS = {"left_shift": (tnp.left_shift, np.left_shift), "right_shift": (tnp.right_shift, np.right_shift),
          "bitwise_left_shift": (tnp.bitwise_left_shift, np.left_shift),
          "bitwise_right_shift": (tnp.bitwise_right_shift, np.right_shift)}


@pytest.mark.parametrize("name", sorted(SHIFTS))
@given(data=st.data())
def test_shifts(name, data):
  tfn, nfn = SHIFTS[name]
  x, y = data.draw(operands(INTS, low=-100, high=100, second=(0, 40, None)), label="xy")
  rt = jax_dtype(*_names(x, y))
  check(tfn, ref(nfn, rt, rt), x, y)


@pytest.mark.parametrize("dtype", INTS)
def test_shift_by_large_and_negative_counts(dtype):
  d = np_dtype(dtype)
  info = np.iinfo(d)
  x = np.array([1, 5, info.max, info.min, -1 if info.min else 0, -8 if info.min else 8], d)
  bits = 8 * d.itemsize
  for c in [0, 1, bits - 1, bits, bits + 1, 100] + ([-1] if info.min < 0 else []):
    cnt = np.full(x.shape, min(c, info.max), d)
    check(tnp.left_shift, np.left_shift, x, cnt)
    check(tnp.right_shift, np.right_shift, x, cnt)


BITWISE = {"bitwise_and": (tnp.bitwise_and, np.bitwise_and), "bitwise_or": (tnp.bitwise_or, np.bitwise_or),
           "bitwise_xor": (tnp.bitwise_xor, np.bitwise_xor)}


@pytest.mark.parametrize("name", sorted(BITWISE))
@given(data=st.data())
def test_bitwise(name, data):
  tfn, nfn = BITWISE[name]
  x, y = data.draw(operands(["bool"] + INTS, low=-100, high=100), label="xy")
  rt = jax_dtype(*_names(x, y))
  check(tfn, ref(nfn, rt, rt), x, y)


COMPARE = {"equal": (tnp.equal, np.equal), "not_equal": (tnp.not_equal, np.not_equal), "less": (tnp.less, np.less),
           "less_equal": (tnp.less_equal, np.less_equal), "greater": (tnp.greater, np.greater),
           "greater_equal": (tnp.greater_equal, np.greater_equal)}


@pytest.mark.parametrize("name", sorted(COMPARE))
@given(data=st.data())
def test_compare(name, data):
  tfn, nfn = COMPARE[name]
  x, y = data.draw(operands(ALL, low=-3, high=3), label="xy")
  rt = jax_dtype(*_names(x, y))
  check(tfn, ref(nfn, _compute(rt), "bool"), x, y)
  v = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 1.0], F32)
  a, b = np.meshgrid(v, v)
  check(tfn, nfn, a, b)


LOGICAL = {"logical_and": (tnp.logical_and, np.logical_and), "logical_or": (tnp.logical_or, np.logical_or),
           "logical_xor": (tnp.logical_xor, np.logical_xor)}


@pytest.mark.parametrize("name", sorted(LOGICAL))
@given(data=st.data())
def test_logical(name, data):
  tfn, nfn = LOGICAL[name]
  x, y = data.draw(operands(ALL, low=-2, high=2), label="xy")
  check(tfn, lambda a, b: nfn(a.astype(F32) if a.dtype == ml_dtypes.bfloat16 else a,
                              b.astype(F32) if b.dtype == ml_dtypes.bfloat16 else b), x, y)
  check(tfn, nfn, np.array([np.nan, 0.0, -0.0, 1.0], F32), np.array([1.0, np.nan, 1.0, 0.0], F32))


def test_maximum_minimum_nan():
  x = np.array([np.nan, 1.0, np.nan, -np.inf, 0.0], F32)
  y = np.array([1.0, np.nan, np.nan, 2.0, -0.0], F32)
  for tfn, nfn in [(tnp.maximum, np.maximum), (tnp.minimum, np.minimum), (tnp.fmax, np.fmax), (tnp.fmin, np.fmin)]:
    check(tfn, nfn, x, y)


# ---- where and clip ----

@given(data=st.data())
def test_where(data):
  x, y = data.draw(operands(ALL), label="xy")
  cd = data.draw(st.sampled_from(ALL), label="cond dtype")
  c = data.draw(arrays(cd, data.draw(hnp.broadcastable_shapes(np.broadcast_shapes(x.shape, y.shape), max_dims=3)),
                       low=-1, high=1), label="cond")
  rt = jax_dtype(*_names(x, y))
  check(tnp.where, lambda c_, a, b: np.where(c_.astype(F32) != 0, a.astype(np_dtype(rt)), b.astype(np_dtype(rt))),
        c, x, y)


@given(dtype=st.sampled_from(NUMERIC), data=st.data())
def test_clip(dtype, data):
  x = data.draw(arrays(dtype, shapes()), label="x")
  low = 0 if dtype.startswith("u") else -5
  lo, hi = data.draw(st.integers(low, 3)), data.draw(st.integers(low + 2, 5))
  check(lambda a: tnp.clip(a, lo, hi), lambda a: np.minimum(hi, np.maximum(lo, a)).astype(a.dtype), x)
  check(lambda a: tnp.clip(a, min=lo), lambda a: np.maximum(a, lo).astype(a.dtype), x)
  check(lambda a: tnp.clip(a, a_max=hi), lambda a: np.minimum(a, hi).astype(a.dtype), x)
  check(lambda a: tnp.asarray(a).clip(lo, hi), lambda a: np.minimum(hi, np.maximum(lo, a)).astype(a.dtype), x)


def test_clip_arrays_and_nan():
  x = np.array([np.nan, -3.0, 0.5, 9.0], F32)
  check(tnp.clip, np.clip, x, np.array([0.0, 0.0, 1.0, 0.0], F32), np.array(2.0, F32))
  with pytest.raises(ValueError, match="clip"): tnp.clip(x, 0, a_min=1)


# ---- weak Python scalars and JAX promotion ----

def test_weak_scalars():
  f16, i8 = tnp.array(np.ones(3, np.float16)), tnp.array(np.ones(3, np.int8))
  bf = tnp.array(np.ones(3, ml_dtypes.bfloat16))
  assert (f16 + 1.0).dtype == tnp.float16 and (1.0 * f16).dtype == tnp.float16 and (bf * 2).dtype == tnp.bfloat16
  assert (i8 + 1).dtype == tnp.int8 and (i8 * 3).dtype == tnp.int8 and (i8 << 2).dtype == tnp.int8
  r = tnp.arange(3) + 1.5
  assert r.dtype == tnp.float32 and r.weak_type
  assert (i8 / 2).dtype == tnp.float32 and (i8 // 2).dtype == tnp.int8 and (i8 ** 2).dtype == tnp.int8
  assert tnp.sin(1).dtype == tnp.float32 and tnp.sin(1).weak_type and tnp.sin(f16).dtype == tnp.float16
  assert tnp.sin(i8).dtype == tnp.float32 and tnp.sqrt(tnp.array([True])).dtype == tnp.float32
  assert tnp.where(True, f16, 0.0).dtype == tnp.float16 and tnp.maximum(f16, 2).dtype == tnp.float16
  assert not tnp.add(f16, 1.0).weak_type and tnp.add(1, 2).weak_type
  u8 = tnp.array(np.array([0, 1], np.uint8))
  assert (u8 - 1).tolist() == [255, 0] and (-u8).tolist() == [0, 255] and (u8 - 1).dtype == tnp.uint8
  # int32 + uint32 is int64 in JAX, int32 without 64-bit mode (numpy says int64)
  s = tnp.add(np.array([1], np.int32), np.array([2], np.uint32))
  assert s.dtype == tnp.int32 and s.tolist() == [3]
  assert tnp.add(np.array([1], np.int8), np.array([2], np.uint8)).dtype == tnp.int16
  assert tnp.add(np.array([1], np.float16), np.array([2], ml_dtypes.bfloat16)).dtype == tnp.float32
  assert tnp.multiply(np.array([1], np.int32), np.array([2], np.float16)).dtype == tnp.float16


def test_bool_arithmetic():
  t, f = np.array([True, True, False, False]), np.array([True, False, True, False])
  check(tnp.add, np.add, t, f)
  check(tnp.multiply, np.multiply, t, f)
  check(tnp.maximum, np.maximum, t, f)
  check(tnp.floor_divide, ref(np.floor_divide, "int32", "int32"), t, f)
  check(tnp.power, ref(np.power, "int32", "int32"), t, f)
  with pytest.raises(TypeError, match="subtract"): tnp.subtract(t, f)
  with pytest.raises(TypeError, match="negative"): tnp.negative(t)
  with pytest.raises(TypeError, match="sign"): tnp.sign(t)


def test_operators_forward():
  x = tnp.array([1.0, -2.0, 3.0])
  xn = np.array([1.0, -2.0, 3.0], F32)
  assert_close(x + 1, xn + 1)
  assert_close(2 - x, 2 - xn)
  assert_close(x / 2, xn / 2)
  assert_close(x // 2, xn // 2)
  assert_close(x % 2, xn % 2)
  assert_close(2 ** x, np.float32(2) ** xn)
  assert_close(-x, -xn)
  assert_close(abs(x), np.abs(xn))
  assert_close(x < 0, xn < 0)
  assert_close(x == 3.0, xn == 3.0)
  i = tnp.array([1, 2, 3])
  assert_close(~i, ~np.array([1, 2, 3], np.int32))
  assert_close((i << 2) | (i & 1) ^ 7, (np.array([1, 2, 3], np.int32) << 2) | (np.array([1, 2, 3], np.int32) & 1) ^ 7)


# ---- errors ----

BINARY_FNS = {**{k: v[0] for k, v in ARITH.items()}, **{k: v[0] for k, v in FLOAT_BINARY.items()},
              **{k: v[0] for k, v in SHIFTS.items()}, **{k: v[0] for k, v in BITWISE.items()},
              **{k: v[0] for k, v in COMPARE.items()}, **{k: v[0] for k, v in LOGICAL.items()},
              "true_divide": tnp.true_divide, "power": tnp.power, "float_power": tnp.float_power, "divmod": tnp.divmod}
UNARY_FNS = {**{k: v[0] for k, v in UNARY_FLOAT.items()}, **{k: v[0] for k, v in UNARY_SAME.items()},
             "isnan": tnp.isnan, "isinf": tnp.isinf, "isfinite": tnp.isfinite, "signbit": tnp.signbit,
             "nan_to_num": tnp.nan_to_num, "square": tnp.square, "logical_not": tnp.logical_not}


ALIASES = {"atan2": "arctan2", "bitwise_left_shift": "left_shift", "bitwise_right_shift": "right_shift",
           "mod": "remainder", "absolute": "abs", "around": "round", "acos": "arccos", "asin": "arcsin",
           "atan": "arctan", "asinh": "arcsinh", "acosh": "arccosh", "atanh": "arctanh", "degrees": "rad2deg",
           "radians": "deg2rad", "invert": "bitwise_not", "conjugate": "conj"}


@pytest.mark.parametrize("name", sorted(BINARY_FNS))
def test_binary_errors(name):
  fn = BINARY_FNS[name]
  integral = name in SHIFTS or name in BITWISE
  dt = np.int32 if integral else F32
  a, b = np.zeros((2, 3), dt), np.zeros((4,), dt)
  name = ALIASES.get(name, name)
  with pytest.raises(ValueError) as e: fn(a, b)
  msg = str(e.value)
  assert name in msg and "(2, 3)" in msg and "(4,)" in msg, msg
  for bad in ("abc", None, object()):
    with pytest.raises(TypeError, match=name): fn(a, bad)
    with pytest.raises(TypeError, match=name): fn(bad, a)


@pytest.mark.parametrize("name", sorted(UNARY_FNS))
def test_unary_errors(name):
  for bad in ("abc", None, object(), {"a": 1}):
    with pytest.raises(TypeError, match=ALIASES.get(name, name)): UNARY_FNS[name](bad)


def test_kind_errors():
  f = np.ones(3, F32)
  for fn in (tnp.bitwise_and, tnp.bitwise_or, tnp.bitwise_xor, tnp.left_shift, tnp.right_shift):
    with pytest.raises(TypeError, match=fn.__name__): fn(f, f)
  with pytest.raises(TypeError, match="bitwise_not"): tnp.bitwise_not(f)
  assert np.array_equal(tnp.where(f > 0)[0], tnp.nonzero(f > 0)[0])  # the one-argument form is nonzero
  with pytest.raises(TypeError, match="where: pass both x and y"): tnp.where(f > 0, f)
  with pytest.raises(ValueError, match="where"): tnp.where(np.ones((2, 3), bool), np.ones(3), np.ones(2))


# ---- float to integer conversion: saturating, as XLA converts ----

TARGETS = INTS + ["int64", "uint64"]


def saturated(x: np.ndarray, name: str) -> np.ndarray:
  """XLA's conversion, one value at a time: NaN to 0, beyond the range to its nearest end, else truncated."""
  info = np.iinfo(np_dtype(name))

  def one(v: float) -> int:
    if math.isnan(v): return 0
    if math.isinf(v): return int(info.max) if v > 0 else int(info.min)
    return min(max(math.trunc(v), int(info.min)), int(info.max))
  return np.array([one(v) for v in np.asarray(x, np.float64).ravel().tolist()], np_dtype(name)).reshape(x.shape)


def conversion_edges(src: str) -> np.ndarray:
  """NaN, infinities, fractions, src's largest value, and every target's bounds, as src holds them, with their
  neighbours in src."""
  v = [math.nan, math.inf, 0.0, -0.0, 0.5, 0.99, 1.5, 2.7, 3e9, 1e30]
  for name in TARGETS:
    info = np.iinfo(np_dtype(name))
    v += [float(info.min), float(info.min) - 1, float(info.max), float(info.max) + 1, float(info.max) + 0.5]
  with np.errstate(all="ignore"): x = np.array(v + [float(ml_dtypes.finfo(np_dtype(src)).max)]).astype(np_dtype(src))
  bits = np.dtype(f"u{x.dtype.itemsize}")
  own = x[np.isfinite(x.astype(np.float64)) & (x != 0)].view(bits)
  x = np.concatenate([x, (own + 1).view(x.dtype), (own - 1).view(x.dtype)])
  return np.concatenate([x, -x])


@pytest.mark.parametrize("src", FLOATS + ["float64"])
def test_float_to_int_saturates(src):
  """A float to an integer saturates as XLA's conversion does (C and numpy leave NaN and values beyond the range to
  the platform), eagerly and traced; a float to bool is x != 0."""
  with x64():
    x = conversion_edges(src)
    f = lambda a: tuple(a.astype(n) for n in TARGETS + ["bool"])
    want = [saturated(x, n) for n in TARGETS] + [x.astype(np.float64) != 0]
    for how, got in (("eager", f(tnp.asarray(x))), ("traced", traced(f, tnp.asarray(x)))):
      for n, g, w in zip(TARGETS + ["bool"], got, want):
        g = np.asarray(g)
        assert g.dtype == w.dtype, (how, src, n)
        np.testing.assert_array_equal(g, w, err_msg=f"{how} {src} -> {n} of {x}")


@given(st.sampled_from(FLOATS), st.sampled_from(INTS), st.data())
def test_float_to_int_saturates_random(src, dst, data):
  el = st.floats(width=32) | st.floats(-300, 300, width=32) | st.floats(-5e9, 5e9, width=32)
  x = cast(data.draw(hnp.arrays(F32, shapes(min_dims=1, max_dims=2, max_side=6), elements=el)), src)
  check(lambda a: tnp.asarray(a).astype(dst), lambda a: saturated(a, dst), x)


def test_float_to_int_as_jax():
  """The values jnp.array(..., float32).astype(...) gives."""
  x = np.array([np.nan, np.inf, -np.inf, 3e9, -3e9, 2.7, -2.7], F32)
  big, small = 2 ** 31 - 1, -2 ** 31
  check(lambda a: tnp.asarray(a).astype(tnp.int32), lambda a: np.array([0, big, small, big, small, 2, -2], np.int32), x)
  check(lambda a: tnp.asarray(a).astype(tnp.uint8), lambda a: np.array([0, 255, 0, 255, 0, 2, 0], np.uint8), x)


def test_all_names_exist():
  from tracegrad.numpy import elementwise
  for name in elementwise.__all__: assert callable(getattr(tnp, name)), name


@pytest.mark.parametrize("n", [0, 1, 2, 3, 5, 8, -1, -2, -3, 16])
def test_integer_powers_are_multiplications(n):
  import tracegrad
  x = np.array([1.5, -2.0, 0.75, 3.0, -0.5], np.float32)
  assert_close(tnp.asarray(x) ** n, (x.astype(np.float64) ** n).astype(np.float32), rtol=ulps(8))
  ops = {u.op.name for u in tracegrad.make_graph(lambda v: v ** n)(x).nodes()}
  assert "POW" not in ops, ops
  if n == 2: assert "mul a a" in str(tracegrad.make_graph(lambda v: v ** 2)(x))


@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16", "int32"])
def test_a_square_by_a_float_two_is_a_multiplication_of_the_same_bits(dtype):
  """x ** 2.0 (a float exponent, as JAX's examples write mu ** 2.) is x * x: the same bits as a correctly rounded
  power (one rounding of the exact square), special values included, and its gradient 2 x, not 2 pow(x, 1.0)."""
  import tracegrad
  x = np.concatenate([np.linspace(-40, 40, 97), [0.0, -0.0, np.inf, -np.inf, np.nan, 1e30, -1e-30]])
  x = cast(x if dtype != "int32" else np.arange(-48, 49), dtype)
  want = (x.astype(np.float64) ** 2.0).astype(np.float32 if dtype == "int32" else x.dtype)
  got = np.asarray(tnp.asarray(x) ** 2.0)
  assert got.dtype == want.dtype and np.array_equal(got, want, equal_nan=True)
  ops = {u.op.name for u in tracegrad.make_graph(lambda v: v ** 2.0)(x).nodes()}
  assert "POW" not in ops, ops
  if dtype == "float32":
    grad = tracegrad.grad(lambda v: (v[:97] ** 2.0).sum())(x)
    np.testing.assert_array_equal(np.asarray(grad)[:97], 2 * x[:97])
