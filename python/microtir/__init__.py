"""microtir from Python: load a model, compile it for a microcontroller, run it, read the figures.

The same C++ core as the ``microtir`` command line (a pybind11 extension), so every
figure and message is the CLI's::

    import numpy as np
    import microtir

    model = microtir.load("model.tflite")            # inputs, outputs, layers, .graph
    artifact = microtir.compile(model, board="cortex-m4")
    artifact.export("model.tar")                      # Model Library Format
    x = np.zeros(model.inputs[0].shape, model.inputs[0].dtype)
    run = artifact.run({model.inputs[0].name: x}, target="cortex-m4", profile_layers=True)
    run.outputs, run.report.instructions, run.report.flash_bytes
    run.report.plot(path="layers.png")

TIR programs run with the reference interpreter: :func:`parse`, :func:`run_tir`.
Failures raise :class:`Error` with the CLI's message and ``.file``/``.line``/``.column``.
See docs/python.md.
"""

from . import _microtir
from .artifact import Artifact, LayerCount, PassRecord, Report, RunResult, compile
from .errors import BudgetExceeded, Error
from .model import Layer, Model, Quantization, Tensor, load
from .tir import Program, TirResult, parse, run_tir

__version__: str = _microtir.__version__


def passes() -> "list[str]":
    """The names of the registered lowering passes, in pipeline order (``microtir passes --list``)."""
    return _microtir.pass_list().split()


__all__ = [
    "Artifact",
    "BudgetExceeded",
    "Error",
    "Layer",
    "LayerCount",
    "Model",
    "PassRecord",
    "Program",
    "Quantization",
    "Report",
    "RunResult",
    "Tensor",
    "TirResult",
    "compile",
    "load",
    "parse",
    "passes",
    "run_tir",
]
