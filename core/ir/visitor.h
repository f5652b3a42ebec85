// The one read-only walker. Every node kind has a method `visit_<Kind>`, generated from
// nodes.def, whose default visits the node's children, so a subclass overrides only
// the kinds it cares about and calls the base to keep recursing.
#pragma once

#include "ir/function.h"
#include "ir/stmt.h"

namespace mtir {

class Visitor {
 public:
  virtual ~Visitor() = default;
  virtual void visit(const Expr& e);
  virtual void visit(const Stmt& s);
  // Called where a buffer is used or declared; by default visits shape, strides, offset.
  virtual void visit_buffer(const Buffer& b);
  void visit_func(const PrimFunc& f);

 protected:
#define MTIR_EXPR(Name) virtual void visit_##Name(const Name##Node* op);
#define MTIR_STMT(Name) virtual void visit_##Name(const Name##Node* op);
#include "ir/nodes.def"
};

}  // namespace mtir
