"""The Generator and Discriminator of Equinox's DCGAN notebook, their layers shrunk
(ConvTranspose2d, BatchNorm, relu, tanh; Conv2d, PReLU, BatchNorm), for cells that
build its steps: a cell's source."""

MODELS = """
import equinox as eqx, jax, jax.numpy as jnp, jax.random as jr, optax
batch_size, latent_size = 4, 8
class Generator(eqx.Module):
    layers: list
    def __init__(self, key):
        k0, k1 = jr.split(key)
        self.layers = [
            eqx.nn.ConvTranspose2d(latent_size, 16, 4, stride=1, padding=0, use_bias=False,
                                   key=k0),
            eqx.nn.BatchNorm(16, axis_name="batch"), jax.nn.relu,
            eqx.nn.ConvTranspose2d(16, 1, 4, stride=2, padding=1, use_bias=False, key=k1),
            jax.nn.tanh]
    def __call__(self, x, state):
        for layer in self.layers:
            if isinstance(layer, eqx.nn.BatchNorm):
                x, state = layer(x, state)
            else:
                x = layer(x)
        return x, state
class Discriminator(eqx.Module):
    layers: list
    def __init__(self, key):
        k0, k1, k2 = jr.split(key, 3)
        self.layers = [eqx.nn.Conv2d(1, 8, 4, stride=2, padding=1, use_bias=False, key=k0),
                       eqx.nn.PReLU(0.2),
                       eqx.nn.Conv2d(8, 16, 4, stride=2, padding=1, use_bias=False, key=k1),
                       eqx.nn.BatchNorm(16, axis_name="batch"), eqx.nn.PReLU(0.2),
                       eqx.nn.Conv2d(16, 1, 2, stride=1, padding=0, use_bias=False, key=k2)]
    def __call__(self, x, state):
        for layer in self.layers:
            if isinstance(layer, eqx.nn.BatchNorm):
                x, state = layer(x, state=state)
            else:
                x = layer(x)
        return x, state
"""
