"""Pytree utilities, as jax.tree_util: the tree_* functions, node registration (with keys, dataclasses), Partial,
path keys and keystr.

>>> from tracegrad import tree_util
>>> [tree_util.keystr(p) for p, _ in tree_util.tree_leaves_with_path({"a": [1, (2,)]})]
["['a'][0]", "['a'][1][0]"]
"""
from __future__ import annotations

import collections
import dataclasses
import functools
from typing import Any, Callable, Iterable, Sequence

import optree

from . import tree
from .tree_keys import DictKey, FlattenedIndexKey, GetAttrKey, SequenceKey, jax_key, keystr

PyTreeDef = optree.PyTreeSpec
KeyEntry = Any
KeyPath = tuple

tree_flatten, tree_unflatten, tree_leaves, tree_structure = tree.flatten, tree.unflatten, tree.leaves, tree.structure
tree_map, tree_map_with_path, tree_reduce, tree_all = tree.map, tree.map_with_path, tree.reduce, tree.all
tree_flatten_with_path, tree_leaves_with_path = tree.flatten_with_path, tree.leaves_with_path
tree_transpose = tree.transpose
tree_broadcast, tree_reduce_associative = tree.broadcast, tree.reduce_associative
register_pytree_node, register_pytree_node_class = tree.register_pytree_node, tree.register_pytree_node_class


def treedef_is_leaf(treedef) -> bool:
  """Whether `treedef` is a single node (a leaf, or a node without children such as None).

  >>> treedef_is_leaf(tree_structure(1)), treedef_is_leaf(tree_structure([1]))
  (True, False)
  """
  return treedef.num_nodes == 1


def treedef_children(treedef) -> list:
  """The treedefs of the children of the root of `treedef`."""
  return list(treedef.children())


def treedef_tuple(treedefs: Iterable) -> Any:
  """The treedef of a tuple whose children have the given treedefs.

  >>> treedef_tuple([tree_structure(1), tree_structure([1, 2])])
  PyTreeSpec((*, [*, *]))
  """
  treedefs = list(treedefs)
  return tree_structure(tuple(tree_unflatten(t, [0] * t.num_leaves) for t in treedefs))


def all_leaves(iterable: Iterable, is_leaf: Callable | None = None) -> bool:
  """Whether every element of `iterable` is a leaf.

  >>> all_leaves([1, 2.0]), all_leaves([1, (2,)])
  (True, False)
  """
  return all(treedef_is_leaf(tree_structure(x, is_leaf)) and tree_structure(x, is_leaf).num_leaves == 1
             for x in iterable)


def build_tree(treedef, xs) -> Any:
  """The tree of structure `treedef` built from `xs`, a nested iterable mirroring its nodes.

  >>> build_tree(tree_structure({"a": 0, "b": [0, 0]}), [1, [2, 3]])
  {'a': 1, 'b': [2, 3]}
  """
  if treedef.is_leaf(): return xs
  children = treedef.children()
  xs = list(xs)
  if len(xs) != len(children):
    raise ValueError(f"build_tree: the treedef {treedef} has {len(children)} children, xs has {len(xs)}")
  return treedef.one_level().unflatten([build_tree(c, x) for c, x in zip(children, xs)])


def _one_level(x, with_keys: bool):
  """(children or (key, child) pairs, aux data) of the root node of `x`, as JAX's registry gives them; None for a
  leaf."""
  accessors, children, spec = optree.tree_flatten_with_accessor(x, lambda y: y is not x, **tree._KW)
  if spec.is_leaf(): return None
  aux = optree.tree_flatten_one_level(x, **tree._KW).metadata
  if isinstance(x, collections.defaultdict): aux = (aux[0], tuple(aux[1]))
  elif isinstance(x, dict) and isinstance(aux, list): aux = tuple(aux)   # the keys in order, hashable as JAX's
  if not with_keys: return children, aux
  return [(jax_key(a[0]), c) for a, c in zip(accessors, children)], aux


def flatten_one_level(tree_) -> tuple[list, Any]:
  """(children, aux data) of the root node of `tree_`, as jax.tree_util.flatten_one_level; ValueError for a leaf.

  >>> flatten_one_level({"b": [1, 2], "a": 3})
  ([3, [1, 2]], ('a', 'b'))
  """
  out = _one_level(tree_, False)
  if out is None: raise ValueError(f"flatten_one_level: tree of {type(tree_)} is a leaf, not a pytree node")
  return out


def flatten_one_level_with_keys(tree_) -> tuple[list, Any]:
  """([(key, child), ...], aux data) of the root node of `tree_`, as jax.tree_util.flatten_one_level_with_keys;
  ValueError for a leaf.

  >>> flatten_one_level_with_keys({"b": [1, 2], "a": 3})
  ([(DictKey(key='a'), 3), (DictKey(key='b'), [1, 2])], ('a', 'b'))
  """
  out = _one_level(tree_, True)
  if out is None: raise ValueError(f"flatten_one_level_with_keys: tree of {type(tree_)} is a leaf, not a pytree node")
  return out


def is_tree_node(typ: type) -> bool:
  """Whether the type `typ` is a pytree node type (a built-in container, a namedtuple or a registered type), as
  jax.tree_util.is_tree_node.

  >>> is_tree_node(dict), is_tree_node(int), is_tree_node([1])
  (True, False, False)
  """
  return isinstance(typ, type) and optree.register_pytree_node.get(typ, namespace=tree.NAMESPACE) is not None


def register_pytree_with_keys(cls: type, flatten_with_keys: Callable, unflatten_func: Callable,
                              flatten_func: Callable | None = None) -> type:
  """Register `cls` as a node whose paths carry keys: flatten_with_keys(x) -> ([(key, child), ...], aux).

  >>> class Two:
  ...   def __init__(self, a, b): self.a, self.b = a, b
  >>> _ = register_pytree_with_keys(Two, lambda t: (((GetAttrKey("a"), t.a), (GetAttrKey("b"), t.b)), None),
  ...                               lambda aux, ch: Two(*ch))
  >>> [keystr(p) for p, _ in tree_leaves_with_path(Two(1, 2))]
  ['.a', '.b']
  """
  flat = flatten_func or (lambda x: (lambda pairs, aux: ([c for _, c in pairs], aux))(*flatten_with_keys(x)))
  return tree.register_pytree_node(cls, flat, unflatten_func, flatten_with_keys)


def register_pytree_with_keys_class(cls: type) -> type:
  """Class decorator: `cls.tree_flatten_with_keys(self) -> ([(key, child), ...], aux)` and `cls.tree_unflatten`."""
  flat = getattr(cls, "tree_flatten", None)
  return register_pytree_with_keys(cls, lambda x: x.tree_flatten_with_keys(), cls.tree_unflatten,
                                   (lambda x: x.tree_flatten()) if flat is not None else None)


def register_dataclass(nodetype: type, data_fields: Sequence[str] | None = None,
                       meta_fields: Sequence[str] | None = None, drop_fields: Sequence[str] = ()) -> type:
  """Register a dataclass as a node: `data_fields` are children, `meta_fields` static data (by default, fields whose
  metadata says static=True).

  >>> @register_dataclass
  ... @dataclasses.dataclass
  ... class Pt:
  ...   x: float
  ...   tag: str = dataclasses.field(default="p", metadata=dict(static=True))
  >>> tree_leaves(Pt(1.0)), [keystr(p) for p, _ in tree_leaves_with_path(Pt(1.0))]
  ([1.0], ['.x'])
  """
  if data_fields is None or meta_fields is None:
    if not dataclasses.is_dataclass(nodetype):
      raise TypeError(f"register_dataclass: {nodetype.__name__} is not a dataclass; pass data_fields and meta_fields")
    fields = [f for f in dataclasses.fields(nodetype) if f.init and f.name not in drop_fields]
    static = [f.name for f in fields if f.metadata.get("static", False)]
    data_fields = [f.name for f in fields if f.name not in static] if data_fields is None else data_fields
    meta_fields = static if meta_fields is None else meta_fields
  data, meta = tuple(data_fields), tuple(meta_fields)

  def with_keys(x):
    return [(GetAttrKey(n), getattr(x, n)) for n in data], tuple(getattr(x, n) for n in meta)

  def unflatten(aux, children):
    return nodetype(**dict(zip(data, children)), **dict(zip(meta, aux)))

  return register_pytree_with_keys(nodetype, with_keys, unflatten)


def register_static(cls: type) -> type:
  """Register `cls` as a node without children: its values are static data, never leaves."""
  return tree.register_pytree_node(cls, lambda x: ((), x), lambda x, _: x)


class _Unmerged:
  """A partial wrapped so that functools.partial does not merge its arguments into a Partial's."""

  def __init__(self, p): self.p, self.func, self.args, self.keywords = p, p.func, p.args, p.keywords
  def __call__(self, *args, **kw): return self.p(*args, **kw)
  def __eq__(self, other): return isinstance(other, _Unmerged) and self.p == other.p
  def __hash__(self): return hash(self.p)


class Partial(functools.partial):
  """functools.partial that is a pytree: its arguments are the children, the function static data (as
  jax.tree_util.Partial), so it can be passed to and returned from transformed functions.

  >>> p = Partial(lambda a, b: a + b, 1)
  >>> tree_leaves(p), p(2)
  ([1], 3)
  """

  def __new__(cls, func, *args, **kw):
    return super().__new__(cls, _Unmerged(func) if isinstance(func, functools.partial) else func, *args, **kw)


tree.register_pytree_node(Partial, lambda p: ((p.args, p.keywords), p.func),
                          lambda func, ch: Partial(func, *ch[0], **ch[1]))

class _Marked:
  """A subtree that a path-aware leaf predicate chose to keep whole."""

  def __init__(self, x): self.x = x


class PyTreeRegistry:
  """The pytree node types tracegrad knows (built-ins, namedtuples and registered types), as
  jax.tree_util.default_registry: flatten with it, ask whether a type is a node, register new ones.

  >>> default_registry.flatten({"a": 1, "b": [2, 3]})[0]
  [1, 2, 3]
  >>> default_registry.is_node(list), default_registry.flatten_one_level(7)
  (True, None)
  """

  def flatten(self, tree_, leaf_predicate: Callable | None = None) -> tuple[list, Any]:
    """(leaves, treedef); leaf_predicate(x) true keeps the subtree x whole."""
    return tree.flatten(tree_, leaf_predicate)

  def flatten_with_path(self, tree_, leaf_predicate: Callable | None = None) -> tuple[list, Any]:
    """([(path, leaf), ...], treedef); leaf_predicate(path, x) true keeps the subtree x at path whole."""
    if leaf_predicate is None: return tree.flatten_with_path(tree_)

    def mark(x, path):
      if leaf_predicate(path, x): return _Marked(x)
      one = _one_level(x, True)
      if one is None: return x
      pairs, _ = one
      new = [mark(c, path + (k,)) for k, c in pairs]
      if all(n is c for n, (_, c) in zip(new, pairs)): return x
      node = optree.tree_flatten_one_level(x, **tree._KW)
      return node.unflatten_func(node.metadata, new)

    pairs, treedef = tree.flatten_with_path(mark(tree_, ()), lambda y: isinstance(y, _Marked))
    return [(p, v.x if isinstance(v, _Marked) else v) for p, v in pairs], treedef

  def flatten_one_level(self, tree_):
    """(children, aux data) of the root node of tree_, or None for a leaf."""
    return _one_level(tree_, False)

  def flatten_one_level_with_keys(self, tree_):
    """([(key, child), ...], aux data) of the root node of tree_, or None for a leaf."""
    return _one_level(tree_, True)

  def is_node(self, type_: type) -> bool:
    """Whether instances of type_ are nodes."""
    return is_tree_node(type_)

  def register_node(self, type_: type, to_iterable: Callable, from_iterable: Callable,
                    to_iterable_with_keys: Callable | None = None) -> None:
    """Register type_ as a node, as register_pytree_node."""
    tree.register_pytree_node(type_, to_iterable, from_iterable, to_iterable_with_keys)

  def register_dataclass_node(self, type_: type, data_fields: Sequence[str], meta_fields: Sequence[str], /) -> None:
    """Register the dataclass type_ as a node, as register_dataclass with data and meta fields given."""
    register_dataclass(type_, data_fields, meta_fields)


default_registry = PyTreeRegistry()

__all__ = ["DictKey", "FlattenedIndexKey", "GetAttrKey", "KeyEntry", "KeyPath", "Partial", "PyTreeDef", "SequenceKey",
           "all_leaves", "build_tree", "default_registry", "flatten_one_level", "flatten_one_level_with_keys",
           "is_tree_node", "keystr", "register_dataclass", "register_pytree_node", "register_pytree_node_class",
           "register_pytree_with_keys", "register_pytree_with_keys_class", "register_static", "tree_all",
           "tree_broadcast", "tree_flatten", "tree_flatten_with_path", "tree_leaves", "tree_leaves_with_path",
           "tree_map", "tree_map_with_path", "tree_reduce", "tree_reduce_associative", "tree_structure",
           "tree_transpose", "tree_unflatten", "treedef_children", "treedef_is_leaf", "treedef_tuple"]
