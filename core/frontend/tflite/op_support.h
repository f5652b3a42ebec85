// The TFLite operators the converter reads, and in which dtypes: ONE table, which the
// converter checks before it converts an operator (a dtype outside it is refused with
// its reason), `microtir import --list-ops` prints and docs/tflite.md's operator table
// is generated from (tests/docs/tflite_ops_doc.py; the test docs_tflite_operator_table compares them).
#pragma once

#include <string>
#include <vector>

namespace mtir {

// The dtypes of the table's columns, in order.
const std::vector<std::string>& tflite_dtypes();

struct TfliteOpSupport {
  std::string op;                   // TFLite's name: "CONV_2D"
  std::string key;                  // the tensor whose dtype is the pair's: "input 0", "output 0", "none"
  std::vector<std::string> dtypes;  // the dtypes converted (of tflite_dtypes())
  // Pairs TFLM implements but microtir refuses, dtype -> the reason (the refusal says it).
  std::vector<std::pair<std::string, std::string>> refused;
  std::string note;  // a short word on the operator, or ""
};

// Every operator the converter knows of, in the docs' order.
const std::vector<TfliteOpSupport>& tflite_op_support();
// The entry of operator `op` (TFLite's name), or null.
const TfliteOpSupport* find_tflite_op(const std::string& op);

}  // namespace mtir
