// The C backend's Helium (MVE) vector stores: the int32x4 stores scalarize_vectors keeps
// (analysis/helium_vectors.h) as calls of the mtir_v4 helpers, and the scalar helper of
// T.multiply_by_quantized_multiplier.
#pragma once

#include <functional>
#include <map>
#include <string>

#include "ir/stmt.h"

namespace mtir::c_helpers {

// The C of a scalar expression, and the address of element `index` of a buffer ("(&A[i])").
using ScalarEmitter = std::function<std::string(const Expr&)>;
using AddressEmitter = std::function<std::string(const Buffer&, const Expr& index, const Span&)>;

// The statement (without a newline) for a store helium_store accepts; registers the
// helpers it uses in `helpers`.
std::string helium_store_statement(const BufferStoreNode* store, const ScalarEmitter& scalar,
                                   const AddressEmitter& address, std::map<std::string, std::string>* helpers);

// The C of an int32x4 value helium_vector accepts (a kept let's value); registers the
// helpers it uses in `helpers`.
std::string helium_vector_value(const Expr& value, const ScalarEmitter& scalar, const AddressEmitter& address,
                                std::map<std::string, std::string>* helpers);

// The helper name and text of scalar T.multiply_by_quantized_multiplier (builtins.def).
extern const char* const kMultiplyByQuantizedMultiplierName;
extern const char* const kMultiplyByQuantizedMultiplierHelper;

}  // namespace mtir::c_helpers
