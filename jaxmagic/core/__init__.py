"""What is true about the user's JAX code: plain data, no IPython."""
