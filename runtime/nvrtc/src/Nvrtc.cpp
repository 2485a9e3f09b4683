//===- Nvrtc.cpp - compile CUDA C to cubin and PTX ------------------------===//

#include "kiln/nvrtc/Nvrtc.h"

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

#include <nvrtc.h>

#include <memory>

namespace kiln::nvrtc {

namespace {

struct ProgramDeleter {
  void operator()(nvrtcProgram program) const { nvrtcDestroyProgram(&program); }
};
using ProgramPtr = std::unique_ptr<std::remove_pointer_t<nvrtcProgram>, ProgramDeleter>;

std::string programLog(nvrtcProgram program) {
  size_t size = 0;
  if (nvrtcGetProgramLogSize(program, &size) != NVRTC_SUCCESS || size <= 1)
    return "";
  std::string log(size, '\0');
  nvrtcGetProgramLog(program, log.data());
  log.resize(size - 1); // drop the terminating NUL
  return log;
}

/// Compiles `source` once with `arch` ("sm_90" for cubin, "compute_90" for PTX).
absl::StatusOr<std::pair<std::string, std::string>>
compileFor(const std::string &source, const std::string &name, const std::string &arch,
           const NvrtcOptions &given, bool wantCubin) {
  const std::vector<std::string> &extra = given.extraOptions;
  std::vector<const char *> headerTexts, headerNames;
  for (const auto &[include, text] : given.headers) {
    headerNames.push_back(include.c_str());
    headerTexts.push_back(text.c_str());
  }
  nvrtcProgram raw = nullptr;
  nvrtcResult r = nvrtcCreateProgram(&raw, source.c_str(), name.c_str(),
                                     static_cast<int>(headerTexts.size()), headerTexts.data(),
                                     headerNames.data());
  if (r != NVRTC_SUCCESS)
    return absl::InternalError(
        absl::StrCat(name, ": nvrtcCreateProgram failed: ", nvrtcGetErrorString(r)));
  ProgramPtr program(raw);
  // --device-int128: kiln_device.h's kiln_divisor computes its multiplier with
  // one 128-bit divide, once per kernel (the host compiler has __int128 anyway).
  std::vector<std::string> options = {"--gpu-architecture=" + arch, "--std=c++17",
                                      "-default-device", "--device-int128"};
  options.insert(options.end(), extra.begin(), extra.end());
  std::vector<const char *> argv;
  for (const std::string &o : options)
    argv.push_back(o.c_str());
  r = nvrtcCompileProgram(program.get(), static_cast<int>(argv.size()), argv.data());
  std::string log = programLog(program.get());
  if (r != NVRTC_SUCCESS)
    return absl::InvalidArgumentError(absl::StrCat(name, ": NVRTC failed for ", arch, ": ",
                                                   nvrtcGetErrorString(r), "\n", log));
  std::string binary;
  size_t size = 0;
  if (wantCubin) {
    nvrtcGetCUBINSize(program.get(), &size);
    binary.resize(size);
    nvrtcGetCUBIN(program.get(), binary.data());
  } else {
    nvrtcGetPTXSize(program.get(), &size);
    binary.resize(size);
    nvrtcGetPTX(program.get(), binary.data());
    if (!binary.empty() && binary.back() == '\0')
      binary.pop_back();
  }
  return std::make_pair(std::move(binary), std::move(log));
}

} // namespace

absl::StatusOr<NvrtcResult> compileWithNvrtc(const std::string &source,
                                             const std::string &name,
                                             const NvrtcOptions &options) {
  std::string sm = std::to_string(options.smVersion);
  auto cubin = compileFor(source, name, "sm_" + sm, options, true);
  if (!cubin.ok())
    return cubin.status();
  auto ptx = compileFor(source, name, "compute_" + sm, options, false);
  if (!ptx.ok())
    return ptx.status();
  NvrtcResult result;
  result.cubin = std::move(cubin->first);
  result.log = std::move(cubin->second);
  result.ptx = std::move(ptx->first);
  return result;
}

std::string nvrtcVersion() {
  int major = 0, minor = 0;
  ::nvrtcVersion(&major, &minor);
  return absl::StrCat(major, ".", minor);
}

} // namespace kiln::nvrtc
