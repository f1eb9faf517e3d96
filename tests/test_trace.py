from collections import namedtuple

import numpy as np
import pytest

import tracegrad
import tracegrad.numpy as tnp
from tracegrad import ShapeDtypeStruct, eval_shape, make_graph
from tracegrad.ir import Ops

from oracles import traced


def test_make_graph_prints_like_a_jaxpr():
  g = make_graph(lambda x, y: tnp.sin(x) * y)(tnp.ones(3), tnp.ones(3))
  s = str(g)
  assert s.startswith("{ lambda a:f32[3] b:f32[3]. let") and "sin a" in s and "mul" in s
  assert len(g.inputs) == 2 and len(g.outputs) == 1


def test_graph_over_pytrees_keeps_structure():
  P = namedtuple("P", "w b")
  def f(params, x): return {"out": params.w * x + params.b, "aux": [x]}
  g = make_graph(f)(P(tnp.ones(2), tnp.zeros(2)), tnp.ones(2))
  assert len(g.inputs) == 3 and len(g.outputs) == 2
  out = traced(f, P(np.ones(2, np.float32), np.zeros(2, np.float32)), np.full(2, 3, np.float32))
  np.testing.assert_array_equal(out["out"], [3, 3])


def test_graph_nodes_are_primitives_only():
  g = make_graph(lambda x: tnp.tanh(x).sum())(tnp.ones((2, 3)))
  assert all(isinstance(u.op, Ops) for u in g.nodes())


def test_static_argnums():
  g = make_graph(lambda x, n: x * n, static_argnums=1)(tnp.ones(2), 3)
  assert len(g.inputs) == 1


def test_eval_shape_computes_nothing_and_reports_shapes():
  out = eval_shape(lambda x, y: (x @ y, x.sum(0)), ShapeDtypeStruct((2, 3), tnp.float32), tnp.ones((3, 4)))
  assert out == (ShapeDtypeStruct((2, 4), tnp.float32), ShapeDtypeStruct((3,), tnp.float32))
  assert eval_shape(lambda x: x + 1, 1.0) == ShapeDtypeStruct((), tnp.float32, weak_type=True)


def test_weak_types_survive_tracing():
  assert make_graph(lambda x: x * 2)(3.0).in_weak == (True,)
  out = eval_shape(lambda x: x.astype(tnp.float16) + 2.0, 1.0)
  assert out.dtype == tnp.float16


@pytest.mark.parametrize("convert", [bool, float, int, lambda x: x.item(), np.asarray, lambda x: x.tolist()])
def test_python_control_flow_on_traced_value_explains(convert):
  def f(x):
    convert(x.sum() > 0)
    return x
  with pytest.raises(tracegrad.TracedValueError, match=r"traced.*(lax.cond|static_argnums)") as e:
    make_graph(f)(tnp.ones(3))
  assert isinstance(e.value, TypeError)


def test_if_on_traced_value():
  def f(x):
    if x > 0: return x
    return -x
  with pytest.raises(TypeError, match="static_argnums"): make_graph(f)(1.0)


def test_non_array_output_is_a_type_error():
  with pytest.raises(TypeError, match="output leaf 0.*str"): make_graph(lambda x: "hi")(1.0)


def test_closed_over_concrete_arrays_become_constants():
  c = tnp.arange(3.0)
  out = traced(lambda x: x + c, np.ones(3, np.float32))
  np.testing.assert_array_equal(out, [1, 2, 3])


def test_closing_a_graph_hoists_the_constants_it_computes():
  w = tnp.asarray(np.arange(4.0, dtype=np.float32))   # a buffer
  lazy = tnp.sin(w) * 3   # computed from it, not yet evaluated
  g = make_graph(lambda x: x * lazy + w + 1.0)(tnp.ones(4))
  closed, free = g.closed(hoist=True)
  assert [f.op for f in free] == [lazy.uop.op] and len(closed.inputs) == 2   # lazy is an input; w and 1.0 stay
  out = tracegrad.lax.fori_loop(0, 3, lambda i, c: c + lazy[i], 0.0)
  assert abs(float(out) - float(np.sum(np.sin(np.arange(3.0)) * 3))) < 1e-5


def test_nested_traces_do_not_confuse_inputs():
  def outer(x):
    inner = make_graph(lambda y: y * x)(tnp.ones(3))
    assert len(inner.inputs) == 1
    return x
  make_graph(outer)(tnp.ones(3))


# ---- named composites ----

from tracegrad.trace import composite  # noqa: E402

from oracles import assert_close, check_grads, check_vmap  # noqa: E402


def _norm_rows(x, *, eps=0.0):
  return x / tnp.sqrt((x * x).sum(-1, keepdims=True) + eps)


def _split(x):
  return x.sum(-1), x.max(-1)


def test_composite_prints_by_name_and_runs_as_its_body():
  f = lambda x: composite("norm_rows", _norm_rows, x, eps=1e-6) * 2.0
  x = np.random.default_rng(0).normal(size=(3, 4)).astype(np.float32)
  s = str(make_graph(f)(x))
  assert "norm_rows a" in s and "sqrt" not in s and "proj" not in s, s
  want = np.asarray(_norm_rows(tnp.asarray(x), eps=1e-6)) * 2
  for got in (f(tnp.asarray(x)), tracegrad.jit(f)(x)):
    assert_close(got, want)


def test_composite_with_several_results_binds_each():
  s = str(make_graph(lambda x: composite("split", _split, x))(tnp.ones((2, 3))))
  assert "b:f32[2] c:f32[2] = split a" in s, s
  a, b = tracegrad.jit(lambda x: composite("split", _split, x))(tnp.arange(6.0).reshape(2, 3))
  assert_close(a, np.array([3.0, 12.0], np.float32)) and assert_close(b, np.array([2.0, 5.0], np.float32))


def test_composite_is_shared_and_keeps_closures():
  g = make_graph(lambda x: composite("n", _norm_rows, x) + composite("n", _norm_rows, x))(tnp.ones((2, 2)))
  assert sum(u.op is Ops.COMPOSITE for u in g.nodes()) == 1   # equal calls share one node

  def f(x, y): return composite("scaled", lambda v: v * y, x)   # closes over a traced value
  g = make_graph(f)(tnp.ones(3), tnp.ones(3))
  node, = [u for u in g.nodes() if u.op is Ops.COMPOSITE]
  assert len(node.src) == 2
  assert_close(tracegrad.jit(f)(tnp.arange(3.0), tnp.full(3, 2.0)), np.array([0.0, 2.0, 4.0], np.float32))


def test_composite_under_transforms():
  x = np.random.default_rng(1).normal(size=(3, 4))
  f = lambda x: composite("norm_rows", _norm_rows, x, eps=0.5)
  check_grads(f, (x,), order=2)
  check_vmap(f, (x.astype(np.float32),))
  g = make_graph(tracegrad.vmap(f))(tnp.ones((2, 3, 4)))
  assert "norm_rows a" in str(g)   # vmap keeps the composite, batching its body
  h = make_graph(tracegrad.grad(lambda x: f(x).sum()))(tnp.ones((3, 4)))
  assert Ops.SQRT in {u.op for u in h.nodes()}   # differentiation expands it


def test_composite_transpose_rules_replace_the_bodys_derivative_in_reverse_mode():
  """A rule given for an argument is its cotangent in reverse mode; an argument without one, and forward mode, keep
  the body's derivative. The rules need one entry per argument and a body closing over no traced value."""
  def rule(ct, x, y, *, k): return ct * k * 10.0   # deliberately not the body's derivative, to see it used
  f = lambda x, y: composite("scaled", lambda x, y, *, k: x * k + y * y, x, y, transposes=(rule, None), k=2.0)
  x, y = np.ones(3, np.float32), np.arange(3.0, dtype=np.float32)
  gx, gy = tracegrad.grad(lambda x, y: f(x, y).sum(), argnums=(0, 1))(x, y)
  assert_close(gx, np.full(3, 20.0, np.float32))
  assert_close(gy, 2 * y)
  assert_close(tracegrad.jvp(lambda x: f(x, y), (x,), (np.ones(3, np.float32),))[1], np.full(3, 2.0, np.float32))
  with pytest.raises(ValueError, match=r"composite: scaled has 2 arguments and 1 transposes"):
    make_graph(lambda x, y: composite("scaled", lambda x, y: x + y, x, y, transposes=(rule,)))(x, y)
  with pytest.raises(ValueError, match=r"closes over 1"):
    make_graph(lambda x, y: composite("scaled", lambda v: v * y, x, transposes=(rule,)))(x, y)


def test_composite_on_concrete_arguments_just_runs():
  calls = []
  out = composite("n", lambda v: calls.append(1) or v + 1, tnp.ones(2))
  assert calls == [1] and np.asarray(out).tolist() == [2.0, 2.0]


def test_composite_with_an_unhashable_static_argument_is_traced_afresh():
  f = lambda x: composite("scaled", lambda v, *, w: v * w[0], x, w=[3.0])
  assert_close(tracegrad.jit(f)(tnp.ones(2)), np.full(2, 3.0, np.float32))
