"""TIR programs: microtir.parse and microtir.run_tir, with the reference interpreter."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Dict, List, Mapping, Optional, Union

import numpy as np

from . import _microtir

__all__ = ["Program", "TirResult", "parse", "run_tir"]


@dataclass
class TirResult:
    """What the interpreter computed: every buffer not given as an input, and the return value."""

    func: str
    outputs: Dict[str, np.ndarray]
    returned: Optional[int]

    def __getitem__(self, name: str) -> np.ndarray:
        return self.outputs[name]


class Program:
    """A parsed and checked TIR module (the TVMScript-style text format, docs/text-format.md)."""

    def __init__(self, core: Any) -> None:
        self._core = core

    @property
    def text(self) -> str:
        """The module in normal form, as ``microtir parse`` prints it."""
        return self._core.text()

    @property
    def functions(self) -> List[str]:
        """The names of its PrimFuncs, in definition order."""
        return list(self._core.functions())

    def run(
        self,
        func: Optional[str] = None,
        inputs: Optional[Mapping[str, np.ndarray]] = None,
        inouts: Optional[Mapping[str, np.ndarray]] = None,
        scalars: Optional[Mapping[str, Union[int, float]]] = None,
    ) -> TirResult:
        """Run one function of this module with the reference interpreter (see :func:`run_tir`)."""
        func_name, outputs, returned = _microtir.run_tir(
            self._core,
            func or "",
            dict(inputs or {}),
            dict(inouts or {}),
            {k: repr(v) if isinstance(v, float) else str(int(v)) for k, v in (scalars or {}).items()},
        )
        return TirResult(func_name, {name: value for name, value in outputs}, returned)

    def __str__(self) -> str:
        return self.text

    def __repr__(self) -> str:
        return f"<microtir.Program: {', '.join(self.functions)}>"


def parse(text: str, filename: str = "<input>", verify: bool = True) -> Program:
    """Parse TIR text and check it is well formed, as ``microtir parse`` does.

    Args:
        text: a module (``@I.ir_module class ...``) or a single ``@T.prim_func``.
        filename: the name errors point into.
        verify: run the well-formedness check (``--no-verify`` skips it).

    Raises:
        microtir.Error: with ``.file``, ``.line`` and ``.column`` of the first problem.
    """
    return Program(_microtir.parse(text, filename, verify))


def run_tir(
    program: Union[Program, str],
    func: Optional[str] = None,
    inputs: Optional[Mapping[str, np.ndarray]] = None,
    inouts: Optional[Mapping[str, np.ndarray]] = None,
    scalars: Optional[Mapping[str, Union[int, float]]] = None,
) -> TirResult:
    """Run a TIR function with the reference interpreter, as ``microtir run FILE.tir`` does.

    Args:
        program: a :class:`Program` or TIR text.
        func: the function to run (None: the only one).
        inputs: buffers by name, read by the function.
        inouts: buffers the function updates in place (returned among the outputs).
        scalars: scalar parameters by name.

    Returns:
        a :class:`TirResult`: every other buffer (zeros before the run) and the return value.

    Raises:
        microtir.Error: a missing scalar, an unknown buffer, an out-of-bounds access, ...
    """
    if not isinstance(program, Program):
        program = parse(program)
    return program.run(func, inputs, inouts, scalars)
