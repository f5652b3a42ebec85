// `microtir onnx-test DIR`: the ONNX backend node-test conformance runner. Every test
// folder (model.onnx, test_data_set_*/input_*.pb, output_*.pb) is imported, compiled to
// host C, run in the host simulator and compared with the expected outputs (rtol 1e-3,
// atol 1e-7), then classified pass / fail / unsupported (with the reason) / error (a
// bug). See docs/onnx.md.
#pragma once

#include <string>

namespace mtir::cli {

struct OnnxTestCommand {
  std::string dir;         // the node-test folder (data/node) or one test folder
  std::string filter;      // only tests whose folder name contains this
  int jobs = 2;            // worker processes
  bool json = false;       // the report as JSON on stdout
  bool list_tests = false;  // print every test's status, not only the table
  std::string floor_file;  // fail when the pass count drops below the file's, or on any fail/error
};

int run_onnx_test(const OnnxTestCommand& c);

}  // namespace mtir::cli
