"""Output arrays on memory that has been written before. A fresh allocation of more than glibc's mmap threshold comes
from the system, and each of its pages costs a page fault on first write: on a virtual machine about a microsecond
per 4 KB. A training step whose caller drops its outputs after each call (as a benchmark does, or an evaluation loop)
paid that in every call: the GPT step's optimizer update ran at 8 GB/s instead of 45.

A big array is a view of a block of bytes from a pool kept by size. The block goes back to the pool when the last
view of it is collected (cffi calls back when the lease that every view's base chain ends in dies), so no view can
outlive its block's return.

>>> a = empty((256, 256), np.dtype(np.float32))
>>> a.shape, a.flags.writeable
((256, 256), True)
"""
from __future__ import annotations

import math
import threading
from collections import defaultdict

import cffi
import numpy as np

MIN_BYTES = 1 << 17    # smaller arrays come from malloc's heap, which recycles them already
POOL_BYTES = 1 << 28   # at most this much memory waits in the pool for reuse; a block past it is freed
# arrays of ALIGN_MIN_BYTES or more start at a multiple of ALIGN bytes, a cache line and an AVX-512 register: a
# vector load from malloc's 16-byte alignment straddles two lines, and a block of dot products ran 10-17% slower so
ALIGN, ALIGN_MIN_BYTES = 64, 1 << 12

_ffi = cffi.FFI()
_free: dict[int, list] = defaultdict(list)
_held = [0]
_lock = threading.RLock()   # re-entered when a collection inside it returns a block


def _give_back(block) -> None:
  """Called by cffi when a lease on `block` dies: the block waits for its next array, if the pool has room."""
  n = _ffi.sizeof(block)
  with _lock:
    if _held[0] + n <= POOL_BYTES:
      _free[n].append(block)
      _held[0] += n


def aligned(shape: tuple, dtype: np.dtype) -> np.ndarray:
  """An uninitialised C-contiguous array, as np.empty, starting at a multiple of ALIGN bytes when it is big enough."""
  n = math.prod(shape) * dtype.itemsize
  if n < ALIGN_MIN_BYTES: return np.empty(shape, dtype)
  raw = np.empty(n + ALIGN, np.uint8)
  at = -raw.ctypes.data % ALIGN
  return raw[at:at + n].view(dtype).reshape(shape)


def empty(shape: tuple, dtype: np.dtype) -> np.ndarray:
  """An uninitialised C-contiguous array of `shape` and `dtype` (aligned); on recycled memory when it is big."""
  n = math.prod(shape) * dtype.itemsize
  if n < MIN_BYTES: return aligned(shape, dtype)
  size = n + ALIGN   # a block's bytes, its key in the pool
  with _lock:
    spare = _free.get(size)
    block = spare.pop() if spare else None
    if block is not None: _held[0] -= size
  if block is None: block = _ffi.new("char[]", size)
  lease = _ffi.gc(block, _give_back)
  at = -int(_ffi.cast("uintptr_t", lease)) % ALIGN
  return np.frombuffer(_ffi.buffer(lease, size), dtype, math.prod(shape), at).reshape(shape)


def maker(nbytes: int):
  """What makes an array of nbytes as `empty` does, chosen once for arrays of one size: np.empty below the sizes
  that are aligned or pooled, whose checks then cost more than the allocation (0.4 us against 0.1)."""
  return np.empty if nbytes < ALIGN_MIN_BYTES else empty


def held() -> int:
  """The bytes waiting in the pool."""
  return _held[0]
