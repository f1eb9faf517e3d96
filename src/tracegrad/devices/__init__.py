"""Devices: each evaluates graphs whose leaves are concrete (interp), or compiles and runs programs (cpu). Imports
only the IR."""
from .base import Device
from .cpu import CPUDevice
from .interp import InterpDevice, TracedValueError

__all__ = ["CPUDevice", "Device", "InterpDevice", "TracedValueError"]
