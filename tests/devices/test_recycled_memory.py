"""Big outputs on recycled memory (devices/recycled_memory.py): a block goes back to the pool only when no view of it
is left, live outputs never share memory, and the pool stays within its bound."""
import gc

import numpy as np
import pytest

import tracegrad as tg
import tracegrad.numpy as tnp
from tracegrad.devices import recycled_memory as rm

F32 = np.dtype(np.float32)


def test_a_view_keeps_its_block_from_reuse():
  a = rm.empty((256, 256), F32)
  a[:] = 1
  view = a[10:20, ::3]
  del a
  gc.collect()
  others = [rm.empty((256, 256), F32) for _ in range(3)]
  for o in others: o[:] = 2
  assert (view == 1).all()


def test_blocks_are_reused_and_small_arrays_are_plain():
  a = rm.empty((512, 128), F32)
  address, before = a.ctypes.data, rm.held()
  del a
  gc.collect()
  assert rm.held() == before + 512 * 128 * 4 + rm.ALIGN
  b = rm.empty((128, 512), F32)   # the same bytes, another shape
  assert b.ctypes.data == address and b.shape == (128, 512) and b.flags.c_contiguous and b.flags.writeable
  assert rm.held() == before
  small = rm.empty((10,), F32)
  assert small.base is None


def test_the_pool_stays_within_its_bound(monkeypatch):
  monkeypatch.setattr(rm, "POOL_BYTES", rm.held() + 2 * rm.MIN_BYTES)
  arrays = [rm.empty((rm.MIN_BYTES,), np.dtype(np.uint8)) for _ in range(5)]
  del arrays
  gc.collect()
  assert rm.held() <= rm.POOL_BYTES


def test_outputs_of_a_jitted_function_stay_distinct_and_right():
  if tg.default_backend() != "cpu": pytest.skip("the compiled cpu backend's outputs")
  f = tg.jit(lambda x, k: (x * k, x + k))
  x = np.arange(65536, dtype=np.float32)
  kept = []
  for k in range(6):
    outs = f(x, np.float32(k))
    if k % 2: kept.append((k, outs))   # some calls' outputs kept, the others dropped and recycled
    del outs
    gc.collect()
  for k, (a, b) in kept:
    np.testing.assert_array_equal(np.asarray(a), x * k)
    np.testing.assert_array_equal(np.asarray(b), x + k)
  assert len({np.asarray(o).ctypes.data for _, outs in kept for o in outs}) == 2 * len(kept)
