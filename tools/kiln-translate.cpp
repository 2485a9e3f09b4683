//===- kiln-translate.cpp - models in, kiln IR out ------------------------===//
//
//   kiln-translate --import-onnx model.onnx [-o out.mlir]
//                  [--dynamic INPUT:DIM=SYMBOL ...] [--all-dynamic]
//
// Errors are one line each, naming the file and node; the exit code is 1.
//
//===----------------------------------------------------------------------===//

#include "codegen/CudaEmitter.h"
#include "codegen/NvrtcCheck.h"
#include "frontend/onnx/OnnxImporter.h"
#include "tools/Version.h"
#include "tools/DiagnosticPrinter.h"
#include "driver/InitAll.h"

#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Support/FileUtilities.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/ToolOutputFile.h"

using namespace llvm;

static cl::OptionCategory category("kiln-translate options");
static cl::opt<bool> importOnnx("import-onnx", cl::desc("Import an ONNX model into kiln IR"),
                                cl::cat(category));
static cl::opt<bool> emitCuda(
    "emit-cuda", cl::desc("Print the CUDA C of a kiln module's kiln.kernel regions"),
    cl::cat(category));
static cl::opt<bool> compile(
    "compile",
    cl::desc("Run kiln's compile pipeline first (kiln-compile-pipeline: the graph pipeline, "
             "epilogue absorption, split reductions, kernel formation); without it the "
             "module is translated as given"),
    cl::cat(category));
static cl::opt<bool> nvrtcCheck(
    "nvrtc",
    cl::desc("With --emit-cuda: also compile the kernels with NVRTC for sm_80 and sm_90 and "
             "fail on errors or a spilling pointwise kernel"),
    cl::cat(category));
static cl::opt<std::string> inputPath(cl::Positional, cl::desc("<input>"), cl::Required,
                                      cl::cat(category));
static cl::opt<std::string> outputPath("o", cl::desc("Output file (default: stdout)"),
                                       cl::value_desc("file"), cl::init("-"),
                                       cl::cat(category));
static cl::list<std::string>
    dynamicDims("dynamic",
                cl::desc("Make an input dim symbolic: INPUT:DIM=SYMBOL (or INPUT:DIM for a "
                         "fresh symbol); repeatable"),
                cl::value_desc("input:dim=symbol"), cl::cat(category));
static cl::opt<bool> allDynamic("all-dynamic",
                                cl::desc("Make every dim of every input symbolic"),
                                cl::cat(category));

/// Parses `input:dim=symbol`; input names may themselves contain ':'.
static bool parseDynamic(StringRef spec, kiln::onnx_import::ImportOptions &options) {
  auto [lhs, symbol] = spec.split('=');
  size_t colon = lhs.rfind(':');
  if (colon == StringRef::npos)
    return false;
  int64_t dim;
  if (lhs.drop_front(colon + 1).getAsInteger(10, dim))
    return false;
  options.dynamicDims[lhs.take_front(colon).str()][dim] = symbol.str();
  return true;
}

int main(int argc, char **argv) {
  InitLLVM init(argc, argv);
  cl::HideUnrelatedOptions(category);
  kiln::setVersionPrinter("kiln-translate");
  cl::ParseCommandLineOptions(argc, argv, "kiln translator: ONNX to kiln IR\n");

  if (importOnnx == emitCuda) {
    errs() << "kiln-translate: error: choose one translation (--import-onnx or --emit-cuda)\n";
    return 1;
  }
  kiln::onnx_import::ImportOptions options;
  options.allDynamic = allDynamic;
  for (const std::string &spec : dynamicDims) {
    if (!parseDynamic(spec, options)) {
      errs() << "kiln-translate: error: --dynamic '" << spec
             << "' is not INPUT:DIM=SYMBOL (DIM an integer)\n";
      return 1;
    }
  }

  mlir::DialectRegistry registry;
  kiln::registerAllDialects(registry);
  mlir::MLIRContext context(registry);
  kiln::OneLineDiagnostics diagnostics(context);
  mlir::OwningOpRef<mlir::ModuleOp> module;
  if (importOnnx) {
    module = kiln::onnx_import::importOnnxFile(context, inputPath, options);
  } else {
    module = mlir::parseSourceFile<mlir::ModuleOp>(inputPath, &context);
  }
  if (!module)
    return 1;
  if (compile) {
    mlir::PassManager pm(&context);
    kiln::buildCompilePipeline(pm, kiln::CompilePipelineOptions());
    if (failed(pm.run(*module)))
      return 1;
  }
  if (emitCuda) {
    bool hasKernels = false;
    module->walk([&](kiln::KernelOp) { hasKernels = true; });
    if (!hasKernels) {
      errs() << "kiln-translate: error: " << inputPath
             << " has no kiln.kernel to emit; form kernels first (--compile, or kiln-opt "
                "--kiln-compile-pipeline)\n";
      return 1;
    }
  }

  std::string error;
  auto output = mlir::openOutputFile(outputPath, &error);
  if (!output) {
    errs() << "kiln-translate: error: " << error << "\n";
    return 1;
  }
  if (emitCuda) {
    mlir::FailureOr<std::vector<kiln::GeneratedKernel>> kernels = kiln::emitKernels(*module);
    if (failed(kernels))
      return 1;
    if (nvrtcCheck && !kiln::checkWithNvrtc(*kernels))
      return 1;
    output->os() << kiln::kernelTranslationUnit(*kernels);
  } else {
    module->print(output->os());
  }
  output->keep();
  return 0;
}
