"""VIZ: a local web page showing each traced program, every rewrite pass as a step, its kernels and their times.

`tracegrad.viz.serve(port)` (or TRACEGRAD_VIZ=<port>) starts recording and serves the page on 127.0.0.1; see
viz/server.py. Recording (viz/record.py) happens only while VIZ is on.
"""


def serve(port: int = 0, *, open_browser: bool = False):
  """Start recording and serve the VIZ page on 127.0.0.1:port (0: a free port); returns the server (`.url`,
  `.close()`)."""
  from .server import serve as _serve
  return _serve(port, open_browser=open_browser)
