//===- Roofline.h - predicted step times on an H200 -------------*- C++ -*-===//
//
// kiln-compile --report's `roofline`: per top-level step of the plan, in
// execution order, the bytes it must move (its inputs read once, its result
// written once), the floating-point operations it must do, and a predicted
// time on an H200: a launch, plus the larger of the bytes at the memory
// bandwidth and the operations at the peak rate the step's unit reaches.
// docs/performance.md gives the figures and what the model leaves out.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_DRIVER_ROOFLINE_H
#define KILN_DRIVER_ROOFLINE_H

#include "kiln/artifact/Plan.h"

#include "llvm/Support/JSON.h"

namespace kiln {

/// The roofline of `plan`'s top-level steps under `symbols` (a step whose
/// sizes depend on a symbol only the call binds has null figures).
llvm::json::Object rooflineReport(const artifact::Plan &plan, const artifact::Bindings &symbols);

} // namespace kiln

#endif // KILN_DRIVER_ROOFLINE_H
