//===- kiln-import-fuzz.cpp - the ONNX importer against mutated models ----===//
//
//   kiln-import-fuzz [--cases N] [--seed S] MODEL.onnx...
//
// Mutates valid models, byte-level (flips, truncations, splices) and field-level
// (dims, data types, attribute kinds, value names, node order, tensor payloads),
// and imports each mutant in-process. The importer must either succeed or emit an
// error; a crash, an abort or a sanitizer report fails the run. `make test` runs it
// built with AddressSanitizer and UndefinedBehaviorSanitizer on a bounded number of
// cases with a fixed seed, so a failure reproduces.
//
//===----------------------------------------------------------------------===//

#include "frontend/onnx/OnnxImporter.h"
#include "tools/DiagnosticPrinter.h"
#include "driver/InitAll.h"

#include "mlir/IR/MLIRContext.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/raw_ostream.h"

#include <onnx/onnx_pb.h>

#include <random>

using namespace llvm;

static cl::list<std::string> seeds(cl::Positional, cl::desc("<model.onnx>..."), cl::OneOrMore);
static cl::opt<int> caseCount("cases", cl::desc("Mutants to import"), cl::init(2000));
static cl::opt<unsigned> seed("seed", cl::desc("Random seed"), cl::init(20261129));
static cl::opt<bool> trace("trace", cl::desc("Print each case number before importing it"));
static cl::opt<int> only("only", cl::desc("Import only this case (reproduce one mutant)"),
                         cl::init(-1));
static cl::opt<std::string> dump("dump", cl::desc("With --only: write the mutant here"));

namespace {

using Rng = std::mt19937_64;

int64_t pick(Rng &rng, int64_t lo, int64_t hi) {
  return std::uniform_int_distribution<int64_t>(lo, hi)(rng);
}

/// Values that break assumptions: negative, zero, huge, overflowing.
int64_t nastyInt(Rng &rng) {
  static const int64_t values[] = {-1, 0, 1, 2, 7, -7, INT32_MAX, INT64_MAX, INT64_MIN,
                                   int64_t(1) << 40, -(int64_t(1) << 33), 1000000007};
  return values[pick(rng, 0, std::size(values) - 1)];
}

void mutateBytes(std::string &bytes, Rng &rng) {
  if (bytes.empty())
    return;
  switch (pick(rng, 0, 3)) {
  case 0: // flip some bits
    for (int i = 0, n = pick(rng, 1, 8); i < n; ++i)
      bytes[pick(rng, 0, bytes.size() - 1)] ^= char(1 << pick(rng, 0, 7));
    break;
  case 1: // truncate
    bytes.resize(pick(rng, 0, bytes.size() - 1));
    break;
  case 2: { // duplicate a slice somewhere else
    size_t from = pick(rng, 0, bytes.size() - 1), len = pick(rng, 1, 64);
    std::string slice = bytes.substr(from, len);
    bytes.insert(pick(rng, 0, bytes.size()), slice);
    break;
  }
  default: // overwrite with random bytes
    for (int i = 0, n = pick(rng, 1, 16); i < n; ++i)
      bytes[pick(rng, 0, bytes.size() - 1)] = char(pick(rng, 0, 255));
    break;
  }
}

void mutateTensor(onnx::TensorProto &t, Rng &rng) {
  switch (pick(rng, 0, 4)) {
  case 0:
    if (t.dims_size())
      t.set_dims(pick(rng, 0, t.dims_size() - 1), nastyInt(rng));
    else
      t.add_dims(nastyInt(rng));
    break;
  case 1:
    t.set_data_type(pick(rng, 0, 30));
    break;
  case 2:
    if (t.has_raw_data())
      t.mutable_raw_data()->resize(pick(rng, 0, t.raw_data().size() + 8));
    else
      t.add_float_data(1.0f);
    break;
  case 3:
    t.set_data_location(onnx::TensorProto::EXTERNAL);
    {
      auto *e = t.add_external_data();
      e->set_key(pick(rng, 0, 1) ? "location" : "offset");
      e->set_value(pick(rng, 0, 1) ? "../../etc/passwd" : "-5");
    }
    break;
  default:
    t.add_dims(pick(rng, 0, 3));
    break;
  }
}

void mutateModel(onnx::ModelProto &m, Rng &rng) {
  onnx::GraphProto *g = m.mutable_graph();
  int nodes = g->node_size();
  switch (pick(rng, 0, 11)) {
  case 0: // an input dim becomes nasty or disappears
    if (g->input_size()) {
      auto *shape = g->mutable_input(pick(rng, 0, g->input_size() - 1))
                        ->mutable_type()->mutable_tensor_type()->mutable_shape();
      if (shape->dim_size() && pick(rng, 0, 1))
        shape->mutable_dim(pick(rng, 0, shape->dim_size() - 1))->set_dim_value(nastyInt(rng));
      else
        shape->add_dim()->set_dim_param(pick(rng, 0, 1) ? "mod" : "x y");
    }
    break;
  case 1: // an input's element type changes
    if (g->input_size())
      g->mutable_input(pick(rng, 0, g->input_size() - 1))
          ->mutable_type()->mutable_tensor_type()->set_elem_type(pick(rng, 0, 30));
    break;
  case 2: // a node reads a value that does not exist, or its own output
    if (nodes) {
      auto *n = g->mutable_node(pick(rng, 0, nodes - 1));
      if (n->input_size())
        n->set_input(pick(rng, 0, n->input_size() - 1),
                     pick(rng, 0, 1) ? "missing" : (n->output_size() ? n->output(0) : ""));
    }
    break;
  case 3: // an attribute changes kind or value
    if (nodes) {
      auto *n = g->mutable_node(pick(rng, 0, nodes - 1));
      if (n->attribute_size()) {
        auto *a = n->mutable_attribute(pick(rng, 0, n->attribute_size() - 1));
        a->set_type(onnx::AttributeProto::AttributeType(pick(rng, 0, 14)));
        a->set_i(nastyInt(rng));
        a->add_ints(nastyInt(rng));
        a->set_f(-1e30f);
      } else {
        auto *a = n->add_attribute();
        a->set_name("axis");
        a->set_type(onnx::AttributeProto::INT);
        a->set_i(nastyInt(rng));
      }
    }
    break;
  case 4: // a node becomes another op
    if (nodes) {
      static const char *ops[] = {"Reshape", "Conv", "Gather", "Slice", "Concat", "Split",
                                  "Transpose", "Pad", "Resize", "TopK", "Nope", ""};
      g->mutable_node(pick(rng, 0, nodes - 1))->set_op_type(ops[pick(rng, 0, std::size(ops) - 1)]);
    }
    break;
  case 5: // nodes lose inputs or outputs
    if (nodes) {
      auto *n = g->mutable_node(pick(rng, 0, nodes - 1));
      if (pick(rng, 0, 1) && n->input_size())
        n->mutable_input()->RemoveLast();
      else if (n->output_size())
        n->mutable_output()->RemoveLast();
    }
    break;
  case 6: // two nodes swap places, or one is duplicated
    if (nodes >= 2)
      g->mutable_node()->SwapElements(pick(rng, 0, nodes - 1), pick(rng, 0, nodes - 1));
    else if (nodes)
      *g->add_node() = g->node(0);
    break;
  case 7:
    if (g->initializer_size())
      mutateTensor(*g->mutable_initializer(pick(rng, 0, g->initializer_size() - 1)), rng);
    break;
  case 8: // opsets
    if (m.opset_import_size())
      m.mutable_opset_import(0)->set_version(nastyInt(rng));
    break;
  case 9: // an output that no node produces
    g->add_output()->set_name(pick(rng, 0, 1) ? "ghost" : "");
    break;
  case 10: // a constant node with a broken tensor
    if (nodes) {
      auto *a = g->mutable_node(pick(rng, 0, nodes - 1))->add_attribute();
      a->set_name("value");
      a->set_type(onnx::AttributeProto::TENSOR);
      a->mutable_t()->set_data_type(1);
      mutateTensor(*a->mutable_t(), rng);
    }
    break;
  default:
    g->clear_node();
    break;
  }
}

} // namespace

int main(int argc, char **argv) {
  InitLLVM init(argc, argv);
  cl::ParseCommandLineOptions(argc, argv, "fuzzes kiln's ONNX importer\n");
  // Seeds: model files, or folders searched for model.onnx (the node tests).
  std::vector<std::string> paths;
  for (const std::string &path : seeds) {
    if (!sys::fs::is_directory(path)) {
      paths.push_back(path);
      continue;
    }
    std::error_code ec;
    for (sys::fs::recursive_directory_iterator it(path, ec), end; it != end && !ec;
         it.increment(ec))
      if (sys::path::filename(it->path()) == "model.onnx")
        paths.push_back(it->path());
  }
  std::sort(paths.begin(), paths.end());
  std::vector<std::string> models;
  for (const std::string &path : paths) {
    auto buffer = MemoryBuffer::getFile(path);
    if (!buffer) {
      errs() << "kiln-import-fuzz: error: cannot read " << path << "\n";
      return 1;
    }
    models.push_back((*buffer)->getBuffer().str());
  }
  if (models.empty()) {
    errs() << "kiln-import-fuzz: error: no seed models\n";
    return 1;
  }
  mlir::DialectRegistry registry;
  kiln::registerAllDialects(registry);
  Rng rng(seed);
  int imported = 0, refused = 0;
  for (int i = 0; i < caseCount; ++i) {
    std::string bytes = models[pick(rng, 0, models.size() - 1)];
    if (pick(rng, 0, 2) == 0) {
      mutateBytes(bytes, rng);
    } else {
      onnx::ModelProto model;
      model.ParseFromString(bytes);
      for (int k = 0, n = pick(rng, 1, 3); k < n; ++k)
        mutateModel(model, rng);
      bytes = model.SerializeAsString();
    }
    if (only >= 0 && i != only)
      continue;
    if (trace)
      errs() << "case " << i << "\n";
    if (!dump.empty()) {
      std::error_code ec;
      raw_fd_ostream(dump, ec) << bytes;
    }
    mlir::MLIRContext context(registry);
    kiln::OneLineDiagnostics diagnostics(context, /*print=*/only >= 0);
    auto module = kiln::onnx_import::importOnnxBytes(context, bytes, "mutant.onnx", ".");
    if (module) {
      ++imported;
    } else {
      ++refused;
      if (diagnostics.all().empty()) {
        errs() << "kiln-import-fuzz: case " << i << " failed without a diagnostic\n";
        return 1;
      }
    }
  }
  outs() << "fuzz: " << caseCount << " mutants, " << imported << " imported, " << refused
         << " refused with an error, no crash\n";
  return 0;
}
