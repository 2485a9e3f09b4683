//===- kiln-run.cpp - runs a model on given inputs ------------------------===//
//
//   kiln-run MODEL --input NAME=FILE ... [--output-dir DIR] [--print]
//            [--backend reference|host] [--cache-dir DIR]
//
// MODEL is .onnx or kiln .mlir; FILE is an ONNX TensorProto (.pb) or a numpy .npy.
// Outputs are written as DIR/output_K.pb TensorProtos named after the model's
// outputs. Every problem is one line on stderr and exit code 1.
//
//===----------------------------------------------------------------------===//

#include "codegen/HostEmulation.h"
#include "interpreter/Interpreter.h"
#include "tools/InitAll.h"
#include "tools/DiagnosticPrinter.h"
#include "tools/LoadModel.h"
#include "tools/TensorIO.h"

#include "mlir/Pass/PassManager.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"

#include <map>

using namespace llvm;

static cl::OptionCategory category("kiln-run options");
static cl::opt<std::string> modelPath(cl::Positional, cl::desc("<model.onnx|model.mlir>"),
                                      cl::Required, cl::cat(category));
static cl::list<std::string> inputSpecs("input",
                                        cl::desc("An input: NAME=FILE (.pb or .npy); repeatable"),
                                        cl::value_desc("name=file"), cl::cat(category));
static cl::opt<std::string> outputDir("output-dir",
                                      cl::desc("Write outputs as DIR/output_K.pb"),
                                      cl::value_desc("dir"), cl::cat(category));
static cl::opt<std::string> backend(
    "backend",
    cl::desc("Where to run: reference (the float64 reference interpreter) or host (kiln's "
             "fused, generated kernels in host emulation; library ops on the reference "
             "kernels)"),
    cl::init("reference"), cl::cat(category));
static cl::opt<std::string> cacheDir(
    "cache-dir",
    cl::desc("Where host emulation keeps compiled kernels (default $KILN_CACHE_DIR or "
             "~/.cache/kiln)"),
    cl::cat(category));
static cl::opt<bool> print("print", cl::desc("Print a summary of each output"),
                           cl::cat(category));
static cl::opt<bool> noOptimize("no-optimize",
                                cl::desc("Run the model as imported, without the graph pipeline"),
                                cl::cat(category));

static int fail(const Twine &message) {
  errs() << "kiln-run: error: " << message << "\n";
  return 1;
}

int main(int argc, char **argv) {
  InitLLVM init(argc, argv);
  cl::HideUnrelatedOptions(category);
  cl::ParseCommandLineOptions(argc, argv, "kiln-run: runs a model on given inputs\n");
  if (backend != "reference" && backend != "host")
    return fail("backend '" + backend + "' is not available (kiln-run has: reference, host)");

  std::map<std::string, std::string> inputFiles;
  for (const std::string &spec : inputSpecs) {
    auto [name, file] = StringRef(spec).split('=');
    if (name.empty() || file.empty())
      return fail("--input '" + spec + "' is not NAME=FILE");
    if (!inputFiles.emplace(name.str(), file.str()).second)
      return fail("input '" + name + "' is given twice");
  }

  mlir::DialectRegistry registry;
  kiln::registerAllDialects(registry);
  mlir::MLIRContext context(registry);
  kiln::OneLineDiagnostics diagnostics(context);
  kiln::LoadOptions options;
  options.optimize = !noOptimize;
  // Inputs an op needs as compile-time values (Reshape's shape given as an input,
  // ...) are baked in from the files given for them.
  for (const auto &[name, file] : inputFiles)
    if (StringRef(file).ends_with(".pb"))
      options.import.constantInputs[name] = file;
  mlir::OwningOpRef<mlir::ModuleOp> module = kiln::loadModel(context, modelPath, options);
  if (!module)
    return 1;
  mlir::func::FuncOp func = kiln::entryFunction(*module);
  if (!func)
    return 1;

  // Match the given inputs to the function's arguments by name.
  std::vector<kiln::ref::Tensor> inputs;
  std::vector<std::string> names;
  for (unsigned i = 0; i < func.getNumArguments(); ++i) {
    auto attr = func.getArgAttrOfType<mlir::StringAttr>(i, "kiln.name");
    names.push_back(attr ? attr.str() : "arg" + std::to_string(i));
  }
  for (const auto &[name, file] : inputFiles)
    if (std::find(names.begin(), names.end(), name) == names.end()) {
      std::string known;
      for (const std::string &n : names)
        known += (known.empty() ? "" : ", ") + n;
      return fail("the model has no input '" + name + "' (its inputs: " + known + ")");
    }
  for (const std::string &name : names) {
    auto it = inputFiles.find(name);
    if (it == inputFiles.end())
      return fail("missing input '" + name + "' (give it with --input " + name + "=FILE)");
    mlir::FailureOr<kiln::ref::Tensor> t = kiln::readTensorFile(context, it->second);
    if (failed(t))
      return 1;
    inputs.push_back(std::move(*t));
  }

  kiln::InterpretOptions interpretOptions;
  std::unique_ptr<kiln::HostKernels> host;
  if (backend == "host") {
    mlir::PassManager pm(&context);
    pm.addNestedPass<mlir::func::FuncOp>(kiln::createFormKernelsPass());
    if (failed(pm.run(*module)))
      return 1;
    mlir::FailureOr<std::vector<kiln::GeneratedKernel>> kernels = kiln::emitKernels(*module);
    if (failed(kernels))
      return 1;
    absl::StatusOr<std::unique_ptr<kiln::HostKernels>> built =
        kiln::HostKernels::build(*kernels, cacheDir);
    if (!built.ok())
      return fail(std::string(built.status().message()));
    host = std::move(*built);
    interpretOptions.runKernel = kiln::hostKernelRunner(*host);
  }
  mlir::FailureOr<std::vector<kiln::ref::Tensor>> outputs =
      kiln::interpret(func, inputs, interpretOptions);
  if (failed(outputs))
    return 1;

  if (!outputDir.empty()) {
    if (std::error_code ec = sys::fs::create_directories(outputDir))
      return fail("cannot create " + outputDir + ": " + ec.message());
  }
  for (auto [k, t] : llvm::enumerate(*outputs)) {
    auto attr = func.getResultAttrOfType<mlir::StringAttr>(k, "kiln.name");
    std::string name = attr ? attr.str() : "output" + std::to_string(k);
    if (print)
      outs() << name << ": " << kiln::summarizeTensor(t) << "\n";
    if (!outputDir.empty()) {
      SmallString<256> path(outputDir);
      sys::path::append(path, "output_" + std::to_string(k) + ".pb");
      if (failed(kiln::writeTensorProto(context, t, name, path)))
        return 1;
    }
  }
  return 0;
}
