"""A JAX process with XLA's default preallocation (75 % of the GPU) that launches one small
fused multiply (the capture target): almost all of what the process holds is untouched."""
import jax
import jax.numpy as jnp

x = jnp.arange(1 << 22, dtype=jnp.float32)
f = jax.jit(lambda v: v * 3.0 + 1.0)
print(f"checksum {float(f(x).sum()):.6e}")
