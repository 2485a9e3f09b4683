//===- kiln-compile.cpp - a model to an artifact or a shared object --------===//
//
//   kiln-compile MODEL -o OUT.kiln|OUT.so [--arch sm_80,sm_90|none] [--no-host]
//                [--no-optimize] [--dump-ir DIR] [--report FILE] [--bind SYM=N,...]
//                [--weights-file] [--pipeline PASSES] [--name C_NAME] [--cache-dir DIR]
//                [--jobs N]
//
// MODEL is .onnx or kiln .mlir. A .kiln is the artifact itself
// (docs/artifact-format.md); a .so embeds it in read-only data and exports
// `kiln_embedded_artifact` plus `<name>_load(backend, &model)`, linking only
// libkiln_runtime. Every problem is one line on stderr and exit code 1.
//
//===----------------------------------------------------------------------===//

#include "codegen/KernelCache.h"
#include "kiln/artifact/MemoryPlan.h"
#include "kiln/artifact/Plan.h"
#include "tools/Version.h"
#include "driver/Buckets.h"
#include "driver/PlanGraph.h"
#include "driver/Roofline.h"
#include "driver/Compile.h"
#include "driver/Explain.h"
#include "kiln/reference/Compare.h"
#include "driver/InitAll.h"
#include "tools/DiagnosticPrinter.h"
#include "driver/LoadModel.h"
#include "passes/Passes.h"

#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"
#include "llvm/ADT/ScopeExit.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Process.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/ToolOutputFile.h"
#include "llvm/Support/raw_ostream.h"

#include <chrono>

using namespace llvm;

static cl::OptionCategory category("kiln-compile options");
static cl::opt<std::string> modelPath(cl::Positional, cl::desc("<model.onnx|model.mlir>"),
                                      cl::Required, cl::cat(category));
static cl::opt<std::string> outputPath("o", cl::desc("Output: OUT.kiln (artifact) or OUT.so"),
                                       cl::value_desc("file"), cl::Required, cl::cat(category));
static cl::opt<std::string> archs(
    "arch", cl::desc("SM versions to compile cubins and PTX for, or 'none' (default sm_80,sm_90)"),
    cl::init("sm_80,sm_90"), cl::cat(category));
static cl::opt<bool> noHost("no-host",
                            cl::desc("Do not embed the host-emulation library (GPU only)"),
                            cl::cat(category));
static cl::opt<bool> noOptimize("no-optimize", cl::desc("Skip the graph pipeline"),
                                cl::cat(category));
static cl::opt<std::string> pipeline(
    "pipeline",
    cl::desc("The graph-level pass pipeline to run instead of the default "
             "(builtin.module(kiln-graph-pipeline)), as kiln-opt --pass-pipeline takes it"),
    cl::value_desc("passes"), cl::cat(category));
static cl::opt<std::string> dumpDir("dump-ir",
                                    cl::desc("Write the IR after each stage to DIR"),
                                    cl::value_desc("dir"), cl::cat(category));
static cl::opt<std::string> dumpCubins(
    "dump-cubins",
    cl::desc("Also write each kernel's cubins to DIR as <kernel>.sm_<N>.cubin (for SASS "
             "tools: tools/sass-lint.py)"),
    cl::value_desc("dir"), cl::cat(category));
static cl::opt<std::string> reportPath(
    "report",
    cl::desc("Write a JSON report: kernels, library calls, fusion groups, memory plan, "
             "time per stage"),
    cl::value_desc("file"), cl::cat(category));
static cl::opt<std::string> bind(
    "bind", cl::desc("Symbol values for the report's memory plan, SYM=N,... (others: 1)"),
    cl::value_desc("sym=n,..."), cl::cat(category));
static cl::opt<bool> explain(
    "explain",
    cl::desc("Print every op that is neither a generated kernel nor a GPU library call (a "
             "graph break): its node, why, and what it costs; then every guard calls check"),
    cl::cat(category));
static cl::opt<bool> strict(
    "strict", cl::desc("Refuse to compile a model with any graph break, listing them all"),
    cl::cat(category));
static cl::opt<bool> weightsFile(
    "weights-file",
    cl::desc("Write the weights to OUT's stem + .weights beside the output (mapped at load) "
             "instead of into the artifact"),
    cl::cat(category));
static cl::opt<std::string> cName(
    "name", cl::desc("C name of the .so's loader, <name>_load (default: from the output file)"),
    cl::cat(category));
static cl::opt<std::string> cacheDir(
    "cache-dir",
    cl::desc("Where compiled kernels are cached (default $KILN_CACHE_DIR or ~/.cache/kiln)"),
    cl::cat(category));
static cl::list<std::string> constantInputs(
    "constant-input",
    cl::desc("NAME=FILE.pb: bake this graph input in as a constant where an op needs its "
             "value at compile time (a Reshape's shape given as an input); repeatable"),
    cl::value_desc("name=file"), cl::cat(category));
static cl::opt<uint64_t> maxTensorBytes(
    "max-tensor-bytes",
    cl::desc("The largest tensor a model may have, in bytes (default 2^36 = 64 GiB): a "
             "static size over it, or one that overflows, is an error at its op"),
    cl::init(kiln::ref::kDefaultMaxTensorBytes), cl::cat(category));
static cl::opt<int> jobs("jobs", cl::desc("Compilers to run at once"), cl::init(2),
                         cl::cat(category));
static cl::opt<std::string> graphPath(
    "graph",
    cl::desc("Draw the plan to FILE.dot, or FILE.svg through Graphviz's dot: kernels by "
             "schedule with the ops they fuse, library calls, graph breaks, shape steps, "
             "and value sizes at the --bind symbol values"),
    cl::value_desc("file"), cl::cat(category));
static cl::opt<std::string> buckets(
    "buckets",
    cl::desc("Shape buckets to specialize kernels for: SYM=VALUES;SYM=VALUES, each value N or "
             "A..B/STEP (batch=1,8,32;seq=128..512/64); one variant per combination, the "
             "generic code for every other shape"),
    cl::value_desc("spec"), cl::cat(category));
static cl::opt<std::string> precision(
    "precision",
    cl::desc("fp32 (default: IEEE everywhere), tf32 (matmuls and convs may round fp32 "
             "operands to TF32), fp16 or bf16 (weights and activations stored narrow; "
             "kernels compute, and libraries accumulate, in fp32; reductions keep fp32 "
             "results), or fp8 (bf16, and matmuls by constant weights on FP8 tensor cores: "
             "e4m3 operands with a scale per tensor, the activations' from --calibrate; "
             "sm_89 or newer, default --arch sm_90); inputs and outputs keep their types. "
             "Tolerances: docs/precision.md"),
    cl::init("fp32"), cl::value_desc("mode"), cl::cat(category));
static cl::opt<std::string> calibrate(
    "calibrate",
    cl::desc("With --precision fp8: a folder of data sets laid out as the ONNX tests' "
             "(test_data_set_N/input_K.pb or .npy); the model runs on each in the float64 "
             "reference, and each FP8 matmul's activation scale is the largest magnitude it "
             "reaches there over 448 (larger values clamp)"),
    cl::value_desc("dir"), cl::cat(category));
static cl::opt<bool> kvCacheInPlace(
    "kv-cache-in-place",
    cl::desc("A decoder exported with its KV cache (past_key_values inputs, presents = "
             "concat(past, new) outputs): each past input becomes the cache itself "
             "[batch, heads, cache_capacity, head], updated in place with the new rows, its "
             "present output that same buffer; the past length is attention_mask's length "
             "minus the new tokens (docs/runtime.md)"),
    cl::cat(category));
static cl::opt<bool> sampleOnDevice(
    "sample-on-device",
    cl::desc("A decoder returning logits [batch, positions, vocabulary] also returns "
             "next_tokens [batch], each sequence's next token chosen in the model (greedy, or "
             "temperature/top-k/top-p from the caller's uniform draw), and its logits only at "
             "the positions chosen from ([batch, 1, vocabulary]), taking the inputs "
             "sample_positions, sample_uniform, sample_temperature, sample_top_k and "
             "sample_top_p; kiln_generate then copies back the tokens, not the logits "
             "(docs/runtime.md)"),
    cl::cat(category));
static cl::opt<std::string> weightsMode(
    "weights",
    cl::desc("float (default: as the model has them), int8 or int4: every matmul with a "
             "constant weight matrix reads it quantized per column in blocks of --group-size "
             "along K (round to nearest, a scale and zero point a block) through a kernel "
             "that dequantizes in registers (kiln.matmul_nbits). Accuracy: docs/precision.md"),
    cl::init("float"), cl::value_desc("mode"), cl::cat(category));
static cl::opt<int64_t> groupSize(
    "group-size",
    cl::desc("Weights a scale covers along K with --weights int4|int8: a power of 2 from 16 "
             "to 65536 (default 128)"),
    cl::init(128), cl::value_desc("n"), cl::cat(category));
static cl::list<std::string> dynamicRanges(
    "dynamic",
    cl::desc("SYM=MIN..MAX: the range of a symbol; calls outside it fail with a guard, and "
             "without --buckets kiln picks buckets in it (powers of two); repeatable"),
    cl::value_desc("sym=min..max"), cl::cat(category));

static int fail(const Twine &message) {
  errs() << "kiln-compile: error: " << message << "\n";
  return 1;
}

namespace {
using Clock = std::chrono::steady_clock;
double msSince(Clock::time_point t) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t).count();
}

/// A C identifier from the output's file name ("encoder.so" -> "encoder").
std::string identifierFrom(StringRef path) {
  std::string name;
  for (char c : sys::path::stem(path))
    name += (isalnum(static_cast<unsigned char>(c)) || c == '_') ? c : '_';
  if (name.empty() || isdigit(static_cast<unsigned char>(name[0])))
    name = "model_" + name;
  return name;
}

/// The folder of the libkiln_runtime a model .so links: `lib/` beside this
/// tool's `bin/`, in the build tree and in an installed (even moved) prefix alike.
/// kiln-compile itself never links the runtime.
std::string runtimeLibraryDir(const char *argv0) {
  std::string self = sys::fs::getMainExecutable(argv0, reinterpret_cast<void *>(&identifierFrom));
  SmallString<256> dir(sys::path::parent_path(sys::path::parent_path(self)));
  sys::path::append(dir, "lib");
  SmallString<256> library(dir);
  sys::path::append(library, "libkiln_runtime.so");
  return sys::fs::exists(library) ? dir.str().str() : "";
}

/// Links the artifact at `artifactPath` into a shared object at `out`.
LogicalResult writeSharedObject(StringRef artifactPath, StringRef out, StringRef name,
                                const char *argv0) {
  std::string cc = sys::Process::GetEnv("CC").value_or("cc");
  ErrorOr<std::string> compiler = sys::findProgramByName(cc);
  if (!compiler) {
    errs() << "kiln-compile: error: a .so needs a C compiler; '" << cc
           << "' is not on PATH (set CC)\n";
    return failure();
  }
  std::string libDir = runtimeLibraryDir(argv0);
  if (libDir.empty()) {
    errs() << "kiln-compile: error: cannot find libkiln_runtime.so in the lib/ folder beside "
              "kiln-compile's bin/ to link the .so against\n";
    return failure();
  }
  SmallString<256> absolute(artifactPath);
  sys::fs::make_absolute(absolute);
  SmallString<256> stub(out);
  stub += ".stub.c";
  {
    std::string text;
    raw_string_ostream os(text);
    // The artifact goes into read-only data, 64-byte aligned as its weights expect.
    os << "/* Generated by kiln-compile: the artifact of " << sys::path::filename(modelPath)
       << " and its loader. */\n"
       // The few C API declarations the loader needs, written out so that no
       // header has to be found (kiln/runtime.h declares the same; ABI v1).
       << "#include <stddef.h>\n"
       << "#define KILN_API __attribute__((visibility(\"default\")))\n"
       << "typedef int kiln_status_t;\n"
       << "typedef int kiln_backend_t;\n"
       << "typedef struct kiln_model_t kiln_model_t;\n"
       << "extern kiln_status_t kiln_model_load_embedded(const void *, size_t, kiln_backend_t,\n"
       << "                                              kiln_model_t **);\n"
       << "__asm__(\".section .rodata.kiln_artifact,\\\"a\\\",@progbits\\n\"\n"
       << "        \".balign 64\\n\"\n"
       << "        \".globl kiln_artifact_begin_" << name << "\\n\"\n"
       << "        \".hidden kiln_artifact_begin_" << name << "\\n\"\n"
       << "        \"kiln_artifact_begin_" << name << ":\\n\"\n"
       << "        \".incbin \\\"" << absolute << "\\\"\\n\"\n"
       << "        \".globl kiln_artifact_end_" << name << "\\n\"\n"
       << "        \".hidden kiln_artifact_end_" << name << "\\n\"\n"
       << "        \"kiln_artifact_end_" << name << ":\\n\"\n"
       << "        \".previous\\n\");\n"
       << "extern const unsigned char kiln_artifact_begin_" << name << "[];\n"
       << "extern const unsigned char kiln_artifact_end_" << name << "[];\n"
       << "KILN_API const void *kiln_embedded_artifact(size_t *size) {\n"
       << "  *size = (size_t)(kiln_artifact_end_" << name << " - kiln_artifact_begin_" << name
       << ");\n"
       << "  return kiln_artifact_begin_" << name << ";\n}\n"
       << "KILN_API kiln_status_t " << name
       << "_load(kiln_backend_t backend, kiln_model_t **out_model) {\n"
       << "  size_t size;\n"
       << "  const void *data = kiln_embedded_artifact(&size);\n"
       << "  return kiln_model_load_embedded(data, size, backend, out_model);\n}\n";
    if (std::error_code ec = kiln::writeFile(stub, text)) {
      errs() << "kiln-compile: error: cannot write " << stub << ": " << ec.message() << "\n";
      return failure();
    }
  }
  std::string temporary = (out + ".tmp").str();
  std::vector<std::string> args = {*compiler,   "-shared", "-fPIC", "-O1",
                                   "-fvisibility=hidden",
                                   "-o",        temporary,  stub.str().str(),
                                   "-L" + libDir, "-lkiln_runtime", "-Wl,-rpath," + libDir,
                                   // Applications record the file's own name, not
                                   // this machine's path to it.
                                   "-Wl,-soname," + sys::path::filename(out).str()};
  std::vector<StringRef> argv(args.begin(), args.end());
  std::string error;
  int rc = sys::ExecuteAndWait(*compiler, argv, std::nullopt, {}, 0, 0, &error);
  sys::fs::remove(stub);
  if (rc != 0) {
    sys::fs::remove(temporary);
    errs() << "kiln-compile: error: linking " << out << " failed (" << cc << " exit " << rc
           << ") " << error << "\n";
    return failure();
  }
  if (std::error_code ec = sys::fs::rename(temporary, out)) {
    errs() << "kiln-compile: error: cannot write " << out << ": " << ec.message() << "\n";
    return failure();
  }
  return success();
}
} // namespace

int main(int argc, char **argv) {
  InitLLVM init(argc, argv);
  kiln::registerAllPasses(); // for --pipeline
  cl::HideUnrelatedOptions(category);
  kiln::setVersionPrinter("kiln-compile");
  cl::ParseCommandLineOptions(argc, argv, "kiln-compile: compiles a model to an artifact\n");
  StringRef ext = sys::path::extension(outputPath);
  if (ext != ".kiln" && ext != ".so")
    return fail("output '" + outputPath + "' must end in .kiln or .so");
  StringRef graphExt = sys::path::extension(graphPath);
  if (!graphPath.empty() && graphExt != ".dot" && graphExt != ".svg")
    return fail("--graph '" + graphPath + "' must end in .dot or .svg");
  std::string graphviz;
  if (graphExt == ".svg") {
    ErrorOr<std::string> dot = sys::findProgramByName("dot");
    if (!dot)
      return fail("--graph " + graphPath +
                  " needs Graphviz's dot on PATH (scripts/install-deps.sh installs graphviz); "
                  "or write .dot");
    graphviz = *dot;
  }

  // The modes are that table's, and fp8 (checked against calibrated data, not
  // a tolerance of the node tests).
  bool fp8 = precision == "fp8";
  if (!fp8 && kiln::ref::precisionTolerance(precision) < 0)
    return fail("--precision '" + precision + "' is not one of fp32, tf32, fp16, bf16, fp8");
  if (!calibrate.empty() && !fp8)
    return fail("--calibrate sets FP8 scales: it needs --precision fp8");

  int64_t weightBits = weightsMode == "int4" ? 4 : weightsMode == "int8" ? 8 : 0;
  if (!weightBits && weightsMode != "float")
    return fail("--weights '" + weightsMode + "' is not one of float, int8, int4");
  if (groupSize < 16 || groupSize > 65536 || (groupSize & (groupSize - 1)) != 0)
    return fail("--group-size " + std::to_string(groupSize) +
                " is not a power of 2 from 16 to 65536");

  kiln::ArtifactOptions options;
  options.cubinArchs.clear();
  // FP8 tensor cores start at sm_89: fp8's default is sm_90 alone, and an
  // older arch asked for would run every FP8 matmul on the host.
  std::string archList = fp8 && archs.getNumOccurrences() == 0 ? "sm_90" : archs.getValue();
  if (archList != "none")
    for (StringRef a : llvm::split(StringRef(archList), ',')) {
      int sm = 0;
      if (!a.consume_front("sm_") || a.getAsInteger(10, sm) || sm < 50)
        return fail("--arch '" + archList + "' is not a list like sm_80,sm_90 (or 'none')");
      if (fp8 && sm < 89)
        return fail("--precision fp8 needs FP8 tensor cores (sm_89 or newer); --arch '" +
                    archList + "' has sm_" + std::to_string(sm));
      options.cubinArchs.push_back(sm);
    }
  options.hostLibrary = !noHost;
  options.cacheDir = cacheDir;
  options.jobs = jobs;
  if (!dumpCubins.empty()) {
    if (std::error_code ec = sys::fs::create_directories(dumpCubins))
      return fail("--dump-cubins " + dumpCubins + ": " + ec.message());
    options.cubinDumpDir = dumpCubins;
  }
  options.pipeline.precision = precision;
  options.pipeline.calibration = calibrate;
  options.pipeline.kvCacheInPlace = kvCacheInPlace;
  options.pipeline.sampleOnDevice = sampleOnDevice;
  options.pipeline.weightBits = weightBits;
  options.pipeline.weightGroupSize = groupSize;
  options.source = sys::path::filename(modelPath).str();
  SmallString<256> weightsPath(outputPath);
  sys::path::replace_extension(weightsPath, ".weights");
  if (weightsFile)
    options.weightsFile = sys::path::filename(weightsPath).str();
  // The weights go straight from the module's constants into the file as it
  // is written (the .kiln, the temporary artifact a .so links into itself, or
  // the weights file): a compile holds them once, the IR's.
  options.deferWeights = true;

  std::vector<kiln::SymbolRange> ranges;
  for (const std::string &spec : dynamicRanges) {
    llvm::Expected<kiln::SymbolRange> range = kiln::parseSymbolRange(spec);
    if (!range)
      return fail("--dynamic " + toString(range.takeError()));
    ranges.push_back(*range);
  }
  {
    // Buckets as asked, else from the declared ranges (the rule: Buckets.h).
    kiln::BucketLists lists;
    if (!buckets.empty()) {
      llvm::Expected<kiln::BucketLists> parsed = kiln::parseBuckets(buckets);
      if (!parsed)
        return fail("--buckets '" + buckets + "': " + toString(parsed.takeError()));
      lists = std::move(*parsed);
    } else {
      lists = kiln::bucketsFromRanges(ranges);
    }
    llvm::Expected<std::vector<kiln::Bucket>> expanded = kiln::expandBuckets(
        lists, buckets.empty() ? kiln::kMaxAutomaticBuckets : kiln::kMaxBuckets);
    if (!expanded)
      return fail("--buckets '" + buckets + "' " + toString(expanded.takeError()));
    options.variants = std::move(*expanded);
  }

  std::map<std::string, int64_t> binding;
  if (!bind.empty())
    for (StringRef item : llvm::split(StringRef(bind), ',')) {
      auto [sym, value] = item.split('=');
      int64_t v = 0;
      if (sym.empty() || value.getAsInteger(10, v) || v < 0)
        return fail("--bind '" + item + "' is not SYM=N");
      binding[sym.str()] = v;
    }

  mlir::DialectRegistry registry;
  kiln::registerAllDialects(registry);
  mlir::MLIRContext context(registry);
  kiln::OneLineDiagnostics diagnostics(context);

  auto dump = [&](StringRef stage, mlir::ModuleOp module) {
    if (dumpDir.empty())
      return;
    static int counter = 0;
    sys::fs::create_directories(dumpDir);
    SmallString<256> path(dumpDir);
    sys::path::append(path, std::to_string(++counter) + "-" + stage.str() + ".mlir");
    std::string text;
    raw_string_ostream os(text);
    module.print(os);
    (void)kiln::writeFile(path, text); // a debugging aid: best effort
  };

  Clock::time_point start = Clock::now();
  kiln::LoadOptions load;
  for (const std::string &spec : constantInputs) {
    auto [name, file] = StringRef(spec).split('=');
    if (name.empty() || file.empty())
      return fail("--constant-input '" + spec + "' is not NAME=FILE");
    load.import.constantInputs[name.str()] = file.str();
  }
  load.optimize = false;
  mlir::OwningOpRef<mlir::ModuleOp> module = kiln::loadModel(context, modelPath, load);
  if (!module)
    return 1;
  double importMs = msSince(start);
  double importPeakMb = kiln::peakResidentMegabytes();
  dump("imported", *module);
  if (failed(kiln::checkTensorSizes(*module, maxTensorBytes)) ||
      failed(kiln::addRangeGuards(*module, ranges)))
    return 1;
  start = Clock::now();
  if (!noOptimize) {
    mlir::PassManager pm(&context);
    if (pipeline.empty()) {
      // FP8 Q/DQ matmuls become FP8 calls where every target GPU has FP8
      // tensor cores (an older one would run them on the host).
      kiln::GraphPipelineOptions graph;
      graph.float8Products = llvm::all_of(options.cubinArchs, [](int sm) { return sm >= 89; });
      kiln::buildGraphPipeline(pm, graph);
    } else {
      std::string error;
      raw_string_ostream errors(error);
      if (failed(kiln::parseModulePipeline(pipeline, pm, errors)))
        return fail("--pipeline '" + pipeline + "': " + StringRef(error).trim());
    }
    if (failed(pm.run(*module)))
      return 1;
    dump("graph-pipeline", *module);
    if (failed(kiln::checkTensorSizes(*module, maxTensorBytes)))
      return 1;
  }
  double pipelineMs = msSince(start);
  double pipelinePeakMb = kiln::peakResidentMegabytes();

  mlir::FailureOr<kiln::CompiledArtifact> artifact =
      kiln::compileToArtifact(*module, options, dump);
  if (failed(artifact))
    return 1;
  if (explain || strict) {
    // Graph breaks: one line each, "MODEL: at 'NODE': graph break: ...".
    const llvm::json::Array *breaks = artifact->report.getArray("graph_breaks");
    size_t count = breaks ? breaks->size() : 0;
    if (strict && count) {
      for (const llvm::json::Value &b : *breaks)
        errs() << kiln::graphBreakLine(b, modelPath, /*asError=*/true) << "\n";
      return fail("--strict: " + Twine(count) +
                  (count == 1 ? " op is neither a generated kernel nor a GPU library call"
                              : " ops are neither generated kernels nor GPU library calls") +
                  "; nothing written");
    }
    if (explain)
      outs() << kiln::explainText(artifact->report, modelPath);
  }

  start = Clock::now();
  std::string artifactPath = ext == ".kiln" ? outputPath.getValue() : outputPath + ".kiln.tmp";
  // Written to a temporary beside the target and renamed over it: a process
  // that has the old file mapped keeps reading the old bytes (rewriting in place
  // would change them under it, or SIGBUS it on truncation).
  auto write = [](StringRef path, llvm::function_ref<LogicalResult(raw_ostream &)> contents) -> bool {
    std::string temporary = (path + ".tmp" + Twine(sys::Process::getProcessId())).str();
    std::error_code ec;
    {
      raw_fd_ostream os(temporary, ec, sys::fs::OF_None);
      if (!ec) {
        bool written = succeeded(contents(os));
        os.close();
        ec = os.error();
        os.clear_error(); // read: an unread stream error is a fatal error at destruction
        if (!written && !ec) {
          // A weight could not be read from the module (its diagnostic is above).
          sys::fs::remove(temporary);
          fail("cannot write " + path + ": a weight could not be read");
          return false;
        }
      }
    }
    if (!ec)
      ec = sys::fs::rename(temporary, path);
    if (ec) {
      sys::fs::remove(temporary);
      fail("cannot write " + path + ": " + ec.message());
      return false;
    }
    return true;
  };
  // The weights first: an artifact never names weights not yet in place (and a
  // reader that meets the new artifact with old weights is refused by their
  // checksum, never run).
  if ((weightsFile && !write(weightsPath,
                             [&](raw_ostream &os) { return kiln::writeWeightsFile(*artifact, os); })) ||
      !write(artifactPath,
             [&](raw_ostream &os) { return kiln::writeArtifact(*artifact, os); }))
    return 1;
  // A .so's artifact is a temporary, kept until the report has read it back.
  llvm::scope_exit removeTemporary([&] {
    if (ext == ".so")
      sys::fs::remove(artifactPath);
  });
  if (ext == ".so") {
    std::string name = cName.empty() ? identifierFrom(outputPath) : cName.getValue();
    if (failed(writeSharedObject(artifactPath, outputPath, name, argv[0])))
      return 1;
  }
  double writeMs = msSince(start);
  double writePeakMb = kiln::peakResidentMegabytes();

  if (!reportPath.empty() || !graphPath.empty()) {
    llvm::json::Object report = std::move(artifact->report);
    report["model"] = modelPath.getValue();
    report["output"] = outputPath.getValue();
    report["artifact_bytes"] = static_cast<int64_t>(artifact->size());
    if (auto *stages = report.getObject("stage_ms")) {
      (*stages)["import"] = importMs;
      (*stages)["graph_pipeline"] = pipelineMs;
      (*stages)["write"] = writeMs;
    }
    if (auto *peaks = report.getObject("stage_peak_rss_mb")) {
      (*peaks)["import"] = importPeakMb;
      (*peaks)["graph_pipeline"] = pipelinePeakMb;
      (*peaks)["write"] = writePeakMb;
    }
    // The file at `path` as written, mapped; null (after an error) when it
    // does not read.
    auto readBack = [&](StringRef path) -> std::unique_ptr<MemoryBuffer> {
      ErrorOr<std::unique_ptr<MemoryBuffer>> file =
          MemoryBuffer::getFile(path, /*IsText=*/false, /*RequiresNullTerminator=*/false);
      if (!file) {
        fail("cannot read back " + path + ": " + file.getError().message());
        return nullptr;
      }
      return std::move(*file);
    };
    // The memory plan the runtime will use, under the given symbol values,
    // read back from the file when the weights went straight to it.
    std::unique_ptr<MemoryBuffer> written;
    if (artifact->deferredWeights) {
      if (!(written = readBack(artifactPath)))
        return 1;
      artifact->bytes.clear();
    }
    StringRef artifactBytes = written ? written->getBuffer() : StringRef(artifact->bytes);
    auto *bytes = reinterpret_cast<const uint8_t *>(artifactBytes.data());
    // With --weights-file the weights are not in the artifact: read them from
    // the file beside it, as the runtime would (or from memory, when they
    // were not deferred).
    std::unique_ptr<MemoryBuffer> writtenWeights;
    if (artifact->deferredWeightsFile && !(writtenWeights = readBack(weightsPath)))
      return 1;
    StringRef weightBytes =
        writtenWeights ? writtenWeights->getBuffer() : StringRef(artifact->weights);
    auto weights = [&](const std::string &) -> absl::StatusOr<std::pair<const uint8_t *, size_t>> {
      return std::make_pair(reinterpret_cast<const uint8_t *>(weightBytes.data()),
                            weightBytes.size());
    };
    absl::StatusOr<kiln::artifact::Plan> plan =
        kiln::artifact::readArtifact(bytes, artifactBytes.size(), weights);
    if (!plan.ok())
      return fail("the artifact does not read back: " + std::string(plan.status().message()));
    kiln::artifact::Bindings symbols;
    llvm::json::Object bound;
    // Symbols steps bind from their results or read from the device
    // (data-dependent sizes) have no value until the call runs: the runtime
    // plans those values then too.
    // (at the top level and in an if's branches).
    std::set<int> runBound;
    kiln::artifact::forEachStep(*plan, [&](const kiln::artifact::StepInfo &step) {
      for (const kiln::artifact::StepInfo::Binding &b : step.binds)
        runBound.insert(b.symbol);
      runBound.insert(step.readSymbols.begin(), step.readSymbols.end());
    });
    for (size_t i = 0; i < plan->symbols.size(); ++i) {
      const std::string &s = plan->symbols[i];
      if (runBound.count(static_cast<int>(i))) {
        symbols.push_back(std::nullopt);
        continue;
      }
      auto it = binding.find(s);
      int64_t v = it == binding.end() ? 1 : it->second;
      symbols.push_back(v);
      bound[s] = v;
    }
    absl::StatusOr<kiln::artifact::MemoryPlan> planned =
        kiln::artifact::planMemory(*plan, kiln::artifact::planningSymbols(*plan, symbols),
                                   maxTensorBytes);
    if (!planned.ok())
      return fail("the report's memory plan: " + std::string(planned.status().message()));
    const kiln::artifact::MemoryPlan &memory = *planned;
    report["memory_plan"] = llvm::json::Object{
        {"symbols", std::move(bound)},
        {"arena_bytes", static_cast<int64_t>(memory.peakBytes)},
        {"sum_of_buffers_bytes", static_cast<int64_t>(memory.sumBytes)},
        {"planned_values", static_cast<int64_t>(memory.plannedValues)},
        {"values_sized_at_run_time", static_cast<int64_t>(memory.dynamicValues)},
        {"views", static_cast<int64_t>(memory.viewValues)}};
    // Each kernel's work items under the same symbols, as launches size grids:
    // what the schedule states, else the result's elements (`stated` says
    // which); null where a symbol is only known at run time.
    llvm::json::Object launchWork;
    for (const kiln::artifact::KernelInfo &k : plan->kernels) {
      std::optional<int64_t> items;
      if (k.workItems.known()) {
        items = k.workItems.evaluate(symbols);
      } else if (!k.bufferShapes.empty()) {
        items = 1;
        for (const kiln::artifact::Dim &d : k.bufferShapes[0]) {
          std::optional<int64_t> v = d.evaluate(symbols);
          items = v ? std::optional<int64_t>(*items * *v) : std::nullopt;
          if (!items)
            break;
        }
      }
      llvm::json::Object work{
          {"work_items", items ? llvm::json::Value(*items) : llvm::json::Value(nullptr)},
          {"stated", k.workItems.known()},
          {"block_per_item", k.blockPerItem}};
      // The kernel scratch a launch takes (split keys' partials), if any.
      if (k.scratchBytes.known()) {
        std::optional<int64_t> bytes = k.scratchBytes.evaluate(symbols);
        work["scratch_bytes"] = bytes ? llvm::json::Value(*bytes) : llvm::json::Value(nullptr);
      }
      launchWork[k.name] = std::move(work);
    }
    report["launch_work"] = std::move(launchWork);
    // Bytes, operations and predicted times per step under the same symbols.
    report["roofline"] = kiln::rooflineReport(*plan, symbols);
    if (!graphPath.empty()) {
      std::string dotText = kiln::planToDot(*plan, report, symbols);
      std::string dotFile = graphExt == ".dot" ? graphPath.getValue() : graphPath + ".dot.tmp";
      if (std::error_code ec = kiln::writeFile(dotFile, dotText))
        return fail("cannot write " + dotFile + ": " + ec.message());
      if (graphExt == ".svg") {
        std::vector<StringRef> args = {graphviz, "-Tsvg", "-o", graphPath, dotFile};
        std::string error;
        int rc = sys::ExecuteAndWait(graphviz, args, std::nullopt, {}, 0, 0, &error);
        sys::fs::remove(dotFile);
        if (rc != 0)
          return fail("Graphviz's dot failed on the plan (exit " + Twine(rc) + ") " + error);
      }
    }
    if (!reportPath.empty()) {
      std::string text;
      raw_string_ostream os(text);
      os << llvm::formatv("{0:2}", llvm::json::Value(std::move(report))) << "\n";
      if (std::error_code ec = kiln::writeFile(reportPath, text))
        return fail("cannot write " + reportPath + ": " + ec.message());
    }
  }
  return 0;
}
