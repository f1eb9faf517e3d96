"""Every notebook in notebooks/ runs top to bottom in a fresh kernel, on the device the suite runs on (the kernel
inherits TRACEGRAD_DEVICE), and is stored without outputs."""
import re
from pathlib import Path

import pytest

nbclient = pytest.importorskip("nbclient")
nbformat = pytest.importorskip("nbformat")
pytest.importorskip("ipykernel")

from ipykernel.kernelspec import RESOURCES, get_kernel_dict  # noqa: E402
from jupyter_client.kernelspec import KernelSpec, KernelSpecManager  # noqa: E402
from jupyter_client.manager import AsyncKernelManager  # noqa: E402

NOTEBOOKS = sorted((Path(__file__).resolve().parents[1] / "notebooks").glob("*.ipynb"))
CELL_TIMEOUT = 120   # seconds


class ThisInterpreter(KernelSpecManager):
  """ipykernel's own "python3" kernelspec, which runs this interpreter (where tracegrad is installed), whether or not
  a kernelspec is installed and whatever another installed "python3" kernelspec points at."""

  def get_kernel_spec(self, kernel_name: str) -> KernelSpec:
    return KernelSpec(resource_dir=RESOURCES, **get_kernel_dict())


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.name for p in NOTEBOOKS])
def test_notebook_is_stored_clean(path):
  nb = nbformat.read(path, as_version=4)
  nbformat.validate(nb)
  dirty = [i for i, c in enumerate(nb.cells) if c.cell_type == "code" and (c.outputs or c.execution_count is not None)]
  assert not dirty, f"{path.name}: code cells {dirty} hold outputs; store the notebook without them"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.name for p in NOTEBOOKS])
def test_notebook_runs(path):
  nb = nbformat.read(path, as_version=4)
  km = AsyncKernelManager(kernel_name="python3", kernel_spec_manager=ThisInterpreter())
  client = nbclient.NotebookClient(nb, km=km, timeout=CELL_TIMEOUT, resources={"metadata": {"path": str(path.parent)}},
                                   extra_arguments=["--HistoryManager.enabled=False"])
  error = None
  try:
    client.execute()
  except nbclient.exceptions.CellExecutionError as e:
    error = re.sub(r"\x1b\[[0-9;]*m", "", str(e))   # the cell and its traceback, without terminal colours
  if error is not None: pytest.fail(f"{path.name}: a cell raised\n{error}", pytrace=False)
