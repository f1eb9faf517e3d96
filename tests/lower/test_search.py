"""Kernel search: actions are checked, candidates that fail to compile, crash, hang or compute a wrong result are
dropped, the best set is kept in the persistent cache, a second search is a cache hit that times nothing, and a
searched program slower as a whole than the default is not kept."""
import re
import subprocess
import sys

import numpy as np
import pytest

import tracegrad as tg
from tracegrad import run
from tracegrad.lower import opt, search
from tracegrad.lower.render_c import render_program
from tracegrad.lower.schedule import schedule
from oracles import ulps

A = np.random.default_rng(0).standard_normal((24, 40)).astype(np.float32)
B = np.random.default_rng(1).standard_normal((40, 72)).astype(np.float32)


def _kernel():
  return schedule(tg.make_graph(lambda x, y: x @ y)(A, B)).kernels[0]


@pytest.fixture
def small_space(cpu, monkeypatch):
  """A few actions and one round, so that a search takes seconds."""
  monkeypatch.setattr(opt, "AMOUNTS", {"threads": (0, 1), "collapse": (1, 2), "block": (0, 1), "rows": (1, 2, 4, 8), "width": (16, 64),
                                       "cols": (2,), "unroll": (1, 4), "order": (0, 1), "panel": (0, 1)})
  monkeypatch.setattr(search, "MAX_ROUNDS", 1)
  monkeypatch.setattr(search, "MIN_KERNEL_TIME", 0.0)
  monkeypatch.setattr(search, "TIMEOUT", 3.0)
  monkeypatch.setattr(search, "MIN_TIME", 0.005)
  return cpu


def test_actions_are_checked():
  k = _kernel()
  assert opt.shape(k) == "rows_by_width" and opt.apply(k, {"rows": 4}).opts == (("rows", 4),)
  with pytest.raises(ValueError, match="cols=2 is not an action"):
    opt.apply(k, {"cols": 2})
  with pytest.raises(ValueError, match="rows=5 is not an action"):
    opt.apply(k, {"rows": 5})
  assert {"block": 0} in opt.neighbours(k, {}) and {"threads": 0} in opt.neighbours(k, {})
  assert opt.neighbours(k, {"block": 0}) == [{}, {"block": 0, "threads": 0}]
  elementwise = schedule(tg.make_graph(lambda x: x * 2)(A.reshape(-1))).kernels[0]
  assert opt.shape(elementwise) == "plain" and opt.neighbours(elementwise, {}) == [{"threads": 0}]
  assert "parallel" not in opt.apply(_big_elementwise(), {"threads": 0}).source
  assert "parallel" in _big_elementwise().source
  nest = schedule(tg.make_graph(lambda x: x * 2)(np.zeros((256, 256), np.float32))).kernels[0]
  assert opt.shape(nest) == "plain_nest" and {"collapse": 1} in opt.neighbours(nest, {})
  assert "parallel for simd collapse(2)" in opt.apply(nest, {"collapse": 2}).source
  assert "parallel for\n" in opt.apply(nest, {"collapse": 1}).source


def _dots_kernel():
  """A filter gradient: a block of dot products."""
  from tracegrad.lower.render_c import dot_blocked
  x, dy = np.ones((2, 3, 8, 8), np.float32), np.ones((2, 8, 8, 8), np.float32)
  f = lambda w, x: (tg.lax.conv_general_dilated(x, w, (1, 1), "SAME") * dy).sum()
  return next(k for k in schedule(tg.make_graph(tg.grad(f))(np.ones((8, 3, 3, 3), np.float32), x)).kernels
              if dot_blocked(k))


@pytest.mark.parametrize("target", ["__AVX512F__", "__AVX__", None])
def test_no_candidate_is_the_default_under_another_name(target):
  """Given the host's target, a candidate leaves out every action at the default's amount: each set one action away
  differs from the default's code, and a set that steps back to a default amount is the shorter set. No candidate's
  register block holds more accumulators than the target has vector registers."""
  from tracegrad.lower.render_c import BLOCKS, REGISTERS, accumulators, block_sizes
  sizes = BLOCKS[target]
  for k in (_kernel(), _dots_kernel()):
    default = block_sizes(k, sizes)
    assert set(default) == ({"rows", "width"} if opt.shape(k) == "rows_by_width" else {"rows", "cols"})
    assert 0 < accumulators(k, sizes) <= REGISTERS[target]
    cands = opt.neighbours(k, {}, "c", target)
    for cand in cands:
      assert cand and all(default.get(a) != v for a, v in cand.items()), cand
      assert block_sizes(opt.apply(k, cand), sizes) != default or set(cand) - set(default), cand
      assert accumulators(opt.apply(k, cand), sizes) <= REGISTERS[target], cand
    assert len(cands) < len(opt.neighbours(k, {})), "the sizes that overflow the registers are left out"
    other = next(r for r in opt.AMOUNTS["rows"] if r != default["rows"])
    assert {} not in cands and {} in opt.neighbours(k, {"rows": other}, "c", target)
  assert block_sizes(_kernel(), sizes)["width"] == sizes["TG_VBYTES"] // 4
  assert block_sizes(opt.apply(_kernel(), {"rows": 2, "width": 64}), sizes) == {"rows": 2, "width": 64}
  assert accumulators(opt.apply(_kernel(), {"rows": 2, "width": 64}), sizes) == 2 * 256 // sizes["TG_VREG"]


def test_a_block_without_rows_has_no_rows_to_search():
  """A sum along one outer loop (a bias gradient) has no rows: sizing or ordering them would compile the same code."""
  (k,) = schedule(tg.make_graph(lambda g: g.sum(0))(np.ones((128, 512), np.float32))).kernels
  assert opt.shape(k) == "rows_by_width" and len(k.loops) == 1
  assert not any({"rows", "order"} & set(c) for c in opt.neighbours(k, {}, "c", "__AVX__"))
  assert {"width": 128} in opt.neighbours(k, {}, "c", "__AVX__")   # one row of 8 vectors: 8 accumulators


def test_search_knows_the_target_of_the_compiler(cpu, monkeypatch):
  """The target search sizes blocks for is that of the vector extensions the compiler's flags predefine."""
  for defined, target in ((set(), None), ({"__AVX__", "__AVX2__"}, "__AVX__"),
                          ({"__AVX__", "__AVX512F__"}, "__AVX512F__")):
    monkeypatch.setattr(type(cpu), "predefined", lambda self, d=frozenset(defined): d)
    assert search._host(cpu) == target
  monkeypatch.undo()
  assert ("__AVX__" in cpu.predefined()) == (search._host(cpu) is not None)


def _big_elementwise():
  return schedule(tg.make_graph(lambda x: x * 2)(np.zeros(1 << 16, np.float32))).kernels[0]


def test_search_keeps_the_best_valid_candidate_and_survives_bad_ones(small_space, monkeypatch):
  """rows=1 crashes, rows=2 hangs, rows=8 computes nothing: none of them may win."""
  render = search.render_program

  def sabotaged(prog, timed=False):
    src = render(prog, timed)
    rows = dict(prog.kernels[0].opts).get("rows")
    bad = {1: "__builtin_trap();", 2: "volatile int spin = 1; while (spin) {}", 8: ""}.get(rows)
    return src if bad is None else re.sub(r"void tg_run\(void \*\*bufs\) \{.*\}", "void tg_run(void **bufs) { (void)bufs; "
                                          + bad + " }", src, flags=re.S)

  monkeypatch.setattr(search, "render_program", sabotaged)
  k = _kernel()
  best = search.best_opts(k, 2, small_space)
  assert best.get("rows") not in (1, 2, 8)
  assert search.Cache(small_space).get(search.kernel_key(k, small_space)) == best
  calls = []
  for timer in ("time_library", "time_against"):
    monkeypatch.setattr(type(small_space), timer, lambda *a, **kw: calls.append(a))
  assert search.best_opts(k, 2, small_space) == best and calls == []   # a cache hit times nothing


def test_searched_program_computes_the_same(small_space):
  g = tg.make_graph(lambda x, y: (x @ y).sum(0) + 1.0)(A, B)
  exe = run.Executable(g, "cpu", search=2)
  (got,) = exe([A, B])
  np.testing.assert_allclose(got, (A @ B).sum(0) + 1.0, rtol=ulps(840), atol=ulps(840))
  assert all(isinstance(o, tuple) for k in exe.program.kernels for o in k.opts)


@pytest.mark.parametrize("ratio, kept", [(2.0, False), (0.99, False), (0.5, True)])
def test_a_searched_program_is_kept_only_when_it_runs_faster_whole(small_space, monkeypatch, tmp_path, ratio, kept):
  """The searched program runs in turn with the default, and is kept at half its time, not at twice nor at 0.99 of
  it (within the noise)."""
  monkeypatch.setenv("TRACEGRAD_CACHE_DIR", str(tmp_path))   # a verdict of its own
  prog = schedule(tg.make_graph(lambda x, y: (x @ y).sum(0) + 1.0)(A, B))
  real, pairs = type(small_space).time_against, []

  def timed(dev, lib, other, arrays, stored, *a, **kw):
    got, outs = real(dev, lib, other, arrays, stored, *a, **kw)
    assert got > 0
    pairs.append((lib.path, other.path))
    return ratio, outs
  monkeypatch.setattr(search, "best_opts", lambda k, *a, **kw: {"block": 0} if opt.shape(k) in ("dots", "rows_by_width") else {})
  monkeypatch.setattr(type(small_space), "time_against", timed)
  got = search.optimise(prog, 2, small_space)
  assert any(k.opts for k in got.kernels) == kept
  default = small_space.library_path(render_program(prog))
  assert len(pairs) == 1 and pairs[0][1] == default != pairs[0][0]   # one job: the searched library against the default's
  monkeypatch.setattr(type(small_space), "time_against", lambda *a, **kw: pytest.fail("the verdict is cached"))
  assert any(k.opts for k in search.optimise(prog, 2, small_space).kernels) == kept


@pytest.mark.parametrize("gain, kept", [(0.99, False), (0.5, True)])
def test_a_kernel_keeps_its_default_unless_a_candidate_wins_clearly(small_space, monkeypatch, tmp_path, gain, kept):
  """Each candidate's time is the default's times `gain`: 1% quicker is noise, half the time a win."""
  monkeypatch.setenv("TRACEGRAD_CACHE_DIR", str(tmp_path))
  real = type(small_space).time_against

  def timed(dev, lib, other, arrays, stored, *a, **kw):
    _, outs = real(dev, lib, other, arrays, stored, *a, **kw)
    return gain, outs
  monkeypatch.setattr(type(small_space), "time_against", timed)
  assert bool(search.best_opts(_kernel(), 2, small_space)) == kept


def test_search_width_from_the_environment(monkeypatch):
  monkeypatch.setenv("TRACEGRAD_SEARCH", "3")
  assert search.search_width() == 3
  monkeypatch.setenv("TRACEGRAD_SEARCH", "wide")
  with pytest.raises(ValueError, match="beam width"):
    search.search_width()
  with pytest.raises(ValueError, match="beam width"):
    tg.jit(lambda x: x, search=-1)


def test_processes_share_the_cache_safely(cpu, tmp_path, monkeypatch):
  """Two processes writing the same table at once lose nothing."""
  code = ("import sys, tracegrad as tg\nfrom tracegrad.lower.search import Cache\n"
          "c = Cache(tg.devices('cpu')[0])\n"
          "for i in range(40): c.put(f'{sys.argv[1]}-{i}', {'rows': i % 8}, 1.0)\n")
  monkeypatch.setenv("TRACEGRAD_CACHE_DIR", str(tmp_path))
  procs = [subprocess.Popen([sys.executable, "-c", code, name]) for name in ("a", "b")]
  assert [p.wait(timeout=120) for p in procs] == [0, 0]
  c = search.Cache(cpu)
  assert all(c.get(f"{n}-{i}") == {"rows": i % 8} for n in "ab" for i in range(40))


def test_a_kernel_is_timed_alone_on_the_cpu_and_refused_where_nothing_compiles(cpu):
  """time_alone runs one kernel by itself: a matmul 2000 times the work takes longer; interp has no compiled
  kernels."""
  big = schedule(tg.make_graph(lambda x, y: x @ y)(np.ones((512, 512), np.float32),
                                                  np.ones((512, 512), np.float32))).kernels[-1]   # after its packing
  small, large = search.time_alone(_kernel(), cpu), search.time_alone(big, cpu)
  assert 0 < small < large
  with pytest.raises(ValueError, match="time_alone: .*runs no compiled kernels"):
    search.time_alone(_kernel(), tg.local_devices(backend="interp")[0])
