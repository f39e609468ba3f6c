"""Findings and the rule catalogue: plain data shared by the static and runtime checks.

Rule ids are stable (`JX` + family digit + number); a rule is never renumbered, only
added. Severity: `error` (raises, or is wrong every time), `warning` (silently wrong or
surprising), `info` (worth knowing).
"""
from __future__ import annotations

from dataclasses import asdict, dataclass, field, replace

SEVERITIES = ("error", "warning", "info")


@dataclass(frozen=True)
class Rule:
    id: str
    family: str
    severity: str
    title: str
    docs: str = ""     # the JAX documentation page that explains it


_SHARP = "https://docs.jax.dev/en/latest/notebooks/Common_Gotchas_in_JAX.html"
_ERRORS = "https://docs.jax.dev/en/latest/errors.html"
_AT = "https://docs.jax.dev/en/latest/_autosummary/jax.numpy.ndarray.at.html"
_JIT = "https://docs.jax.dev/en/latest/jit-compilation.html"
_CHECKIFY = "https://docs.jax.dev/en/latest/debugging/checkify_guide.html"
_NNX_JIT = "https://flax.readthedocs.io/en/latest/guides/transforms.html"

FAMILIES = {
    "mutation": "JAX arrays are immutable",
    "tracing": "static shapes and tracing",
    "purity": "purity under jit",
    "indexing": "out-of-bounds indexing",
    "types": "types and promotion",
    "jit-args": "jit arguments",
    "gradients": "NaN gradients",
}

RULES: dict[str, Rule] = {r.id: r for r in (
    # mutation
    Rule("JX101", "mutation", "error", "item assignment on a JAX array", _AT),
    Rule("JX102", "mutation", "error", "augmented item assignment on a JAX array", _AT),
    Rule("JX103", "mutation", "error", "del x[i] on a JAX array", _AT),
    Rule("JX104", "mutation", "error", "NumPy ufunc.at on a JAX array", _AT),
    Rule("JX105", "mutation", "warning", "result of a functional update discarded", _AT),
    # static shapes and tracing
    Rule("JX201", "tracing", "error", "boolean-mask indexing under a transform",
         _ERRORS + "#jax.errors.NonConcreteBooleanIndexError"),
    Rule("JX202", "tracing", "error", "Python control flow on a traced value",
         _ERRORS + "#jax.errors.TracerBoolConversionError"),
    Rule("JX203", "tracing", "error", "traced value used as a Python int, size or index",
         _ERRORS + "#jax.errors.TracerIntegerConversionError"),
    Rule("JX204", "tracing", "error", "shape computed with jax.numpy", _JIT),
    Rule("JX205", "tracing", "error", "value-dependent output size without size=",
         _ERRORS + "#jax.errors.ConcretizationTypeError"),
    Rule("JX206", "tracing", "error", "slice with traced bounds", _JIT),
    Rule("JX207", "tracing", "error", "traced value converted to a Python or NumPy value",
         _ERRORS + "#jax.errors.ConcretizationTypeError"),
    # purity
    Rule("JX301", "purity", "warning", "print inside a traced function", _SHARP),
    Rule("JX302", "purity", "warning", "traced function writes outer state", _SHARP),
    Rule("JX303", "purity", "warning", "global/nonlocal write inside a traced function",
         _SHARP),
    Rule("JX304", "purity", "warning", "jitted function captured a global that changes",
         _SHARP),
    Rule("JX305", "purity", "error", "leaked tracer",
         _ERRORS + "#jax.errors.UnexpectedTracerError"),
    Rule("JX306", "purity", "warning", "NumPy/Python randomness inside a traced function",
         _SHARP),
    Rule("JX307", "purity", "error", "NNX Variable updated inside jax.jit: the update is lost",
         _NNX_JIT),
    # indexing
    Rule("JX401", "indexing", "warning", "index out of bounds (the read is clamped)",
         _CHECKIFY),
    Rule("JX402", "indexing", "warning", "index out of bounds (the update is dropped)",
         _CHECKIFY),
    # types
    Rule("JX501", "types", "error", "lax call with mixed dtypes", _SHARP),
    Rule("JX502", "types", "warning", "64-bit dtype while jax_enable_x64 is off", _SHARP),
    # jit arguments
    Rule("JX601", "jit-args", "error", "non-array argument to jit not marked static", _JIT),
    Rule("JX602", "jit-args", "error", "unhashable static argument", _JIT),
    Rule("JX603", "jit-args", "error", "jit of a method taking self", _JIT),
    # gradients
    Rule("JX701", "gradients", "warning",
         "jnp.where over sqrt/log/division under grad: NaN gradient at the masked elements",
         "https://docs.jax.dev/en/latest/faq.html#gradients-contain-nan-where-using-where"),
)}


@dataclass(frozen=True)
class Finding:
    """One sharp bit at one place.

    Stable fields: `rule`, `severity`, `line`, `message`, `fix`. `line` is 1-based in the
    cell or file; `col`/`end_col` are 1-based and inclusive (None when unknown). `rewrite`
    is the rewritten line when it can be computed (it applies to `fix_line`, which is
    `line` unless the fix belongs elsewhere, e.g. a decorator).
    """

    rule: str
    severity: str
    line: int
    message: str
    fix: str
    col: int | None = None
    end_col: int | None = None
    source: str = ""                 # the offending line as written
    rewrite: str | None = None       # that line rewritten, when computable
    fix_line: int | None = None      # where `rewrite` goes (None: `line`)
    origin: str = "static"           # "static" | "runtime"
    filename: str | None = None      # file or cell name (None: the checked source)
    where: str = ""                  # "line 3", "cell 2, line 3", "model.py:3"
    error: str = ""                  # runtime: the exception type name
    detail: dict = field(default_factory=dict, compare=False, hash=False)

    @property
    def family(self) -> str:
        return RULES[self.rule].family if self.rule in RULES else ""

    @property
    def title(self) -> str:
        return RULES[self.rule].title if self.rule in RULES else ""

    @property
    def docs(self) -> str:
        return RULES[self.rule].docs if self.rule in RULES else ""

    @property
    def location(self) -> str:
        return self.where or f"line {self.line}"

    @property
    def fix_prose(self) -> str:
        """`fix` without a trailing copy of the rewritten line (shown separately)."""
        r = (self.rewrite or "").strip()
        if r and self.fix.rstrip().endswith(r) and len(self.fix.rstrip()) > len(r):
            return self.fix.rstrip()[: -len(r)].rstrip()
        return self.fix

    def with_(self, **changes) -> "Finding":
        return replace(self, **changes)

    def to_dict(self) -> dict:
        d = asdict(self)
        d.pop("detail", None)
        d["family"] = self.family
        d["title"] = self.title
        return d

    def text(self) -> str:
        """Plain text: what a terminal shows."""
        out = [f"{self.rule} {self.severity} {self.location}: {self.message}"]
        if self.source:
            out.append(f"    {self.source}")
            if self.col and self.end_col and self.end_col >= self.col:
                out.append("    " + " " * (self.col - 1) + "^" * (self.end_col - self.col + 1))
        out.append(f"  fix: {self.fix_prose}")
        if self.rewrite:
            where = f" (line {self.fix_line})" if self.fix_line and self.fix_line != self.line \
                else ""
            out.append(f"    {self.rewrite}{where}")
        return "\n".join(out)


def sort_key(f: Finding):
    return (f.filename or "", f.line, f.col or 0, f.rule)


def char_col(line: str, byte_offset: int) -> int:
    """ast columns are UTF-8 byte offsets; turn one into a character offset."""
    if line.isascii():
        return byte_offset
    return len(line.encode("utf-8")[:byte_offset].decode("utf-8", errors="ignore"))
