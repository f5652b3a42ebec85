#include "codegen/wasm/codegen_wat.h"

#include "codegen/wasm/wat_function.h"

namespace mtir {

const char* const kWasmLastErrorExport = "last_error";
const char* const kWasmLastErrorValueExport = "last_error_value";
const char* const kWasmMathImportModule = "env";

namespace wat_codegen {

std::string wasm_type(DataType t, const Span& span) {
  if (t.is_bool() || t.is_handle()) return "i32";
  if (t.is_integer() && t.bits() <= 32) return "i32";
  if (t.is_integer() && t.bits() == 64) return "i64";
  if (t.is_float() && t.bits() == 32) return "f32";
  if (t.is_float() && t.bits() == 64) return "f64";
  user_error(span, "the wasm backend does not support " + t.str() + " values");
}

// Bytes of a value of `t` in linear memory (bool is one byte, handles are wasm32 pointers).
int mem_bytes(DataType t) { return t.is_handle() ? 4 : t.is_bool() ? 1 : t.bytes(); }

std::string int_text(int64_t v, int bits) {
  int64_t s = bits >= 64 ? v : static_cast<int64_t>(static_cast<uint64_t>(v) << (64 - bits)) >> (64 - bits);
  return std::to_string(s);
}

std::string float_text(double v, bool f32) {
  if (f32) v = static_cast<double>(static_cast<float>(v));
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  char buf[64];
  std::snprintf(buf, sizeof buf, "%a", v);
  return buf;
}

// A wasm text identifier from a TIR name.
std::string ident(const std::string& hint) { return "$" + sanitized_name(hint, /*keep_dots=*/true); }

// A string of bytes as a wasm text string literal.
std::string data_literal(const std::string& bytes) {
  static const char* hex = "0123456789abcdef";
  std::string out = "\"";
  for (unsigned char c : bytes) {
    if (c >= 0x20 && c < 0x7f && c != '"' && c != '\\') {
      out += static_cast<char>(c);
    } else {
      out += '\\';
      out += hex[c >> 4];
      out += hex[c & 15];
    }
  }
  return out + "\"";
}

}  // namespace wat_codegen

namespace {

using namespace wat_codegen;

// Bytes of the "local" scratch allocations of a function (each a block of the allocator).
int64_t local_scratch_bytes(const Stmt& s) {
  int64_t total = 0;
  struct Walker {
    int64_t* total;
    void walk(const Stmt& s) {
      if (!s) return;
      switch (s->kind) {
        case StmtKind::Allocate: {
          const auto* a = static_cast<const AllocateNode*>(s.get());
          int64_t n = 0;
          if (a->scope == "local" && const_num_elements(a->buffer, &n)) *total += block_bytes(n * mem_bytes(a->buffer->dtype));
          walk(a->body);
          return;
        }
        case StmtKind::For: walk(static_cast<const ForNode*>(s.get())->body); return;
        case StmtKind::While: walk(static_cast<const WhileNode*>(s.get())->body); return;
        case StmtKind::IfThenElse: {
          const auto* op = static_cast<const IfThenElseNode*>(s.get());
          walk(op->then_case);
          walk(op->else_case);
          return;
        }
        case StmtKind::LetStmt: walk(static_cast<const LetStmtNode*>(s.get())->body); return;
        case StmtKind::SeqStmt:
          for (const auto& c : static_cast<const SeqStmtNode*>(s.get())->seq) walk(c);
          return;
        case StmtKind::DeclBuffer: walk(static_cast<const DeclBufferNode*>(s.get())->body); return;
        case StmtKind::AttrStmt: walk(static_cast<const AttrStmtNode*>(s.get())->body); return;
        case StmtKind::AssertStmt: walk(static_cast<const AssertStmtNode*>(s.get())->body); return;
        case StmtKind::AllocateConst:
          walk(static_cast<const AllocateConstNode*>(s.get())->body);
          return;
        case StmtKind::BufferRealize:
          walk(static_cast<const BufferRealizeNode*>(s.get())->body);
          return;
        case StmtKind::BufferStore:
        case StmtKind::Evaluate: return;  // no statement inside
      }
    }
  } w{&total};
  w.walk(s);
  return total;
}

// Where the module's memory goes: NULL page guard, constants and I/O buffers, the
// workspace pool, then the strings (placed while the functions are emitted).
struct MemoryLayout {
  std::vector<int64_t> param_address;  // of each parameter of the run export
  std::string io_exports;              // the "input:" and "output:" address globals
  std::vector<int64_t> initial_address;  // of each state's initial bytes (else -1)
  int64_t pool_base = 0, pool_bytes = 0, pool_end = 0;
};

MemoryLayout lay_out_memory(const WatOptions& options, int64_t local_scratch, ModuleState* ms) {
  MemoryLayout layout;
  int64_t at = 16;
  std::ostringstream exports;
  if (options.has_run) {
    for (const auto& p : options.run.params) {
      layout.param_address.push_back(at);
      layout.initial_address.push_back(-1);
      if (p.kind == WasmRunExport::Param::Kind::kState) {
        // The live state, then a copy of its initial bytes for reset.
        ms->data.emplace_back(at, p.data);
        at += round16(std::max<int64_t>(p.bytes, 1));
        layout.initial_address.back() = at;
        ms->data.emplace_back(at, p.data);
      } else if (p.kind == WasmRunExport::Param::Kind::kConstant) {
        ms->data.emplace_back(at, p.data);
      } else {
        const char* prefix = p.kind == WasmRunExport::Param::Kind::kInput ? "input:" : "output:";
        exports << "  (global (export \"" << prefix << p.name << "\") i32 (i32.const " << at << "))\n";
      }
      at += round16(std::max<int64_t>(p.bytes, 1));
    }
  }
  layout.io_exports = exports.str();
  layout.pool_base = at;
  layout.pool_bytes = round16(options.workspace_bytes) + local_scratch;
  layout.pool_end = at + layout.pool_bytes;
  ms->next_string = layout.pool_end;
  return layout;
}

// The run export: resets the pool and the error, refuses NULL buffers, calls main with
// the constants' addresses, the buffers and each device instance's context (an opaque
// i32 the host's device library knows).
std::string run_function(const WatOptions& options, const MemoryLayout& layout, ModuleState* ms) {
  if (!ms->functions.count(options.run.main_symbol))
    user_error(Span{}, "the wasm module has no main function '" + options.run.main_symbol + "'");
  std::ostringstream run, checks, call;
  run << "  (func $run (export \"run\")";
  for (size_t i = 0; i < options.run.params.size(); ++i) {
    const auto& p = options.run.params[i];
    if (p.kind == WasmRunExport::Param::Kind::kConstant || p.kind == WasmRunExport::Param::Kind::kState) {
      call << " (i32.const " << layout.param_address[i] << ")";
      continue;
    }
    std::string id = "$p" + std::to_string(i);
    run << " (param " << id << " i32)";
    const char* what = p.kind == WasmRunExport::Param::Kind::kInput ? "input" : "output";
    int64_t msg = ms->string_address("run: " + std::string(what) + " '" + p.name + "' is NULL");
    checks << "    (if (i32.eqz (local.get " << id << ")) (then (global.set $mtir.err (i32.const " << msg
           << ")) (return (i32.const " << kNullArgument << "))))\n";
    call << " (local.get " << id << ")";
  }
  for (size_t k = 0; k < options.run.devices.size(); ++k) {
    run << " (param $dev" << k << " i32)";
    call << " (local.get $dev" << k << ")";
  }
  run << " (result i32)\n"
      << "    (global.set $mtir.top (i32.const " << layout.pool_base << "))\n"
      << "    (global.set $mtir.err (i32.const 0))\n"
      << checks.str() << "    (call " << ident(options.run.main_symbol) << call.str() << ")\n  )\n";
  return run.str();
}

// The "reset" export when the model has state: each state's initial bytes copied back
// over it; returns 0.
std::string reset_function(const WatOptions& options, const MemoryLayout& layout) {
  std::ostringstream os;
  bool any = false;
  for (size_t i = 0; i < options.run.params.size(); ++i) {
    const auto& p = options.run.params[i];
    if (p.kind != WasmRunExport::Param::Kind::kState) continue;
    any = true;
    os << "    (local.set $i (i32.const 0))\n"
       << "    (block $done" << i << " (loop $next" << i << "\n"
       << "      (br_if $done" << i << " (i32.ge_u (local.get $i) (i32.const " << p.bytes << ")))\n"
       << "      (i32.store8 (i32.add (local.get $i) (i32.const " << layout.param_address[i] << "))"
       << " (i32.load8_u (i32.add (local.get $i) (i32.const " << layout.initial_address[i] << "))))\n"
       << "      (local.set $i (i32.add (local.get $i) (i32.const 1)))\n"
       << "      (br $next" << i << ")))\n";
  }
  if (!any) return "";
  return "  (func $mtir.reset (export \"reset\") (result i32) (local $i i32)\n" + os.str() + "    (i32.const 0)\n  )\n";
}

}  // namespace

using namespace wat_codegen;

std::string codegen_wat(const IRModule& m, const WatOptions& options) {
  ModuleState ms;
  ms.mark_lines = options.line_map != nullptr;
  int64_t local_scratch = 0;
  for (const auto& [name, f] : m.functions) {
    const std::string symbol = symbol_of(name, f);
    if (is_packed(f)) {
      user_error(f->span, "function '" + name + "' uses the packed calling convention; the wasm backend builds "
                          "with -unpacked-api=1 -interface-api=c");
    }
    ms.functions[symbol] = f;
    local_scratch += local_scratch_bytes(f->body);
  }
  const MemoryLayout layout = lay_out_memory(options, local_scratch, &ms);

  std::ostringstream defs;
  for (const auto& [name, f] : m.functions) {
    FunctionEmitter emitter(&ms, symbol_of(name, f), f);
    defs << emitter.define(!options.has_run && !attr_flag(f, "tir.internal"));
  }
  const std::string run = options.has_run ? run_function(options, layout, &ms) + reset_function(options, layout) : "";

  const int64_t end = ms.next_string;
  const int64_t pages = std::max<int64_t>(1, (end + kWasmPage - 1) / kWasmPage);
  std::ostringstream os;
  os << ";; Generated by microtir " << MICROTIR_VERSION << " from module \"" << m.name << "\"";
  if (!options.description.empty()) os << " (" << options.description << ")";
  os << ". Do not edit.\n";
  os << ";; memory: constants and I/O from 16, workspace pool [" << layout.pool_base << ", " << layout.pool_end
     << "), strings to " << end << "\n(module\n";
  for (const auto& [id, line] : ms.imports) os << "  " << line << "\n";
  os << "  (memory (export \"memory\") " << pages << ")\n";
  os << "  (global $mtir.top (mut i32) (i32.const " << layout.pool_base << "))\n";
  os << wat_runtime_error_state() << layout.io_exports << wat_runtime_error_exports();
  if (ms.helpers.count("$mtir.alloc")) os << wat_runtime_allocator(layout.pool_base, layout.pool_bytes, layout.pool_end);
  for (const auto& h : ms.helpers)
    if (h != "$mtir.alloc") os << wat_runtime_division(h);
  os << run << defs.str();
  for (const auto& [addr, bytes] : ms.data) os << "  (data (i32.const " << addr << ") " << data_literal(bytes) << ")\n";
  os << ")\n";
  return options.line_map ? strip_line_marks(os.str(), options.line_map) : os.str();
}

}  // namespace mtir
