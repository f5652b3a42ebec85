"""microtir.load: a model (.tflite, .onnx, JSON graph) or TIR text, as the CLI reads it."""

from __future__ import annotations

import json
import os
import tempfile
from dataclasses import dataclass
from typing import Any, List, Optional, Sequence, Tuple, Union

from . import _html, _microtir
from .errors import Error

__all__ = ["Model", "Tensor", "Quantization", "Layer", "load"]

PathOrBytes = Union[str, "os.PathLike[str]", bytes]


@dataclass(frozen=True)
class Quantization:
    """The affine quantization of an integer tensor: ``real = scale * (q - zero_point)``."""

    scale: float
    zero_point: int


@dataclass(frozen=True)
class Tensor:
    """A model input or output.

    Attributes:
        name: the model's own name for it (any text in a TFLite or ONNX model).
        identifier: its C identifier in the generated header (``struct tvmgen_<model>_inputs``).
        dtype: numpy's name for its element type (``"int8"``, ``"float32"``, ...).
        shape: its shape.
        quantization: scale and zero point of a quantized tensor, else None.
    """

    name: str
    identifier: str
    dtype: str
    shape: Tuple[int, ...]
    quantization: Optional[Quantization]


@dataclass(frozen=True)
class Layer:
    """One operator of the graph as the compiler builds it (batch norm folded, int8 prepared).

    Attributes:
        name: the node's name.
        op: microtir's operator (``qconv2d``, ``dense``, ...; docs/operators.md).
        kernel: the function of the artifact that computes it ("" if none: a view).
        dtype, shape: its output's element type and shape.
        macs: nominal multiply-accumulates (TFLite Micro's count; 0 for other operators).
        weight_bytes: bytes of its constant inputs.
        activation_bytes: bytes of its output.
        state_bytes: bytes of persistent state it reads and writes (LSTM, SVDF).
        device: the device instance it runs on ("" for the CPU).
    """

    name: str
    op: str
    kernel: str
    dtype: str
    shape: Tuple[int, ...]
    macs: int
    weight_bytes: int
    activation_bytes: int
    state_bytes: int
    device: str


def _tensor(t: dict) -> Tensor:
    q = t["quantization"]
    return Tensor(
        t["name"],
        t["identifier"],
        t["dtype"],
        tuple(t["shape"]),
        Quantization(q["scale"], q["zero_point"]) if q else None,
    )


def _layer(n: dict) -> Layer:
    return Layer(
        n["name"],
        n["op"],
        n["kernel"],
        n["dtype"],
        tuple(n["shape"]),
        n["macs"],
        n["weight_bytes"],
        n["activation_bytes"],
        n["state_bytes"],
        n["device"],
    )


class Model:
    """A model loaded by :func:`load`: its inputs, outputs, layers and JSON graph.

    Compile it with :func:`microtir.compile`.
    """

    def __init__(self, core: Any, keep_alive: Any = None) -> None:
        self._core = core
        self._keep_alive = keep_alive  # the temporary folder of a model given as bytes
        io = json.loads(core.io_json())
        self._view = json.loads(core.view_json())
        self.inputs: List[Tensor] = [_tensor(t) for t in io["inputs"]]
        self.outputs: List[Tensor] = [_tensor(t) for t in io["outputs"]]
        self.layers: List[Layer] = [_layer(n) for n in self._view["nodes"]]
        self._graph: Optional[dict] = None

    @property
    def name(self) -> str:
        """The model's name (the C identifier stem of its artifact: ``tvmgen_<name>``)."""
        return self._core.name

    @property
    def path(self) -> str:
        """The file the model was read from."""
        return self._core.path

    @property
    def macs(self) -> int:
        """Nominal multiply-accumulates of one inference (the sum over the layers)."""
        return int(self._view["macs"])

    @property
    def weight_bytes(self) -> int:
        """Bytes of every layer's constant inputs."""
        return int(self._view["weight_bytes"])

    @property
    def notes(self) -> List[str]:
        """What the frontend wants the user to know about how it read the model."""
        return list(self._core.notes())

    @property
    def graph(self) -> dict:
        """The JSON graph (docs/graph-format.md) ``microtir import`` writes, as a dict."""
        if self._graph is None:
            self._graph = json.loads(self._core.graph_json())
        return self._graph

    def __repr__(self) -> str:
        ins = ", ".join(f"{t.name}: {t.dtype}{list(t.shape)}" for t in self.inputs)
        return f"<microtir.Model {self.name!r}: {len(self.layers)} layers, {self.macs:,} MACs, inputs {ins}>"

    def _repr_html_(self) -> str:
        rows = [
            (i, l.name, l.op, f"{l.dtype} {list(l.shape)}", l.macs, l.weight_bytes, l.activation_bytes)
            for i, l in enumerate(self.layers)
        ]
        caption = f"model {self.name}: {self.macs:,} MACs, {self.weight_bytes:,} weight bytes"
        return _html.table(caption, ["#", "layer", "op", "output", "MACs", "weight bytes", "activation bytes"], rows)


def _detect_suffix(data: bytes) -> str:
    """The file suffix of a model given as bytes, from its contents."""
    if len(data) >= 8 and data[4:8] == b"TFL3":
        return ".tflite"
    head = data.lstrip()[:64]
    if head.startswith(b"{"):
        return ".json"
    if b"T.prim_func" in data or b"I.ir_module" in data or head.startswith(b"#") or head.startswith(b"@"):
        return ".tir"
    return ".onnx"


def load(path_or_bytes: PathOrBytes, *, name: str = "model", devices: Sequence[str] = ()) -> Union["Model", "Program"]:
    """Load a model or a TIR program, as the CLI reads files.

    Args:
        path_or_bytes: a path to a ``.tflite``, ``.onnx``, JSON graph (``.json``) or TIR
            text (any other suffix), or the file's contents as bytes (the format is
            recognised from them; a JSON graph given as bytes must hold its weights inline).
        name: the file name stem used for a model given as bytes (the model's name
            comes from it when the format has none).
        devices: place operators on simulated devices, ``"INSTANCE=OP[,OP...]"`` each
            (the CLI's ``--device``; e.g. ``"npu0=conv2d,dense"``).

    Returns:
        a :class:`Model` for a graph, a :class:`microtir.Program` for TIR text.

    Raises:
        microtir.Error: the CLI's message and location for a file it would refuse.
    """
    from .tir import Program, parse

    keep_alive = None
    if isinstance(path_or_bytes, (bytes, bytearray, memoryview)):
        data = bytes(path_or_bytes)
        suffix = _detect_suffix(data)
        if suffix == ".tir":
            return parse(data.decode("utf-8"), filename=f"{name}.tir")
        keep_alive = tempfile.TemporaryDirectory(prefix="microtir-")
        path = os.path.join(keep_alive.name, name + suffix)
        with open(path, "wb") as f:
            f.write(data)
    else:
        path = os.fspath(path_or_bytes)
        if not isinstance(path, str):
            raise Error(f"load takes a path or bytes, not {type(path_or_bytes).__name__}")
        if not path.endswith((".json", ".onnx", ".tflite")):
            try:
                with open(path, "r", encoding="utf-8") as f:
                    text = f.read()
            except OSError as e:
                raise Error(f"cannot open '{path}': {e.strerror}") from None
            return parse(text, filename=path)
    return Model(_microtir.load_model(path, list(devices)), keep_alive)
