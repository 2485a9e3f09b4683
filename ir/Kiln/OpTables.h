//===- OpTables.h - kiln ops onto the rows of the op tables -----*- C++ -*-===//
//
// The op tables (runtime/ops/include/kiln/ops/*.def) name each row's ODS class;
// this expands them for the compiler: the function of an op class at compile time
// (UnaryFnOf<ErfOp>), and of an operation at run time (unaryFnOf(op)). An ODS
// unary or binary op without a row fails to build (UnaryFnOf has no definition for
// it), and so does a row naming a class ODS does not declare.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_IR_KILN_OPTABLES_H
#define KILN_IR_KILN_OPTABLES_H

#include "ir/Kiln/KilnDialect.h"
#include "kiln/ops/Elementwise.h"

#include <optional>

namespace kiln {

template <typename Op> struct UnaryFnOf;
template <typename Op> struct BinaryFnOf;

#define KILN_UNARY(Fn, Code, OpClass, ...)                                                         \
  template <> struct UnaryFnOf<OpClass> {                                                          \
    static constexpr ops::UnaryFn value = ops::UnaryFn::Fn;                                        \
  };
#define KILN_BINARY(Fn, Code, OpClass, ...)                                                        \
  template <> struct BinaryFnOf<OpClass> {                                                         \
    static constexpr ops::BinaryFn value = ops::BinaryFn::Fn;                                      \
  };
#include "kiln/ops/ElementwiseOps.def"

/// The table function of a unary (binary) elementwise op, or nullopt for any
/// other op.
inline std::optional<ops::UnaryFn> unaryFnOf(mlir::Operation *op) {
#define KILN_UNARY(Fn, Code, OpClass, ...)                                                         \
  if (mlir::isa<OpClass>(op))                                                                      \
    return ops::UnaryFn::Fn;
#include "kiln/ops/ElementwiseOps.def"
  return std::nullopt;
}
inline std::optional<ops::BinaryFn> binaryFnOf(mlir::Operation *op) {
#define KILN_BINARY(Fn, Code, OpClass, ...)                                                        \
  if (mlir::isa<OpClass>(op))                                                                      \
    return ops::BinaryFn::Fn;
#include "kiln/ops/ElementwiseOps.def"
  return std::nullopt;
}

} // namespace kiln

#endif // KILN_IR_KILN_OPTABLES_H
