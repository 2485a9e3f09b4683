//===- kiln-import-suite.cpp - import every ONNX node test in one process ---===//
//
//   kiln-import-suite [--all-dynamic] [--json FILE] [--expected FILE [--update]] PATH...
//
// PATH is a test case (a folder with model.onnx) or a folder of them. A case passes
// when the model imports, verifies, and the function's static result dims match the
// case's expected outputs. Each case prints one line, PASS, FAIL with the first
// error, or SKIP when kiln reports it
// out of scope (sequence, optional, string, map types; training and random ops);
// the run ends with "N passed, M failed, K skipped". With --expected, a case that
// passes but is not listed, or is listed but no longer passes, fails the run, so a
// regression fails CI and an improvement is recorded deliberately (--update
// rewrites the file).
//
//===----------------------------------------------------------------------===//

#include "frontend/onnx/OnnxImporter.h"
#include "tools/DiagnosticPrinter.h"
#include "tools/InitAll.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"

#include <onnx/onnx_pb.h>

#include <algorithm>
#include <fstream>
#include <set>

using namespace llvm;

static cl::list<std::string> paths(cl::Positional, cl::desc("<case or folder>..."),
                                   cl::OneOrMore);
static cl::opt<std::string> jsonPath("json", cl::desc("Write per-case results as JSON"));
static cl::opt<std::string> expectedPath("expected",
                                         cl::desc("File listing the cases expected to pass"));
static cl::opt<bool> update("update", cl::desc("Rewrite --expected from this run"));
static cl::opt<bool> allDynamic("all-dynamic", cl::desc("Import every input dim as symbolic"));
static cl::opt<bool> quiet("quiet", cl::desc("Print only failures and the summary"));
static cl::opt<bool> pipeline("pipeline",
                              cl::desc("Also run kiln's graph pipeline on each imported model"));

namespace {
/// Reasons that put a case out of scope: the importer's deliberate refusals.
bool isOutOfScope(StringRef error) {
  static const char *reasons[] = {
#define ONNX_OP(name, converter, maxVersion)
#define ONNX_UNSUPPORTED(name, reason) reason,
#include "frontend/onnx/OnnxOps.def"
#undef ONNX_OP
#undef ONNX_UNSUPPORTED
      "is not a tensor (sequence, map and optional inputs are unsupported)",
      "element type STRING",
      "ops of domain 'ai.onnx.preview.training'",
      "training-mode",
  };
  return llvm::any_of(reasons, [&](const char *r) { return error.contains(r); });
}

struct ModelSummary {
  std::vector<std::string> ops;    ///< op types, for the coverage report
  std::vector<std::string> inputs; ///< graph inputs that are not initializers
};

ModelSummary summarize(StringRef modelPath) {
  ModelSummary summary;
  std::set<std::string> ops, initializers;
  auto buffer = MemoryBuffer::getFile(modelPath);
  onnx::ModelProto model;
  if (!buffer || !model.ParseFromArray((*buffer)->getBufferStart(), (*buffer)->getBufferSize()))
    return summary;
  for (const auto &node : model.graph().node())
    ops.insert(node.domain().empty() ? node.op_type() : node.domain() + "." + node.op_type());
  for (const auto &init : model.graph().initializer())
    initializers.insert(init.name());
  for (const auto &input : model.graph().input())
    if (!initializers.count(input.name()))
      summary.inputs.push_back(input.name());
  summary.ops.assign(ops.begin(), ops.end());
  return summary;
}

/// Compares the imported function's result types with the dims of the case's
/// expected outputs (test_data_set_0/output_K.pb): a static or constant dim that
/// differs is a shape-inference bug. Returns the first mismatch, or "".
std::string checkResultShapes(mlir::ModuleOp module, StringRef dir) {
  auto funcs = module.getOps<mlir::func::FuncOp>();
  if (funcs.empty())
    return "";
  mlir::func::FuncOp func = *funcs.begin();
  for (unsigned k = 0; k < func.getNumResults(); ++k) {
    SmallString<256> path(dir);
    sys::path::append(path, "test_data_set_0", "output_" + std::to_string(k) + ".pb");
    auto buffer = MemoryBuffer::getFile(path);
    onnx::TensorProto tensor;
    if (!buffer || !tensor.ParseFromArray((*buffer)->getBufferStart(),
                                          (int)(*buffer)->getBufferSize()))
      continue;
    auto type = llvm::dyn_cast<mlir::RankedTensorType>(func.getResultTypes()[k]);
    if (!type)
      continue;
    std::string got, want;
    raw_string_ostream gs(got), ws(want);
    gs << type;
    ws << "[";
    llvm::interleaveComma(tensor.dims(), ws);
    ws << "]";
    if (type.getRank() != tensor.dims_size())
      return "result " + std::to_string(k) + " has type " + got + " but the test data is " + want;
    for (int64_t i = 0; i < type.getRank(); ++i)
      if (!type.isDynamicDim(i) && type.getDimSize(i) != tensor.dims(i))
        return "result " + std::to_string(k) + " has type " + got + " but the test data is " +
               want;
  }
  return "";
}

void collectCases(StringRef path, std::vector<std::string> &cases) {
  SmallString<256> model(path);
  sys::path::append(model, "model.onnx");
  if (sys::fs::exists(model)) {
    cases.push_back(path.str());
    return;
  }
  std::error_code ec;
  for (sys::fs::directory_iterator it(path, ec), end; it != end && !ec; it.increment(ec))
    if (sys::fs::is_directory(it->path()))
      collectCases(it->path(), cases);
}
} // namespace

int main(int argc, char **argv) {
  InitLLVM init(argc, argv);
  cl::ParseCommandLineOptions(argc, argv, "imports ONNX node tests with kiln\n");

  std::vector<std::string> cases;
  for (const std::string &p : paths)
    collectCases(p, cases);
  std::sort(cases.begin(), cases.end());

  mlir::DialectRegistry registry;
  kiln::registerAllDialects(registry);

  json::Array results;
  std::set<std::string> passed;
  int pass = 0, fail = 0, skip = 0;
  for (const std::string &dir : cases) {
    std::string name = sys::path::filename(dir).str();
    SmallString<256> model(dir);
    sys::path::append(model, "model.onnx");
    // Inputs an op needs as compile-time values (Reduce axes given as inputs, ...)
    // may be bound to the case's first data set, as a deployment would bind them.
    ModelSummary summary = summarize(model);
    kiln::onnx_import::ImportOptions options;
    options.allDynamic = allDynamic;
    for (auto [k, input] : llvm::enumerate(summary.inputs)) {
      SmallString<256> data(dir);
      sys::path::append(data, "test_data_set_0", "input_" + std::to_string(k) + ".pb");
      if (sys::fs::exists(data))
        options.constantInputs[input] = data.str().str();
    }
    // A context per case: symbols and constants of one model never leak into the next.
    mlir::MLIRContext context(registry);
    kiln::OneLineDiagnostics diagnostics(context, /*print=*/false);
    auto module = kiln::onnx_import::importOnnxFile(context, model, options);
    std::string status, reason;
    if (module)
      reason = checkResultShapes(*module, dir);
    if (module && reason.empty() && pipeline) {
      // The graph pipeline must keep every imported model valid.
      mlir::PassManager pm(&context);
      kiln::buildGraphPipeline(pm, kiln::GraphPipelineOptions());
      if (failed(pm.run(*module)))
        reason = diagnostics.all().empty() ? "the graph pipeline failed"
                                           : "graph pipeline: " + diagnostics.all().front();
    }
    if (module && !reason.empty()) {
      status = "fail";
      ++fail;
      outs() << "FAIL " << name << ": " << reason << "\n";
    } else if (module) {
      status = "pass";
      ++pass;
      passed.insert(name);
      if (!quiet)
        outs() << "PASS " << name << "\n";
    } else {
      reason = diagnostics.all().empty() ? "import failed without a diagnostic"
                                         : diagnostics.all().front();
      bool outOfScope = isOutOfScope(reason);
      status = outOfScope ? "skip" : "fail";
      ++(outOfScope ? skip : fail);
      if (!quiet || !outOfScope)
        outs() << (outOfScope ? "SKIP " : "FAIL ") << name << ": " << reason << "\n";
    }
    json::Array ops, bound;
    for (const std::string &op : summary.ops)
      ops.push_back(op);
    if (module)
      for (auto func : module->getOps<mlir::func::FuncOp>())
        for (unsigned i = 0; i < func.getNumArguments(); ++i)
          if (func.getArgAttr(i, "kiln.bound_constant"))
            bound.push_back(func.getArgAttrOfType<mlir::StringAttr>(i, "kiln.name").str());
    results.push_back(json::Object{{"name", name},
                                   {"status", status},
                                   {"reason", reason},
                                   {"ops", std::move(ops)},
                                   {"bound_inputs", std::move(bound)}});
  }

  if (!jsonPath.empty()) {
    std::error_code ec;
    raw_fd_ostream os(jsonPath, ec);
    if (ec) {
      errs() << "kiln-import-suite: error: cannot write " << jsonPath << ": " << ec.message()
             << "\n";
      return 1;
    }
    os << formatv("{0:2}", json::Value(std::move(results))) << "\n";
  }

  int status = 0;
  if (!expectedPath.empty()) {
    if (update) {
      std::error_code ec;
      raw_fd_ostream os(expectedPath, ec);
      for (const std::string &c : passed)
        os << c << "\n";
      outs() << "updated " << expectedPath << " (" << passed.size() << " cases)\n";
    } else {
      std::set<std::string> expected;
      std::ifstream in(expectedPath);
      for (std::string line; std::getline(in, line);)
        if (!line.empty() && line[0] != '#')
          expected.insert(line);
      for (const std::string &c : expected)
        if (!passed.count(c)) {
          outs() << "REGRESSION " << c << " was expected to import\n";
          status = 1;
        }
      for (const std::string &c : passed)
        if (!expected.count(c)) {
          outs() << "IMPROVEMENT " << c << " now imports; record it with --update\n";
          status = 1;
        }
    }
  }
  outs() << pass << " passed, " << fail << " failed, " << skip << " skipped\n";
  return status;
}
