//===- Explain.cpp - what kiln-compile --explain prints, from a report ----===//
#include "driver/Explain.h"
#include "llvm/ADT/Twine.h"
#include "llvm/Support/raw_ostream.h"

using llvm::StringRef;
using llvm::json::Array;
using llvm::json::Object;

namespace kiln {
namespace {
std::string at(StringRef model, const Object &o) {
  std::string node = o.getString("node").value_or("").str();
  return model.str() + (node.empty() ? "" : ": at '" + node + "'");
}
} // namespace

std::string graphBreakLine(const llvm::json::Value &graphBreak, StringRef model, bool asError) {
  const Object &o = *graphBreak.getAsObject();
  return at(model, o) + (asError ? ": error: graph break: " : ": graph break: ") +
         o.getString("op").value_or("").str() + " (" + o.getString("step").value_or("").str() +
         " step): " + o.getString("why").value_or("").str() + "; " +
         o.getString("cost").value_or("").str();
}

std::string explainText(const Object &report, StringRef model) {
  std::string text;
  llvm::raw_string_ostream os(text);
  const Array *breaks = report.getArray("graph_breaks");
  if (breaks)
    for (const llvm::json::Value &b : *breaks)
      os << graphBreakLine(b, model, /*asError=*/false) << "\n";
  // Size reads: no host compute (--strict accepts them), but each is a
  // synchronization on CUDA, so they are listed as well.
  const Array *reads = report.getArray("size_reads");
  if (reads)
    for (const llvm::json::Value &r : *reads) {
      const Object &o = *r.getAsObject();
      std::string symbols;
      if (const Array *list = o.getArray("symbols"))
        for (const llvm::json::Value &s : *list)
          symbols += (symbols.empty() ? "" : ", ") + s.getAsString().value_or("").str();
      os << at(model, o) << ": size read: " << o.getString("op").value_or("") << " (binds "
         << symbols << "): " << o.getString("why").value_or("") << "; "
         << o.getString("cost").value_or("") << "\n";
    }
  // Q/DQ matmuls and convs that stay float arithmetic, not int8 (or FP8)
  // library calls.
  if (const Array *kept = report.getArray("float_quantized_ops"))
    for (const llvm::json::Value &k : *kept) {
      const Object &o = *k.getAsObject();
      std::string call = o.getString("call").value_or("").str();
      os << at(model, o) << ": quantized " << o.getString("op").value_or("") << " not an "
         << (call.empty() ? "int8" : call) << " call: " << o.getString("why").value_or("") << "\n";
    }
  // Guards: what every call checks beyond the inputs' own dims.
  const Array *guards = report.getArray("guards");
  if (guards)
    for (const llvm::json::Value &g : *guards) {
      const Object &o = *g.getAsObject();
      os << model << ": guard: " << o.getString("guard").value_or("") << " ("
         << o.getString("reason").value_or("") << ")";
      // Over sizes steps bind: checked where they are, not when the call starts.
      if (std::optional<StringRef> checked = o.getString("checked"))
        os << "; checked " << *checked;
      os << "\n";
    }
  const Array *kernels = report.getArray("kernels");
  const Array *library = report.getArray("library_calls");
  // library_calls lists every host-kind step; the GPU library's are these.
  size_t libraryCalls = 0;
  if (library)
    for (const llvm::json::Value &l : *library) {
      StringRef op = l.getAsObject()->getString("op").value_or("");
      libraryCalls += op == "kiln.matmul" || op == "kiln.conv" || op == "kiln.conv_transpose" ||
                      op == "kiln.pool";
    }
  os << model << ": " << (kernels ? kernels->size() : 0) << " generated kernels, " << libraryCalls
     << " library calls, " << (breaks ? breaks->size() : 0) << " graph breaks, "
     << (reads ? reads->size() : 0) << " size reads, " << (guards ? guards->size() : 0)
     << " guards\n";
  return text;
}
} // namespace kiln
