"""Tensor cores (lower/render_mma.py): which kernels qualify, their CUDA compiled by NVRTC with mma.sync for sm_90 and
without it for sm_75, and the kernel run on the CPU as its pre-sm_80 form (each thread and block in turn, the
accumulators summed by multiply-adds): the rows and columns each thread's accumulators stand for, and the stores
through what the kernel computes from each sum, checked against numpy."""
import ctypes
import re
import shutil
import subprocess

import numpy as np
import pytest

import tracegrad as tg
import tracegrad.numpy as tnp
from tracegrad.lower import render_mma
from tracegrad.lower.render_c import program_prelude
from tracegrad.lower.render_gpu import prelude, render_kernel
from tracegrad.lower.schedule import schedule

RNG = np.random.default_rng(0)


def _kernel(f, *shapes):
  args = [RNG.standard_normal(s).astype(np.float32) for s in shapes]
  prog = schedule(tg.make_graph(f)(*args))
  return prog, args


def _half_mm(half):
  return lambda a, b: tnp.matmul(a.astype(half), b.astype(half), preferred_element_type=tnp.float32)


CASES = {
  "bf16": (_half_mm(tnp.bfloat16), (128, 64), (64, 192)),
  "f16": (_half_mm(tnp.float16), (64, 32), (32, 128)),
  # a bfloat16 result: the sum runs in float32 (as JAX's) and is rounded once at the store
  "bf16_out": (lambda a, b: tnp.matmul(a.astype(tnp.bfloat16), b.astype(tnp.bfloat16)), (64, 64), (64, 64)),
  "batched": (lambda a, b: tnp.einsum("bij,bjk->bik", a.astype(tnp.bfloat16), b.astype(tnp.bfloat16),
                                      preferred_element_type=tnp.float32), (3, 64, 48), (3, 48, 64)),
}


def _mma_kernel(prog):
  found = [k for k in prog.kernels if render_mma.plan(k) is not None]
  assert len(found) == 1, [k.name for k in prog.kernels]
  return found[0]


def test_which_kernels_use_tensor_cores():
  for name, (f, *shapes) in CASES.items():
    assert render_mma.plan(_mma_kernel(_kernel(f, *shapes)[0])).half in (tg.numpy.bfloat16, tg.numpy.float16)
  no = [(lambda a, b: a @ b, (128, 64), (64, 128)),                    # float32 operands
        (_half_mm(tnp.bfloat16), (96, 64), (64, 128)),                   # 96 rows: not whole blocks of 64
        (_half_mm(tnp.bfloat16), (128, 40), (40, 128))]                  # K = 40: not whole steps of 16
  for f, *shapes in no:
    assert all(render_mma.plan(k) is None for k in _kernel(f, *shapes)[0].kernels)


@pytest.mark.parametrize("name", CASES)
def test_compiles_to_mma_for_sm90_and_without_for_sm75(name):
  pytest.importorskip("cuda.bindings.nvrtc")
  from tracegrad.devices.cuda import ptx
  f, *shapes = CASES[name]
  k = _mma_kernel(_kernel(f, *shapes)[0])
  src, launch = render_kernel(k, "cuda")
  assert launch[1] == (128, 1, 1) and launch[0][2] == (3 if name == "batched" else 1)
  assert ptx(prelude("cuda") + src).decode().count("mma.sync.aligned.m16n8k16") == 8
  assert "mma.sync" not in ptx(prelude("cuda") + src, "compute_75").decode()


@pytest.mark.parametrize("name", CASES)
def test_half_operands_compile_to_wgmma_for_sm90a(name):
  """Compiled for sm_90a (TRACEGRAD_WGMMA=1 on a Hopper GPU) the kernel takes one warpgroup wgmma per 16 steps and no
  mma.sync, and ptxas accepts it; for sm_90 it keeps mma.sync. (Its values are checked on a GPU only:
  benchmarks/tensor_cores.py, run by benchmarks/gpu_h200.sh.)"""
  pytest.importorskip("cuda.bindings.nvrtc")
  from tracegrad.devices.cuda import cubin, ptx
  f, *shapes = CASES[name]
  src, launch = render_kernel(_mma_kernel(_kernel(f, *shapes)[0]), "cuda")
  hopper = ptx(prelude("cuda") + src, "compute_90a").decode()
  assert "wgmma.mma_async.sync.aligned.m64n64k16.f32" in hopper and "mma.sync" not in hopper
  assert "wgmma.fence.sync.aligned" in hopper and "fence.proxy.async.shared::cta" in hopper
  assert "wgmma" not in ptx(prelude("cuda") + src, "compute_90").decode()
  assert cubin(prelude("cuda") + src, "sm_90a")


SHIM = """
struct tg_dim3 { unsigned x, y, z; };
static struct tg_dim3 threadIdx, blockIdx;
"""


def _run_on_cpu(src: str, launch, arrays: list[np.ndarray], tmp_path) -> None:
  """Compile the kernel as C (its pre-sm_80 branch) and run every block's every thread in turn on arrays."""
  cc = shutil.which("cc") or shutil.which("gcc")
  if cc is None: pytest.skip("no C compiler")
  body = src.replace('extern "C" __global__ void', "static void")
  name = re.search(r"static void (\w+)\(", body).group(1)
  n = body[body.index("(") + 1:body.index(")")].count("*")
  params = ", ".join(f"void *p{i}" for i in range(n))
  driver = (f"void run(unsigned gx, unsigned gy, unsigned gz, unsigned threads, {params}) {{\n"
            f"  for (blockIdx.z = 0; blockIdx.z < gz; blockIdx.z++) for (blockIdx.y = 0; blockIdx.y < gy; blockIdx.y++)\n"
            f"  for (blockIdx.x = 0; blockIdx.x < gx; blockIdx.x++) for (threadIdx.x = 0; threadIdx.x < threads; "
            f"threadIdx.x++)\n    {name}({', '.join(f'p{i}' for i in range(n))});\n}}\n")
  c = tmp_path / "k.c"
  c.write_text(program_prelude() + SHIM + body.replace("__restrict__", "restrict") + "\n" + driver)
  lib = tmp_path / "k.so"
  subprocess.run([cc, "-O1", "-std=gnu11", "-shared", "-fPIC", "-o", str(lib), str(c), "-lm"], check=True,
                 capture_output=True)
  (gx, gy, gz), (threads, _, _) = launch
  ctypes.CDLL(str(lib)).run(gx // threads, gy, gz, threads, *[a.ctypes.data_as(ctypes.c_void_p) for a in arrays])


@pytest.mark.parametrize("name", CASES)
def test_each_thread_sums_and_stores_its_outputs(name, tmp_path):
  f, *shapes = CASES[name]
  prog, args = _kernel(f, *shapes)
  k = _mma_kernel(prog)
  (kernel_i,) = [i for i, x in enumerate(prog.kernels) if x is k]
  nums = prog.calls[kernel_i]
  buffers = {n: np.zeros(prog.buffers[n].size, prog.buffers[n].dtype.np) for n in nums}
  for n, a in zip(prog.inputs, args):
    if n in buffers: buffers[n][:] = a.reshape(-1)
  for n in nums:
    if prog.buffers[n].data is not None: buffers[n][:] = np.asarray(prog.buffers[n].data).reshape(-1)
  assert len(prog.kernels) == 1, "the case should be one kernel"
  src, launch = render_kernel(k, "cuda")
  _run_on_cpu(src, launch, [buffers[n] for n in nums], tmp_path)
  (out_n, shape), = prog.outputs
  want = run_interp(f, args)
  np.testing.assert_allclose(buffers[out_n].reshape(shape), want, rtol=2e-6, atol=2e-5)


def run_interp(f, args):
  from tracegrad import run
  g = tg.make_graph(f)(*args)
  return run.executable(g, "interp")(args)[0]


# ---- TensorFloat-32: float32 contractions as JAX runs them on a GPU ----

@pytest.fixture
def on_gpu(monkeypatch):
  """Contractions traced as for a CUDA device, where float32 operands at the default precision are rounded to
  TensorFloat-32 (lax.dot.tensorfloat32)."""
  import importlib
  monkeypatch.setattr(importlib.import_module("tracegrad.lax.dot"), "_tensor_cores", lambda: True)


def _tf32(a: np.ndarray) -> np.ndarray:
  """a rounded to TensorFloat-32 (10 fraction bits), to nearest with ties to even."""
  bits = a.astype(np.float32).view(np.uint32)
  return ((bits + np.uint32(0xFFF) + ((bits >> 13) & 1)) & np.uint32(0xFFFFE000)).view(np.float32)


TF32_CASES = {
  "matmul": (lambda a, b: a @ b, (128, 32), (32, 64)),
  "einsum": (lambda a, b: tnp.einsum("bij,bjk->bik", a, b), (2, 64, 48), (2, 48, 128)),
  "dot_general": (lambda a, b: tg.lax.dot_general(a, b, (((0,), (0,)), ((), ()))), (16, 64), (16, 64)),
}


def _tf32_kernel(prog):
  """The program's kernel that runs on tensor cores, with its TensorFloat-32 buffers."""
  found = [(k, t) for k, t in zip(prog.kernels, render_mma.tf32_buffers(prog.kernels, prog.calls))
           if render_mma.plan(k, t) is not None]
  assert len(found) == 1, [k.name for k in prog.kernels]
  return found[0]


def test_float32_contractions_take_tensorfloat32_where_jax_would(on_gpu):
  for f, *shapes in TF32_CASES.values():
    k, tf32 = _tf32_kernel(_kernel(f, *shapes)[0])
    assert render_mma.plan(k, tf32).half is tg.numpy.float32 and len(tf32) == 2
  # a convolution's windows of a rounded input are exact too, padding zeros and all
  conv = lambda x, w: tg.lax.conv_general_dilated(x, w, (1, 1), "SAME")
  k, tf32 = _tf32_kernel(_kernel(conv, (2, 32, 16, 16), (64, 32, 3, 3))[0])
  assert render_mma.plan(k, tf32).steps == 32 * 9
  # HIGHEST precision (the call's, or the default's) keeps float32: no operand is rounded
  highest = [lambda a, b: tnp.matmul(a, b, precision="highest"),
             lambda a, b: tg.lax.dot(a, b, precision=(tg.lax.Precision.HIGHEST, None))]
  for f in highest:
    prog = _kernel(f, (128, 32), (32, 64))[0]
    assert not any(render_mma.tf32_buffers(prog.kernels, prog.calls)) and len(prog.kernels) == 1
  with tg.default_matmul_precision("float32"):
    assert len(_kernel(lambda a, b: a @ b, (128, 32), (32, 64))[0].kernels) == 1


def test_on_the_cpu_float32_contractions_stay_float32():
  a, b = RNG.standard_normal((64, 64)).astype(np.float32), RNG.standard_normal((64, 64)).astype(np.float32)
  assert len(_kernel(lambda a, b: a @ b, (128, 32), (32, 64))[0].kernels) == 1
  np.testing.assert_allclose(np.asarray(tg.jit(lambda a, b: a @ b)(a, b)), a.astype(np.float64) @ b,
                             rtol=1e-5, atol=1e-4)


def test_tensorfloat32_values_and_their_derivative(on_gpu):
  """Rounded operands summed in float32 (as JAX's GPU results, not float32's), the derivative as float32's."""
  a, b = RNG.standard_normal((64, 48)).astype(np.float32), RNG.standard_normal((48, 32)).astype(np.float32)
  got = np.asarray(tg.jit(lambda a, b: a @ b)(a, b))
  want = _tf32(a).astype(np.float64) @ _tf32(b)
  np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-4)
  assert np.abs(got - a.astype(np.float64) @ b).max() > 1e-3   # float32's result is not what a GPU gives
  ga = np.asarray(tg.grad(lambda a: (a @ b).sum())(a))
  np.testing.assert_allclose(ga, np.broadcast_to(_tf32(b).astype(np.float64).sum(1), ga.shape), rtol=1e-5, atol=1e-4)


@pytest.mark.parametrize("name", TF32_CASES)
def test_tensorfloat32_compiles_to_mma_for_sm90_and_without_for_sm75(on_gpu, name):
  pytest.importorskip("cuda.bindings.nvrtc")
  from tracegrad.devices.cuda import ptx
  from tracegrad.lower.render_gpu import render_program
  f, *shapes = TF32_CASES[name]
  src = render_program(_kernel(f, *shapes)[0], "cuda").source
  n = ptx(src).decode().count("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32")
  assert n and n % 16 == 0   # 2 x 8 a step of 16, for each step the compiler unrolls
  assert "mma.sync" not in ptx(src, "compute_75").decode()


@pytest.mark.parametrize("name", TF32_CASES)
def test_each_thread_sums_and_stores_its_tensorfloat32_outputs(on_gpu, name, tmp_path):
  f, *shapes = TF32_CASES[name]
  prog, args = _kernel(f, *shapes)
  k, _ = _tf32_kernel(prog)
  (kernel_i,) = [i for i, x in enumerate(prog.kernels) if x is k]
  rounded = [n for ks, ns in zip(prog.kernels, prog.calls) if ks is not k for n in ns if n not in prog.inputs]
  assert len(rounded) == 2   # the rounding kernels' outputs, in the operands' order
  buffers = {n: np.zeros(prog.buffers[n].size, prog.buffers[n].dtype.np) for n in prog.calls[kernel_i]}
  for n, a in zip(rounded, args): buffers[n][:] = _tf32(a).reshape(-1)
  src, launch = render_kernel(k, "cuda", tf32=_tf32_kernel(prog)[1])
  _run_on_cpu(src, launch, [buffers[n] for n in prog.calls[kernel_i]], tmp_path)
  (out_n, shape), = prog.outputs
  want = run_interp(f, [_tf32(a) for a in args])   # float32's result of the rounded operands
  np.testing.assert_allclose(buffers[out_n].reshape(shape), want, rtol=2e-6, atol=2e-5)
