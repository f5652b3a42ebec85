// Data types of TIR: bool, signed and unsigned integers, floats and handles, each with
// a number of lanes (1 for scalars; "float32x4" is a vector of four float32). A
// scalable vector (SVE/RVV, "float32xvscalex4") has T.vscale() times `lanes` lanes,
// known only at run time: it parses and prints, and everything that runs code refuses
// it (ir/carried_types.h), as it refuses the sub-byte int4 and uint4.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace mtir {

class DataType {
 public:
  enum class Code : uint8_t { kInt, kUInt, kFloat, kHandle, kBool };

  constexpr DataType() = default;
  constexpr DataType(Code code, int bits, int lanes = 1) : code_(code), bits_(bits), lanes_(lanes) {}

  static constexpr DataType Int(int bits) { return DataType(Code::kInt, bits); }
  static constexpr DataType UInt(int bits) { return DataType(Code::kUInt, bits); }
  static constexpr DataType Float(int bits) { return DataType(Code::kFloat, bits); }
  static constexpr DataType Bool() { return DataType(Code::kBool, 1); }
  static constexpr DataType Handle() { return DataType(Code::kHandle, 64); }
  // The type of statements and of calls that return nothing.
  static constexpr DataType Void() { return DataType(Code::kHandle, 0); }

  Code code() const { return code_; }
  int bits() const { return bits_; }
  int lanes() const { return lanes_; }
  int bytes() const { return (bits_ + 7) / 8; }
  bool is_scalar() const { return lanes_ == 1; }
  bool is_vector() const { return lanes_ > 1; }
  // The type of one lane, and this type with `n` lanes.
  DataType element_of() const { return DataType(code_, bits_); }
  DataType with_lanes(int n) const { return DataType(code_, bits_, n); }
  // T.vscale() * k lanes.
  DataType with_scalable_lanes(int k) const {
    DataType t(code_, bits_, k);
    t.scalable_ = true;
    return t;
  }
  bool is_scalable() const { return scalable_; }

  bool is_int() const { return code_ == Code::kInt; }
  bool is_uint() const { return code_ == Code::kUInt; }
  bool is_integer() const { return is_int() || is_uint(); }  // not bool
  bool is_float() const { return code_ == Code::kFloat; }
  bool is_bool() const { return code_ == Code::kBool; }
  bool is_handle() const { return code_ == Code::kHandle && bits_ != 0; }
  bool is_void() const { return code_ == Code::kHandle && bits_ == 0; }
  // Types that arithmetic operators accept.
  bool is_numeric() const { return is_integer() || is_float(); }

  // "float32", "int8", "bool", "handle", "void", "float32x4", "float32xvscalex4".
  std::string str() const;
  // Inverse of str(); nullopt for names we do not know. Vector names ("int8x16") are
  // accepted only with `allow_lanes`: most places (buffers, graphs) take scalars.
  static std::optional<DataType> parse(const std::string& name, bool allow_lanes = false);
  // Lanes a vector type may have.
  static constexpr int kMaxLanes = 64;

  bool operator==(const DataType& o) const {
    return code_ == o.code_ && bits_ == o.bits_ && lanes_ == o.lanes_ && scalable_ == o.scalable_;
  }
  bool operator!=(const DataType& o) const { return !(*this == o); }

 private:
  Code code_ = Code::kHandle;
  int bits_ = 0;
  int lanes_ = 1;
  bool scalable_ = false;
};

// Wrap `v` to the width of integer type `t` with two's complement (C semantics).
// Inline: the interpreter calls it for every integer value it computes.
inline int64_t wrap_int(DataType t, int64_t v) {
  if (t.is_bool()) return v != 0;
  if (!t.is_integer() || t.bits() >= 64) return v;
  const int bits = t.bits();
  const uint64_t mask = (uint64_t{1} << bits) - 1;
  uint64_t u = static_cast<uint64_t>(v) & mask;
  if (t.is_int() && (u >> (bits - 1)) & 1) u |= ~mask;  // sign-extend
  return static_cast<int64_t>(u);
}

}  // namespace mtir
