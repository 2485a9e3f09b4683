//===- TensorFiles.h - tensors in .pb and .npy files, without MLIR -*- C++ -*-===//
//
// What the runtime-only tools (kiln-run, kiln-check-artifacts) read and write:
// an ONNX TensorProto (.pb) read straight from the protobuf wire format (no
// protobuf library, no ONNX headers) and numpy's .npy. Both readers are bounded:
// every length, dim and element count is checked before anything is allocated,
// so a hostile or damaged file is one error naming it, never a crash or a huge
// allocation.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_RUNTIME_TOOLS_TENSORFILES_H
#define KILN_RUNTIME_TOOLS_TENSORFILES_H

#include "kiln/reference/Tensor.h"

#include <map>
#include <string>
#include <vector>

namespace kiln {

struct NamedTensor {
  ref::Tensor tensor;
  std::string name; ///< the TensorProto's name; empty for .npy
};

/// Reads a .pb TensorProto or a .npy file (by extension). Errors read
/// "FILE: error: what".
absl::StatusOr<NamedTensor> readTensorFile(const std::string &path);

/// The contents of a .npy file, parsed; errors say what, without a file name.
absl::StatusOr<ref::Tensor> parseNpy(const std::string &data);

/// The contents of a TensorProto (.pb), parsed from the protobuf wire format;
/// errors say what, without a file name.
absl::StatusOr<NamedTensor> parseTensorProto(const std::string &data);

/// Writes `t` as a TensorProto named `name` (sub-byte types packed as ONNX does);
/// errors read "FILE: error: what".
absl::Status writeTensorProto(const ref::Tensor &t, const std::string &name,
                              const std::string &path);

/// Writes `t` as a numpy .npy file (little-endian; types numpy has); errors
/// read "FILE: error: what".
absl::Status writeNpy(const ref::Tensor &t, const std::string &path);

/// A short summary for printing: "f32[2, 3] [1, 2, 3, ...]".
std::string summarizeTensor(const ref::Tensor &t, size_t maxValues = 8);

/// `--input NAME=FILE` specs as a map from name to file; errors name the bad
/// spec ("--input 'x' is not NAME=FILE", "input 'x' is given twice").
absl::StatusOr<std::map<std::string, std::string>>
parseInputSpecs(const std::vector<std::string> &specs);

/// The file given for each of a model's inputs (`names`, in order); errors name
/// an input the model does not have (with the ones it has) or one not given.
absl::StatusOr<std::vector<std::string>>
matchInputFiles(const std::map<std::string, std::string> &files,
                const std::vector<std::string> &names);

/// What kiln-run and kiln-reference do with a model's outputs: print
/// "NAME: summary" lines when `print`, and write DIR/output_K.pb (DIR created)
/// when `outputDir` is set. `names[k]` names output k (else "outputK").
absl::Status emitOutputs(const std::vector<ref::Tensor> &outputs,
                         const std::vector<std::string> &names, const std::string &outputDir,
                         bool print);

} // namespace kiln

#endif // KILN_RUNTIME_TOOLS_TENSORFILES_H
