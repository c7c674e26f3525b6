"""A small, safe XML reader for robot descriptions: elements with their line numbers.

Built on expat directly (no DOM library) so every element keeps the line it starts on, and
so nothing outside the text is ever read: a document that declares an entity (the way to an
entity expansion bomb) or refers to an external DTD or entity is refused outright, and
parameter entities are never parsed.
"""

from __future__ import annotations

from xml.parsers import expat

from .errors import RobotModelError

__all__ = ["Element", "parse_xml"]


class Element:
    """One XML element: its tag, attributes, the line it starts on and its child elements
    (text is dropped: a URDF's meaning is in its attributes)."""

    __slots__ = ("tag", "attributes", "line", "children")

    def __init__(self, tag: str, attributes: dict[str, str], line: int) -> None:
        self.tag = tag
        self.attributes = attributes
        self.line = line
        self.children: list[Element] = []

    def first(self, tag: str) -> Element | None:
        """The first child element named ``tag`` (urdfdom reads only the first), or None."""
        for child in self.children:
            if child.tag == tag:
                return child
        return None

    def __repr__(self) -> str:
        return f"<Element {self.tag} line {self.line}>"


class _Refused(Exception):
    """Raised inside expat's callbacks; turned into a RobotModelError with the line."""

    def __init__(self, line: int, problem: str) -> None:
        super().__init__(problem)
        self.line = line
        self.problem = problem


class _Builder:
    """expat's callbacks: build the element tree, refuse entities and external DTDs."""

    def __init__(self, parser: expat.XMLParserType) -> None:
        self.parser = parser
        self.stack: list[Element] = []
        self.root: Element | None = None

    def start(self, tag: str, attributes: dict[str, str]) -> None:
        element = Element(tag, attributes, self.parser.CurrentLineNumber)
        if self.stack:
            self.stack[-1].children.append(element)
        else:
            self.root = element
        self.stack.append(element)

    def end(self, tag: str) -> None:
        self.stack.pop()

    def doctype(self, name: str, system_id: str | None, public_id: str | None,
                has_internal_subset: bool) -> None:
        if system_id or public_id:
            raise _Refused(self.parser.CurrentLineNumber,
                           "refers to an external DTD; robot descriptions are read without any")

    def entity(self, name: str, *args: object) -> None:
        raise _Refused(self.parser.CurrentLineNumber,
                       f"declares the entity '{name}'; entities are refused (no expansion, "
                       "no external files)")

    def external(self, *args: object) -> int:
        raise _Refused(self.parser.CurrentLineNumber, "refers to an external entity; refused")


def parse_xml(text: str | bytes, source: str) -> Element:
    """The root element of ``text`` (``bytes`` keep their own encoding declaration).

    Raises ``RobotModelError`` naming ``source`` and the line for anything that is not
    well-formed XML, and for any entity declaration or external DTD or entity."""
    parser = expat.ParserCreate("utf-8" if isinstance(text, str) else None)
    builder = _Builder(parser)
    parser.SetParamEntityParsing(expat.XML_PARAM_ENTITY_PARSING_NEVER)
    parser.StartElementHandler = builder.start
    parser.EndElementHandler = builder.end
    parser.StartDoctypeDeclHandler = builder.doctype
    parser.EntityDeclHandler = builder.entity
    parser.UnparsedEntityDeclHandler = builder.entity
    parser.ExternalEntityRefHandler = builder.external
    data = text.encode("utf-8") if isinstance(text, str) else text
    try:
        parser.Parse(data, True)
    except _Refused as exc:
        raise RobotModelError(source, exc.line, "document", exc.problem) from None
    except expat.ExpatError as exc:
        raise RobotModelError(
            source, exc.lineno, "document", f"not XML: {expat.ErrorString(exc.code)}"
        ) from None
    if builder.root is None:  # pragma: no cover - expat refuses an empty document itself
        raise RobotModelError(source, None, "document", "not XML: no element")
    return builder.root
