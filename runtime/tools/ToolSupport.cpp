//===- ToolSupport.cpp - what the runtime-only CLI tools share -----------===//

#include "ToolSupport.h"

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

namespace kiln::tools {

bool endsWith(const std::string &s, const char *suffix) {
  size_t n = std::strlen(suffix);
  return s.size() >= n && s.compare(s.size() - n, n, suffix) == 0;
}

std::string selfDir() {
  char buffer[4096];
  ssize_t n = readlink("/proc/self/exe", buffer, sizeof(buffer) - 1);
  if (n <= 0)
    return ".";
  std::string path(buffer, static_cast<size_t>(n));
  return path.substr(0, path.rfind('/'));
}

std::string sibling(const char *name) {
  std::string path = selfDir() + "/" + name;
  return access(path.c_str(), X_OK) == 0 ? path : "";
}

int spawn(const std::vector<std::string> &args) {
  std::vector<char *> argv;
  for (const std::string &a : args)
    argv.push_back(const_cast<char *>(a.c_str()));
  argv.push_back(nullptr);
  pid_t pid = fork();
  if (pid < 0)
    return -1;
  if (pid == 0) {
    execv(argv[0], argv.data());
    std::fprintf(stderr, "error: cannot run %s: %s\n", argv[0], std::strerror(errno));
    _exit(127);
  }
  int status = 0;
  while (waitpid(pid, &status, 0) < 0)
    if (errno != EINTR)
      return -1;
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

LoadableModel::~LoadableModel() {
  if (temporaryDir.empty())
    return;
  unlink(path.c_str());
  rmdir(temporaryDir.c_str());
}

bool prepareModel(const char *tool, const std::string &model, bool cuda,
                  const std::vector<std::string> &compileArgs, LoadableModel &out) {
  auto fail = [&](const std::string &message) {
    std::fprintf(stderr, "%s: error: %s\n", tool, message.c_str());
    return false;
  };
  if (endsWith(model, ".kiln") || endsWith(model, ".so")) {
    struct stat st;
    if (stat(model.c_str(), &st) != 0)
      return fail("cannot read the model " + model + ": no such file");
    out.path = model;
    return true;
  }
  // Compile first, with the kiln-compile beside this binary: the host
  // library always (for emulation), cubins only when CUDA may run it.
  std::string compiler = sibling("kiln-compile");
  if (compiler.empty())
    return fail("running " + model + " needs kiln-compile beside " + tool + " (in " + selfDir() +
                "); compile it elsewhere and run the .kiln here");
  char pattern[] = "/tmp/kiln-run-XXXXXX";
  if (!mkdtemp(pattern))
    return fail(std::string("cannot make a temporary folder: ") + std::strerror(errno));
  out.temporaryDir = pattern;
  out.path = out.temporaryDir + "/model.kiln";
  std::vector<std::string> args = {compiler, model, "-o", out.path};
  if (!cuda)
    args.insert(args.end(), {"--arch", "none"});
  args.insert(args.end(), compileArgs.begin(), compileArgs.end());
  return spawn(args) == 0; // kiln-compile said why
}

} // namespace kiln::tools
