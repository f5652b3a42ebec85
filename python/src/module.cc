// PYBIND11_MODULE(_microtir): the error translation and the three groups of bindings.
#include <new>

#include "python/src/bindings.h"
#include "support/diagnostic.h"

namespace mtir::python {
namespace {

// microtir.Error(message, file, line, column, rendered, internal): the first diagnostic's
// location, every diagnostic's rendering (what the CLI prints after "microtir: ").
void raise_error(const std::vector<Diagnostic>& diags, bool internal) {
  py::object error = py::module_::import("microtir.errors").attr("Error");
  std::string message, file;
  int line = 0, col = 0;
  if (!diags.empty()) {
    message = diags.front().message;
    if (diags.front().span.defined()) {
      file = diags.front().span.file ? diags.front().span.file->name : "";
      line = diags.front().span.line;
      col = diags.front().span.col;
    }
  }
  py::object instance = error(message, file.empty() ? py::none() : py::object(py::str(file)),
                              line ? py::object(py::int_(line)) : py::none(),
                              col ? py::object(py::int_(col)) : py::none(), render_all(diags), internal);
  PyErr_SetObject(error.ptr(), instance.ptr());
}

Diagnostic internal_diagnostic(const std::string& what) {
  Diagnostic d;
  d.severity = Severity::kInternal;
  d.message = what;
  d.notes.push_back("this is a bug in microtir; please report it with the input that caused it");
  return d;
}

}  // namespace
}  // namespace mtir::python

PYBIND11_MODULE(_microtir, m) {
  using namespace mtir::python;
  m.doc() = "microtir's compiler core (use the package microtir, which wraps this module)";
  m.attr("__version__") = MICROTIR_VERSION;
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const mtir::DiagnosticError& e) {
      raise_error(e.diagnostics(), e.internal());
    } catch (const std::bad_alloc&) {
      throw;  // pybind11 turns it into MemoryError
    } catch (const py::builtin_exception&) {
      throw;
    } catch (const py::error_already_set&) {
      throw;
    } catch (const std::exception& e) {
      raise_error({internal_diagnostic(e.what())}, true);
    }
  });
  bind_model(m);
  bind_artifact(m);
  bind_tir(m);
}
