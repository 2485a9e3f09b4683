//===- kiln-runtime-fuzz.cpp - the runtime's hostile-input fuzzers ---------===//
//
//   kiln-runtime-fuzz tensor-files|artifacts|run-sizes [--iterations N] [--seed S]
//                     FILE...
//
// Built with AddressSanitizer and UndefinedBehaviorSanitizer over the runtime's
// own sources (reference kernels, artifact reader, executors, C API, tensor
// files), so a read past a buffer or a wrapped size is a crash here even when it
// would go unnoticed in a release build. Each mode mutates its seeds and feeds
// them in; everything it does must end in a value or a clean error:
//
//   tensor-files  .npy and .pb seeds with bytes flipped, headers rewritten, dims
//                 made huge, negative or long, files cut short or padded.
//   artifacts     .kiln seeds edited field by field (indices, dims, dtypes,
//                 enums, step tables' scalars, kernel signatures, guards,
//                 variants' values, symbols and kernels, host libraries'
//                 variants), the
//                 checksum recomputed so only the loader's own checks stand
//                 between the edit and the executor; every artifact that loads
//                 is run on inputs made from its metadata.
//   run-sizes     models whose sizes are int64 inputs (Expand, Tile, Pad,
//                 Reshape, Slice, Range, ConstantOfShape) run with random,
//                 negative, zero, huge and extreme values, and random symbolic
//                 dims; an output that comes back must have dims >= 0 and the
//                 bytes they need.
//
// Exit status 0 when every iteration ended cleanly; the sanitizers abort the
// process on anything else. The iteration count bounds the run (make test).
//
//===----------------------------------------------------------------------===//

#include "TensorFiles.h"
#include "kiln/artifact/Plan.h"
#include "kiln/runtime.h"
#include "kiln/schema/kiln_artifact_generated.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <limits>
#include <random>
#include <sstream>
#include <string>
#include <vector>

namespace fb = kiln::schema;

namespace {

std::mt19937_64 rng;

uint64_t pick(uint64_t n) { return n ? rng() % n : 0; }
bool chance(int percent) { return static_cast<int>(pick(100)) < percent; }

/// Values that break size arithmetic and index checks.
int64_t interesting() {
  static const int64_t kValues[] = {0,  1,  -1, 2,  3,  -2, 7,  255, 256, 65535, INT32_MAX,
                                    INT32_MIN, int64_t(1) << 31, int64_t(1) << 32,
                                    int64_t(1) << 40, int64_t(1) << 62, INT64_MAX, INT64_MIN};
  if (chance(20))
    return static_cast<int64_t>(pick(16)) - 4;
  return kValues[pick(sizeof(kValues) / sizeof(kValues[0]))];
}

std::string readFile(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

bool endsWith(const std::string &s, const std::string &suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

//===--- tensor files -------------------------------------------------------===//

void mutateBytes(std::string &bytes) {
  int edits = 1 + static_cast<int>(pick(4));
  for (int e = 0; e < edits; ++e) {
    size_t at = pick(bytes.size() + 1);
    switch (pick(7)) {
    case 0: // flip a bit
      if (!bytes.empty())
        bytes[pick(bytes.size())] ^= static_cast<char>(1u << pick(8));
      break;
    case 1: // a byte that means something to one of the parsers
      if (!bytes.empty()) {
        static const char kBytes[] = {0, '\xff', '9', '(', ')', ',', '-', '\'', ':', '{', '}',
                                      ' ', '\n', 0x08, 0x10, 0x1a, 0x22, 0x3a, 0x42};
        bytes[pick(bytes.size())] = kBytes[pick(sizeof(kBytes))];
      }
      break;
    case 2: // cut short
      bytes.resize(pick(bytes.size() + 1));
      break;
    case 3: // a long run of digits (dims of 24 digits, header lengths)
      bytes.insert(at, std::string(1 + pick(30), static_cast<char>('0' + pick(10))));
      break;
    case 4: // a negative or huge number in text
      bytes.insert(at, std::to_string(interesting()));
      break;
    case 5: // a slice repeated (headers of 40 KB, nested tuples)
      if (!bytes.empty()) {
        size_t from = pick(bytes.size()), length = 1 + pick(std::min<size_t>(64, bytes.size() - from));
        std::string slice = bytes.substr(from, length);
        for (uint64_t r = pick(200); r > 0; --r)
          bytes.insert(at, slice);
      }
      break;
    case 6: // a varint or little-endian length field rewritten
      if (bytes.size() >= 8) {
        int64_t v = interesting();
        std::memcpy(&bytes[pick(bytes.size() - 7)], &v, 8);
      }
      break;
    }
  }
}

int fuzzTensorFiles(const std::vector<std::string> &seeds, int iterations) {
  std::vector<std::string> bytes;
  for (const std::string &s : seeds)
    bytes.push_back(readFile(s));
  int parsed = 0;
  for (int i = 0; i < iterations; ++i) {
    size_t which = pick(seeds.size());
    std::string data = bytes[which];
    mutateBytes(data);
    if (endsWith(seeds[which], ".npy")) {
      absl::StatusOr<kiln::ref::Tensor> t = kiln::parseNpy(data);
      parsed += t.ok();
      if (t.ok() && t->byteSize() > data.size())
        return std::fprintf(stderr, "a %zu-byte .npy gave a %zu-byte tensor\n", data.size(),
                            t->byteSize()), 1;
    } else {
      absl::StatusOr<kiln::NamedTensor> t = kiln::parseTensorProto(data);
      parsed += t.ok();
    }
  }
  std::printf("tensor-files: %d iterations, %d parsed, 0 crashes\n", iterations, parsed);
  return 0;
}

//===--- running a model ----------------------------------------------------===//

/// Inputs from the model's metadata: symbolic dims random in [0, 4], int64
/// data from `intValue`, floats small. Returns false when an input's dims
/// cannot be made (none of the fuzzers' seeds has such inputs).
bool makeInputs(kiln_model_t *model, const std::function<int64_t()> &intValue,
                std::vector<std::vector<uint8_t>> &storage, std::vector<kiln_tensor_t> &inputs) {
  size_t n = 0;
  if (kiln_model_num_inputs(model, &n) != KILN_OK)
    return false;
  storage.assign(n, {});
  inputs.assign(n, kiln_tensor_t{});
  for (size_t i = 0; i < n; ++i) {
    kiln_tensor_info_t info;
    std::memset(&info, 0, sizeof(info));
    if (kiln_model_input_info(model, i, &info) != KILN_OK)
      return false;
    kiln_tensor_t &t = inputs[i];
    std::memset(&t, 0, sizeof(t));
    t.dtype = info.dtype;
    t.rank = info.rank;
    size_t count = 1;
    for (int d = 0; d < info.rank; ++d) {
      t.dims[d] = info.dims[d] >= 0 ? info.dims[d] : static_cast<int64_t>(pick(5));
      if (t.dims[d] > 64)
        return false;
      count *= static_cast<size_t>(t.dims[d]);
    }
    size_t element = info.dtype == KILN_F64 || info.dtype == KILN_I64 || info.dtype == KILN_U64 ? 8
                     : info.dtype == KILN_F32 || info.dtype == KILN_I32 || info.dtype == KILN_U32 ? 4
                     : info.dtype == KILN_F16 || info.dtype == KILN_BF16 || info.dtype == KILN_I16 ||
                             info.dtype == KILN_U16
                         ? 2
                         : 1;
    storage[i].assign(std::max<size_t>(count * element, 1), 0);
    for (size_t k = 0; k < count; ++k) {
      if (info.dtype == KILN_I64) {
        int64_t v = intValue();
        std::memcpy(&storage[i][k * 8], &v, 8);
      } else if (info.dtype == KILN_F32) {
        float v = static_cast<float>(static_cast<int64_t>(pick(2001)) - 1000) / 100.0f;
        std::memcpy(&storage[i][k * 4], &v, 4);
      } else if (info.dtype == KILN_I32) {
        int32_t v = static_cast<int32_t>(intValue());
        std::memcpy(&storage[i][k * 4], &v, 4);
      }
    }
    t.data = storage[i].data();
    t.size_bytes = count * element;
  }
  return true;
}

/// One run: a status, or outputs whose dims and sizes agree (checked here).
bool runChecked(kiln_model_t *model, const std::vector<kiln_tensor_t> &inputs,
                uint64_t maxTensorBytes, int &succeeded) {
  size_t n = 0;
  kiln_model_num_outputs(model, &n);
  std::vector<kiln_tensor_t> outputs(n); // value-initialized: zeros
  std::vector<std::vector<uint8_t>> buffers(n);
  kiln_run_options_t options = KILN_RUN_OPTIONS_INIT;
  options.max_tensor_bytes = maxTensorBytes;
  // When the sizes are not all known before running (one depends on the
  // data), the ones it filled in before failing are not to be trusted either:
  // start from empty buffers and let the run say what it needs.
  bool known =
      kiln_model_output_shapes(model, inputs.data(), inputs.size(), outputs.data(), n) == KILN_OK;
  for (size_t i = 0; i < n; ++i) {
    if (!known)
      outputs[i].size_bytes = 0;
    else if (outputs[i].size_bytes > maxTensorBytes)
      return true; // the caller would refuse to allocate it: a clean end
  }
  for (int attempt = 0; attempt < 3; ++attempt) {
    for (size_t i = 0; i < n; ++i) {
      buffers[i].assign(std::max<size_t>(outputs[i].size_bytes, 1), 0);
      outputs[i].data = buffers[i].data();
      outputs[i].size_bytes = buffers[i].size();
    }
    kiln_status_t s =
        kiln_model_run(model, inputs.data(), inputs.size(), outputs.data(), n, &options);
    if (s == KILN_OUT_OF_RANGE) {
      bool grow = false;
      for (size_t i = 0; i < n; ++i) {
        if (outputs[i].size_bytes > maxTensorBytes)
          return true; // a caller would not allocate that much: a clean end
        grow = grow || outputs[i].size_bytes > buffers[i].size();
      }
      if (grow && attempt < 2)
        continue;
    }
    if (s != KILN_OK) {
      if (!kiln_last_error() || !*kiln_last_error()) {
        std::fprintf(stderr, "a failed run (status %d) left no error message\n", s);
        return false;
      }
      return true;
    }
    for (size_t i = 0; i < n; ++i) {
      uint64_t count = 1;
      for (int d = 0; d < outputs[i].rank; ++d) {
        if (outputs[i].dims[d] < 0) {
          std::fprintf(stderr, "output %zu came back with dim %d = %lld\n", i, d,
                       static_cast<long long>(outputs[i].dims[d]));
          return false;
        }
        count *= static_cast<uint64_t>(outputs[i].dims[d]);
      }
      if (outputs[i].size_bytes > buffers[i].size()) {
        std::fprintf(stderr, "output %zu claims %zu bytes in a %zu-byte buffer\n", i,
                     outputs[i].size_bytes, buffers[i].size());
        return false;
      }
      (void)count;
    }
    ++succeeded;
    return true;
  }
  return true;
}

//===--- artifacts ----------------------------------------------------------===//

/// Overwrites `width` bytes at `at` with an interesting value, inside `size`.
void overwrite(uint8_t *data, size_t size, uint8_t *at, size_t width) {
  if (at < data || at + width > data + size)
    return;
  int64_t v = interesting();
  std::memcpy(at, &v, width); // little-endian: the low bytes of v
}

/// A random present field of a table (the union's step tables, whose types
/// this fuzzer does not spell out) rewritten as a 1-, 4- or 8-byte scalar; an
/// offset field rewritten that way is the verifier's to catch.
void mutateTableField(uint8_t *data, size_t size, const flatbuffers::Table *table) {
  if (!table)
    return;
  const uint8_t *vtable = table->GetVTable();
  uint16_t vsize = flatbuffers::ReadScalar<uint16_t>(vtable);
  int fields = (vsize - 4) / 2;
  if (fields <= 0)
    return;
  uint16_t offset = flatbuffers::ReadScalar<uint16_t>(vtable + 4 + 2 * pick(fields));
  if (!offset)
    return;
  uint8_t *field = const_cast<uint8_t *>(reinterpret_cast<const uint8_t *>(table)) + offset;
  static const size_t kWidths[] = {1, 4, 8};
  size_t width = kWidths[pick(3)];
  if (chance(50)) {
    // Perhaps an offset to a vector of scalars (axes, perm, strides, pads):
    // rewrite one of its elements instead.
    uint32_t to = flatbuffers::ReadScalar<uint32_t>(field);
    uint8_t *vector = field + to;
    if (to && vector + 4 <= data + size) {
      uint32_t length = flatbuffers::ReadScalar<uint32_t>(vector);
      if (length > 0 && length < 64) {
        size_t element = chance(50) ? 8 : 4;
        overwrite(data, size, vector + 4 + element * pick(length), element);
        return;
      }
    }
  }
  overwrite(data, size, field, width);
}

void mutateDim(const fb::Dim *dim) {
  if (!dim || !dim->ops() || dim->ops()->size() == 0)
    return;
  auto *ops = const_cast<flatbuffers::Vector<const fb::ExprOp *> *>(dim->ops());
  fb::ExprOp *op = const_cast<fb::ExprOp *>(ops->Get(static_cast<flatbuffers::uoffset_t>(pick(ops->size()))));
  if (chance(70))
    op->mutate_value(interesting());
  else
    op->mutate_kind(static_cast<fb::ExprKind>(pick(9)));
}

void mutateIndexVector(const flatbuffers::Vector<int32_t> *v, int32_t bound) {
  if (!v || v->size() == 0)
    return;
  auto *m = const_cast<flatbuffers::Vector<int32_t> *>(v);
  m->Mutate(static_cast<flatbuffers::uoffset_t>(pick(m->size())),
            chance(50) ? static_cast<int32_t>(pick(bound + 4)) - 2 : static_cast<int32_t>(interesting()));
}

/// One field-aware edit of a verified artifact buffer.
void mutateArtifact(uint8_t *data, size_t size) {
  fb::Model *model = fb::GetMutableModel(data);
  int32_t values = model->values() ? static_cast<int32_t>(model->values()->size()) : 0;
  switch (pick(10)) {
  case 0: case 1: { // a step's operands or its table's scalars
    if (!model->steps() || model->steps()->size() == 0)
      return;
    const fb::Step *step = model->steps()->Get(static_cast<flatbuffers::uoffset_t>(pick(model->steps()->size())));
    if (chance(40))
      mutateIndexVector(chance(50) ? step->inputs() : step->outputs(), values);
    else if (chance(10))
      reinterpret_cast<flatbuffers::Table *>(const_cast<fb::Step *>(step))
          ->SetField<uint8_t>(fb::Step::VT_OP_TYPE, static_cast<uint8_t>(pick(45)), 0);
    else
      mutateTableField(data, size, reinterpret_cast<const flatbuffers::Table *>(step->op()));
    return;
  }
  case 2: case 3: { // a value's dims, dtype, kind or weight
    if (!values)
      return;
    fb::Value *value = const_cast<fb::Value *>(model->values()->Get(static_cast<flatbuffers::uoffset_t>(pick(values))));
    switch (pick(4)) {
    case 0: value->mutate_dtype(static_cast<fb::DType>(pick(30))); break;
    case 1: value->mutate_kind(static_cast<fb::ValueKind>(pick(4))); break;
    case 2: value->mutate_weight(static_cast<int32_t>(pick(6)) - 2); break;
    default:
      if (value->shape() && value->shape()->size())
        mutateDim(value->shape()->Get(static_cast<flatbuffers::uoffset_t>(pick(value->shape()->size()))));
    }
    return;
  }
  case 4: { // a kernel's signature, symbols, schedule
    if (!model->kernels() || model->kernels()->size() == 0)
      return;
    fb::Kernel *k = const_cast<fb::Kernel *>(model->kernels()->Get(static_cast<flatbuffers::uoffset_t>(pick(model->kernels()->size()))));
    if (chance(40) && k->buffer_dtypes() && k->buffer_dtypes()->size()) {
      auto *d = const_cast<flatbuffers::Vector<fb::DType> *>(k->buffer_dtypes());
      d->Mutate(static_cast<flatbuffers::uoffset_t>(pick(d->size())), static_cast<fb::DType>(pick(30)));
    } else if (chance(50)) {
      mutateIndexVector(k->symbols(), model->symbols() ? static_cast<int32_t>(model->symbols()->size()) : 0);
    } else {
      k->mutate_schedule(static_cast<fb::Schedule>(pick(8)));
      k->mutate_block_per_item(chance(50));
    }
    return;
  }
  case 5: { // a guard
    if (!model->guards() || model->guards()->size() == 0)
      return;
    fb::Guard *g = const_cast<fb::Guard *>(model->guards()->Get(static_cast<flatbuffers::uoffset_t>(pick(model->guards()->size()))));
    switch (pick(4)) {
    case 0: g->mutate_input(static_cast<int32_t>(pick(6)) - 2); break;
    case 1: g->mutate_dim(static_cast<int32_t>(pick(12)) - 2); break;
    case 2: g->mutate_binds(!g->binds()); break;
    default: mutateDim(g->expected());
    }
    return;
  }
  case 6: // the plan's inputs or outputs
    mutateIndexVector(chance(50) ? model->inputs() : model->outputs(), values);
    return;
  case 7: { // a weight's place
    if (!model->weights() || model->weights()->size() == 0)
      return;
    fb::Weight *w = const_cast<fb::Weight *>(model->weights()->Get(static_cast<flatbuffers::uoffset_t>(pick(model->weights()->size()))));
    if (chance(50))
      w->mutate_offset(static_cast<uint64_t>(interesting()));
    else
      w->mutate_size(static_cast<uint64_t>(interesting()));
    return;
  }
  case 8: { // a variant's values, symbols or kernels; the variant a host library is for
    if (!model->variants() || model->variants()->size() == 0)
      return;
    const fb::Variant *v = model->variants()->Get(static_cast<flatbuffers::uoffset_t>(pick(model->variants()->size())));
    switch (pick(4)) {
    case 0:
      if (v->values() && v->values()->size()) {
        auto *values = const_cast<flatbuffers::Vector<int64_t> *>(v->values());
        auto at = static_cast<flatbuffers::uoffset_t>(pick(values->size()));
        values->Mutate(at, chance(50) ? values->Get(at) + static_cast<int64_t>(pick(5)) - 2 : interesting());
      }
      return;
    case 1:
      mutateIndexVector(v->symbols(), model->symbols() ? static_cast<int32_t>(model->symbols()->size()) : 0);
      return;
    case 2:
      if (v->kernels() && v->kernels()->size())
        const_cast<fb::VariantKernel *>(v->kernels()->Get(static_cast<flatbuffers::uoffset_t>(pick(v->kernels()->size()))))
            ->mutate_kernel(static_cast<int32_t>(pick(model->kernels() ? model->kernels()->size() + 2 : 2)) - 1);
      return;
    default:
      if (model->host_libraries() && model->host_libraries()->size())
        const_cast<fb::HostLibrary *>(model->host_libraries()->Get(static_cast<flatbuffers::uoffset_t>(pick(model->host_libraries()->size()))))
            ->mutate_variant(static_cast<int32_t>(pick(model->variants()->size() + 2)) - 1);
      return;
    }
  }
  default: { // raw bytes, anywhere but in native code
    // The host libraries are code the loader runs (dlopen): an artifact is
    // trusted with its code, and the loader checks structure, not machine
    // code (docs/runtime.md). Flipping bits there tests nothing kiln can own.
    std::vector<std::pair<const uint8_t *, const uint8_t *>> code;
    if (model->host_libraries())
      for (const fb::HostLibrary *h : *model->host_libraries())
        if (h->data())
          code.push_back({h->data()->data(), h->data()->data() + h->data()->size()});
    for (uint64_t k = 1 + pick(3); k > 0; --k) {
      uint8_t *at = data + pick(size);
      bool inCode = false;
      for (auto [begin, end] : code)
        inCode = inCode || (at >= begin && at < end);
      if (!inCode)
        *at ^= static_cast<uint8_t>(1u << pick(8));
    }
  }
  }
}

int fuzzArtifacts(const std::vector<std::string> &seeds, int iterations) {
  int loaded = 0, ran = 0;
  for (int i = 0; i < iterations; ++i) {
    std::string bytes = readFile(seeds[pick(seeds.size())]);
    // 8-byte aligned, as the loader requires.
    std::vector<uint64_t> aligned((bytes.size() + 7) / 8);
    auto *data = reinterpret_cast<uint8_t *>(aligned.data());
    std::memcpy(data, bytes.data(), bytes.size());
    // Each edit reads the structure the previous one may have broken: stop at
    // the first that no longer verifies (the loader's to refuse).
    for (uint64_t e = 1 + pick(3); e > 0; --e) {
      flatbuffers::Verifier verifier(data, bytes.size());
      if (!fb::VerifyModelBuffer(verifier))
        break;
      mutateArtifact(data, bytes.size());
    }
    // Sealing reads the root table: only a buffer that still verifies has one
    // (one that does not is refused by the loader's verifier either way).
    flatbuffers::Verifier verifier(data, bytes.size());
    if (fb::VerifyModelBuffer(verifier))
      kiln::artifact::sealArtifact(data, bytes.size());
    kiln_model_t *model = nullptr;
    if (kiln_model_load_memory(data, bytes.size(), KILN_BACKEND_HOST, &model) != KILN_OK)
      continue;
    ++loaded;
    std::vector<std::vector<uint8_t>> storage;
    std::vector<kiln_tensor_t> inputs;
    if (makeInputs(model, [] { return static_cast<int64_t>(pick(9)) - 2; }, storage, inputs) &&
        !runChecked(model, inputs, uint64_t(1) << 26, ran)) {
      kiln_model_destroy(model);
      return 1;
    }
    kiln_model_destroy(model);
  }
  std::printf("artifacts: %d iterations, %d loaded, %d ran to the end, 0 crashes\n", iterations,
              loaded, ran);
  return 0;
}

//===--- run-time sizes -----------------------------------------------------===//

int fuzzRunSizes(const std::vector<std::string> &seeds, int iterations) {
  std::vector<kiln_model_t *> models;
  for (const std::string &s : seeds) {
    kiln_model_t *m = nullptr;
    if (kiln_model_load_file(s.c_str(), KILN_BACKEND_HOST, &m) != KILN_OK)
      return std::fprintf(stderr, "cannot load the seed %s: %s\n", s.c_str(), kiln_last_error()), 1;
    models.push_back(m);
  }
  int ran = 0;
  for (int i = 0; i < iterations; ++i) {
    kiln_model_t *model = models[pick(models.size())];
    std::vector<std::vector<uint8_t>> storage;
    std::vector<kiln_tensor_t> inputs;
    if (!makeInputs(model, [] { return chance(50) ? static_cast<int64_t>(pick(12)) - 3 : interesting(); },
                    storage, inputs))
      continue;
    // 64 MB: large enough for real work, small enough that nothing the limit
    // lets through strains the sanitizers' allocator.
    if (!runChecked(model, inputs, uint64_t(1) << 26, ran))
      return 1;
  }
  for (kiln_model_t *m : models)
    kiln_model_destroy(m);
  std::printf("run-sizes: %d iterations, %d ran to the end, 0 crashes\n", iterations, ran);
  return 0;
}

} // namespace

int main(int argc, char **argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: kiln-runtime-fuzz tensor-files|artifacts|run-sizes "
                         "[--iterations N] [--seed S] FILE...\n");
    return 2;
  }
  std::string mode = argv[1];
  int iterations = 1000;
  uint64_t seed = 1;
  std::vector<std::string> files;
  for (int i = 2; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--iterations" && i + 1 < argc)
      iterations = std::atoi(argv[++i]);
    else if (a == "--seed" && i + 1 < argc)
      seed = std::strtoull(argv[++i], nullptr, 10);
    else
      files.push_back(a);
  }
  if (files.empty())
    return std::fprintf(stderr, "kiln-runtime-fuzz: no seed files\n"), 2;
  rng.seed(seed);
  if (mode == "tensor-files")
    return fuzzTensorFiles(files, iterations);
  if (mode == "artifacts")
    return fuzzArtifacts(files, iterations);
  if (mode == "run-sizes")
    return fuzzRunSizes(files, iterations);
  std::fprintf(stderr, "kiln-runtime-fuzz: unknown mode '%s'\n", mode.c_str());
  return 2;
}
