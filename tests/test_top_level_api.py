"""The smaller top-level names of jax (tracegrad/api.py): settings as context managers, transfers, callbacks,
custom_gradient, linear_transpose, arrays built from blocks, checkpoint policies."""
import numpy as np
import pytest

import tracegrad
import tracegrad.numpy as tnp
from tracegrad.sharding import Mesh, NamedSharding

jax = pytest.importorskip("jax")
jnp = jax.numpy


def test_disable_jit_runs_the_python_eagerly_and_restores():
  seen = []
  f = tracegrad.jit(lambda x: seen.append(x.is_traced) or x * 2)
  with tracegrad.disable_jit():
    assert float(f(tnp.ones(()))) == 2.0
  f(tnp.ones(()))
  assert seen == [False, True] and tracegrad.config.jax_disable_jit is False


@pytest.mark.parametrize("mode", ["raise", "warn"])
def test_rank_promotion_modes_match_jax(mode):
  jnp_ = jax.numpy
  with tracegrad.numpy_rank_promotion(mode), jax.numpy_rank_promotion(mode):
    for lib, np_ in ((tracegrad, tnp), (jax, jnp_)):
      assert np.asarray(np_.ones(3) + 1.0).tolist() == [2.0] * 3   # scalars and one rank pass
      assert np_.maximum(np_.ones((2, 3)), np_.zeros((1, 3))).shape == (2, 3)
      if mode == "raise":
        with pytest.raises(ValueError, match="rank"): np_.ones(3) + np_.ones((2, 3))
        with pytest.raises(ValueError, match="rank"): lib.jit(lambda a, b: a * b)(np_.ones(3), np_.ones((2, 3)))
      else:
        with pytest.warns(UserWarning, match="rank"): np_.ones(3) * np_.ones((2, 3))
  assert tracegrad.jit(lambda a, b: a * b)(tnp.ones(3), tnp.ones((2, 3))).shape == (2, 3)   # traced again on 'allow'


def test_settings_are_context_managers_and_restore():
  assert tracegrad.enable_x64.value is False
  with tracegrad.enable_x64(True):
    assert tnp.arange(2).dtype == tnp.int64 and tracegrad.enable_x64.value
  assert tnp.arange(2).dtype == tnp.int32
  with tracegrad.default_matmul_precision("highest"), tracegrad.numpy_rank_promotion("allow"), \
       tracegrad.numpy_dtype_promotion("standard"), tracegrad.transfer_guard("disallow"), \
       tracegrad.ensure_compile_time_eval(), tracegrad.named_scope("x"), tracegrad.default_device(None):
    assert tracegrad.config.jax_default_matmul_precision == "highest"
  assert tracegrad.config.jax_default_matmul_precision is None
  with pytest.raises(ValueError, match="numpy_rank_promotion.*'bogus'"):
    with tracegrad.numpy_rank_promotion("bogus"): pass
  with pytest.raises(NotImplementedError, match="numpy_dtype_promotion"):
    with tracegrad.numpy_dtype_promotion("strict"): pass
  with pytest.raises(ValueError, match="transfer_guard"):
    tracegrad.transfer_guard("sometimes")


def test_log_compiles_prints_traces(capsys):
  with tracegrad.log_compiles(True):
    tracegrad.jit(lambda x: x + 1)(tnp.ones(3))
  assert "trace jit(<lambda>)" in capsys.readouterr().out
  tracegrad.jit(lambda x: x + 2)(tnp.ones(3))
  assert "trace" not in capsys.readouterr().out


def test_default_device_takes_a_backend_first_device_or_platform():
  d = tracegrad.devices()[0]
  with tracegrad.default_device(d):
    assert tracegrad.default_backend() == d.platform
  with tracegrad.default_device("interp"):
    assert tracegrad.default_backend() == "interp"
    assert float((tnp.ones(2) * 3).sum()) == 6.0
  with pytest.raises(ValueError, match="default_device"):
    with tracegrad.default_device("nope"): pass


def test_block_until_ready_device_get_typeof_match_jax():
  tree = {"a": tnp.arange(3) * 2, "b": (1.5, tnp.ones((2, 2)))}
  assert tracegrad.block_until_ready(tree) is tree
  got, want = tracegrad.device_get(tree), jax.device_get({"a": jnp.arange(3) * 2, "b": (1.5, jnp.ones((2, 2)))})
  assert type(got["a"]) is np.ndarray and got["b"][0] == 1.5
  for x, y in zip(jax.tree.leaves(got), jax.tree.leaves(want)):
    np.testing.assert_array_equal(x, y)
    assert np.asarray(x).dtype == np.asarray(y).dtype
  for v, jv in ((tnp.ones((2, 3)), jnp.ones((2, 3))), (2.0, 2.0), (tnp.arange(2), jnp.arange(2))):
    t, jt = tracegrad.typeof(v), jax.typeof(jv)
    assert (t.shape, t.dtype.name, t.weak_type) == (jt.shape, jt.dtype.name, jt.weak_type)
  assert tracegrad.float0 == jax.float0
  assert tracegrad.host_count() == 1 and tracegrad.host_ids() == tracegrad.process_indices() == [0]
  assert isinstance(tracegrad.devices()[0], tracegrad.Device)
  assert tracegrad.P is tracegrad.sharding.PartitionSpec and tracegrad.Shard is tracegrad.sharding.Shard


def test_clear_caches_retraces():
  traces = []
  f = tracegrad.jit(lambda x: traces.append(1) or x + 1)
  f(tnp.ones(2)), f(tnp.ones(2))
  tracegrad.clear_caches()
  assert float(f(tnp.ones(2))[0]) == 2.0 and len(traces) == 2


def test_pure_callback_eager_and_under_jit():
  spec = tracegrad.ShapeDtypeStruct((3,), tnp.float32)
  out = tracegrad.pure_callback(lambda x, y: np.sin(x) * y, spec, tnp.arange(3.0), y=2.0)
  want = jax.pure_callback(lambda x, y: np.sin(x) * y, jax.ShapeDtypeStruct((3,), jnp.float32), jnp.arange(3.0), y=2.0)
  np.testing.assert_allclose(np.asarray(out), np.asarray(want), rtol=1e-6)
  assert out.dtype == tnp.float32
  with pytest.raises(RuntimeError, match="pure_callback.*shape"):
    tracegrad.pure_callback(lambda x: x, tracegrad.ShapeDtypeStruct((2,), tnp.float32), tnp.ones(3))
  got = tracegrad.jit(lambda x: tracegrad.pure_callback(np.sin, spec, x) * 2)(tnp.ones(3))
  np.testing.assert_array_equal(np.asarray(got), 2 * np.sin(np.ones(3, np.float32)))


def test_custom_gradient_matches_jax():
  def make(np_):
    def f(x, y):
      return np_.sin(x) * y, lambda g: (g * 10.0, g * x)
    return f
  ours, theirs = tracegrad.custom_gradient(make(tnp)), jax.custom_gradient(make(jnp))
  args = (np.float32(0.5), np.float32(3.0))
  np.testing.assert_allclose(float(ours(*args)), float(theirs(*args)), rtol=1e-6)
  for i in (0, 1):
    assert float(tracegrad.grad(ours, argnums=i)(*args)) == pytest.approx(float(jax.grad(theirs, argnums=i)(*args)))
  one = tracegrad.custom_gradient(lambda x: (x * x, lambda g: g * 7.0))
  assert float(tracegrad.jit(tracegrad.grad(one))(2.0)) == 7.0


def test_linear_transpose_matches_jax():
  m = np.arange(6, dtype=np.float32).reshape(2, 3)
  ours = tracegrad.linear_transpose(lambda x, y: tnp.asarray(m) @ x + 2.0 * y, tnp.zeros(3),
                                    tracegrad.ShapeDtypeStruct((2,), tnp.float32))
  theirs = jax.linear_transpose(lambda x, y: jnp.asarray(m) @ x + 2.0 * y, jnp.zeros(3),
                                jax.ShapeDtypeStruct((2,), jnp.float32))
  ct = np.array([1.0, -2.0], np.float32)
  for a, b in zip(ours(tnp.asarray(ct)), theirs(ct)):
    assert a.shape == b.shape
    np.testing.assert_allclose(np.asarray(a), np.asarray(b))
  with pytest.raises(TypeError, match="linear_transpose"):
    tracegrad.linear_transpose(lambda x: x, tnp.arange(2))


def test_make_array_from_blocks():
  mesh = Mesh(tracegrad.devices()[:1], ("i",))
  s = NamedSharding(mesh, tracegrad.P("i"))
  data = np.arange(6.0, dtype=np.float32).reshape(3, 2)
  a = tracegrad.make_array_from_callback((3, 2), s, lambda index: data[index])
  assert a.sharding == s and np.array_equal(np.asarray(a), data)
  b = tracegrad.make_array_from_single_device_arrays((3, 2), s, [tnp.asarray(data)])
  assert np.array_equal(np.asarray(b), data) and b.dtype == tnp.float32
  c = tracegrad.make_array_from_process_local_data(s, data)
  assert np.array_equal(np.asarray(c), data)
  with pytest.raises(ValueError, match="make_array_from_single_device_arrays"):
    tracegrad.make_array_from_single_device_arrays((3, 2), s, [])
  with pytest.raises(ValueError, match="make_array_from_callback.*shape"):
    tracegrad.make_array_from_callback((3, 2), s, lambda index: np.ones(2))


def test_checkpoint_accepts_jax_policies():
  for name in ("nothing_saveable", "everything_saveable", "dots_saveable", "dots_with_no_batch_dims_saveable"):
    assert hasattr(jax.checkpoint_policies, name)
    f = tracegrad.checkpoint(lambda x: tnp.sin(tnp.sin(x)), policy=getattr(tracegrad.checkpoint_policies, name))
    assert float(tracegrad.grad(f)(0.0)) == 1.0
  f = tracegrad.checkpoint(tnp.sin, policy=tracegrad.checkpoint_policies.save_only_these_names("a"))
  assert float(tracegrad.grad(f)(0.0)) == 1.0
  missing = [n for n in dir(jax.checkpoint_policies) if not n.startswith("_")
             and not hasattr(tracegrad.checkpoint_policies, n)]
  assert missing == []


def test_no_op_helpers():
  assert tracegrad.named_call(tnp.sin, name="s") is tnp.sin
  x = tnp.ones(2)
  assert tracegrad.copy_to_host_async(x) is x and tracegrad.effects_barrier() is None
  assert "tracegrad:" in tracegrad.print_environment_info(return_string=True)
