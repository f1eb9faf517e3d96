"""Transform errors: the conventional exception type, with a message naming the function and the shapes involved."""
import re

import numpy as np
import pytest

import tracegrad as tg
import tracegrad.numpy as tnp
from tracegrad import lax


def shape_re(*dims):
  """A shape as tracegrad or numpy might print it: (2, 3), [2,3] or f32[2,3]."""
  tup, lst = re.escape(str(tuple(dims))), r",\s*".join(map(str, dims))
  return rf"({tup}|\[{lst}\])"


def raises(exc, fn, *words):
  """fn() raises exc whose message contains every regex in words (case-insensitive)."""
  with pytest.raises(exc) as e: fn()
  msg = str(e.value)
  for w in words: assert re.search(w, msg, re.IGNORECASE), f"{w!r} not in message: {msg}"
  return msg


# ---- grad

@pytest.mark.parametrize("shape", [(3,), (2, 3)])
def test_grad_of_non_scalar_output(shape):
  raises(TypeError, lambda: tg.grad(lambda x: x * 2.0)(np.ones(shape, np.float32)), "grad", "scalar", shape_re(*shape))


def test_grad_of_non_scalar_output_names_transform():
  raises(TypeError, lambda: tg.value_and_grad(lambda x: tnp.sin(x))(np.ones(4, np.float32)), "grad", "scalar",
         shape_re(4))
  raises(TypeError, lambda: tg.grad(lambda x: x[None])(np.float32(1.0)), "scalar", shape_re(1))


def test_grad_has_aux_output_must_be_scalar():
  raises(TypeError, lambda: tg.grad(lambda x: (x * 2.0, x), has_aux=True)(np.ones(3, np.float32)), "scalar",
         shape_re(3))


@pytest.mark.parametrize("arg", [3, np.int32(3), np.arange(3, dtype=np.int32), np.array([True, False])])
def test_grad_wrt_integer_or_bool_input(arg):
  raises(TypeError, lambda: tg.grad(lambda x: (x * 2.0).sum())(arg), "grad", r"int|bool")


def test_grad_wrt_integer_input_by_argnums():
  f = lambda x, n: (x * n).sum()
  raises(TypeError, lambda: tg.grad(f, argnums=1)(np.ones(2, np.float32), np.int32(2)), "grad", "int32")
  raises(TypeError, lambda: tg.grad(f, argnums=(0, 1))(np.ones(2, np.float32), np.int32(2)), "grad", "int32")
  assert float(np.asarray(tg.grad(f)(np.float32(1.0), np.int32(2)))) == 2.0


def test_jacrev_of_integer_input():
  raises(TypeError, lambda: tg.jacrev(lambda x: x * 2.0)(np.arange(3)), "jacrev", r"int")


# ---- vmap

def test_vmap_mismatched_batch_sizes():
  raises(ValueError, lambda: tg.vmap(lambda a, b: a + b)(np.ones(3, np.float32), np.ones(4, np.float32)),
         "vmap", r"\b3\b", r"\b4\b")
  raises(ValueError, lambda: tg.vmap(lambda a, b: a * b, in_axes=(0, 1))(np.ones((2, 5)), np.ones((5, 7))),
         "vmap", r"\b2\b", r"\b7\b")


def test_vmap_mismatched_batch_sizes_in_pytree():
  d = {"a": np.ones((3, 2), np.float32), "b": np.ones((5, 2), np.float32)}
  raises(ValueError, lambda: tg.vmap(lambda d: d["a"] + d["b"])(d), "vmap", r"\b3\b", r"\b5\b")


def test_vmap_axis_size_disagrees_with_inputs():
  raises(ValueError, lambda: tg.vmap(lambda a: a, axis_size=4)(np.ones(3, np.float32)), "vmap", r"\b3\b", r"\b4\b")


@pytest.mark.parametrize("in_axes", [2, -3, 5])
def test_vmap_in_axes_out_of_range(in_axes):
  raises(ValueError, lambda: tg.vmap(lambda x: x.sum(), in_axes=in_axes)(np.ones((3, 4), np.float32)),
         "vmap", str(in_axes))


def test_vmap_in_axes_out_of_range_for_scalar():
  raises(ValueError, lambda: tg.vmap(lambda x: x)(np.float32(1.0)), "vmap")


def test_vmap_in_axes_length_mismatch():
  raises(ValueError, lambda: tg.vmap(lambda a, b: a + b, in_axes=(0, 0, 0))(np.ones(3), np.ones(3)), "vmap", "in_axes")


def test_vmap_out_axes_out_of_range():
  raises(ValueError, lambda: tg.vmap(lambda x: x * 2.0, out_axes=3)(np.ones((2, 3), np.float32)), "vmap")


def test_vmap_no_batched_input():
  raises(ValueError, lambda: tg.vmap(lambda x: x, in_axes=None)(np.ones(3, np.float32)), "vmap")


# ---- jit

@pytest.mark.parametrize("static", [[1, 2], {"a": 1}, np.ones(2)])
def test_jit_unhashable_static_argument(static):
  f = tg.jit(lambda x, s: x * 2.0, static_argnums=1)
  raises(TypeError, lambda: f(np.ones(2, np.float32), static), "jit", r"static|hash")


def test_jit_hashable_static_argument():
  f = tg.jit(lambda x, s: x * len(s), static_argnums=1)
  np.testing.assert_array_equal(np.asarray(f(np.ones(2, np.float32), (1, 2))), [2.0, 2.0])


# ---- reverse mode through while loops

def test_grad_through_while_loop():
  f = lambda x: lax.while_loop(lambda c: c < 10.0, lambda c: c * 2.0, x)
  raises(ValueError, lambda: tg.grad(f)(np.float32(1.0)), "while_loop")
  raises(ValueError, lambda: tg.vjp(f, np.float32(1.0))[1](np.float32(1.0)), "while_loop")
  raises(ValueError, lambda: tg.jacrev(f)(np.float32(1.0)), "while_loop")


def test_grad_through_fori_loop_with_traced_bounds():
  def f(x, n): return lax.fori_loop(0, n, lambda i, c: c * x, np.float32(1.0))
  raises(ValueError, lambda: tg.jit(tg.grad(f))(np.float32(2.0), np.int32(3)), "while_loop")
  g = lambda x: lax.fori_loop(0, (x > 0).astype(tnp.int32) + 2, lambda i, c: c * x, np.float32(1.0))
  raises(ValueError, lambda: tg.grad(g)(np.float32(2.0)), "while_loop")


def test_while_loop_grad_error_inside_vmap_and_jit():
  f = lambda x: lax.while_loop(lambda c: c < 10.0, lambda c: c * 2.0, x)
  raises(ValueError, lambda: tg.jit(tg.vmap(tg.grad(f)))(np.ones(2, np.float32)), "while_loop")


# ---- custom_vjp under forward mode

@tg.custom_vjp
def _double(x):
  return 2.0 * x


_double.defvjp(lambda x: (2.0 * x, None), lambda _, g: (2.0 * g,))


def test_jvp_of_custom_vjp():
  raises(TypeError, lambda: tg.jvp(_double, (np.float32(1.0),), (np.float32(1.0),)), "custom_vjp")
  raises(TypeError, lambda: tg.jacfwd(_double)(np.ones(2, np.float32)), "custom_vjp")
  raises(TypeError, lambda: tg.linearize(_double, np.float32(1.0)), "custom_vjp")


# ---- control flow type checks

def test_cond_branches_different_shapes():
  x = np.ones(3, np.float32)
  raises(TypeError, lambda: lax.cond(True, lambda x: x, lambda x: x[:2], x), "cond", shape_re(3), shape_re(2))
  raises(TypeError, lambda: tg.jit(lambda p, x: lax.cond(p, lambda x: x, lambda x: x.sum(), x))(True, x), "cond")


def test_cond_branches_different_dtypes():
  x = np.ones(3, np.float32)
  raises(TypeError, lambda: lax.cond(True, lambda x: x, lambda x: x.astype(tnp.int32), x), "cond", "float32|f32",
         "int32|i32")


def test_cond_branches_different_structures():
  x = np.ones(3, np.float32)
  raises(TypeError, lambda: lax.cond(True, lambda x: (x, x), lambda x: x, x), "cond")


def test_switch_branches_different_shapes():
  x = np.ones(3, np.float32)
  branches = [lambda x: x, lambda x: x * 2.0, lambda x: tnp.concatenate([x, x])]
  raises(TypeError, lambda: lax.switch(1, branches, x), "switch|cond", shape_re(3), shape_re(6))


def test_scan_carry_changes_shape():
  body = lambda c, x: (tnp.concatenate([c, x[None]]), x)
  raises(TypeError, lambda: lax.scan(body, np.zeros(2, np.float32), np.ones(4, np.float32)), "scan", "carry",
         shape_re(2), shape_re(3))


def test_scan_carry_changes_dtype():
  body = lambda c, x: ((c + x).astype(tnp.int32), x)
  raises(TypeError, lambda: lax.scan(body, np.zeros(2, np.float32), np.ones((4, 2), np.float32)), "scan", "carry",
         "int32|i32")


def test_scan_carry_changes_structure():
  body = lambda c, x: ((c, c), x)
  raises(TypeError, lambda: lax.scan(body, np.zeros(2, np.float32), np.ones(4, np.float32)), "scan", "carry")


def test_while_and_fori_loop_carry_changes_type():
  raises(TypeError, lambda: lax.while_loop(lambda c: c.sum() < 3.0, lambda c: tnp.concatenate([c, c]),
                                           np.ones(1, np.float32)), "while_loop", shape_re(1), shape_re(2))
  raises(TypeError, lambda: lax.fori_loop(0, 3, lambda i, c: c.astype(tnp.int32), np.ones(2, np.float32)),
         "fori_loop|while_loop|scan", "float32|f32", "int32|i32")


def test_scan_xs_lengths_disagree():
  xs = (np.ones(3, np.float32), np.ones(4, np.float32))
  raises(ValueError, lambda: lax.scan(lambda c, x: (c, x[0] + x[1]), np.float32(0.0), xs), "scan", r"\b3\b", r"\b4\b")
  raises(ValueError, lambda: lax.scan(lambda c, x: (c, x), np.float32(0.0), xs[0], length=5), "scan", r"\b3\b",
         r"\b5\b")
