"""tracegrad.tree_util against jax.tree_util: leaves, structures, paths and keystr."""
import collections
import dataclasses

import pytest

import tracegrad
from tracegrad import tree_util as tu

jax = pytest.importorskip("jax")
jtu = jax.tree_util

Point = collections.namedtuple("Point", "x y")
TREES = [{"b": (1, None, [2, 3]), "a": Point(4, 5)}, [1, (2, {"z": 3, "y": [4]})], 7, (), {"k": None}]


@pytest.mark.parametrize("t", TREES)
def test_leaves_and_paths_match_jax(t):
  assert tu.tree_leaves(t) == jtu.tree_leaves(t)
  mine, theirs = tu.tree_leaves_with_path(t), jtu.tree_leaves_with_path(t)
  assert [tu.keystr(p) for p, _ in mine] == [jtu.keystr(p) for p, _ in theirs]
  assert [tu.keystr(p, simple=True, separator="/") for p, _ in mine] == \
         [jtu.keystr(p, simple=True, separator="/") for p, _ in theirs]
  assert [repr(p) for p, _ in mine] == [repr(p) for p, _ in theirs]
  assert [x for _, x in mine] == [x for _, x in theirs]


def test_import_forms():
  import tracegrad.tree_util as a
  from tracegrad import tree_util as b
  assert a is b is tracegrad.tree_util


def test_map_with_path_and_flatten_with_path():
  t = {"a": [1, 2], "b": Point(3, 4)}
  got = tu.tree_map_with_path(lambda p, x, y: f"{tu.keystr(p)}:{x + y}", t, t)
  want = jtu.tree_map_with_path(lambda p, x, y: f"{jtu.keystr(p)}:{x + y}", t, t)
  assert got == want
  pairs, td = tu.tree_flatten_with_path(t)
  assert tu.tree_unflatten(td, [x for _, x in pairs]) == t


def test_reduce_all_transpose_broadcast():
  t = {"a": 1, "b": [2, 3]}
  assert tu.tree_reduce(lambda a, b: a + b, t) == jtu.tree_reduce(lambda a, b: a + b, t)
  assert tu.tree_reduce(lambda a, b: a + b, t, 10) == 16
  assert tu.tree_all([True, (True,)]) and not tu.tree_all([1, 0])
  x = [{"u": 1, "v": 2}, {"u": 3, "v": 4}]
  mine = tu.tree_transpose(tu.tree_structure([0, 0]), tu.tree_structure({"u": 0, "v": 0}), x)
  assert mine == jtu.tree_transpose(jtu.tree_structure([0, 0]), jtu.tree_structure({"u": 0, "v": 0}), x)
  assert tracegrad.tree.transpose(tu.tree_structure([0, 0]), None, x) == mine
  assert tracegrad.tree.broadcast([1, {"a": 2}], [(7, 8), {"a": [9, 9]}]) == \
         jax.tree.broadcast([1, {"a": 2}], [(7, 8), {"a": [9, 9]}])


def test_treedef_helpers():
  for x in (1, None, [1], {"a": 1}):
    assert tu.treedef_is_leaf(tu.tree_structure(x)) == jtu.treedef_is_leaf(jtu.tree_structure(x))
  assert tu.all_leaves([1, 2.0]) == jtu.all_leaves([1, 2.0])
  assert tu.all_leaves([1, [2]]) == jtu.all_leaves([1, [2]])
  assert tu.build_tree(tu.tree_structure((0, {"a": 0, "b": 0})), [1, [2, 3]]) == (1, {"a": 2, "b": 3})


class Node:
  def __init__(self, a, b): self.a, self.b = a, b


tu.register_pytree_node(Node, lambda n: ((n.a, n.b), "aux"), lambda aux, ch: Node(*ch))
jtu.register_pytree_node(Node, lambda n: ((n.a, n.b), "aux"), lambda aux, ch: Node(*ch))


@tu.register_pytree_with_keys_class
@jtu.register_pytree_with_keys_class
class Keyed:
  def __init__(self, w, b): self.w, self.b = w, b
  def tree_flatten_with_keys(self): return ((tu.GetAttrKey("w"), self.w), (tu.DictKey("bias"), self.b)), None
  def tree_flatten(self): return (self.w, self.b), None
  @classmethod
  def tree_unflatten(cls, aux, ch): return cls(*ch)


@dataclasses.dataclass
class Cfg:
  x: float
  y: list
  name: str = dataclasses.field(default="c", metadata=dict(static=True))


tu.register_dataclass(Cfg)
jtu.register_dataclass(Cfg)


@pytest.mark.parametrize("t", [Node(1, [2]), {"k": Keyed(1, 2)}, Cfg(1.0, [2.0, 3.0])])
def test_registered_nodes_match_jax(t):
  assert tu.tree_leaves(t) == jtu.tree_leaves(t)
  assert [tu.keystr(p) for p, _ in tu.tree_leaves_with_path(t)] == \
         [jtu.keystr(p) for p, _ in jtu.tree_leaves_with_path(t)]
  back = tu.tree_map(lambda v: v, t)
  assert type(back) is type(t)


def test_dataclass_static_field_is_kept():
  c = tu.tree_map(lambda v: v * 2, Cfg(1.0, [2.0], name="n"))
  assert c == Cfg(2.0, [4.0], name="n")


def test_partial_is_a_pytree_through_jit():
  p = tu.Partial(lambda a, x: a * x, tracegrad.numpy.float32(3.0))
  assert len(tu.tree_leaves(p)) == 1
  out = tracegrad.jit(lambda f, x: f(x))(p, 2.0)
  assert float(out) == 6.0
  nested = tu.Partial(tu.Partial(lambda a, b, c: a + b + c, 1), 2)
  assert nested(3) == 6 and tu.tree_leaves(nested) == jtu.tree_leaves(jtu.Partial(jtu.Partial(lambda a, b, c: 0, 1), 2))


def test_keystr_rejects_a_non_tuple():
  with pytest.raises(TypeError, match="keystr"): tu.keystr("a")


def test_tree_module_has_jax_tree_names():
  for name in ("all", "flatten", "flatten_with_path", "leaves", "leaves_with_path", "map", "map_with_path", "reduce",
               "structure", "transpose", "unflatten", "broadcast", "reduce_associative"):
    assert callable(getattr(tracegrad.tree, name)), name
