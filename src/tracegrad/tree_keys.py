"""The keys of a pytree path, as jax.tree_util: DictKey, SequenceKey, GetAttrKey, FlattenedIndexKey, and keystr.

>>> keystr((DictKey("a"), SequenceKey(0), GetAttrKey("x")))
"['a'][0].x"
"""
from __future__ import annotations

import dataclasses

import optree


@dataclasses.dataclass(frozen=True)
class DictKey:
  """The key of a dict entry: prints as `['a']`."""
  key: object
  def __str__(self) -> str: return f"[{self.key!r}]"


@dataclasses.dataclass(frozen=True)
class SequenceKey:
  """The index of a list or tuple entry: prints as `[0]`."""
  idx: int
  def __str__(self) -> str: return f"[{self.idx!r}]"


@dataclasses.dataclass(frozen=True)
class GetAttrKey:
  """The attribute of a namedtuple field or dataclass: prints as `.x`."""
  name: str
  def __str__(self) -> str: return f".{self.name}"


@dataclasses.dataclass(frozen=True)
class FlattenedIndexKey:
  """The position of a child of a node registered without keys: prints as `[<flat index 0>]`."""
  key: int
  def __str__(self) -> str: return f"[<flat index {self.key}>]"


def _simple(k) -> str:
  for cls, attr in ((DictKey, "key"), (SequenceKey, "idx"), (GetAttrKey, "name"), (FlattenedIndexKey, "key")):
    if isinstance(k, cls): return str(getattr(k, attr))
  return str(k)


def keystr(keys, *, simple: bool = False, separator: str = "") -> str:
  """A path as text, as jax.tree_util.keystr; `simple=True` prints the bare keys, joined by `separator`.

  >>> keystr((DictKey("a"), SequenceKey(1)), simple=True, separator="/")
  'a/1'
  """
  if not isinstance(keys, (tuple, list)):
    raise TypeError(f"keystr: keys must be a tuple of path keys, got {type(keys).__name__} {keys!r}")
  return separator.join(_simple(k) if simple else str(k) for k in keys)


class KeyedEntry(optree.PyTreeEntry):
  """The path entry of a node registered with keys: the entry is the user's key object."""


def jax_key(entry) -> object:
  """The jax.tree_util key of one optree path entry."""
  if isinstance(entry, KeyedEntry): return entry.entry
  if isinstance(entry, optree.MappingEntry): return DictKey(entry.entry)
  if isinstance(entry, optree.NamedTupleEntry): return GetAttrKey(entry.type._fields[entry.entry])
  if isinstance(entry, (optree.GetAttrEntry, optree.DataclassEntry)): return GetAttrKey(entry.name)
  if isinstance(entry, optree.SequenceEntry): return SequenceKey(entry.entry)
  return FlattenedIndexKey(entry.entry)


def jax_path(accessor) -> tuple:
  """The path of one leaf as a tuple of jax.tree_util keys."""
  return tuple(jax_key(e) for e in accessor)
