"""Optimizers as optax: a GradientTransformation is a pair of pure functions, init(params) -> state and
update(grads, state, params) -> (updates, state), chained together; apply_updates adds the updates to the params.
A learning rate may be a number or a schedule (a function of the step count).

>>> opt = tracegrad.optim.adam(1e-3)
>>> params = {"w": tnp.ones(2)}
>>> state = opt.init(params)
>>> updates, state = opt.update({"w": tnp.ones(2)}, state, params)
>>> tracegrad.optim.apply_updates(params, updates)["w"]
Array([0.999, 0.999], dtype=float32)
"""
from .schedules import (constant_schedule, cosine_decay_schedule, exponential_decay, join_schedules,  # noqa: F401
                        linear_schedule, warmup_cosine_decay_schedule)
from .transforms import (GradientTransformation, adagrad, adam, adamw, add_decayed_weights, apply_updates,  # noqa: F401
                         chain, clip_by_global_norm, global_norm, identity, lamb, lars, rmsprop, scale, scale_by_adam,
                         scale_by_learning_rate, scale_by_rms, scale_by_rss, scale_by_schedule, scale_by_trust_ratio,
                         sgd, trace)
