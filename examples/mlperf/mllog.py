"""MLPerf-style event logging: one line per event, `:::MLLOG {json}`, with the keys MLPerf's logger uses
(init_start, run_start, epoch_start, eval_accuracy, run_stop, ...), so its log checkers and plotting read it."""
from __future__ import annotations

import inspect
import json
import os
import sys
import time


class MLLogger:
  """Writes events to stdout (and to `path` when given): logger.event("eval_accuracy", 0.93, epoch_num=3)."""

  def __init__(self, path: str | None = None, benchmark: str = ""):
    self.file = open(path, "a") if path else None
    self.benchmark = benchmark

  def _log(self, event_type: str, key: str, value=None, **metadata) -> dict:
    caller = inspect.stack()[2]
    record = {"namespace": "", "time_ms": int(time.time() * 1000), "event_type": event_type, "key": key,
              "value": value, "metadata": {"file": os.path.basename(caller.filename), "lineno": caller.lineno,
                                           **metadata}}
    line = ":::MLLOG " + json.dumps(record)
    print(line, file=sys.stdout, flush=True)
    if self.file:
      self.file.write(line + "\n")
      self.file.flush()
    return record

  def event(self, key: str, value=None, **metadata) -> dict: return self._log("POINT_IN_TIME", key, value, **metadata)
  def start(self, key: str, value=None, **metadata) -> dict: return self._log("INTERVAL_START", key, value, **metadata)
  def end(self, key: str, value=None, **metadata) -> dict: return self._log("INTERVAL_END", key, value, **metadata)

  def close(self) -> None:
    if self.file: self.file.close()
