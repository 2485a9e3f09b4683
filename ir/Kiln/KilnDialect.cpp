//===- KilnDialect.cpp - dialect registration and the symbol table --------===//

#include "ir/Kiln/KilnDialect.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/DialectImplementation.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/TypeSwitch.h"

#include <mutex>

using namespace mlir;
using namespace kiln;

#include "ir/Kiln/KilnDialect.cpp.inc"
#include "ir/Kiln/KilnEnums.cpp.inc"

#define GET_ATTRDEF_CLASSES
#include "ir/Kiln/KilnAttrs.cpp.inc"

/// Symbol names of one MLIRContext. Positions are stable for the context's lifetime.
struct KilnDialect::SymbolTable {
  std::mutex mutex;
  std::vector<std::string> names;
  llvm::StringMap<unsigned> positions;
};

void KilnDialect::initialize() {
  symbols = std::make_unique<SymbolTable>();
  registerAttributes();
  registerOps();
}

void KilnDialect::registerAttributes() {
  addAttributes<
#define GET_ATTRDEF_LIST
#include "ir/Kiln/KilnAttrs.cpp.inc"
      >();
}

unsigned KilnDialect::getOrCreateSymbol(StringRef name) {
  std::lock_guard<std::mutex> lock(symbols->mutex);
  auto [it, inserted] = symbols->positions.try_emplace(name, symbols->names.size());
  if (inserted)
    symbols->names.push_back(name.str());
  return it->second;
}

StringRef KilnDialect::getSymbolName(unsigned position) {
  std::lock_guard<std::mutex> lock(symbols->mutex);
  if (position >= symbols->names.size())
    return "<unknown symbol>";
  // std::string storage in a vector may move; StringMap keys do not.
  return symbols->positions.find(symbols->names[position])->first();
}

unsigned KilnDialect::createFreshSymbol(StringRef hint) {
  std::lock_guard<std::mutex> lock(symbols->mutex);
  std::string base = hint.empty() ? std::string("s") : hint.str();
  for (unsigned suffix = 0;; ++suffix) {
    std::string name = suffix == 0 && !hint.empty() ? base : base + std::to_string(suffix);
    if (symbols->positions.count(name))
      continue;
    unsigned position = symbols->names.size();
    symbols->positions[name] = position;
    symbols->names.push_back(name);
    return position;
  }
}

Operation *KilnDialect::materializeConstant(OpBuilder &builder, Attribute value,
                                            Type type, Location loc) {
  if (auto dims = dyn_cast<DimsAttr>(value)) {
    if (!dims.isFullyKnown())
      return nullptr;
    return SymbolicConstantOp::create(builder, loc, type, dims);
  }
  if (auto elements = dyn_cast<ElementsAttr>(value)) {
    if (elements.getType() != type)
      return nullptr;
    return ConstantOp::create(builder, loc, type, elements);
  }
  return nullptr;
}

namespace kiln {

bool areRefinementCompatible(TypeRange inferred, TypeRange declared) {
  if (inferred.size() != declared.size())
    return false;
  for (auto [i, d] : llvm::zip(inferred, declared)) {
    auto it = dyn_cast<RankedTensorType>(i), dt = dyn_cast<RankedTensorType>(d);
    if (!it || !dt) {
      if (i != d)
        return false;
      continue;
    }
    if (it.getElementType() != dt.getElementType() || it.getRank() != dt.getRank())
      return false;
    // Only two different sizes contradict each other. Two different symbolic
    // expressions may still be equal (`(a * b) floordiv 2` and `a * (b floordiv 2)`
    // when b is even); the declared one stands as an assumption to guard.
    for (auto [a, b] : llvm::zip(getSymShape(it), getSymShape(dt))) {
      auto ca = getConstantDimValue(a), cb = getConstantDimValue(b);
      if (ca && cb && *ca != *cb)
        return false;
      if ((ca && isSymbolicDim(b)) || (cb && isSymbolicDim(a)))
        return false; // a size against a symbol: the type's static dims disagree
    }
  }
  return true;
}

std::string nodeNameOf(Location loc) {
  if (auto name = dyn_cast<NameLoc>(loc))
    return name.getName().str();
  if (auto fused = dyn_cast<FusedLoc>(loc))
    for (Location inner : fused.getLocations())
      if (std::string n = nodeNameOf(inner); !n.empty())
        return n;
  return "";
}

Precision precisionOf(mlir::Operation *func) {
  auto attr = func ? func->getAttrOfType<PrecisionAttr>(kPrecisionAttr) : PrecisionAttr();
  return attr ? attr.getValue() : Precision::fp32;
}

} // namespace kiln
