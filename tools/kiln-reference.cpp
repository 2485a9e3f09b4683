//===- kiln-reference.cpp - runs a model on the float64 interpreter -------===//
//
//   kiln-reference MODEL --input NAME=FILE ... [--output-dir DIR] [--print]
//                  [--no-optimize]
//
// The golden reference from the command line: imports an .onnx or parses a kiln
// .mlir model, runs it on the reference interpreter, and writes or prints its
// outputs. `kiln-run --backend reference` hands its command line here (kiln-run
// itself links only the runtime). Every problem is one line on stderr, exit 1.
//
//===----------------------------------------------------------------------===//

#include "TensorFiles.h"
#include "interpreter/Interpreter.h"
#include "driver/InitAll.h"
#include "tools/DiagnosticPrinter.h"
#include "driver/LoadModel.h"
#include "driver/TensorIO.h"
#include "tools/Version.h"

#include "mlir/Pass/PassManager.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <map>

using namespace llvm;

static cl::OptionCategory category("kiln-run options");
static cl::opt<std::string> modelPath(cl::Positional,
                                      cl::desc("<model.kiln|model.so|model.onnx|model.mlir>"),
                                      cl::Required, cl::cat(category));
static cl::list<std::string> inputSpecs("input",
                                        cl::desc("An input: NAME=FILE (.pb or .npy); repeatable"),
                                        cl::value_desc("name=file"), cl::cat(category));
static cl::opt<std::string> outputDir("output-dir",
                                      cl::desc("Write outputs as DIR/output_K.pb"),
                                      cl::value_desc("dir"), cl::cat(category));
static cl::opt<std::string> backend(
    "backend", cl::desc("reference (the only one here; kiln-run passes it along)"),
    cl::init("reference"), cl::cat(category));
static cl::opt<bool> print("print", cl::desc("Print a summary of each output"),
                           cl::cat(category));
static cl::opt<bool> noOptimize("no-optimize",
                                cl::desc("Compile the model as imported, without the graph pipeline"),
                                cl::cat(category));
static cl::opt<uint64_t> maxTensorBytes(
    "max-tensor-bytes",
    cl::desc("The largest tensor the interpreter may create, in bytes (default 2^36)"),
    cl::init(kiln::ref::kDefaultMaxTensorBytes), cl::cat(category));
static int fail(const Twine &message) {
  errs() << "kiln-reference: error: " << message << "\n";
  return 1;
}

int main(int argc, char **argv) {
  InitLLVM init(argc, argv);
  cl::HideUnrelatedOptions(category);
  kiln::setVersionPrinter("kiln-reference");
  cl::ParseCommandLineOptions(argc, argv,
                              "kiln-reference: runs a model on the float64 interpreter\n");
  if (backend != "reference")
    return fail("kiln-reference runs the reference interpreter only (--backend " + backend + ")");
  kiln::ref::MaxTensorBytesScope sizeLimit(maxTensorBytes);

  absl::StatusOr<std::map<std::string, std::string>> specs =
      kiln::parseInputSpecs(std::vector<std::string>(inputSpecs.begin(), inputSpecs.end()));
  if (!specs.ok())
    return fail(std::string(specs.status().message()));
  const std::map<std::string, std::string> &inputFiles = *specs;

  mlir::DialectRegistry registry;
  kiln::registerAllDialects(registry);
  mlir::MLIRContext context(registry);
  kiln::OneLineDiagnostics diagnostics(context);

  kiln::LoadOptions options;
  options.optimize = !noOptimize;
  // Inputs an op needs as compile-time values (Reshape's shape given as an
  // input, ...) are baked in from the files given for them.
  for (const auto &[name, file] : inputFiles)
    if (StringRef(file).ends_with(".pb"))
      options.import.constantInputs[name] = file;
  mlir::OwningOpRef<mlir::ModuleOp> module = kiln::loadModel(context, modelPath, options);
  if (!module)
    return 1;
  mlir::func::FuncOp func = kiln::entryFunction(*module);
  if (!func)
    return 1;
  std::vector<std::string> inputNames, outputNames;
  for (unsigned i = 0; i < func.getNumArguments(); ++i) {
    auto attr = func.getArgAttrOfType<mlir::StringAttr>(i, kiln::kNameAttr);
    inputNames.push_back(attr ? attr.str() : "arg" + std::to_string(i));
  }
  for (unsigned i = 0; i < func.getNumResults(); ++i) {
    auto attr = func.getResultAttrOfType<mlir::StringAttr>(i, kiln::kNameAttr);
    outputNames.push_back(attr ? attr.str() : "output" + std::to_string(i));
  }

  absl::StatusOr<std::vector<std::string>> files = kiln::matchInputFiles(inputFiles, inputNames);
  if (!files.ok())
    return fail(std::string(files.status().message()));
  std::vector<kiln::ref::Tensor> inputs;
  for (const std::string &file : *files) {
    mlir::FailureOr<kiln::ref::Tensor> t = kiln::readTensorFile(context, file);
    if (failed(t))
      return 1;
    inputs.push_back(std::move(*t));
  }

  mlir::FailureOr<std::vector<kiln::ref::Tensor>> outputs = kiln::interpret(func, inputs);
  if (failed(outputs))
    return 1;

  if (absl::Status s = kiln::emitOutputs(*outputs, outputNames, outputDir, print); !s.ok())
    return fail(std::string(s.message()));
  return 0;
}
