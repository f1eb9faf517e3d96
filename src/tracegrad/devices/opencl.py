"""The OpenCL device, through pyopencl: any OpenCL platform's device, PoCL's CPU device included, so the GPU-style
code path (lower/render_gpu.py) runs on a machine without a GPU. Sources compile once per process (the platform
keeps its own binary cache: PoCL's in ~/.cache/pocl); eager operations run on the interp device.

TRACEGRAD_OPENCL_DEVICE=<n> picks the n-th device of all platforms (default: the first GPU, else the first device).
"""
from __future__ import annotations

import os
import threading
from functools import lru_cache

import numpy as np

from .base import numbered
from .gpu import GPUDevice, Queue

BUILD_OPTIONS = ["-cl-fp32-correctly-rounded-divide-sqrt"]


@lru_cache(None)
def _found() -> tuple[list, str]:
  """Every OpenCL device of every platform, and why there are none (empty when some were found)."""
  try:
    import pyopencl as cl
  except ImportError:
    return [], "pyopencl is not installed (pip install 'tracegrad[opencl]')"
  try:
    found = [d for p in cl.get_platforms() for d in p.get_devices()]
  except cl.Error as e:
    return [], f"no OpenCL platform ({e})"
  return found, "" if found else "the OpenCL platforms have no devices"


def missing() -> str:
  """Why there is no OpenCL device here ('' when there is one)."""
  return _found()[1]


class _CLQueue(Queue):
  def __init__(self, ctx, queue):
    import pyopencl as cl
    self.cl, self.ctx, self.q = cl, ctx, queue
    self.lock = threading.Lock()   # a kernel's arguments are set, then it is enqueued: one thread at a time

  def alloc(self, nbytes: int): return self.cl.Buffer(self.ctx, self.cl.mem_flags.READ_WRITE, nbytes)
  def upload(self, buf, data: np.ndarray) -> None: self.cl.enqueue_copy(self.q, buf, data)
  def download(self, buf, out: np.ndarray) -> None: self.cl.enqueue_copy(self.q, out, buf)

  def copy(self, dst, src, nbytes: int, dst_offset: int = 0, src_offset: int = 0) -> None:
    self.cl.enqueue_copy(self.q, dst, src, byte_count=nbytes, dst_offset=dst_offset, src_offset=src_offset)

  def launch(self, function, args: list, size: tuple[tuple, tuple]) -> None:
    with self.lock: function(self.q, size[0], size[1], *args)

  def finish(self) -> None: self.q.finish()

  def time(self, function, args: list, size: tuple[tuple, tuple]) -> float:
    with self.lock: event = function(self.q, size[0], size[1], *args)
    event.wait()
    return (event.profile.end - event.profile.start) * 1e-9


class OpenCLDevice(GPUDevice):
  name = "opencl"
  platform = "opencl"

  def missing(self) -> str: return missing()

  def describe(self) -> str:
    self._context()
    d = self.cl_device
    return f"{d.platform.name} {d.platform.version} {d.name} {d.driver_version}"

  def _context(self):
    if self._ctx is None:
      import pyopencl as cl
      found = _found()[0]
      pick = os.environ.get("TRACEGRAD_OPENCL_DEVICE")
      if pick is not None:
        if not pick.isdigit() or int(pick) >= len(found):
          raise ValueError(f"TRACEGRAD_OPENCL_DEVICE={pick!r}: there are {len(found)} OpenCL devices: "
                           f"{[d.name for d in found]}")
        dev = found[int(pick)]
      else:
        dev = next((d for d in found if d.type & cl.device_type.GPU), found[0])
      self.cl_device = dev
      self._ctx = cl.Context([dev])
      self._queue = _CLQueue(self._ctx, cl.CommandQueue(
          self._ctx, properties=cl.command_queue_properties.PROFILING_ENABLE))
    return self._ctx

  def compile(self, source: str, names: list[str]) -> dict:
    """{name: compiled kernel} of the kernels `names` of an OpenCL C source; a build error raises RuntimeError
    with the compiler's log and the numbered source."""
    kernels = self._compiled.get(source)
    if kernels is None:
      import pyopencl as cl
      try:
        prog = cl.Program(self._context(), source).build(options=BUILD_OPTIONS)
      except cl.RuntimeError as e:
        raise RuntimeError(f"opencl: the OpenCL C compiler failed:\n{e}\n\nsource:\n{numbered(source)}") from None
      kernels = self._compiled[source] = {k.function_name: k for k in prog.all_kernels()}
    return {n: kernels[n] for n in names}
