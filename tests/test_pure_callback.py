"""pure_callback inside compiled programs (jit), vmap (each vmap_method), control flow and custom derivatives,
against jax.pure_callback; its errors."""
import numpy as np
import pytest

import tracegrad
import tracegrad.numpy as tnp

jax = pytest.importorskip("jax")


def _sin(lib, x): return lib.pure_callback(np.sin, lib.ShapeDtypeStruct(x.shape, x.dtype), x)


def _add(method):
  def f(lib, x, y):
    return lib.pure_callback(lambda a, b: (_SEEN.append((a.shape, b.shape)), a + b)[1],
                             lib.ShapeDtypeStruct(x.shape, x.dtype), x, y, vmap_method=method)
  return f


_SEEN: list = []


def _scan(lib, xs):
  def body(c, x):
    y = lib.pure_callback(lambda a, b: (a * b).astype(np.float32), lib.ShapeDtypeStruct((), np.float32), c, x)
    return c + y, y
  return lib.lax.scan(body, 1.0, xs)


def _while(lib, x):
  return lib.lax.while_loop(lambda c: c < 100, lambda c: lib.pure_callback(
    lambda a: a * 3, lib.ShapeDtypeStruct((), np.int32), c), x)


CASES = {   # name: (program over the library, arguments as numpy arrays)
  "jit": (lambda lib, x: lib.jit(lambda x: _sin(lib, x) * 2 + 1)(x), (np.arange(3.0, dtype=np.float32),)),
  "vmap sequential": (lambda lib, x: lib.jit(lib.vmap(lambda v: lib.pure_callback(
    np.sin, lib.ShapeDtypeStruct(v.shape, v.dtype), v, vmap_method="sequential")))(x), (np.ones((2, 3), np.float32),)),
  "vmap expand_dims": (lambda lib, x, y: lib.vmap(lambda a, b: _add("expand_dims")(lib, a, b), in_axes=(0, None))(x, y),
                       (np.ones((2, 3), np.float32), np.arange(3.0, dtype=np.float32))),
  "vmap broadcast_all": (lambda lib, x, y: lib.jit(lib.vmap(lambda a, b: _add("broadcast_all")(lib, a, b),
                                                            in_axes=(0, None)))(x, y),
                         (np.ones((2, 3), np.float32), np.arange(3.0, dtype=np.float32))),
  "scan": (lambda lib, xs: lib.jit(lambda xs: _scan(lib, xs))(xs), (np.arange(1.0, 4.0, dtype=np.float32),)),
  "while_loop": (_while, (np.int32(1),)),
  "keywords and a static leaf": (lambda lib, x: lib.jit(lambda x: lib.pure_callback(
    lambda a, k: a * k, lib.ShapeDtypeStruct((2,), np.float32), x, k=2))(x), (np.ones(2, np.float32),)),
}


@pytest.mark.parametrize("name", list(CASES))
def test_matches_jax(name):
  prog, args = CASES[name]
  _SEEN.clear()
  mine = prog(tracegrad, *args)
  seen, _SEEN[:] = list(_SEEN), []
  theirs = prog(jax, *args)
  assert seen == _SEEN   # the shapes each call received (one call per element, or the batch at once)
  for a, b in zip(tracegrad.tree.leaves(mine), jax.tree.leaves(theirs)):
    assert np.asarray(a).dtype == np.asarray(b).dtype
    np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-6)


def test_pytree_results():
  spec = {"s": tracegrad.ShapeDtypeStruct((), tnp.float32), "m": tracegrad.ShapeDtypeStruct((), tnp.float32)}
  out = tracegrad.jit(lambda x: tracegrad.pure_callback(lambda a: {"s": a.sum(), "m": a.max()}, spec, x))(
    tnp.arange(4.0))
  assert float(out["s"]) == 6.0 and float(out["m"]) == 3.0


def test_derivative_through_custom_jvp_and_none_without():
  @tracegrad.custom_jvp
  def s(x): return _sin(tracegrad, x)
  s.defjvp(lambda p, t: (s(p[0]), tnp.cos(p[0]) * t[0]))
  assert abs(float(tracegrad.jit(tracegrad.grad(s))(1.0)) - np.cos(1.0)) < 1e-6
  for g in (tracegrad.grad, lambda f: tracegrad.jit(tracegrad.grad(f))):
    with pytest.raises(ValueError, match="pure_callback.*no derivative.*custom_jvp"):
      g(lambda x: _sin(tracegrad, x))(1.0)


def test_errors():
  with pytest.raises(NotImplementedError, match="vmap_method=None"):
    tracegrad.vmap(lambda x: _sin(tracegrad, x))(tnp.ones(2))
  with pytest.raises(ValueError, match="vmap_method must be one of"):
    tracegrad.pure_callback(np.sin, tracegrad.ShapeDtypeStruct((), tnp.float32), 1.0, vmap_method="loop")
  spec = tracegrad.ShapeDtypeStruct((), tnp.float32)
  with pytest.raises(ZeroDivisionError):   # raised in the caller once the compiled program returns
    tracegrad.jit(lambda x: tracegrad.pure_callback(lambda a: 1 // 0, spec, x))(1.0)
  with pytest.raises(RuntimeError, match="result #0 should have shape"):
    tracegrad.jit(lambda x: tracegrad.pure_callback(lambda a: np.zeros(3, np.float32), spec, x))(1.0)
  f = tracegrad.jit(lambda x: tracegrad.pure_callback(np.sin, tracegrad.ShapeDtypeStruct((2,), tnp.float32), x))
  np.testing.assert_allclose(np.asarray(f(tnp.ones(2))), np.sin(np.ones(2)), rtol=1e-6)   # usable after an error
