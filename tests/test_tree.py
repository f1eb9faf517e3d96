from collections import namedtuple

import pytest

import tracegrad
from tracegrad import tree

Point = namedtuple("Point", "x y")


class Pair:
  def __init__(self, a, b): self.a, self.b = a, b


tree.register_pytree_node(Pair, lambda p: ((p.a, p.b), None), lambda aux, ch: Pair(*ch))


@tree.register_pytree_node_class
class Box:
  def __init__(self, v, tag): self.v, self.tag = v, tag
  def tree_flatten(self): return (self.v,), self.tag
  @classmethod
  def tree_unflatten(cls, tag, ch): return cls(ch[0], tag)


def test_leaves_skip_none_and_follow_key_order():
  t = {"b": (1, None, [2, 3]), "a": Point(4, 5)}
  assert tree.leaves(t) == [4, 5, 1, 2, 3]


def test_flatten_unflatten_roundtrip():
  t = {"x": [1, (2, 3)], "y": None, "z": Point(4, {"w": 5})}
  leaves, spec = tree.flatten(t)
  assert tree.unflatten(spec, leaves) == t
  assert tree.structure(t) == spec


def test_map_over_several_trees_and_registered_nodes():
  out = tree.map(lambda a, b: a + b, Pair(1, [2]), Pair(10, [20]))
  assert isinstance(out, Pair) and out.a == 11 and out.b == [22]
  bx = tree.map(lambda v: v * 2, Box(3, "t"))
  assert bx.v == 6 and bx.tag == "t"


def test_map_mismatched_structure_raises():
  with pytest.raises(ValueError): tree.map(lambda a, b: a, (1, 2), (1, 2, 3))


def test_reduce_and_all():
  assert tree.reduce(lambda a, b: a + b, {"a": 1, "b": [2, 3]}) == 6
  assert tree.reduce(lambda a, b: a + b, [], 7) == 7
  assert tree.all([True, (True,)]) and not tree.all([True, False])


def test_leaves_with_path():
  from tracegrad.tree_util import DictKey, SequenceKey
  assert [p for p, _ in tree.leaves_with_path({"a": [1, 2]})] == [(DictKey("a"), SequenceKey(0)), (DictKey("a"), SequenceKey(1))]
  assert [p for p, _ in tree.leaves_with_raw_path({"a": [1, 2]})] == [("a", 0), ("a", 1)]


def test_is_exported_as_jax_tree():
  assert tracegrad.tree.map is tree.map
