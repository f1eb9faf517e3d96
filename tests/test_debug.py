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


CASES = {   # name: program over (lib, lax, np module); each prints through debug.print
  "vmap": lambda t, lax, n: t.vmap(lambda x: (t.debug.print("x={x}", x=x), x * 2)[1])(n.arange(3.0)),
  "jit(vmap)": lambda t, lax, n: t.jit(t.vmap(lambda x: (t.debug.print("x={}", x), x)[1]))(n.arange(2.0)),
  "grad(vmap)": lambda t, lax, n: t.grad(lambda x: t.vmap(lambda y: (t.debug.print("y {}", y), y * y)[1])(x).sum())(
    n.arange(2.0)),
  "scan": lambda t, lax, n: lax.scan(lambda c, x: (t.debug.print("c={} x={}", c, x), (c * x, c))[1], 1.0,
                                     n.arange(1.0, 4.0)),
  "scan reversed under jit": lambda t, lax, n: t.jit(lambda xs: lax.scan(
    lambda c, x: (t.debug.print("c={} x={}", c, x), (c * x, c))[1], 1.0, xs, reverse=True))(n.arange(1.0, 4.0)),
  "grad(scan)": lambda t, lax, n: t.grad(lambda xs: lax.scan(
    lambda c, x: (t.debug.print("c={}", c), (c * x, c))[1], 1.0, xs)[0])(n.arange(1.0, 3.0)),
  "fori_loop": lambda t, lax, n: lax.fori_loop(0, 3, lambda i, c: (t.debug.print("i={}", i), c + i)[1], 0),
  "jit(cond)": lambda t, lax, n: t.jit(lambda p, x: lax.cond(p, lambda x: (t.debug.print("T {}", x), x)[1],
                                                             lambda x: (t.debug.print("F {}", x), -x)[1], x))(
    False, 2.0),
  "while_loop": lambda t, lax, n: lax.while_loop(lambda c: c < 10, lambda c: (t.debug.print("c={}", c), c * 2)[1], 1),
  "jit(fori_loop) with traced bounds": lambda t, lax, n: t.jit(lambda k: lax.fori_loop(
    0, k, lambda i, c: (t.debug.print("i={} c={}", i, c), c + i)[1], 0))(3),
  "jvp(while_loop)": lambda t, lax, n: t.jvp(lambda x: lax.while_loop(
    lambda c: c < 10.0, lambda c: (t.debug.print("c={}", c), c * 2)[1], x), (1.5,), (1.0,)),
  "switch clamps": lambda t, lax, n: lax.switch(5, [lambda x: (t.debug.print("b0 {}", x), x)[1],
                                                    lambda x: (t.debug.print("b1 {}", x), x)[1]], 3.0),
}


@pytest.mark.parametrize("name", list(CASES))
def test_print_inside_vmap_and_control_flow_matches_jax(capsys, name):
  jax = pytest.importorskip("jax")
  mine = CASES[name](tracegrad, tracegrad.lax, tnp)
  printed = capsys.readouterr().out
  theirs = CASES[name](jax, jax.lax, jax.numpy)
  jax.effects_barrier()
  assert printed == capsys.readouterr().out and printed
  for a, b in zip(tracegrad.tree.leaves(mine), jax.tree.leaves(theirs)):
    np.testing.assert_allclose(np.asarray(a), np.asarray(b))


def test_print_inside_cond_under_vmap_runs_for_the_branch_each_element_takes(capsys):
  cond = tracegrad.lax.cond
  out = tracegrad.vmap(lambda p, x: cond(p, lambda x: (debug.print("T {}", x), x)[1],
                                         lambda x: (debug.print("F {}", x), -x)[1], x))(
    tnp.asarray([True, False]), tnp.asarray([1.0, 2.0]))
  assert capsys.readouterr().out == "F 2.0\nT 1.0\n"   # branch by branch, each for its elements
  assert np.asarray(out).tolist() == [1.0, -2.0]
