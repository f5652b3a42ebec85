"""A single-subgraph .tflite in flatc's JSON form, shared by the operator tests
(ops_tflite_test.py, int16_ops_tflite_test.py, int16x8_mac_tflite_test.py). Plain Python: ops_tflite_test.py runs
without numpy."""


class OneSubgraphModel:
    """A single-subgraph .tflite in flatc's JSON form: the operators and their codes;
    each test's subclass says how it writes a tensor."""

    def __init__(self):
        self.tensors, self.buffers, self.ops, self.codes = [], [{}], [], []

    def op(self, code, inputs, outputs, options_type=None, options=None):
        if code not in self.codes:
            self.codes.append(code)
        o = {"opcode_index": self.codes.index(code), "inputs": inputs, "outputs": outputs}
        if options_type:
            o["builtin_options_type"], o["builtin_options"] = options_type, options or {}
        self.ops.append(o)

    def json(self, inputs, outputs):
        return {"version": 3,
                "operator_codes": [{"builtin_code": c, "deprecated_builtin_code": 0, "version": 1} for c in self.codes],
                "subgraphs": [{"tensors": self.tensors, "inputs": inputs, "outputs": outputs, "operators": self.ops,
                               "name": "main"}],
                "buffers": self.buffers}
