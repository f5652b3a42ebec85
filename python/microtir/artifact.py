"""microtir.compile and what it returns: the artifact, its runs and their reports."""

from __future__ import annotations

import json
import os
import re
import tempfile
from dataclasses import dataclass
from typing import Any, Dict, List, Mapping, Optional, Sequence, Union

import numpy as np

from . import _html, _microtir
from .errors import BudgetExceeded, Error
from .model import Model, load

__all__ = ["Artifact", "PassRecord", "RunResult", "Report", "LayerCount", "compile"]


@dataclass(frozen=True)
class PassRecord:
    """The module after one lowering pass (``input``: before the first)."""

    name: str
    changed: bool
    text: str

    def __str__(self) -> str:
        return self.text


@dataclass(frozen=True)
class LayerCount:
    """One operator call of ``run()`` on the target (``profile_layers=True``).

    A call in a loop (a patch stage's interior bands, ``band_loops``) is one entry:
    ``instructions`` of all its ``calls`` together.
    """

    index: int
    kernel: str
    nodes: List[str]
    instructions: int
    calls: int = 1


class Report:
    """What a run on a target measured, with the figures ``microtir run`` prints.

    Attributes:
        target, board, compiler: where it ran and what built it.
        flash_bytes: text + rodata + data's load image of the firmware.
        ram_bytes: static RAM (workspace, input/output buffers and state included).
        workspace_bytes, io_buffer_bytes, state_bytes: parts of ``ram_bytes``.
        stack_bytes: high-water of ``run()`` (None if the target does not measure it).
        stack_bound: the static bound (a dict as ``--json`` gives it), or None.
        instructions: instructions per inference (None without an exact counter).
        layers: per operator call, with ``profile_layers=True``; else empty.
        text: the report as the CLI prints it.
        data: everything, as ``microtir run --json`` prints its ``report``.
    """

    def __init__(self, data: Dict[str, Any], text: str) -> None:
        self.data = data
        self.text = text
        self.target: str = data["target"]
        self.board: str = data["board"]
        self.compiler: str = data["compiler"]
        self.flash_bytes: int = data["flash_bytes"]
        self.ram_bytes: int = data["ram_bytes"]
        self.workspace_bytes: int = data["workspace_bytes"]
        self.io_buffer_bytes: int = data["io_buffer_bytes"]
        self.state_bytes: int = data["state_bytes"]
        self.stack_bytes: Optional[int] = data["stack_bytes"]
        self.stack_bound: Optional[dict] = data.get("stack_bound")
        self.instructions: Optional[int] = data["instructions"]
        self.layers: List[LayerCount] = [
            LayerCount(l["index"], l["kernel"], list(l["nodes"]), l["instructions"], l.get("calls", 1))
            for l in data.get("layers", [])
        ]

    def __str__(self) -> str:
        return self.text

    def __repr__(self) -> str:
        instr = "n/a" if self.instructions is None else f"{self.instructions:,}"
        return (
            f"<microtir.Report {self.target}: flash {self.flash_bytes:,} B, RAM {self.ram_bytes:,} B, "
            f"{instr} instructions>"
        )

    def _repr_html_(self) -> str:
        rows = [
            ("flash (bytes)", self.flash_bytes),
            ("RAM, static (bytes)", self.ram_bytes),
            ("workspace (bytes)", self.workspace_bytes),
            ("stack high-water (bytes)", "n/a" if self.stack_bytes is None else self.stack_bytes),
            ("instructions per inference", "n/a" if self.instructions is None else self.instructions),
        ]
        out = _html.table(f"{self.target} ({self.board}, {self.compiler})", ["", ""], rows)
        if self.layers:
            out += _html.table(
                "instructions per operator call",
                ["#", "kernel", "computes", "instructions"],
                [(l.index, l.kernel, ", ".join(l.nodes), l.instructions) for l in self.layers],
            )
        return out

    def plot(self, ax: Any = None, path: Optional[str] = None) -> Any:
        """A bar chart of the instructions of each operator call (matplotlib).

        Needs a run with ``profile_layers=True``. Draws into ``ax`` (a new figure when
        None), saves the figure to ``path`` if given, and returns the axes. matplotlib
        is imported only here.
        """
        if not self.layers:
            raise Error("report.plot() draws per-layer counts: run with profile_layers=True on a target "
                        "with an instruction counter (cortex-m3, cortex-m4, cortex-m7, riscv32)")
        import matplotlib.pyplot as plt  # lazily: the rest of the package does not need it

        if ax is None:
            _, ax = plt.subplots(figsize=(8, max(2.0, 0.3 * len(self.layers) + 1)))
        labels = [f"{l.index} {', '.join(l.nodes) or l.kernel}" for l in self.layers]
        ax.barh(range(len(self.layers)), [l.instructions for l in self.layers])
        ax.set_yticks(range(len(self.layers)))
        ax.set_yticklabels(labels, fontsize=7)
        ax.invert_yaxis()
        ax.set_xlabel("instructions")
        ax.set_title(f"instructions per layer on {self.target}")
        ax.figure.tight_layout()
        if path is not None:
            ax.figure.savefig(path)
        return ax


class RunResult:
    """The outputs of one run of an artifact on a target, checked against the interpreter.

    Attributes:
        outputs: the artifact's outputs by the model's output names, in order.
        report: the target's :class:`Report`.
        comparison: per output, the largest differences from the interpreter.
        memory_plan: where the model's intermediate tensors live (the planner's report).
        devices: the simulated devices' counters, if the model used any.
        text: everything ``microtir run`` prints after the outputs.
        budget: with ``max_flash``/``max_ram``, the check as ``microtir run --json`` gives
            it (``"ok"``, ``"checks"``); else None.
    """

    def __init__(self, raw: Dict[str, Any]) -> None:
        self.outputs: Dict[str, np.ndarray] = {name: value for name, _, value in raw["outputs"]}
        self.identifiers: Dict[str, str] = {name: ident for name, ident, _ in raw["outputs"]}
        self.report = Report(json.loads(raw["report_json"]), raw["report_text"])
        self.comparison: List[dict] = json.loads(raw["compare_json"])
        self.memory_plan: str = raw["memory_plan"]
        self.devices: List[str] = list(raw["devices"])
        self.text: str = raw["compare_text"] + raw["report_text"] + raw["memory_plan"] + raw.get("budget_text", "")
        self.budget: Optional[dict] = json.loads(raw["budget_json"]) if "budget_json" in raw else None

    def __getitem__(self, name: str) -> np.ndarray:
        return self.outputs[name]

    def __repr__(self) -> str:
        outs = ", ".join(f"{n}: {a.dtype}{list(a.shape)}" for n, a in self.outputs.items())
        return f"<microtir.RunResult on {self.report.target}: {outs}>"

    def _repr_html_(self) -> str:
        return self.report._repr_html_()


class Artifact:
    """A compiled model: the files ``microtir compile`` writes, held in memory.

    Write them with :meth:`export`, run them on a target with :meth:`run`.
    """

    def __init__(self, core: Any, model: Model) -> None:
        self._core = core
        self.model = model
        self._files: Optional[Dict[str, bytes]] = None
        self._metadata: Optional[dict] = None

    @property
    def target(self) -> str:
        """The target string, in full, as the compiler parsed it."""
        return self._core.target

    @property
    def files(self) -> Dict[str, bytes]:
        """Every file of the artifact (Model Library Format) by its path in the artifact."""
        if self._files is None:
            self._files = dict(self._core.files())
        return self._files

    @property
    def metadata(self) -> dict:
        """metadata.json (docs/artifact-format.md) as a dict."""
        if self._metadata is None:
            self._metadata = json.loads(self._core.metadata_json())
        return self._metadata

    @property
    def header(self) -> str:
        """The C interface the firmware includes: ``tvmgen_<model>.h``."""
        for path, data in self.files.items():
            if re.fullmatch(r"codegen/host/include/tvmgen_[A-Za-z0-9_]*\.h", path):
                return data.decode("utf-8")
        raise Error("the artifact has no C interface header (the wasm target has none)")

    @property
    def sources(self) -> Dict[str, str]:
        """The generated code (C, LLVM IR or WebAssembly text) by path: ``codegen/*/src/*``."""
        return {
            p: d.decode("utf-8") for p, d in self.files.items() if re.fullmatch(r"codegen/[^/]+/src/[^/]+", p)
        }

    @property
    def memory_plan(self) -> str:
        """Where the model's intermediate tensors live: pools, lower bound, each tensor's offset."""
        return self._core.memory_plan()

    @property
    def passes(self) -> List[PassRecord]:
        """The module before lowering and after each pass (print one to read its TIR)."""
        return [PassRecord(n, c, t) for n, c, t in self._core.passes()]

    def export(self, path: Union[str, "os.PathLike[str]"]) -> str:
        """Write the artifact into a folder, or into one archive if ``path`` ends in ``.tar``.

        Returns the path written.
        """
        path = os.fspath(path)
        self._core.export(path)
        return path

    def run(
        self,
        inputs: Union[Mapping[str, np.ndarray], np.ndarray],
        target: str = "host",
        profile_layers: bool = False,
        keep_build_dir: Optional[str] = None,
        max_flash: Union[int, str, None] = None,
        max_ram: Union[int, str, None] = None,
    ) -> RunResult:
        """Build the artifact for a target, run it once and check it against the interpreter.

        As ``microtir run model.tar --target TARGET`` does: the firmware is compiled with
        the target's compiler and run natively, under QEMU or node.

        Args:
            inputs: the model's inputs by name (or C identifier); a single array when the
                model has one input. dtype and shape must be the input's.
            target: ``host``, ``cortex-m3``, ``cortex-m4``, ``cortex-m7``, ``cortex-m33``,
                ``cortex-m55``, ``riscv32``, ``wasm32`` or ``wasm-binaryen`` (docs/targets.md).
            profile_layers: also count the instructions of each operator call (a target
                with an instruction counter: Cortex-M, riscv32).
            keep_build_dir: build in this folder and keep it (default: a temporary one).
            max_flash, max_ram: budget gates, as ``--max-flash`` / ``--max-ram``: bytes, or
                text such as ``"64K"`` or ``"1M"``. RAM is static RAM plus the stack
                high-water. The check is in ``result.budget``.

        Returns:
            a :class:`RunResult` with the outputs and the target's :class:`Report`.

        Raises:
            microtir.Error: a bad input, a target that cannot run it, a missing tool, or
                outputs that disagree with the interpreter.
            microtir.BudgetExceeded: the run went over ``max_flash`` or ``max_ram``; its
                message is the CLI's budget table, ``.result`` the run.
        """
        if isinstance(inputs, np.ndarray):
            if len(self.model.inputs) != 1:
                names = ", ".join(t.name for t in self.model.inputs)
                raise Error(f"the model has {len(self.model.inputs)} inputs ({names}): pass a dict of arrays by name")
            inputs = {self.model.inputs[0].name: inputs}
        raw = self._core.run(
            dict(inputs), target, bool(profile_layers), keep_build_dir or "", _size(max_flash), _size(max_ram)
        )
        result = RunResult(raw)
        if not raw["all_match"]:
            raise Error(f"the artifact on {raw['target']} disagrees with the interpreter:\n{raw['compare_text']}")
        if result.budget is not None and not raw["budget_ok"]:
            raise BudgetExceeded(raw["budget_text"], result, result.budget)
        return result

    def __repr__(self) -> str:
        return f"<microtir.Artifact {self.model.name!r} for {self.target!r}: {len(self.files)} files>"


def _size(value: Union[int, str, None]) -> str:
    return "" if value is None else str(value)


def _option(key: str, value: Any) -> str:
    if isinstance(value, bool):
        value = int(value)
    elif isinstance(value, (list, tuple)):
        value = ",".join(str(v) for v in value)
    return f"-{key.replace('_', '-')}={value}"


def compile(
    model: Union[Model, str, "os.PathLike[str]", bytes],
    target: str = "c",
    board: Optional[str] = None,
    *,
    devices: Sequence[str] = (),
    schedules: Union[None, str, "os.PathLike[str]", dict] = None,
    **options: Any,
) -> Artifact:
    """Compile a model into a deployable artifact, as ``microtir compile`` does.

    Args:
        model: a :class:`Model` from :func:`microtir.load`, or what ``load`` takes.
        target: ``"c"``, ``"llvm"`` or ``"wasm"``, or a whole target string
            (``"c -mcpu=cortex-m4 -unpacked-api=1"``, docs/target-options.md). ``"c"`` alone
            is what ``microtir compile`` uses without ``--target``.
        board: the target the artifact will run on (``cortex-m4``, ``riscv32``, ...): its
            CPU picks the int8 kernels (``-mcpu``), as ``microtir run model --target BOARD``
            compiles; for ``"llvm"`` also the triple.
        devices: place operators on simulated devices (``"npu0=conv2d,dense"``).
        schedules: a schedule record (``microtir tune``'s records.json, or the record as a
            dict): per-layer int8 schedules on top of the target's (docs/schedule-records.md).
        **options: more target keys, ``unpacked_api=True`` for ``-unpacked-api=1``,
            ``disabled_schedules=["smlad"]`` for ``-disabled-schedules=smlad``.

    Returns:
        the :class:`Artifact`.

    Raises:
        microtir.Error: an option the target parser refuses (naming the rule), or a model
            the compiler cannot build.
    """
    if not isinstance(model, Model):
        loaded = load(model, devices=devices)
        if not isinstance(loaded, Model):
            raise Error("compile takes a model (.tflite, .onnx or a JSON graph); TIR text runs with microtir.run_tir")
        model = loaded
    text = target.strip()
    if " " not in text and board is not None:
        if text not in ("c", "llvm"):
            raise Error(f"board= picks the CPU of a 'c' or 'llvm' target, not of '{text}'")
        text = _microtir.compile_target_for_run(board, text)
    elif text == "c":
        text = _microtir.default_compile_target()
    elif board is not None:
        raise Error("board= applies to target 'c' or 'llvm'; a whole target string names its CPU with -mcpu")
    text = " ".join([text] + [_option(k, v) for k, v in options.items()])
    devices = list(devices or model._core.devices)
    if isinstance(schedules, dict):
        with tempfile.TemporaryDirectory() as work:
            path = os.path.join(work, "records.json")
            with open(path, "w") as f:
                json.dump(schedules, f)
            return Artifact(_microtir.compile_model(model.path, text, devices, path), model)
    return Artifact(_microtir.compile_model(model.path, text, devices, os.fspath(schedules) if schedules else ""), model)
