import pickle

import ml_dtypes
import numpy as np
import pytest

import tracegrad
import tracegrad.numpy as tnp


def test_numpy_interop_both_ways():
  a = np.arange(6, dtype=np.float32).reshape(2, 3)
  x = tnp.asarray(a)
  assert isinstance(x, tracegrad.Array) and x.shape == (2, 3) and x.dtype == tnp.float32
  b = np.asarray(x)
  np.testing.assert_array_equal(b, a)
  assert not b.flags.writeable  # the Array's buffer cannot be mutated through numpy
  a[0, 0] = 100  # the Array copied its input
  assert float(x[0, 0]) == 0.0


def test_64_bit_inputs_are_narrowed_by_default():
  assert tnp.asarray(np.zeros(2, np.float64)).dtype == tnp.float32
  assert tnp.asarray(np.zeros(2, np.int64)).dtype == tnp.int32
  assert tnp.asarray([1, 2]).dtype == tnp.int32 and tnp.asarray([1.0, 2]).dtype == tnp.float32


def test_x64_mode():
  tracegrad.config.update("jax_enable_x64", True)
  try:
    assert tnp.asarray(np.zeros(2, np.float64)).dtype == tnp.float64
    assert (tnp.ones(2, tnp.float64) + 1).dtype == tnp.float64
  finally:
    tracegrad.config.update("jax_enable_x64", False)
  with pytest.raises(AttributeError, match="unknown option"): tracegrad.config.update("jax_nope", True)


def test_scalar_conversions():
  x = tnp.asarray(2.5)
  assert float(x) == 2.5 and int(x) == 2 and bool(x) and x.item() == 2.5
  assert tnp.asarray([[1, 2]]).tolist() == [[1, 2]]
  assert [1, 2, 3][tnp.asarray(1)] == 2
  with pytest.raises(TypeError, match=r"size 1.*\(3,\)"): float(tnp.ones(3))
  with pytest.raises(ValueError, match="size 1"): tnp.ones(3).item()
  with pytest.raises(TypeError, match="integer"): [1, 2][tnp.asarray(1.0)]


def test_repr_shows_values_and_dtype():
  assert repr(tnp.asarray([1, 2])) == "Array([1, 2], dtype=int32)"
  assert repr(tnp.asarray(1.0)) == "Array(1., dtype=float32, weak_type=True)"
  assert "bfloat16" in repr(tnp.ones(2, tnp.bfloat16))
  assert str(tnp.asarray([1, 2])) == "[1 2]"


def test_properties_and_methods():
  x = tnp.arange(6.0).reshape(2, 3)
  assert (x.ndim, x.size, x.T.shape, x.itemsize, x.nbytes) == (2, 6, (3, 2), 4, 24)
  assert x.sum().item() == 15.0 and x.mean(axis=0).shape == (3,) and x.astype(tnp.int8).dtype == tnp.int8
  assert x.reshape(3, 2).shape == (3, 2) and x.reshape((6,)).shape == (6,) and x.ravel().shape == (6,)
  assert len(x) == 2 and [r.shape for r in x] == [(3,), (3,)]
  assert x.block_until_ready() is x


def test_arrays_are_unhashable_and_picklable():
  x = tnp.arange(3)
  with pytest.raises(TypeError): hash(x)
  y = pickle.loads(pickle.dumps(x))
  np.testing.assert_array_equal(np.asarray(y), [0, 1, 2])


def test_numpy_operands_defer_to_array():
  x = tnp.ones(3)
  out = np.ones(3, np.float32) + x
  assert isinstance(out, tracegrad.Array)
  assert isinstance(np.float32(2) * x, tracegrad.Array)


def test_eager_loops_keep_graphs_bounded():
  x = tnp.zeros(4)
  for _ in range(500): x = x + 1
  assert x.uop.depth < 100
  np.testing.assert_array_equal(np.asarray(x), np.full(4, 500, np.float32))


def test_bfloat16_roundtrip():
  a = np.array([1.5, -2.25], ml_dtypes.bfloat16)
  x = tnp.asarray(a)
  assert x.dtype == tnp.bfloat16 and np.asarray(x).dtype == ml_dtypes.bfloat16


def test_bad_inputs():
  with pytest.raises(TypeError, match="asarray"): tnp.asarray("abc")
  with pytest.raises(OverflowError, match="int32"): tnp.asarray(2 ** 40)
  with pytest.raises(ValueError, match="rectangular"): tnp.asarray([[1, 2], [3]])


def test_devices():
  backend = tracegrad.default_backend()
  assert [d.platform for d in tracegrad.devices()] == [backend]
  assert tnp.ones(2).device.platform == backend
  assert [d.platform for d in tracegrad.devices("interp")] == ["interp"]
  with pytest.raises(ValueError, match="unknown backend"):
    tracegrad.devices("tpu")
