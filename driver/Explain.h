//===- Explain.h - what kiln-compile --explain prints, from a report -*- C++ -*-===//
//
// The lines `kiln-compile --explain` prints for a compiled model, from its
// artifact's report: graph breaks, size reads, quantized ops left in float,
// guards, and the count of each. kiln-compile prints them; libkiln_jit hands
// them to Python (kiln.torch.explain) through kiln_jit_explain_memory.
//
//===----------------------------------------------------------------------===//
#ifndef KILN_DRIVER_EXPLAIN_H
#define KILN_DRIVER_EXPLAIN_H
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/JSON.h"
#include <string>
namespace kiln {
/// One graph break of a report's "graph_breaks", as one line (no newline):
/// "MODEL: at 'NODE': graph break: OP (STEP step): WHY; COST" ("error: graph
/// break" when `asError`, as --strict prints it).
std::string graphBreakLine(const llvm::json::Value &graphBreak, llvm::StringRef model, bool asError);
/// Every --explain line of `report`, each ending in a newline.
std::string explainText(const llvm::json::Object &report, llvm::StringRef model);
} // namespace kiln
#endif // KILN_DRIVER_EXPLAIN_H
