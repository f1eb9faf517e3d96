"""Learning-rate schedules as optax's: functions of the step count (an int or an int array) to a value.

>>> tracegrad.optim.linear_schedule(1.0, 0.0, 10)(5)
Array(0.5, dtype=float32, weak_type=True)
"""
from __future__ import annotations

import math
from typing import Callable, Sequence

from .. import numpy as tnp


def constant_schedule(value) -> Callable:
  """value at every step."""
  return lambda count: tnp.asarray(value)


def linear_schedule(init_value, end_value, transition_steps: int, transition_begin: int = 0) -> Callable:
  """From init_value to end_value over transition_steps, starting at transition_begin."""
  if transition_steps <= 0: return constant_schedule(init_value)

  def schedule(count):
    c = tnp.clip(tnp.asarray(count) - transition_begin, 0, transition_steps)
    return (init_value - end_value) * (1 - c / transition_steps) + end_value
  return schedule


def cosine_decay_schedule(init_value, decay_steps: int, alpha: float = 0.0, exponent: float = 1.0) -> Callable:
  """init_value times ((1 - alpha) * cosine ** exponent + alpha), the cosine going from 1 to 0 over decay_steps."""
  if decay_steps <= 0: raise ValueError(f"cosine_decay_schedule: decay_steps must be positive, got {decay_steps}")

  def schedule(count):
    c = tnp.minimum(tnp.asarray(count), decay_steps)
    cosine = 0.5 * (1 + tnp.cos(math.pi * c / decay_steps))
    return init_value * ((1 - alpha) * cosine ** exponent + alpha)
  return schedule


def exponential_decay(init_value, transition_steps: int, decay_rate: float, transition_begin: int = 0,
                      staircase: bool = False, end_value=None) -> Callable:
  """init_value * decay_rate ** ((count - transition_begin) / transition_steps), floored when staircase, bounded
  by end_value."""
  if transition_steps <= 0: return constant_schedule(init_value)

  def schedule(count):
    p = tnp.maximum(tnp.asarray(count) - transition_begin, 0) / transition_steps
    if staircase: p = tnp.floor(p)
    v = init_value * decay_rate ** p
    if end_value is not None: v = tnp.maximum(v, end_value) if decay_rate < 1 else tnp.minimum(v, end_value)
    return v
  return schedule


def join_schedules(schedules: Sequence[Callable], boundaries: Sequence[int]) -> Callable:
  """schedules[i] from boundaries[i - 1] on, each counting from its boundary."""
  def schedule(count):
    count = tnp.asarray(count)
    out = schedules[0](count)
    for b, s in zip(boundaries, schedules[1:]): out = tnp.where(count < b, out, s(count - b))
    return out
  return schedule


def warmup_cosine_decay_schedule(init_value, peak_value, warmup_steps: int, decay_steps: int, end_value=0.0,
                                 exponent: float = 1.0) -> Callable:
  """A linear warmup from init_value to peak_value over warmup_steps, then a cosine decay to end_value, reached at
  decay_steps (counted from the start)."""
  alpha = 0.0 if peak_value == 0 else end_value / peak_value
  return join_schedules([linear_schedule(init_value, peak_value, warmup_steps),
                         cosine_decay_schedule(peak_value, decay_steps - warmup_steps, alpha, exponent)],
                        [warmup_steps])
