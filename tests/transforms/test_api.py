"""Public API details of the transforms: keyword arguments under vmap, allow_int, weak types, composition in jit."""
import numpy as np
import pytest

import tracegrad as tg
import tracegrad.numpy as tnp
from oracles import ulps


def test_vmap_maps_keyword_arguments_on_axis_0():
  f = tg.vmap(lambda x, *, y: x * y, in_axes=(None,))
  out = f(tnp.asarray([1.0, 2.0]), y=tnp.asarray([[1.0, 1.0], [3.0, 3.0], [5.0, 5.0]]))
  np.testing.assert_array_equal(np.asarray(out), [[1, 2], [3, 6], [5, 10]])
  with pytest.raises(ValueError, match="y has size 4"):
    tg.vmap(lambda x, y=None: x + y)(tnp.ones(3), y=tnp.ones(4))


def test_grad_allow_int_gives_a_zero_gradient_for_integer_inputs():
  gx, gn = tg.grad(lambda x, n: x * n, argnums=(0, 1), allow_int=True)(2.0, 3)
  assert float(gx) == 3.0 and int(gn) == 0
  with pytest.raises(TypeError, match="allow_int"):
    tg.grad(lambda x, n: x * n, argnums=1)(2.0, 3)


def test_gradients_keep_the_weak_type_of_python_scalars():
  assert tg.grad(lambda x: x * x)(3.0).weak_type
  assert not tg.grad(lambda x: x * x)(tnp.asarray(3.0, dtype=tnp.float32)).weak_type


def test_jit_caches_by_signature_and_inlines_in_other_transforms():
  calls = []

  def f(x):
    calls.append(x.shape)
    return (tnp.sin(x) * x).sum()

  jf = tg.jit(f)
  jf(tnp.ones(3)); jf(tnp.ones(3) * 2); jf(tnp.ones(4))
  assert calls == [(3,), (4,)]
  g = tg.grad(jf)(tnp.asarray([0.5, 1.0]))
  np.testing.assert_allclose(np.asarray(g), np.sin([0.5, 1.0]) + np.asarray([0.5, 1.0]) * np.cos([0.5, 1.0]),
                             rtol=ulps(8))
  assert tg.jit(tg.vmap(tg.grad(f)))(tnp.ones((2, 3))).shape == (2, 3)


def test_checkpoint_stores_nothing_for_the_backward_pass():
  from tracegrad.ir import Ops
  f = tg.checkpoint(lambda x: tnp.sin(tnp.sin(x)))
  g = tg.make_graph(tg.value_and_grad(f))(1.0)
  top = {u.op for u in g.nodes()}
  assert Ops.REMAT in top and Ops.SIN not in top  # sines run only inside the recomputed sub-graphs
