"""Hostile strings for the escaping fuzz (tests/test_hardening_escaping.py).

Each reaches an output through a name in user code: a scope, a function name, a pytree
key, a mesh axis, a message. Grouped by what they try to break.
"""
from __future__ import annotations

MARKUP = [
    "<script>alert(1)</script>",
    "<img src=x onerror=alert(1)>",
    "<svg onload=alert(1)>",
    '"><script>alert(1)</script>',
    "'><img src=x onerror=alert(1)>",
    "</title><script>alert(1)</script>",
    "</text></g></svg><script>alert(1)</script>",
    '<iframe src="javascript:alert(1)"></iframe>',
    '<a href="javascript:alert(1)">click</a>',
    "<body onload=alert(1)>",
    '<div style="background:url(javascript:alert(1))">',
    '" onmouseover="alert(1)',
    "' onfocus='alert(1)' autofocus='",
    "<math><mtext><table><mglyph><style><img src=x onerror=alert(1)>",
    "<!--<script>alert(1)//-->",
    "<![CDATA[<script>alert(1)</script>]]>",
    '<foreignObject><body onload="alert(1)"/></foreignObject>',
    "<style>*{display:none}</style>",
    '<base href="javascript:alert(1)//">',
    '<meta http-equiv="refresh" content="0;url=javascript:alert(1)">',
    '<object data="javascript:alert(1)"></object>',
    "<details open ontoggle=alert(1)>",
    '<a xlink:href="javascript:alert(1)"><text>x</text></a>',
    "<scr<script>ipt>alert(1)</scr</script>ipt>",
    "\uff1cscript\uff1ealert(1)\uff1c/script\uff1e",
    "%3Cscript%3Ealert(1)%3C%2Fscript%3E",
]

URLS = [
    "javascript:alert(1)",
    "JaVaScRiPt:alert(document.domain)",
    "java\tscript:alert(1)",
    "data:text/html;base64,PHNjcmlwdD5hbGVydCgxKTwvc2NyaXB0Pg==",
    "vbscript:msgbox(1)",
]

ENTITIES = [
    "&lt;script&gt;alert(1)&lt;/script&gt;",
    "&amp;&quot;&#39;&#x3c;&#60;",
    "&bogus; &#0; &#xD800; &#1234567890;",
    "&nbsp;&copy;&",
    '<?xml version="1.0"?><!DOCTYPE x [<!ENTITY xxe SYSTEM "file:///etc/passwd">]>&xxe;',
    "]]>",
]

DOT = [
    '"',
    '\\"',
    "\\",
    "ends with a backslash\\",
    'a"; n999 [label="pwn"]; x="',
    "}",
    "};digraph evil{a->b",
    "{x|y|<p> z}",
    "\\N \\G \\L \\l \\r \\E \\T \\H",
    "<<b>html</b>>",
    "label=pwn]; n0 [",
    "-- -> // /* */ # ;",
    "%s %n {0} ${x} $(x) {{ }} %(x)s",
    "O'Reilly's \"quoted\" `tick`",
]

LONG_AND_UNICODE = [
    "x" * 5000,
    "é" * 300,
    "名前_変数_テンソル",
    "مرحبا بالعالم",
    "evil\u202etxt.exe",
    "a\u200bb\u200dc\ufeffd",
    "🔥💀👨\u200d👩\u200d👧",
    "Z\u0334\u0321\u032a\u032b\u0356\u0325\u0314\u036b\u0303A\u0336\u0322\u033b",
    "\U0001d54f\U0001d560",
    "w" * 80 + "<b>" + "y" * 80,
]

CONTROL = [
    "\x00nul",
    "a\x01b\x07c\x08d\x1b[31mred\x1b[0m",
    "line1\nline2\r\nline3",
    "\t tab \v vt \f ff",
    "\x7f\x85\u2028\u2029end",
]

OTHER = [
    "",
    " ",
    "None",
    "../../etc/passwd",
    "\\u003cscript\\u003e",
]

PAYLOADS: list[str] = MARKUP + URLS + ENTITIES + DOT + LONG_AND_UNICODE + CONTROL + OTHER


def ids() -> list[str]:
    """Short pytest ids: group and index."""
    out = []
    for group, items in (("markup", MARKUP), ("url", URLS), ("entity", ENTITIES),
                         ("dot", DOT), ("long", LONG_AND_UNICODE), ("ctrl", CONTROL),
                         ("other", OTHER)):
        out += [f"{group}{i}" for i in range(len(items))]
    return out
