//===- Matching.cpp - what the op-chain fusion passes share ----------------===//

#include "passes/Matching.h"

#include "mlir/IR/BuiltinTypes.h"
#include "mlir/Interfaces/InferTypeOpInterface.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

using namespace mlir;

namespace kiln {

Operation *createInferred(OpBuilder &b, Location location, StringRef name, ValueRange operands,
                          ArrayRef<NamedAttribute> attributes, Type expected) {
  OperationState state(location, name);
  state.addOperands(operands);
  state.addAttributes(attributes);
  // The op's Properties are filled from the attributes when it is created:
  // infer from a created op, as the importer does.
  state.addTypes(NoneType::get(b.getContext()));
  Operation *op = b.create(state);
  auto infer = dyn_cast<InferTypeOpInterface>(op);
  SmallVector<Type> types;
  if (!infer ||
      failed(infer.inferReturnTypes(b.getContext(), std::nullopt, op->getOperands(),
                                    op->getRawDictionaryAttrs(), op->getPropertiesStorage(),
                                    op->getRegions(), types)) ||
      types.size() != 1 || (expected && types.front() != expected)) {
    op->erase();
    return nullptr;
  }
  op->getResult(0).setType(types.front());
  return op;
}

void eraseUnreadProducers(Value v) {
  SmallVector<Operation *> work;
  if (Operation *op = v ? v.getDefiningOp() : nullptr)
    work.push_back(op);
  while (!work.empty()) {
    Operation *op = work.pop_back_val();
    if (!isOpTriviallyDead(op))
      continue;
    SmallVector<Value> operands(op->getOperands());
    op->erase();
    for (Value operand : operands)
      if (Operation *def = operand.getDefiningOp())
        work.push_back(def);
  }
}

} // namespace kiln
