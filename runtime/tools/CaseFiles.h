//===- CaseFiles.h - a compiled test case as plain files --------*- C++ -*-===//
//
// kiln-conformance --export writes each ONNX node test data set it compiles as a
// folder: model.kiln, input_K.bin and output_K.bin (raw element bytes), and
// case.txt naming their dtypes and dims and the tolerances:
//
//   rtol 0.001
//   atol 1e-07
//   input f32 3 4
//   output f32 3 4
//
// kiln-check-artifacts reads them back with the runtime alone, which is how the
// GPU machine (no MLIR there) runs the conformance suite on CUDA.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_RUNTIME_TOOLS_CASEFILES_H
#define KILN_RUNTIME_TOOLS_CASEFILES_H

#include "kiln/reference/Tensor.h"

#include <string>
#include <vector>

namespace kiln {

struct CaseSet {
  double rtol = 1e-3, atol = 1e-7;
  std::vector<ref::Tensor> inputs, outputs;
};

/// Writes `set` and the artifact bytes into folder `dir` (created).
absl::Status writeCaseSet(const std::string &dir, const std::string &artifact,
                          const CaseSet &set);

/// Reads the case.txt and tensors of folder `dir` (model.kiln stays on disk).
absl::StatusOr<CaseSet> readCaseSet(const std::string &dir);

} // namespace kiln

#endif // KILN_RUNTIME_TOOLS_CASEFILES_H
