import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import tracegrad
import tracegrad.numpy as tnp
from tracegrad import lax, run
from tracegrad.devices import buffer_plan, recycled_memory
from tracegrad.devices.base import BufferSpec, Layout, Program
from tracegrad.devices.cpu import CPUDevice
from tracegrad.ir import UOp, dtypes
from tracegrad.lower.kernel import Kernel, Loop, Store
from tracegrad.lower.render_c import render_program
from tracegrad.lower.schedule import schedule

from oracles import assert_ulps_close

F32 = dtypes.float32
needs_cc = pytest.mark.skipif(CPUDevice().toolchain() is None, reason="no C compiler")


def overlapping(offsets, sizes):
  """Pairs of buffers whose bytes overlap."""
  spans = sorted((offsets[n], offsets[n] + -(-size // 64) * 64, n) for n, size in sizes.items())
  return [(a[2], b[2]) for i, a in enumerate(spans) for b in spans[i + 1:] if b[0] < a[1]]


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 5000), st.integers(0, 20), st.integers(0, 6)), min_size=1, max_size=30))
def test_buffers_needed_at_one_time_never_share_bytes(bufs):
  sizes = [(n, 4, count) for n, (count, _, _) in enumerate(bufs)]
  live = {n: (first, first + span) for n, (_, first, span) in enumerate(bufs)}
  offsets, total = buffer_plan.plan(sizes, live)
  nbytes = {n: 4 * count for n, (count, _, _) in enumerate(bufs)}
  assert all(off % buffer_plan.ALIGN == 0 and off + nbytes[n] <= total for n, off in offsets.items())
  for a, b in overlapping(offsets, nbytes): assert live[a][1] < live[b][0] or live[b][1] < live[a][0], (a, b)
  peak = max(sum(-(-nbytes[n] // 64) * 64 for n, (lo, hi) in live.items() if lo <= t <= hi) for t in range(27))
  assert peak <= total <= sum(-(-b // 64) * 64 for b in nbytes.values())


def chain(n=1024):
  """out = (2x + 1)^2 + x through three intermediates, each dead two kernels after it is written."""
  i = UOp.param((), dtypes.int64)
  x, t1, t2, t3, out = (UOp.param((n,), F32) for _ in range(5))
  at = lambda b: b.gather(i.reshape((1,)))
  ks = [Kernel("twice", (t1, x), (Loop(i, n),), (Store(t1, i, at(x) * UOp.const(F32, 2.0)),)),
        Kernel("inc", (t2, t1), (Loop(i, n),), (Store(t2, i, at(t1) + UOp.const(F32, 1.0)),)),
        Kernel("square", (t3, t2), (Loop(i, n),), (Store(t3, i, at(t2) * at(t2)),)),
        Kernel("add", (out, t3, x), (Loop(i, n),), (Store(out, i, at(t3) + at(x)),))]
  return Program(ks, [(1, 0), (2, 1), (3, 2), (4, 3, 0)], [BufferSpec(n, F32)] * 5, [0], [(4, (n,))])


def test_intermediates_that_are_never_needed_together_share_an_arena():
  lay = Layout.of(chain())
  offsets = dict(lay.arena)
  assert set(offsets) == {1, 2, 3}   # neither the input nor the output
  assert offsets[1] == offsets[3] != offsets[2] and lay.arena_bytes == 2 * 4096
  again = Layout.from_json(lay.to_json())
  assert again.arena == lay.arena and again.arena_bytes == lay.arena_bytes


def test_a_program_record_keeps_its_arena_and_one_from_before_arenas_is_not_found(tmp_path, monkeypatch):
  monkeypatch.setenv("TRACEGRAD_CACHE_DIR", str(tmp_path))
  d, lay = CPUDevice(), Layout.of(chain())
  d.keep_program("now", "source", lay)
  source, found = d.program_record("now")
  assert source == "source" and found.arena == lay.arena and found.arena_bytes == lay.arena_bytes
  before = {k: v for k, v in lay.to_json().items() if not k.startswith("arena")}
  monkeypatch.setattr(Layout, "to_json", lambda self: before)
  d.keep_program("before", "source", lay)
  assert d.program_record("before") is None   # scheduled again, and kept with an arena


@needs_cc
def test_a_program_on_a_shared_arena_computes_what_it_did(tmp_path, monkeypatch):
  monkeypatch.setenv("TRACEGRAD_CACHE_DIR", str(tmp_path))
  d, prog = CPUDevice(), chain()
  lib = d.compile(render_program(prog))
  for seed in range(3):
    x = np.random.default_rng(seed).normal(size=1024).astype(np.float32)
    (got,) = d.run_program(prog, lib, [x])
    np.testing.assert_array_equal(got, (x * np.float32(2) + np.float32(1)) ** 2 + x)


def _checked(graph):
  """Layout.of the scheduled graph, after checking that buffers sharing bytes are never used by one item."""
  prog = schedule(graph)
  lay = Layout.of(prog)
  live = buffer_plan.live(prog)
  offsets = dict(lay.arena)
  sizes = {n: prog.buffers[n].size * prog.buffers[n].dtype.np.itemsize for n in offsets}
  for a, b in overlapping(offsets, sizes): assert live[a][1] < live[b][0] or live[b][1] < live[a][0], (a, b)
  return lay


def mlp_loss(w1, w2, x):
  h = tnp.tanh(x @ w1)
  return (tnp.exp(h @ w2) - (h * h).sum()).mean()


def scanned(w, x):
  def body(c, xi):
    y = tnp.tanh(c @ w + xi)
    return y * 2.0, (y * y).sum()
  c, ys = lax.scan(body, x[0], x)
  return lax.cond(ys.sum() > 0, lambda c: (c @ w).sum(), lambda c: tnp.tanh(c).sum(), c)


def looped(w, x):
  c = lax.while_loop(lambda c: c.sum() < 100.0, lambda c: tnp.tanh(c @ w) + c + 0.5, x[0])
  return c, tracegrad.grad(scanned)(w, x)


@needs_cc
@pytest.mark.parametrize("f, shapes", [(tracegrad.grad(mlp_loss, argnums=(0, 1)), ((16, 32), (32, 8), (4, 16))),
                                       (looped, ((8, 8), (5, 8)))])
def test_real_programs_keep_their_values_on_a_shared_arena(f, shapes, tmp_path, monkeypatch):
  monkeypatch.setenv("TRACEGRAD_CACHE_DIR", str(tmp_path))
  real = recycled_memory.aligned

  def garbage(shape, dt):   # every arena starts as NaNs: a read of bytes not yet written this run shows
    a = real(shape, dt)
    a.reshape(-1).view(np.uint8)[...] = 0xFF
    return a
  monkeypatch.setattr(recycled_memory, "aligned", garbage)
  args = [np.random.default_rng(i).normal(size=s).astype(np.float32) * 0.3 for i, s in enumerate(shapes)]
  graph = tracegrad.make_graph(f)(*args)
  assert _checked(graph).arena_bytes > 0
  want = run.Executable(graph, "interp").run(tracegrad.tree.leaves(args))
  for _ in range(2):   # the second run on the workspace the first left
    got = run.Executable(graph, "cpu").run(tracegrad.tree.leaves(args))
    for g, w in zip(got, want): assert_ulps_close(g, w, 83, 8)
