"""Whole JAX programs, run with only the import changed, against independent numpy computations."""
import numpy as np

import tracegrad as tg
import tracegrad.numpy as tnp
from tracegrad import lax
from oracles import ulps


def close(got, want, rtol=ulps(840), atol=ulps(84), err=""):
  np.testing.assert_allclose(np.asarray(got, np.float64), np.asarray(want, np.float64), rtol=rtol, atol=atol,
                             err_msg=err)


def f32(a): return np.asarray(a, np.float32)


def sgd(params, grads, lr): return tg.tree.map(lambda p, g: p - lr * g, params, grads)


# ---- (a) per-example gradients

def test_per_example_gradients_linear_model():
  rng = np.random.default_rng(0)
  X, Y = f32(rng.standard_normal((6, 3))), f32(rng.standard_normal(6))
  params = (f32([0.5, -1.0, 2.0]), np.float32(0.3))

  def loss(params, x, y):
    w, b = params
    return (x @ w + b - y) ** 2

  gw, gb = tg.vmap(tg.grad(loss), in_axes=(None, 0, 0))(params, X, Y)
  r = X.astype(np.float64) @ params[0] + params[1] - Y
  close(gw, 2 * r[:, None] * X)
  close(gb, 2 * r)
  batch_w, batch_b = tg.grad(lambda p: tg.vmap(loss, in_axes=(None, 0, 0))(p, X, Y).mean())(params)
  close(batch_w, np.asarray(gw).mean(0))
  close(batch_b, np.asarray(gb).mean())


def test_per_example_gradients_logistic_regression():
  rng = np.random.default_rng(1)
  X, Y = f32(rng.standard_normal((8, 4))), f32(rng.integers(0, 2, 8))
  params = {"w": f32(rng.standard_normal(4)), "b": np.float32(-0.2)}

  def loss(params, x, y):
    z = x @ params["w"] + params["b"]
    return y * tnp.logaddexp(0.0, -z) + (1 - y) * tnp.logaddexp(0.0, z)

  grads = tg.jit(tg.vmap(tg.grad(loss), in_axes=(None, 0, 0)))(params, X, Y)
  z = X.astype(np.float64) @ params["w"] + params["b"]
  err = 1 / (1 + np.exp(-z)) - Y
  close(grads["w"], err[:, None] * X)
  close(grads["b"], err)
  losses = tg.vmap(loss, in_axes=(None, 0, 0))(params, X, Y)
  close(losses, np.where(Y == 1, np.log1p(np.exp(-z)), np.log1p(np.exp(z))))


# ---- (b) Newton's method with hessian and linalg.solve

def test_newton_method():
  rng = np.random.default_rng(2)
  A, bvec, c = rng.standard_normal((5, 3)), rng.standard_normal(3), 0.5

  def f(x):
    return tnp.log(tnp.sum(tnp.exp(f32(A) @ x))) + 0.5 * c * x @ x - f32(bvec) @ x

  def np_grad_hess(x):
    p = np.exp(A @ x)
    p /= p.sum()
    return A.T @ p + c * x - bvec, A.T @ (np.diag(p) - np.outer(p, p)) @ A + c * np.eye(3)

  step = tg.jit(lambda x: x - tnp.linalg.solve(tg.hessian(f)(x), tg.grad(f)(x)))
  x, x_np = f32([1.0, -1.0, 0.5]), np.array([1.0, -1.0, 0.5])
  for k in range(5):
    g, h = np_grad_hess(x_np)
    close(tg.grad(f)(x), g, err=f"grad at iterate {k}")
    close(tg.hessian(f)(x), h, err=f"hessian at iterate {k}")
    x, x_np = step(x), x_np - np.linalg.solve(h, g)
    close(x, x_np, err=f"iterate {k + 1}")
  assert np.linalg.norm(np_grad_hess(x_np)[0]) < 1e-10
  assert float(np.linalg.norm(np.asarray(tg.grad(f)(x)))) < ulps(84)


# ---- (c) an RNN trained through lax.scan

def _rnn_params(rng, d_in, hid):
  return {"Wx": f32(rng.standard_normal((d_in, hid)) * 0.5), "Wh": f32(rng.standard_normal((hid, hid)) * 0.4),
          "b": f32(rng.standard_normal(hid) * 0.1), "Wo": f32(rng.standard_normal(hid) * 0.5), "bo": np.float32(0.0)}


def rnn_loss(params, xs, ys):
  def cell(h, x):
    h = tnp.tanh(x @ params["Wx"] + h @ params["Wh"] + params["b"])
    return h, h @ params["Wo"] + params["bo"]

  _, preds = lax.scan(cell, tnp.zeros((xs.shape[1], params["Wh"].shape[0])), xs)
  return tnp.mean((preds - ys) ** 2)


def np_rnn_loss_and_grads(p, xs, ys):
  """Forward pass and hand-written backprop through time; xs (T, B, d_in), ys (T, B)."""
  T, B, _ = xs.shape
  hs = [np.zeros((B, p["Wh"].shape[0]))]
  preds = []
  for t in range(T):
    hs.append(np.tanh(xs[t] @ p["Wx"] + hs[-1] @ p["Wh"] + p["b"]))
    preds.append(hs[-1] @ p["Wo"] + p["bo"])
  preds = np.stack(preds)
  loss = np.mean((preds - ys) ** 2)
  dp = 2 * (preds - ys) / (T * B)
  g = {k: np.zeros_like(v, dtype=np.float64) for k, v in p.items()}
  dh_next = np.zeros_like(hs[0])
  for t in reversed(range(T)):
    g["Wo"] += hs[t + 1].T @ dp[t]
    g["bo"] += dp[t].sum()
    da = (np.outer(dp[t], p["Wo"]) + dh_next) * (1 - hs[t + 1] ** 2)
    g["Wx"] += xs[t].T @ da
    g["Wh"] += hs[t].T @ da
    g["b"] += da.sum(0)
    dh_next = da @ p["Wh"].T
  return loss, g


def test_rnn_sgd_through_scan():
  rng = np.random.default_rng(3)
  T, B, d_in, hid, lr = 6, 3, 2, 4, 0.2
  xs = f32(rng.standard_normal((T, B, d_in)))
  ys = f32(np.sin(np.cumsum(xs[..., 0], axis=0)))
  params = _rnn_params(rng, d_in, hid)
  p_np = {k: np.asarray(v, np.float64) for k, v in params.items()}
  step = tg.jit(tg.value_and_grad(rnn_loss))
  losses, losses_np = [], []
  for k in range(5):
    loss, grads = step(params, xs, ys)
    loss_np, grads_np = np_rnn_loss_and_grads(p_np, xs.astype(np.float64), ys.astype(np.float64))
    if k == 0:
      for name in params: close(grads[name], grads_np[name], rtol=ulps(840), atol=ulps(8), err=f"d loss / d {name}")
    losses.append(float(np.asarray(loss)))
    losses_np.append(loss_np)
    params, p_np = sgd(params, grads, lr), sgd(p_np, grads_np, lr)
  close(losses, losses_np, rtol=ulps(1680))
  assert losses[-1] < losses[0]


# ---- (d) an MLP trained with jit(grad(loss))

def mlp(params, x):
  (w1, b1), (w2, b2) = params
  return tnp.tanh(x @ w1 + b1) @ w2 + b2


def mlp_loss(params, x, y): return tnp.mean((mlp(params, x) - y) ** 2)


def np_mlp_grads(params, x, y):
  (w1, b1), (w2, b2) = params
  h = np.tanh(x @ w1 + b1)
  out = h @ w2 + b2
  d_out = 2 * (out - y) / out.size
  d_a = (d_out @ w2.T) * (1 - h * h)
  return [(x.T @ d_a, d_a.sum(0)), (h.T @ d_out, d_out.sum(0))]


def test_mlp_training():
  rng = np.random.default_rng(4)
  x = f32(rng.uniform(-1, 1, (16, 2)))
  y = f32(np.sin(2 * x[:, :1]) + x[:, 1:] ** 2)
  params = [(f32(rng.standard_normal((2, 8)) * 0.7), np.zeros(8, np.float32)),
            (f32(rng.standard_normal((8, 1)) * 0.4), np.zeros(1, np.float32))]
  grads = tg.jit(tg.grad(mlp_loss))(params, x, y)
  want = np_mlp_grads(tg.tree.map(lambda a: np.asarray(a, np.float64), params), x.astype(np.float64), y)
  for g, w in zip(tg.tree.leaves(grads), tg.tree.leaves(want)): close(g, w, atol=ulps(8))
  grad_fn, loss_fn = tg.jit(tg.grad(mlp_loss)), tg.jit(mlp_loss)
  losses = [float(np.asarray(loss_fn(params, x, y)))]
  for _ in range(20):
    params = sgd(params, grad_fn(params, x, y), 0.3)
    losses.append(float(np.asarray(loss_fn(params, x, y))))
  assert all(b < a for a, b in zip(losses, losses[1:])), losses
  assert losses[-1] < 0.5 * losses[0], losses
