//===- ToolSupport.h - what the runtime-only CLI tools share ----*- C++ -*-===//
//
// kiln-run and kiln-generate load compiled models (.kiln, .so) and compile
// .onnx / kiln .mlir ones first with the kiln-compile beside them, into a
// temporary folder that goes when they exit. No MLIR here: the tools link the
// runtime only.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_RUNTIME_TOOLS_TOOLSUPPORT_H
#define KILN_RUNTIME_TOOLS_TOOLSUPPORT_H

#include <string>
#include <vector>

namespace kiln::tools {

bool endsWith(const std::string &s, const char *suffix);

/// The folder this executable lives in.
std::string selfDir();

/// A tool of kiln's beside this one, or "" when it is not there.
std::string sibling(const char *name);

/// Runs `args` (args[0] a path) and waits; its stderr and stdout pass
/// through. The exit code, 128 + the signal, or -1 when it could not start.
int spawn(const std::vector<std::string> &args);

/// A model ready to load: `path` is the artifact (the model itself when it is
/// compiled; else a temporary one, removed with this object).
struct LoadableModel {
  std::string path, temporaryDir;
  LoadableModel() = default;
  LoadableModel(const LoadableModel &) = delete;
  LoadableModel &operator=(const LoadableModel &) = delete;
  ~LoadableModel();
};

/// `model` ready to load by `tool` (its name, for messages): a compiled one
/// as it is; an .onnx or .mlir one compiled by the kiln-compile beside the
/// tool with `compileArgs` (cubins too when `cuda`). False after printing
/// "TOOL: error: ..." (kiln-compile prints its own errors).
bool prepareModel(const char *tool, const std::string &model, bool cuda,
                  const std::vector<std::string> &compileArgs, LoadableModel &out);

} // namespace kiln::tools

#endif // KILN_RUNTIME_TOOLS_TOOLSUPPORT_H
