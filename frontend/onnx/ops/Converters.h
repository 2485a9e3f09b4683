//===- Converters.h - helpers shared by the ONNX op converters --*- C++ -*-===//

#ifndef KILN_FRONTEND_ONNX_OPS_CONVERTERS_H
#define KILN_FRONTEND_ONNX_OPS_CONVERTERS_H

#include "frontend/onnx/NodeImporter.h"

namespace kiln::onnx_import {

/// Converters are declared once in OnnxOps.def; this declares each of them.
#define ONNX_OP(name, converter, maxVersion) mlir::LogicalResult converter(NodeImporter &n);
#define ONNX_UNSUPPORTED(name, reason)
#include "frontend/onnx/OnnxOps.def"
#undef ONNX_OP
#undef ONNX_UNSUPPORTED

/// Small builders that chain: each returns failure after a diagnostic.
mlir::FailureOr<mlir::Value> binary(NodeImporter &n, llvm::StringRef opName, mlir::Value a,
                                    mlir::Value b);
mlir::FailureOr<mlir::Value> unary(NodeImporter &n, llvm::StringRef opName, mlir::Value a);
mlir::FailureOr<mlir::Value> compare(NodeImporter &n, CompareDirection direction,
                                     mlir::Value a, mlir::Value b);
mlir::FailureOr<mlir::Value> select(NodeImporter &n, mlir::Value c, mlir::Value a,
                                    mlir::Value b);
mlir::FailureOr<mlir::Value> castTo(NodeImporter &n, mlir::Value v, mlir::Type element);
/// A 0-d constant of `like`'s element type.
mlir::Value scalarLike(NodeImporter &n, mlir::Value like, double value);
mlir::Type elementTypeOf(mlir::Value v);

/// Reshape through a target whose entries may be symbolic (from a DimsAttr-like
/// SymShape): emits a constant or a symbolic_constant for it.
mlir::FailureOr<mlir::Value> reshapeTo(NodeImporter &n, mlir::Value v,
                                       llvm::ArrayRef<DimExpr> dims);
/// A constant (or symbolic constant) 1-D i64 tensor of `dims`.
mlir::Value shapeConstant(NodeImporter &n, llvm::ArrayRef<DimExpr> dims);

/// Normalizes ONNX axes (negative allowed) against `rank`; error on out of range.
mlir::FailureOr<llvm::SmallVector<int64_t>> normalizeAxes(NodeImporter &n,
                                                          llvm::ArrayRef<int64_t> axes,
                                                          int64_t rank);

} // namespace kiln::onnx_import

#endif // KILN_FRONTEND_ONNX_OPS_CONVERTERS_H
