// analysis/read_before_write.h: which inputs a kernel reads wholly before it touches its
// output (the memory planner may then put such an input in the output's bytes).
#include <gtest/gtest.h>

#include <string>

#include "analysis/read_before_write.h"
#include "script/parser.h"

namespace mtir {
namespace {

PrimFunc kernel(const std::string& body) {
  IRModule m = parse_module_or_throw(R"(@I.ir_module
class Module:
    @T.prim_func
    def k(X: T.Buffer((8,), "int8"), W: T.Buffer((8,), "int8"), Y: T.Buffer((8,), "int8")):
)" + body);
  return m.lookup("k");
}

TEST(ReadBeforeWrite, GatherThenWriteReadsItsInputFirst) {
  // A dense layer's shape: the row into a local column, then the products.
  PrimFunc f = kernel(R"(        col = T.alloc_buffer((8,), "int32", scope="local")
        for j in range(8):
            col[j] = T.Cast("int32", X[j])
        for o in range(8):
            Y[o] = T.Cast("int8", col[o] * T.Cast("int32", W[o]))
)");
  EXPECT_TRUE(reads_before_writing(f, 0));
  EXPECT_FALSE(reads_before_writing(f, 1)) << "the weights are read while the output is written";
  EXPECT_FALSE(reads_before_writing(f, 2)) << "the output itself is no input";
}

TEST(ReadBeforeWrite, ReadingAndWritingInOneLoopIsRefused) {
  PrimFunc f = kernel(R"(        for o in range(8):
            Y[o] = X[7 - o]
)");
  EXPECT_FALSE(reads_before_writing(f, 0));
}

TEST(ReadBeforeWrite, AReadAfterTheFirstWriteIsRefused) {
  PrimFunc f = kernel(R"(        Y[0] = X[0]
        Y[1] = X[1]
)");
  EXPECT_FALSE(reads_before_writing(f, 0)) << "the second store reads X after the first wrote Y";
  PrimFunc g = kernel(R"(        s: T.int8 = X[1]
        Y[0] = X[0]
        Y[1] = s
)");
  EXPECT_FALSE(reads_before_writing(g, 0)) << "the first store still reads X";
}

TEST(ReadBeforeWrite, APointerTakenFromTheInputCountsAsTheInput) {
  PrimFunc f = kernel(R"(        p: T.handle = T.address_of(X[0])
        Y[0] = T.int8(0)
        T.evaluate(T.call_extern("int32", "consume", p))
)");
  EXPECT_FALSE(reads_before_writing(f, 0));
  PrimFunc g = kernel(R"(        p: T.handle = T.address_of(X[0])
        T.evaluate(T.call_extern("int32", "consume", p))
        Y[0] = T.int8(0)
)");
  EXPECT_TRUE(reads_before_writing(g, 0));
}

}  // namespace
}  // namespace mtir
