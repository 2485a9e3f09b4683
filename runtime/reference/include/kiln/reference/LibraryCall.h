//===- LibraryCall.h - library ops by name and attributes -------*- C++ -*-===//
//
// A library op (matmul, conv, pool, ...) as data: its kiln op name and its
// attributes under their ODS names. The compiler writes these into artifacts
// (codegen/Artifact.cpp) and the interpreter builds them from the IR, so both the
// runtime's host emulation and the interpreter run library ops through the one
// dispatch below. No MLIR here.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_REFERENCE_LIBRARYCALL_H
#define KILN_REFERENCE_LIBRARYCALL_H

#include "kiln/reference/Tensor.h"

#include <map>
#include <string>
#include <vector>

namespace kiln::ref {

/// An attribute value: integers (also bools and enums, as their ODS numbers) and
/// floats are one-element lists.
struct AttrValue {
  std::vector<int64_t> ints;
  std::vector<double> floats;
};

struct LibraryCall {
  std::string op; ///< "kiln.matmul"
  std::map<std::string, AttrValue> attrs;
};

/// True when `op` names a library op this dispatch runs.
bool isLibraryOp(const std::string &op);

/// Runs `call` on `inputs` (a missing optional operand is simply absent: optional
/// operands are trailing). Errors name the op and the attribute or input at fault.
absl::StatusOr<std::vector<Tensor>> runLibraryCall(const LibraryCall &call,
                                                   const std::vector<const Tensor *> &inputs);

} // namespace kiln::ref

#endif // KILN_REFERENCE_LIBRARYCALL_H
