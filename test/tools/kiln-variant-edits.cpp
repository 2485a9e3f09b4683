//===- kiln-variant-edits.cpp - variants whose metadata lies about their code -===//
//
//   kiln-variant-edits ARTIFACT.kiln [--backend host|cuda]
//
// Issue 32's class 7: a variant's metadata (Variant.values, VariantKernel.kernel,
// HostLibrary.variant) edited and the artifact resealed, so only the loader's
// own checks stand between the edit and code run at sizes it was not built
// for. Each edit below is made to a copy of ARTIFACT, which must have shape
// buckets, and the copy is loaded on the backend; a line per edit:
//
//   <edit>: refused: <the loader's message>
//   <edit>: LOADED
//
// and last "variant edits: N made, R refused". Exit 1 when any edit loaded
// (or none could be made): the loader must refuse every one, since each makes
// a variant claim code built for other values or other kernels.
//
//===----------------------------------------------------------------------===//

#include "kiln/artifact/Plan.h"
#include "kiln/runtime.h"
#include "kiln/schema/kiln_artifact_generated.h"

#include <cstdio>
#include <cstring>
#include <fstream>
#include <functional>
#include <sstream>
#include <string>
#include <vector>

namespace fb = kiln::schema;

namespace {

struct Edit {
  std::string what;
  /// Edits the model in place; false when the artifact has nothing to edit.
  std::function<bool(fb::Model *)> apply;
};

/// The edits `model` allows; `cubins`: for the CUDA backend, whose variants
/// are their cubins (on host emulation, their host libraries).
std::vector<Edit> edits(const fb::Model *model, bool cubins) {
  std::vector<Edit> out;
  size_t variants = model->variants() ? model->variants()->size() : 0;
  for (size_t v = 0; v < variants; ++v) {
    const fb::Variant *variant = model->variants()->Get(static_cast<flatbuffers::uoffset_t>(v));
    std::string name = variant->name() ? variant->name()->str() : std::to_string(v);
    // Claims other values: one more than its code was built for.
    for (size_t i = 0; variant->values() && i < variant->values()->size(); ++i)
      out.push_back({"variant " + name + ": value " + std::to_string(i) + " plus 1",
                     [v, i](fb::Model *m) {
                       auto *values = const_cast<flatbuffers::Vector<int64_t> *>(
                           m->variants()->Get(static_cast<flatbuffers::uoffset_t>(v))->values());
                       values->Mutate(static_cast<flatbuffers::uoffset_t>(i),
                                      values->Get(static_cast<flatbuffers::uoffset_t>(i)) + 1);
                       return true;
                     }});
    // Claims another variant's values (the two swap).
    if (v + 1 < variants)
      out.push_back({"variants " + std::to_string(v) + " and " + std::to_string(v + 1) +
                         ": values swapped",
                     [v](fb::Model *m) {
                       auto *a = const_cast<flatbuffers::Vector<int64_t> *>(
                           m->variants()->Get(static_cast<flatbuffers::uoffset_t>(v))->values());
                       auto *b = const_cast<flatbuffers::Vector<int64_t> *>(
                           m->variants()->Get(static_cast<flatbuffers::uoffset_t>(v + 1))->values());
                       if (a->size() != b->size())
                         return false;
                       bool differ = false;
                       for (flatbuffers::uoffset_t i = 0; i < a->size(); ++i) {
                         int64_t x = a->Get(i), y = b->Get(i);
                         differ = differ || x != y;
                         a->Mutate(i, y);
                         b->Mutate(i, x);
                       }
                       return differ;
                     }});
    // Claims one kernel's code is another's (two specialized kernels swap;
    // two whose numbers are not 0, which the writer leaves out as the default
    // and so cannot be edited in place).
    if (cubins)
      out.push_back({"variant " + name + ": two kernels swapped", [v](fb::Model *m) {
                       auto *kernels = m->variants()->Get(static_cast<flatbuffers::uoffset_t>(v))->kernels();
                       std::vector<fb::VariantKernel *> nonzero;
                       for (flatbuffers::uoffset_t k = 0; kernels && k < kernels->size(); ++k)
                         if (kernels->Get(k)->kernel() != 0)
                           nonzero.push_back(const_cast<fb::VariantKernel *>(kernels->Get(k)));
                       if (nonzero.size() < 2)
                         return false;
                       int x = nonzero[0]->kernel();
                       return nonzero[0]->mutate_kernel(nonzero[1]->kernel()) &&
                              nonzero[1]->mutate_kernel(x);
                     }});
  }
  // A variant's host launchers given to another variant (host emulation's
  // code; the CUDA backend runs the cubins and never reads them).
  size_t libraries = model->host_libraries() && !cubins ? model->host_libraries()->size() : 0;
  for (size_t l = 0; l < libraries && variants >= 2; ++l) {
    int owner = model->host_libraries()->Get(static_cast<flatbuffers::uoffset_t>(l))->variant();
    if (owner < 0)
      continue;
    int other = (owner + 1) % static_cast<int>(variants);
    out.push_back({"host library " + std::to_string(l) + ": variant " + std::to_string(owner) +
                       " -> " + std::to_string(other),
                   [l, other](fb::Model *m) {
                     const_cast<fb::HostLibrary *>(
                         m->host_libraries()->Get(static_cast<flatbuffers::uoffset_t>(l)))
                         ->mutate_variant(other);
                     return true;
                   }});
  }
  return out;
}

} // namespace

int main(int argc, char **argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: kiln-variant-edits ARTIFACT.kiln [--backend host|cuda]\n");
    return 2;
  }
  kiln_backend_t backend = KILN_BACKEND_HOST;
  for (int i = 2; i + 1 < argc; i += 2)
    if (std::strcmp(argv[i], "--backend") == 0)
      backend = std::strcmp(argv[i + 1], "cuda") == 0 ? KILN_BACKEND_CUDA : KILN_BACKEND_HOST;
  std::ifstream in(argv[1], std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  const std::string original = s.str();
  if (original.empty()) {
    std::fprintf(stderr, "kiln-variant-edits: error: cannot read %s\n", argv[1]);
    return 2;
  }
  // 8-byte aligned copies, as the loader requires.
  auto copy = [&] {
    std::vector<uint64_t> aligned((original.size() + 7) / 8);
    std::memcpy(aligned.data(), original.data(), original.size());
    return aligned;
  };
  std::vector<uint64_t> first = copy();
  std::vector<Edit> list = edits(fb::GetModel(first.data()), backend == KILN_BACKEND_CUDA);
  int made = 0, refused = 0;
  for (const Edit &edit : list) {
    std::vector<uint64_t> bytes = copy();
    auto *data = reinterpret_cast<uint8_t *>(bytes.data());
    if (!edit.apply(fb::GetMutableModel(data)))
      continue;
    kiln::artifact::sealArtifact(data, original.size());
    ++made;
    kiln_model_t *model = nullptr;
    if (kiln_model_load_memory(data, original.size(), backend, &model) == KILN_OK) {
      std::printf("%s: LOADED\n", edit.what.c_str());
      kiln_model_destroy(model);
      continue;
    }
    ++refused;
    std::printf("%s: refused: %s\n", edit.what.c_str(), kiln_last_error());
  }
  std::printf("variant edits: %d made, %d refused\n", made, refused);
  return made > 0 && refused == made ? 0 : 1;
}
