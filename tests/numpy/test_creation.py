"""Creation functions against numpy (values, shapes, and JAX's dtypes)."""
import numpy as np
import pytest
from hypothesis import given, strategies as st

import tracegrad.numpy as tnp

from oracles import assert_close, ulps


@pytest.mark.parametrize("fn", ["zeros", "ones", "empty"])
def test_filled(fn):
  assert_close(getattr(tnp, fn)((2, 3)), np.zeros((2, 3), np.float32) + (fn == "ones"), check_dtype=True)
  assert getattr(tnp, fn)(3, tnp.int8).dtype == tnp.int8
  like = getattr(tnp, fn + "_like")(np.ones((2,), np.int16))
  assert like.dtype == tnp.int16 and like.shape == (2,)


def test_full_and_full_like():
  assert_close(tnp.full((2,), 7), np.full((2,), 7, np.int32))
  assert_close(tnp.full((2, 2), 1.5, tnp.float16), np.full((2, 2), 1.5, np.float16))
  assert_close(tnp.full_like(np.ones(3, np.uint8), 4), np.full(3, 4, np.uint8))
  assert_close(tnp.full((2, 3), np.arange(3)), np.full((2, 3), np.arange(3)).astype(np.int32))


@given(st.integers(-5, 5), st.integers(-5, 10), st.integers(1, 3))
def test_arange(a, b, s):
  assert_close(tnp.arange(a, b, s), np.arange(a, b, s).astype(np.int32))
  assert_close(tnp.arange(float(a), b, s / 2), np.arange(float(a), b, s / 2).astype(np.float32),
               rtol=ulps(8), atol=ulps(8))
  assert_close(tnp.arange(b), np.arange(b).astype(np.int32))


@given(st.floats(-10, 10), st.floats(-10, 10), st.integers(0, 20), st.booleans())
def test_linspace(a, b, n, endpoint):
  assert_close(tnp.linspace(a, b, n, endpoint=endpoint), np.linspace(a, b, n, endpoint=endpoint).astype(np.float32),
               rtol=ulps(84), atol=ulps(84))


@given(st.integers(0, 5), st.integers(0, 5), st.integers(-5, 5))
def test_eye_tri(n, m, k):
  assert_close(tnp.eye(n, m, k), np.eye(n, m, k, np.float32))
  assert_close(tnp.tri(n, m, k), np.tri(n, m, k, np.float32))
  x = np.arange(1, n * m + 1, dtype=np.int32).reshape(n, m)
  assert_close(tnp.tril(x, k), np.tril(x, k))
  assert_close(tnp.triu(x, k), np.triu(x, k))
  assert_close(tnp.identity(n), np.identity(n, np.float32))


def test_array_and_asarray():
  assert_close(tnp.array([[1, 2], [3, 4]]), np.array([[1, 2], [3, 4]], np.int32))
  assert_close(tnp.array([1, 2.5]), np.array([1, 2.5], np.float32))
  assert_close(tnp.array([True, False]), np.array([True, False]))
  assert tnp.array(3, ndmin=2).shape == (1, 1)
  assert tnp.asarray([1, 2], dtype="float16").dtype == tnp.float16
  x = tnp.ones(3)
  assert tnp.asarray(x) is x
  assert tnp.array([tnp.ones(2), tnp.zeros(2)]).shape == (2, 2)


def test_creation_errors():
  with pytest.raises(ValueError, match="negative dimensions"): tnp.zeros((2, -1))
  with pytest.raises(TypeError, match="shape"): tnp.zeros(("a",))
  with pytest.raises(ValueError, match="step"): tnp.arange(0, 3, 0)
  with pytest.raises(TypeError, match="dtype"): tnp.zeros(2, dtype="datetime64")


def test_dtypes_are_callable_as_in_jax():
  for name in ["float32", "int32", "uint8", "bool_", "float16", "bfloat16"]:
    d = getattr(tnp, name)
    a = d([1, 0, 2])
    assert a.dtype is d and not a.weak_type
    np.testing.assert_array_equal(np.asarray(a).astype(np.float64), np.asarray([1, 0, 2]).astype(d.np).astype(np.float64))
  assert float(tnp.float32(3.5)) == 3.5 and tnp.float32(3.5).shape == ()
  with pytest.raises(TypeError):
    tnp.float32("x")


@pytest.mark.parametrize("make,error,match", [
  (lambda: tnp.ones((2 ** 31, 2 ** 31)), MemoryError,
   r"ones: an array of shape \(2147483648, 2147483648\) and dtype float32 takes 18446744073709551616 bytes"),
  (lambda: tnp.empty((2 ** 62,)), MemoryError, r"empty: an array of shape \(4611686018427387904,\) and dtype float32"),
  (lambda: tnp.zeros((2 ** 63,)), ValueError, r"zeros: shape \(9223372036854775808,\) has 9223372036854775808 "),
  (lambda: tnp.full((3, 2 ** 62), 1), ValueError, r"full: shape \(3, 4611686018427387904\) has 13835058055282163712 "),
  (lambda: tnp.eye(-2), ValueError, "eye: negative dimensions are not allowed, got N=-2 and M=None"),
  (lambda: tnp.eye(2, -1), ValueError, "eye: negative dimensions are not allowed, got N=2 and M=-1"),
  (lambda: tnp.identity(-1), ValueError, "eye: negative dimensions are not allowed, got N=-1"),
  (lambda: tnp.tri(-1), ValueError, "tri: negative dimensions are not allowed, got N=-1"),
  (lambda: tnp.eye(2.5), TypeError, "eye: N and M must be integers, got 2.5"),
])
def test_impossible_shapes_raise_at_the_call(make, error, match):
  with pytest.raises(error, match=match): make()


def test_a_huge_constant_is_lazy_until_read_whole():
  x = tnp.zeros((2 ** 40,))   # 4 TiB as an array, one number as a graph
  assert x.shape == (2 ** 40,) and float(x.sum()) == 0.0 and x[:3].tolist() == [0.0, 0.0, 0.0]
  for read in (np.asarray, repr, str):
    with pytest.raises(MemoryError, match=r"an array of shape \(1099511627776,\) and dtype float32 takes 4398046511104 "
                                          r"bytes \(4096.0 GiB\), more than this host's"):
      read(x)


def test_scalar_types_called_narrow_64_bits_unless_x64_as_jax():
  from oracles import x64
  jnp = pytest.importorskip("jax.numpy")
  for name in ("int64", "uint64", "float64", "int32", "float16", "bool_"):
    ours, theirs = getattr(tnp, name)(3), getattr(jnp, name)(3)
    assert str(ours.dtype) == str(theirs.dtype) and float(ours) == float(theirs), name
  with x64():
    assert tnp.int64(3).dtype == tnp.int64 and tnp.float64(0.1).dtype == tnp.float64
