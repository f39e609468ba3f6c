"""Audits of rendered output with real parsers: what a hostile name must never produce.

`audit_html` parses text/html with `html.parser` (the tokenizer browsers' rules follow);
`audit_svg` parses an SVG with expat (xml.etree) — a picture that is not well-formed XML
does not display at all. Both return a list of problems (empty when safe) and the visible
text, so a test can also check the name arrived intact (escaped once, not dropped).
"""
from __future__ import annotations

import base64
import re
import unicodedata
import xml.etree.ElementTree as ET
from html.parser import HTMLParser

# Every tag jaxmagic's renderers emit; anything else came from user text.
HTML_TAGS = {"div", "span", "table", "thead", "tbody", "tr", "td", "th", "img", "pre", "code",
             "details", "summary", "b", "i", "mark", "br", "small", "sup", "sub"}
HTML_ATTRS = {"style", "src", "alt", "title", "colspan", "rowspan", "width", "height", "open"}
SVG_TAGS = {"svg", "g", "title", "polygon", "ellipse", "path", "polyline", "text", "a",
            "defs", "image", "rect", "circle", "line"}      # the last three: --memory's chart
DATA_URI = re.compile(r"^data:image/(svg\+xml|png);base64,[A-Za-z0-9+/=]*$")
_SVG_NS = "{http://www.w3.org/2000/svg}"
_XLINK = "{http://www.w3.org/1999/xlink}"


def _scriptish(value: str) -> bool:
    """A URL or style that could run code (browsers ignore whitespace and case here)."""
    squashed = re.sub(r"[\x00-\x20\x7f]+", "", value).lower()
    return any(s in squashed for s in ("javascript:", "vbscript:", "expression(", "data:text"))


class _Audit(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.problems: list[str] = []
        self.text: list[str] = []
        self.imgs: list[str] = []
        self.tags: list[str] = []

    def handle_starttag(self, tag, attrs):
        self.tags.append(tag)
        if tag not in HTML_TAGS:
            self.problems.append(f"unexpected element <{tag}>")
        for name, value in attrs:
            value = value or ""
            if name.startswith("on"):
                self.problems.append(f"event-handler attribute {name}= on <{tag}>")
            elif name not in HTML_ATTRS:
                self.problems.append(f"unexpected attribute {name}= on <{tag}>")
            if name == "src":
                if not DATA_URI.match(value):
                    self.problems.append(f"<{tag} src> is not an image data URI: {value[:80]}")
                self.imgs.append(value)
            elif _scriptish(value) and name != "title" and name != "alt":
                self.problems.append(f"script URL in {name}= on <{tag}>: {value[:80]}")
            if name == "style" and "url(" in value.replace(" ", "").lower():
                self.problems.append(f"url() in style on <{tag}>")
            if name in ("title", "alt"):
                self.text.append(value)

    handle_startendtag = handle_starttag

    def handle_data(self, data):
        self.text.append(data)

    def handle_comment(self, data):
        self.problems.append("comment in output (user text escaped into markup)")

    def handle_decl(self, decl):
        self.problems.append(f"declaration <!{decl[:40]}>")

    def handle_pi(self, data):
        self.problems.append(f"processing instruction <?{data[:40]}>")

    def unknown_decl(self, data):
        self.problems.append(f"unknown declaration {data[:40]}")


def audit_html(html: str) -> tuple[list[str], str, list[bytes]]:
    """(problems, visible text incl. title/alt, decoded SVG pictures) of a text/html output."""
    p = _Audit()
    p.feed(html)
    p.close()
    svgs = [base64.b64decode(src.split(",", 1)[1]) for src in p.imgs
            if src.startswith("data:image/svg+xml")]
    return p.problems, "".join(p.text), svgs


def audit_svg(svg: bytes) -> tuple[list[str], str, ET.Element | None]:
    """(problems, visible text incl. tooltips, root) of one SVG picture."""
    try:
        # expat fetches no external DTD and expands no external entity
        root = ET.fromstring(svg)
    except ET.ParseError as e:
        return [f"SVG is not well-formed XML: {e}"], "", None
    problems, text = [], []
    for el in root.iter():
        tag = el.tag.replace(_SVG_NS, "")
        if tag not in SVG_TAGS:
            problems.append(f"unexpected SVG element <{tag}>")
        for name, value in el.attrib.items():
            local = name.replace(_XLINK, "xlink:")
            if local.lower().startswith("on"):
                problems.append(f"event-handler attribute {local}= on <{tag}>")
            if local in ("href", "xlink:href") or _scriptish(value) and "title" not in local:
                problems.append(f"link or script URL {local}={value[:60]!r} on <{tag}>")
            if local == "xlink:title":
                text.append(value)
        if tag in ("text", "title") and el.text:
            text.append(el.text)
    return problems, " ".join(text), root


_INVISIBLE = {"Cc", "Cf", "Zs", "Zl", "Zp", "Mn", "Me", "Co", "Cs"}


def squeeze(text: str) -> str:
    """Text without whitespace, control, format and combining characters: what survives
    any renderer's whitespace handling, compared to check a name arrived intact."""
    return "".join(ch for ch in text if unicodedata.category(ch) not in _INVISIBLE
                   and not ch.isspace())


def needle(payload: str, size: int = 16) -> str:
    """The part of `payload` any faithful output shows: the start of its first line."""
    for line in re.split(r"[\r\n\x0b\x0c\x1c-\x1e\x85\u2028\u2029]", payload):
        if squeeze(line):
            return squeeze(line)[:size]
    return ""


def node_count(root: ET.Element) -> tuple[int, int]:
    """(nodes, clusters) Graphviz drew."""
    nodes = clusters = 0
    for el in root.iter(_SVG_NS + "g"):
        cls = el.get("class")
        nodes += cls == "node"
        clusters += cls == "cluster"
    return nodes, clusters
