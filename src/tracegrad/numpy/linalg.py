"""tracegrad.numpy.linalg"""
__all__: list[str] = []
