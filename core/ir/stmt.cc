#include "ir/stmt.h"

#include "ir/function.h"

namespace mtir {

const char* stmt_kind_name(StmtKind k) {
  switch (k) {
#define MTIR_STMT(Name) \
  case StmtKind::Name: return #Name;
#include "ir/nodes.def"
  }
  return "?";
}

const char* for_kind_name(ForKind k) {
  switch (k) {
    case ForKind::kSerial: return "serial";
    case ForKind::kUnrolled: return "unroll";
    case ForKind::kParallel: return "parallel";
    case ForKind::kVectorized: return "vectorized";
    case ForKind::kThreadBinding: return "thread_binding";
  }
  return "serial";
}

Stmt BufferStore(Buffer b, Expr value, std::vector<Expr> indices, Span s) {
  return std::make_shared<BufferStoreNode>(std::move(b), std::move(value), std::move(indices), std::move(s));
}
Stmt For(Var v, Expr min, Expr extent, ForKind k, Stmt body, Span s) {
  return std::make_shared<ForNode>(std::move(v), std::move(min), std::move(extent), k, std::move(body), std::move(s));
}
Stmt ForLike(const ForNode* op, Expr min, Expr extent, Stmt body) {
  auto f = std::make_shared<ForNode>(op->loop_var, std::move(min), std::move(extent), op->for_kind, std::move(body),
                                     op->span);
  f->thread_tag = op->thread_tag;
  f->annotations = op->annotations;
  return f;
}
Stmt While(Expr c, Stmt body, Span s) {
  return std::make_shared<WhileNode>(std::move(c), std::move(body), std::move(s));
}
Stmt AllocateConst(Buffer b, std::vector<int64_t> ints, std::vector<double> floats, Stmt body, Span s) {
  return std::make_shared<AllocateConstNode>(std::move(b), std::move(ints), std::move(floats), std::move(body),
                                             std::move(s));
}
Stmt BufferRealize(Buffer b, std::vector<std::pair<Expr, Expr>> bounds, std::string scope, Expr condition, Stmt body,
                   Span s) {
  return std::make_shared<BufferRealizeNode>(std::move(b), std::move(bounds), std::move(scope), std::move(condition),
                                             std::move(body), std::move(s));
}
Stmt IfThenElse(Expr c, Stmt then_case, Stmt else_case, Span s) {
  return std::make_shared<IfThenElseNode>(std::move(c), std::move(then_case), std::move(else_case), std::move(s));
}
Stmt LetStmt(Var v, Expr value, Stmt body, Span s) {
  return std::make_shared<LetStmtNode>(std::move(v), std::move(value), std::move(body), std::move(s));
}
Stmt SeqStmt(std::vector<Stmt> seq, Span s) {
  std::vector<Stmt> flat;
  for (auto& st : seq) {
    if (const auto* inner = as<SeqStmtNode>(st)) {
      flat.insert(flat.end(), inner->seq.begin(), inner->seq.end());
    } else if (st) {
      flat.push_back(std::move(st));
    }
  }
  if (flat.size() == 1) return flat[0];
  if (flat.empty()) return NoOp(std::move(s));
  return std::make_shared<SeqStmtNode>(std::move(flat), std::move(s));
}
Stmt Evaluate(Expr v, Span s) { return std::make_shared<EvaluateNode>(std::move(v), std::move(s)); }
Stmt DeclBuffer(Buffer b, Stmt body, Span s) {
  return std::make_shared<DeclBufferNode>(std::move(b), std::move(body), std::move(s));
}
Stmt Allocate(Buffer b, std::string scope, Stmt body, Span s) {
  return std::make_shared<AllocateNode>(std::move(b), std::move(scope), std::move(body), std::move(s));
}
Stmt AttrStmt(Expr node, std::string key, Expr value, Stmt body, Span s) {
  return std::make_shared<AttrStmtNode>(std::move(node), std::move(key), std::move(value), std::move(body), std::move(s));
}
Stmt AssertStmt(Expr c, std::string message, Stmt body, Span s) {
  return std::make_shared<AssertStmtNode>(std::move(c), std::move(message), std::move(body), std::move(s));
}
Stmt NoOp(Span s) { return Evaluate(IntImm(DataType::Int(32), 0), std::move(s)); }

bool is_no_op(const Stmt& s) {
  const auto* ev = as<EvaluateNode>(s);
  return ev && as<IntImmNode>(ev->value) != nullptr;
}

Buffer PrimFuncNode::buffer_of(const Var& param) const {
  for (size_t i = 0; i < params.size(); ++i)
    if (params[i] == param) return param_buffers[i];
  return nullptr;
}

std::string symbol_of(const std::string& name, const PrimFunc& f) {
  auto it = f->attrs.find("global_symbol");
  std::string symbol = it != f->attrs.end() && std::holds_alternative<std::string>(it->second)
                           ? std::get<std::string>(it->second)
                           : name;
  // TVM names a module's only function `main`; C reserves that name for the program.
  return symbol == "main" ? "tvm_main" : symbol;
}

bool is_packed(const PrimFunc& f) {
  auto it = f->attrs.find("calling_conv");
  return it != f->attrs.end() && it->second == AttrValue(std::string("packed"));
}

int dl_type_code(DataType t) {
  if (t.is_float()) return 2;
  if (t.is_uint() || t.is_bool()) return 1;
  if (t.is_handle()) return 3;
  return 0;
}

PrimFunc WithBody(const PrimFunc& f, Stmt body) {
  auto n = std::make_shared<PrimFuncNode>(*f);
  n->body = std::move(body);
  return n;
}

PrimFunc IRModule::lookup(const std::string& fname) const {
  for (const auto& [n, f] : functions)
    if (n == fname) return f;
  return nullptr;
}

void IRModule::set(const std::string& fname, PrimFunc f) {
  for (auto& [n, g] : functions) {
    if (n == fname) {
      g = std::move(f);
      return;
    }
  }
  functions.emplace_back(fname, std::move(f));
}

}  // namespace mtir
