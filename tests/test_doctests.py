"""The examples in the docstrings run and print what they say."""
import contextlib
import doctest
import importlib
import io
import pathlib
import pkgutil
import re

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


def test_readme_first_example_prints_what_it_says():
  code = (pathlib.Path(__file__).parents[1] / "README.md").read_text().split("```python\n", 1)[1].split("```", 1)[0]
  printed, rep = re.search(r"print\(f\(x\)\) +# eager: (\S+) \(repr\(f\(x\)\) is (.+)\)\n", code).groups()
  env, out = {}, io.StringIO()
  with contextlib.redirect_stdout(out): exec(code, env)
  check = doctest.OutputChecker()
  assert check.check_output(printed + "\n", out.getvalue().splitlines(True)[0], doctest.ELLIPSIS)
  assert check.check_output(rep, repr(env["f"](env["x"])), doctest.ELLIPSIS)

