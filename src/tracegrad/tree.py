"""Pytrees, as jax.tree: tuples, lists, dicts, None, namedtuples and registered nodes (through optree).

>>> tracegrad.tree.map(lambda x: x * 2, {"a": 1, "b": (2, 3)})
{'a': 2, 'b': (4, 6)}
"""
from __future__ import annotations

from typing import Any, Callable

import optree

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


def map_with_path(f: Callable, tree, *rest, is_leaf: Callable | None = None):
  return optree.tree_map_with_path(f, tree, *rest, is_leaf=is_leaf, **_KW)


def leaves_with_path(tree, is_leaf: Callable | None = None) -> list:
  paths, lv, _ = optree.tree_flatten_with_path(tree, is_leaf, **_KW)
  return list(zip(paths, lv))


def reduce(f: Callable, tree, *initializer, is_leaf: Callable | None = None):
  """functools.reduce of f over the leaves of `tree`."""
  import functools
  return functools.reduce(f, leaves(tree, is_leaf), *initializer)


def all(tree) -> bool:
  import builtins
  return builtins.all(leaves(tree))


def register_pytree_node(cls: type, flatten_fn: Callable, unflatten_fn: Callable) -> type:
  """Register `cls` as a node: flatten_fn(x) -> (children, aux), unflatten_fn(aux, children) -> x."""
  optree.register_pytree_node(cls, flatten_fn, unflatten_fn, namespace=NAMESPACE)
  return cls


def register_pytree_node_class(cls: type) -> type:
  """Class decorator: `cls.tree_flatten(self) -> (children, aux)` and `cls.tree_unflatten(aux, children)`."""
  return register_pytree_node(cls, lambda x: x.tree_flatten(), cls.tree_unflatten)
