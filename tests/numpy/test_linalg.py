"""tracegrad.numpy.linalg against numpy.linalg on well-conditioned random matrices, eagerly and traced, batched."""
import math

import numpy as np
import pytest
from hypothesis import given, strategies as st

import tracegrad
import tracegrad.numpy as tnp
from oracles import INTS, arrays, assert_close, check, check_grads, check_vmap, np_dtype, tol, traced, ulps

TOL = tol("float32", 1680, 168)


def well_conditioned(rng, batch, n, dtype=np.float32):
  """Random matrices made diagonally dominant: A = R + n*I with R ~ N(0, 1), rows shuffled so pivoting matters."""
  a = rng.standard_normal((*batch, n, n)) + n * np.eye(n)
  perm = rng.permutation(n)
  return a[..., perm, :].astype(dtype)


@st.composite
def matrices(draw, max_n=6):
  seed = draw(st.integers(0, 2**31))
  batch = tuple(draw(st.lists(st.integers(1, 3), max_size=2)))
  n = draw(st.integers(1, max_n))
  return np.random.default_rng(seed), batch, n


@given(matrices())
def test_det(case):
  rng, batch, n = case
  a = well_conditioned(rng, batch, n)
  check(tnp.linalg.det, np.linalg.det, a, **TOL)


@given(matrices())
def test_slogdet(case):
  rng, batch, n = case
  a = well_conditioned(rng, batch, n)
  check(lambda x: tuple(tnp.linalg.slogdet(x))[0], lambda x: np.linalg.slogdet(x)[0], a)
  check(lambda x: tuple(tnp.linalg.slogdet(x))[1], lambda x: np.linalg.slogdet(x)[1], a, **TOL)
  res = tnp.linalg.slogdet(a)
  assert isinstance(res, tnp.linalg.SlogdetResult) and res.sign.shape == batch


@given(matrices())
def test_inv(case):
  rng, batch, n = case
  a = well_conditioned(rng, batch, n)
  check(tnp.linalg.inv, np.linalg.inv, a, **TOL)


@st.composite
def solve_case(draw):
  rng, batch, n = draw(matrices())
  a = well_conditioned(rng, batch, n)
  kind = draw(st.sampled_from(["vector", "matrix", "broadcast"]))
  if kind == "vector": b = rng.standard_normal((n,))
  elif kind == "matrix": b = rng.standard_normal((*batch, n, draw(st.integers(1, 3))))
  else:  # b's batch broadcasts against a's (and may add axes)
    bb = [1 if draw(st.booleans()) else m for m in batch]
    extra = [draw(st.integers(1, 2))] if draw(st.booleans()) else []
    b = rng.standard_normal((*extra, *bb, n, draw(st.integers(1, 3))))
  return a, b.astype(np.float32)


@given(solve_case())
def test_solve(case):
  a, b = case
  check(tnp.linalg.solve, np.linalg.solve, a, b, **TOL)


def test_pivoting_needed():
  # a zero leading entry: elimination without row swaps would divide by zero
  a = np.array([[0.0, 1.0, 2.0], [1.0, 0.0, 3.0], [4.0, -3.0, 8.0]], np.float32)
  check(tnp.linalg.det, np.linalg.det, a, **TOL)
  check(tnp.linalg.inv, np.linalg.inv, a, **TOL)
  check(tnp.linalg.solve, np.linalg.solve, a, np.array([1.0, 2.0, 3.0], np.float32), **TOL)
  p = np.eye(4, dtype=np.float32)[[2, 0, 3, 1]]
  check(tnp.linalg.det, np.linalg.det, p)


def test_large_n():
  rng = np.random.default_rng(0)
  a = well_conditioned(rng, (2,), 48)
  b = rng.standard_normal((48,)).astype(np.float32)
  check(tnp.linalg.solve, np.linalg.solve, a, b, **TOL)
  check(lambda x: tnp.linalg.slogdet(x)[1], lambda x: np.linalg.slogdet(x)[1], a, **TOL)


def _body_size(f, *args) -> int:
  """The number of nodes in the body of the one composite node of f's graph."""
  from tracegrad.ir import Ops
  node, = [u for u in tracegrad.make_graph(f)(*args).nodes() if u.op is Ops.COMPOSITE]
  return len(node.arg[0].nodes())


def test_graph_size_is_linear_in_n():
  sizes = [_body_size(tnp.linalg.inv, tnp.ones((n, n))) for n in (16, 32)]
  assert sizes[1] < 2.2 * sizes[0] and sizes[1] < 2000, sizes


def test_singular_gives_inf_nan_not_error():
  s = np.array([[1.0, 2.0], [2.0, 4.0]], np.float32)
  assert float(np.asarray(tnp.linalg.det(s))) == 0.0
  sign, logdet = tnp.linalg.slogdet(s)
  assert float(np.asarray(sign)) == 0.0 and float(np.asarray(logdet)) == -math.inf
  assert not np.isfinite(np.asarray(tnp.linalg.inv(s))).all()
  assert not np.isfinite(np.asarray(tnp.linalg.solve(s, np.ones(2, np.float32)))).all()
  z = np.zeros((3, 3), np.float32)
  assert float(np.asarray(tnp.linalg.det(z))) == 0.0
  assert float(np.asarray(traced(tnp.linalg.det, tnp.asarray(z)))) == 0.0


def test_dtypes():
  # integers promote to float32; half types compute in float32 and come back in their own dtype
  a = np.array([[2, 1], [1, 3]], np.int32)
  for f in (tnp.linalg.det, tnp.linalg.inv):
    assert f(a).dtype == tnp.float32
  check(tnp.linalg.det, lambda x: np.linalg.det(x.astype(np.float64)), a, want_dtype="float32")
  for name in ("float16", "bfloat16"):
    h = a.astype(np_dtype(name))
    assert tnp.linalg.det(h).dtype.name == name
    assert_close(tnp.linalg.inv(h), np.linalg.inv(a.astype(np.float64)).astype(np_dtype(name)), dtype=name)
  assert tnp.linalg.solve(a, np.array([1, 2], np.int8)).dtype == tnp.float32
  assert tnp.linalg.det(np.zeros((0, 0), np.float32)).tolist() == 1.0


def test_linalg_errors():
  for f in (tnp.linalg.det, tnp.linalg.inv, tnp.linalg.slogdet):
    with pytest.raises(ValueError, match=r"\(2, 3\)"):
      f(np.ones((2, 3), np.float32))
    with pytest.raises(ValueError, match="square"):
      f(np.ones(3, np.float32))
  with pytest.raises(ValueError, match=r"solve.*\(3, 3\).*\(2,\)"):
    tnp.linalg.solve(np.eye(3, dtype=np.float32), np.ones(2, np.float32))
  with pytest.raises(ValueError, match="solve"):
    tnp.linalg.solve(np.eye(3, dtype=np.float32), np.ones((2, 3), np.float32))
  with pytest.raises(ValueError, match="solve"):
    tnp.linalg.solve(np.ones((2, 3, 3), np.float32), np.ones((4, 3, 1), np.float32))
  with pytest.raises(ValueError, match=r"\(2, 3\)"):
    tracegrad.jit(tnp.linalg.det)(np.ones((2, 3), np.float32))
  with pytest.raises(ValueError, match=r"solve.*\(3, 3\).*\(2,\)"):
    tracegrad.jit(tnp.linalg.solve)(np.eye(3, dtype=np.float32), np.ones(2, np.float32))


# ---- named composites: each routine is one node of a traced graph ----
A = well_conditioned(np.random.default_rng(4), (2,), 3)
B = np.random.default_rng(5).standard_normal((2, 3, 2)).astype(np.float32)
NAMED = {
  "solve": (tnp.linalg.solve, (A, B)),
  "inv": (tnp.linalg.inv, (A,)),
  "det": (tnp.linalg.det, (A,)),
  "slogdet": (tnp.linalg.slogdet, (A,)),
  "matrix_power": (lambda x: tnp.linalg.matrix_power(x, -3), (A / 3,)),
}


@pytest.mark.parametrize("name", NAMED)
def test_traced_as_one_named_node(name):
  f, args = NAMED[name]
  text = str(tracegrad.make_graph(f)(*args))
  node = {"solve": "c:f32[2,3,2] = solve a b", "det": "b:f32[2] = det a",
          "slogdet": "b:f32[2] c:f32[2] = slogdet a"}.get(name, f"b:f32[2,3,3] = {name} a")
  assert f"    {node}\n" in text and len(text.splitlines()) < 8, text
  eager = f(*args)
  got = tracegrad.jit(f)(*args)
  assert type(got) is type(eager)
  for g, e in zip(tracegrad.tree.leaves(got), tracegrad.tree.leaves(eager)):
    assert_close(g, e, **tol("float32", 84, 84))
  check_vmap(f, args, **tol("float32", 840, 84))
  smooth = (lambda x: f(x).logabsdet) if name == "slogdet" else f
  check_grads(smooth, args, modes=("fwd", "rev"))


# ---- norms ----
VECTOR_ORDS = [None, 1, 2, np.inf, -np.inf, 0, 3, 0.5, -1]
MATRIX_ORDS = [None, "fro", 1, -1, np.inf, -np.inf]
NORM_ULPS = {"float32": (168, 84), "float16": (2, 0.01), "bfloat16": (2.5, 0.00125)}   # (rtol, atol): atol is 1e-5


@st.composite
def norm_case(draw):
  dtype = draw(st.sampled_from(["float32", "float32", "float16", "bfloat16", "int8", "int32"]))
  nd = draw(st.integers(1, 3))
  shape = [draw(st.integers(1, 4)) for _ in range(nd)]
  x = draw(arrays(dtype, tuple(shape), low=-5, high=5))
  mode = draw(st.sampled_from(["none", "vector", "matrix"] if nd >= 2 else ["none", "vector"]))
  if mode == "none":
    ord = None if nd > 2 else draw(st.sampled_from(MATRIX_ORDS if nd == 2 else VECTOR_ORDS))
    axis = None
  elif mode == "vector":
    ord, axis = draw(st.sampled_from(VECTOR_ORDS)), draw(st.integers(-nd, nd - 1))
  else:
    ord = draw(st.sampled_from(MATRIX_ORDS))
    axis = tuple(draw(st.permutations(range(nd)))[:2])
  return x, ord, axis, draw(st.booleans()), dtype


@given(norm_case())
def test_norm(case):
  x, ord, axis, keepdims, dtype = case
  out = "float32" if dtype in INTS else dtype
  check(lambda x: tnp.linalg.norm(x, ord=ord, axis=axis, keepdims=keepdims),
        lambda x: np.linalg.norm(x.astype(np.float64), ord=ord, axis=axis, keepdims=keepdims), x,
        want_dtype=out, **tol(out, *NORM_ULPS[out]))


@given(st.data())
def test_vector_and_matrix_norm(data):
  x = data.draw(arrays("float32", (2, 3, 4), low=-5, high=5))
  ord = data.draw(st.sampled_from([1, 2, np.inf, -np.inf, 0]))
  keep = data.draw(st.booleans())
  check(lambda x: tnp.linalg.vector_norm(x, ord=ord, axis=(0, 2), keepdims=keep),
        lambda x: np.linalg.vector_norm(x, ord=ord, axis=(0, 2), keepdims=keep), x)
  check(lambda x: tnp.linalg.vector_norm(x, ord=ord), lambda x: np.linalg.vector_norm(x, ord=ord), x)
  mord = data.draw(st.sampled_from(MATRIX_ORDS[1:]))
  check(lambda x: tnp.linalg.matrix_norm(x, ord=mord, keepdims=keep),
        lambda x: np.linalg.matrix_norm(x, ord=mord, keepdims=keep), x)


def test_norm_errors():
  with pytest.raises(ValueError, match="norm"):
    tnp.linalg.norm(np.ones((2, 2, 2)), ord=1)
  with pytest.raises(ValueError, match="norm"):
    tnp.linalg.norm(np.ones(3), ord="fro")
  with pytest.raises(ValueError, match="norm"):
    tnp.linalg.norm(np.ones((2, 2)), ord=3, axis=(0, 1))
  with pytest.raises(NotImplementedError, match="nuc"):
    tnp.linalg.norm(np.ones((2, 2)), ord="nuc")
  with pytest.raises(ValueError, match="norm"):
    tnp.linalg.norm(np.ones((2, 2)), axis=(0, 0))


# ---- aliases ----
def test_aliases():
  rng = np.random.default_rng(1)
  a, b = rng.standard_normal((2, 3, 4)).astype(np.float32), rng.standard_normal((4, 5)).astype(np.float32)
  check(tnp.linalg.matmul, np.matmul, a, b, atol=ulps(84))
  check(tnp.linalg.matrix_transpose, lambda x: np.swapaxes(x, -1, -2), a)
  check(lambda x, y: tnp.linalg.tensordot(x, y, 1), lambda x, y: np.tensordot(x, y, 1), a, b, atol=ulps(84))
  check(tnp.linalg.vecdot, lambda x, y: np.sum(x * y, -1), a, a[0], atol=ulps(84))
  check(tnp.linalg.outer, np.outer, a[0, 0], b[0])
  with pytest.raises(ValueError, match="outer"):
    tnp.linalg.outer(a, b)
  check(lambda x: tnp.linalg.trace(x), lambda x: np.trace(x, axis1=-2, axis2=-1), a, atol=ulps(84))
  check(lambda x: tnp.linalg.trace(x, offset=1), lambda x: np.trace(x, 1, axis1=-2, axis2=-1), a, atol=ulps(84))
  check(lambda x, y, z: tnp.linalg.multi_dot([x, y, z]), lambda x, y, z: np.linalg.multi_dot([x, y, z]),
        a[0], b, b[0], atol=ulps(840))


@pytest.mark.parametrize("n", [0, 1, 2, 3, 5, -1, -2])
def test_matrix_power(n):
  a = well_conditioned(np.random.default_rng(2), (2,), 3)
  check(lambda x: tnp.linalg.matrix_power(x, n), lambda x: np.linalg.matrix_power(x, n), a, **tol("float32", 840, 840))
  m = np.array([[1, 1], [0, 1]], np.int32)
  if n >= 0: check(lambda x: tnp.linalg.matrix_power(x, n), lambda x: np.linalg.matrix_power(x, n), m)
