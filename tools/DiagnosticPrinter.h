//===- DiagnosticPrinter.h - one-line errors for kiln's tools ---*- C++ -*-===//
//
// kiln's tools print each error as one line, `<where>: error: <message>`, where
// <where> names the file and, for a node of a model, the node. Notes attached to a
// diagnostic are folded into the same line.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_TOOLS_DIAGNOSTICPRINTER_H
#define KILN_TOOLS_DIAGNOSTICPRINTER_H

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/Location.h"
#include "mlir/IR/MLIRContext.h"
#include "llvm/Support/raw_ostream.h"

#include <string>
#include <vector>

namespace kiln {

/// Describes a location the way kiln's messages do: "model.onnx" or
/// "model.onnx: node 'Conv_3'".
inline std::string describeLocation(mlir::Location loc) {
  std::string out;
  if (auto name = llvm::dyn_cast<mlir::NameLoc>(loc)) {
    out = describeLocation(name.getChildLoc());
    if (!out.empty())
      out += ": ";
    return out + "at '" + name.getName().str() + "'";
  }
  if (auto file = llvm::dyn_cast<mlir::FileLineColLoc>(loc)) {
    out = file.getFilename().str();
    if (file.getLine() > 0)
      out += ":" + std::to_string(file.getLine()) + ":" + std::to_string(file.getColumn());
    return out;
  }
  if (auto fused = llvm::dyn_cast<mlir::FusedLoc>(loc))
    if (!fused.getLocations().empty())
      return describeLocation(fused.getLocations().front());
  return out;
}

/// Collects diagnostics and prints errors as single lines.
class OneLineDiagnostics {
public:
  explicit OneLineDiagnostics(mlir::MLIRContext &context, bool print = true)
      : handler(context.getDiagEngine().registerHandler(
            [this, print](mlir::Diagnostic &diag) {
              if (diag.getSeverity() != mlir::DiagnosticSeverity::Error)
                return mlir::success();
              std::string line = describeLocation(diag.getLocation());
              line += (line.empty() ? "" : ": ");
              line += "error: " + diag.str();
              for (const mlir::Diagnostic &note : diag.getNotes()) {
                // A note is context, not a dump: long ones are cut.
                std::string text = note.str();
                if (text.size() > kMaxNoteLength)
                  text = text.substr(0, kMaxNoteLength) + "...";
                line += " (" + text + ")";
              }
              for (char &c : line)
                if (c == '\n')
                  c = ' ';
              if (print)
                llvm::errs() << line << "\n";
              errors.push_back(line);
              return mlir::success();
            })),
        context(context) {
    // MLIR would attach the failing op, printed in full (a whole encoder's region
    // on one line); the location already names the file and node.
    context.printOpOnDiagnostic(false);
  }
  ~OneLineDiagnostics() { context.getDiagEngine().eraseHandler(handler); }

  const std::vector<std::string> &all() const { return errors; }

private:
  static constexpr size_t kMaxNoteLength = 200;
  mlir::DiagnosticEngine::HandlerID handler;
  mlir::MLIRContext &context;
  std::vector<std::string> errors;
};

} // namespace kiln

#endif // KILN_TOOLS_DIAGNOSTICPRINTER_H
