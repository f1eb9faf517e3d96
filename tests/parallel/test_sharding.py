"""tracegrad.sharding and several host devices: meshes, specs, device_put into per-device buffers, Array.sharding
and addressable_shards, and the errors bad specs raise."""
import numpy as np
import pytest

import tracegrad as tg
import tracegrad.numpy as tnp
from tracegrad import run
from tracegrad.sharding import Mesh, NamedSharding, P, PartitionSpec, SingleDeviceSharding


def test_devices_count_and_ids(four_devices):
  assert [d.id for d in four_devices] == [0, 1, 2, 3]
  assert [d.id for d in tg.devices("interp")] == [0, 1, 2, 3]
  assert repr(four_devices[2]).endswith("Device(id=2)")


def test_bad_device_count(monkeypatch):
  monkeypatch.setenv("TRACEGRAD_NUM_CPU_DEVICES", "zero")
  with pytest.raises(ValueError, match="TRACEGRAD_NUM_CPU_DEVICES must be a positive integer, got 'zero'"):
    run.num_cpu_devices()


def test_mesh(four_devices):
  mesh = Mesh(np.array(four_devices).reshape(2, 2), ("data", "model"))
  assert mesh.shape == {"data": 2, "model": 2} and mesh.size == 4 and mesh.axis_names == ("data", "model")
  assert mesh.device_ids.tolist() == [[0, 1], [2, 3]]
  assert mesh == Mesh(np.array(four_devices).reshape(2, 2), ("data", "model"))
  with pytest.raises(ValueError, match=r"Mesh: devices has 2 dimensions \(2, 2\) but 1 axis names"):
    Mesh(np.array(four_devices).reshape(2, 2), ("data",))
  with pytest.raises(ValueError, match="distinct"):
    Mesh(np.array(four_devices).reshape(2, 2), ("a", "a"))
  with pytest.raises(ValueError, match="appears twice"):
    Mesh(np.array([four_devices[0], four_devices[0]]), ("a",))


def test_partition_spec():
  assert P("data", None) == PartitionSpec("data", None) and len(P()) == 0
  assert repr(P("a", ("b", "c"))) == "PartitionSpec('a', ('b', 'c'))"
  with pytest.raises(TypeError, match="PartitionSpec: each entry"):
    P(3)


def test_named_sharding_layout(four_devices):
  mesh = Mesh(np.array(four_devices).reshape(2, 2), ("data", "model"))
  s = NamedSharding(mesh, P("data", "model"))
  assert s.shard_shape((4, 6)) == (2, 3) and not s.is_fully_replicated and s.num_devices == 4
  idx = s.devices_indices_map((4, 6))
  assert idx[four_devices[1]] == (slice(0, 2), slice(3, 6)) and idx[four_devices[2]] == (slice(2, 4), slice(0, 3))
  both = NamedSharding(mesh, P(("data", "model")))
  assert [both.devices_indices_map((8,))[d] for d in four_devices] == [(slice(2 * i, 2 * i + 2),) for i in range(4)]
  assert NamedSharding(mesh, P()).is_fully_replicated
  with pytest.raises(ValueError, match=r"names mesh axis 'batch' for dimension 1, but the mesh's axes are \('data', 'model'\)"):
    NamedSharding(mesh, P(None, "batch"))
  with pytest.raises(ValueError, match="uses mesh axis 'data' twice"):
    NamedSharding(mesh, P("data", "data"))


def test_device_put_gives_each_device_its_own_block(four_devices):
  mesh = Mesh(np.array(four_devices).reshape(2, 2), ("data", "model"))
  x = np.arange(24, dtype=np.float32).reshape(4, 6)
  a = tg.device_put(x, NamedSharding(mesh, P("data", "model")))
  assert a.shape == (4, 6) and a.dtype == tnp.float32 and a.sharding == NamedSharding(mesh, P("data", "model"))
  assert a.devices() == set(four_devices)
  shards = a.addressable_shards
  assert [s.device for s in shards] == four_devices and all(s.replica_id == 0 for s in shards)
  blocks = [np.asarray(s.data) for s in shards]
  for s, b in zip(shards, blocks):
    np.testing.assert_array_equal(b, x[s.index])
    assert not np.shares_memory(b, x)
  assert not any(np.shares_memory(b, c) for i, b in enumerate(blocks) for c in blocks[i + 1:])
  np.testing.assert_array_equal(np.asarray(a), x)
  np.testing.assert_array_equal(np.asarray(tg.jit(lambda v: v * 2 + 1)(a)), x * 2 + 1)
  np.testing.assert_array_equal(np.asarray(tnp.sum(a, axis=0)), x.sum(0))


def test_replicated_blocks_and_pytrees(four_devices):
  mesh = Mesh(np.array(four_devices).reshape(2, 2), ("data", "model"))
  tree = tg.device_put({"w": np.ones((4, 2), np.float32), "b": np.zeros(2, np.float32)}, NamedSharding(mesh, P("data")))
  shards = tree["w"].addressable_shards
  assert [s.replica_id for s in shards] == [0, 1, 0, 1]           # replicated over "model"
  assert [s.index[0] for s in shards] == [slice(0, 2), slice(0, 2), slice(2, 4), slice(2, 4)]
  assert tree["b"].sharding.shard_shape((2,)) == (1,)


def test_unsharded_arrays_report_their_device():
  a = tnp.arange(3.0)
  assert a.sharding == SingleDeviceSharding(tg.devices()[0]) and a.device is tg.devices()[0]
  (shard,) = a.addressable_shards
  assert shard.index == (slice(None),) and shard.data is a
  b = tg.device_put(np.arange(3.0), SingleDeviceSharding(tg.devices()[0]))
  np.testing.assert_array_equal(np.asarray(b), np.arange(3.0))


def test_bad_specs_raise_at_device_put(four_devices):
  mesh = Mesh(np.array(four_devices).reshape(2, 2), ("data", "model"))
  with pytest.raises(ValueError, match=r"device_put: dimension 0 of shape \(3, 6\) has size 3, which does not divide "
                                       r"into the 2 blocks of mesh axes data=2"):
    tg.device_put(np.ones((3, 6)), NamedSharding(mesh, P("data")))
  with pytest.raises(ValueError, match=r"device_put: .*2 entries but the array has 1 dimensions"):
    tg.device_put(np.ones(4), NamedSharding(mesh, P("data", "model")))
  other = Mesh(np.array([type(four_devices[0])(7)]), ("x",))        # a device object no backend here holds
  with pytest.raises(ValueError, match="is not one of this process's devices"):
    tg.device_put(np.ones(2), NamedSharding(other, P()))


def test_single_process_distributed_defaults(four_devices):
  assert tg.process_index() == 0 and tg.process_count() == 1 and tg.distributed.allgather(3) == [3]
  assert tg.local_devices() == four_devices and all(d.process_index == 0 for d in four_devices)
