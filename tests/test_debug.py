"""tracegrad.debug: print and callback eagerly, under jit (every call), grad and their compositions."""
import numpy as np
import pytest

import tracegrad
import tracegrad.numpy as tnp
from tracegrad import debug


def f(x):
  debug.print("x={x} s={}", tnp.sum(x), x=x)
  return tnp.sum(tnp.sin(x) ** 2)


X = np.arange(3.0, dtype=np.float32)


def test_print_matches_jax_text(capsys):
  jax = pytest.importorskip("jax")
  debug.print("a {} b {k}", tnp.arange(3.0), k=tnp.float32(2.5))
  mine = capsys.readouterr().out
  jax.debug.print("a {} b {k}", jax.numpy.arange(3.0), k=jax.numpy.float32(2.5))
  jax.effects_barrier()
  assert mine == capsys.readouterr().out == "a [0. 1. 2.] b 2.5\n"


def test_print_under_jit_runs_on_every_call(capsys):
  jf = tracegrad.jit(f)
  jf(X)
  jf(X + 1)
  assert capsys.readouterr().out == "x=[0. 1. 2.] s=3.0\nx=[1. 2. 3.] s=6.0\n"


@pytest.mark.parametrize("wrap", [lambda g: tracegrad.grad(g), lambda g: tracegrad.jit(tracegrad.grad(g)),
                                  lambda g: tracegrad.grad(tracegrad.jit(g))], ids=["grad", "jit(grad)", "grad(jit)"])
def test_print_under_grad_shows_primals_and_leaves_the_gradient(capsys, wrap):
  got = wrap(f)(X)
  assert capsys.readouterr().out == "x=[0. 1. 2.] s=3.0\n"
  np.testing.assert_allclose(np.asarray(got), np.sin(2 * X), rtol=1e-5, atol=1e-6)


def test_callback_gets_arrays_and_static_values_in_order(capsys):
  seen = []

  def g(a):
    debug.callback(lambda v, tag: seen.append((tag, np.asarray(v).tolist())), a, tag="first")
    debug.callback(lambda v, tag: seen.append((tag, np.asarray(v).tolist())), a * 2, tag="second")
    return a + 1

  out = tracegrad.jit(g)(tnp.ones(2))
  assert seen == [("first", [1.0, 1.0]), ("second", [2.0, 2.0])]
  assert np.asarray(out).tolist() == [2.0, 2.0]
  nested = tracegrad.jit(lambda a: tracegrad.jit(g)(a) * 3)(tnp.zeros(1))
  assert seen[2:] == [("first", [0.0]), ("second", [0.0])] and float(nested[0]) == 3.0


def test_make_jaxpr_does_not_run_callbacks(capsys):
  tracegrad.make_jaxpr(f)(X)
  tracegrad.eval_shape(f, X)
  assert capsys.readouterr().out == ""


def test_bad_arguments():
  with pytest.raises(TypeError, match="debug.callback: fn must be callable"): debug.callback(3, 1.0)
  with pytest.raises(TypeError, match="debug.print: fmt"): debug.print(3)
