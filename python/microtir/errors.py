"""microtir.Error: every failure of the compiler, as the CLI reports it."""

from __future__ import annotations

from typing import Any, Optional

__all__ = ["BudgetExceeded", "Error"]


class Error(Exception):
    """A microtir user error (bad input, bad option) or internal error.

    The message and location are the CLI's: ``str(error)`` is what ``microtir`` prints
    after ``microtir: `` (``file:line:col: error: message``, the source line and a caret
    where the input has a location).

    Attributes:
        message: the first diagnostic's message, without location.
        file: the file the error points into, or None.
        line: its 1-based line, or None.
        column: its 1-based column, or None.
        rendered: every diagnostic, rendered as the CLI prints them.
        internal: True for a broken invariant of microtir itself (the CLI's exit code 2).
    """

    def __init__(
        self,
        message: str,
        file: Optional[str] = None,
        line: Optional[int] = None,
        column: Optional[int] = None,
        rendered: Optional[str] = None,
        internal: bool = False,
    ) -> None:
        self.message = message
        self.file = file
        self.line = line
        self.column = column
        self.rendered = rendered if rendered is not None else f"error: {message}\n"
        self.internal = internal
        super().__init__(self.rendered.rstrip("\n"))

    @property
    def location(self) -> Optional[str]:
        """``file:line:col``, or None when the error has no location."""
        if self.line is None:
            return None
        return f"{self.file}:{self.line}:{self.column}"


class BudgetExceeded(Error):
    """A run that went over ``max_flash`` or ``max_ram`` (the CLI's budget gate, exit code 1).

    Attributes:
        result: the :class:`~microtir.RunResult` of the run, outputs and report included.
        budget: the check as ``microtir run --json`` gives it (``"checks"``: per limit
            its use, ``"over_by"`` and the largest contributors).
    """

    def __init__(self, text: str, result: "Any", budget: "dict") -> None:
        super().__init__(text.strip())
        self.result = result
        self.budget = budget
