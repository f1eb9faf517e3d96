"""What every device answers: its name, and how it evaluates the nodes of a graph whose leaves are concrete."""
from __future__ import annotations

from typing import Mapping

import numpy as np

from ..ir import UOp


class Device:
  name: str = "?"
  platform: str = "?"
  id: int = 0

  def execute(self, outputs: list[UOp], known: Mapping[UOp, np.ndarray]) -> list[np.ndarray]:
    """The values of `outputs`; nodes in `known` already have values. Leaves are BUFFER, CONST or IOTA nodes."""
    raise NotImplementedError

  def __repr__(self) -> str: return f"{self.platform.capitalize()}Device(id={self.id})" if self.platform != "?" else self.name
