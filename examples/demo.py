"""What tracegrad does today: jax.numpy-style arrays traced into graphs, and transforms that rewrite those graphs."""
import numpy as np

import tracegrad
import tracegrad.numpy as tnp
from tracegrad import lax
from tracegrad.ir import Ops, PatternMatcher, UPat, graph_rewrite


def predict(w, b, x):
  return tnp.tanh(x @ w + b)


def loss(w, b, x, y):
  return tnp.mean((predict(w, b, x) - y) ** 2)


def rnn_loss(w, xs):
  h, hs = lax.scan(lambda h, x: (tnp.tanh(w * h + x), h), 0.0, xs)
  return (hs ** 2).sum() + h ** 2


def main():
  rng = np.random.default_rng(0)
  x = tnp.asarray(rng.normal(size=(8, 3)).astype(np.float32))
  y = tnp.asarray(rng.normal(size=(8, 1)).astype(np.float32))
  w, b = tnp.zeros((3, 1)), tnp.zeros(1)

  print("eager, on the", tracegrad.devices()[0], "device:")
  print("  loss =", loss(w, b, x, y))
  print("  sorted:", tnp.sort(tnp.asarray([3.0, 1.0, 2.0])), " solve:", tnp.linalg.solve(tnp.eye(2) * 2, tnp.ones(2)))

  print("\ntransforms compose in any order:")
  step = tracegrad.jit(tracegrad.value_and_grad(loss, argnums=(0, 1)))
  for i in range(3):
    l, (gw, gb) = step(w, b, x, y)
    w, b = w - 0.5 * gw, b - 0.5 * gb
    print(f"  step {i}: loss {float(l):.4f}")
  per_example = tracegrad.vmap(tracegrad.grad(loss), in_axes=(None, None, 0, 0))(w, b, x[:, None], y[:, None])
  print("  per-example gradients, vmap(grad(loss)):", per_example.shape)
  xs = tnp.asarray([0.5, -0.3, 0.8])
  print("  d rnn_loss / dw through lax.scan:", tracegrad.grad(rnn_loss)(0.7, xs),
        " second derivative:", tracegrad.grad(tracegrad.grad(rnn_loss))(0.7, xs))
  print("  hessian of sum(sin(x) * x):\n", tracegrad.hessian(lambda v: (tnp.sin(v) * v).sum())(xs))

  print("\nthe gradient is a graph of primitives too:")
  g = tracegrad.make_graph(tracegrad.grad(lambda v: tnp.sin(v * v)))(1.0)
  print(g)

  # every pass is a table of (pattern, function) rows; this one turns x ** 2 into x * x
  square = PatternMatcher([(UPat(Ops.POW, src=(UPat.var("a"), UPat.var("e"))),
                            lambda a, e: a * a if constant_value(e) == 2 else None)])
  g = tracegrad.make_graph(loss)(w, b, x, y)
  out = graph_rewrite(g.outputs[0], square)
  count = lambda root, op: sum(u.op is op for u in root.toposort())
  print(f"\nrewritten x**2 -> x*x: POW nodes {count(g.outputs[0], Ops.POW)} -> {count(out, Ops.POW)}, "
        f"MUL nodes {count(g.outputs[0], Ops.MUL)} -> {count(out, Ops.MUL)}")


def constant_value(u):
  """The value of a node that is a (broadcast, reshaped or cast) constant, else None."""
  while u.op in (Ops.BROADCAST, Ops.RESHAPE, Ops.CAST): u = u.src[0]
  return u.arg if u.op is Ops.CONST else None


if __name__ == "__main__":
  main()
