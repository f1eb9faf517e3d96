"""A JAX program run with only its imports changed: a classifier built with stax and trained with the
example_libraries optimizers, in the style of JAX's own mnist_classifier example, on scikit-learn's digits (bundled,
no download). The body below the imports is plain JAX; `--jax` runs the same body on JAX for comparison.

  python3 examples/jax_port.py            # tracegrad
  python3 examples/jax_port.py --jax      # the same program on JAX (pip install -e ".[bench]")

Prints each epoch's train and test accuracy and the time per epoch; with the same seed both libraries start from the
same parameters, draw the same batches and reach the same accuracies (up to float rounding).
"""
import argparse
import itertools
import sys
import time

import numpy as np
import numpy.random as npr

if "--jax" in sys.argv:
  import jax.numpy as jnp
  from jax import grad, jit, random
  from jax.example_libraries import optimizers, stax
  from jax.example_libraries.stax import Dense, LogSoftmax, Relu
else:
  import tracegrad.numpy as jnp
  from tracegrad import grad, jit, random
  from tracegrad.example_libraries import optimizers, stax
  from tracegrad.example_libraries.stax import Dense, LogSoftmax, Relu


def digits(test_fraction=0.2, seed=0):
  """Flattened 8x8 images in [0, 1] and one-hot labels: (train_images, train_labels, test_images, test_labels)."""
  from sklearn.datasets import load_digits
  data = load_digits()
  images = (data.images.reshape(len(data.images), -1) / 16.0).astype(np.float32)
  labels = np.eye(10, dtype=np.float32)[data.target]
  order = np.random.default_rng(seed).permutation(len(images))
  n_test = int(len(images) * test_fraction)
  test, train = order[:n_test], order[n_test:]
  return images[train], labels[train], images[test], labels[test]


init_random_params, predict = stax.serial(Dense(256), Relu, Dense(256), Relu, Dense(10), LogSoftmax)


def loss(params, batch):
  inputs, targets = batch
  return -jnp.mean(jnp.sum(predict(params, inputs) * targets, axis=1))


def accuracy(params, batch):
  inputs, targets = batch
  return jnp.mean(jnp.argmax(predict(params, inputs), axis=1) == jnp.argmax(targets, axis=1))


def main(argv=None) -> dict:
  p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
  p.add_argument("--jax", action="store_true", help="run the same program on JAX")
  p.add_argument("--epochs", type=int, default=10)
  p.add_argument("--batch-size", type=int, default=128)
  p.add_argument("--step-size", type=float, default=0.05)
  p.add_argument("--momentum-mass", type=float, default=0.9)
  a = p.parse_args(argv)

  train_images, train_labels, test_images, test_labels = digits()
  num_train = train_images.shape[0]
  num_batches = -(-num_train // a.batch_size)

  def data_stream():
    rng = npr.RandomState(0)
    while True:
      perm = rng.permutation(num_train)
      for i in range(num_batches):
        idx = perm[i * a.batch_size:(i + 1) * a.batch_size]
        yield train_images[idx], train_labels[idx]

  batches = data_stream()
  opt_init, opt_update, get_params = optimizers.momentum(a.step_size, mass=a.momentum_mass)

  @jit
  def update(i, opt_state, batch):
    params = get_params(opt_state)
    return opt_update(i, grad(loss)(params, batch), opt_state)

  _, init_params = init_random_params(random.PRNGKey(0), (-1, 64))
  opt_state = opt_init(init_params)
  itercount = itertools.count()
  history = []
  for epoch in range(a.epochs):
    start = time.perf_counter()
    for _ in range(num_batches):
      opt_state = update(next(itercount), opt_state, next(batches))
    params = get_params(opt_state)
    jnp.asarray(params[0][0]).block_until_ready()
    epoch_time = time.perf_counter() - start
    train_acc = float(accuracy(params, (train_images, train_labels)))
    test_acc = float(accuracy(params, (test_images, test_labels)))
    history.append({"epoch": epoch, "seconds": epoch_time, "train_accuracy": train_acc, "test_accuracy": test_acc,
                    "loss": float(loss(params, (train_images, train_labels)))})
    print(f"epoch {epoch} in {epoch_time:0.2f} s: train accuracy {train_acc:.4f}, test accuracy {test_acc:.4f}")
  return {"history": history, "params": params}


if __name__ == "__main__":
  main()
