"""The remaining jax.numpy functions (misc.py, window_functions.py) against jax.numpy and numpy."""
import numpy as np
import pytest

import tracegrad
import tracegrad.numpy as tnp
from jnp_oracle import check, jax, jnp, same

X = np.arange(12).reshape(3, 4)
XF = np.linspace(-3, 3, 12).astype(np.float32).reshape(3, 4)


def test_edit():
  check("append", X, X, axis=0, np_too=True)
  check("append", X, np.array([1, 2]), np_too=True)
  check("insert", X, 1, np.array(9), np_too=True)
  check("insert", X, 1, np.array([5, 6, 7, 8]), axis=0, np_too=True)
  check("insert", X, slice(0, 2), np.array([5]), axis=1, np_too=True)
  check("delete", X, 1, np_too=True)
  check("delete", X, np.array([0, 2, 2]), np_too=True)
  check("delete", X, slice(0, 3, 2), axis=1, np_too=True)
  same(tracegrad.jit(lambda i: tnp.delete(X, i, axis=0, assume_unique_indices=True))(np.array([1])),
       np.delete(X, [1], axis=0), dtype=False)
  check("resize", X, (5, 3), np_too=True)
  check("rollaxis", np.zeros((2, 3, 4)), 2, 1, np_too=True)
  check("trim_zeros", np.array([0, 0, 1, 0, 2, 0]), np_too=True)
  check("trim_zeros", np.array([0, 0, 1, 0, 2, 0]), "b", np_too=True)
  check("block", [[np.ones((2, 2)), np.zeros((2, 1))], [np.full((1, 3), 2.0)]])


def test_constructors():
  check("vander", np.array([1.0, 2, 3], np.float32), np_too=True)
  check("vander", np.array([1, 2, 3]), 4, increasing=True, np_too=True)
  check("logspace", 0.0, 3.0, 5, rtol=1e-4)
  check("logspace", 0, 3, 4, base=2.0, endpoint=False, rtol=1e-4)
  check("geomspace", 1.0, 1000.0, 4, rtol=1e-4)
  check("geomspace", -1.0, -1000.0, 4, rtol=1e-4)
  check("fromfunction", lambda i, j: i * 10 + j, (2, 3))
  same(tnp.frombuffer(b"\x01\x02\x03\x04", dtype=np.uint16), jnp.frombuffer(b"\x01\x02\x03\x04", dtype=np.uint16))
  same(tnp.fromstring("1 2", dtype=int, sep=" "), jnp.fromstring("1 2", dtype=int, sep=" "))
  with pytest.raises(NotImplementedError, match="fromiter"): tnp.fromiter(iter([1]), int)


def test_numeric():
  check("gcd", X, 6, np_too=True, jit=True)
  check("lcm", X, 4, np_too=True)
  check("ldexp", XF, X, np_too=True)
  check("frexp", XF, np_too=True)
  check("modf", XF, np_too=True)
  check("spacing", XF, np_too=True)
  check("i0", XF * 3, np_too=True, rtol=1e-5)
  check("bitwise_count", X - 5)
  same(tracegrad.grad(lambda x: tnp.i0(x).sum())(XF[0]), jax.grad(lambda x: jnp.i0(x).sum())(XF[0]), rtol=1e-4)


def test_bits():
  check("packbits", X % 2 == 0, np_too=True)
  check("packbits", X, axis=1, bitorder="little", np_too=True)
  check("unpackbits", X.astype(np.uint8), np_too=True)
  check("unpackbits", X.astype(np.uint8), axis=1, count=5, np_too=True)


def test_ordering():
  k1, k2 = np.array([3, 1, 2, 1, 3]), np.array([0, 1, 0, 1, 1])
  check("lexsort", (k1, k2), np_too=True)
  check("lexsort", (X % 2, X % 3), axis=0, np_too=True)
  v = np.array([3, 1, 2, 5, 4, 2, 5, 1])
  check("partition", v, 3)
  check("argpartition", v, 3)
  check("partition", X[::-1], 1, axis=0)
  check("argpartition", XF[::-1], -2, axis=1, jit=True)


def test_apply_and_vectorize():
  check("apply_along_axis", lambda v: v * v.sum(), 1, XF)
  check("apply_along_axis", lambda v: v.max(), 0, XF)
  same(tnp.apply_over_axes(tnp.sum, XF, [0, 1]), jnp.apply_over_axes(jnp.sum, XF, [0, 1]))
  f = lambda a, b: a * b + 1  # noqa: E731
  same(tnp.vectorize(f)(X, np.array([1, 2, 3, 4])), jnp.vectorize(f)(X, np.array([1, 2, 3, 4])))


def test_products():
  check("matvec", XF, np.ones(4, np.float32))
  check("vecmat", np.ones(3, np.float32), XF)
  a, b = np.array([1.0, 2, 3, 4], np.float32), np.array([0.0, 1, 0.5], np.float32)
  for mode in ("full", "same", "valid"):
    check("convolve", a, b, mode=mode, np_too=True)
    check("correlate", a, b, mode=mode, np_too=True)
    check("correlate", b, a, mode=mode, np_too=True)
  check("convolve", np.array([1, 2, 3]), np.array([1, 1]), np_too=True, jit=True)


@pytest.mark.parametrize("name", ["bartlett", "blackman", "hamming", "hanning"])
def test_windows(name):
  check(name, 7, np_too=True, atol=1e-6)
  check(name, 1, np_too=True)


def test_kaiser_and_names(tmp_path):
  check("kaiser", 6, 3.0, np_too=True, rtol=1e-5)
  assert tnp.isscalar(1.0) and tnp.isscalar(tnp.array(1)) and not tnp.isscalar(np.ones(2))
  assert (tnp.int_, tnp.uint, tnp.float_, tnp.single, tnp.double) == (tnp.int64, tnp.uint64, tnp.float64, tnp.float32,
                                                                       tnp.float64)
  assert tnp.euler_gamma == jnp.euler_gamma and tnp.iterable([1]) and tnp.object_ is jnp.object_
  tnp.save(tmp_path / "x.npy", tnp.arange(3))
  same(tnp.load(tmp_path / "x.npy"), jnp.arange(3))
