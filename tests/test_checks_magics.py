"""%jaxcheck in a real InteractiveShell: checks before cells, cards for JAX errors,
%%jaxcheck, on/off, and hooks that install once and uninstall cleanly."""
from __future__ import annotations

import re

import pytest
from conftest import run

ANSI = re.compile(r"\x1b\[[0-9;]*m")


def cards(cap):
    return [o.data for o in cap.outputs if "text/html" in o.data]


@pytest.fixture
def fresh(ip):
    ip.run_line_magic("jaxcheck", "on")
    ip.run_cell("import jax, jax.numpy as jnp, numpy as np")
    yield ip
    ip.run_line_magic("jaxcheck", "on")


def test_static_findings_shown_and_cell_still_runs(fresh):
    r, cap = run(fresh, "arr = jnp.zeros(3)\narr.at[0].set(1.0)\nafter_ = 1")
    assert r.success and fresh.user_ns["after_"] == 1
    (card,) = cards(cap)
    assert "JX105" in card["text/html"] and "line 2" in card["text/html"]
    assert "arr = arr.at[0].set(1.0)" in card["text/plain"]


def test_clean_cells_show_nothing(fresh):
    r, cap = run(fresh, "y_ = jnp.arange(3)\ny_ = y_.at[0].set(5)\nprint(int(y_[0]))")
    assert r.success and cards(cap) == [] and cap.stdout.strip() == "5"


def test_runtime_card_at_failing_line_and_traceback_kept(fresh):
    run(fresh, "@jax.jit\ndef flip_(x, neg):\n    y = x + 1\n    return -y if neg else y")
    r, cap = run(fresh, "z = 1.0\nflip_(z, True)")
    assert type(r.error_in_exec).__name__ == "TracerBoolConversionError"
    (card,) = cards(cap)
    html, text = card["text/html"], card["text/plain"]
    assert "JX202" in html and "line 4" in html and ">-y if neg else y</mark>" in html
    assert "jnp.where(neg, -y, y)" in text and "<mark" in html
    out = ANSI.sub("", cap.stdout + cap.stderr)
    assert "TracerBoolConversionError" in out and "Traceback" in out


def test_static_and_runtime_not_shown_twice(fresh):
    r, cap = run(fresh, "a_ = jnp.ones(2)\na_[0] = 5")
    assert isinstance(r.error_in_exec, TypeError)
    assert len(cards(cap)) == 1            # the static card; the runtime one would repeat it
    assert "TypeError" in ANSI.sub("", cap.stdout)


def test_non_jax_errors_untouched(fresh, shell):
    r, cap = run(fresh, "1/0")
    assert cards(cap) == [] and isinstance(r.error_in_exec, ZeroDivisionError)
    with_ext = ANSI.sub("", cap.stdout)
    fresh.run_line_magic("unload_ext", "jaxmagic")
    try:
        r2, cap2 = run(fresh, "1/0")
    finally:
        fresh.run_line_magic("load_ext", "jaxmagic")
    assert ANSI.sub("", cap2.stdout) == with_ext


def test_syntax_errors_untouched(fresh):
    r, cap = run(fresh, "def (:\n  pass")
    assert isinstance(r.error_in_exec or r.error_before_exec, SyntaxError)
    assert cards(cap) == [] and "SyntaxError" in ANSI.sub("", cap.stdout + cap.stderr)


def test_cell_magic_checks_without_running(fresh):
    r, cap = run(fresh, "%%jaxcheck\nnot_run_ = 1\nq_ = jnp.ones(2)\nq_[1] += 1")
    assert r.success and "not_run_" not in fresh.user_ns
    (card,) = cards(cap)
    assert "JX102" in card["text/html"] and "q_ = q_.at[1].add(1)" in card["text/plain"]
    r, cap = run(fresh, "%%jaxcheck\nok_ = jnp.ones(2).at[1].add(1)")
    assert "no findings" in cards(cap)[0]["text/plain"]
    found = fresh.run_cell_magic("jaxcheck", "-o", "w_ = jnp.ones(2)\nw_[0] = 0")
    assert [f.rule for f in found] == ["JX101"]


def test_on_off_status(fresh):
    r, cap = run(fresh, "%jaxcheck off")
    assert "off" in cap.stdout
    r, cap = run(fresh, "b_ = jnp.ones(2)\nb_.at[0].set(3)")
    assert cards(cap) == []
    r, cap = run(fresh, "b_[0] = 1")
    assert cards(cap) == [] and isinstance(r.error_in_exec, TypeError)
    r, cap = run(fresh, "%jaxcheck status")
    assert cap.stdout.startswith("jaxcheck is off")
    r, cap = run(fresh, "%config JaxMagic.check = True")
    r, cap = run(fresh, "%jaxcheck")
    assert cap.stdout.startswith("jaxcheck is on")
    with pytest.raises(Exception):
        fresh.run_line_magic("jaxcheck", "sometimes")


def test_cross_cell_knowledge(fresh):
    run(fresh, "c_ = jnp.arange(3)")
    r, cap = run(fresh, "v_ = c_[3]")
    (card,) = cards(cap)
    assert "JX401" in card["text/plain"]


def test_card_from_a_magic_is_not_duplicated(fresh):
    r, cap = run(fresh, "%%jaxpr\ndef g_(v):\n    if v.sum() > 0:\n        return v\n"
                 "    return -v\ng_(jnp.ones(3))")
    assert type(r.error_in_exec).__name__ == "TracerBoolConversionError"
    shown = [c for c in cards(cap) if "JX202" in c["text/plain"]]
    assert len(shown) == 1


def _ours(shell):
    return [cb for ev in ("pre_run_cell", "post_run_cell")
            for cb in shell.events.callbacks[ev]
            if "CellHooks" in getattr(cb, "__qualname__", "")]


def test_load_twice_reload_and_unload_restore(ip):
    before_tb = ip.CustomTB
    assert len(_ours(ip)) == 2 and ip.custom_exceptions == (Exception,)
    ip.run_line_magic("load_ext", "jaxmagic")
    ip.run_line_magic("reload_ext", "jaxmagic")
    assert len(_ours(ip)) == 2
    ip.run_line_magic("unload_ext", "jaxmagic")
    try:
        assert _ours(ip) == [] and ip.custom_exceptions == ()
        assert ip.CustomTB is not before_tb
        assert "dummy_handler" in ip.CustomTB.__func__.__qualname__
    finally:
        ip.run_line_magic("load_ext", "jaxmagic")
    assert len(_ours(ip)) == 2


def test_previous_custom_handler_is_chained_and_restored(ip):
    ip.run_line_magic("unload_ext", "jaxmagic")
    seen = []

    def handler(shell, etype, value, tb, tb_offset=None):
        seen.append(etype)
        return ["handled\n"]

    ip.set_custom_exc((KeyError,), handler)
    theirs = ip.CustomTB
    try:
        ip.run_line_magic("load_ext", "jaxmagic")
        run(ip, "{}['missing']")
        assert seen == [KeyError]
        ip.run_line_magic("unload_ext", "jaxmagic")
        assert ip.CustomTB is theirs and ip.custom_exceptions == (KeyError,)
    finally:
        ip.set_custom_exc((), None)
        ip.run_line_magic("load_ext", "jaxmagic")


def test_checkify_option_on_jaxpr_and_jit_compare(fresh):
    run(fresh, "def pick_(x, i):\n    return x[i] * 2\nxs_ = jnp.arange(3.0)")
    for magic in ("jaxpr", "jit_compare"):
        r, cap = run(fresh, f"%{magic} --checkify pick_(xs_, 7)")
        assert type(r.error_in_exec).__name__ == "JaxRuntimeError", magic
        (card,) = cards(cap)
        assert "JX401" in card["text/plain"] and "return x[i] * 2" in card["text/plain"]
        assert "index 7" in card["text/plain"]
    r, cap = run(fresh, "%jaxpr --checkify pick_(xs_, 1)")
    assert r.success and cards(cap)                     # the graph, no error
    r, cap = run(fresh, "%jit_compare --checkify --static-argnums 1 -n 2 -r 2 pick_(xs_, 2)")
    assert r.success


@pytest.mark.parametrize("cell", ["1/0", "exec('y = (')", "def (:\n  pass",
                                  "import nonexistent_module_xyz", "  x = 1"])
def test_errors_shown_exactly_as_without_the_extension(fresh, cell):
    r, cap = run(fresh, cell)
    with_ext = ANSI.sub("", cap.stdout + cap.stderr)
    fresh.run_line_magic("unload_ext", "jaxmagic")
    try:
        r2, cap2 = run(fresh, cell)
    finally:
        fresh.run_line_magic("load_ext", "jaxmagic")
    assert ANSI.sub("", cap2.stdout + cap2.stderr) == with_ext
    assert type(r.error_in_exec or r.error_before_exec) is \
        type(r2.error_in_exec or r2.error_before_exec)
