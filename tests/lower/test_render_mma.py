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
