"""Top-level API as JAX's: make_jaxpr, jacobian, device counts, make_mesh, check_grads, defjvps, config."""
import numpy as np
import pytest

import tracegrad
import tracegrad.numpy as tnp
from tracegrad.sharding import AxisType, Mesh, NamedSharding, PartitionSpec as P

jax = pytest.importorskip("jax")


def test_make_jaxpr_prints_and_has_avals():
  jx = tracegrad.make_jaxpr(lambda x, y: tnp.sin(x) * y)(tnp.ones(3), 2.0)
  text = str(jx)
  assert text.startswith("{ lambda") and "sin" in text and "mul" in text
  assert [(a.shape, a.dtype.name) for a in jx.in_avals] == [((3,), "float32"), ((), "float32")]
  assert [(a.shape, a.dtype.name) for a in jx.out_avals] == [((3,), "float32")]
  assert jx.jaxpr is jx and jx.consts == [] and len(jx.eqns) >= 2


def test_make_jaxpr_static_argnums_and_return_shape():
  jx, shape = tracegrad.make_jaxpr(lambda x, n: x.reshape(n, -1), static_argnums=1, return_shape=True)(tnp.ones(6), 2)
  assert shape == tracegrad.ShapeDtypeStruct((2, 3), tnp.float32)
  assert "reshape" in str(jx)


def test_jacobian_is_jacrev_and_matches_jax():
  f = lambda x: x ** 2 * 3.0
  x = np.array([1.0, 2.0], np.float32)
  assert tracegrad.jacobian is tracegrad.jacrev
  np.testing.assert_allclose(np.asarray(tracegrad.jacobian(f)(x)), np.asarray(jax.jacobian(f)(x)))


def test_device_counts_and_make_mesh():
  assert tracegrad.device_count() == len(tracegrad.devices()) >= 1
  assert tracegrad.local_device_count() == len(tracegrad.local_devices())
  mesh = tracegrad.make_mesh((1,), ("data",), axis_types=(AxisType.Explicit,))
  assert isinstance(mesh, Mesh) and mesh.shape == {"data": 1} and mesh.axis_types == (AxisType.Explicit,)
  assert tracegrad.NamedSharding is NamedSharding
  x = tracegrad.device_put(tnp.ones((4, 2)), NamedSharding(mesh, P("data")))
  assert float(tracegrad.jit(lambda a: a.sum())(x)) == 8.0
  assert [t.name for t in AxisType] == [t.name for t in jax.sharding.AxisType]


def test_make_mesh_bad_input():
  with pytest.raises(ValueError, match="make_mesh: the mesh .* needs"):
    tracegrad.make_mesh((tracegrad.device_count() + 1,), ("i",))
  with pytest.raises(ValueError, match="make_mesh: 1 axis_shapes"): tracegrad.make_mesh((1,), ("i", "j"))
  with pytest.raises(ValueError, match="axis_types"): tracegrad.make_mesh((1,), ("i",), axis_types=("auto",))


def test_check_grads_passes_for_correct_rules():
  x = tnp.array([0.3, -1.2, 2.0])
  tracegrad.test_util.check_grads(lambda a: tnp.sum(tnp.tanh(a) * a), (x,), order=2)
  tracegrad.test_util.check_grads(lambda a, b: a * tnp.exp(b), (x, x), order=1, modes=("fwd",))


def test_check_grads_raises_for_a_wrong_custom_rule():
  @tracegrad.custom_jvp
  def f(x): return tnp.sin(x)

  @f.defjvp
  def f_jvp(primals, tangents): return f(*primals), 3.0 * tangents[0]   # wrong: should be cos(x)

  with pytest.raises(AssertionError, match="check_grads: JVP"):
    tracegrad.test_util.check_grads(f, (tnp.float32(0.5),), order=1, modes=("fwd",))
  with pytest.raises(AssertionError, match="check_grads: VJP"):
    tracegrad.test_util.check_grads(f, (tnp.float32(0.5),), order=1, modes=("rev",))
  with pytest.raises(ValueError, match="check_grads: order"): tracegrad.test_util.check_grads(f, (1.0,), order=0)


def test_defjvps_matches_jax():
  def make(lib, np_):
    f = lib.custom_jvp(lambda x, y: np_.sin(x) * y)
    f.defjvps(lambda xd, out, x, y: np_.cos(x) * xd * y, lambda yd, out, x, y: np_.sin(x) * yd)
    return f

  f, jf = make(tracegrad, tnp), make(jax, jax.numpy)
  mine = tracegrad.value_and_grad(f, argnums=(0, 1))(1.0, 2.0)
  theirs = jax.value_and_grad(jf, argnums=(0, 1))(1.0, 2.0)
  np.testing.assert_allclose(np.asarray(mine[0]), np.asarray(theirs[0]), rtol=1e-6)
  np.testing.assert_allclose(np.asarray(mine[1]), np.asarray(theirs[1]), rtol=1e-6)
  tracegrad.test_util.check_grads(f, (tnp.float32(0.7), tnp.float32(1.3)), order=1)


def test_defjvps_with_none_and_nondiff():
  f = tracegrad.custom_jvp(lambda x, y: x * y)
  f.defjvps(lambda xd, out, x, y: xd * y, None)
  assert float(tracegrad.grad(f, argnums=1)(2.0, 3.0)) == 0.0
  g = tracegrad.custom_jvp(lambda n, x: x * n, nondiff_argnums=(0,))
  with pytest.raises(TypeError, match="defjvps.*nondiff_argnums"): g.defjvps(None)


def test_config_flags():
  cfg = tracegrad.config
  assert cfg.jax_threefry_partitionable is True and cfg.read("jax_threefry_partitionable") is True
  old = cfg.jax_enable_x64
  try:
    cfg.update("jax_enable_x64", True)
    assert cfg.jax_enable_x64 and cfg.read("jax_enable_x64")
    assert tnp.array(1.0).dtype == tnp.float64
  finally:
    cfg.update("jax_enable_x64", old)
  assert cfg.read("jax_enable_x64") == old
  cfg.update("jax_threefry_partitionable", False)
  try:
    assert cfg.jax_threefry_partitionable is False
  finally:
    cfg.update("jax_threefry_partitionable", True)
  for name in ("jax_platform_name", "jax_debug_nans", "jax_default_matmul_precision"):
    cfg.update(name, cfg.read(name))
  with pytest.raises(AttributeError, match="jax_nope"): cfg.update("jax_nope", 1)
  with pytest.raises(AttributeError, match="jax_nope"): cfg.read("jax_nope")
  with pytest.raises(AttributeError): cfg.jax_nope
  cfg.config_with_absl()
  cfg.parse_flags_with_absl()
  assert cfg.jax_threefry_partitionable == jax.config.jax_threefry_partitionable
