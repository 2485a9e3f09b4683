//===- InitAll.h - every dialect and pass a kiln tool knows -----*- C++ -*-===//
//
// The one place that lists what kiln registers. Tools call these two functions;
// nothing else hand-registers dialects or passes.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_DRIVER_INITALL_H
#define KILN_DRIVER_INITALL_H

#include "ir/Kiln/KilnDialect.h"
#include "passes/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/Transforms/Passes.h"

namespace kiln {

/// kiln and the upstream dialects its pipeline produces or consumes.
inline void registerAllDialects(mlir::DialectRegistry &registry) {
  registry.insert<KilnDialect, mlir::func::FuncDialect, mlir::arith::ArithDialect,
                  mlir::math::MathDialect, mlir::tensor::TensorDialect,
                  mlir::linalg::LinalgDialect, mlir::scf::SCFDialect>();
}

/// kiln's passes and pipelines, plus the upstream passes its pipelines use.
inline void registerAllPasses() {
  registerKilnPasses();
  registerKilnPipelines();
  mlir::registerCanonicalizerPass();
  mlir::registerCSEPass();
  mlir::registerSymbolDCEPass();
  mlir::registerInlinerPass();
}

} // namespace kiln

#endif // KILN_DRIVER_INITALL_H
