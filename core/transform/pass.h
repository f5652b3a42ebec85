// A pass: a name and a function IRModule -> IRModule. Passes are plain C++ factories
// declared in transform.h and listed, in order, in driver/pipeline.cc.
#pragma once

#include <functional>
#include <string>

#include "ir/function.h"

namespace mtir {

struct Pass {
  std::string name;  // snake_case; also the file stem, test folder and --dump-ir label
  std::function<IRModule(const IRModule&)> run;
};

// Applies a function-level rewrite to every PrimFunc of the module.
Pass MakeFunctionPass(std::string name, std::function<PrimFunc(const PrimFunc&)> rewrite);

}  // namespace mtir
