//===- CheckTensorSizes.cpp - static sizes that fit -----------------------===//
//
// Shapes computed from a model's constants (ConstantOfShape, Expand, Tile, Pad,
// Resize targets) can be absurd: 2^62 elements, or a byte count that wraps to a
// few hundred. Everything downstream (memory plans, kernel index math, weights)
// multiplies dims, so the sizes are checked once here, before any of it.
//===----------------------------------------------------------------------===//

#include "passes/Passes.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/BuiltinTypes.h"

namespace kiln {
#define GEN_PASS_DEF_CHECKTENSORSIZESPASS
#include "passes/Passes.h.inc"
} // namespace kiln

using namespace mlir;

namespace kiln {
namespace {

/// The error for `type`, or "" when it fits.
std::string sizeProblem(Type type, uint64_t maxBytes) {
  auto shaped = dyn_cast<RankedTensorType>(type);
  if (!shaped || !shaped.hasStaticShape())
    return "";
  uint64_t elements = 1;
  bool overflow = false;
  for (int64_t d : shaped.getShape())
    overflow = overflow || __builtin_mul_overflow(elements, static_cast<uint64_t>(d), &elements);
  if (llvm::is_contained(shaped.getShape(), 0))
    return "";
  unsigned bits = shaped.getElementType().isIntOrFloat()
                      ? shaped.getElementType().getIntOrFloatBitWidth()
                      : 64;
  uint64_t bytes = 0;
  overflow = overflow || elements > static_cast<uint64_t>(INT64_MAX) ||
             __builtin_mul_overflow(elements, static_cast<uint64_t>((bits + 7) / 8), &bytes);
  if (!overflow && bytes <= maxBytes)
    return "";
  std::string shape;
  llvm::raw_string_ostream os(shape);
  llvm::interleave(shaped.getShape(), os, "x");
  os << "x" << shaped.getElementType();
  return ("(" + Twine(shape) + ") is " +
          (overflow ? Twine("more than 2^63 elements or 2^64 bytes") : Twine(bytes) + " bytes") +
          "; the limit is " + Twine(maxBytes) + " bytes for one tensor (--max-tensor-bytes)")
      .str();
}

struct CheckTensorSizesPass : impl::CheckTensorSizesPassBase<CheckTensorSizesPass> {
  using CheckTensorSizesPassBase::CheckTensorSizesPassBase;
  void runOnOperation() override {
    if (failed(checkTensorSizes(getOperation(), maxBytes)))
      signalPassFailure();
  }
};

} // namespace

LogicalResult checkTensorSizes(Operation *root, uint64_t maxBytes) {
  bool failedAny = false;
  // One error: what follows the first oversized value is usually as large.
  root->walk([&](Operation *op) {
    for (Region &region : op->getRegions())
      for (Block &block : region)
        for (BlockArgument arg : block.getArguments())
          if (std::string problem = sizeProblem(arg.getType(), maxBytes); !problem.empty()) {
            op->emitError() << "argument " << arg.getArgNumber() << " " << problem;
            failedAny = true;
            return WalkResult::interrupt();
          }
    for (OpResult result : op->getResults())
      if (std::string problem = sizeProblem(result.getType(), maxBytes); !problem.empty()) {
        op->emitError() << "result " << result.getResultNumber() << " " << problem;
        failedAny = true;
        return WalkResult::interrupt();
      }
    return WalkResult::advance();
  });
  return failure(failedAny);
}

} // namespace kiln
