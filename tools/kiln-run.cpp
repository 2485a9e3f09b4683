//===- kiln-run.cpp - runs, checks and measures a model -------------------===//
//
//   kiln-run MODEL --input NAME=FILE ... [--output-dir DIR] [--print]
//            [--backend auto|cuda|host|reference] [--cache-dir DIR] [--no-optimize]
//            [--bench N --warmup K] [--profile [--trace FILE]]
//
// MODEL is a compiled model (.kiln artifact or .so from kiln-compile) or a model
// kiln compiles in memory first (.onnx, kiln .mlir). FILE is an ONNX TensorProto
// (.pb) or a numpy .npy. Outputs are written as DIR/output_K.pb TensorProtos
// named after the model's outputs. `reference` runs the float64 reference
// interpreter on .onnx/.mlir. Every problem is one line on stderr and exit code 1.
//
//===----------------------------------------------------------------------===//

#include "interpreter/Interpreter.h"
#include "kiln/runtime.h"
#include "tools/Compile.h"
#include "tools/InitAll.h"
#include "tools/DiagnosticPrinter.h"
#include "tools/LoadModel.h"
#include "tools/TensorIO.h"

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
    "backend",
    cl::desc("auto (CUDA when a device is present, else host emulation; the default), cuda, "
             "host (generated kernels compiled for the CPU, library ops on the reference "
             "kernels), or reference (the float64 interpreter; .onnx/.mlir only)"),
    cl::init("auto"), cl::cat(category));
static cl::opt<std::string> cacheDir(
    "cache-dir",
    cl::desc("Where compiled kernels are cached (default $KILN_CACHE_DIR or ~/.cache/kiln)"),
    cl::cat(category));
static cl::opt<bool> print("print", cl::desc("Print a summary of each output"),
                           cl::cat(category));
static cl::opt<bool> noOptimize("no-optimize",
                                cl::desc("Compile the model as imported, without the graph pipeline"),
                                cl::cat(category));
static cl::opt<int> bench("bench", cl::desc("Time N runs and print latency statistics"),
                          cl::init(0), cl::value_desc("n"), cl::cat(category));
static cl::opt<int> warmup("warmup", cl::desc("Untimed runs before --bench (default 3)"),
                           cl::init(3), cl::value_desc("k"), cl::cat(category));
static cl::opt<bool> profile(
    "profile", cl::desc("Print a per-kernel table sorted by total time and write a Chrome trace"),
    cl::cat(category));
static cl::opt<std::string> tracePath("trace",
                                      cl::desc("Where --profile writes its Chrome trace "
                                               "(default kiln-trace.json)"),
                                      cl::init("kiln-trace.json"), cl::value_desc("file"),
                                      cl::cat(category));

static int fail(const Twine &message) {
  errs() << "kiln-run: error: " << message << "\n";
  return 1;
}

namespace {

struct Stats {
  double min, median, p90, p99, mean;
};

Stats statistics(std::vector<double> ms) {
  std::sort(ms.begin(), ms.end());
  auto at = [&](double q) {
    size_t i = static_cast<size_t>(q * static_cast<double>(ms.size() - 1) + 0.5);
    return ms[std::min(i, ms.size() - 1)];
  };
  double sum = 0;
  for (double v : ms)
    sum += v;
  return {ms.front(), at(0.5), at(0.9), at(0.99), sum / static_cast<double>(ms.size())};
}

/// A loaded compiled model and the names of its inputs and outputs.
struct Compiled {
  kiln_model_t *model = nullptr;
  std::vector<std::string> inputs, outputs;
  ~Compiled() { kiln_model_destroy(model); }
};

int runCompiled(const Compiled &c, std::vector<kiln::ref::Tensor> &inputs,
                std::vector<kiln::ref::Tensor> &outputs, kiln_profile_t *prof) {
  absl::StatusOr<std::vector<kiln::ref::Tensor>> r = kiln::runLoadedModel(c.model, inputs, prof);
  if (!r.ok())
    return fail(std::string(r.status().message()));
  outputs = std::move(*r);
  return 0;
}

int loadCompiled(Compiled &c, const std::string &path, const std::string &bytes,
                 kiln_backend_t b) {
  kiln_status_t s = bytes.empty() ? kiln_model_load_file(path.c_str(), b, &c.model)
                                  : kiln_model_load_memory(bytes.data(), bytes.size(), b, &c.model);
  if (s != KILN_OK)
    return fail(kiln_last_error());
  size_t n = 0;
  kiln_model_num_inputs(c.model, &n);
  for (size_t i = 0; i < n; ++i) {
    kiln_tensor_info_t info;
    kiln_model_input_info(c.model, i, &info);
    c.inputs.push_back(info.name);
  }
  kiln_model_num_outputs(c.model, &n);
  for (size_t i = 0; i < n; ++i) {
    kiln_tensor_info_t info;
    kiln_model_output_info(c.model, i, &info);
    c.outputs.push_back(info.name);
  }
  return 0;
}

int writeProfile(kiln_profile_t *prof, int runs) {
  struct Row {
    std::string kind;
    double total = 0;
    int calls = 0;
  };
  std::map<std::string, Row> rows;
  json::Array events;
  for (size_t i = 0; i < kiln_profile_num_events(prof); ++i) {
    const char *name, *kind;
    double start, duration;
    kiln_profile_event(prof, i, &name, &kind, &start, &duration);
    Row &row = rows[name];
    row.kind = kind;
    row.total += duration;
    ++row.calls;
    events.push_back(json::Object{{"name", name}, {"cat", kind}, {"ph", "X"},
                                  {"ts", start}, {"dur", duration}, {"pid", 1}, {"tid", 1}});
  }
  std::vector<std::pair<std::string, Row>> sorted(rows.begin(), rows.end());
  std::sort(sorted.begin(), sorted.end(),
            [](const auto &a, const auto &b) { return a.second.total > b.second.total; });
  double all = 0;
  for (auto &[name, row] : sorted)
    all += row.total;
  outs() << formatv("{0,-40} {1,-8} {2,8} {3,12} {4,12} {5,7}\n", "step", "kind", "calls",
                    "total ms", "mean us", "share");
  for (auto &[name, row] : sorted)
    outs() << formatv("{0,-40} {1,-8} {2,8} {3,12:F3} {4,12:F1} {5,6:F1}%\n", name, row.kind,
                      row.calls, row.total / 1000.0, row.total / row.calls,
                      all > 0 ? 100.0 * row.total / all : 0.0);
  outs() << formatv("{0} steps over {1} run(s); trace: {2}\n", sorted.size(), runs, tracePath);
  std::error_code ec;
  raw_fd_ostream os(tracePath, ec);
  if (ec)
    return fail("cannot write " + tracePath + ": " + ec.message());
  os << json::Value(json::Object{{"traceEvents", std::move(events)},
                                 {"displayTimeUnit", "ms"}})
     << "\n";
  return 0;
}

} // namespace

int main(int argc, char **argv) {
  InitLLVM init(argc, argv);
  cl::HideUnrelatedOptions(category);
  cl::ParseCommandLineOptions(argc, argv, "kiln-run: runs a model on given inputs\n");
  std::map<std::string, kiln_backend_t> backends = {
      {"auto", KILN_BACKEND_AUTO}, {"cuda", KILN_BACKEND_CUDA}, {"host", KILN_BACKEND_HOST}};
  bool reference = backend == "reference";
  if (!reference && !backends.count(backend))
    return fail("backend '" + backend + "' is not one of auto, cuda, host, reference");
  if (bench < 0 || warmup < 0)
    return fail("--bench and --warmup take a count of runs");
  StringRef ext = sys::path::extension(modelPath);
  bool compiled = ext == ".kiln" || ext == ".so";
  if (reference && compiled)
    return fail("--backend reference runs .onnx or .mlir models; " + modelPath +
                " is compiled (use host or cuda)");
  if (reference && (bench || profile))
    return fail("--bench and --profile measure compiled models, not the reference interpreter");

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

  mlir::OwningOpRef<mlir::ModuleOp> module;
  mlir::func::FuncOp func;
  Compiled model;
  std::vector<std::string> inputNames, outputNames;
  if (compiled) {
    if (!sys::fs::exists(modelPath))
      return fail("cannot read the model " + modelPath + ": no such file");
    if (int rc = loadCompiled(model, modelPath, "", backends[backend]))
      return rc;
    inputNames = model.inputs;
    outputNames = model.outputs;
  } else {
    kiln::LoadOptions options;
    options.optimize = !noOptimize;
    // Inputs an op needs as compile-time values (Reshape's shape given as an
    // input, ...) are baked in from the files given for them.
    for (const auto &[name, file] : inputFiles)
      if (StringRef(file).ends_with(".pb"))
        options.import.constantInputs[name] = file;
    module = kiln::loadModel(context, modelPath, options);
    if (!module)
      return 1;
    func = kiln::entryFunction(*module);
    if (!func)
      return 1;
    for (unsigned i = 0; i < func.getNumArguments(); ++i) {
      auto attr = func.getArgAttrOfType<mlir::StringAttr>(i, "kiln.name");
      inputNames.push_back(attr ? attr.str() : "arg" + std::to_string(i));
    }
    for (unsigned i = 0; i < func.getNumResults(); ++i) {
      auto attr = func.getResultAttrOfType<mlir::StringAttr>(i, "kiln.name");
      outputNames.push_back(attr ? attr.str() : "output" + std::to_string(i));
    }
  }

  // Match the given inputs to the model's by name.
  for (const auto &[name, file] : inputFiles)
    if (std::find(inputNames.begin(), inputNames.end(), name) == inputNames.end()) {
      std::string known;
      for (const std::string &n : inputNames)
        known += (known.empty() ? "" : ", ") + n;
      return fail("the model has no input '" + name + "' (its inputs: " + known + ")");
    }
  std::vector<kiln::ref::Tensor> inputs;
  for (const std::string &name : inputNames) {
    auto it = inputFiles.find(name);
    if (it == inputFiles.end())
      return fail("missing input '" + name + "' (give it with --input " + name + "=FILE)");
    mlir::FailureOr<kiln::ref::Tensor> t = kiln::readTensorFile(context, it->second);
    if (failed(t))
      return 1;
    inputs.push_back(std::move(*t));
  }

  std::vector<kiln::ref::Tensor> outputs;
  if (reference) {
    mlir::FailureOr<std::vector<kiln::ref::Tensor>> r = kiln::interpret(func, inputs);
    if (failed(r))
      return 1;
    outputs = std::move(*r);
  } else {
    if (!compiled) {
      // Compile in memory: the host library always (for emulation), cubins only
      // when CUDA may run it.
      kiln::ArtifactOptions options;
      options.cacheDir = cacheDir;
      options.source = sys::path::filename(modelPath).str();
      int devices = 0;
      bool cuda = backend == "cuda" || (backend == "auto" && kiln_cuda_device_count(&devices) == KILN_OK);
      if (!cuda)
        options.cubinArchs.clear();
      mlir::FailureOr<kiln::CompiledArtifact> artifact = kiln::compileToArtifact(*module, options);
      if (failed(artifact))
        return 1;
      if (int rc = loadCompiled(model, modelPath, artifact->bytes, backends[backend]))
        return rc;
    }
    if (bench || profile || print) {
      const char *description = "";
      kiln_model_backend_description(model.model, &description);
      outs() << "backend: " << description << "\n";
    }
    if (int rc = runCompiled(model, inputs, outputs, nullptr))
      return rc;
    if (bench > 0) {
      for (int i = 0; i < warmup; ++i)
        if (int rc = runCompiled(model, inputs, outputs, nullptr))
          return rc;
      std::vector<double> ms;
      for (int i = 0; i < bench; ++i) {
        auto start = std::chrono::steady_clock::now();
        if (int rc = runCompiled(model, inputs, outputs, nullptr))
          return rc;
        ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() -
                                                               start)
                         .count());
      }
      Stats s = statistics(ms);
      std::vector<kiln_tensor_t> in;
      for (kiln::ref::Tensor &t : inputs)
        in.push_back(kiln::tensorView(t));
      size_t arena = 0, unplanned = 0;
      kiln_model_memory(model.model, in.data(), in.size(), &arena, &unplanned);
      outs() << formatv("latency ms over {0} runs ({1} warm-up): min {2:F3} median {3:F3} "
                        "p90 {4:F3} p99 {5:F3} mean {6:F3}\n",
                        bench, warmup, s.min, s.median, s.p90, s.p99, s.mean);
      outs() << formatv("throughput: {0:F1} runs/s; arena {1} bytes (unplanned {2})\n",
                        1000.0 / s.mean, arena, unplanned);
    }
    if (profile) {
      kiln_profile_t *prof = nullptr;
      kiln_profile_create(&prof);
      int runs = std::max(1, std::min<int>(bench, 20));
      for (int i = 0; i < runs; ++i)
        if (int rc = runCompiled(model, inputs, outputs, prof)) {
          kiln_profile_destroy(prof);
          return rc;
        }
      int rc = writeProfile(prof, runs);
      kiln_profile_destroy(prof);
      if (rc)
        return rc;
    }
  }

  if (!outputDir.empty()) {
    if (std::error_code ec = sys::fs::create_directories(outputDir))
      return fail("cannot create " + outputDir + ": " + ec.message());
  }
  for (auto [k, t] : llvm::enumerate(outputs)) {
    std::string name = k < outputNames.size() ? outputNames[k] : "output" + std::to_string(k);
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
