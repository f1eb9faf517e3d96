"""The CUDA device, through NVIDIA's Python bindings (cuda-bindings): NVRTC compiles the CUDA C of
lower/render_gpu.py to PTX or to the GPU's machine code (a cubin), neither of which needs a GPU (so `ptx(source)`
checks a rendering anywhere), and the driver API loads the cubin and runs it: device memory, one stream, launches,
events for timing. Eager operations run on the interp device.
"""
from __future__ import annotations

import hashlib
import os
from functools import lru_cache

import numpy as np

from .base import cache_dir, numbered
from .gpu import GPUDevice, Queue

# exact division and square root, no contraction into fused multiply-adds the source does not ask for (as on cpu)
NVRTC_OPTIONS = ["--fmad=false", "--prec-div=true", "--prec-sqrt=true", "-default-device"]
DEFAULT_ARCH = "compute_90"
WGMMA_ENV = "TRACEGRAD_WGMMA"   # "1": a Hopper GPU compiles for sm_90a, whose tensor-core kernels take wgmma


def _check(result, what: str):
  """The values a cuda-bindings call returned after its status; RuntimeError naming the call when it failed."""
  err, *rest = result if isinstance(result, tuple) else (result,)
  if int(err) != 0:
    name = getattr(err, "name", str(err))
    raise RuntimeError(f"cuda: {what} failed: {name}")
  return rest[0] if len(rest) == 1 else tuple(rest)


def _nvrtc(source: str, arch: str, binary: bool) -> bytes:
  from cuda.bindings import nvrtc
  prog = _check(nvrtc.nvrtcCreateProgram(source.encode(), b"tracegrad.cu", 0, [], []), "nvrtcCreateProgram")
  try:
    opts = [o.encode() for o in (*NVRTC_OPTIONS, f"--gpu-architecture={arch}")]
    (err,) = nvrtc.nvrtcCompileProgram(prog, len(opts), opts)
    if int(err) != 0:
      size = _check(nvrtc.nvrtcGetProgramLogSize(prog), "nvrtcGetProgramLogSize")
      log = b" " * size
      _check(nvrtc.nvrtcGetProgramLog(prog, log), "nvrtcGetProgramLog")
      raise RuntimeError(f"cuda: NVRTC failed to compile:\n{log.decode(errors='replace').strip()}\n\n"
                         f"source:\n{numbered(source)}")
    get_size, get = (nvrtc.nvrtcGetCUBINSize, nvrtc.nvrtcGetCUBIN) if binary else (nvrtc.nvrtcGetPTXSize, nvrtc.nvrtcGetPTX)
    out = b" " * _check(get_size(prog), get_size.__name__)
    _check(get(prog, out), get.__name__)
    return out
  finally:
    nvrtc.nvrtcDestroyProgram(prog)


def ptx(source: str, arch: str = DEFAULT_ARCH) -> bytes:
  """The PTX of a CUDA C source, compiled by NVRTC for `arch` (compute_XY); a compile error raises RuntimeError with
  NVRTC's log and the numbered source."""
  return _nvrtc(source, arch, binary=False)


def cubin(source: str, arch: str) -> bytes:
  """The machine code of a CUDA C source for one GPU generation (`arch`: sm_XY), compiled by NVRTC; errors as ptx's.
  A driver loads it without compiling PTX itself, so it runs on any driver of NVRTC's major version or newer."""
  return _nvrtc(source, arch, binary=True)


def nvrtc_version() -> str:
  from cuda.bindings import nvrtc
  return ".".join(map(str, _check(nvrtc.nvrtcVersion(), "nvrtcVersion")))


def check_ptx(source: str, arch: str = DEFAULT_ARCH) -> None:
  """Compile a CUDA C source to PTX once (remembered in the cache directory), raising as ptx() does: how a machine
  without a GPU proves every kernel it renders for CUDA compiles."""
  key = hashlib.sha256("\0".join([source, arch, nvrtc_version(), *NVRTC_OPTIONS]).encode()).hexdigest()
  mark = cache_dir("ptx") / key
  if mark.exists(): return
  ptx(source, arch)
  mark.touch(mode=0o600)


@lru_cache(None)
def missing() -> str:
  """Why there is no CUDA device here ('' when there is one)."""
  try:
    from cuda.bindings import driver
  except ImportError:
    return "cuda-bindings is not installed (pip install 'tracegrad[cuda]')"
  try:
    (err,) = driver.cuInit(0)
  except Exception as e:   # the bindings load libcuda, which only a machine with NVIDIA's driver has
    return f"no CUDA driver ({e})"
  if int(err) != 0: return f"no CUDA driver or GPU (cuInit: {getattr(err, 'name', err)})"
  err, n = driver.cuDeviceGetCount()
  return "" if int(err) == 0 and n > 0 else "the CUDA driver sees no GPU"


class _CUDAQueue(Queue):
  captures = True

  def __init__(self, stream):
    from cuda.bindings import driver
    self.d, self.stream = driver, stream

  def address(self, buf) -> int: return int(buf.ptr)

  def capture(self, launches: list[tuple]) -> "_Graph":
    """The launches as a CUDA graph (captured from the stream, so each keeps the arguments it was given)."""
    d = self.d
    _check(d.cuStreamBeginCapture(self.stream, d.CUstreamCaptureMode.CU_STREAM_CAPTURE_MODE_THREAD_LOCAL),
           "cuStreamBeginCapture")
    try:
      for f, args, size in launches: self.launch(f, args, size)
    finally:
      graph = _check(d.cuStreamEndCapture(self.stream), "cuStreamEndCapture")
    try:
      return _Graph(_check(d.cuGraphInstantiate(graph, 0), "cuGraphInstantiate"))
    finally:
      d.cuGraphDestroy(graph)

  def replay(self, captured: "_Graph") -> None:
    _check(self.d.cuGraphLaunch(captured.exec, self.stream), "cuGraphLaunch")

  def alloc(self, nbytes: int): return _Memory(_check(self.d.cuMemAlloc(nbytes), "cuMemAlloc"))

  def upload(self, buf, data: np.ndarray) -> None:
    _check(self.d.cuMemcpyHtoD(buf.ptr, data.ctypes.data, data.nbytes), "cuMemcpyHtoD")

  def download(self, buf, out: np.ndarray) -> None:
    self.finish()
    _check(self.d.cuMemcpyDtoH(out.ctypes.data, buf.ptr, out.nbytes), "cuMemcpyDtoH")

  def copy(self, dst, src, nbytes: int, dst_offset: int = 0, src_offset: int = 0) -> None:
    _check(self.d.cuMemcpyDtoDAsync(int(dst.ptr) + dst_offset, int(src.ptr) + src_offset, nbytes, self.stream),
           "cuMemcpyDtoDAsync")

  def launch(self, function, args: list, size: tuple[tuple, tuple]) -> None:
    ptrs = np.array([int(a.ptr) for a in args], dtype=np.uint64)
    params = np.array([ptrs[i:].ctypes.data for i in range(len(args))], dtype=np.uint64)
    block = (*size[1], 1, 1)[:3]
    grid = (*(g // l for g, l in zip(size[0], size[1])), 1, 1)[:3]
    _check(self.d.cuLaunchKernel(function, *grid, *block, 0, self.stream,
                                 params.ctypes.data if len(args) else 0, 0), "cuLaunchKernel")

  def finish(self) -> None: _check(self.d.cuStreamSynchronize(self.stream), "cuStreamSynchronize")

  def time(self, function, args: list, size: tuple[tuple, tuple]) -> float:
    start, end = (_check(self.d.cuEventCreate(0), "cuEventCreate") for _ in range(2))
    try:
      _check(self.d.cuEventRecord(start, self.stream), "cuEventRecord")
      self.launch(function, args, size)
      _check(self.d.cuEventRecord(end, self.stream), "cuEventRecord")
      _check(self.d.cuEventSynchronize(end), "cuEventSynchronize")
      return _check(self.d.cuEventElapsedTime(start, end), "cuEventElapsedTime") * 1e-3
    finally:
      for e in (start, end): self.d.cuEventDestroy(e)


class _Graph:
  """An instantiated CUDA graph, destroyed with the last reference."""

  def __init__(self, exec_): self.exec = exec_

  def __del__(self):
    from cuda.bindings import driver
    try: driver.cuGraphExecDestroy(self.exec)
    except Exception: pass


class _Memory:
  """Device memory, freed when no buffer table holds it any more."""

  def __init__(self, ptr): self.ptr = ptr

  def __del__(self):
    from cuda.bindings import driver
    try: driver.cuMemFree(self.ptr)
    except Exception: pass


class CUDADevice(GPUDevice):
  name = "cuda"
  platform = "cuda"

  def missing(self) -> str: return missing()

  def describe(self) -> str:
    from cuda.bindings import driver
    self._context()
    dev = _check(driver.cuDeviceGet(self.id), "cuDeviceGet")
    name = bytes(_check(driver.cuDeviceGetName(256, dev), "cuDeviceGetName")).split(b"\0")[0].decode()
    version = _check(driver.cuDriverGetVersion(), "cuDriverGetVersion")
    return f"{name} {self.arch} driver {version}"

  def _context(self):
    if self._ctx is None:
      from cuda.bindings import driver
      _check(driver.cuInit(0), "cuInit")
      dev = _check(driver.cuDeviceGet(self.id), "cuDeviceGet")
      self._ctx = _check(driver.cuDevicePrimaryCtxRetain(dev), "cuDevicePrimaryCtxRetain")
      _check(driver.cuCtxSetCurrent(self._ctx), "cuCtxSetCurrent")
      major = _check(driver.cuDeviceGetAttribute(
          driver.CUdevice_attribute.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev), "cuDeviceGetAttribute")
      minor = _check(driver.cuDeviceGetAttribute(
          driver.CUdevice_attribute.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev), "cuDeviceGetAttribute")
      self.arch = f"sm_{major}{minor}"
      self._queue = _CUDAQueue(_check(driver.cuStreamCreate(0), "cuStreamCreate"))
    from cuda.bindings import driver
    _check(driver.cuCtxSetCurrent(self._ctx), "cuCtxSetCurrent")
    return self._ctx

  def compile(self, source: str, names: list[str]) -> dict:
    """{name: function} of the kernels `names` of a CUDA C source, compiled by NVRTC for this GPU and loaded."""
    self._context()
    from cuda.bindings import driver
    mod = self._compiled.get(source)
    if mod is None:
      code = cubin(source, self.arch + ("a" if self.arch == "sm_90" and os.environ.get(WGMMA_ENV) == "1" else ""))
      err, mod = driver.cuModuleLoadData(code)
      if int(err) != 0:
        version = _check(driver.cuDriverGetVersion(), "cuDriverGetVersion")
        raise RuntimeError(f"cuda: the driver (CUDA {version // 1000}.{version % 1000 // 10}) cannot load code from "
                           f"NVRTC {nvrtc_version()} for {self.arch}: {getattr(err, 'name', err)}; install the NVRTC "
                           f"and cuda-bindings of the driver's major version (pip install 'nvidia-cuda-nvrtc<"
                           f"{version // 1000 + 1}' 'cuda-bindings<{version // 1000 + 1}')")
      self._compiled[source] = mod
    return {n: _check(driver.cuModuleGetFunction(mod, n.encode()), f"cuModuleGetFunction({n})") for n in names}

