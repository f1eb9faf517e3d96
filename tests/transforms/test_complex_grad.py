"""Derivatives of functions of complex values, with JAX's conventions: the gradient of a real-valued f of z = x + iy
is df/dx - i df/dy; with holomorphic=True, grad, jacfwd and jacrev give the complex derivative; jvp and vjp of complex
functions; TypeErrors where JAX raises them. Compared with jax (eagerly, under tracegrad.jit and tracegrad.vmap, and
through scan, cond, fori_loop and while_loop), with analytic derivatives and with finite differences in complex128.
"""
import numpy as np
import pytest

import tracegrad
import tracegrad.numpy as tnp
from oracles import x64, x64_both

jax = pytest.importorskip("jax")
jnp = jax.numpy

EPS32 = float(np.finfo(np.float32).eps)
C64, C128 = np.complex64, np.complex128
RNG = np.random.default_rng(7)


def away(n: int, dtype=C64) -> np.ndarray:
  """Points off every branch cut: both parts in +-[0.2, 2]."""
  part = lambda: RNG.choice([-1.0, 1.0], n) * RNG.uniform(0.2, 2.0, n)
  return (part() + 1j * part()).astype(dtype)


Z, W = away(5), away(5)
X = RNG.uniform(-2, 2, 5).astype(np.float32)


def close(mine, theirs, tol: float = 2000 * EPS32, err: str = ""):
  """The leaves of two pytrees (tracegrad's, JAX's or numpy's) have one shape and dtype and agree to tol, relative
  to each value's magnitude (at least 1)."""
  ml, tl = tracegrad.tree.leaves(mine), jax.tree.leaves(theirs)
  assert len(ml) == len(tl), f"{err}: {len(ml)} leaves != {len(tl)}"
  for a, b in zip(ml, tl):
    a, b = np.asarray(a), np.asarray(b)
    assert a.shape == b.shape and a.dtype == b.dtype, f"{err}: {a.dtype}{a.shape} != {b.dtype}{b.shape}"
    np.testing.assert_allclose(a, b, rtol=tol, atol=tol, err_msg=err)


# ---- real-valued functions of complex inputs: grad f = df/dx - i df/dy ----
REAL_FNS = {
  "abs squared": lambda m, z: m.sum(m.abs(z) ** 2),
  "real exp": lambda m, z: m.sum(m.real(m.exp(z))),
  "abs sin": lambda m, z: m.sum(m.abs(m.sin(z))),
  "imag log": lambda m, z: m.sum(m.imag(m.log(z))),
  "angle": lambda m, z: m.sum(m.angle(z)),
  "z conj z": lambda m, z: m.sum(m.real(z * m.conj(z))),
  "abs sqrt": lambda m, z: m.sum(m.abs(m.sqrt(z))),
  "real tanh": lambda m, z: m.sum(m.real(m.tanh(z))),
  "imag tan": lambda m, z: m.sum(m.imag(m.tan(z))),
  "imag arcsin": lambda m, z: m.sum(m.imag(m.arcsin(z))),
  "real arccos": lambda m, z: m.sum(m.real(m.arccos(z))),
  "abs arctanh": lambda m, z: m.sum(m.abs(m.arctanh(z))),
  "real arctan": lambda m, z: m.sum(m.real(m.arctan(z))),
  "imag arcsinh": lambda m, z: m.sum(m.imag(m.arcsinh(z))),
  "real cosh": lambda m, z: m.sum(m.real(m.cosh(z) * m.sinh(z))),
  "log10 expm1 log1p": lambda m, z: m.sum(m.real(m.log10(z)) + m.imag(m.expm1(z)) + m.abs(m.log1p(z))),
  "exp2 reciprocal": lambda m, z: m.sum(m.real(m.exp2(z)) + m.imag(1 / z) + m.imag(m.reciprocal(z))),
  "power": lambda m, z: m.sum(m.real(z ** 2.5) + m.imag(z ** (1 + 1j)) + m.abs(z ** 3)),
  "prod": lambda m, z: m.real(m.prod(z)),
  "mean var": lambda m, z: m.abs(m.mean(z)) + m.var(z),
  "max": lambda m, z: m.imag(m.max(z)),
  "sort": lambda m, z: m.real(m.sort(z) @ m.arange(5.0)),
  "cumprod cumsum": lambda m, z: m.sum(m.real(m.cumprod(z)) + m.imag(m.cumsum(z))),
  "outer matmul": lambda m, z: m.abs(m.sum(m.outer(z, z) @ z)),
  "where": lambda m, z: m.sum(m.abs(m.where(m.real(z) > 0, z, 2j * z))),
  "gather and set": lambda m, z: m.real(z[2] * z[1]) + m.sum(m.imag(z.at[1].set(3j) * z)),
  "conjugate": lambda m, z: m.sum(m.real(m.conjugate(z) * 1j * z[::-1])),
  "einsum": lambda m, z: m.real(m.einsum("i,i->", z, m.conj(z[::-1]))),
  "square": lambda m, z: m.sum(m.real(m.square(z)) * m.imag(z)),
}


def test_grad_of_real_functions_as_jax():
  """Eagerly and compiled (all the gradients in one jitted program)."""
  fns = list(REAL_FNS.items())
  compiled = tracegrad.jit(lambda z: [tracegrad.grad(lambda a, f=f: f(tnp, a))(z) for _, f in fns])(Z)
  for (name, f), got_jit in zip(fns, compiled):
    want = jax.grad(lambda a: f(jnp, a))(Z)
    close(tracegrad.grad(lambda a: f(tnp, a))(Z), want, err=name)
    close(got_jit, want, err=f"jit {name}")


def _fd_grad(f, z: np.ndarray, h: float = 1e-6) -> np.ndarray:
  """df/dx - i df/dy by central differences, in complex128."""
  g = np.zeros_like(z)
  for i in range(z.size):
    e = np.zeros_like(z)
    e.flat[i] = h
    dx = (float(f(z + e)) - float(f(z - e))) / (2 * h)
    dy = (float(f(z + 1j * e)) - float(f(z - 1j * e))) / (2 * h)
    g.flat[i] = dx - 1j * dy
  return g


@pytest.mark.parametrize("name", ["abs sin", "imag arcsin", "abs arctanh", "imag arcsinh", "power", "prod", "sort",
                                  "mean var", "real tanh", "exp2 reciprocal"])
def test_grad_matches_finite_differences(name):
  f = REAL_FNS[name]
  with x64():
    z = Z.astype(C128)
    got = np.asarray(tracegrad.grad(lambda a: f(tnp, a))(z))
    want = _fd_grad(lambda a: f(tnp, tnp.asarray(a)), z)
  np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6, err_msg=name)


def test_grad_of_sign_is_its_derivative():
  """sign(z) = z / |z| is differentiated as that (finite differences agree); JAX defines sign's derivative as zero,
  also for complex values, so here tracegrad deliberately differs from jax.grad."""
  f = lambda m, z: m.sum(m.imag(m.sign(z)) + 2 * m.real(m.sign(z)))
  with x64():
    z = Z.astype(C128)
    got = np.asarray(tracegrad.grad(lambda a: f(tnp, a))(z))
    want = _fd_grad(lambda a: f(tnp, tnp.asarray(a)), z)
  np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)


def test_grad_at_points_on_the_axes_has_no_nan():
  """Exactly real or exactly imaginary points: each function's branches that are not taken read harmless values, so
  no nan reaches the gradient through a select."""
  z = np.array([2j, -0.5j, 0.5 + 0j, -3 + 0j, 1.5j, 0.3 - 0j], C64)
  fns = {"reciprocal": lambda m, a: m.imag(m.reciprocal(a)), "arcsin": lambda m, a: m.real(m.arcsin(a) * (1 + 1j)),
         "arccos": lambda m, a: m.imag(m.arccos(a * 0.5)), "arcsinh": lambda m, a: m.abs(m.arcsinh(a * 0.3)),
         "arctanh": lambda m, a: m.real(m.arctanh(a * 0.3)), "tanh": lambda m, a: m.real(m.tanh(a * 40)),
         "sinh": lambda m, a: m.imag(m.sinh(a * 0.01 + 60)), "sqrt": lambda m, a: m.imag(m.sqrt(a)),
         "exp": lambda m, a: m.imag(m.exp(a)) + m.real(m.exp(a)), "cosh": lambda m, a: m.imag(m.cosh(a) + m.sinh(a)),
         "tanh small": lambda m, a: m.imag(m.tanh(a)), "sin cos": lambda m, a: m.imag(m.sin(a) + m.cos(a)),
         "arctan": lambda m, a: m.real(m.arctan(a * 0.3) * (1 - 1j)), "log": lambda m, a: m.imag(m.log(a) * 1j),
         "power": lambda m, a: m.imag(a ** (0.5 + 0j) + (a + 3) ** 2.5)}
  for name, f in fns.items():
    got = np.asarray(tracegrad.grad(lambda a: tnp.sum(f(tnp, a)))(z))
    assert np.isfinite(got).all(), f"{name}: {got}"
    close(got, jax.grad(lambda a: jnp.sum(f(jnp, a)))(z), err=name)


def test_grad_of_several_and_of_real_inputs():
  close(tracegrad.grad(lambda a, b: tnp.sum(tnp.abs(a * b) + tnp.real(a / b)), argnums=(0, 1))(Z, W),
        jax.grad(lambda a, b: jnp.sum(jnp.abs(a * b) + jnp.real(a / b)), argnums=(0, 1))(Z, W))
  f = lambda m, x: m.sum(m.abs(m.exp(1j * x)) ** 2 + m.real(m.exp((1 + 2j) * x)) + m.imag(m.sqrt(x + 0j)))
  close(tracegrad.grad(lambda x: f(tnp, x))(X), jax.grad(lambda x: f(jnp, x))(X))
  # astype to a real type keeps the real part (JAX deprecates that cast, so compared with its derivative: 2 Re z)
  close(tracegrad.grad(lambda a: tnp.sum(a.astype(tnp.float32) ** 2))(Z), (2 * Z.real + 0j).astype(C64))
  close(tracegrad.value_and_grad(lambda a: REAL_FNS["abs sin"](tnp, a))(Z),
        jax.value_and_grad(lambda a: REAL_FNS["abs sin"](jnp, a))(Z))


def test_grad_complex128():
  with x64_both():
    z = Z.astype(C128)
    for name in ["abs sin", "imag arcsin", "power", "prod"]:
      f = REAL_FNS[name]
      close(tracegrad.grad(lambda a: f(tnp, a))(z), jax.grad(lambda a: f(jnp, a))(z), 1e-12, name)


# ---- holomorphic functions: the complex derivative ----
HOLO = {
  "exp": (lambda m, z: m.exp(z), lambda z: np.exp(z)),
  "sin": (lambda m, z: m.sin(z), lambda z: np.cos(z)),
  "cos": (lambda m, z: m.cos(z), lambda z: -np.sin(z)),
  "tan": (lambda m, z: m.tan(z), lambda z: 1 + np.tan(z) ** 2),
  "cube": (lambda m, z: z ** 3, lambda z: 3 * z ** 2),
  "log": (lambda m, z: m.log(z), lambda z: 1 / z),
  "log10": (lambda m, z: m.log10(z), lambda z: 1 / (z * np.log(10))),
  "log1p": (lambda m, z: m.log1p(z), lambda z: 1 / (1 + z)),
  "expm1": (lambda m, z: m.expm1(z), lambda z: np.exp(z)),
  "exp2": (lambda m, z: m.exp2(z), lambda z: np.log(2) * 2 ** z),
  "sqrt": (lambda m, z: m.sqrt(z), lambda z: 0.5 / np.sqrt(z)),
  "tanh": (lambda m, z: m.tanh(z), lambda z: 1 - np.tanh(z) ** 2),
  "sinh": (lambda m, z: m.sinh(z), lambda z: np.cosh(z)),
  "cosh": (lambda m, z: m.cosh(z), lambda z: np.sinh(z)),
  "inverse": (lambda m, z: 1 / z, lambda z: -1 / z ** 2),
  "reciprocal": (lambda m, z: m.reciprocal(z), lambda z: -1 / z ** 2),
  "square": (lambda m, z: m.square(z), lambda z: 2 * z),
  "power": (lambda m, z: z ** (1.5 + 0.5j), lambda z: (1.5 + 0.5j) * z ** (0.5 + 0.5j)),
  "arcsin": (lambda m, z: m.arcsin(z), lambda z: 1 / np.sqrt(1 - z * z)),
  "arccos": (lambda m, z: m.arccos(z), lambda z: -1 / np.sqrt(1 - z * z)),
  "arctan": (lambda m, z: m.arctan(z), lambda z: 1 / (1 + z * z)),
  "arcsinh": (lambda m, z: m.arcsinh(z), lambda z: 1 / np.sqrt(z * z + 1)),
  "arccosh": (lambda m, z: m.arccosh(z), lambda z: 1 / (np.sqrt(z - 1) * np.sqrt(z + 1))),
  "arctanh": (lambda m, z: m.arctanh(z), lambda z: 1 / (1 - z * z)),
  "product": (lambda m, z: m.sin(z) * m.exp(z) - z * m.log(z), lambda z: (np.cos(z) + np.sin(z)) * np.exp(z)
              - np.log(z) - 1),
}
# JAX differentiates arccosh as 1 / sqrt(z^2 - 1), which has the wrong sign where Re z < 0 (off the cut, where numpy's
# principal arccosh and finite differences agree with 1 / (sqrt(z - 1) sqrt(z + 1))): compared with the analytic one
NOT_AS_JAX = {"arccosh"}


def test_holomorphic_grad_is_the_complex_derivative():
  """grad(holomorphic=True) through vmap, eagerly and compiled, against the analytic derivative and jax.grad."""
  fns = list(HOLO.items())
  compiled = tracegrad.jit(lambda z: [tracegrad.vmap(tracegrad.grad(lambda a, f=f: f(tnp, a), holomorphic=True))(z)
                                      for _, (f, _) in fns])(Z)
  for (name, (f, d)), got_jit in zip(fns, compiled):
    want = d(Z.astype(C128)).astype(C64)
    got = tracegrad.vmap(tracegrad.grad(lambda a: f(tnp, a), holomorphic=True))(Z)
    close(got, want, err=name)
    close(got_jit, want, err=f"jit {name}")
    if name not in NOT_AS_JAX:
      close(got, jax.vmap(jax.grad(lambda a: f(jnp, a), holomorphic=True))(Z), err=f"{name} vs jax")
    close(tracegrad.grad(lambda a: f(tnp, a), holomorphic=True)(Z[0]), want[0], err=f"{name} scalar")


def test_holomorphic_jacobians_as_jax():
  f = lambda m, z: m.sin(z) * z[::-1] + m.exp(z[0])
  for jac, jjac in [(tracegrad.jacfwd, jax.jacfwd), (tracegrad.jacrev, jax.jacrev)]:
    want = jjac(lambda a: f(jnp, a), holomorphic=True)(Z)
    close(jac(lambda a: f(tnp, a), holomorphic=True)(Z), want, err=jac.__name__)
    close(tracegrad.jit(jac(lambda a: f(tnp, a), holomorphic=True))(Z), want, err=f"jit {jac.__name__}")
  close(tracegrad.jacfwd(lambda x: tnp.exp(1j * x) * x)(X), jax.jacfwd(lambda x: jnp.exp(1j * x) * x)(X))
  close(tracegrad.jacrev(lambda a: tnp.abs(a) ** 2 + tnp.angle(a[::-1]))(Z),
        jax.jacrev(lambda a: jnp.abs(a) ** 2 + jnp.angle(a[::-1]))(Z))
  close(tracegrad.jacrev(lambda x: tnp.abs(x * (1 + 1j)))(X), jax.jacrev(lambda x: jnp.abs(x * (1 + 1j)))(X))
  close(tracegrad.hessian(lambda a: tnp.sum(a ** 4), holomorphic=True)(Z[:3]),
        jax.hessian(lambda a: jnp.sum(a ** 4), holomorphic=True)(Z[:3]))


# ---- jvp and vjp ----
JV_FNS = {
  "complex to complex": (lambda m, z: m.sin(z) * m.conj(z) + m.sqrt(z), Z),
  "complex to real": (lambda m, z: m.abs(z) + m.angle(z), Z),
  "real to complex": (lambda m, x: m.exp(1j * x) + x, X),
  "mixed reductions": (lambda m, z: m.cumprod(z) + m.sum(z * z[::-1]), Z),
}


@pytest.mark.parametrize("name", list(JV_FNS))
def test_jvp_and_vjp_as_jax(name):
  f, x = JV_FNS[name]
  t = (W if x.dtype == C64 else RNG.uniform(-1, 1, x.shape).astype(np.float32))
  want_out, want_t = jax.jvp(lambda a: f(jnp, a), (x,), (t,))
  close(tracegrad.jvp(lambda a: f(tnp, a), (x,), (t,)), (want_out, want_t), err="jvp")
  close(tracegrad.jit(lambda a, b: tracegrad.jvp(lambda c: f(tnp, c), (a,), (b,)))(x, t), (want_out, want_t),
        err="jit jvp")
  ct = np.asarray(want_out)
  ct = (ct * (0.5 - 1j)).astype(ct.dtype) if ct.dtype == C64 else (ct * 0.5).astype(ct.dtype)
  want = jax.vjp(lambda a: f(jnp, a), x)[1](ct)
  out, vjp_fn = tracegrad.vjp(lambda a: f(tnp, a), x)
  close(out, want_out, err="vjp primal")
  close(vjp_fn(ct), want, err="vjp")
  close(tracegrad.jit(lambda a, c: tracegrad.vjp(lambda b: f(tnp, b), a)[1](c))(x, ct), want, err="jit vjp")


def test_vjp_is_the_adjoint_of_jvp():
  """<vjp(ct), t> = <ct, jvp(t)> with JAX's pairing of complex cotangents and tangents, Re(sum(a b)): the
  cotangent is not conjugated (so that vjp(1) of a holomorphic function is its derivative)."""
  f = JV_FNS["complex to complex"][0]
  with x64():
    z, t = Z.astype(C128), W.astype(C128)
    ct = (W[::-1] * (1 - 0.5j)).astype(C128)
    _, jt = tracegrad.jvp(lambda a: f(tnp, a), (z,), (t,))
    (vc,) = tracegrad.vjp(lambda a: f(tnp, a), z)[1](ct)
  inner = lambda a, b: float(np.real(np.sum(np.asarray(a) * np.asarray(b))))
  np.testing.assert_allclose(inner(vc, t), inner(ct, jt), rtol=1e-12)


# ---- TypeErrors as JAX's ----
ERRORS = {
  "grad of a complex output": lambda t, m: t.grad(lambda a: m.sum(a * a))(Z),
  "holomorphic grad of a real input": lambda t, m: t.grad(lambda a: m.sum(a * a), holomorphic=True)(X),
  "holomorphic grad of a real output": lambda t, m: t.grad(lambda a: m.sum(m.abs(a)), holomorphic=True)(Z),
  "jacrev of a complex output": lambda t, m: t.jacrev(lambda a: a * a)(Z),
  "jacfwd of a complex input": lambda t, m: t.jacfwd(lambda a: m.abs(a) ** 2)(Z),
  "holomorphic jacfwd of a real input": lambda t, m: t.jacfwd(lambda a: a * a, holomorphic=True)(X),
  "holomorphic jacrev of a real input": lambda t, m: t.jacrev(lambda a: a * a, holomorphic=True)(X),
  "hessian of a complex input": lambda t, m: t.hessian(lambda a: m.sum(m.abs(a) ** 4))(Z),
  "value_and_grad of a complex output": lambda t, m: t.value_and_grad(lambda a: m.sum(a))(Z),
}


@pytest.mark.parametrize("name", list(ERRORS))
def test_type_errors_as_jax(name):
  with pytest.raises(TypeError):
    ERRORS[name](jax, jnp)
  with pytest.raises(TypeError, match="complex|holomorphic|real"):
    ERRORS[name](tracegrad, tnp)


# ---- vmap ----
def test_vmap_of_complex_functions():
  a, b = away(6).reshape(2, 3), away(6).reshape(2, 3)
  f = lambda m, x, y: m.outer(x, y) @ m.conj(y) + m.arcsin(x) * m.sort(y)
  close(tracegrad.vmap(lambda x, y: f(tnp, x, y))(a, b), jax.vmap(lambda x, y: f(jnp, x, y))(a, b), err="vmap")
  close(tracegrad.jit(tracegrad.vmap(lambda x, y: f(tnp, x, y)))(a, b), jax.vmap(lambda x, y: f(jnp, x, y))(a, b),
        err="jit vmap")
  close(tracegrad.vmap(lambda x: tnp.prod(x) + tnp.max(x), in_axes=1)(a), jax.vmap(lambda x: jnp.prod(x)
                                                                                    + jnp.max(x), in_axes=1)(a))
  g = lambda m, x: m.abs(m.sin(x)) + m.real(x * x)
  close(tracegrad.jit(tracegrad.vmap(tracegrad.grad(lambda x: g(tnp, x))))(Z),
        jax.vmap(jax.grad(lambda x: g(jnp, x)))(Z), err="jit vmap grad")
  close(tracegrad.grad(lambda x: tnp.sum(tracegrad.vmap(lambda r: g(tnp, r))(x)))(a),
        jax.grad(lambda x: jnp.sum(jax.vmap(lambda r: g(jnp, r))(x)))(a), err="grad vmap")


# ---- control flow carrying complex values ----
FLOWS = {
  "scan": lambda lax, m, z: lax.scan(lambda c, x: (c * x + 0.5j, m.real(c) * x), 1 + 0j * z[0], z),
  "cond true": lambda lax, m, z: lax.cond(m.real(z[0]) < 10, lambda a: m.sin(a) * 1j, lambda a: m.conj(a), z),
  "cond false": lambda lax, m, z: lax.cond(m.real(z[0]) > 10, lambda a: m.sin(a) * 1j, lambda a: m.conj(a), z),
  "fori_loop": lambda lax, m, z: lax.fori_loop(0, 4, lambda i, a: a * (1 + 0.1j) + m.sqrt(a) * i, z),
  "while_loop": lambda lax, m, z: lax.while_loop(lambda a: m.abs(a[0]) < 50, lambda a: a * (1 + 1j), z),
  "switch": lambda lax, m, z: lax.switch(1, [lambda a: a, lambda a: a * a, lambda a: -a], z),
}
# their differentiable real-valued summaries (while_loop has no reverse-mode derivative in JAX)
FLOW_GRADS = ["scan", "cond true", "cond false", "fori_loop", "switch"]


def test_control_flow_carries_complex_values_as_jax():
  names = list(FLOWS)
  compiled = tracegrad.jit(lambda z: [FLOWS[n](tracegrad.lax, tnp, z) for n in names])(Z)
  for name, got_jit in zip(names, compiled):
    want = FLOWS[name](jax.lax, jnp, Z)
    close(FLOWS[name](tracegrad.lax, tnp, Z), want, err=name)
    close(got_jit, want, err=f"jit {name}")


def test_gradients_through_control_flow_as_jax():
  def summary(lax, m, name):
    return lambda z: sum(m.sum(m.abs(leaf) ** 2) for leaf in jax.tree.leaves(FLOWS[name](lax, m, z)))
  compiled = tracegrad.jit(lambda z: [tracegrad.grad(summary(tracegrad.lax, tnp, n))(z) for n in FLOW_GRADS])(Z)
  for name, got_jit in zip(FLOW_GRADS, compiled):
    want = jax.grad(summary(jax.lax, jnp, name))(Z)
    close(tracegrad.grad(summary(tracegrad.lax, tnp, name))(Z), want, err=name)
    close(got_jit, want, err=f"jit {name}")
  f = lambda lax, m, z: lax.fori_loop(0, 3, lambda i, a: a * a * 0.5, z)
  close(tracegrad.jacfwd(lambda z: f(tracegrad.lax, tnp, z), holomorphic=True)(Z),
        jax.jacfwd(lambda z: f(jax.lax, jnp, z), holomorphic=True)(Z), err="holomorphic jacfwd of fori_loop")
  close(tracegrad.jvp(lambda z: FLOWS["while_loop"](tracegrad.lax, tnp, z), (Z,), (W,)),
        jax.jvp(lambda z: FLOWS["while_loop"](jax.lax, jnp, z), (Z,), (W,)), err="jvp of while_loop")
