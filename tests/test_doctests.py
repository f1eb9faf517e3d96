"""The examples in the docstrings run and print what they say."""
import doctest
import importlib
import pkgutil

import pytest

import tracegrad
import tracegrad.numpy as tnp
from tracegrad import lax

MODULES = [m.name for m in pkgutil.walk_packages(tracegrad.__path__, "tracegrad.")]


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name):
  mod = importlib.import_module(name)
  res = doctest.testmod(mod, extraglobs={"tracegrad": tracegrad, "tnp": tnp, "lax": lax},
                        optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE, report=True)
  assert res.failed == 0, f"{res.failed} docstring example(s) of {name} failed (see the output above)"
