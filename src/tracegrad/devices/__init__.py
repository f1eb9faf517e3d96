"""Devices: each evaluates graphs whose leaves are concrete. Imports only the IR."""
from .base import Device
from .interp import InterpDevice, TracedValueError

__all__ = ["Device", "InterpDevice", "TracedValueError"]
