"""The one place that picks a device and computes values of graphs: eagerly (numpy-backed, no compile per
operation) or compiled (a jitted Graph becomes one native program on the cpu device)."""
from __future__ import annotations

import copy
import os
import time
import weakref

import numpy as np

from .devices import CPUDevice, CUDADevice, Device, InterpDevice, OpenCLDevice, TracedValueError
from .devices.base import Layout
from .ir import Buffer, Graph, UOp
from .ir.shapes import INT64_MAX, fmt
from .parallel import distributed
from .viz import record

_DEVICES: dict[str, list[Device]] = {}
_realized: "weakref.WeakKeyDictionary[UOp, np.ndarray]" = weakref.WeakKeyDictionary()
_state: dict = {"probed": False, "backend": None}


def num_cpu_devices() -> int:
  """TRACEGRAD_NUM_CPU_DEVICES: how many devices the host backends (cpu, interp) expose, as XLA's host device count."""
  text = os.environ.get("TRACEGRAD_NUM_CPU_DEVICES", "1") or "1"
  if not text.isdigit() or int(text) < 1:
    raise ValueError(f"TRACEGRAD_NUM_CPU_DEVICES must be a positive integer, got {text!r}")
  return int(text)


# backends probed only when asked for by name (their libraries load slowly), with why each is absent
GPU_BACKENDS = {"opencl": OpenCLDevice, "cuda": CUDADevice}


def registry() -> dict[str, list[Device]]:
  """The available backends, each with the global device list (every process's devices, ids in process order); the
  cpu devices join on first use when a C compiler works, a GPU backend when it is first asked for (_probe)."""
  if not _state["probed"]:
    _state["probed"] = True
    n, me, count = num_cpu_devices(), distributed.process_index(), distributed.process_count()
    _DEVICES["interp"] = _global(InterpDevice, n, count)
    if CPUDevice(me * n).available(): _DEVICES["cpu"] = _global(CPUDevice, n, count)
    _state["local"] = {name: [d for d in ds if d.process_index == me] for name, ds in _DEVICES.items()}
  return _DEVICES


def _global(cls, n: int, count: int) -> list[Device]:
  out = []
  for k in range(n * count):
    d = cls(k)
    d.process_index = k // n
    out.append(d)
  return out


def _probe(name: str) -> None:
  """Add the GPU backend `name` to the registry when its device is present."""
  cls = GPU_BACKENDS.get(name)
  if cls is None or name in registry() or not cls().available(): return
  _DEVICES[name] = [cls(0)]
  _state["local"][name] = list(_DEVICES[name])


def _absent(name: str) -> str:
  """Why the backend `name` is not available, for an error message."""
  if name not in GPU_BACKENDS: return f"unknown backend {name!r}; available: {', '.join(_DEVICES)}"
  return f"no {name} device here ({GPU_BACKENDS[name]().missing()}); available: {', '.join(_DEVICES)}"


def local_devices(backend: str | None = None) -> list[Device]:
  """The devices of `backend` this process holds, as jax.local_devices."""
  devices(backend)   # checks the name
  return list(_state["local"][backend or default_backend()])


def devices(backend: str | None = None) -> list[Device]:
  """The devices of `backend` (default: the default backend).

  >>> tracegrad.devices("interp")
  [InterpDevice(id=0)]
  """
  name = backend or default_backend()
  _probe(name)
  if name not in registry(): raise ValueError(f"devices: {_absent(name)}")
  return list(_DEVICES[name])


def default_backend() -> str:
  """TRACEGRAD_DEVICE, else cpu when a C compiler works, else interp; read on first use, as JAX reads JAX_PLATFORMS."""
  if (name := _state.get("backend")) is not None: return name
  env = os.environ.get("TRACEGRAD_DEVICE")
  reg = registry()
  name = env or ("cpu" if "cpu" in reg else "interp")
  if name == "cpu" and "cpu" not in reg: name = "interp"  # the cpu device warned that it found no C compiler
  _probe(name)
  if name not in _DEVICES: raise ValueError(f"TRACEGRAD_DEVICE={name!r}: {_absent(name)}")
  _state["backend"] = name
  return name


def default_device() -> Device:
  registry()
  return _state["local"][default_backend()][0]


def host_memory() -> int:
  """Bytes of physical memory on this host (no bound where the system does not say)."""
  if "memory" not in _state:
    try:
      _state["memory"] = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (AttributeError, ValueError, OSError):
      _state["memory"] = INT64_MAX
  return _state["memory"]


def _check_fits(u: UOp, what: str) -> None:
  nbytes, mem = u.size * u.dtype.itemsize, host_memory()
  if nbytes > mem:
    raise MemoryError(f"{what}: an array of shape {fmt(u.shape)} and dtype {u.dtype} takes {nbytes} bytes "
                      f"({nbytes / 2**30:.1f} GiB), more than this host's {mem / 2**30:.1f} GiB of memory; reduce it "
                      f"(sum, max, ...) or slice it before reading it")


def realize(uops: list[UOp], what: str = "value") -> list[np.ndarray]:
  """The values of concrete nodes (no PARAM below them), computed on the default device and remembered. A value
  larger than the host's memory raises MemoryError (it may still be reduced inside a graph: only results are held)."""
  for u in uops:
    if u.traced: raise TracedValueError(what)
  todo = [u for u in uops if u not in _realized]
  for u in todo: _check_fits(u, what)
  if todo:
    for u, v in zip(todo, default_device().execute(todo, _realized)):
      if v.flags.writeable: v.flags.writeable = False
      _realized[u] = v
  return [_realized[u] for u in uops]


def concrete(uops: list[UOp]) -> list[UOp]:
  """Each concrete node computed (all in one pass, sharing what they have in common) and held as a BUFFER;
  traced nodes are returned as they are. Transforms call this on their results outside a trace, so that values
  do not stay lazy graphs that a later computation would evaluate again."""
  todo = [u for u in uops if not u.traced and u.depth > 0]
  if not todo: return list(uops)
  vals = dict(zip(todo, realize(todo)))
  return [UOp.buffer(vals[u]) if u in vals else u for u in uops]


class Executable:
  """A Graph made ready to run on a device: `program` holds its kernels when it was compiled (None when it runs on
  interp), and calling it with numpy input leaves gives the numpy outputs."""

  def __init__(self, graph: Graph, backend: str, search: int | None = None):
    from .lower.complex_split import complex_io
    from .lower.fingerprint import fingerprint
    from .lower.schedule import Unsupported, prepare, schedule
    from .lower.search import optimise, search_width
    # a copy: _executables holds this weakly keyed by `graph`, which must not be kept alive from here
    self.graph = copy.copy(graph)
    self.backend, self._program, self.source, self._runner = backend, None, None, None
    self.resident = False   # whether run_buffers leaves outputs in the device's memory (a GPU backend's program)
    self._device = local_devices(backend)[0]
    self._viz = record.bound(graph)   # VIZ records this program: its lowering, kernels and their times
    if backend == "interp": return
    t0 = time.perf_counter()
    width = search_width() if search is None else search
    prepared, key = None, None
    if backend not in GPU_BACKENDS and not width and _DEBUG < 2 and not _CHECK_PTX and self._viz is None:
      # the graph as traced where it has a stable form, so that a program found on disk skips prepare too
      key = fingerprint(graph)
      if key is None: key = fingerprint(prepared := prepare(graph))
      if key is not None and (hit := self._device.program_record(key)) is not None:
        self.source, layout = hit
        self._runner = self._packed(self._device.runner(layout, self._device.compile(self.source, tiered=True)))
        self._prepared = prepared   # scheduled again only if its kernels are asked for
        debug(1, f"compile: {layout.kernels} kernels from the disk cache in {1e3 * (time.perf_counter() - t0):.1f} ms")
        return
    try:
      with record.lowering(graph):
        self._program = schedule(prepare(graph) if prepared is None else prepared, prepared=True)
    except Unsupported as e:
      debug(1, f"compile: {e}; this graph runs on interp")
      return
    if width:
      t1 = time.perf_counter()
      self._program = optimise(self._program, width, self._device)
      debug(1, f"search: beam {width} over {len(self._program.kernels)} items in {time.perf_counter() - t1:.1f} s")
    if backend in GPU_BACKENDS:
      from .lower.render_gpu import prelude as render_gpu_prelude, render_program
      src = render_program(self._program, backend)
      self.source = src.source
      _show_source(self.source, render_gpu_prelude(backend))
      functions = self._device.compile(src.source, [name for name, _ in src.launches.values()])
      self._runner = self._device.runner(self._program, functions, src.launches)
      self._runner.timed = self._timed
      self.resident = not complex_io(graph)   # complex arrays go in and out as packed views, through the host
      self._runner = self._packed(self._runner)
      record.kernels(self._viz, self._program.kernels)
      debug(1, f"compile: {len(self._program.kernels)} kernels for {backend} in "
               f"{1e3 * (time.perf_counter() - t0):.1f} ms")
      return
    if _CHECK_PTX:
      from .devices.cuda import check_ptx
      from .lower import render_gpu
      check_ptx(render_gpu.render_program(self._program, "cuda").source)
    from .lower.render_c import program_prelude, render_program
    self.source = render_program(self._program, timed=self._timed)
    record.kernels(self._viz, self._program.kernels)
    _show_source(self.source, program_prelude())
    layout = Layout.of(self._program)
    self._runner = self._packed(self._device.runner(layout, self._device.compile(self.source, tiered=True)))
    if key is not None: self._device.keep_program(key, self.source, layout)
    debug(1, f"compile: {len(self._program.kernels)} kernels in {1e3 * (time.perf_counter() - t0):.1f} ms")

  @property
  def _timed(self) -> bool: return _DEBUG >= 2 or self._viz is not None

  @property
  def _plain(self) -> bool: return not _DEBUG and self._viz is None   # runs with nothing logged or timed

  def _packed(self, runner):
    """runner, taking and giving numpy's complex arrays where the graph does (its program reads them packed)."""
    from .lower.complex_split import complex_io
    return PackedRunner(runner, self.graph) if complex_io(self.graph) else runner

  @property
  def program(self):
    """The scheduled Program (None when the graph runs on interp); one found in the disk cache is scheduled again
    only when asked for here."""
    if self._program is None and self._runner is not None and not self.resident:
      from .lower.schedule import prepare, schedule
      self._program = schedule(prepare(self.graph) if self._prepared is None else self._prepared, prepared=True)
    return self._program

  def run_buffers(self, buffers: list[Buffer]) -> list[Buffer]:
    """The outputs as Buffers for input Buffers of the graph's input shapes; on a GPU backend they stay in its
    memory until read, and inputs already there are not copied."""
    if self.resident and self._plain: return self._runner.resident(buffers)
    return [Buffer(v) for v in self([b.data for b in buffers])]

  @property
  def runner(self) -> Callable | None:
    """What `run` calls when nothing is checked or timed: the compiled program on host arrays, or None (interp, a
    GPU backend's program, TRACEGRAD_DEBUG)."""
    return self._runner if self._plain and not self.resident else None

  def run(self, leaves: list[np.ndarray]) -> list[np.ndarray]:
    """The outputs for input leaves already of the graph's input shapes and dtypes."""
    if self._runner is not None and self._plain: return self._runner(leaves)
    return self(leaves)

  def __call__(self, leaves: list[np.ndarray]) -> list[np.ndarray]:
    if len(leaves) != len(self.graph.inputs):
      raise ValueError(f"run_graph: the graph takes {len(self.graph.inputs)} inputs, got {len(leaves)}")
    leaves = [v if type(v) is np.ndarray and v.dtype == p.dtype.np and v.shape == p.shape
              else np.asarray(v, dtype=p.dtype.np).reshape(p.shape) for p, v in zip(self.graph.inputs, leaves)]
    if self._runner is not None:
      if self._plain: return self._runner(leaves)
      t0 = time.perf_counter()
      out = self._runner(leaves)
      if self._viz is not None: record.times(self._viz, self._runner.kernel_ns())
      debug(2, f"run: {len(self.program.kernels)} kernels in {1e6 * (time.perf_counter() - t0):.1f} us")
      if _DEBUG >= 2:
        for k, ns in zip(self.program.kernels, self._runner.kernel_ns()):
          if not hasattr(k, "cost"):   # control flow: its loops' kernels together
            debug(2, f"  {k.name}: {ns / 1e3:.1f} us")
            continue
          flops, nbytes = k.cost()
          debug(2, f"  {k.name}: {ns / 1e3:.1f} us, {flops / max(ns, 1.0):.2f} GFLOPS, {nbytes / max(ns, 1.0):.2f} GB/s")
      return out
    from .ir import substitute
    mapping = {p: UOp.buffer(v) for p, v in zip(self.graph.inputs, leaves)}
    return realize(substitute(list(self.graph.outputs), mapping), "run_graph")


class PackedRunner:
  """A compiled program of a graph with complex inputs or outputs: it reads and writes complex arrays packed (a real
  array with a trailing axis of 2), which are views of numpy's complex arrays, so they pass without copies."""

  def __init__(self, runner, graph: Graph):
    from .lower.complex_split import from_packed, to_packed
    self._inner, self._from, self._to = runner, from_packed, to_packed
    self._ins = [p.dtype.is_complex for p in graph.inputs]
    self._outs = [o.dtype.np if o.dtype.is_complex else None for o in graph.outputs]

  def __getattr__(self, name): return getattr(self._inner, name)

  def __call__(self, leaves: list[np.ndarray]) -> list[np.ndarray]:
    outs = self._inner([self._to(a) if c else a for a, c in zip(leaves, self._ins)])
    return [o if d is None else self._from(o, d) for o, d in zip(outs, self._outs)]


_executables: "weakref.WeakKeyDictionary[Graph, dict[str, Executable]]" = weakref.WeakKeyDictionary()


def executable(graph: Graph, backend: str | None = None, search: int | None = None) -> Executable:
  """The graph compiled for the default backend (or `backend`), made once per graph, backend and kernel-search beam
  width (None: TRACEGRAD_SEARCH's)."""
  key = (backend or default_backend(), search)
  per = _executables.setdefault(graph, {})
  if key not in per: per[key] = Executable(graph, *key)
  return per[key]


def run_graph(graph: Graph, leaves: list[np.ndarray]) -> list[np.ndarray]:
  """The outputs of `graph` for concrete input leaves (numpy arrays matching its inputs)."""
  return executable(graph)(leaves)


def _debug_level() -> int:
  try:
    return int(os.environ.get("TRACEGRAD_DEBUG", "0") or 0)
  except ValueError:
    return 0


_DEBUG = _debug_level()


def _show_source(source: str, prelude: str) -> None:
  """TRACEGRAD_DEBUG=4 prints a program's source after the prelude every program shares; 5 prints it whole."""
  if _DEBUG < 4: return
  if _DEBUG < 5 and source.startswith(prelude):
    source = f"/* the prelude's {prelude.count(chr(10))} lines: TRACEGRAD_DEBUG=5 prints them */\n" + source[len(prelude):]
  debug(4, source)
# TRACEGRAD_CHECK_PTX=1: every program compiled for the cpu is also rendered for CUDA and compiled to PTX by NVRTC
# (no GPU needed), so a CUDA rendering bug fails where it is found
_CHECK_PTX = os.environ.get("TRACEGRAD_CHECK_PTX", "") not in ("", "0")


def debug(level: int, msg: str) -> None:
  """Print msg when TRACEGRAD_DEBUG >= level (1: traces and compiles, with the reason for a retrace; 2: each
  program run with its time; 4: generated source). The level is read when tracegrad is imported."""
  if _DEBUG >= level: print(f"tracegrad: {msg}", flush=True)
