"""jaxmagic: see what JAX does to the code in a notebook cell.

    %load_ext jaxmagic

Each magic is a thin front to a public function that returns a view object
(`_repr_mimebundle_`, `.text()`), usable without IPython.
"""
from .api import trace
from .api import compare_jit

__all__ = ["trace", "compare_jit", "load_ipython_extension", "unload_ipython_extension"]
__version__ = "0.1.0"


def load_ipython_extension(ipython):
    """`%load_ext jaxmagic`: register every magic (once, even if loaded twice)."""
    from .magics import JaxMagic

    if "JaxMagic" not in {type(m).__name__ for m in ipython.magics_manager.registry.values()}:
        ipython.register_magics(JaxMagic(shell=ipython))


def unload_ipython_extension(ipython):
    """`%unload_ext jaxmagic`: remove the magics and every hook, leaving nothing behind."""
    from .magics import JaxMagic

    manager = ipython.magics_manager
    magics = manager.registry.pop("JaxMagic", None)
    if magics is None:
        return
    for kind, table in JaxMagic.magics.items():
        for name in table:
            manager.magics[kind].pop(name, None)
