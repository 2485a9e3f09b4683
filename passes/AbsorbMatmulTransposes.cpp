//===- AbsorbMatmulTransposes.cpp - transposes as matmul layouts -----------===//
//
// cuBLASLt reads an operand transposed through its layout (TRANSA/TRANSB) at no
// cost, so a transpose that only swaps the last two dims of a matmul operand
// need not run as a kernel: the matmul reads the transpose's input and sets
// `transpose_lhs`/`transpose_rhs`. Exported graphs are full of them: Gemm's
// transA/transB, `x @ w.T` (torch's Linear when exported as MatMul), the
// K transpose of attention scores (`q @ k.transpose(-1, -2)`).
//===----------------------------------------------------------------------===//

#include "passes/Passes.h"

#include "ir/Kiln/KilnDialect.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

namespace kiln {
#define GEN_PASS_DEF_ABSORBMATMULTRANSPOSESPASS
#include "passes/Passes.h.inc"
} // namespace kiln

using namespace mlir;

namespace kiln {
namespace {

/// The input of `v`'s transpose when that transpose swaps exactly the last two
/// dims (rank >= 2), else null.
Value swappedLastTwo(Value v) {
  auto t = v.getDefiningOp<TransposeOp>();
  if (!t)
    return {};
  ArrayRef<int64_t> perm = t.getPermutation();
  size_t rank = perm.size();
  if (rank < 2)
    return {};
  for (size_t d = 0; d + 2 < rank; ++d)
    if (perm[d] != static_cast<int64_t>(d))
      return {};
  if (perm[rank - 2] != static_cast<int64_t>(rank - 1) ||
      perm[rank - 1] != static_cast<int64_t>(rank - 2))
    return {};
  return t.getInput();
}

struct AbsorbMatmulTransposesPass
    : public impl::AbsorbMatmulTransposesPassBase<AbsorbMatmulTransposesPass> {
  void runOnOperation() override {
    SmallVector<TransposeOp> maybeDead;
    getOperation().walk([&](MatmulOp m) {
      // cuBLASLt's int8 and FP8 matmuls take one layout, which
      // --kiln-integer-matmuls wrote.
      if (m.isInt8Product() || m.isFloat8Product())
        return;
      if (Value x = swappedLastTwo(m.getLhs())) {
        maybeDead.push_back(m.getLhs().getDefiningOp<TransposeOp>());
        m.getLhsMutable().assign(x);
        m.setTransposeLhs(!m.getTransposeLhs());
      }
      if (Value x = swappedLastTwo(m.getRhs())) {
        maybeDead.push_back(m.getRhs().getDefiningOp<TransposeOp>());
        m.getRhsMutable().assign(x);
        m.setTransposeRhs(!m.getTransposeRhs());
      }
    });
    // A transpose other ops still read stays for them.
    for (TransposeOp t : maybeDead)
      if (t && t->use_empty())
        t->erase();
  }
};

} // namespace
} // namespace kiln
