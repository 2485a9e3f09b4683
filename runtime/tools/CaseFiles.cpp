//===- CaseFiles.cpp - a compiled test case as plain files -----------------===//

#include "CaseFiles.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

#include <fstream>
#include <optional>
#include <sstream>
#include <sys/stat.h>

namespace kiln {
namespace {

std::optional<ref::DType> dtypeNamed(const std::string &name) {
  for (int t = 0; t <= static_cast<int>(ref::DType::u2); ++t)
    if (name == ref::info(static_cast<ref::DType>(t)).name)
      return static_cast<ref::DType>(t);
  return std::nullopt;
}

absl::Status writeFile(const std::string &path, const void *data, size_t size) {
  std::ofstream out(path, std::ios::binary);
  out.write(static_cast<const char *>(data), static_cast<std::streamsize>(size));
  return out ? absl::OkStatus() : absl::InternalError(absl::StrCat("cannot write ", path));
}

} // namespace

absl::Status writeCaseSet(const std::string &dir, const std::string &artifact,
                          const CaseSet &set) {
  std::string partial;
  for (absl::string_view part : absl::StrSplit(dir, '/')) {
    partial += std::string(part) + "/";
    mkdir(partial.c_str(), 0755);
  }
  std::ostringstream manifest;
  manifest.precision(17);
  manifest << "rtol " << set.rtol << "\natol " << set.atol << "\n";
  for (auto [kind, list] : {std::pair("input", &set.inputs), std::pair("output", &set.outputs)})
    for (size_t k = 0; k < list->size(); ++k) {
      const ref::Tensor &t = (*list)[k];
      manifest << kind << " " << ref::info(t.dtype()).name;
      for (int64_t d : t.shape())
        manifest << " " << d;
      manifest << "\n";
      if (absl::Status s = writeFile(absl::StrCat(dir, "/", kind, "_", k, ".bin"), t.bytes(),
                                     t.byteSize());
          !s.ok())
        return s;
    }
  std::string text = manifest.str();
  if (absl::Status s = writeFile(dir + "/case.txt", text.data(), text.size()); !s.ok())
    return s;
  return writeFile(dir + "/model.kiln", artifact.data(), artifact.size());
}

absl::StatusOr<CaseSet> readCaseSet(const std::string &dir) {
  std::ifstream manifest(dir + "/case.txt");
  if (!manifest)
    return absl::NotFoundError(absl::StrCat("cannot read ", dir, "/case.txt"));
  CaseSet set;
  std::string line;
  while (std::getline(manifest, line)) {
    std::istringstream words(line);
    std::string kind, dtype;
    words >> kind;
    if (kind == "rtol" || kind == "atol") {
      (kind == "rtol" ? words >> set.rtol : words >> set.atol);
      continue;
    }
    if (kind != "input" && kind != "output")
      return absl::InvalidArgumentError(absl::StrCat(dir, "/case.txt: unknown line '", line, "'"));
    words >> dtype;
    std::optional<ref::DType> t = dtypeNamed(dtype);
    if (!t)
      return absl::InvalidArgumentError(absl::StrCat(dir, "/case.txt: unknown dtype ", dtype));
    ref::Shape shape;
    std::string word;
    int64_t count = 1;
    while (words >> word) {
      // A dim is a plain non-negative number, and the tensor a sane size, before
      // anything is allocated for it.
      if (word.size() > 15 || word.find_first_not_of("0123456789") != std::string::npos)
        return absl::InvalidArgumentError(
            absl::StrCat(dir, "/case.txt: dim '", word, "' is not a size"));
      shape.push_back(std::stoll(word));
      if (shape.size() > 64 || __builtin_mul_overflow(count, shape.back(), &count) ||
          count > (int64_t(1) << 36))
        return absl::InvalidArgumentError(absl::StrCat(dir, "/case.txt: '", line,
                                                       "' is absurdly large"));
    }
    std::vector<ref::Tensor> &list = kind == "input" ? set.inputs : set.outputs;
    std::string path = absl::StrCat(dir, "/", kind, "_", list.size(), ".bin");
    struct stat st;
    size_t need = static_cast<size_t>(count) * ref::info(*t).bytes;
    if (stat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode) ||
        static_cast<size_t>(st.st_size) != need)
      return absl::InvalidArgumentError(
          absl::StrCat(path, " is not a file of ", need, " bytes, as case.txt says"));
    ref::Tensor tensor(*t, shape);
    std::ifstream data(path, std::ios::binary);
    data.read(reinterpret_cast<char *>(tensor.bytes()), static_cast<std::streamsize>(tensor.byteSize()));
    if (!data && tensor.byteSize())
      return absl::InvalidArgumentError(absl::StrCat("cannot read ", tensor.byteSize(), " bytes from ", path));
    list.push_back(std::move(tensor));
  }
  return set;
}

} // namespace kiln
