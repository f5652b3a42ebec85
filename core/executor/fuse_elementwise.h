// Elementwise fusion: an elementwise operator (relu, clip, add of a bias, ...) that is
// the only reader of its producer's output is folded into the producer's loop nest, so
// conv2d + bias + relu is one kernel, one pass over memory and no intermediate tensor.
//
// It works on the operators' PrimFuncs, not on op names, so any op whose function has
// the right shape takes part:
// - the consumer is a perfect loop nest over its output with one store, reading its
//   data input only at the element it writes (other inputs at any index);
// - the producer writes each output element in exactly one iteration of its outer
//   loops: one statement (the "site") holds every access to the output, all at the
//   same index, made of exactly the loop variables around the site. After the site the
//   element is final, so the consumer's expression is applied there;
// - or the producer only stores its output, from any number of statements (the 2x2
//   tiles of the int8 convolutions write four outputs from four stores): each store
//   then writes the consumer's expression of its value at its own index. An element
//   stored twice gets the expression twice and keeps the last, as before.
#pragma once

#include <string>

#include "ir/function.h"

namespace mtir {

// The fused function: the producer's parameters except its output, then the consumer's
// parameters except `consumer_input` (the one that reads the producer), then the
// consumer's output. Null when either function does not have the shape above; the
// caller then keeps them apart.
PrimFunc fuse_elementwise(const std::string& name, const PrimFunc& producer, const PrimFunc& consumer,
                          size_t consumer_input);

}  // namespace mtir
