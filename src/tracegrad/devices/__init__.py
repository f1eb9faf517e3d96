"""Devices: each evaluates graphs whose leaves are concrete (interp), or compiles and runs programs (cpu, and the
GPU-style opencl and cuda). Imports only the IR."""
from .base import Device
from .cpu import CPUDevice
from .cuda import CUDADevice
from .interp import InterpDevice, TracedValueError
from .opencl import OpenCLDevice

__all__ = ["CPUDevice", "CUDADevice", "Device", "InterpDevice", "OpenCLDevice", "TracedValueError"]
