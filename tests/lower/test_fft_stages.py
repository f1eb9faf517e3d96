"""fft_pairs computes numpy's FFT to within a few units of the dtype's precision, on the numpy evaluator and compiled
(C, and OpenCL where there is a platform), for smooth lengths, primes (Bluestein) and every length up to 64, in a graph
whose size grows with the number of stages only."""
import math

import numpy as np
import pytest

from tracegrad import run
from tracegrad.ir import Graph, UOp, dtypes
from tracegrad.lower.fft_stages import fft_pairs

LENGTHS = list(range(1, 65)) + [97, 128, 243, 625, 1000, 1009, 1024, 4093, 4096]
# compiling costs ~0.5 s a graph: a selection covering each radix, mixed radices and Bluestein
CPU_LENGTHS = [1, 2, 6, 7, 16, 17, 60, 97, 243, 1000, 1009, 4096]
DTYPES = [dtypes.float32, dtypes.float64]


def _data(shape) -> np.ndarray:
  rng = np.random.default_rng(list(shape))   # the same data whichever tests run, in whatever order
  return rng.normal(size=shape) + 1j * rng.normal(size=shape)


def _graph(shape, dtype) -> Graph:
  """The forward and the inverse transform of one input, as (re, im, inverse re, inverse im)."""
  re, im = UOp.param(shape, dtype), UOp.param(shape, dtype)
  return Graph((re, im), (*fft_pairs(re, im, inverse=False), *fft_pairs(re, im, inverse=True)))


def _run(graph: Graph, x: np.ndarray, dtype, backend: str) -> tuple[np.ndarray, ...]:
  outs = run.executable(graph, backend=backend)([x.real.astype(dtype.np), x.imag.astype(dtype.np)])
  return tuple(outs[i].astype(np.float64) + 1j * outs[i + 1] for i in range(0, len(outs), 2))


def _check(got: np.ndarray, want: np.ndarray, dtype) -> None:
  """Max abs error within 30 eps sqrt(log2(n) + 1) of the largest magnitude (numpy's own error is far below)."""
  n = want.shape[-1]
  bound = 30 * np.finfo(dtype.np).eps * math.sqrt(math.log2(max(n, 1)) + 1) * max(np.abs(want).max(initial=0), 1)
  assert got.shape == want.shape
  err = np.abs(got - want).max(initial=0)
  assert err <= bound, f"n={n}: max error {err:.3g} > {bound:.3g} ({err / bound * 30:.1f} of 30 units)"


def _check_both(x: np.ndarray, dtype, backend: str) -> None:
  fwd, inv = _run(_graph(x.shape, dtype), x, dtype, backend)
  x = x.real.astype(dtype.np) + 1j * x.imag.astype(dtype.np).astype(np.float64)   # the input as the graph sees it
  _check(fwd, np.fft.fft(x), dtype)
  _check(inv, np.fft.ifft(x) * x.shape[-1], dtype)


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: d.name)
@pytest.mark.parametrize("n", LENGTHS)
def test_matches_numpy_interp(n, dtype):
  _check_both(_data((3, n)), dtype, "interp")


@pytest.mark.parametrize("n", CPU_LENGTHS)
def test_matches_numpy_cpu(cpu, n):
  _check_both(_data((3, n)), dtypes.float32, "cpu")


@pytest.mark.parametrize("n", [12, 4093])
def test_float64_cpu(cpu, n):
  _check_both(_data((2, n)), dtypes.float64, "cpu")


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: d.name)
def test_matches_numpy_opencl(dtype):
  """The GPU renderer's kernels (on PoCL, where there is no GPU)."""
  from tracegrad.devices import opencl
  if opencl.missing(): pytest.skip(f"no OpenCL device: {opencl.missing()}")
  _check_both(_data((3, 60 if dtype is dtypes.float32 else 97)), dtype, "opencl")


@pytest.mark.parametrize("backend", ["interp", "cpu"])
@pytest.mark.parametrize("shape", [(20,), (2, 3, 4, 30), (1, 2, 97)])
def test_leading_axes(request, backend, shape):
  if backend == "cpu": request.getfixturevalue("cpu")
  _check_both(_data(shape), dtypes.float32, backend)


@pytest.mark.parametrize("n", [5, 48, 1009])
def test_inverse_of_forward_is_n_times_input(n):
  re, im = UOp.param((4, n), dtypes.float64), UOp.param((4, n), dtypes.float64)
  back = fft_pairs(*fft_pairs(re, im, inverse=False), inverse=True)
  x = _data((4, n))
  got, = _run(Graph((re, im), back), x, dtypes.float64, "interp")
  _check(got, n * x, dtypes.float64)


@pytest.mark.parametrize("shape", [(3, 0), (0, 8), (0,)])
def test_empty(shape):
  for got in _run(_graph(shape, dtypes.float32), np.zeros(shape, np.complex128), dtypes.float32, "interp"):
    assert got.shape == shape


def test_graph_grows_with_the_stages_not_the_length():
  def nodes(n):
    re, im = UOp.param((2, n), dtypes.float32), UOp.param((2, n), dtypes.float32)
    return len(Graph((re, im), fft_pairs(re, im, inverse=False)).nodes())
  for radix in (2, 3, 4, 5):
    per_power = np.diff([nodes(radix ** k) for k in range(2, 7)])   # a stage (or for 2, half of a radix-4 one)
    assert per_power.max() <= 30 * radix, (radix, per_power)
  assert nodes(4093) < 3 * nodes(8192)   # Bluestein: two FFTs of 2**13 and the chirps


def test_rejects_mixed_or_integer_operands():
  f32, f64 = UOp.param((4,), dtypes.float32), UOp.param((4,), dtypes.float64)
  with pytest.raises(TypeError, match="fft_pairs"): fft_pairs(f32, f64, inverse=False)
  with pytest.raises(TypeError, match="fft_pairs"): fft_pairs(*[UOp.param((4,), dtypes.int32)] * 2, inverse=False)
  with pytest.raises(TypeError, match="fft_pairs"): fft_pairs(f32, UOp.param((5,), dtypes.float32), inverse=False)
  with pytest.raises(ValueError, match="fft_pairs"): fft_pairs(*[UOp.param((), dtypes.float32)] * 2, inverse=True)
