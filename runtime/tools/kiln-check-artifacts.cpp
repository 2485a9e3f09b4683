//===- kiln-check-artifacts.cpp - run exported cases with the runtime alone ===//
//
//   kiln-check-artifacts DIR [--backend auto|cuda|host] [--expected FILE] [--quiet]
//
// Runs every case folder under DIR (written by kiln-conformance --export: a
// model.kiln, its inputs and expected outputs) through libkiln_runtime and
// compares with the ONNX test tolerances. Needs no MLIR, so it runs where only
// the runtime is: the GPU machine checks CUDA this way (tools/gpu-check.sh). A
// case is one folder of test/ data sets (<case>/<set>/case.txt). With --expected,
// a case in that file that fails is a regression (exit 1).
//
//===----------------------------------------------------------------------===//

#include "CaseFiles.h"
#include "RunModel.h"

#include "kiln/reference/Compare.h"

#include <dirent.h>
#include <sys/stat.h>

#include <algorithm>
#include <cstring>
#include <fstream>
#include <iostream>
#include <map>
#include <set>
#include <string>

namespace {

bool isDirectory(const std::string &path) {
  struct stat st;
  return stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

std::vector<std::string> children(const std::string &dir) {
  std::vector<std::string> out;
  if (DIR *d = opendir(dir.c_str())) {
    while (dirent *e = readdir(d))
      if (e->d_name[0] != '.' && isDirectory(dir + "/" + e->d_name))
        out.push_back(e->d_name);
    closedir(d);
  }
  std::sort(out.begin(), out.end());
  return out;
}

/// "" when every data set of the case passes, else the first problem.
std::string checkCase(const std::string &dir, kiln_backend_t backend) {
  for (const std::string &set : children(dir)) {
    std::string setDir = dir + "/" + set;
    absl::StatusOr<kiln::CaseSet> data = kiln::readCaseSet(setDir);
    if (!data.ok())
      return std::string(data.status().message());
    kiln_model_t *model = nullptr;
    if (kiln_model_load_file((setDir + "/model.kiln").c_str(), backend, &model) != KILN_OK)
      return std::string("load: ") + kiln_last_error();
    absl::StatusOr<std::vector<kiln::ref::Tensor>> got = kiln::runLoadedModel(model, data->inputs);
    kiln_model_destroy(model);
    if (!got.ok())
      return "run: " + std::string(got.status().message());
    if (got->size() != data->outputs.size())
      return "the model gave " + std::to_string(got->size()) + " outputs, expected " +
             std::to_string(data->outputs.size());
    for (size_t k = 0; k < got->size(); ++k) {
      std::string diff = kiln::ref::compareTensors((*got)[k], data->outputs[k], data->rtol,
                                                   data->atol, set + " output " + std::to_string(k));
      if (!diff.empty())
        return diff;
    }
  }
  return "";
}

} // namespace

int main(int argc, char **argv) {
  std::string root, expectedPath, backendName = "auto";
  bool quiet = false;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--backend" && i + 1 < argc)
      backendName = argv[++i];
    else if (a == "--expected" && i + 1 < argc)
      expectedPath = argv[++i];
    else if (a == "--quiet")
      quiet = true;
    else if (!a.empty() && a[0] != '-' && root.empty())
      root = a;
    else {
      std::cerr << "usage: kiln-check-artifacts DIR [--backend auto|cuda|host] [--expected FILE] "
                   "[--quiet]\n";
      return 2;
    }
  }
  std::map<std::string, kiln_backend_t> backends = {
      {"auto", KILN_BACKEND_AUTO}, {"cuda", KILN_BACKEND_CUDA}, {"host", KILN_BACKEND_HOST}};
  if (!backends.count(backendName) || root.empty() || !isDirectory(root)) {
    std::cerr << "kiln-check-artifacts: error: need a folder of exported cases and a backend "
                 "(auto, cuda, host)\n";
    return 2;
  }
  std::set<std::string> expected;
  if (!expectedPath.empty()) {
    std::ifstream in(expectedPath);
    if (!in) {
      std::cerr << "kiln-check-artifacts: error: cannot read " << expectedPath << "\n";
      return 2;
    }
    for (std::string line; std::getline(in, line);)
      if (!line.empty() && line[0] != '#')
        expected.insert(line);
  }
  int pass = 0, fail = 0, regressions = 0;
  std::set<std::string> present;
  for (const std::string &name : children(root)) {
    present.insert(name);
    std::string problem = checkCase(root + "/" + name, backends[backendName]);
    if (problem.empty()) {
      ++pass;
      if (!quiet)
        std::cout << "PASS " << name << "\n";
      continue;
    }
    ++fail;
    std::cout << "FAIL " << name << ": " << problem << "\n";
    if (expected.count(name)) {
      ++regressions;
      std::cout << "REGRESSION " << name << " was expected to pass\n";
    }
  }
  // A case expected to pass that is not in the folder did not run: that is a
  // failure too (an empty folder must not pass).
  int missing = 0;
  for (const std::string &name : expected)
    if (!present.count(name)) {
      ++missing;
      std::cout << "MISSING " << name << " was expected to pass but is not in " << root << "\n";
    }
  regressions += missing;
  std::cout << pass << " passed, " << fail + missing << " failed (" << backendName << ")\n";
  return regressions ? 1 : 0;
}
