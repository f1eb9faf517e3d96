"""shard_map over a mesh of four host devices: values against numpy, the per-device run (concrete arguments) against
the composition of vmaps it is under a transform (jit, grad, vmap), data-parallel gradients against one device's,
shards left on their devices, and errors."""
import numpy as np
import pytest

import tracegrad as tg
import tracegrad.numpy as tnp
from tracegrad import lax
from tracegrad.sharding import Mesh, NamedSharding, P
from oracles import ulps

RNG = np.random.default_rng(0)
X = RNG.standard_normal((8, 4)).astype(np.float32)
W = RNG.standard_normal((4, 3)).astype(np.float32)


@pytest.fixture
def mesh(four_devices):
  return Mesh(np.array(four_devices).reshape(2, 2), ("data", "model"))


def _model_parallel(mesh):
  """x's rows over "data" and columns over "model", w's rows over "model": a matmul finished by a psum."""
  return tg.shard_map(lambda xb, wb: lax.psum(xb @ wb, "model"), mesh,
                      in_specs=(P("data", "model"), P("model", None)), out_specs=P("data", None))


def test_matmul_sharded_two_ways(mesh):
  f = _model_parallel(mesh)
  y = f(X, W)
  np.testing.assert_allclose(np.asarray(y), X @ W, rtol=ulps(84), atol=ulps(84))
  assert y.sharding == NamedSharding(mesh, P("data", None))
  shards = y.addressable_shards
  assert [s.device for s in shards] == list(mesh.devices.flat) and [s.replica_id for s in shards] == [0, 1, 0, 1]
  np.testing.assert_allclose(np.asarray(shards[2].data), (X @ W)[4:], rtol=ulps(84), atol=ulps(84))
  # under jit the same function is a composition of vmaps; both agree
  np.testing.assert_allclose(np.asarray(tg.jit(f)(X, W)), np.asarray(y), rtol=ulps(84), atol=ulps(84))


def test_gradients_and_vmap_through_shard_map(mesh):
  f = _model_parallel(mesh)
  g = tg.grad(lambda w: tnp.sum(f(X, w) ** 2))(W)
  np.testing.assert_allclose(np.asarray(g), 2 * X.T @ (X @ W), rtol=ulps(840), atol=ulps(840))
  ws = RNG.standard_normal((3, 4, 3)).astype(np.float32)
  out = tg.vmap(lambda w: f(X, w))(ws)
  np.testing.assert_allclose(np.asarray(out), np.stack([X @ w for w in ws]), rtol=ulps(84), atol=ulps(84))


COLLECTIVES = {
  "all_gather": (lambda b: lax.all_gather(b, "data", tiled=True), P("data"), P(None), lambda x: x),
  "psum_scatter": (lambda b: lax.psum_scatter(b, "data", tiled=True), P(None), P("data"), lambda x: 2 * x),
  "ppermute": (lambda b: lax.ppermute(b, "data", [(0, 1), (1, 0)]), P("data"), P("data"),
               lambda x: np.concatenate([x[4:], x[:4]])),
  "all_to_all": (lambda b: lax.all_to_all(b, "data", 1, 0, tiled=True), P("data", None), P(None, "data"),
                 lambda x: x),   # rows over "data" become columns over "data"
  "axis_index": (lambda b: b * (lax.axis_index("data") * 2 + lax.axis_index("model")).astype(b.dtype),
                 P("data", "model"), P("data", "model"),
                 lambda x: x * np.array([[0, 0, 1, 1]] * 4 + [[2, 2, 3, 3]] * 4, np.float32)),
  "pmean_pmax": (lambda b: lax.pmean(b, ("data", "model")) + lax.pmax(b, "model"), P("data", "model"),
                 P("data", "model"), None),
}


@pytest.mark.parametrize("name", COLLECTIVES)
def test_collectives_run_per_device_as_their_definition_says(mesh, name):
  body, ins, outs, ref = COLLECTIVES[name]
  f = tg.shard_map(body, mesh, in_specs=ins, out_specs=outs, check_rep=False)
  got = np.asarray(f(X))
  if ref is not None: np.testing.assert_allclose(got, ref(X), rtol=ulps(8), atol=ulps(8))
  np.testing.assert_allclose(np.asarray(tg.jit(f)(X)), got, rtol=ulps(8), atol=ulps(8))


def test_data_parallel_step_equals_one_device(mesh):
  """Each device takes a quarter of the batch; pmean of the gradients is the full batch's gradient."""
  ys = RNG.standard_normal((8, 3)).astype(np.float32)
  loss = lambda w, x, y: tnp.mean((x @ w - y) ** 2)
  flat = Mesh(np.array(list(mesh.devices.flat)), ("batch",))
  step = tg.shard_map(lambda w, x, y: lax.pmean(tg.grad(loss)(w, x, y), "batch"), flat,
                      in_specs=(P(), P("batch"), P("batch")), out_specs=P())
  got = step(W, X, ys)
  np.testing.assert_allclose(np.asarray(got), np.asarray(tg.grad(loss)(W, X, ys)), rtol=ulps(84), atol=ulps(8))
  assert got.sharding.is_fully_replicated and len(got.addressable_shards) == 4


def test_inputs_put_with_the_same_sharding_are_used_in_place(mesh):
  xs = tg.device_put(X, NamedSharding(mesh, P("data", "model")))
  f = tg.shard_map(lambda b: b * 2, mesh, in_specs=P("data", "model"), out_specs=P("data", "model"))
  np.testing.assert_array_equal(np.asarray(f(xs)), 2 * X)


def test_errors(mesh):
  with pytest.raises(ValueError, match=r"shard_map\(<lambda>\): out_specs PartitionSpec\(\) leaves a mesh axis out, so "
                                       r"the output should be the same on every device along it, but CpuDevice\(id=2\)|"
                                       r"InterpDevice\(id=2\)"):
    tg.shard_map(lambda b: b, mesh, in_specs=P("data"), out_specs=P())(X)
  with pytest.raises(ValueError, match=r"names mesh axis 'rows'"):
    tg.shard_map(lambda b: b, mesh, in_specs=P("rows"), out_specs=P("rows"))(X)
  with pytest.raises(ValueError, match=r"dimension 0 of shape \(6, 4\) has size 6, which does not divide into the 4 "
                                       r"blocks of mesh axes data=2 x model=2"):
    tg.shard_map(lambda b: b, mesh, in_specs=P(("data", "model")), out_specs=P(("data", "model")))(X[:6])
  with pytest.raises(NameError, match="unbound axis name 'batch'"):
    tg.shard_map(lambda b: lax.psum(b, "batch"), mesh, in_specs=P("data"), out_specs=P("data"))(X)
