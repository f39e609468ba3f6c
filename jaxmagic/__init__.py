"""jaxmagic: see what JAX does to the code in a notebook cell.

    %load_ext jaxmagic

Each magic is a thin front to a public function that returns a view object
(`_repr_mimebundle_`, `.text()`), usable without IPython.
"""
_API = ("trace", "profile", "memory", "values", "compare_jit", "check_source", "explain",
        "devices_info", "sharding_view", "sharding_plan")


def __getattr__(name):
    """The API on first use: `python -m jaxmagic check` then runs without importing JAX."""
    if name in _API:
        from . import api
        return getattr(api, name)
    raise AttributeError(f"module 'jaxmagic' has no attribute {name!r}")


__all__ = ["trace", "profile", "memory", "values", "compare_jit", "check_source", "explain",
           "devices_info", "sharding_view", "sharding_plan", "load_ipython_extension",
           "unload_ipython_extension"]
__version__ = "0.1.0"


def load_ipython_extension(ipython):
    """`%load_ext jaxmagic`: register every magic (once, even if loaded twice)."""
    from .magics import JaxMagic

    if "JaxMagic" not in {type(m).__name__ for m in ipython.magics_manager.registry.values()}:
        ipython.register_magics(JaxMagic(shell=ipython))
    magics = ipython.magics_manager.registry.get("JaxMagic")
    if hasattr(magics, "_install_hooks"):
        magics._install_hooks()        # %jaxcheck: checks before cells, JAX error cards


def unload_ipython_extension(ipython):
    """`%unload_ext jaxmagic`: remove the magics and every hook, leaving nothing behind."""
    from .magics import JaxMagic

    manager = ipython.magics_manager
    magics = manager.registry.pop("JaxMagic", None)
    if magics is None:
        return
    if hasattr(magics, "_remove_hooks"):
        magics._remove_hooks()
    for kind, table in JaxMagic.magics.items():
        for name in table:
            manager.magics[kind].pop(name, None)
