"""What the GPU-style devices (opencl, cuda) share: running a compiled Program from the host. Kernels launch with the
sizes the renderer chose; control flow (COND, SCAN, WHILE) runs here, binding each sub-program's input buffers to
the operands, reading a branch index or a loop's flag back, and copying outputs into the results; so do host
callbacks, their operands read back and their results sent to the device.

A device gives a `Queue`: buffers of bytes, uploads, downloads, copies between buffers (at byte offsets) and
launches. The Program and its Kernels are read by their fields only (devices do not import the lowering).

A queue that `captures` (CUDA's, as a CUDA graph) records a program of kernels alone once for a set of buffer
addresses and replays it as one launch each time a call uses those addresses again: a jitted step called in a loop
on the buffers it keeps costs one launch, not one per kernel. A set is captured when seen a second time, so calls
whose buffers change every time (fresh outputs) launch kernel by kernel and pay no capture.
"""
from __future__ import annotations

import math
import time
from typing import Mapping

import numpy as np

from ..ir import Buffer, UOp
from .base import BufferSpec, Device, Program, cache_dir
from .interp import InterpDevice


class Queue:
  """One device's memory and work, in the order asked."""

  captures = False   # whether capture() records launches to replay as one

  def capture(self, launches: list[tuple]):
    """The launches ((function, args, size) each) recorded, not run, as one thing `replay` runs."""
    raise NotImplementedError

  def replay(self, captured) -> None: raise NotImplementedError
  def address(self, buf) -> int: raise NotImplementedError   # where buf's memory is (what a capture holds)

  def alloc(self, nbytes: int): raise NotImplementedError
  def upload(self, buf, data: np.ndarray) -> None: raise NotImplementedError
  def download(self, buf, out: np.ndarray) -> None: raise NotImplementedError
  def copy(self, dst, src, nbytes: int, dst_offset: int = 0, src_offset: int = 0) -> None: raise NotImplementedError
  def launch(self, function, args: list, size: tuple[tuple, tuple]) -> None:
    """Run `function` on args over (global items per dimension, items of a group per dimension)."""
    raise NotImplementedError
  def finish(self) -> None: raise NotImplementedError

  def time(self, function, args: list, size: tuple[tuple, tuple]) -> float:
    """Seconds one launch runs (by the host's clock, around a wait for everything asked before and for it)."""
    self.finish()
    t0 = time.perf_counter()
    self.launch(function, args, size)
    self.finish()
    return time.perf_counter() - t0


CAPTURES = 4   # buffer-address sets whose capture a runner keeps (the oldest goes first)


class Resident:
  """An array in one device's memory, as a Buffer the device computed holds it (ir.Buffer.resident)."""
  __slots__ = ("queue", "mem", "size", "dtype")

  def __init__(self, queue: Queue, mem, size: int, dtype: np.dtype):
    self.queue, self.mem, self.size, self.dtype = queue, mem, size, dtype

  def fetch(self) -> np.ndarray:
    out = np.empty(self.size, self.dtype)
    if self.size: self.queue.download(self.mem, out)
    return out

  def wait(self) -> None: self.queue.finish()


class Runner:
  """A compiled Program made ready to call on numpy inputs (`__call__`), or on Buffers giving Buffers that stay in
  the device's memory (`resident`): `functions` maps each kernel's name to the device's compiled function,
  `launches` each Kernel to (name, (global items, items per group)), each a tuple with one entry per launch
  dimension."""

  def __init__(self, prog: Program, queue: Queue, functions: dict, launches: dict):
    self.prog, self.queue, self.functions, self.launches = prog, queue, functions, launches
    self.nbytes = [b.nbytes for b in prog.buffers]
    self.timed, self.ns = False, []   # timed: wait for each item of the program and keep its nanoseconds
    written = set()

    def stores(p: Program):
      for k, nums in zip(p.kernels, p.calls):
        if getattr(k, "bodies", None) is not None:
          written.update(k.results)
          for body in k.bodies: stores(body)
          if any(b in written for body in k.bodies for b in body.inputs): written.update(k.operands)   # bound there
        else: written.update(nums[k.bufs.index(s.buf)] for p in (*k.phases, k) for s in p.stores)

    stores(prog)
    self.written_inputs = {n for n in prog.inputs if n in written}
    # constants no kernel writes are uploaded once; the others are copied in for every run
    self.consts = {n: self._upload(b) for n, b in enumerate(prog.buffers) if b.data is not None and n not in written}
    self.fresh_consts = [n for n, b in enumerate(prog.buffers) if b.data is not None and n in written]
    self._free: list[list] = []   # buffer sets of finished calls, for the next ones (one set per concurrent call)
    # a program of kernels alone on a queue that captures: buffer addresses -> its capture (None: seen once)
    self._captures: dict[tuple, object] | None = {} if queue.captures and all(
        getattr(k, "bodies", None) is None for k in prog.kernels) else None

  def _upload(self, spec):
    buf = self.queue.alloc(max(spec.nbytes, 1))
    self._fill(buf, spec.data, spec.dtype)
    return buf

  def _fill(self, buf, data, dtype) -> None:
    """Copy host data, as `dtype`, into the device buffer buf."""
    a = np.ascontiguousarray(data, dtype.np).reshape(-1)
    if a.size: self.queue.upload(buf, a)

  def __call__(self, inputs: list[np.ndarray]) -> list[np.ndarray]:
    """The outputs, as numpy arrays, for numpy inputs."""
    return [b.data for b in self.resident([Buffer(np.asarray(x).view()) for x in inputs], fetch=True)]

  def resident(self, inputs: list[Buffer], fetch: bool = False) -> list[Buffer]:
    """The outputs for input Buffers, left in the device's memory (copied to the host when `fetch`). An input
    already resident here is read where it is, unless the program writes to it."""
    prog, q = self.prog, self.queue
    if len(inputs) != len(prog.inputs):
      raise ValueError(f"run_program: the program takes {len(prog.inputs)} inputs, got {len(inputs)}")
    try:
      own = self._free.pop()
    except IndexError:
      own = [self.consts[n] if n in self.consts else q.alloc(max(nb, 1)) for n, nb in enumerate(self.nbytes)]
    try:
      bufs = list(own)   # control flow rebinds entries of the copy, never of `own`
      kept = {n: x for n, x in zip(prog.inputs, inputs) if n not in self.written_inputs}   # outputs that are inputs
      if not fetch:   # outputs outlive the call: each in memory of its own
        for n in {n for n, _ in prog.outputs} - set(kept) - set(self.consts): bufs[n] = q.alloc(max(self.nbytes[n], 1))
      for n, x in zip(prog.inputs, inputs): self._bind(bufs, n, x)
      for n in self.fresh_consts: self._fill(bufs[n], prog.buffers[n].data, prog.buffers[n].dtype)
      self.ns = []
      self.run(prog, bufs, self.timed)
      outs = dict(kept)
      for n, shape in prog.outputs:
        if n in outs: continue
        spec = prog.buffers[n]
        if n in self.consts: outs[n] = Buffer(np.asarray(spec.data, spec.dtype.np).reshape(shape))
        else: outs[n] = Buffer(resident=Resident(q, bufs[n], spec.size, spec.dtype.np), shape=shape, dtype=spec.dtype.np)
        if fetch: outs[n].data
      return [outs[n] if outs[n].shape == shape else Buffer(outs[n].data.reshape(shape)) for n, shape in prog.outputs]
    finally:
      self._free.append(own)

  def _bind(self, bufs: list, n: int, x: Buffer) -> None:
    """Input n of this call: x's memory when it is resident here and no kernel writes it, else a copy in bufs[n]."""
    spec = self.prog.buffers[n]
    if math.prod(x.shape) != spec.size:
      raise ValueError(f"run_program: input buffer {n} holds {spec.size} elements, got shape {x.shape}")
    r = x.resident
    if isinstance(r, Resident) and r.queue is self.queue and x.dtype == spec.dtype.np:
      if n not in self.written_inputs: bufs[n] = r.mem
      elif self.nbytes[n]: self.queue.copy(bufs[n], r.mem, self.nbytes[n])
    else:
      self._fill(bufs[n], x.data, spec.dtype)

  def time(self, arrays: list[np.ndarray], stored: list[int], min_time: float) -> tuple[float, list[np.ndarray]]:
    """(best seconds of one launch, the buffers `stored` after the first) of a Program of one kernel, on `arrays`
    (one per buffer), launched again until `min_time` seconds have passed."""
    (k,), (nums,) = self.prog.kernels, self.prog.calls
    bufs = [self._upload(BufferSpec(a.size, self.prog.buffers[n].dtype, a)) for n, a in enumerate(arrays)]
    name, size = self.launches[k]
    f, args = self.functions[name], [bufs[n] for n in nums]
    self.queue.launch(f, args, size)
    outs = []
    for n in stored:
      outs.append(np.empty_like(arrays[n]))
      if arrays[n].size: self.queue.download(bufs[n], outs[-1])
    best, t0 = float("inf"), time.perf_counter()
    while time.perf_counter() - t0 < min_time or best == float("inf"):
      best = min(best, self.queue.time(f, args, size))
    return best, outs

  def kernel_ns(self) -> list[float]:
    """Nanoseconds each item of the program took in the last timed run."""
    return list(self.ns)

  def run(self, prog: Program, bufs: list, timed: bool = False) -> None:
    if self._captures is not None and prog is self.prog and not timed and (c := self._captured(bufs)) is not None:
      self.queue.replay(c)
      return
    for k, nums in zip(prog.kernels, prog.calls):
      t0 = time.perf_counter_ns()
      if getattr(k, "bodies", None) is not None:
        self.control(k, bufs)
      else:
        name, size = self.launches[k]
        if all(size[0]): self.queue.launch(self.functions[name], [bufs[n] for n in nums], size)
      if timed:
        self.queue.finish()
        self.ns.append(float(time.perf_counter_ns() - t0))

  def _captured(self, bufs: list):
    """The capture of this program on these buffers, made on their second call (None before)."""
    key = tuple(self.queue.address(b) for b in bufs)
    if key not in self._captures:
      if len(self._captures) >= CAPTURES: del self._captures[next(iter(self._captures))]
      self._captures[key] = None
      return None
    if self._captures[key] is None:
      self._captures[key] = self.queue.capture(
          [(self.functions[name], [bufs[n] for n in nums], size) for k, nums in zip(self.prog.kernels, self.prog.calls)
           for name, size in (self.launches[k],) if all(size[0])])
    return self._captures[key]

  def copy_out(self, results, body: Program, bufs: list) -> None:
    for r, (o, _) in zip(results, body.outputs):
      if self.nbytes[r]: self.queue.copy(bufs[r], bufs[o], self.nbytes[r])

  def scalar(self, bufs: list, n: int):
    """The value of buffer n, a scalar, read back to the host."""
    a = np.empty(1, self.prog.buffers[n].dtype.np)
    self.queue.download(bufs[n], a)
    return a[0]

  def host_call(self, c, bufs: list) -> None:
    """A CALLBACK: its operands read back to the host, the Python function run, its results sent to the device."""
    call, shapes = c.arg
    vals = []
    for n, shape in zip(c.operands, shapes):
      a = np.empty(self.prog.buffers[n].size, self.prog.buffers[n].dtype.np)
      if a.size: self.queue.download(bufs[n], a)
      vals.append(a.reshape(shape))
    for r, v in zip(c.results, call(vals)):
      if self.nbytes[r]: self.queue.upload(bufs[r], np.ascontiguousarray(v, self.prog.buffers[r].dtype.np).reshape(-1))

  def control(self, c, bufs: list) -> None:
    ops, res = c.operands, c.results
    name = c.op.name
    if name == "CALLBACK": self.host_call(c, bufs)
    elif name == "COND":
      last = len(c.bodies) - 1
      body = c.bodies[min(max(int(self.scalar(bufs, ops[0])), 0), last)]
      for b, o in zip(body.inputs, ops[1:]): bufs[b] = bufs[o]
      self.run(body, bufs)
      self.copy_out(res, body, bufs)
    elif name == "SCAN":
      n_consts, n_carry, length, reverse = c.arg
      (body,) = c.bodies
      ins = body.inputs
      for r, i in zip(res[:n_carry], ops[n_consts:n_consts + n_carry]):
        if self.nbytes[r]: self.queue.copy(bufs[r], bufs[i], self.nbytes[r])
      for b, o in zip(ins[:n_consts], ops[:n_consts]): bufs[b] = bufs[o]
      for b, r in zip(ins[n_consts:n_consts + n_carry], res[:n_carry]): bufs[b] = bufs[r]
      xs = list(zip(ins[n_consts + n_carry:], ops[n_consts + n_carry:]))
      steps = {b: self.queue.alloc(max(self.nbytes[b], 1)) for b, _ in xs}   # step t's slice of each xs
      for t in (range(length - 1, -1, -1) if reverse else range(length)):
        for b, x in xs:
          bufs[b] = steps[b]
          if self.nbytes[b]: self.queue.copy(steps[b], bufs[x], self.nbytes[b], src_offset=t * self.nbytes[b])
        self.run(body, bufs)
        self.copy_out(res[:n_carry], body, bufs)
        for r, (o, _) in zip(res[n_carry:], body.outputs[n_carry:]):
          if self.nbytes[o]: self.queue.copy(bufs[r], bufs[o], self.nbytes[o], dst_offset=t * self.nbytes[o])
    else:   # WHILE
      (n_consts,) = c.arg
      cond, body = c.bodies
      for r, i in zip(res, ops[n_consts:]):
        if self.nbytes[r]: self.queue.copy(bufs[r], bufs[i], self.nbytes[r])
      for g in (cond, body):
        for b, o in zip(g.inputs[:n_consts], ops[:n_consts]): bufs[b] = bufs[o]
        for b, r in zip(g.inputs[n_consts:], res): bufs[b] = bufs[r]
      (flag, _), = cond.outputs
      while True:
        self.run(cond, bufs)
        if not self.scalar(bufs, flag): break
        self.run(body, bufs)
        self.copy_out(res, body, bufs)


class GPUDevice(Device):
  """What the GPU-style devices share: eager work on interp, a context made on first use (`_context`, which sets
  `_queue`), and runners over it. Each says why it is absent (`missing`) and compiles its sources (`compile`)."""

  def __init__(self, id: int = 0):
    self.id = id
    self._interp = InterpDevice(id)
    self._compiled: dict[str, object] = {}   # source -> the platform's compiled program
    self._ctx = None

  def missing(self) -> str: raise NotImplementedError
  def describe(self) -> str: raise NotImplementedError   # the chip and its driver: what a search's timings hold for
  def available(self) -> bool: return not self.missing()
  def _context(self): raise NotImplementedError
  def compile(self, source: str, names: list[str]) -> dict: raise NotImplementedError

  def search_path(self):
    """The sqlite file of the actions kernel search chose on this platform (in base.cache_dir)."""
    return cache_dir(self.platform) / "search.sqlite"

  def runner(self, prog: Program, functions: dict, launches: dict) -> Runner:
    """A function running the compiled Program `prog` on numpy inputs, giving its outputs."""
    self._context()
    return Runner(prog, self._queue, functions, launches)

  def put(self, a: np.ndarray) -> Buffer:
    """a as a Buffer with a copy in this device's memory (compiled programs read it there)."""
    self._context()
    a = np.ascontiguousarray(a)
    mem = self._queue.alloc(max(a.nbytes, 1))
    if a.size: self._queue.upload(mem, a.reshape(-1))
    return Buffer(a.view(), resident=Resident(self._queue, mem, a.size, a.dtype))

  def execute(self, outputs: list[UOp], known: Mapping[UOp, np.ndarray]) -> list[np.ndarray]:
    return self._interp.execute(outputs, known)
