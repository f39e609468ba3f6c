"""How it looks: models to DOT, SVG, HTML and text. No JAX internals, no IPython."""
