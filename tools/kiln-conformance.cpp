//===- kiln-conformance.cpp - runs the ONNX backend node tests ------------===//
//
//   kiln-conformance [--backend reference|import] [--mode static|dynamic]
//                    [--json FILE] [--expected FILE [--update]] [--quiet] PATH...
//
// PATH is an ONNX backend test case (model.onnx + test_data_set_*/) or a folder of
// them. Each case prints one line, PASS, FAIL with the first mismatch, or SKIP with
// the reason; the run ends with `N passed, M failed, K skipped`.
//
// Backends: `reference` imports each case, runs kiln's graph pipeline and the
// reference interpreter on every data set and compares with the expected outputs
// under the ONNX runner's tolerances (rtol 1e-3, atol 1e-7, or the case's
// data.json); `import` only imports, runs the pipeline and checks the result
// shapes. `--mode dynamic` imports every input dim as symbolic.
//
//===----------------------------------------------------------------------===//

#include "interpreter/Interpreter.h"
#include "tools/InitAll.h"
#include "tools/DiagnosticPrinter.h"
#include "tools/LoadModel.h"
#include "tools/TensorIO.h"

#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"

#include <onnx/onnx_pb.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <set>

using namespace llvm;

static cl::OptionCategory category("kiln-conformance options");
static cl::list<std::string> paths(cl::Positional, cl::desc("<case or folder>..."),
                                   cl::OneOrMore, cl::cat(category));
static cl::opt<std::string> backend("backend",
                                    cl::desc("reference (run and compare) or import (import only)"),
                                    cl::init("reference"), cl::cat(category));
static cl::opt<std::string> mode("mode", cl::desc("static, or dynamic: every input dim symbolic"),
                                 cl::init("static"), cl::cat(category));
static cl::opt<std::string> jsonPath("json", cl::desc("Write per-case results as JSON"),
                                     cl::cat(category));
static cl::opt<std::string> expectedPath("expected",
                                         cl::desc("File listing the cases expected to pass"),
                                         cl::cat(category));
static cl::opt<bool> update("update", cl::desc("Rewrite --expected from this run"),
                            cl::cat(category));
static cl::opt<bool> quiet("quiet", cl::desc("Print only failures and the summary"),
                           cl::cat(category));

namespace {

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

struct CaseInfo {
  std::vector<std::string> ops;    ///< op types, for the coverage report
  std::vector<std::string> inputs; ///< graph inputs that are not initializers
  std::vector<std::string> outputs;
  std::vector<std::string> dataSets;
  double rtol = 1e-3, atol = 1e-7;
};

CaseInfo describeCase(StringRef dir) {
  CaseInfo info;
  SmallString<256> modelPath(dir);
  sys::path::append(modelPath, "model.onnx");
  std::set<std::string> ops, initializers;
  auto buffer = MemoryBuffer::getFile(modelPath);
  onnx::ModelProto model;
  if (buffer && model.ParseFromArray((*buffer)->getBufferStart(), (*buffer)->getBufferSize())) {
    for (const auto &node : model.graph().node())
      ops.insert(node.domain().empty() ? node.op_type() : node.domain() + "." + node.op_type());
    for (const auto &init : model.graph().initializer())
      initializers.insert(init.name());
    for (const auto &input : model.graph().input())
      if (!initializers.count(input.name()))
        info.inputs.push_back(input.name());
    for (const auto &output : model.graph().output())
      info.outputs.push_back(output.name());
  }
  info.ops.assign(ops.begin(), ops.end());
  std::error_code ec;
  for (sys::fs::directory_iterator it(dir, ec), end; it != end && !ec; it.increment(ec))
    if (sys::path::filename(it->path()).starts_with("test_data_set_"))
      info.dataSets.push_back(it->path());
  std::sort(info.dataSets.begin(), info.dataSets.end());
  SmallString<256> dataJson(dir);
  sys::path::append(dataJson, "data.json");
  if (auto json = MemoryBuffer::getFile(dataJson)) {
    if (Expected<json::Value> v = json::parse((*json)->getBuffer())) {
      if (const json::Object *o = v->getAsObject()) {
        if (auto r = o->getNumber("rtol"))
          info.rtol = *r;
        if (auto a = o->getNumber("atol"))
          info.atol = *a;
      }
    } else {
      consumeError(v.takeError());
    }
  }
  return info;
}

std::string formatValue(const kiln::ref::Tensor &t, int64_t i) {
  if (kiln::ref::isFloat(t.dtype()))
    return llvm::formatv("{0}", llvm::format("%.9g", t.getF(i))).str();
  return std::to_string(t.getI(i));
}

/// The first difference between an output and its expected value, or "".
std::string compareOutput(const kiln::ref::Tensor &got, const kiln::ref::Tensor &want,
                          double rtol, double atol, const std::string &what) {
  if (got.dtype() != want.dtype())
    return what + " is " + got.describe() + ", expected " + want.describe();
  if (got.shape() != want.shape())
    return what + " is " + got.describe() + ", expected " + want.describe();
  bool isF = kiln::ref::isFloat(got.dtype());
  for (int64_t i = 0; i < got.numel(); ++i) {
    bool ok;
    if (isF) {
      double g = got.getF(i), w = want.getF(i);
      if (std::isnan(w) || std::isnan(g))
        ok = std::isnan(w) && std::isnan(g);
      else if (std::isinf(w) || std::isinf(g))
        ok = g == w;
      else
        ok = std::fabs(g - w) <= atol + rtol * std::fabs(w);
    } else {
      ok = got.getI(i) == want.getI(i);
    }
    if (!ok)
      return what + " index " + std::to_string(i) + ": expected " + formatValue(want, i) +
             ", got " + formatValue(got, i) +
             (isF ? llvm::formatv(" (rtol {0}, atol {1})", llvm::format("%g", rtol),
                                   llvm::format("%g", atol))
                        .str()
                  : std::string());
  }
  return "";
}

/// Static dims of the function's results against the first data set's outputs.
std::string checkResultShapes(mlir::func::FuncOp func, mlir::MLIRContext &context,
                              const CaseInfo &info) {
  if (info.dataSets.empty())
    return "";
  for (unsigned k = 0; k < func.getNumResults(); ++k) {
    SmallString<256> path(info.dataSets[0]);
    sys::path::append(path, "output_" + std::to_string(k) + ".pb");
    if (!sys::fs::exists(path))
      continue;
    mlir::FailureOr<kiln::ref::Tensor> want = kiln::readTensorFile(context, path);
    auto type = dyn_cast<mlir::RankedTensorType>(func.getResultTypes()[k]);
    if (failed(want) || !type)
      continue;
    std::string got;
    raw_string_ostream os(got);
    os << type;
    bool match = type.getRank() == want->rank();
    for (int64_t i = 0; match && i < type.getRank(); ++i)
      match = type.isDynamicDim(i) || type.getDimSize(i) == want->dim(i);
    if (!match)
      return "result " + std::to_string(k) + " has type " + got + " but the test data is " +
             want->describe();
  }
  return "";
}

struct Outcome {
  std::string status; // pass, fail, skip
  std::string reason;
  std::vector<std::string> boundInputs;
};

Outcome runCase(mlir::DialectRegistry &registry, StringRef dir, const CaseInfo &info) {
  Outcome outcome;
  size_t sets = backend == "import" ? std::min<size_t>(info.dataSets.size(), 1)
                                    : info.dataSets.size();
  if (sets == 0 && backend != "import")
    return {"skip", "the case has no test data"};
  for (size_t s = 0; s < std::max<size_t>(sets, 1); ++s) {
    mlir::MLIRContext context(registry);
    kiln::OneLineDiagnostics diagnostics(context, /*print=*/false);
    auto firstError = [&](StringRef fallback) {
      return diagnostics.all().empty() ? fallback.str() : diagnostics.all().front();
    };
    kiln::LoadOptions options;
    options.import.allDynamic = mode == "dynamic";
    options.optimize = false;
    std::vector<std::string> inputFiles;
    for (size_t k = 0; k < info.inputs.size(); ++k) {
      if (info.dataSets.empty())
        break;
      SmallString<256> data(info.dataSets[s]);
      sys::path::append(data, "input_" + std::to_string(k) + ".pb");
      inputFiles.push_back(data.str().str());
      if (sys::fs::exists(data))
        options.import.constantInputs[info.inputs[k]] = data.str().str();
    }
    SmallString<256> modelPath(dir);
    sys::path::append(modelPath, "model.onnx");
    mlir::OwningOpRef<mlir::ModuleOp> module = kiln::loadModel(context, modelPath, options);
    if (!module) {
      std::string reason = firstError("import failed without a diagnostic");
      return {isOutOfScope(reason) ? "skip" : "fail", reason};
    }
    mlir::func::FuncOp func = kiln::entryFunction(*module);
    if (!func)
      return {"fail", firstError("no function to run")};
    if (s == 0) {
      if (std::string reason = checkResultShapes(func, context, info); !reason.empty())
        return {"fail", reason};
      for (unsigned i = 0; i < func.getNumArguments(); ++i)
        if (func.getArgAttr(i, "kiln.bound_constant"))
          outcome.boundInputs.push_back(
              func.getArgAttrOfType<mlir::StringAttr>(i, "kiln.name").str());
    }
    mlir::PassManager pm(&context);
    kiln::buildGraphPipeline(pm, kiln::GraphPipelineOptions());
    if (failed(pm.run(*module)))
      return {"fail", "graph pipeline: " + firstError("failed")};
    if (backend == "import")
      break;

    // Inputs in the graph's order; outputs compared in order.
    std::vector<kiln::ref::Tensor> inputs;
    for (const std::string &file : inputFiles) {
      mlir::FailureOr<kiln::ref::Tensor> t = kiln::readTensorFile(context, file);
      if (failed(t))
        return {"fail", "test data: " + firstError(file)};
      inputs.push_back(std::move(*t));
    }
    mlir::FailureOr<std::vector<kiln::ref::Tensor>> outputs = kiln::interpret(func, inputs);
    if (failed(outputs))
      return {"fail", "run: " + firstError("the interpreter failed")};
    for (size_t k = 0; k < outputs->size(); ++k) {
      SmallString<256> path(info.dataSets[s]);
      sys::path::append(path, "output_" + std::to_string(k) + ".pb");
      mlir::FailureOr<kiln::ref::Tensor> want = kiln::readTensorFile(context, path);
      if (failed(want))
        return {"fail", "test data: " + firstError(path)};
      std::string what = "output " + std::to_string(k);
      if (k < info.outputs.size())
        what += " '" + info.outputs[k] + "'";
      if (sets > 1)
        what = sys::path::filename(info.dataSets[s]).str() + " " + what;
      std::string diff = compareOutput((*outputs)[k], *want, info.rtol, info.atol, what);
      if (!diff.empty())
        return {"fail", diff};
    }
  }
  outcome.status = "pass";
  return outcome;
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
  cl::HideUnrelatedOptions(category);
  cl::ParseCommandLineOptions(argc, argv, "kiln-conformance: runs ONNX backend node tests\n");
  if (backend != "reference" && backend != "import") {
    errs() << "kiln-conformance: error: backend '" << backend
           << "' is not available (reference, import)\n";
    return 1;
  }
  if (mode != "static" && mode != "dynamic") {
    errs() << "kiln-conformance: error: mode '" << mode << "' is not static or dynamic\n";
    return 1;
  }

  std::vector<std::string> cases;
  for (const std::string &p : paths) {
    if (!sys::fs::is_directory(p)) {
      errs() << "kiln-conformance: error: " << p << " is not a test case or a folder of them\n";
      return 1;
    }
    collectCases(p, cases);
  }
  std::sort(cases.begin(), cases.end());

  mlir::DialectRegistry registry;
  kiln::registerAllDialects(registry);

  json::Array results;
  std::set<std::string> passed;
  int pass = 0, fail = 0, skip = 0;
  for (const std::string &dir : cases) {
    std::string name = sys::path::filename(dir).str();
    CaseInfo info = describeCase(dir);
    Outcome outcome = runCase(registry, dir, info);
    if (outcome.status == "pass") {
      ++pass;
      passed.insert(name);
      if (!quiet)
        outs() << "PASS " << name << "\n";
    } else if (outcome.status == "skip") {
      ++skip;
      if (!quiet)
        outs() << "SKIP " << name << ": " << outcome.reason << "\n";
    } else {
      ++fail;
      outs() << "FAIL " << name << ": " << outcome.reason << "\n";
    }
    json::Array ops, bound;
    for (const std::string &op : info.ops)
      ops.push_back(op);
    for (const std::string &b : outcome.boundInputs)
      bound.push_back(b);
    results.push_back(json::Object{{"name", name},
                                   {"status", outcome.status},
                                   {"reason", outcome.reason},
                                   {"ops", std::move(ops)},
                                   {"bound_inputs", std::move(bound)}});
  }

  if (!jsonPath.empty()) {
    std::error_code ec;
    raw_fd_ostream os(jsonPath, ec);
    if (ec) {
      errs() << "kiln-conformance: error: cannot write " << jsonPath << ": " << ec.message()
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
      if (ec) {
        errs() << "kiln-conformance: error: cannot write " << expectedPath << "\n";
        return 1;
      }
      for (const std::string &c : passed)
        os << c << "\n";
      outs() << "updated " << expectedPath << " (" << passed.size() << " cases)\n";
    } else {
      std::set<std::string> expected;
      std::ifstream in(expectedPath);
      if (!in) {
        errs() << "kiln-conformance: error: cannot read " << expectedPath << "\n";
        return 1;
      }
      for (std::string line; std::getline(in, line);)
        if (!line.empty() && line[0] != '#')
          expected.insert(line);
      for (const std::string &c : expected)
        if (!passed.count(c)) {
          outs() << "REGRESSION " << c << " was expected to pass\n";
          status = 1;
        }
      for (const std::string &c : passed)
        if (!expected.count(c)) {
          outs() << "IMPROVEMENT " << c << " now passes; record it with --update\n";
          status = 1;
        }
    }
  }
  outs() << pass << " passed, " << fail << " failed, " << skip << " skipped\n";
  return status;
}
