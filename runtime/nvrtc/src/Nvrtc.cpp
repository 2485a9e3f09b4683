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

/// The text NVRTC left in `program` by one of its getters (`sizeOf`, `get`).
template <typename SizeFn, typename GetFn>
std::string programOutput(nvrtcProgram program, SizeFn sizeOf, GetFn get) {
  size_t size = 0;
  if (sizeOf(program, &size) != NVRTC_SUCCESS || size == 0)
    return std::string();
  std::string bytes(size, '\0');
  if (get(program, bytes.data()) != NVRTC_SUCCESS)
    return std::string();
  return bytes;
}

} // namespace

absl::StatusOr<NvrtcResult> compileWithNvrtc(const std::string &source,
                                             const std::string &name,
                                             const NvrtcOptions &given) {
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
  // One compile for a real architecture gives both outputs: the cubin, and the
  // PTX NVVM made on the way, which is the PTX a compile for compute_<sm> gives
  // (the same text, `.target sm_<sm>`; compiling twice for it cost 45% more).
  // --device-int128: kiln_device.h's kiln_divisor computes its multiplier with
  // one 128-bit divide, once per kernel (the host compiler has __int128 anyway).
  std::string arch = absl::StrCat("sm_", given.smVersion);
  std::vector<std::string> options = {"--gpu-architecture=" + arch, "--std=c++17",
                                      "-default-device", "--device-int128"};
  options.insert(options.end(), given.extraOptions.begin(), given.extraOptions.end());
  std::vector<const char *> argv;
  for (const std::string &o : options)
    argv.push_back(o.c_str());
  r = nvrtcCompileProgram(program.get(), static_cast<int>(argv.size()), argv.data());
  std::string log = programLog(program.get());
  if (r != NVRTC_SUCCESS)
    return absl::InvalidArgumentError(absl::StrCat(name, ": NVRTC failed for ", arch, ": ",
                                                   nvrtcGetErrorString(r), "\n", log));
  NvrtcResult result;
  result.cubin = programOutput(program.get(), nvrtcGetCUBINSize, nvrtcGetCUBIN);
  result.ptx = programOutput(program.get(), nvrtcGetPTXSize, nvrtcGetPTX);
  if (!result.ptx.empty() && result.ptx.back() == '\0')
    result.ptx.pop_back();
  if (result.cubin.empty() || result.ptx.empty())
    return absl::InternalError(absl::StrCat(name, ": NVRTC compiled for ", arch,
                                            " but gave no ", result.cubin.empty() ? "cubin" : "PTX"));
  result.log = std::move(log);
  return result;
}

std::string nvrtcVersion() {
  int major = 0, minor = 0;
  ::nvrtcVersion(&major, &minor);
  return absl::StrCat(major, ".", minor);
}

} // namespace kiln::nvrtc
