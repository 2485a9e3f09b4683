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

#include "codegen/Artifact.h"
#include "codegen/StepEncoding.h"
#include "codegen/HostEmulation.h"
#include "codegen/NvrtcCheck.h"
#include "RunModel.h"
#include "tools/Version.h"
#include "driver/Compile.h"
#include "CaseFiles.h"
#include "kiln/reference/Compare.h"
#include "kiln/runtime.h"
#include "interpreter/Interpreter.h"
#include "driver/InitAll.h"
#include "tools/DiagnosticPrinter.h"
#include "driver/LoadModel.h"
#include "driver/TensorIO.h"

#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"

#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Pass/PassManager.h"

#include <onnx/onnx_pb.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <map>
#include <set>

using namespace llvm;

static cl::OptionCategory category("kiln-conformance options");
static cl::list<std::string> paths(cl::Positional, cl::desc("<case or folder>..."),
                                   cl::OneOrMore, cl::cat(category));
static cl::opt<std::string> backend(
    "backend",
    cl::desc("reference (run and compare), host (generated kernels in host emulation, "
             "library ops on the reference kernels) or import (import only)"),
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
static cl::opt<std::string> cacheDir(
    "cache-dir",
    cl::desc("Where compiled kernels are kept: host-emulation libraries and NVRTC batches "
             "(default $KILN_CACHE_DIR or ~/.cache/kiln)"),
    cl::cat(category));
static cl::opt<int> jobs("jobs", cl::desc("Host compilers and NVRTC batches to run at once"), cl::init(2),
                         cl::cat(category));
static cl::opt<bool> nvrtc(
    "nvrtc",
    cl::desc("With --backend host: also compile every generated kernel with NVRTC for sm_80 "
             "and sm_90 (cubin and PTX), and fail on errors or on a pointwise kernel that "
             "spills registers"),
    cl::cat(category));
static cl::list<int> nvrtcSm(
    "nvrtc-sm",
    cl::desc("With --nvrtc: the SM versions to compile for (default 80,90); --cubin-dir "
             "needs 90"),
    cl::value_desc("N,..."), cl::CommaSeparated, cl::cat(category));
static cl::opt<std::string> cubinDir(
    "cubin-dir",
    cl::desc("With --nvrtc: also write the sm_90 cubins and a kernels.json manifest to DIR "
             "(what tools/sass-lint.py checks)"),
    cl::value_desc("dir"), cl::cat(category));
/// --cache-dir, or the default one host emulation uses.
static std::string kernelCacheDir() {
  return cacheDir.empty() ? kiln::defaultCacheDir() : std::string(cacheDir);
}
static cl::opt<bool> viaArtifact(
    "artifact",
    cl::desc("With --backend host: run each case as the runtime does, through an artifact "
             "compiled in memory (plan, weights, host-emulation library) and loaded by "
             "libkiln_runtime, instead of the interpreter calling the kernels"),
    cl::cat(category));
static cl::opt<std::string> exportDir(
    "export",
    cl::desc("With --backend host: also write every compiled data set as DIR/<case>/<set>/ "
             "(model.kiln with cubins for --export-sm, inputs, expected outputs) for "
             "kiln-check-artifacts"),
    cl::value_desc("dir"), cl::cat(category));
static cl::list<int> exportSm("export-sm", cl::desc("SM versions of the exported cubins"),
                              cl::CommaSeparated, cl::cat(category));
static cl::opt<bool> exportHost("export-host",
                                cl::desc("Embed the host-emulation library in exported artifacts"),
                                cl::cat(category));
static cl::opt<int> cudaArch("sm",
                             cl::desc("With --backend cuda: the device's SM version (default 90)"),
                             cl::init(90), cl::cat(category));
static cl::opt<std::string> precision(
    "precision",
    cl::desc("With --backend host|cuda: compile in this precision mode (fp32, tf32, fp16, "
             "bf16; kiln-compile --precision) and widen every case's float tolerances by "
             "the mode's (docs/precision.md)"),
    cl::init("fp32"), cl::cat(category));
static cl::opt<int> maxHostLibrarySteps(
    "max-host-library-steps",
    cl::desc("With --backend cuda: fail the run when more library steps (MatMul, Conv, "
             "ConvTranspose, Pool) than this ran on the host instead of cuBLASLt/cuDNN "
             "(default: no limit)"),
    cl::init(-1), cl::cat(category));
static cl::opt<bool> quiet("quiet", cl::desc("Print only failures and the summary"),
                           cl::cat(category));

namespace {

/// Backends that fuse and generate kernels (the others interpret the graph).
bool compiles() { return backend == "host" || backend == "cuda"; }

bool isOutOfScope(StringRef error) {
  static const char *reasons[] = {
#define ONNX_OP(name, converter, maxVersion)
#define ONNX_UNSUPPORTED(name, reason) reason,
#include "frontend/onnx/OnnxOps.def"
#undef ONNX_OP
#undef ONNX_UNSUPPORTED
      "is not a tensor (sequence, map and optional inputs are unsupported)",
      "element type STRING",
      "of domain 'ai.onnx.preview.training'",
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
  /// --backend cuda: library steps (MatMul, Conv, ConvTranspose, Pool) that
  /// ran on the host instead of cuBLASLt/cuDNN, by name, one per step run.
  std::vector<std::string> hostLibrarySteps;
  /// --backend cuda: every other step that ran on the host (graph breaks:
  /// a round trip through host memory each), by name, one per step run.
  std::vector<std::string> hostGraphBreaks;
};

/// One data set of a case, imported and optimized (and, for the host backend,
/// fused and generated).
struct PreparedSet {
  mlir::OwningOpRef<mlir::ModuleOp> module;
  std::vector<std::string> inputFiles;
  std::string dir;
};

struct PreparedCase {
  std::vector<PreparedSet> sets;
};

/// Diagnostics of one shared context, read from a mark on.
struct Errors {
  kiln::OneLineDiagnostics &diagnostics;
  size_t mark = 0;
  std::string first(StringRef fallback) const {
    return diagnostics.all().size() > mark ? diagnostics.all()[mark] : fallback.str();
  }
};

/// Ops the compiled backends run outside generated kernels: shape computations,
/// the library ops (cuBLASLt/cuDNN on a GPU, the reference kernels in host
/// emulation) and graph breaks (any other op the reference kernels run, on the
/// host between kernels), and the reads of sizes the device computed.
bool isHostStep(mlir::Operation *op) {
  return isa<kiln::ConstantOp, kiln::SymbolicConstantOp, kiln::ShapeOfOp, kiln::KernelOp, kiln::GuardOp,
             kiln::ReadSizesOp, mlir::func::ReturnOp, mlir::tensor::CastOp>(op) ||
         kiln::isHostStepOp(op);
}

/// The first op at or under `op` that a plan cannot hold (null when none):
/// control flow is a step whose bodies' ops must be steps too.
mlir::Operation *firstNonStep(mlir::Operation *op) {
  if (!isa<kiln::IfOp, kiln::LoopOp, kiln::ScanOp>(op))
    return isHostStep(op) ? nullptr : op;
  for (mlir::Region &region : op->getRegions())
    for (mlir::Block &block : region)
      for (mlir::Operation &inner : block)
        if (!isa<kiln::YieldOp>(inner))
          if (mlir::Operation *bad = firstNonStep(&inner))
            return bad;
  return nullptr;
}

Outcome prepareCase(mlir::MLIRContext &context, Errors errors, StringRef dir,
                    const CaseInfo &info, PreparedCase &prepared,
                    std::vector<kiln::GeneratedKernel> &kernels) {
  Outcome outcome;
  bool importOnly = backend == "import";
  size_t sets = importOnly ? std::min<size_t>(info.dataSets.size(), 1) : info.dataSets.size();
  if (sets == 0 && !importOnly)
    return {"skip", "the case has no test data"};
  for (size_t s = 0; s < std::max<size_t>(sets, 1); ++s) {
    kiln::LoadOptions options;
    options.import.allDynamic = mode == "dynamic";
    options.optimize = false;
    PreparedSet set;
    for (size_t k = 0; k < info.inputs.size() && !info.dataSets.empty(); ++k) {
      SmallString<256> data(info.dataSets[s]);
      sys::path::append(data, "input_" + std::to_string(k) + ".pb");
      set.inputFiles.push_back(data.str().str());
      if (sys::fs::exists(data))
        options.import.constantInputs[info.inputs[k]] = data.str().str();
    }
    if (!info.dataSets.empty())
      set.dir = info.dataSets[s];
    SmallString<256> modelPath(dir);
    sys::path::append(modelPath, "model.onnx");
    set.module = kiln::loadModel(context, modelPath, options);
    if (!set.module) {
      std::string reason = errors.first("import failed without a diagnostic");
      return {isOutOfScope(reason) ? "skip" : "fail", reason};
    }
    mlir::func::FuncOp func = kiln::entryFunction(*set.module);
    if (!func)
      return {"fail", errors.first("no function to run")};
    if (s == 0) {
      if (std::string reason = checkResultShapes(func, context, info); !reason.empty())
        return {"fail", reason};
      for (unsigned i = 0; i < func.getNumArguments(); ++i)
        if (func.getArgAttr(i, "kiln.bound_constant"))
          outcome.boundInputs.push_back(
              func.getArgAttrOfType<mlir::StringAttr>(i, kiln::kNameAttr).str());
    }
    mlir::PassManager pm(&context);
    if (compiles()) {
      kiln::CompilePipelineOptions options;
      options.precision = precision;
      kiln::buildCompilePipeline(pm, options);
    } else
      kiln::buildGraphPipeline(pm, kiln::GraphPipelineOptions());
    if (failed(pm.run(*set.module)))
      return {"fail", "graph pipeline: " + errors.first("failed")};
    if (compiles()) {
      for (mlir::Operation &op : func.getBody().front())
        if (mlir::Operation *bad = firstNonStep(&op))
          return {"fail", "'" + bad->getName().getStringRef().str() +
                              "' runs neither as a kernel nor on the host in a plan yet"};
      mlir::FailureOr<std::vector<kiln::GeneratedKernel>> generated =
          kiln::emitKernels(*set.module);
      if (failed(generated))
        return {"fail", errors.first("codegen failed")};
      kernels.insert(kernels.end(), generated->begin(), generated->end());
    }
    prepared.sets.push_back(std::move(set));
  }
  outcome.status = "pass";
  return outcome;
}

/// The cubins of every case's kernels for --backend cuda, compiled in batches.
const std::map<std::string, std::shared_ptr<const kiln::nvrtc::NvrtcResult>> *cudaCubins = nullptr;

/// Compiles `func` to an artifact (the kernels' host code from `host`, or their
/// cubins from cudaCubins), loads it with libkiln_runtime from memory and runs it
/// on `inputs`.
mlir::FailureOr<std::vector<kiln::ref::Tensor>>
runThroughArtifact(mlir::func::FuncOp func, const kiln::HostKernels *host,
                   std::vector<kiln::ref::Tensor> &inputs, std::string &error,
                   std::vector<std::string> &hostLibrarySteps,
                   std::vector<std::string> &hostGraphBreaks) {
  kiln::ArtifactOptions options;
  options.cubinArchs.clear();
  options.hostKernels = host;
  kiln_backend_t runOn = KILN_BACKEND_HOST;
  if (backend == "cuda") {
    options.hostLibrary = false;
    options.cubinArchs = {cudaArch};
    options.prebuiltCubins = cudaCubins;
    runOn = KILN_BACKEND_CUDA;
  }
  mlir::FailureOr<kiln::CompiledArtifact> artifact = kiln::buildArtifact(func, options);
  if (failed(artifact))
    return mlir::failure();
  kiln_model_t *model = nullptr;
  auto fail = [&]() -> mlir::FailureOr<std::vector<kiln::ref::Tensor>> {
    error = kiln_last_error();
    kiln_model_destroy(model);
    return mlir::failure();
  };
  if (kiln_model_load_memory(artifact->bytes.data(), artifact->bytes.size(), runOn, &model) !=
      KILN_OK)
    return fail();
  kiln_profile_t *profile = nullptr;
  if (kiln_profile_create(&profile) != KILN_OK)
    return fail();
  absl::StatusOr<std::vector<kiln::ref::Tensor>> results =
      kiln::runLoadedModel(model, inputs, profile);
  // Which library steps the profile says ran on the host: on CUDA each one is
  // a round trip that cuBLASLt or cuDNN should have taken.
  for (size_t i = 0, n = kiln_profile_num_events(profile); i < n; ++i) {
    const char *name = nullptr, *kind = nullptr;
    double start = 0, duration = 0;
    if (kiln_profile_event(profile, i, &name, &kind, &start, &duration) != KILN_OK ||
        !StringRef(kind).starts_with("host"))
      continue;
    // A step inside control flow is named "If/MatMul": its own name is last.
    StringRef step = StringRef(name).rsplit('/').second;
    if (step.empty())
      step = name;
    if (llvm::is_contained({"MatMul", "Conv", "ConvTranspose", "Pool"}, step))
      hostLibrarySteps.push_back(name);
    else
      hostGraphBreaks.push_back(name);
  }
  kiln_profile_destroy(profile);
  if (!results.ok()) {
    error = std::string(results.status().message());
    kiln_model_destroy(model);
    return mlir::failure();
  }
  kiln_model_destroy(model);
  return std::move(*results);
}

/// Writes one data set for kiln-check-artifacts: the artifact (cubins for
/// --export-sm, no PTX, the host library with --export-host), its inputs and its
/// expected outputs.
std::string exportSet(mlir::func::FuncOp func, const kiln::HostKernels *host,
                      const PreparedSet &set, const CaseInfo &info,
                      const std::vector<kiln::ref::Tensor> &inputs) {
  kiln::ArtifactOptions options;
  options.cubinArchs.assign(exportSm.begin(), exportSm.end());
  options.includePtx = false;
  options.hostLibrary = exportHost;
  options.hostKernels = host;
  options.cacheDir = cacheDir;
  options.jobs = jobs;
  mlir::FailureOr<kiln::CompiledArtifact> artifact = kiln::buildArtifact(func, options);
  if (failed(artifact))
    return "cannot build the artifact";
  kiln::CaseSet data;
  data.rtol = info.rtol;
  data.atol = info.atol;
  data.inputs = inputs;
  for (unsigned k = 0; k < func.getNumResults(); ++k) {
    SmallString<256> path(set.dir);
    sys::path::append(path, "output_" + std::to_string(k) + ".pb");
    mlir::FailureOr<kiln::ref::Tensor> want = kiln::readTensorFile(*func->getContext(), path);
    if (failed(want))
      return "cannot read " + path.str().str();
    data.outputs.push_back(std::move(*want));
  }
  StringRef caseDir = sys::path::parent_path(set.dir);
  SmallString<256> dir(exportDir);
  sys::path::append(dir, sys::path::filename(caseDir), sys::path::filename(set.dir));
  absl::Status written = kiln::writeCaseSet(dir.str().str(), artifact->bytes, data);
  return written.ok() ? "" : std::string(written.message());
}

Outcome runPrepared(mlir::MLIRContext &context, Errors errors, const CaseInfo &info,
                    PreparedCase &prepared, const kiln::HostKernels *host) {
  if (backend == "import")
    return {"pass", ""};
  std::vector<std::string> hostLibrarySteps, hostGraphBreaks;
  size_t sets = prepared.sets.size();
  for (PreparedSet &set : prepared.sets) {
    mlir::func::FuncOp func = kiln::entryFunction(*set.module);
    // Inputs in the graph's order; outputs compared in order.
    std::vector<kiln::ref::Tensor> inputs;
    for (const std::string &file : set.inputFiles) {
      mlir::FailureOr<kiln::ref::Tensor> t = kiln::readTensorFile(context, file);
      if (failed(t))
        return {"fail", "test data: " + errors.first(file)};
      inputs.push_back(std::move(*t));
    }
    if (!exportDir.empty()) {
      if (std::string problem = exportSet(func, host, set, info, inputs); !problem.empty())
        return {"fail", "export: " + problem};
    }
    mlir::FailureOr<std::vector<kiln::ref::Tensor>> outputs = mlir::failure();
    if (viaArtifact || backend == "cuda") {
      std::string error;
      outputs = runThroughArtifact(func, host, inputs, error, hostLibrarySteps, hostGraphBreaks);
      if (failed(outputs))
        return {"fail", "artifact: " + (error.empty() ? errors.first("compile failed") : error)};
    } else {
      kiln::InterpretOptions options;
      if (host)
        options.runKernel = kiln::hostKernelRunner(*host);
      outputs = kiln::interpret(func, inputs, options);
      if (failed(outputs))
        return {"fail", "run: " + errors.first("the interpreter failed")};
    }
    for (size_t k = 0; k < outputs->size(); ++k) {
      SmallString<256> path(set.dir);
      sys::path::append(path, "output_" + std::to_string(k) + ".pb");
      mlir::FailureOr<kiln::ref::Tensor> want = kiln::readTensorFile(context, path);
      if (failed(want))
        return {"fail", "test data: " + errors.first(path)};
      std::string what = "output " + std::to_string(k);
      if (k < info.outputs.size())
        what += " '" + info.outputs[k] + "'";
      if (sets > 1)
        what = sys::path::filename(set.dir).str() + " " + what;
      std::string diff = kiln::ref::compareTensors((*outputs)[k], *want, info.rtol, info.atol, what);
      if (!diff.empty())
        return {"fail", diff, {}, hostLibrarySteps, hostGraphBreaks};
    }
  }
  return {"pass", "", {}, hostLibrarySteps, hostGraphBreaks};
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
  kiln::setVersionPrinter("kiln-conformance");
  cl::ParseCommandLineOptions(argc, argv, "kiln-conformance: runs ONNX backend node tests\n");
  if (backend != "reference" && backend != "import" && backend != "host" && backend != "cuda") {
    errs() << "kiln-conformance: error: backend '" << backend
           << "' is not available (reference, host, cuda, import)\n";
    return 1;
  }
  if (backend == "cuda") {
    int devices = 0;
    if (kiln_cuda_device_count(&devices) != KILN_OK) {
      errs() << "kiln-conformance: error: --backend cuda: " << kiln_last_error() << "\n";
      return 1;
    }
  }
  if (!exportDir.empty() && backend != "host") {
    errs() << "kiln-conformance: error: --export runs with --backend host\n";
    return 1;
  }
  if (viaArtifact && backend != "host") {
    errs() << "kiln-conformance: error: --artifact runs with --backend host\n";
    return 1;
  }
  if (kiln::ref::precisionTolerance(precision) < 0) {
    errs() << "kiln-conformance: error: --precision '" << precision
           << "' is not one of fp32, tf32, fp16, bf16\n";
    return 1;
  }
  if (precision != "fp32" && !compiles()) {
    errs() << "kiln-conformance: error: --precision applies to --backend host or cuda\n";
    return 2;
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
  // One context for the whole run: the host backend keeps every case's module
  // until the kernels of all of them are compiled in a few batches.
  mlir::MLIRContext context(registry);
  kiln::OneLineDiagnostics diagnostics(context, /*print=*/false);

  std::vector<CaseInfo> infos;
  std::vector<Outcome> outcomes(cases.size());
  std::vector<PreparedCase> prepared(cases.size());
  std::vector<kiln::GeneratedKernel> kernels;
  bool nvrtcFailed = false;
  // Runs case c once prepared (its module released after), keeping what the
  // import learned about bound inputs.
  auto run = [&](size_t c, const kiln::HostKernels *host) {
    if (outcomes[c].status != "pass")
      return;
    Errors errors{diagnostics, diagnostics.all().size()};
    Outcome outcome = runPrepared(context, errors, infos[c], prepared[c], host);
    outcome.boundInputs = outcomes[c].boundInputs;
    outcomes[c] = outcome;
    prepared[c] = PreparedCase();
  };
  for (size_t c = 0; c < cases.size(); ++c) {
    infos.push_back(describeCase(cases[c]));
    // A precision mode stores values narrow: each float comparison allows
    // the mode's error as well as the case's own.
    double widen = kiln::ref::precisionTolerance(precision);
    infos.back().rtol = std::max(infos.back().rtol, widen);
    infos.back().atol = std::max(infos.back().atol, widen);
    Errors errors{diagnostics, diagnostics.all().size()};
    outcomes[c] = prepareCase(context, errors, cases[c], infos[c], prepared[c], kernels);
    if (!compiles())
      run(c, nullptr);
  }
  if (backend == "host") {
    absl::StatusOr<std::unique_ptr<kiln::HostKernels>> host =
        kiln::HostKernels::build(kernels, cacheDir, /*chunkSize=*/100, jobs);
    if (!host.ok()) {
      errs() << "kiln-conformance: error: " << std::string(host.status().message()) << "\n";
      return 1;
    }
    if (!quiet)
      outs() << "built " << kernels.size() << " kernels for host emulation\n";
    std::vector<int> architectures(nvrtcSm.begin(), nvrtcSm.end());
    if (architectures.empty())
      architectures = {80, 90};
    if (nvrtc && !kiln::checkWithNvrtc(kernels, jobs, cubinDir, kernelCacheDir(), architectures))
      nvrtcFailed = true;
    for (size_t c = 0; c < cases.size(); ++c)
      run(c, host->get());
  }

  std::map<std::string, std::shared_ptr<const kiln::nvrtc::NvrtcResult>> cubins;
  if (backend == "cuda") {
    auto compiled = kiln::compileKernelsForArch(kernels, cudaArch, jobs, kernelCacheDir());
    if (!compiled.ok()) {
      errs() << "kiln-conformance: error: " << std::string(compiled.status().message()) << "\n";
      return 1;
    }
    cubins = std::move(*compiled);
    cudaCubins = &cubins;
    if (!quiet)
      outs() << "compiled " << cubins.size() << " kernels for sm_" << cudaArch << "\n";
    for (size_t c = 0; c < cases.size(); ++c)
      run(c, nullptr);
  }

  json::Array results;
  std::set<std::string> passed;
  int pass = 0, fail = 0, skip = 0;
  size_t hostLibrarySteps = 0, casesWithHostLibrarySteps = 0;
  std::map<std::string, size_t> graphBreaksByStep; // of passing cases only
  for (size_t c = 0; c < cases.size(); ++c) {
    std::string name = sys::path::filename(cases[c]).str();
    const CaseInfo &info = infos[c];
    const Outcome &outcome = outcomes[c];
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
    if (outcome.status == "pass")
      for (const std::string &step : outcome.hostGraphBreaks)
        ++graphBreaksByStep[step];
    if (!outcome.hostLibrarySteps.empty()) {
      hostLibrarySteps += outcome.hostLibrarySteps.size();
      ++casesWithHostLibrarySteps;
      outs() << "HOST-LIBRARY-STEPS " << name << ": " << join(outcome.hostLibrarySteps, ", ")
             << "\n";
    }
    json::Array ops, bound, hostSteps, graphBreaks;
    for (const std::string &op : info.ops)
      ops.push_back(op);
    for (const std::string &step : outcome.hostLibrarySteps)
      hostSteps.push_back(step);
    for (const std::string &step : outcome.hostGraphBreaks)
      graphBreaks.push_back(step);
    for (const std::string &b : outcome.boundInputs)
      bound.push_back(b);
    results.push_back(json::Object{{"name", name},
                                   {"status", outcome.status},
                                   {"reason", outcome.reason},
                                   {"ops", std::move(ops)},
                                   {"bound_inputs", std::move(bound)},
                                   {"host_library_steps", std::move(hostSteps)},
                                   {"host_graph_breaks", std::move(graphBreaks)}});
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

  // As test runners do: without an expected-results file, any failing case
  // fails the run; with one, only a difference from it does.
  int status = expectedPath.empty() && fail > 0 ? 1 : 0;
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
  if (backend == "cuda") {
    outs() << "library steps on the host: " << hostLibrarySteps << " in "
           << casesWithHostLibrarySteps << " cases\n";
    // What still round-trips through the host, by step: the work list of
    // device implementations (graph breaks in passing cases, so a failing
    // case's partial run does not count).
    size_t breaks = 0;
    std::string byStep;
    for (const auto &[step, count] : graphBreaksByStep) {
      breaks += count;
      byStep += (byStep.empty() ? "" : ", ") + step + " " + std::to_string(count);
    }
    outs() << "graph breaks on the host: " << breaks << (byStep.empty() ? "" : " (" + byStep + ")")
           << "\n";
    if (maxHostLibrarySteps >= 0 && hostLibrarySteps > static_cast<size_t>(maxHostLibrarySteps)) {
      outs() << "TOO MANY HOST LIBRARY STEPS: " << hostLibrarySteps << " (at most "
             << maxHostLibrarySteps << ")\n";
      status = 1;
    }
  }
  outs() << pass << " passed, " << fail << " failed, " << skip << " skipped\n";
  return nvrtcFailed ? 1 : status;
}
