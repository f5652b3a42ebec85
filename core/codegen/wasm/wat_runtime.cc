// The runtime a wasm module carries, kept as text the way Halide keeps the C backend's
// prologue in a template (CodeGen_C_prologue.template.cpp), not in string builders in
// the emitter: the error globals and their exports, the workspace allocator and the
// trap-free integer division helpers. Each template's {KEY}s are filled per module.
#include <map>

#include "codegen/wasm/wat_function.h"

namespace mtir {
namespace wat_codegen {
namespace {

// The error state: the message's address and up to three values.
const char* const kErrorState = R"WAT(  (global $mtir.err (mut i32) (i32.const 0))
  (global $mtir.err0 (mut i64) (i64.const 0))
  (global $mtir.err1 (mut i64) (i64.const 0))
  (global $mtir.err2 (mut i64) (i64.const 0))
)WAT";

const char* const kErrorExports = R"WAT(  (func $last_error (export "{LAST_ERROR}") (result i32) (global.get $mtir.err))
  (func $last_error_value (export "{LAST_ERROR_VALUE}") (param $k i32) (result i64)
    (if (result i64) (i32.eqz (local.get $k)) (then (global.get $mtir.err0))
      (else (if (result i64) (i32.eq (local.get $k) (i32.const 1)) (then (global.get $mtir.err1)) (else (global.get $mtir.err2))))))
)WAT";

// The workspace allocator: LIFO blocks, each with a 16-byte header holding its own
// address and the block's end, so a free checks that it frees the newest block.
const char* const kAllocator = R"WAT(  (func $mtir.alloc (param $size i64) (result i32) (local $p i32) (local $end i32)
    (if (i64.gt_u (local.get $size) (i64.const {POOL_BYTES})) (then (return (i32.const 0))))
    (local.set $p (i32.add (global.get $mtir.top) (i32.const {HEADER})))
    (local.set $end (i32.add (local.get $p) (i32.and (i32.add (i32.wrap_i64 (local.get $size)) (i32.const 15)) (i32.const -16))))
    (if (i32.gt_u (local.get $end) (i32.const {POOL_END})) (then (return (i32.const 0))))
    (i32.store (global.get $mtir.top) (global.get $mtir.top))
    (i32.store offset=4 (global.get $mtir.top) (local.get $end))
    (global.set $mtir.top (local.get $end))
    (local.get $p)
  )
  (func $mtir.free (param $p i32) (result i32) (local $h i32)
    (if (i32.or (i32.lt_u (local.get $p) (i32.const {FIRST_BLOCK})) (i32.gt_u (local.get $p) (i32.const {POOL_END}))) (then (return (i32.const -1))))
    (local.set $h (i32.sub (local.get $p) (i32.const {HEADER})))
    (if (i32.or (i32.ne (i32.load (local.get $h)) (local.get $h)) (i32.ne (i32.load offset=4 (local.get $h)) (global.get $mtir.top))) (then (return (i32.const -1))))
    (global.set $mtir.top (local.get $h))
    (i32.const 0)
  )
)WAT";

// Integer division, (a, b) -> result, that never traps: a zero divisor divides by one.
const char* const kUnsignedDivision = R"WAT(  (func {NAME} (param $a {TY}) (param $b {TY}) (result {TY})
    (if ({TY}.eqz (local.get $b)) (then (local.set $b ({TY}.const 1))))
    ({TY}.{OP}_u (local.get $a) (local.get $b))
  )
)WAT";
// Signed: MIN / -1 wraps to MIN (= 0 - a); its remainder is 0. {TAIL} picks the result.
const char* const kSignedDivision =
    R"WAT(  (func {NAME} (param $a {TY}) (param $b {TY}) (result {TY}) (local $q {TY}) (local $r {TY})
    (if ({TY}.eqz (local.get $b)) (then (local.set $b ({TY}.const 1))))
    (if ({TY}.eq (local.get $b) ({TY}.const -1)) (then (return {MIN_BY_MINUS_ONE})))
    (local.set $q ({TY}.div_s (local.get $a) (local.get $b)))
    (local.set $r ({TY}.rem_s (local.get $a) (local.get $b)))
{TAIL}  )
)WAT";
// Truncation rounds toward zero; floor steps down when the remainder's sign differs
// from b's.
const char* const kFloorAdjust =
    "(i32.and ({TY}.ne (local.get $r) ({TY}.const 0)) (i32.ne ({TY}.lt_s (local.get $r) ({TY}.const 0)) ({TY}.lt_s "
    "(local.get $b) ({TY}.const 0))))";
const char* const kFloorDivTail = "    (select ({TY}.sub (local.get $q) ({TY}.const 1)) (local.get $q) {ADJUST})\n";
const char* const kFloorModTail = "    (select ({TY}.add (local.get $r) (local.get $b)) (local.get $r) {ADJUST})\n";

std::string fill(std::string text, const std::map<std::string, std::string>& values) {
  for (const auto& [key, value] : values) {
    const std::string mark = "{" + key + "}";
    for (size_t at = text.find(mark); at != std::string::npos; at = text.find(mark, at + value.size()))
      text.replace(at, mark.size(), value);
  }
  return text;
}

}  // namespace

std::string wat_runtime_error_state() { return kErrorState; }

std::string wat_runtime_error_exports() {
  return fill(kErrorExports, {{"LAST_ERROR", kWasmLastErrorExport}, {"LAST_ERROR_VALUE", kWasmLastErrorValueExport}});
}

std::string wat_runtime_allocator(int64_t pool_base, int64_t pool_bytes, int64_t pool_end) {
  return fill(kAllocator, {{"POOL_BYTES", std::to_string(pool_bytes)},
                           {"POOL_END", std::to_string(pool_end)},
                           {"HEADER", std::to_string(kBlockHeader)},
                           {"FIRST_BLOCK", std::to_string(pool_base + kBlockHeader)}});
}

std::string wat_runtime_division(const std::string& name) {
  // name: $mtir.[floor]div|mod_s|u_i32|i64
  const std::string ty = name.substr(name.size() - 3);
  const bool is_signed = name.find("_s_") != std::string::npos;
  const bool floor = name.find("floor") != std::string::npos;
  const bool div = name.find("div") != std::string::npos;
  if (!is_signed) return fill(kUnsignedDivision, {{"NAME", name}, {"TY", ty}, {"OP", div ? "div" : "rem"}});
  const std::string tail = !floor ? std::string("    (local.get ") + (div ? "$q" : "$r") + ")\n"
                                  : fill(div ? kFloorDivTail : kFloorModTail, {{"ADJUST", kFloorAdjust}});
  const std::string min_by_minus_one = div ? "({TY}.sub ({TY}.const 0) (local.get $a))" : "({TY}.const 0)";
  // TAIL and MIN_BY_MINUS_ONE hold {TY} themselves: filled first, TY after them.
  return fill(fill(kSignedDivision, {{"NAME", name}, {"TAIL", tail}, {"MIN_BY_MINUS_ONE", min_by_minus_one}}),
              {{"TY", ty}});
}

}  // namespace wat_codegen
}  // namespace mtir
