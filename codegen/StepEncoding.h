//===- StepEncoding.h - kiln ops as the artifact's typed steps --*- C++ -*-===//
//
// The one place that maps the IR onto the schema's step tables
// (runtime/schema/kiln_artifact.fbs): every op an artifact runs outside a
// generated kernel (library ops, graph breaks, shape_of), with each ODS enum
// mapped value by value onto the schema's and each ODS default written out, so
// renaming an attribute or reordering an enum in ODS cannot change what an
// artifact means. Kernel launches and symbolic constants, which need the
// artifact writer's tables, are written by codegen/Artifact.cpp.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_CODEGEN_STEPENCODING_H
#define KILN_CODEGEN_STEPENCODING_H

#include "kiln/reference/Tensor.h"
#include "kiln/schema/kiln_artifact_generated.h"

#include "mlir/IR/Operation.h"

namespace kiln {

/// The reference dtype of an MLIR element type (the schema's DType lists the
/// same values in order), or nullopt when it has none.
std::optional<ref::DType> toRefType(mlir::Type elementType);

/// Whether `op` runs as a host step of its own in an artifact (a library op such
/// as matmul, or a graph break such as top_k).
bool isHostStepOp(mlir::Operation *op);

struct EncodedStep {
  schema::StepOp type = schema::StepOp::NONE;
  flatbuffers::Offset<void> table;
};

/// The step table of a host step op (isHostStepOp) or shape_of; a diagnostic at
/// `op` when it has no encoding.
mlir::FailureOr<EncodedStep> encodeStep(mlir::Operation *op,
                                        flatbuffers::FlatBufferBuilder &builder);

} // namespace kiln

#endif // KILN_CODEGEN_STEPENCODING_H
