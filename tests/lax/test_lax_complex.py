"""jax.lax's elementwise functions on complex operands (the compositions of lax/complex_math.py), against jax.lax in
value and dtype, eagerly and compiled, and the TypeErrors of those jax.lax keeps to real operands."""
import numpy as np
import pytest

import tracegrad
from tracegrad import lax

jax = pytest.importorskip("jax")

EPS32 = float(np.finfo(np.float32).eps)
Z = np.array([1 + 2j, -0.5 + 0.3j, 2.5 - 1.5j, -3 - 0.25j], np.complex64)
UNARY = ["exp", "exp2", "expm1", "log", "log1p", "sin", "cos", "tan", "sinh", "cosh", "tanh", "asin", "acos", "atan",
         "asinh", "acosh", "atanh", "sqrt", "rsqrt", "reciprocal", "logistic", "abs", "sign", "neg", "conj", "real",
         "imag", "square"]
BINARY = [("add", ()), ("sub", ()), ("mul", ()), ("div", ()), ("pow", ()), ("eq", ()), ("ne", ())]


def close(got, want, err):
  g, w = np.asarray(got), np.asarray(want)
  assert g.dtype == w.dtype and g.shape == w.shape, f"{err}: {g.dtype}{g.shape} != {w.dtype}{w.shape}"
  np.testing.assert_allclose(g, w, rtol=64 * EPS32, atol=64 * EPS32, err_msg=err)


def test_unary_and_binary_as_jax():
  f = tracegrad.jit(lambda z, w: [getattr(lax, n)(z) for n in UNARY] + [getattr(lax, n)(z, w) for n, _ in BINARY]
                    + [lax.integer_pow(z, 3), lax.integer_pow(z, -2), lax.pow(z, np.int32(3)),
                       lax.complex(lax.real(z), lax.imag(w))])
  w = Z[::-1].copy()
  want = ([getattr(jax.lax, n)(Z) for n in UNARY] + [getattr(jax.lax, n)(Z, w) for n, _ in BINARY]
          + [jax.lax.integer_pow(Z, 3), jax.lax.integer_pow(Z, -2), jax.lax.pow(Z, np.int32(3)),
             jax.lax.complex(jax.lax.real(Z), jax.lax.imag(w))])
  eager = ([getattr(lax, n)(Z) for n in UNARY] + [getattr(lax, n)(Z, w) for n, _ in BINARY]
           + [lax.integer_pow(Z, 3), lax.integer_pow(Z, -2), lax.pow(Z, np.int32(3)),
              lax.complex(lax.real(Z), lax.imag(w))])
  names = UNARY + [n for n, _ in BINARY] + ["integer_pow 3", "integer_pow -2", "pow int", "complex"]
  for name, g, gj, wv in zip(names, eager, f(Z, w), want):
    close(g, wv, name)
    close(gj, wv, f"jit {name}")


@pytest.mark.parametrize("name", ["lt", "le", "gt", "ge", "rem", "bitwise_and"])
def test_binary_real_only(name):
  with pytest.raises(TypeError, match="complex64"):
    getattr(jax.lax, name)(Z, Z)
  with pytest.raises(TypeError, match="complex64"):
    getattr(lax, name)(Z, Z)


@pytest.mark.parametrize("name", ["cbrt", "is_finite", "floor", "ceil", "round"])
def test_unary_real_only(name):
  with pytest.raises(TypeError, match="complex64"):
    getattr(jax.lax, name)(Z)
  with pytest.raises(TypeError, match="complex64"):
    getattr(lax, name)(Z)


def test_grad_through_lax_as_jax():
  f = lambda l, z: l.abs(l.sin(z) * l.exp(z)) + l.real(l.sqrt(z) * l.log(z))
  close(tracegrad.grad(lambda z: f(lax, z))(Z[0]), jax.grad(lambda z: f(jax.lax, z))(Z[0]), "grad")
  g = lambda l, z: l.tanh(z) * l.atan(z)
  close(tracegrad.grad(lambda z: g(lax, z), holomorphic=True)(Z[1]),
        jax.grad(lambda z: g(jax.lax, z), holomorphic=True)(Z[1]), "holomorphic grad")
