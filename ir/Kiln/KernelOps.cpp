//===- KernelOps.cpp - kiln.kernel ----------------------------------------===//

#include "ir/Kiln/KilnDialect.h"

using namespace mlir;

namespace kiln {

LogicalResult KernelOp::verify() {
  Block &body = getBody().front();
  if (body.getNumArguments() != getInputs().size())
    return emitOpError() << "the body takes " << body.getNumArguments()
                         << " arguments for " << getInputs().size() << " operands";
  for (auto [i, arg, input] : llvm::enumerate(body.getArguments(), getInputs()))
    if (arg.getType() != input.getType())
      return emitOpError() << "body argument " << i << " has type " << arg.getType()
                           << " but operand " << i << " is " << input.getType();
  auto yield = dyn_cast<YieldOp>(body.getTerminator());
  if (!yield)
    return emitOpError() << "the body must end in kiln.yield";
  if (yield.getValues().size() != getNumResults())
    return emitOpError() << "the body yields " << yield.getValues().size()
                         << " values for " << getNumResults() << " results";
  for (auto [i, v, r] : llvm::enumerate(yield.getValues(), getResults()))
    if (v.getType() != r.getType())
      return emitOpError() << "result " << i << " has type " << r.getType()
                           << " but the body yields " << v.getType();
  return success();
}

} // namespace kiln
