//===- Version.h - every kiln tool's --version ------------------*- C++ -*-===//

#ifndef KILN_TOOLS_VERSION_H
#define KILN_TOOLS_VERSION_H

#include "kiln/version.h"

#include "llvm/Support/CommandLine.h"
#include "llvm/Support/raw_ostream.h"

namespace kiln {

/// Makes `--version` print "TOOL VERSION" (the project's version, which the
/// runtime and the artifacts' producer field report too). Call before parsing.
inline void setVersionPrinter(const char *tool) {
  static const char *name;
  name = tool;
  llvm::cl::SetVersionPrinter(
      [](llvm::raw_ostream &os) { os << name << " " << KILN_VERSION << "\n"; });
}

} // namespace kiln

#endif // KILN_TOOLS_VERSION_H
