//===- kiln-run.cpp - runs, checks and measures a model -------------------===//
//
//   kiln-run MODEL --input NAME=FILE ... [--output-dir DIR] [--print]
//            [--backend auto|cuda|host|reference] [--device N] [--cache-dir DIR]
//            [--no-optimize]
//            [--bench N [--warmup K]] [--profile [--trace FILE]] [--version]
//
// A runtime-only tool: it links libkiln_runtime and nothing of the compiler
// (no LLVM, no MLIR), so it runs compiled models (.kiln, .so) wherever the
// runtime does, the GPU machine included. An .onnx or kiln .mlir model is
// compiled first by the kiln-compile beside this binary, into a temporary
// artifact; `--backend reference` hands the whole command to kiln-reference
// (the float64 interpreter, compiler side) beside it. FILE is an ONNX
// TensorProto (.pb) or a numpy .npy. Outputs are written as DIR/output_K.pb.
// Every problem is one line on stderr and exit code 1.
//
//===----------------------------------------------------------------------===//

#include "RunModel.h"
#include "TensorFiles.h"
#include "ToolSupport.h"
#include "kiln/runtime.h"
#include "kiln/version.h"

#include "absl/strings/numbers.h"


#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <string>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <vector>

namespace {

using kiln::tools::endsWith;
using kiln::tools::selfDir;
using kiln::tools::sibling;

int fail(const std::string &message) {
  std::fprintf(stderr, "kiln-run: error: %s\n", message.c_str());
  return 1;
}

struct Options {
  std::string model;
  std::vector<std::string> inputs;
  std::string outputDir, backend = "auto", cacheDir, tracePath = "kiln-trace.json";
  bool print = false, noOptimize = false, profile = false;
  int bench = 0, warmup = 3, device = 0;
  uint64_t maxTensorBytes = KILN_DEFAULT_MAX_TENSOR_BYTES;
};

const char *const kUsage =
    "USAGE: kiln-run MODEL --input NAME=FILE... [options]\n"
    "  MODEL                 a compiled model (.kiln, .so), or .onnx / kiln .mlir (compiled\n"
    "                        first by the kiln-compile beside kiln-run)\n"
    "  --input NAME=FILE     an input (.pb TensorProto or .npy); repeatable\n"
    "  --output-dir DIR      write outputs as DIR/output_K.pb\n"
    "  --print               print the backend and a summary of each output\n"
    "  --backend B           auto (CUDA when a device is present, else host emulation; the\n"
    "                        default), cuda, host, or reference (the float64 interpreter,\n"
    "                        .onnx/.mlir only, through kiln-reference)\n"
    "  --device N            the CUDA device to run on (default 0)\n"
    "  --cache-dir DIR       where compiled kernels are cached ($KILN_CACHE_DIR, ~/.cache/kiln)\n"
    "  --max-tensor-bytes N  the largest tensor a run (and compile) may create (default\n"
    "                        2^36 = 64 GiB); a larger one is an error naming it\n"
    "  --no-optimize         compile .onnx/.mlir without the graph pipeline\n"
    "  --bench N             time N runs and print latency statistics\n"
    "  --warmup K            untimed runs before --bench (default 3)\n"
    "  --profile             per-step table sorted by total time, and a Chrome trace\n"
    "  --trace FILE          where --profile writes its trace (default kiln-trace.json)\n"
    "  --version             print kiln's version\n";

/// Parses `--flag value` and `--flag=value` forms.
int parse(int argc, char **argv, Options &o) {
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg.rfind("--", 0) != 0 && arg != "-") {
      if (!o.model.empty())
        return fail("more than one model given ('" + o.model + "' and '" + arg + "')");
      o.model = arg;
      continue;
    }
    std::string flag = arg, value;
    bool inlineValue = false;
    if (size_t eq = arg.find('='); eq != std::string::npos) {
      flag = arg.substr(0, eq);
      value = arg.substr(eq + 1);
      inlineValue = true;
    }
    auto take = [&](std::string &out) -> bool {
      if (inlineValue) {
        out = value;
        return true;
      }
      if (i + 1 >= argc)
        return false;
      out = argv[++i];
      return true;
    };
    auto count = [&](int &out) -> bool {
      std::string text;
      if (!take(text) || text.empty() || text.size() > 9 ||
          text.find_first_not_of("0123456789") != std::string::npos)
        return false;
      out = std::atoi(text.c_str());
      return true;
    };
    if (flag == "--input") {
      std::string spec;
      if (!take(spec))
        return fail("--input needs NAME=FILE");
      o.inputs.push_back(spec);
    } else if (flag == "--output-dir") {
      if (!take(o.outputDir))
        return fail("--output-dir needs a folder");
    } else if (flag == "--backend") {
      if (!take(o.backend))
        return fail("--backend needs a value");
    } else if (flag == "--device") {
      if (!count(o.device))
        return fail("--device takes a device ordinal (0, 1, ...)");
    } else if (flag == "--cache-dir") {
      if (!take(o.cacheDir))
        return fail("--cache-dir needs a folder");
    } else if (flag == "--trace") {
      if (!take(o.tracePath))
        return fail("--trace needs a file");
    } else if (flag == "--bench") {
      if (!count(o.bench))
        return fail("--bench and --warmup take a count of runs");
    } else if (flag == "--max-tensor-bytes") {
      std::string text;
      if (!take(text) || !absl::SimpleAtoi(text, &o.maxTensorBytes) || o.maxTensorBytes == 0)
        return fail("--max-tensor-bytes takes a positive byte count");
    } else if (flag == "--warmup") {
      if (!count(o.warmup))
        return fail("--bench and --warmup take a count of runs");
    } else if (flag == "--print" && !inlineValue) {
      o.print = true;
    } else if (flag == "--no-optimize" && !inlineValue) {
      o.noOptimize = true;
    } else if (flag == "--profile" && !inlineValue) {
      o.profile = true;
    } else if ((flag == "--help" || flag == "-help") && !inlineValue) {
      std::fputs(kUsage, stdout);
      std::exit(0);
    } else if (flag == "--version" && !inlineValue) {
      std::printf("kiln-run %s (kiln C API %d.%d)\n", KILN_VERSION, KILN_API_VERSION_MAJOR,
                  KILN_API_VERSION_MINOR);
      std::exit(0);
    } else {
      return fail("unknown option '" + arg + "' (see kiln-run --help)");
    }
  }
  if (o.model.empty())
    return fail("no model given (see kiln-run --help)");
  return 0;
}

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

std::string jsonString(const std::string &s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\')
      out += '\\';
    if (static_cast<unsigned char>(c) < 0x20) {
      char escaped[8];
      std::snprintf(escaped, sizeof(escaped), "\\u%04x", c);
      out += escaped;
      continue;
    }
    out += c;
  }
  return out + "\"";
}

int writeProfile(kiln_profile_t *prof, int runs, const std::string &tracePath) {
  struct Row {
    std::string name, kind;
    double total = 0;
    int calls = 0;
    /// Over the calls whose work is known (kiln_profile_event_work).
    double bytes = 0, bytesUs = 0, flops = 0, flopsUs = 0;
  };
  // One row per step name and kind: MatMul steps in cuBLASLt and in cuDNN
  // (or refused and run on the host) are rows apart.
  std::map<std::pair<std::string, std::string>, Row> rows;
  std::map<std::string, int> variants; ///< runs per variant
  std::string events;
  for (size_t i = 0; i < kiln_profile_num_events(prof); ++i) {
    const char *name, *kind;
    double start, duration;
    kiln_profile_event(prof, i, &name, &kind, &start, &duration);
    if (std::string(kind) == "variant") {
      ++variants[name];
      char at[64];
      std::snprintf(at, sizeof(at), "\"ts\":%.3f", start);
      events += std::string(events.empty() ? "" : ",\n") + "{\"name\":" +
                jsonString(std::string("variant ") + name) + ",\"cat\":\"variant\",\"ph\":\"i\"," +
                at + ",\"s\":\"t\",\"pid\":1,\"tid\":1}";
      continue;
    }
    Row &row = rows[{name, kind}];
    row.name = name;
    row.kind = kind;
    row.total += duration;
    ++row.calls;
    int64_t bytes = -1;
    double flops = -1;
    if (kiln_profile_event_work(prof, i, &bytes, &flops) == KILN_OK) {
      if (bytes >= 0) {
        row.bytes += static_cast<double>(bytes);
        row.bytesUs += duration;
      }
      if (flops >= 0) {
        row.flops += flops;
        row.flopsUs += duration;
      }
    }
    char times[128];
    std::snprintf(times, sizeof(times), "\"ts\":%.3f,\"dur\":%.3f", start, duration);
    // What the step had to move and compute, for the trace viewer's details.
    std::string args;
    char number[64];
    if (bytes >= 0) {
      std::snprintf(number, sizeof(number), "\"bytes\":%lld", static_cast<long long>(bytes));
      args += number;
    }
    if (flops >= 0) {
      std::snprintf(number, sizeof(number), "\"flops\":%.17g", flops);
      args += (args.empty() ? "" : ",") + std::string(number);
    }
    events += std::string(events.empty() ? "" : ",\n") + "{\"name\":" + jsonString(name) +
              ",\"cat\":" + jsonString(kind) + ",\"ph\":\"X\"," + times + ",\"pid\":1,\"tid\":1" +
              (args.empty() ? "" : ",\"args\":{" + args + "}") + "}";
  }
  std::vector<Row> sorted;
  for (auto &[key, row] : rows)
    sorted.push_back(row);
  std::sort(sorted.begin(), sorted.end(), [](const Row &a, const Row &b) { return a.total > b.total; });
  double all = 0;
  for (const Row &row : sorted)
    all += row.total;
  // Achieved rates: the bytes each step had to move and the operations it had
  // to do (the roofline's counts, at the run's sizes) over its measured time.
  std::printf("%-40s %-8s %8s %12s %12s %7s %9s %9s\n", "step", "kind", "calls", "total ms",
              "mean us", "share", "GB/s", "TFLOP/s");
  for (const Row &row : sorted) {
    char gbs[32] = "-", tflops[32] = "-";
    if (row.bytesUs > 0 && row.bytes > 0)
      std::snprintf(gbs, sizeof(gbs), "%.3g", row.bytes / row.bytesUs / 1e3);
    if (row.flopsUs > 0 && row.flops > 0)
      std::snprintf(tflops, sizeof(tflops), "%.3g", row.flops / row.flopsUs / 1e6);
    std::printf("%-40s %-8s %8d %12.3f %12.1f %6.1f%% %9s %9s\n", row.name.c_str(), row.kind.c_str(),
                row.calls, row.total / 1000.0, row.total / row.calls,
                all > 0 ? 100.0 * row.total / all : 0.0, gbs, tflops);
  }
  std::printf("%zu steps over %d run(s); trace: %s\n", sorted.size(), runs, tracePath.c_str());
  for (const auto &[name, count] : variants)
    std::printf("variant: %s (%d run(s))\n", name.c_str(), count);
  FILE *trace = std::fopen(tracePath.c_str(), "w");
  if (!trace)
    return fail("cannot write " + tracePath + ": " + std::strerror(errno));
  std::fprintf(trace, "{\"traceEvents\":[\n%s\n],\"displayTimeUnit\":\"ms\"}\n", events.c_str());
  std::fclose(trace);
  return 0;
}

} // namespace

int main(int argc, char **argv) {
  Options o;
  if (int rc = parse(argc, argv, o))
    return rc;
  std::map<std::string, kiln_backend_t> backends = {
      {"auto", KILN_BACKEND_AUTO}, {"cuda", KILN_BACKEND_CUDA}, {"host", KILN_BACKEND_HOST}};
  bool reference = o.backend == "reference";
  if (!reference && !backends.count(o.backend))
    return fail("backend '" + o.backend + "' is not one of auto, cuda, host, reference");
  bool compiled = endsWith(o.model, ".kiln") || endsWith(o.model, ".so");
  if (reference && compiled)
    return fail("--backend reference runs .onnx or .mlir models; " + o.model +
                " is compiled (use host or cuda)");
  if (reference && (o.bench || o.profile))
    return fail("--bench and --profile measure compiled models, not the reference interpreter");
  if (reference) {
    // The interpreter is compiler code: kiln-reference runs the same command.
    std::string tool = sibling("kiln-reference");
    if (tool.empty())
      return fail("--backend reference needs kiln-reference beside kiln-run (in " + selfDir() +
                  "); it comes with kiln's compiler");
    std::vector<char *> args = {const_cast<char *>(tool.c_str())};
    for (int i = 1; i < argc; ++i)
      args.push_back(argv[i]);
    args.push_back(nullptr);
    execv(tool.c_str(), args.data());
    return fail("cannot run " + tool + ": " + std::strerror(errno));
  }

  absl::StatusOr<std::map<std::string, std::string>> specs = kiln::parseInputSpecs(o.inputs);
  if (!specs.ok())
    return fail(std::string(specs.status().message()));
  const std::map<std::string, std::string> &inputFiles = *specs;

  // An .onnx or .mlir model is compiled first, with the kiln-compile beside
  // this binary: the host library always (for emulation), cubins only when
  // CUDA may run it.
  int devices = 0;
  bool cuda = o.backend == "cuda" ||
              (o.backend == "auto" && kiln_cuda_device_count(&devices) == KILN_OK && devices > 0);
  std::vector<std::string> compileArgs;
  if (o.noOptimize)
    compileArgs.push_back("--no-optimize");
  compileArgs.push_back("--max-tensor-bytes=" + std::to_string(o.maxTensorBytes));
  if (!o.cacheDir.empty())
    compileArgs.insert(compileArgs.end(), {"--cache-dir", o.cacheDir});
  // Inputs an op needs as compile-time values (a Reshape's shape given as an
  // input, ...) are baked in from the TensorProto files given for them.
  for (const auto &[name, file] : inputFiles)
    if (endsWith(file, ".pb"))
      compileArgs.insert(compileArgs.end(), {"--constant-input", name + "=" + file});
  kiln::tools::LoadableModel artifact;
  if (!kiln::tools::prepareModel("kiln-run", o.model, cuda, compileArgs, artifact))
    return 1;
  const std::string &modelFile = artifact.path;

  kiln_model_t *model = nullptr;
  kiln_load_options_t loadOptions = KILN_LOAD_OPTIONS_INIT;
  loadOptions.backend = backends[o.backend];
  loadOptions.device = o.device;
  if (kiln_model_load_file_with(modelFile.c_str(), &loadOptions, &model) != KILN_OK) {
    std::string message = kiln_last_error();
    // A temporary artifact is nobody's file: name the model instead.
    if (!compiled && message.rfind(modelFile, 0) == 0)
      message = o.model + message.substr(modelFile.size());
    return fail(message);
  }
  struct Destroy {
    kiln_model_t *model;
    ~Destroy() { kiln_model_destroy(model); }
  } destroy{model};

  // Every call's status is checked: an info that fails leaves its struct unset.
  std::vector<std::string> inputNames, outputNames;
  for (bool input : {true, false}) {
    size_t n = 0;
    if ((input ? kiln_model_num_inputs(model, &n) : kiln_model_num_outputs(model, &n)) != KILN_OK)
      return fail(kiln_last_error());
    for (size_t i = 0; i < n; ++i) {
      kiln_tensor_info_t info;
      if ((input ? kiln_model_input_info(model, i, &info)
                 : kiln_model_output_info(model, i, &info)) != KILN_OK)
        return fail(kiln_last_error());
      (input ? inputNames : outputNames).push_back(info.name ? info.name : "");
    }
  }
  absl::StatusOr<std::vector<std::string>> files = kiln::matchInputFiles(inputFiles, inputNames);
  if (!files.ok())
    return fail(std::string(files.status().message()));
  std::vector<kiln::ref::Tensor> inputs;
  for (const std::string &file : *files) {
    absl::StatusOr<kiln::NamedTensor> t = kiln::readTensorFile(file);
    if (!t.ok()) {
      std::fprintf(stderr, "%s\n", std::string(t.status().message()).c_str());
      return 1;
    }
    inputs.push_back(std::move(t->tensor));
  }

  if (o.bench || o.profile || o.print) {
    const char *description = "";
    kiln_model_backend_description(model, &description);
    std::printf("backend: %s\n", description);
  }
  auto runOnce = [&](std::vector<kiln::ref::Tensor> &outputs, kiln_profile_t *prof) {
    absl::StatusOr<std::vector<kiln::ref::Tensor>> r =
        kiln::runLoadedModel(model, inputs, prof, o.maxTensorBytes);
    if (!r.ok())
      return fail(std::string(r.status().message()));
    outputs = std::move(*r);
    return 0;
  };
  std::vector<kiln::ref::Tensor> outputs;
  if (int rc = runOnce(outputs, nullptr))
    return rc;
  if (o.bench > 0) {
    for (int i = 0; i < o.warmup; ++i)
      if (int rc = runOnce(outputs, nullptr))
        return rc;
    std::vector<double> ms;
    for (int i = 0; i < o.bench; ++i) {
      auto start = std::chrono::steady_clock::now();
      if (int rc = runOnce(outputs, nullptr))
        return rc;
      ms.push_back(
          std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
              .count());
    }
    Stats s = statistics(ms);
    std::vector<kiln_tensor_t> in;
    for (kiln::ref::Tensor &t : inputs)
      in.push_back(kiln::tensorView(t));
    size_t arena = 0, unplanned = 0;
    kiln_model_memory(model, in.data(), in.size(), &arena, &unplanned);
    std::printf("latency ms over %d runs (%d warm-up): min %.3f median %.3f p90 %.3f p99 %.3f "
                "mean %.3f\n",
                o.bench, o.warmup, s.min, s.median, s.p90, s.p99, s.mean);
    std::printf("throughput: %.1f runs/s; arena %zu bytes (unplanned %zu)\n", 1000.0 / s.mean,
                arena, unplanned);
  }
  if (o.profile) {
    kiln_profile_t *prof = nullptr;
    kiln_profile_create(&prof);
    int runs = std::max(1, std::min(o.bench, 20));
    int rc = 0;
    for (int i = 0; i < runs && !rc; ++i)
      rc = runOnce(outputs, prof);
    if (!rc)
      rc = writeProfile(prof, runs, o.tracePath);
    kiln_profile_destroy(prof);
    if (rc)
      return rc;
  }

  if (absl::Status s = kiln::emitOutputs(outputs, outputNames, o.outputDir, o.print); !s.ok())
    return fail(std::string(s.message()));
  return 0;
}
