"""Python control flow on values under grad, jvp, vjp and their compositions outside jit: the transforms run on the
argument's values, so an `if` or `while` on them takes its branch, as in JAX; under jit and vmap it stays an error.
Each program runs on tracegrad and on JAX."""
import numpy as np
import pytest

import tracegrad as tg
import tracegrad.numpy as tnp


def _libs():
  libs = [(tg, tnp)]
  try:
    import jax
    import jax.numpy as jnp
    libs.append((jax, jnp))
  except ImportError:
    pass
  return libs


def _programs(np_):
  def piecewise(x):
    if x < 3: return 3.0 * x ** 2
    return -4 * x

  def doubling(x):
    y = x
    while y < 10: y = y * 2
    return y

  def caught(x):
    try:
      if x < 3: return 2 * x ** 3
      raise ValueError
    except ValueError:
      return np_.pi * x

  return piecewise, doubling, caught


@pytest.mark.parametrize("x", [1.0, 2.0, 4.0])
def test_derivatives_of_python_branches_match_jax(x):
  results = []
  for m, np_ in _libs():
    piecewise, doubling, caught = _programs(np_)
    row = [m.grad(piecewise)(x), m.jvp(piecewise, (x,), (1.0,))[1], m.vjp(caught, x)[1](1.0)[0],
           m.grad(doubling)(x), m.hessian(piecewise)(x), m.jacfwd(piecewise)(x), m.grad(m.grad(caught))(x)]
    results.append([float(v) for v in row])
  for other in results[1:]: np.testing.assert_allclose(results[0], other, rtol=1e-6)
  assert results[0][0] == (6 * x if x < 3 else -4.0)


def test_branches_on_traced_values_stay_errors_under_jit_and_vmap():
  piecewise, _, _ = _programs(tnp)
  with pytest.raises(TypeError, match="traced"):
    tg.jit(tg.grad(piecewise))(2.0)
  with pytest.raises(TypeError, match="traced"):
    tg.vmap(tg.grad(piecewise))(tnp.asarray([2.0, 4.0]))


@pytest.mark.parametrize("make", ["custom_jvp", "custom_vjp"])
def test_custom_rule_functions_called_outside_transforms_run_as_written(make):
  for m, np_ in _libs():
    f = getattr(m, make)(lambda x, y: {"a": x, "b": y})
    if make == "custom_jvp": f.defjvp(lambda p, t: (f(*p), f(*t)))
    else: f.defvjp(lambda x, y: (f(x, y), None), lambda _, g: (g["a"], g["b"]))
    assert f(1.0, 2.0) == {"a": 1.0, "b": 2.0}   # Python floats stay Python floats
