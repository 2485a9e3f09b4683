//===- StepBoundSymbols.h - symbols a step binds at run time ------*- C++ -*-===//
//
// kiln-name-unknown-dims names the dims only data decides (a NonZero's count,
// what NonMaxSuppression keeps) with symbols a step binds as the call runs.
// Guards are checked when a call starts, before those exist, so no guard can
// state a fact about them: a shape function must not assume one (a slice's
// end inside such a dim, as keep[:300] after NonMaxSuppression would need),
// and leaves the dim unknown for the op's own data to decide instead.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_IR_KILN_STEPBOUNDSYMBOLS_H
#define KILN_IR_KILN_STEPBOUNDSYMBOLS_H

#include "ir/Kiln/SymbolicDims.h"

namespace kiln {

/// Marks `symbol` (a symbol dim) as bound by a step in its context.
void markStepBound(DimExpr symbol);

/// Whether `dim` involves a symbol marked step-bound in its context.
bool involvesStepBound(DimExpr dim);

} // namespace kiln

#endif // KILN_IR_KILN_STEPBOUNDSYMBOLS_H
