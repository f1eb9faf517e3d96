"""Elementwise functions against numpy, eagerly and traced, over random shapes and dtypes."""
import numpy as np
import pytest
from hypothesis import given, strategies as st

import tracegrad.numpy as tnp

from oracles import FLOATS, INTS, arrays, check, shapes, tol, ulps

UNARY_FLOAT = {  # name -> (domain low, high)
  "exp": (-20, 20), "exp2": (-20, 20), "expm1": (-20, 20), "log": (0.01, 100), "log2": (0.01, 100),
  "log10": (0.01, 100), "log1p": (-0.99, 100), "sqrt": (0, 100), "cbrt": (-100, 100), "sin": (-10, 10),
  "cos": (-10, 10), "tan": (-1.4, 1.4), "arcsin": (-1, 1), "arccos": (-1, 1), "arctan": (-100, 100),
  "sinh": (-10, 10), "cosh": (-10, 10), "tanh": (-30, 30), "arcsinh": (-100, 100), "arccosh": (1, 100),
  "arctanh": (-0.99, 0.99), "reciprocal": (0.1, 10), "square": (-10, 10), "floor": (-10, 10), "ceil": (-10, 10),
  "trunc": (-10, 10), "round": (-10, 10), "abs": (-10, 10), "negative": (-10, 10), "sign": (-10, 10),
}
BINARY = ["add", "subtract", "multiply", "maximum", "minimum", "equal", "not_equal", "less", "less_equal", "greater",
          "greater_equal"]
FLOAT_BINARY = {"true_divide": 1, "arctan2": 0, "hypot": 0, "logaddexp": 0, "copysign": 0, "power": 0}
UNARY_ULPS = {"float32": (168, 84), "float16": (2, 10), "bfloat16": (2.5, 1.25)}   # (rtol, atol) in ulps of each dtype


@pytest.mark.parametrize("name", sorted(UNARY_FLOAT))
@given(data=st.data())
def test_unary_float_functions(name, data):
  lo, hi = UNARY_FLOAT[name]
  dt = data.draw(st.sampled_from(FLOATS))
  x = data.draw(arrays(dt, shapes(), low=lo, high=hi).map(lambda a: np.clip(a, lo, hi).astype(a.dtype)))
  check(getattr(tnp, name), getattr(np, name), x, **tol(dt, *UNARY_ULPS[dt]))


@pytest.mark.parametrize("name", ["sin", "exp", "sqrt", "log1p"])
def test_integer_inputs_to_float_functions_give_float32(name):
  out = getattr(tnp, name)(np.arange(1, 5, dtype=np.int8))
  assert out.dtype == tnp.float32
  np.testing.assert_allclose(np.asarray(out), getattr(np, name)(np.arange(1, 5).astype(np.float32)), rtol=ulps(8))


@pytest.mark.parametrize("name", BINARY)
@given(data=st.data())
def test_binary_functions(name, data):
  dt = data.draw(st.sampled_from(INTS + FLOATS))
  s = data.draw(shapes())
  x, y = data.draw(arrays(dt, s)), data.draw(arrays(dt, s[data.draw(st.integers(0, len(s))):]))
  check(getattr(tnp, name), getattr(np, name), x, y)


@pytest.mark.parametrize("name", sorted(FLOAT_BINARY))
@given(data=st.data())
def test_float_binary_functions(name, data):
  s = data.draw(shapes())
  lo = 0.5 if name == "power" else -10
  x, y = data.draw(arrays("float32", s, low=lo, high=10)), data.draw(arrays("float32", s, low=-3 if name == "power" else -10, high=3 if name == "power" else 10))
  if FLOAT_BINARY[name]: y = np.where(np.abs(y) < 0.1, np.float32(1), y)
  check(getattr(tnp, name), getattr(np, name), x, y, rtol=ulps(84), atol=ulps(8))


@pytest.mark.parametrize("name", ["floor_divide", "remainder", "fmod"])
@given(data=st.data())
def test_integer_division_matches_numpy_including_zero_divisors(name, data):
  dt = data.draw(st.sampled_from(["int8", "int16", "int32", "uint8", "uint32"]))
  s = data.draw(shapes())
  x, y = data.draw(arrays(dt, s, low=-50, high=50)), data.draw(arrays(dt, s, low=-5, high=5))
  check(getattr(tnp, name), getattr(np, name), x, y)


@pytest.mark.parametrize("name", ["floor_divide", "remainder", "fmod"])
@given(data=st.data())
def test_float_division_functions(name, data):
  s = data.draw(shapes())
  x, y = data.draw(arrays("float32", s)), data.draw(arrays("float32", s))
  y = np.where(np.abs(y) < 0.5, np.float32(1.5), y)
  check(getattr(tnp, name), getattr(np, name), x, y, rtol=ulps(84), atol=ulps(84))


@given(data=st.data())
def test_integer_power_is_exact(data):
  dt = data.draw(st.sampled_from(["int8", "int32", "uint8", "uint32"]))
  x, y = data.draw(arrays(dt, (6,), low=0, high=5)), data.draw(arrays(dt, (6,), low=0, high=6))
  check(tnp.power, np.power, x, y)


@pytest.mark.parametrize("name", ["bitwise_and", "bitwise_or", "bitwise_xor"])
@given(data=st.data())
def test_bitwise(name, data):
  dt = data.draw(st.sampled_from(["bool"] + INTS))
  s = data.draw(shapes())
  check(getattr(tnp, name), getattr(np, name), data.draw(arrays(dt, s)), data.draw(arrays(dt, s)))


@given(data=st.data())
def test_shifts_by_any_count(data):
  dt = data.draw(st.sampled_from(["int8", "int32", "uint8", "uint16"]))
  x, s = data.draw(arrays(dt, (8,), low=-100, high=100)), data.draw(arrays(dt, (8,), low=0, high=40))
  bits = np.dtype(x.dtype).itemsize * 8
  want_l = np.where(s >= bits, 0, np.left_shift(x, np.minimum(s, bits - 1))).astype(x.dtype)
  want_r = np.where(s >= bits, np.where(x < 0, -1, 0), np.right_shift(x, np.minimum(s, bits - 1))).astype(x.dtype)
  np.testing.assert_array_equal(np.asarray(tnp.left_shift(x, s)), want_l)
  np.testing.assert_array_equal(np.asarray(tnp.right_shift(x, s)), want_r)


@given(data=st.data())
def test_logical_and_predicates(data):
  dt = data.draw(st.sampled_from(["bool", "int8", "float32"]))
  s = data.draw(shapes())
  x, y = data.draw(arrays(dt, s)), data.draw(arrays(dt, s))
  for name in ["logical_and", "logical_or", "logical_xor"]: check(getattr(tnp, name), getattr(np, name), x, y)
  for name in ["logical_not", "isnan", "isinf", "isfinite"]: check(getattr(tnp, name), getattr(np, name), x)


def test_special_values():
  x = np.array([np.nan, np.inf, -np.inf, -0.0, 0.0, 1e-30, -1e-8, 1e-8, 88.0, -88.0, 1e30], np.float32)
  for name in ["exp", "expm1", "log1p", "tanh", "sign", "abs", "floor", "ceil", "round", "sqrt", "sinh", "cosh",
               "arcsinh", "isnan", "isinf", "isfinite"]:
    check(getattr(tnp, name), getattr(np, name), x, rtol=ulps(168), atol=0)
  check(tnp.maximum, np.maximum, x, x[::-1].copy())
  check(tnp.where, np.where, x > 0, x, -x)
  check(tnp.clip, np.clip, x, -1.0, 1.0)


def test_round_is_half_to_even():
  x = np.array([0.5, 1.5, 2.5, -0.5, -1.5, 2.675], np.float32)
  check(tnp.round, np.round, x)
  check(lambda a: tnp.round(a, 1), lambda a: np.round(a, 1), np.array([1.25, 2.35, -0.15], np.float32), rtol=ulps(8))


def test_weak_scalars_keep_array_dtype():
  assert (tnp.ones(2, tnp.float16) + 1.0).dtype == tnp.float16
  assert (tnp.ones(2, tnp.int8) + 1).dtype == tnp.int8
  assert (tnp.ones(2, tnp.int32) + 1.5).dtype == tnp.float32
  assert (tnp.ones(2, tnp.uint8) * 2).dtype == tnp.uint8
  assert (tnp.ones(2, tnp.int8) + tnp.ones(2, tnp.uint8)).dtype == tnp.int16
  assert (tnp.ones(2, tnp.bfloat16) + tnp.ones(2, tnp.float16)).dtype == tnp.float32
  assert tnp.true_divide(tnp.arange(3), 2).dtype == tnp.float32


def test_bool_arithmetic_follows_jax():
  t, f = np.array([True, False]), np.array([True, True])
  assert tnp.add(t, f).dtype == tnp.bool_ and tnp.add(t, f).tolist() == [True, True]
  assert tnp.multiply(t, f).tolist() == [True, False]
  with pytest.raises(TypeError, match="subtract"): tnp.subtract(t, f)
  with pytest.raises(TypeError, match="negative"): tnp.negative(t)


def test_errors_name_function_and_shapes():
  with pytest.raises(ValueError, match=r"add.*\(2,\).*\(3,\)"): tnp.add(tnp.ones(2), tnp.ones(3))
  with pytest.raises(TypeError, match="add"): tnp.add(tnp.ones(2), "x")
  with pytest.raises(TypeError, match="bitwise_and"): tnp.bitwise_and(tnp.ones(2), tnp.ones(2))
  with pytest.raises(TypeError, match="where"): tnp.where(tnp.ones(2) > 0, 1.0)


def test_operators():
  x, y = tnp.asarray([1.0, 2.0]), tnp.asarray([3.0, 4.0])
  np.testing.assert_array_equal(np.asarray(x + y * 2 - 1), [6, 9])
  np.testing.assert_allclose(np.asarray(-x ** 2 / y), [-1 / 3, -1], rtol=ulps(8))
  np.testing.assert_array_equal(np.asarray(abs(-x)), [1, 2])
  np.testing.assert_array_equal(np.asarray(7 // tnp.asarray([2, -2])), [3, -4])
  np.testing.assert_array_equal(np.asarray(7 % tnp.asarray([2, -2])), [1, -1])
  assert (~tnp.asarray([0, 1])).tolist() == [-1, -2] and (x < y).tolist() == [True, True]
  assert (1 - x).tolist() == [0, -1] and (2 ** tnp.asarray([1, 2])).tolist() == [2, 4]
