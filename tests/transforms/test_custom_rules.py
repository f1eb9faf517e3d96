"""custom_vjp, custom_jvp and checkpoint (remat): the rule is what differentiation uses, under every transform."""
import numpy as np
import pytest

import tracegrad as tg
import tracegrad.numpy as tnp
from tracegrad import lax
from oracles import check_grads, ulps


def close(got, want, rtol=ulps(840), atol=ulps(84)):
  np.testing.assert_allclose(np.asarray(got, np.float64), np.asarray(want, np.float64), rtol=rtol, atol=atol)


def rand(*shape, seed=0, low=-1.0, high=1.0):
  return np.random.default_rng(seed).uniform(low, high, shape).astype(np.float32)


# ---- custom_vjp

@tg.custom_vjp
def sin2(x):
  """sin, whose backward rule deliberately returns twice the true derivative."""
  return tnp.sin(x)


def _sin2_fwd(x): return tnp.sin(x), tnp.cos(x)
def _sin2_bwd(cos_x, g): return (2.0 * cos_x * g,)


sin2.defvjp(_sin2_fwd, _sin2_bwd)


@tg.custom_vjp
def clip_gradient(x):
  return x


clip_gradient.defvjp(lambda x: (x, None), lambda _, g: (tnp.clip(g, -1.0, 1.0),))


def test_custom_vjp_value_and_grad_use_bwd():
  x = rand(4)
  close(sin2(x), np.sin(x))
  close(tg.grad(lambda x: sin2(x).sum())(x), 2 * np.cos(x))
  close(tg.grad(lambda x: sin2(x) * 3.0)(np.float32(0.4)), 6 * np.cos(0.4))
  out, f_vjp = tg.vjp(sin2, x)
  close(out, np.sin(x))
  (ct,) = f_vjp(np.ones(4, np.float32))
  close(ct, 2 * np.cos(x))


def test_custom_vjp_chain_rule_around_it():
  # d/dx exp(sin2(x**2)) = exp(sin x**2) * 2cos(x**2) * 2x with the doubled rule
  x = np.float32(0.7)
  g = tg.grad(lambda x: tnp.exp(sin2(x * x)))(x)
  close(g, np.exp(np.sin(0.49)) * 2 * np.cos(0.49) * 1.4)


def test_custom_vjp_clip_gradient():
  close(tg.grad(lambda x: 5.0 * clip_gradient(x))(np.float32(2.0)), 1.0)
  close(tg.grad(lambda x: 0.5 * clip_gradient(x))(np.float32(2.0)), 0.5)
  close(tg.grad(lambda x: clip_gradient(x) ** 2)(np.float32(3.0)), 1.0)


def test_custom_vjp_under_jit():
  x = rand(3)
  close(tg.jit(sin2)(x), np.sin(x))
  close(tg.jit(tg.grad(lambda x: sin2(x).sum()))(x), 2 * np.cos(x))


def test_vmap_of_custom_vjp():
  xs = rand(3, 2)
  close(tg.vmap(sin2)(xs), np.sin(xs))
  close(tg.vmap(tg.grad(lambda x: sin2(x).sum()))(xs), 2 * np.cos(xs))
  close(tg.vmap(tg.grad(sin2))(xs[:, 0]), 2 * np.cos(xs[:, 0]))


def test_grad_of_vmap_of_custom_vjp():
  xs = rand(3, 2)
  close(tg.grad(lambda xs: tg.vmap(sin2)(xs).sum())(xs), 2 * np.cos(xs))
  close(tg.grad(lambda xs: (tg.vmap(sin2)(xs) ** 2).sum())(xs), 4 * np.sin(xs) * np.cos(xs))


@tg.custom_vjp
def affine(params, x):
  return params["w"] * x + params["b"]


def _affine_fwd(params, x): return params["w"] * x + params["b"], (params["w"], x)
def _affine_bwd(res, g):
  w, x = res
  return {"w": 10.0 * (g * x).sum(), "b": g.sum()}, g * w


affine.defvjp(_affine_fwd, _affine_bwd)


def test_custom_vjp_pytree_args():
  params, x = {"w": np.float32(1.5), "b": np.float32(-0.5)}, rand(3)
  close(affine(params, x), 1.5 * x - 0.5)
  gp, gx = tg.grad(lambda p, x: affine(p, x).sum(), argnums=(0, 1))(params, x)
  close(gp["w"], 10 * x.sum())
  close(gp["b"], 3.0)
  close(gx, np.full(3, 1.5))
  gw = tg.vmap(tg.grad(lambda p, x: affine(p, x).sum()), in_axes=(None, 0))(params, rand(2, 3))
  close(gw["b"], [3.0, 3.0])


def test_custom_vjp_residuals_and_several_outputs():
  @tg.custom_vjp
  def f(x, y):
    return x * y, x + y

  def fwd(x, y): return (x * y, x + y), (x, y)
  def bwd(res, g):
    x, y = res
    ga, gb = g
    return ga * y + gb, ga * x + 7.0 * gb   # the sum's y-derivative deliberately 7

  f.defvjp(fwd, bwd)
  gx, gy = tg.grad(lambda x, y: f(x, y)[0] + f(x, y)[1], argnums=(0, 1))(np.float32(2.0), np.float32(3.0))
  close((gx, gy), (4.0, 9.0))


def test_custom_vjp_fwd_calls_the_function_itself():
  # the usual JAX idiom: fwd evaluates the primal by calling the decorated function
  @tg.custom_vjp
  def f(x):
    return tnp.exp(x)

  f.defvjp(lambda x: (f(x), f(x)), lambda y, g: (3.0 * y * g,))
  close(f(np.float32(0.5)), np.exp(0.5))
  close(tg.grad(f)(np.float32(0.5)), 3 * np.exp(0.5))
  close(tg.vmap(tg.grad(f))(np.array([0.0, 1.0], np.float32)), 3 * np.exp([0.0, 1.0]))


def test_custom_vjp_inside_scan():
  xs = rand(4)
  def f(x):
    return lax.scan(lambda c, t: (c + sin2(t * x), None), np.float32(0.0), xs)[0]
  close(f(np.float32(0.5)), np.sin(xs * 0.5).sum())
  close(tg.grad(f)(np.float32(0.5)), (2 * np.cos(xs * 0.5) * xs).sum())


# higher derivatives: the vjp of a custom_vjp function is its traced bwd, itself differentiated (through the residuals
# fwd computes and through the cotangent), as JAX does

@tg.custom_vjp
def cube(x):
  return x ** 3


cube.defvjp(lambda x: (x ** 3, x), lambda x, g: (3 * x ** 2 * g,))


def test_custom_vjp_grad_of_grad_differentiates_bwd():
  x, g = np.float32(2.0), tg.grad
  close((g(cube)(x), g(g(cube))(x), g(g(g(cube)))(x)), (12.0, 12.0, 6.0))   # JAX's values
  close((tg.jacfwd(g(cube))(x), tg.jacfwd(tg.jacfwd(g(cube)))(x), g(tg.jacfwd(g(cube)))(x)), (12.0, 6.0, 6.0))
  close(tg.jacrev(g(cube))(x), 12.0)
  close(tg.hessian(lambda v: cube(v).sum())(np.array([1.0, 2.0], np.float32)), np.diag([6.0, 12.0]))


def test_custom_vjp_grad_of_grad_under_jit_and_vmap():
  x, xs, g = np.float32(2.0), np.array([1.0, 2.0, 3.0], np.float32), tg.grad
  close((tg.jit(g(g(cube)))(x), g(tg.jit(g(cube)))(x), g(g(tg.jit(cube)))(x)), (12.0, 12.0, 12.0))
  close(tg.vmap(g(g(cube)))(xs), 6 * xs)
  close(tg.jit(tg.vmap(g(g(cube))))(xs), 6 * xs)
  close(tg.vmap(tg.jacfwd(g(cube)))(xs), 6 * xs)
  close(g(lambda xs: tg.vmap(g(cube))(xs).sum())(xs), 6 * xs)


def test_custom_vjp_second_derivative_follows_bwd_not_fun():
  # bwd says 2 cos x: its derivatives are those of 2 cos x, through the residual cos x and through the cotangent
  for x in (0.3, -1.2):
    close(tg.grad(tg.grad(sin2))(np.float32(x)), -2 * np.sin(x))
    close(tg.grad(lambda x: tg.grad(lambda y: x * sin2(y))(x))(np.float32(x)), 2 * np.cos(x) - 2 * x * np.sin(x))
  check_grads(tg.grad(sin2), (np.float32(0.7),), order=2, modes=("fwd", "rev"))
  check_grads(tg.grad(lambda x: (sin2(x) * x).sum()), (rand(3),), order=1, modes=("fwd", "rev"))
  check_grads(tg.grad(cube), (np.float32(1.3),), order=2, modes=("fwd", "rev"))


def test_custom_vjp_grad_of_grad_when_fwd_calls_the_function():
  @tg.custom_vjp
  def f(x):
    return tnp.exp(x)

  f.defvjp(lambda x: (f(x), f(x)), lambda y, g: (3.0 * y * g,))
  # the residual is f(x) itself, whose derivative is again the rule's 3 f(x)
  close(tg.grad(tg.grad(f))(np.float32(0.5)), 9 * np.exp(0.5))


def test_custom_vjp_grad_of_grad_inside_scan():
  xs = rand(4)
  f = lambda x: lax.scan(lambda c, t: (c + sin2(t * x), None), np.float32(0.0), xs)[0]
  close(tg.grad(tg.grad(f))(np.float32(0.5)), (-2 * np.sin(xs * 0.5) * xs * xs).sum())


# ---- custom_jvp

@tg.custom_jvp
def log1pexp(x):
  return tnp.log1p(tnp.exp(x))


@log1pexp.defjvp
def _log1pexp_jvp(primals, tangents):
  (x,), (t,) = primals, tangents
  return log1pexp(x), t * (1.0 - 1.0 / (1.0 + tnp.exp(x)))


@tg.custom_jvp
def sq3(x):
  """x**2 whose derivative rule deliberately says 3x."""
  return x * x


@sq3.defjvp
def _sq3_jvp(primals, tangents):
  (x,), (t,) = primals, tangents
  return sq3(x), 3.0 * x * t


def _sigmoid(x): return 1.0 / (1.0 + np.exp(-x))


def test_custom_jvp_value_and_jvp_use_rule():
  x = rand(3, low=-3.0, high=3.0)
  close(log1pexp(x), np.log1p(np.exp(x.astype(np.float64))))
  out, tan = tg.jvp(log1pexp, (x,), (np.ones(3, np.float32),))
  close(out, np.log1p(np.exp(x.astype(np.float64))))
  close(tan, _sigmoid(x.astype(np.float64)))
  close(tg.jvp(sq3, (np.float32(2.0),), (np.float32(1.0),)), (4.0, 6.0))


def test_custom_jvp_grad_goes_through_rule():
  close(tg.grad(sq3)(np.float32(2.0)), 6.0)
  close(tg.grad(lambda x: sq3(tnp.sin(x)))(np.float32(0.3)), 3 * np.sin(0.3) * np.cos(0.3))
  close(tg.jacrev(sq3)(np.array([1.0, 2.0], np.float32)), np.diag([3.0, 6.0]))


def test_custom_jvp_numerically_safe_grad():
  # the naive derivative exp(x) / (1 + exp(x)) is inf/inf = nan at x = 100 in float32
  close(tg.grad(log1pexp)(np.float32(100.0)), 1.0)
  close(tg.grad(log1pexp)(np.float32(-100.0)), 0.0)
  close(tg.jit(tg.grad(log1pexp))(np.float32(100.0)), 1.0)


@pytest.mark.parametrize("lib", ["tracegrad", "jax"])
def test_custom_jvp_rule_branching_on_a_primal_runs_under_grad_outside_jit(lib):
  if lib == "jax":
    jax = pytest.importorskip("jax")
    m, mnp = jax, jax.numpy
  else:
    m, mnp = tg, tnp

  @m.custom_jvp
  def f(x): return mnp.sin(x)

  @f.defjvp
  def f_jvp(primals, tangents):
    x, = primals
    if x > 0: return f(x), 2.0 * tangents[0]   # a Python branch on the primal's value, as JAX allows eagerly
    return f(x), -3.0 * tangents[0]

  assert [float(m.grad(f)(v)) for v in (1.0, -1.0)] == [2.0, -3.0]
  assert [float(m.grad(lambda x: 3 * f(2 * x))(v)) for v in (1.0, -1.0)] == [12.0, -18.0]
  with pytest.raises(Exception, match="[Tt]raced|[Cc]oncret"):   # under jit the primal has no value, in both
    m.jit(m.grad(f))(1.0)


def test_vmap_of_custom_jvp():
  xs = rand(5, low=-3.0, high=3.0)
  close(tg.vmap(log1pexp)(xs), np.log1p(np.exp(xs.astype(np.float64))))
  close(tg.vmap(tg.grad(log1pexp))(xs), _sigmoid(xs.astype(np.float64)))
  close(tg.grad(lambda xs: tg.vmap(sq3)(xs).sum())(xs), 3 * xs)
  _, tan = tg.jvp(tg.vmap(sq3), (xs,), (np.ones(5, np.float32),))
  close(tan, 3 * xs)


def test_custom_jvp_second_derivative():
  # the rule's tangent is itself differentiated: d/dx sigmoid(x) = s (1 - s); d/dx 3x = 3
  for x in (-1.0, 0.5, 2.0):
    s = _sigmoid(x)
    close(tg.grad(tg.grad(log1pexp))(np.float32(x)), s * (1 - s))
    close(tg.grad(tg.grad(sq3))(np.float32(x)), 3.0)
  close(tg.hessian(lambda x: log1pexp(x).sum())(np.array([0.0, 1.0], np.float32)),
        np.diag([0.25, _sigmoid(1.0) * (1 - _sigmoid(1.0))]))


@tg.custom_jvp
def cube_jvp(x):
  return x ** 3


@cube_jvp.defjvp
def _cube_jvp_rule(primals, tangents):
  (x,), (t,) = primals, tangents
  return cube_jvp(x), 3 * x ** 2 * t


def test_custom_jvp_higher_derivatives_in_every_order():
  x, g, f = np.float32(2.0), tg.grad, tg.jacfwd
  close((g(cube_jvp)(x), g(g(cube_jvp))(x), g(g(g(cube_jvp)))(x)), (12.0, 12.0, 6.0))   # JAX's values
  close((f(g(cube_jvp))(x), g(f(cube_jvp))(x), f(f(cube_jvp))(x), f(f(f(cube_jvp)))(x)), (12.0, 12.0, 12.0, 6.0))
  close(tg.jit(g(g(cube_jvp)))(x), 12.0)
  close(tg.vmap(g(g(cube_jvp)))(np.array([1.0, 3.0], np.float32)), [6.0, 18.0])
  check_grads(g(log1pexp), (np.float32(0.4),), order=2, modes=("fwd", "rev"))


def test_custom_jvp_several_args_and_closure():
  @tg.custom_jvp
  def f(x, y):
    return x * tnp.sin(y)

  @f.defjvp
  def f_jvp(primals, tangents):
    (x, y), (tx, ty) = primals, tangents
    return f(x, y), tx * tnp.sin(y) + 100.0 * ty   # deliberately not x cos y

  gx, gy = tg.grad(f, argnums=(0, 1))(np.float32(2.0), np.float32(0.5))
  close((gx, gy), (np.sin(0.5), 100.0))
  close(tg.grad(lambda w: f(w * 2.0, w))(np.float32(0.5)), 2 * np.sin(0.5) + 100.0)


# ---- checkpoint / remat

def _mlp(params, x):
  for w, b in params: x = tnp.tanh(x @ w + b)
  return (x * x).sum()


def _params(seed=0):
  rng = np.random.default_rng(seed)
  return [(rng.standard_normal((3, 4)).astype(np.float32) * 0.5, np.zeros(4, np.float32)),
          (rng.standard_normal((4, 2)).astype(np.float32) * 0.5, rng.standard_normal(2).astype(np.float32))]


@pytest.mark.parametrize("remat", [tg.checkpoint, tg.remat])
def test_checkpoint_same_value_and_grad(remat):
  params, x = _params(), rand(5, 3)
  close(remat(_mlp)(params, x), _mlp(params, x))
  want = tg.grad(_mlp)(params, x)
  got = tg.grad(remat(_mlp))(params, x)
  for g, w in zip(tg.tree.leaves(got), tg.tree.leaves(want)): close(g, w)
  gx = tg.grad(remat(_mlp), argnums=1)(params, x)
  close(gx, tg.grad(_mlp, argnums=1)(params, x))


def test_checkpoint_per_layer():
  params, x = _params(1), rand(2, 3)

  def f(params, x):
    for w, b in params: x = tg.checkpoint(lambda x, w, b: tnp.tanh(x @ w + b))(x, w, b)
    return (x * x).sum()

  close(f(params, x), _mlp(params, x))
  for g, w in zip(tg.tree.leaves(tg.grad(f)(params, x)), tg.tree.leaves(tg.grad(_mlp)(params, x))): close(g, w)


def test_checkpoint_in_scan_body():
  xs, w = rand(6, 2), rand(2, 2, seed=3)

  def make_loss(wrap):
    def loss(w):
      body = wrap(lambda c, x: (tnp.tanh(c @ w + x), (c * c).sum()))
      c, ys = lax.scan(body, tnp.zeros(2), xs)
      return c.sum() + ys.sum()
    return loss

  plain, remat = make_loss(lambda f: f), make_loss(tg.checkpoint)
  close(remat(w), plain(w))
  close(tg.grad(remat)(w), tg.grad(plain)(w))
  close(tg.grad(tg.checkpoint(plain))(w), tg.grad(plain)(w))
  close(tg.grad(tg.checkpoint(remat))(w), tg.grad(plain)(w))


def test_grad_of_grad_of_checkpoint():
  f = lambda x: tnp.sin(x) * x * x
  for x in (0.3, -1.1):
    d2 = -np.sin(x) * x * x + 4 * x * np.cos(x) + 2 * np.sin(x)
    close(tg.grad(tg.grad(tg.checkpoint(f)))(np.float32(x)), d2)
    close(tg.grad(tg.checkpoint(tg.grad(f)))(np.float32(x)), d2)


def test_checkpoint_under_vmap_and_jvp():
  xs = rand(4, 3)
  f = tg.checkpoint(lambda x: (tnp.exp(x) * x).sum())
  close(tg.vmap(f)(xs), (np.exp(xs) * xs).sum(1))
  close(tg.vmap(tg.grad(f))(xs), np.exp(xs) * (1 + xs))
  _, tan = tg.jvp(f, (xs[0],), (np.ones(3, np.float32),))
  close(tan, (np.exp(xs[0]) * (1 + xs[0])).sum())


def test_checkpoint_pytree_in_and_out():
  f = tg.checkpoint(lambda d: {"s": d["a"] * d["b"], "t": (tnp.sin(d["a"]),)})
  a, b = rand(3, seed=1), rand(3, seed=2)
  out = f({"a": a, "b": b})
  close(out["s"], a * b)
  close(out["t"][0], np.sin(a))
  g = tg.grad(lambda d: f(d)["s"].sum() + f(d)["t"][0].sum())({"a": a, "b": b})
  close(g["a"], b + np.cos(a))
  close(g["b"], a)


def test_second_derivative_through_a_custom_vjp_whose_bwd_calls_it_again():
  # a fixed point found by a while loop, differentiated implicitly: bwd solves another fixed point with the same
  # function, so grad of grad meets custom_vjp nodes made while differentiating, one feeding another
  from functools import partial

  @partial(tg.custom_vjp, nondiff_argnums=(0,))
  def fixed_point(f, a, x0):
    step = lambda c: (c[1], f(a, c[1]))
    return lax.while_loop(lambda c: tnp.abs(c[0] - c[1]) > 1e-6, step, (x0, f(a, x0)))[1]

  def fwd(f, a, x0):
    x = fixed_point(f, a, x0)
    return x, (a, x)

  def adjoint_step(f, packed, u):
    a, x, xbar = packed
    return xbar + tg.vjp(lambda y: f(a, y), x)[1](u)[0]

  def bwd(f, res, xbar):
    a, x = res
    u = fixed_point(partial(adjoint_step, f), (a, x, xbar), xbar)
    return tg.vjp(lambda a: f(a, x), a)[1](u)[0], tnp.zeros_like(x)

  fixed_point.defvjp(fwd, bwd)
  root = lambda a: fixed_point(lambda a, x: 0.5 * (x + a / x), a, a)   # Newton's iteration for sqrt(a)
  a = 2.0
  np.testing.assert_allclose(float(root(a)), np.sqrt(a), rtol=1e-6)
  np.testing.assert_allclose(float(tg.grad(root)(a)), 0.5 / np.sqrt(a), rtol=1e-5)
  np.testing.assert_allclose(float(tg.grad(tg.grad(root))(a)), -0.25 * a ** -1.5, rtol=1e-4)
