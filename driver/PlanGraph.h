//===- PlanGraph.h - a compiled plan as a Graphviz graph --------*- C++ -*-===//
//
// kiln-compile --graph FILE.dot|FILE.svg: the plan as people look at models in
// Netron. One node per step in execution order: generated kernels coloured by
// schedule with the ops each fuses, library calls (cuBLASLt/cuDNN's place),
// graph breaks (host round trips on CUDA) and shape steps marked; one node per
// input, weight and output; edges carry each value's type and, under --bind,
// its size in bytes.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_DRIVER_PLANGRAPH_H
#define KILN_DRIVER_PLANGRAPH_H

#include "kiln/artifact/Plan.h"
#include "kiln/artifact/StepWork.h"

#include "llvm/Support/JSON.h"

#include <string>

namespace kiln {

using artifact::isLibraryStep;

/// The DOT text of `plan`; `report` is the artifact writer's (kernels and the
/// ops they fuse), `symbols` the values sizes are shown for.
std::string planToDot(const artifact::Plan &plan, const llvm::json::Object &report,
                      const artifact::Bindings &symbols);

} // namespace kiln

#endif // KILN_DRIVER_PLANGRAPH_H
