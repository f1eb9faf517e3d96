"""vectorize, as jax.numpy.vectorize: a function written for scalars, or for arrays of the core shapes a generalized
ufunc signature names ("(m,n),(n)->(m)"), mapped with vmap over the leading (loop) axes of its arguments, which
broadcast against one another. A loop axis of size 1 is not mapped over for that argument (vmap's in_axes=None).
"""
from __future__ import annotations

import functools
import re
import warnings

from .. import tree
from ..array import Array
from ..config import config
from ..ir import broadcast_shapes
from ..transforms import vmap
from .creation import asarray
from .shape import expand_dims

__all__ = ["vectorize"]

_ARG = r"\((?:\w+(?:,\w+)*)?\)"
_SIGNATURE = re.compile(rf"^{_ARG}(?:,{_ARG})*->{_ARG}(?:,{_ARG})*$")


def _parse(signature: str) -> tuple[list[tuple[str, ...]], list[tuple[str, ...]]]:
  """The core dimension names of each input and each output of a signature such as "(m,n),(n)->(m)"."""
  if not isinstance(signature, str):
    raise TypeError(f"vectorize: signature must be a string such as '(m,n),(n)->(m)', got {signature!r}")
  sig = re.sub(r"\s+", "", signature)
  if not _SIGNATURE.match(sig):
    raise ValueError(f"vectorize: signature {signature!r} is not a valid gufunc signature; write it as "
                     f"'(m,n),(n)->(m)': parenthesised, comma-separated dimension names")
  return tuple([tuple(re.findall(r"\w+", a)) for a in re.findall(_ARG, side)] for side in sig.split("->"))


def _core_sizes(sizes: dict, shape: tuple, dims: tuple, what: str, where: str) -> None:
  """Record (or check against earlier ones) the sizes of the core dimensions `dims` at the end of `shape`."""
  for name, n in zip(dims, shape[len(shape) - len(dims):]):
    if sizes.setdefault(name, n) != n:
      raise ValueError(f"vectorize: inconsistent size for core dimension {name!r}: {n} in {what} of shape {shape} "
                       f"vs {sizes[name]} before {where}")


def _checked(f, sizes: dict, outs: list, where: str):
  """f, checking that its outputs have the core shapes of the signature."""
  def g(*args):
    out = f(*args)
    many = isinstance(out, tuple)
    if len(outs) > 1 and not many:
      raise TypeError(f"vectorize: the function must return a tuple of {len(outs)} outputs {where}, got "
                      f"{type(out).__name__}")
    results = out if many else (out,)
    if len(results) != len(outs):
      raise TypeError(f"vectorize: wrong number of outputs: expected {len(outs)}, got {len(results)} {where}")
    seen = dict(sizes)
    for i, (r, dims) in enumerate(zip(results, outs)):
      shape = r.shape if isinstance(r, Array) else asarray(r).shape
      if len(shape) != len(dims):
        raise ValueError(f"vectorize: output {i} has shape {shape}, which does not match its core dimensions {dims} "
                         f"{where}")
      _core_sizes(seen, shape, dims, f"output {i}", where)
    return out
  return g


def _with_fixed(f, fixed: dict[int, object]):
  """f with the positional arguments in `fixed` (position -> value) put back among the others."""
  def g(*args):
    rest = iter(args)
    return f(*(fixed[i] if i in fixed else next(rest) for i in range(len(args) + len(fixed))))
  return g


def vectorize(pyfunc, *, excluded=frozenset(), signature: str | None = None):
  """pyfunc, written for scalars (or for the core shapes of `signature`), mapped with vmap over the broadcast leading
  axes of its arguments; positions and keywords in `excluded` pass through unchanged, as jax.numpy.vectorize.

  >>> f = tnp.vectorize(lambda a, b: a * b + 1)
  >>> f(tnp.array([1, 5, 3]), 2)
  Array([ 3, 11,  7], dtype=int32)
  >>> dot = tnp.vectorize(lambda u, v: (u * v).sum(), signature="(n),(n)->()")
  >>> dot(tnp.ones((2, 3)), tnp.arange(3.0))
  Array([3., 3.], dtype=float32)
  """
  if any(not isinstance(e, (int, str)) or isinstance(e, bool) for e in excluded):
    raise TypeError(f"vectorize: excluded must hold argument positions (ints) or keyword names, got {excluded!r}")
  if any(isinstance(e, int) and e < 0 for e in excluded):
    raise ValueError(f"vectorize: excluded={excluded!r} holds a negative position; give positions from 0")
  ins, outs = _parse(signature) if signature is not None else (None, None)

  @functools.wraps(pyfunc)
  def wrapped(*args, **kwargs):
    where = f"(vectorize with excluded={excluded!r}, signature={signature!r})"
    kw = {k: v for k, v in kwargs.items() if k in excluded}
    dyn_kw = [k for k in kwargs if k not in excluded]
    if dyn_kw and signature is not None:
      raise TypeError(f"vectorize: keyword arguments {dyn_kw} have no core dimensions in the signature; pass them "
                      f"by position, or list them in excluded= to pass them unchanged {where}")
    dyn = [a for i, a in enumerate(args) if i not in excluded] + [kwargs[k] for k in dyn_kw]
    core = list(ins) if ins is not None else [()] * len(dyn)
    if len(dyn) != len(core):
      raise TypeError(f"vectorize: wrong number of positional arguments: expected {len(core)}, got {len(dyn)} {where}")
    for j, a in enumerate(dyn):  # None passes through as an excluded argument, where it has no core dimensions
      if a is None and core[j]:
        raise ValueError(f"vectorize: argument {j} is None but has core dimensions {core[j]} {where}")
    pos = [i for i in range(len(args)) if i not in excluded]

    def call(*vals):
      full = dict(zip(pos, vals))
      a = [full[i] if i in full else args[i] for i in range(len(args))]
      return pyfunc(*a, **dict(zip(dyn_kw, vals[len(pos):])), **kw)

    keep = [j for j, a in enumerate(dyn) if a is not None]
    f = _with_fixed(call, {j: None for j, a in enumerate(dyn) if a is None})
    xs = [asarray(dyn[j]) for j in keep]
    core = [core[j] for j in keep]
    sizes: dict = {}
    for j, (x, dims) in enumerate(zip(xs, core)):
      if x.ndim < len(dims):
        raise ValueError(f"vectorize: input {j} of shape {x.shape} does not have enough dimensions for its core "
                         f"dimensions {dims} {where}")
      _core_sizes(sizes, x.shape, dims, f"input {j}", where)
    loops = [x.shape[:x.ndim - len(d)] for x, d in zip(xs, core)]
    shape = broadcast_shapes(*loops, fn="vectorize")
    mode = config.jax_numpy_rank_promotion
    if mode != "allow" and len({len(l) for x, l in zip(xs, loops) if x.ndim}) > 1:
      msg = (f"vectorize: arguments of shapes {[x.shape for x in xs]} broadcast their loop axes across ranks, and "
             f"jax_numpy_rank_promotion is {mode!r}; give them one rank or set it to 'allow' {where}")
      if mode == "raise": raise ValueError(msg)
      warnings.warn(msg, stacklevel=2)
    if outs is not None: f = _checked(f, sizes, outs, where)
    # each argument without its size-1 loop axes; the loops, outermost first, map over the arguments that have them
    full = [(1,) * (len(shape) - len(s)) + s for s in loops]
    xs = [Array(x.uop.reshape(tuple(n for n in s if n != 1) + x.shape[len(l):]), x.weak_type)
          for x, s, l in zip(xs, full, loops)]
    unmapped = []
    for ax in reversed(range(len(shape))):
      axes = tuple(0 if s[ax] != 1 else None for s in full)
      if all(a is None for a in axes): unmapped.append(ax)
      else: f = vmap(f, in_axes=axes)
    out = f(*xs)
    return tree.map(lambda r: expand_dims(r, tuple(sorted(unmapped))), out) if unmapped else out

  return wrapped
