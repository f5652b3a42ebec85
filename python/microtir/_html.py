"""Small HTML tables for Jupyter (``_repr_html_``), with every cell escaped."""

from __future__ import annotations

import html
from typing import Iterable, Sequence


def table(caption: str, header: Sequence[str], rows: Iterable[Sequence[object]]) -> str:
    """An HTML table: numbers right-aligned with thousands separators."""

    def cell(value: object, tag: str) -> str:
        if isinstance(value, int) and not isinstance(value, bool):
            return f'<{tag} style="text-align:right">{value:,}</{tag}>'
        return f"<{tag}>{html.escape(str(value))}</{tag}>"

    head = "".join(cell(h, "th") for h in header)
    body = "".join("<tr>" + "".join(cell(v, "td") for v in row) + "</tr>" for row in rows)
    return (
        f"<table><caption>{html.escape(caption)}</caption>"
        f"<thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"
    )
