"""complex64 and complex128 through tracegrad.numpy, eagerly and compiled (tracegrad.jit), against numpy in value,
shape and dtype, and against jax.numpy where JAX's semantics differ from numpy's (dtype promotion with weak Python
complex scalars, int and float16 operands widening to complex64, the default complex type without x64).

Random values have |z| < 10; tolerances are in units of the float32 epsilon (float64's for complex128), relative to
each value's magnitude (at least 1). Numpy references for complex64 are computed in complex128 and rounded, so that
numpy's own float32 rounding (its complex log1p loses every digit of a small real part) is not the standard. Special
values (zeros of either sign, infinities, nans) are compared part by part with numpy's own results (C99 Annex G as
glibc gives them), ignoring only the sign of a zero.
"""
import warnings

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st
from hypothesis.extra import numpy as hnp

import tracegrad
import tracegrad.numpy as tnp
from oracles import x64, x64_both

try:
  import jax
  import jax.numpy as jnp
except ImportError:  # pragma: no cover
  jax = jnp = None

needs_jax = pytest.mark.skipif(jax is None, reason="needs jax (the bench extra) to compare with")
EPS32, EPS64 = float(np.finfo(np.float32).eps), float(np.finfo(np.float64).eps)
C64, C128 = np.complex64, np.complex128


# ---- helpers ----
def close(got, want, ulps: float = 8, err: str = ""):
  """got has want's shape and dtype and, for inexact values, lies within `ulps` epsilons (of want's precision) of
  each value's magnitude or of 1, whichever is larger; other dtypes are equal."""
  g, w = np.asarray(got), np.asarray(want)
  assert g.shape == w.shape, f"{err}: shape {g.shape} != {w.shape}"
  assert g.dtype == w.dtype, f"{err}: dtype {g.dtype} != {w.dtype}"
  if w.dtype.kind not in "fc": return np.testing.assert_array_equal(g, w, err_msg=err)
  eps = EPS64 if w.dtype in (np.float64, np.complex128) else EPS32
  fin = np.isfinite(w)
  np.testing.assert_allclose(g[fin], w[fin], rtol=ulps * eps, atol=ulps * eps, err_msg=err)
  if not fin.all(): same_parts(g[~fin], w[~fin], err, ulps * eps)   # infinities and nans part by part


def ref(fn, *args, dtype=None, **kwargs):
  """numpy's fn on args widened to complex128 (float64 for real ones), rounded to `dtype`."""
  wide = [np.asarray(a).astype(C128 if np.iscomplexobj(a) else np.float64) if isinstance(a, np.ndarray) else a
          for a in args]
  with np.errstate(all="ignore"): out = fn(*wide, **kwargs)
  return np.asarray(out).astype(dtype) if dtype is not None else out


def same_parts(got, want, err: str, rtol: float = 64 * EPS32):
  """Special values: the real and imaginary parts agree with numpy's (nan with nan, inf with inf of its sign, finite
  parts within rtol), ignoring the sign of a zero."""
  g, w = np.asarray(got), np.asarray(want)
  assert g.dtype == w.dtype and g.shape == w.shape, f"{err}: {g.dtype}{g.shape} != {w.dtype}{w.shape}"
  if w.dtype.kind != "c": g, w = g + 0j, w + 0j
  ok = np.ones(w.shape, bool)
  for p in (np.real, np.imag):
    ok &= np.isclose(p(g), p(w), rtol=rtol, atol=0, equal_nan=True)
  bad = np.flatnonzero(~ok)
  assert not bad.size, f"{err}: " + "; ".join(f"{got_i} != numpy {want_i}" for got_i, want_i in zip(g[bad], w[bad]))


def cplx(shape, dtype=C64, bound: float = 7.0):
  """Random complex arrays with both parts in [-bound, bound] (|z| < 10 for the default)."""
  width = 32 if dtype == C64 else 64
  el = st.floats(-bound, bound, width=width, allow_nan=False, allow_infinity=False, allow_subnormal=False)
  part = hnp.arrays(np.float32 if width == 32 else np.float64, shape, elements=el)
  return st.tuples(part, part).map(lambda p: (p[0] + 1j * p[1]).astype(dtype))


# compiled programs are cached by shape: the compiled tests draw shapes from a few
FEW_SHAPES = st.sampled_from([(5,), (2, 3)])
ANY_SHAPE = hnp.array_shapes(min_dims=0, max_dims=3, min_side=1, max_side=5)

# ---- elementwise functions of one complex argument ----
UNARY = ["real", "imag", "conj", "conjugate", "angle", "abs", "absolute", "sign", "exp", "exp2", "expm1", "log",
         "log2", "log10", "log1p", "sqrt", "square", "reciprocal", "sin", "cos", "tan", "arcsin", "arccos", "arctan",
         "sinh", "cosh", "tanh", "arcsinh", "arccosh", "arctanh", "negative", "positive", "isnan", "isinf",
         "isfinite", "iscomplex", "isreal"]
# looser tolerances (in ulps) for the functions with the most rounding steps
ULPS = {"exp2": 16, "tan": 16, "tanh": 16}
all_unary = tracegrad.jit(lambda z: [getattr(tnp, n)(z) for n in UNARY])


def _numpy_unary(name, z):
  want = ref(getattr(np, name), z)
  return want.astype(C64 if want.dtype == C128 else np.float32 if want.dtype == np.float64 else want.dtype)


@given(data=st.data(), shape=ANY_SHAPE)
def test_unary_random_eager(data, shape):
  z = data.draw(cplx(shape))
  for name in UNARY:
    close(getattr(tnp, name)(z), _numpy_unary(name, z), ULPS.get(name, 8), name)


@settings(max_examples=10)
@given(data=st.data(), shape=FEW_SHAPES)
def test_unary_random_compiled(data, shape):
  z = data.draw(cplx(shape))
  for name, got in zip(UNARY, all_unary(z)):
    close(got, _numpy_unary(name, z), ULPS.get(name, 8), f"jit {name}")


def test_unary_complex128_random():
  """complex128 (64-bit mode) to a few float64 epsilons, eagerly and compiled."""
  rng = np.random.default_rng(0)
  z = (rng.uniform(-7, 7, (4, 50)) + 1j * rng.uniform(-7, 7, (4, 50))).astype(C128)
  z[0] *= 1e-3   # near 0, where the inverse functions switch to series
  with x64():
    f = tracegrad.jit(lambda a: [getattr(tnp, n)(a) for n in UNARY])
    for name, got in zip(UNARY, f(z)):
      want = ref(getattr(np, name), z)
      close(getattr(tnp, name)(z), want, ULPS.get(name, 8), name)
      close(got, want, ULPS.get(name, 8), f"jit {name}")


def test_unary_near_hard_points():
  """Near the branch points +-1 and +-i, the poles of tan and tanh, the zeros of sin, log's unit circle and 0."""
  pts = [1, -1, 1j, -1j, np.pi / 2, 1j * np.pi / 2, np.pi, 0, 1e-3, 1e-6j]
  offs = [0, 1e-4, -1e-4j, 1e-3 + 1e-3j, 0.05 - 0.02j]
  z = np.array([p + o for p in pts for o in offs], C64)
  for name, got in zip(UNARY, all_unary(z)):
    want = _numpy_unary(name, z)
    close(getattr(tnp, name)(z), want, ULPS.get(name, 8) * 2, name)
    close(got, want, ULPS.get(name, 8) * 2, f"jit {name}")


# ---- special values ----
SPECIAL = [0.0, -0.0, 1.0, -2.5, 0.5, 30.0, -100.0, 1e-30, 1e30, np.inf, -np.inf, np.nan]
SPECIAL_FNS = [n for n in UNARY if n not in ("square", "log1p")]


@pytest.mark.parametrize("dtype", [C64, C128])
def test_special_values(dtype):
  """Every pair of special parts, part by part as numpy (C99's Annex G, glibc's signs where C99 leaves them open),
  eagerly and compiled. log1p is compared by magnitude (numpy's forms log|1 + z| naively); square is left to the
  random tests, as numpy squares with a fused multiply-add on some hosts (1e30 + infj squares to -inf + infj there)."""
  z = np.array([complex(a, b) for a in SPECIAL for b in SPECIAL], dtype)
  with x64(dtype == C128):
    compiled = tracegrad.jit(lambda a: [getattr(tnp, n)(a) for n in SPECIAL_FNS + ["log1p"]])(z)
    rtol = 64 * (EPS32 if dtype == C64 else EPS64)
    for name, got_jit in zip(SPECIAL_FNS, compiled):
      with np.errstate(all="ignore"): want = getattr(np, name)(z)
      if name == "expm1":   # as JAX (and the Array API) a zero imaginary part stays exact: expm1(x + 0j) = expm1(x) + 0j
        zero = z.imag == 0
        with np.errstate(all="ignore"): want[zero] = np.expm1(z.real[zero]) + 1j * z.imag[zero]
      same_parts(getattr(tnp, name)(z), want, f"{name} eager", rtol)
      same_parts(got_jit, want, f"{name} jit", rtol)
    fin = np.isfinite(z)
    close(np.asarray(compiled[-1])[fin], ref(np.log1p, z[fin], dtype=dtype), 8, "log1p")


def test_special_values_of_arithmetic():
  """Division and multiplication follow numpy's complex arithmetic at zeros and infinities."""
  vals = [0.0, 1.0, -2.0, np.inf, np.nan]
  z = np.array([complex(a, b) for a in vals for b in vals], C64)
  w = np.repeat(z, z.size)
  z = np.tile(z, z.size)
  f = tracegrad.jit(lambda a, b: [a * b, a / b, a + b, a - b])
  with np.errstate(all="ignore"): want = [z * w, z / w, z + w, z - w]
  for name, got, jit_got, wv in zip(["*", "/", "+", "-"], [z * tnp.asarray(w), tnp.asarray(z) / w, tnp.asarray(z) + w,
                                                            tnp.asarray(z) - w], f(z, w), want):
    same_parts(got, wv, f"{name} eager")
    same_parts(jit_got, wv, f"{name} jit")


def test_branch_cuts_follow_the_sign_of_zero():
  """On the branch cuts the sign of the zero part picks the side, as numpy."""
  for x in [-2.5, -1.5, 2.5, 1.5]:
    cut = np.array([complex(x, 0.0), complex(x, -0.0), complex(0.0, x), complex(-0.0, x)], C64)
    for name in ["sqrt", "log", "arcsin", "arccos", "arctan", "arcsinh", "arccosh", "arctanh"]:
      with np.errstate(all="ignore"): want = getattr(np, name)(cut)
      same_parts(getattr(tnp, name)(cut), want, f"{name}({cut})")


# ---- arithmetic, comparisons, maximum and minimum ----
BINARY = {"add": np.add, "subtract": np.subtract, "multiply": np.multiply, "divide": np.divide,
          "true_divide": np.true_divide, "equal": np.equal, "not_equal": np.not_equal, "less": np.less,
          "less_equal": np.less_equal, "greater": np.greater, "greater_equal": np.greater_equal,
          "maximum": np.maximum, "minimum": np.minimum, "fmax": np.fmax, "fmin": np.fmin}
all_binary = tracegrad.jit(lambda a, b: [getattr(tnp, n)(a, b) for n in BINARY]
                           + [a + b, a - b, a * b, a / b, a == b, a != b, a < b, a <= b, a > b, a >= b])
OPS = ["+", "-", "*", "/", "==", "!=", "<", "<=", ">", ">="]


def _np_binary(a, b):
  with np.errstate(all="ignore"):
    return [np.asarray(f(a, b)) for f in BINARY.values()] + [np.asarray(eval(f"a {op} b", {"a": a, "b": b}))
                                                              for op in OPS]


def _with_ties(data, z):
  """z, and w sharing some real parts with z (so that the comparisons reach the imaginary parts) or equal to it."""
  w = data.draw(cplx(z.shape))
  pick = data.draw(hnp.arrays(np.int8, z.shape, elements=st.integers(0, 2)))
  w = np.where(pick == 1, z.real + 1j * w.imag, np.where(pick == 2, z, w)).astype(C64)
  return w


@given(data=st.data(), shape=ANY_SHAPE)
def test_binary_random_eager(data, shape):
  z = data.draw(cplx(shape))
  w = _with_ties(data, z)
  got = [getattr(tnp, n)(z, w) for n in BINARY] + [eval(f"tz {op} w", {"tz": tnp.asarray(z), "w": w}) for op in OPS]
  for name, g, wv in zip(list(BINARY) + OPS, got, _np_binary(z, w)):
    close(g, wv, 8, name)


@settings(max_examples=10)
@given(data=st.data(), shape=FEW_SHAPES)
def test_binary_random_compiled(data, shape):
  z = data.draw(cplx(shape))
  w = _with_ties(data, z)
  for name, g, wv in zip(list(BINARY) + OPS, all_binary(z, w), _np_binary(z, w)):
    close(g, wv, 8, f"jit {name}")


def test_comparisons_order_complex_lexicographically():
  z = np.array([1 + 2j, 1 + 2j, 1 - 1j, 2 - 5j, complex(np.nan, 0), 0 + 1j], C64)
  w = np.array([1 + 2j, 1 + 3j, 1 + 0j, 1 + 9j, 0j, complex(0, np.nan)], C64)
  for op in OPS:
    with np.errstate(all="ignore"): want = eval(f"z {op} w", {"z": z, "w": w})
    close(eval(f"z {op} w", {"z": tnp.asarray(z), "w": w}), want, err=op)
  close(tnp.maximum(z, w), np.maximum(z, w))
  close(tnp.minimum(z, w), np.minimum(z, w))
  close(tnp.fmax(z, w), np.fmax(z, w))


@given(data=st.data())
def test_power_random(data):
  """z ** w = exp(w log z) for complex exponents (|w| < 3), integer and real exponents as numpy's; 0.1 <= |z| (a tiny
  z makes |w log z| large, and exp's argument carries its rounding error times that)."""
  z = data.draw(cplx((6,), bound=5.0))
  z = np.where(np.abs(z) < 0.1, z + 0.5, z).astype(C64)
  w = data.draw(cplx((6,), bound=2.0))
  close(tnp.asarray(z) ** w, ref(np.power, z, w, dtype=C64), 64, "z ** w")
  close(tnp.power(z, w), ref(np.power, z, w, dtype=C64), 64, "power")
  for n in [0, 1, 2, 3, -1, -2, 0.5, 2.5]:
    close(tnp.asarray(z) ** n, ref(lambda a: a ** n, z, dtype=C64), 32, f"z ** {n}")
  close(2.0 ** tnp.asarray(z), ref(lambda a: 2.0 ** a, z, dtype=C64), 32, "2 ** z")
  close(tnp.float_power(z, w), ref(np.float_power, z, w, dtype=C64), 64, "float_power")


def test_power_compiled_and_at_zero():
  z = np.array([0j, 0j, 0j, 0j, 1 + 1j, -2 + 0.5j, 3j], C64)
  w = np.array([0j, 2 + 1j, -1 + 0j, -1 + 1j, 0j, 0.5 - 1j, 2 + 0j], C64)
  f = tracegrad.jit(lambda a, b: [a ** b, a ** 2, a ** 3, tnp.square(a), tnp.power(a, -2)])
  with np.errstate(all="ignore"):
    want = [ref(np.power, z, w, dtype=C64), z * z, z * z * z, z * z, ref(lambda a: a ** -2, z, dtype=C64)]
  for i, (g, wv) in enumerate(zip(f(z, w), want)):
    fin = np.isfinite(wv)
    close(np.asarray(g)[fin], wv[fin], 32, f"power {i}")
  same_parts(tnp.power(z, w)[:4], want[0][:4], "0 ** w")
  same_parts(f(z, w)[0][:4], want[0][:4], "jit 0 ** w")


# ---- dtypes: creation, promotion with Python scalars, astype ----
@needs_jax
@pytest.mark.parametrize("make", [
  lambda m: m.array([1 + 2j]), lambda m: m.array(1j), lambda m: m.asarray(1j), lambda m: m.array([1, 2j]),
  lambda m: m.array([1.0, 2j, 3]), lambda m: m.asarray(np.ones(2, np.complex64)),
  lambda m: m.asarray(np.complex64(1 - 1j)), lambda m: m.zeros(3, dtype=complex), lambda m: m.ones((2, 2), complex),
  lambda m: m.zeros(3, dtype="complex64"), lambda m: m.empty(2, dtype=complex), lambda m: m.eye(2, dtype=m.complex64),
  lambda m: m.identity(2, dtype=complex), lambda m: m.full(3, 1 + 2j), lambda m: m.full((2,), 2, dtype=complex),
  lambda m: m.full_like(m.ones(2, m.complex64), 1j), lambda m: m.ones_like(m.ones(2, m.complex64)),
  lambda m: m.zeros_like(m.ones(2, m.complex64)), lambda m: m.linspace(0, 1 + 1j, 5), lambda m: m.linspace(0j, 2, 3),
  lambda m: m.linspace(0, 1, 4, dtype=complex), lambda m: m.arange(3, dtype=complex),
  lambda m: m.asarray(np.arange(3) + 1j, dtype=m.complex64), lambda m: m.array([2j], dtype=m.complex64),
])
def test_creation_as_jax(make):
  """Values as numpy's, dtype as JAX's (complex64 by default: complex128 needs 64-bit mode)."""
  with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    want = make(jnp)
  got = make(tnp)
  close(got, np.asarray(want), 1)


@needs_jax
def test_complex128_with_x64_only():
  with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    assert tnp.asarray(np.ones(2, C128)).dtype == np.dtype(C64) == jnp.asarray(np.ones(2, C128)).dtype
    with x64_both():
      for make in [lambda m: m.zeros(2, complex), lambda m: m.asarray(np.ones(2, C128)), lambda m: m.array(1j),
                   lambda m: m.ones(2, m.float64) * 1j, lambda m: m.ones(2, m.int64) * 1j]:
        g, w = make(tnp), make(jnp)
        assert g.dtype == w.dtype == np.dtype(C128) and g.weak_type == w.weak_type


def _dt_weak(a):
  return np.asarray(a).dtype, bool(getattr(a, "weak_type", False))


PROMOTION_DTYPES = ["bool", "int8", "uint8", "int32", "float16", "bfloat16", "float32", "complex64"]
SCALARS = [1j, 2.0 + 0.5j, 2.0, 3, True]


@needs_jax
@pytest.mark.parametrize("dt", PROMOTION_DTYPES)
def test_promotion_with_python_scalars_as_jax(dt):
  """Python complex is weak: float32 + 1j is complex64, int32 * 1j is complex64, float16 + 1j is complex64..."""
  for s in SCALARS:
    for op in ["+", "*", "-", "/"]:
      if dt == "bool" and op == "-" and isinstance(s, bool): continue
      a, b = tnp.ones(3, dt), jnp.ones(3, dt)
      ctx = {"a": a, "b": b, "s": s}
      got, want = eval(f"a {op} s", ctx), eval(f"b {op} s", ctx)
      assert _dt_weak(got) == _dt_weak(want), f"{dt} {op} {s!r}: {_dt_weak(got)} != jax {_dt_weak(want)}"
      close(got, np.asarray(want), 8, f"{dt} {op} {s!r}")
      got, want = eval(f"s {op} a", ctx), eval(f"s {op} b", ctx)
      assert _dt_weak(got) == _dt_weak(want), f"{s!r} {op} {dt}: {_dt_weak(got)} != jax {_dt_weak(want)}"


@needs_jax
@pytest.mark.parametrize("dt", PROMOTION_DTYPES)
def test_promotion_of_arrays_as_jax(dt):
  """complex64 with any array dtype (float16 and bfloat16 included) is complex64; the scalar types as JAX's."""
  for other in [np.complex64, np.float32(2.0), np.complex64(1j)]:
    a = tnp.ones(2, dt) + tnp.ones(2, tnp.complex64)
    assert a.dtype == (jnp.ones(2, dt) + jnp.ones(2, jnp.complex64)).dtype
    if not isinstance(other, type):
      assert _dt_weak(tnp.ones(2, dt) * other) == _dt_weak(jnp.ones(2, dt) * other), (dt, other)
  assert tnp.result_type(dt, 1j) == jnp.result_type(dt, 1j)
  assert tnp.promote_types(dt, "complex64") == jnp.promote_types(dt, "complex64")


@needs_jax
def test_functions_keep_or_drop_complex_as_jax():
  """Result dtypes of functions of complex arrays (real ones for abs, angle, real, imag, var, std)."""
  cases = {
    "abs": lambda m, z: m.abs(z), "angle": lambda m, z: m.angle(z), "real": lambda m, z: m.real(z),
    "imag": lambda m, z: m.imag(z), "angle weak": lambda m, z: m.angle(1j), "real weak": lambda m, z: m.real(1j),
    "imag of float": lambda m, z: m.imag(m.ones(2)), "conj of int": lambda m, z: m.conj(m.ones(2, m.int32)),
    "sum": lambda m, z: m.sum(z), "mean": lambda m, z: m.mean(z), "var": lambda m, z: m.var(z),
    "std": lambda m, z: m.std(z), "prod": lambda m, z: m.prod(z), "max": lambda m, z: m.max(z),
    "cumsum": lambda m, z: m.cumsum(z), "cumprod": lambda m, z: m.cumprod(z), "sort": lambda m, z: m.sort(z),
    "sqrt of negative float": lambda m, z: m.sqrt(-m.ones(2)), "exp weak": lambda m, z: m.exp(1j),
    "sign": lambda m, z: m.sign(z), "isnan": lambda m, z: m.isnan(z), "round": lambda m, z: m.round(z),
    "matmul with float": lambda m, z: z[:, None] @ m.ones((1, 2)), "matmul with int": lambda m, z: z @ m.ones(3, int),
    "where": lambda m, z: m.where(m.real(z) > 0, z, 1.0), "sort_complex of f32": lambda m, z: m.sort_complex(m.ones(2)),
    "sort_complex of int32": lambda m, z: m.sort_complex(m.arange(3)), "power int": lambda m, z: z ** 2,
    "float ** 1j": lambda m, z: m.ones(2) ** 1j, "iscomplex": lambda m, z: m.iscomplex(z),
    "isreal of float": lambda m, z: m.isreal(m.ones(2)), "nan_to_num": lambda m, z: m.nan_to_num(z),
    "cov": lambda m, z: m.cov(m.stack([z, z * 2j])), "trapezoid": lambda m, z: m.trapezoid(z),
  }
  z = np.array([1 + 2j, -3 + 0.5j, 2 - 1j], C64)
  for name, f in cases.items():
    got, want = f(tnp, tnp.asarray(z)), f(jnp, jnp.asarray(z))
    assert _dt_weak(got) == _dt_weak(want), f"{name}: {_dt_weak(got)} != jax {_dt_weak(want)}"
    close(got, np.asarray(want), 16, name)


def test_astype_between_complex_and_real():
  """complex -> real keeps the real part (numpy warns, JAX does not); -> bool is true where either part is nonzero."""
  z = np.array([0 + 1j, 0j, 2.7 - 1j, -3.5 + 0j, 1e10 + 1j], C64)
  f = tracegrad.jit(lambda a: [a.astype(tnp.float32), a.astype(tnp.int32), a.astype(tnp.float16),
                               tnp.astype(a, bool), a.real.astype(tnp.complex64), tnp.astype(a, tnp.complex64)])
  with warnings.catch_warnings(), np.errstate(all="ignore"):
    warnings.simplefilter("ignore")
    want = [z.real, z.real.astype(np.int32), z.real.astype(np.float16), z.astype(bool), z.real.astype(C64), z]
    want[1][-1] = np.iinfo(np.int32).max   # out of range: XLA's saturating conversion, not the platform's
  got = [tnp.asarray(z).astype(tnp.float32), tnp.asarray(z).astype(tnp.int32), tnp.asarray(z).astype(tnp.float16),
         tnp.astype(z, bool), tnp.asarray(z.real).astype(tnp.complex64), tnp.astype(z, tnp.complex64)]
  for i, (g, gj, wv) in enumerate(zip(got, f(z), want)):
    close(g, wv, 1, f"eager {i}")
    close(gj, wv, 1, f"jit {i}")


def test_astype_method_to_bool_eager():
  assert bool(tnp.asarray(np.array([1j], C64)).astype(bool)[0])


def test_repr_and_str_as_jax():
  assert repr(tnp.array([1 + 2j])) == "Array([1.+2.j], dtype=complex64)"
  assert repr(tnp.array(1 + 2j)) == "Array(1.+2.j, dtype=complex64, weak_type=True)"
  assert str(tnp.array([1 + 2j, 3 - 1j])) == "[1.+2.j 3.-1.j]"
  if jnp is not None:
    for v in [[1 + 2j], [[0.5 - 1j, 2j], [3, np.nan]], 1j]:
      assert repr(tnp.array(v)) == repr(jnp.array(v)) and str(tnp.array(v)) == str(jnp.array(v))
    with x64_both():
      assert repr(tnp.array([1 + 2j], tnp.complex128)) == repr(jnp.array([1 + 2j], jnp.complex128))


# ---- reductions ----
REDUCTIONS = ["sum", "mean", "prod", "cumsum", "cumprod", "var", "std", "max", "min", "ptp", "argmax", "argmin",
              "nansum", "nanprod", "nanmean", "nanvar", "nanmax", "nanmin"]
RED_ULPS = {"prod": 64, "cumprod": 64, "nanprod": 64}


def _np_red(name, z, **kw):
  want = np.asarray(ref(getattr(np, name), z, **kw))
  return want.astype({"c": C64, "f": np.float32}.get(want.dtype.kind, np.int32))


@given(data=st.data(), shape=hnp.array_shapes(min_dims=1, max_dims=3, min_side=1, max_side=5))
def test_reductions_random_eager(data, shape):
  z = data.draw(cplx(shape, bound=1.5))   # moderate products
  axis = data.draw(st.sampled_from([None] + list(range(len(shape)))))
  for name in REDUCTIONS:
    kw = {} if axis is None and name.startswith("cum") else {"axis": axis}
    close(getattr(tnp, name)(z, **kw), _np_red(name, z, **kw), RED_ULPS.get(name, 16), f"{name} axis={axis}")


reduce_all = tracegrad.jit(lambda z: [getattr(tnp, n)(z, axis=1) for n in REDUCTIONS]
                           + [getattr(tnp, n)(z) for n in REDUCTIONS if not n.startswith("cum")])


@settings(max_examples=10)
@given(data=st.data())
def test_reductions_random_compiled(data):
  z = data.draw(cplx((3, 5), bound=1.5))
  names = REDUCTIONS + [n for n in REDUCTIONS if not n.startswith("cum")]
  kws = [{"axis": 1}] * len(REDUCTIONS) + [{}] * (len(names) - len(REDUCTIONS))
  for name, kw, got in zip(names, kws, reduce_all(z)):
    close(got, _np_red(name, z, **kw), RED_ULPS.get(name, 16), f"jit {name} {kw}")


def test_reductions_with_where_initial_keepdims_and_nans():
  z = np.array([[1 + 2j, complex(np.nan, 1), 3 - 1j], [2 + 0j, 2 - 1j, 2 + 1j]], C64)
  mask = np.array([[True, False, True], [True, True, False]])
  f = tracegrad.jit(lambda a: [tnp.max(a, axis=1, where=mask, initial=-5 + 0j), tnp.prod(a, axis=1, where=mask),
                               tnp.sum(a, axis=0, keepdims=True), tnp.nanmax(a, axis=1), tnp.argmax(a, axis=1),
                               tnp.argmin(a), tnp.nanprod(a), tnp.mean(a, axis=1, where=mask)])
  with np.errstate(all="ignore"):
    want = [np.max(z, axis=1, where=mask, initial=-5 + 0j), np.prod(z, axis=1, where=mask),
            np.sum(z, axis=0, keepdims=True), np.nanmax(z, axis=1), np.argmax(z, axis=1).astype(np.int32),
            np.int32(np.argmin(z)), np.nanprod(z), np.mean(z, axis=1, where=mask)]
  eager = [tnp.max(z, axis=1, where=mask, initial=-5 + 0j), tnp.prod(z, axis=1, where=mask),
           tnp.sum(z, axis=0, keepdims=True), tnp.nanmax(z, axis=1), tnp.argmax(z, axis=1), tnp.argmin(z),
           tnp.nanprod(z), tnp.mean(z, axis=1, where=mask)]
  for i, (g, gj, wv) in enumerate(zip(eager, f(z), want)):
    close(g, np.asarray(wv), 8, f"eager {i}")
    close(gj, np.asarray(wv), 8, f"jit {i}")
  assert tnp.prod(np.zeros((0, 2), C64), axis=0).tolist() == [1, 1]


@needs_jax
def test_reduction_dtypes_as_jax():
  z = np.ones((2, 3), C64)
  for name in ["sum", "mean", "prod", "var", "std", "max", "cumsum", "cumprod", "nanmean", "average"]:
    g, w = getattr(tnp, name)(z, axis=0), getattr(jnp, name)(z, axis=0)
    assert _dt_weak(g) == _dt_weak(w), name


# ---- contractions ----
@given(data=st.data())
def test_contractions_random(data):
  a = data.draw(cplx((3, 4), bound=3.0))
  b = data.draw(cplx((4, 2), bound=3.0))
  v = data.draw(cplx((4,), bound=3.0))
  r = data.draw(hnp.arrays(np.float32, (4, 2), elements=st.floats(-3, 3, width=32)))
  cases = [("@", lambda m, x, y, w, q: x @ y), ("matmul", lambda m, x, y, w, q: m.matmul(x, y)),
           ("dot", lambda m, x, y, w, q: m.dot(x, y)), ("dot vec", lambda m, x, y, w, q: m.dot(x, w)),
           ("einsum", lambda m, x, y, w, q: m.einsum("ij,jk->ik", x, y)),
           ("einsum trace", lambda m, x, y, w, q: m.einsum("ij,ji->", x, x.T.conj())),
           ("inner", lambda m, x, y, w, q: m.inner(x, w)), ("outer", lambda m, x, y, w, q: m.outer(w, w)),
           ("tensordot", lambda m, x, y, w, q: m.tensordot(x, y, 1)),
           ("complex @ real", lambda m, x, y, w, q: x @ q), ("real @ complex", lambda m, x, y, w, q: q.T @ x.T),
           ("matmul conj", lambda m, x, y, w, q: x @ m.conj(x).T)]
  f = _contractions(tuple(n for n, _ in cases), tuple(c for _, c in cases))
  jitted = f(a, b, v, r)
  for (name, c), gj in zip(cases, jitted):
    with warnings.catch_warnings():
      warnings.simplefilter("ignore")
      want = np.asarray(c(np, a.astype(C128), b.astype(C128), v.astype(C128), r.astype(np.float64))).astype(C64)
    close(c(tnp, tnp.asarray(a), b, v, r), want, 32, name)
    close(gj, want, 32, f"jit {name}")


_CONTRACT_CACHE = {}


def _contractions(names, fns):
  if names not in _CONTRACT_CACHE:
    _CONTRACT_CACHE[names] = tracegrad.jit(lambda a, b, v, r: [c(tnp, a, b, v, r) for c in fns])
  return _CONTRACT_CACHE[names]


@pytest.mark.parametrize("name", ["vdot", "vecdot"])
def test_vdot_and_vecdot_conjugate_their_first_argument(name):
  a, b = np.array([1 + 2j, 3 - 1j], C64), np.array([2 - 1j, 1j], C64)
  close(getattr(tnp, name)(a, b), getattr(np, name)(a, b), 8)


def test_norm_of_complex():
  a = np.array([1 + 2j, 3 - 1j], C64)
  close(tnp.linalg.norm(a), np.float32(np.linalg.norm(a)), 8)


# ---- where, indexing, movement ----
def test_where_indexing_and_updates():
  z = (np.arange(12).reshape(3, 4) * (1 - 0.5j) + 0.25j).astype(C64)
  idx = np.array([2, 0, 2])
  cases = [
    ("where", lambda m, a: m.where(m.real(a) > 3, a, -a), lambda a: np.where(a.real > 3, a, -a)),
    ("where scalar", lambda m, a: m.where(m.imag(a) < -2, 1j, a), lambda a: np.where(a.imag < -2, 1j, a)),
    ("slice", lambda m, a: a[1:, ::2], lambda a: a[1:, ::2]),
    ("gather", lambda m, a: a[idx], lambda a: a[idx]), ("gather 2", lambda m, a: a[idx, 1:3], lambda a: a[idx, 1:3]),
    ("take", lambda m, a: m.take(a, idx, axis=1), lambda a: np.take(a, idx, axis=1)),
    ("set", lambda m, a: a.at[1, 2].set(5j), None), ("add", lambda m, a: a.at[idx].add(1 + 1j), None),
    ("concat", lambda m, a: m.concatenate([a, a.conj()]), lambda a: np.concatenate([a, a.conj()])),
    ("transpose", lambda m, a: a.T, lambda a: a.T),
    ("reshape", lambda m, a: a.reshape(2, 6), lambda a: a.reshape(2, 6)),
    ("flip", lambda m, a: m.flip(a, 1), lambda a: np.flip(a, 1)),
    ("roll", lambda m, a: m.roll(a, 2), lambda a: np.roll(a, 2)),
    ("tile", lambda m, a: m.tile(a, (1, 2)), lambda a: np.tile(a, (1, 2))),
    ("diag", lambda m, a: m.diagonal(a), lambda a: np.diagonal(a)),
    ("triu", lambda m, a: m.triu(a), lambda a: np.triu(a)), ("pad", lambda m, a: m.pad(a, 1), lambda a: np.pad(a, 1)),
    ("clip real", lambda m, a: m.real(a).clip(0, 5), lambda a: a.real.clip(0, 5)),
  ]
  npset = z.copy(); npset[1, 2] = 5j
  npadd = z.copy(); np.add.at(npadd, idx, 1 + 1j)
  special = {"set": npset, "add": npadd}
  f = tracegrad.jit(lambda a: [c(tnp, a) for _, c, _ in cases])
  for (name, c, n), gj in zip(cases, f(z)):
    want = special[name] if n is None else n(z)
    close(c(tnp, tnp.asarray(z)), want, 1, name)
    close(gj, want, 1, f"jit {name}")
  close(tnp.asarray(z)[np.real(z) > 4], z[z.real > 4], 1, "boolean mask")


def test_at_multiply():
  z = np.array([1 + 1j, 2 - 1j], C64)
  want = np.array([-2 + 2j, 2 - 1j], C64)
  close(tnp.asarray(z).at[0].multiply(2j), want, 1)
  close(tracegrad.jit(lambda x: x.at[0].multiply(2j))(z), want, 1)   # runs on the interpreter (no pair form)


# ---- sorting ----
@given(data=st.data(), shape=hnp.array_shapes(min_dims=1, max_dims=2, min_side=1, max_side=7))
def test_sort_random(data, shape):
  """Ties in the real parts are common, so that the imaginary parts decide; argsort is stable as numpy's."""
  re_ = data.draw(hnp.arrays(np.float32, shape, elements=st.sampled_from([-1.0, 0.0, 2.5, np.nan])))
  im_ = data.draw(hnp.arrays(np.float32, shape, elements=st.sampled_from([-3.0, 0.5, 1.0, np.nan])))
  z = np.empty(shape, C64)
  z.real, z.imag = re_, im_
  axis = data.draw(st.sampled_from([-1, 0, None]))
  close(tnp.sort(z, axis=axis), np.sort(z, axis=axis), 0, "sort")
  close(tnp.argsort(z, axis=axis), np.argsort(z, axis=axis, kind="stable").astype(np.int32), 0, "argsort")
  flat = z.ravel()
  close(tnp.sort_complex(flat), np.sort_complex(flat), 0, "sort_complex")
  srt = np.sort(flat)
  for side in ("left", "right"):
    close(tnp.searchsorted(srt, flat, side=side), np.searchsorted(srt, flat, side=side).astype(np.int32), 0, side)


def test_sort_compiled_and_descending():
  z = np.array([[2 + 1j, 1 + 5j, 1 - 1j, complex(np.nan, 0), 1 + 5j, complex(0, np.nan)],
                [0j, -0.0 + 0j, 3j, -3j, 1 + 0j, 1 - 0j]], C64)
  f = tracegrad.jit(lambda a: [tnp.sort(a), tnp.argsort(a), tnp.sort(a, axis=0), tnp.sort_complex(a),
                               tnp.sort(a, descending=True), tnp.argsort(a, descending=True)])
  got = f(z)
  close(got[0], np.sort(z), 0)
  close(got[1], np.argsort(z, kind="stable").astype(np.int32), 0)
  close(got[2], np.sort(z, axis=0), 0)
  close(got[3], np.sort_complex(z), 0)
  close(got[4], np.sort(z)[:, ::-1], 0)
  close(tnp.sort(z, descending=True), got[4], 0)
  if jnp is not None:   # descending argsort keeps ties in index order, as JAX
    finite = z[1:]
    close(got[5][1:], np.asarray(jnp.argsort(finite, descending=True)), 0)
  for d, want in [("float32", C64), ("int32", C64), ("float16", C64), ("complex64", C64)]:
    assert tnp.sort_complex(tnp.array([3, 1, 2], d)).dtype == np.dtype(want)
  close(tnp.sort_complex(np.array([3, 1, 2], np.int32)), np.array([1, 2, 3], C64), 0)


# ---- predicates and small functions ----
def test_complex_predicates():
  z = np.array([1 + 0j, 1 + 2j, -0.0j, complex(np.nan, 0), complex(0, np.nan)], C64)
  x = np.array([1.0, -2.0], np.float32)
  for name in ["iscomplex", "isreal"]:
    close(getattr(tnp, name)(z), getattr(np, name)(z), err=name)
    close(getattr(tnp, name)(x), getattr(np, name)(x), err=name)
    close(tracegrad.jit(getattr(tnp, name))(z), getattr(np, name)(z), err=f"jit {name}")
  for v in [z, x, 1j, 1.0, [1, 2j], np.complex64(1), None]:
    assert tnp.iscomplexobj(v) == np.iscomplexobj(v) and tnp.isrealobj(v) == np.isrealobj(v), v
  assert tnp.iscomplexobj(tnp.asarray(z)) and tnp.isrealobj(tnp.asarray(x))
  for v in [np.array([1 + 1e-9j, 2 + 0j], C64), np.array([1 + 1e-3j], C64), x]:
    got, want = tnp.real_if_close(v), np.real_if_close(v)
    close(got, want, err=f"real_if_close {v}")
  close(tnp.real_if_close(np.array([1 + 1e-3j], C64), tol=1e-2), np.real_if_close(np.array([1 + 1e-3j], C64), 1e-2))
  with pytest.raises(TypeError, match="real_if_close"):
    tracegrad.jit(tnp.real_if_close)(z)


def test_round_rint_nan_to_num_and_errors():
  z = np.array([1.26 + 2.55j, -0.5 + 1.5j, 2.5 - 3.5j, complex(np.nan, np.inf)], C64)
  f = tracegrad.jit(lambda a: [tnp.round(a), tnp.round(a, 1), tnp.rint(a), tnp.nan_to_num(a)])
  want = [np.round(z), np.round(z, 1), np.rint(z), np.nan_to_num(z)]
  eager = [tnp.round(z), tnp.round(z, 1), tnp.rint(z), tnp.nan_to_num(z)]
  for i, (g, gj, wv) in enumerate(zip(eager, f(z), want)):
    close(g, wv, 1, f"eager {i}")
    close(gj, wv, 1, f"jit {i}")
  for fn in [tnp.floor, tnp.ceil, tnp.trunc, tnp.signbit, tnp.fabs, tnp.cbrt, tnp.isposinf]:
    with pytest.raises(TypeError, match="complex"): fn(z)
  for fn in [tnp.floor_divide, tnp.remainder, tnp.fmod, tnp.arctan2, tnp.hypot, tnp.logaddexp, tnp.heaviside]:
    with pytest.raises(TypeError, match="complex"): fn(z, z)
  with pytest.raises(TypeError, match="complex"): tnp.clip(z, 0, 1)
  with pytest.raises(TypeError, match="complex"): tnp.median(z)
  with pytest.raises(TypeError, match="complex"): tnp.quantile(z, 0.5)


def test_statistics_of_complex():
  """cov conjugates, corrcoef clips each part (as numpy), trapezoid, gradient, average and interp keep complex."""
  rng = np.random.default_rng(3)
  m = (rng.normal(size=(3, 6)) + 1j * rng.normal(size=(3, 6))).astype(C64)
  w = rng.uniform(0.5, 2, 6).astype(np.float32)
  cases = [("cov", lambda M, a: M.cov(a)), ("cov aweights", lambda M, a: M.cov(a, aweights=w)),
           ("corrcoef", lambda M, a: M.corrcoef(a)), ("trapezoid", lambda M, a: M.trapezoid(a, axis=1)),
           ("trapezoid x", lambda M, a: M.trapezoid(a, x=np.arange(6.0, dtype=np.float32))),
           ("gradient", lambda M, a: M.gradient(a[0])), ("average", lambda M, a: M.average(a, axis=1, weights=w)),
           ("average complex weights", lambda M, a: M.average(a[0], weights=a[1])),
           ("interp", lambda M, a: M.interp(np.array([0.5, 2.25], np.float32), np.arange(6.0, dtype=np.float32), a[0])),
           ("linspace", lambda M, a: M.linspace(a[0, 0], a[0, 1], 4))]
  for name, c in cases:
    want = np.asarray(c(np, m.astype(C128))).astype(C64)
    close(c(tnp, tnp.asarray(m)), want, 32, name)
    close(tracegrad.jit(lambda a: c(tnp, a))(m), want, 32, f"jit {name}")
