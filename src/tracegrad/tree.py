"""Pytrees, as jax.tree: tuples, lists, dicts, None, namedtuples and registered nodes (through optree).

>>> tracegrad.tree.map(lambda x: x * 2, {"a": 1, "b": (2, 3)})
{'a': 2, 'b': (4, 6)}
"""
from __future__ import annotations

import builtins
import dataclasses
import functools
from typing import Any, Callable

import optree

from .tree_keys import KeyedEntry, jax_path

NAMESPACE = "tracegrad"
_KW = dict(none_is_leaf=False, namespace=NAMESPACE)


def flatten(tree, is_leaf: Callable | None = None) -> tuple[list, Any]:
  """(leaves, treedef) of `tree`."""
  return optree.tree_flatten(tree, is_leaf, **_KW)


def unflatten(treedef, leaves) -> Any:
  """The tree of structure `treedef` holding `leaves`."""
  return optree.tree_unflatten(treedef, list(leaves))


def leaves(tree, is_leaf: Callable | None = None) -> list: return optree.tree_leaves(tree, is_leaf, **_KW)
def structure(tree, is_leaf: Callable | None = None): return optree.tree_structure(tree, is_leaf, **_KW)


def map(f: Callable, tree, *rest, is_leaf: Callable | None = None):
  """f applied leafwise over `tree` and trees of the same structure."""
  return optree.tree_map(f, tree, *rest, is_leaf=is_leaf, **_KW)


def flatten_with_path(tree, is_leaf: Callable | None = None) -> tuple[list, Any]:
  """([(path, leaf), ...], treedef), each path a tuple of keys (DictKey, SequenceKey, GetAttrKey, ...).

  >>> tracegrad.tree.flatten_with_path({"a": [5]})[0]
  [((DictKey(key='a'), SequenceKey(idx=0)), 5)]
  """
  accessors, lv, treedef = optree.tree_flatten_with_accessor(tree, is_leaf, **_KW)
  return [(jax_path(a), x) for a, x in zip(accessors, lv)], treedef


def leaves_with_path(tree, is_leaf: Callable | None = None) -> list:
  """[(path, leaf), ...] of `tree`, as jax.tree.leaves_with_path."""
  return flatten_with_path(tree, is_leaf)[0]


def leaves_with_raw_path(tree, is_leaf: Callable | None = None) -> list:
  """[(path, leaf), ...] with each path the bare keys and indices: ("a", 0) for {"a": [x]}."""
  paths, lv, _ = optree.tree_flatten_with_path(tree, is_leaf, **_KW)
  return list(zip(paths, lv))


def map_with_path(f: Callable, tree, *rest, is_leaf: Callable | None = None):
  """f(path, leaf, *others) over the leaves of `tree` (and of trees of the same structure in `rest`).

  >>> tracegrad.tree.map_with_path(lambda p, x: f"{p[0].key}={x}", {"a": 1})
  {'a': 'a=1'}
  """
  pairs, treedef = flatten_with_path(tree, is_leaf)
  others = [treedef.flatten_up_to(r) for r in rest]
  return treedef.unflatten([f(p, x, *xs) for (p, x), *xs in zip(pairs, *others)])


def reduce(f: Callable, tree, *initializer, is_leaf: Callable | None = None):
  """functools.reduce of f over the leaves of `tree`."""
  return functools.reduce(f, leaves(tree, is_leaf), *initializer)


def reduce_associative(f: Callable, tree, *, identity=None, is_leaf: Callable | None = None):
  """f (associative) over the leaves of `tree`, combined pairwise; `identity` for a tree without leaves.

  >>> tracegrad.tree.reduce_associative(lambda a, b: a + b, [1, 2, 3])
  6
  """
  xs = leaves(tree, is_leaf)
  if not xs:
    if identity is None: raise TypeError("reduce_associative: the tree has no leaves and no identity was given")
    return identity
  while len(xs) > 1: xs = [f(xs[i], xs[i + 1]) if i + 1 < len(xs) else xs[i] for i in range(0, len(xs), 2)]
  return xs[0]


def all(tree, *, is_leaf: Callable | None = None) -> bool:
  """Whether every leaf is true."""
  return builtins.all(leaves(tree, is_leaf))


def transpose(outer_treedef, inner_treedef, pytree_to_transpose):
  """An outer tree of inner trees turned into an inner tree of outer trees, as jax.tree.transpose (inner_treedef
  None: the structure of the first inner tree).

  >>> tracegrad.tree.transpose(structure([0, 0]), structure((0, 0)), [(1, 2), (3, 4)])
  ([1, 3], [2, 4])
  """
  if inner_treedef is None:
    inner_treedef = structure(outer_treedef.flatten_up_to(pytree_to_transpose)[0])
  return optree.tree_transpose(outer_treedef, inner_treedef, pytree_to_transpose)


def broadcast(prefix_tree, full_tree, is_leaf: Callable | None = None):
  """`prefix_tree` with each leaf repeated over the subtree of `full_tree` at its place.

  >>> tracegrad.tree.broadcast([1, {"a": 2}], [(7, 8), {"a": [9, 9]}])
  [(1, 1), {'a': [2, 2]}]
  """
  return optree.tree_broadcast_prefix(prefix_tree, full_tree, is_leaf, **_KW)


def register_pytree_node(cls: type, flatten_fn: Callable, unflatten_fn: Callable,
                         flatten_with_keys_fn: Callable | None = None) -> type:
  """Register `cls` as a node: flatten_fn(x) -> (children, aux), unflatten_fn(aux, children) -> x; with
  flatten_with_keys_fn(x) -> ([(key, child), ...], aux), paths through it hold those keys."""
  if flatten_with_keys_fn is None:
    optree.register_pytree_node(cls, flatten_fn, unflatten_fn, namespace=NAMESPACE)
    return cls

  def flat(x):
    pairs, aux = flatten_with_keys_fn(x)
    return [c for _, c in pairs], aux, [k for k, _ in pairs]

  optree.register_pytree_node(cls, flat, unflatten_fn, path_entry_type=KeyedEntry, namespace=NAMESPACE)
  return cls


def register_pytree_node_class(cls: type) -> type:
  """Class decorator: `cls.tree_flatten(self) -> (children, aux)` and `cls.tree_unflatten(aux, children)`."""
  return register_pytree_node(cls, lambda x: x.tree_flatten(), cls.tree_unflatten)


def static(**kwargs):
  """A dataclasses.field (same arguments) whose metadata marks it static, so register_dataclass keeps it in the
  treedef instead of among the leaves, as jax.tree.static.

  >>> import dataclasses
  >>> @tracegrad.tree_util.register_dataclass
  ... @dataclasses.dataclass
  ... class Op:
  ...   x: float
  ...   kind: str = static(default="add")
  >>> leaves(Op(1.0))
  [1.0]
  """
  return dataclasses.field(metadata={"static": True, **(kwargs.pop("metadata", None) or {})}, **kwargs)
