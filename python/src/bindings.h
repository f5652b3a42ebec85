// The extension _microtir: thin bindings over the library half of the CLI's subcommands
// (cli/commands.h) and the script parser. Each function returns plain values (str, bytes,
// numpy arrays, JSON text the Python side decodes); the package microtir (python/microtir)
// wraps them in documented classes. A DiagnosticError becomes microtir.Error.
#pragma once

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include "support/ndarray.h"

namespace mtir::python {

namespace py = pybind11;

// numpy <-> NDArray, by the dtype's name (float32, int8, ...); a user error for a dtype
// microtir has no name for.
NDArray to_ndarray(py::handle value, const std::string& what);
py::array to_numpy(const NDArray& a);

void bind_model(py::module_& m);
void bind_artifact(py::module_& m);
void bind_tir(py::module_& m);

}  // namespace mtir::python
