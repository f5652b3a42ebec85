#include "ops/int16_activation.h"

namespace mtir {
namespace ops {

const std::array<uint16_t, 256>& sigmoid_table_uint16() {
  static const std::array<uint16_t, 256> table = {
    32768, 33451, 34133, 34813, 35493, 36169, 36843, 37513, 38180, 38841, 39498, 40149,
    40794, 41432, 42064, 42688, 43304, 43912, 44511, 45102, 45683, 46255, 46817, 47369,
    47911, 48443, 48964, 49475, 49975, 50464, 50942, 51409, 51865, 52311, 52745, 53169,
    53581, 53983, 54374, 54755, 55125, 55485, 55834, 56174, 56503, 56823, 57133, 57433,
    57724, 58007, 58280, 58544, 58800, 59048, 59288, 59519, 59743, 59959, 60168, 60370,
    60565, 60753, 60935, 61110, 61279, 61441, 61599, 61750, 61896, 62036, 62172, 62302,
    62428, 62549, 62666, 62778, 62886, 62990, 63090, 63186, 63279, 63368, 63454, 63536,
    63615, 63691, 63765, 63835, 63903, 63968, 64030, 64090, 64148, 64204, 64257, 64308,
    64357, 64405, 64450, 64494, 64536, 64576, 64614, 64652, 64687, 64721, 64754, 64786,
    64816, 64845, 64873, 64900, 64926, 64950, 64974, 64997, 65019, 65039, 65060, 65079,
    65097, 65115, 65132, 65149, 65164, 65179, 65194, 65208, 65221, 65234, 65246, 65258,
    65269, 65280, 65291, 65301, 65310, 65319, 65328, 65337, 65345, 65352, 65360, 65367,
    65374, 65381, 65387, 65393, 65399, 65404, 65410, 65415, 65420, 65425, 65429, 65433,
    65438, 65442, 65445, 65449, 65453, 65456, 65459, 65462, 65465, 65468, 65471, 65474,
    65476, 65479, 65481, 65483, 65485, 65488, 65489, 65491, 65493, 65495, 65497, 65498,
    65500, 65501, 65503, 65504, 65505, 65507, 65508, 65509, 65510, 65511, 65512, 65513,
    65514, 65515, 65516, 65517, 65517, 65518, 65519, 65520, 65520, 65521, 65522, 65522,
    65523, 65523, 65524, 65524, 65525, 65525, 65526, 65526, 65526, 65527, 65527, 65528,
    65528, 65528, 65529, 65529, 65529, 65529, 65530, 65530, 65530, 65530, 65531, 65531,
    65531, 65531, 65531, 65532, 65532, 65532, 65532, 65532, 65532, 65533, 65533, 65533,
    65533, 65533, 65533, 65533, 65533, 65534, 65534, 65534, 65534, 65534, 65534, 65534,
    65534, 65534, 65534, 65535,
  };
  return table;
}

NDArray sigmoid_table_array() {
  NDArray a = NDArray::zeros(DataType::UInt(16), {256});
  for (int i = 0; i < 256; ++i) a.set_int(i, sigmoid_table_uint16()[static_cast<size_t>(i)]);
  return a;
}

namespace {

// TFLite's power-of-two case: multiplier 0 stands for 3 << shift, unshifted.
void normalize(int32_t* multiplier, int32_t* shift) {
  if (*multiplier == 0) {
    *multiplier = 3 << *shift;
    *shift = 0;
  }
}

Expr shr(Expr a, int bits) { return bits == 0 ? a : call("shift_right", {std::move(a), ci(bits)}); }

// v = (x * multiplier + round) >> shift, a = |v|, uh = a >> frac_bits, then the table
// interpolated at a (or `saturated` beyond its last interval), then `finish(v, r)`.
Stmt table_lookup(const std::string& name, Expr x, const Buffer& table, int32_t multiplier, int32_t shift,
                  int frac_bits, int32_t saturated, const std::function<Stmt(Expr, Expr)>& finish) {
  normalize(&multiplier, &shift);
  int32_t round = shift > 0 ? 1 << (shift - 1) : 0;
  Var v = ivar(name + "_v"), a = ivar(name + "_abs"), i0 = ivar(name + "_i"), r = ivar(name + "_r");
  // The index is clamped so that the unselected branch also reads inside the table.
  const DataType i32 = DataType::Int(32);
  Expr ua = Cast(i32, load(table, {i0})), ub = Cast(i32, load(table, {add(i0, ci(1))}));
  Expr ut = call("bitwise_and", {a, ci((1 << frac_bits) - 1)});
  Expr inside = add(mul(ua, ci(1 << frac_bits)), mul(ut, sub(ub, ua)));
  Expr uh = shr(a, frac_bits);
  Stmt body = LetStmt(r, Select(lt(uh, ci(255)), inside, ci(saturated)), finish(v, r));
  body = LetStmt(i0, min_(uh, ci(254)), body);
  body = LetStmt(a, call("abs", {v}), body);
  return LetStmt(v, shr(add(mul(std::move(x), ci(multiplier)), ci(round)), shift), body);
}

}  // namespace

Stmt int16_logistic(const std::string& name, Expr x, const Buffer& table, int32_t multiplier, int32_t shift,
                    const UseResult& use) {
  return table_lookup(name, std::move(x), table, multiplier, shift, 9, 0x7FFF << 10, [&](Expr v, Expr r) {
    return use(shr(Select(ge(v, ci(0)), add(r, ci(1 << 9)), sub(ci((1 << 25) + (1 << 9) - 1), r)), 10));
  });
}

Stmt int16_tanh(const std::string& name, Expr x, const Buffer& table, int32_t multiplier, int32_t shift,
                const UseResult& use) {
  return table_lookup(name, std::move(x), table, multiplier, shift, 8, 0xFFFF << 8, [&](Expr v, Expr r) {
    return use(shr(Select(ge(v, ci(0)), add(r, ci(-(1 << 23) + (1 << 7))), sub(ci((1 << 23) + (1 << 7) - 1), r)), 8));
  });
}

}  // namespace ops
}  // namespace mtir
