"""What tracegrad does today: jax.numpy-style arrays, tracing to a graph, and rewriting that graph."""
import numpy as np

import tracegrad
import tracegrad.numpy as tnp
from tracegrad.ir import Ops, PatternMatcher, UPat, graph_rewrite


def predict(w, b, x):
  return tnp.tanh(x @ w + b)


def loss(w, b, x, y):
  return tnp.mean((predict(w, b, x) - y) ** 2)


def main():
  rng = np.random.default_rng(0)
  x = tnp.asarray(rng.normal(size=(8, 3)).astype(np.float32))
  y = tnp.asarray(rng.normal(size=(8, 1)).astype(np.float32))
  w, b = tnp.zeros((3, 1)), tnp.zeros(1)

  print("eager, on the", tracegrad.devices()[0], "device:")
  print("  loss =", loss(w, b, x, y))
  print("  sorted:", tnp.sort(tnp.asarray([3.0, 1.0, 2.0])), " solve:", tnp.linalg.solve(tnp.eye(2) * 2, tnp.ones(2)))
  print("  x.at[0, 0].set(9.) ->", x.at[0, 0].set(9.0)[0])

  print("\nthe same function traced into a graph of primitives:")
  g = tracegrad.make_graph(loss)(w, b, x, y)
  print(g)
  print("\nabstract evaluation:", tracegrad.eval_shape(predict, w, b, x))

  # every pass is a table of (pattern, function) rows; this one turns x ** 2 into x * x
  square = PatternMatcher([(UPat(Ops.POW, src=(UPat.var("a"), UPat.var("e"))),
                            lambda a, e: a * a if constant_value(e) == 2 else None)])
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
