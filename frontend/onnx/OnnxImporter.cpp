//===- OnnxImporter.cpp - ONNX ModelProto to a kiln func.func -------------===//
//
// The graph becomes one func.func: graph inputs (that are not initializers) are its
// arguments, initializers are kiln.constant, each node goes through the converter
// that OnnxOps.def names for its op_type, and graph outputs are returned. Argument
// and result attributes `kiln.name` keep the ONNX names.
//
//===----------------------------------------------------------------------===//

#include "frontend/onnx/OnnxImporter.h"

#include "frontend/onnx/NodeImporter.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Verifier.h"
#include "llvm/ADT/ScopeExit.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>

#include <climits>
#include <functional>
#include <unistd.h>

using namespace mlir;

namespace kiln::onnx_import {

void loadImportDialects(MLIRContext &context) {
  context.loadDialect<KilnDialect, func::FuncDialect>();
}

namespace {

constexpr int64_t kMinOpset = 1;
/// kiln implements each op's versions from opset 7 on. A model of an older opset
/// imports when every op it uses is unchanged between its opset and this one.
constexpr int64_t kOldestImplementedOpset = 7;
/// Opsets past 22 are accepted: an op whose version there changed only its types
/// says so in OnnxOps.def; any other newer version is rejected per op.
constexpr int64_t kMaxOpset = 27;
/// Input dims at least this large are corrupt, not real.
constexpr int64_t kMaxDim = int64_t(1) << 40;

/// The opset versions at which each op changed (generated from onnx's schemas).
const llvm::StringMap<SmallVector<int64_t, 4>> &opVersions() {
  static const llvm::StringMap<SmallVector<int64_t, 4>> table = [] {
    llvm::StringMap<SmallVector<int64_t, 4>> t;
#define ONNX_OP_VERSIONS(name, ...) t[name] = {__VA_ARGS__};
#include "frontend/onnx/OnnxOpVersions.inc"
#undef ONNX_OP_VERSIONS
    return t;
  }();
  return table;
}

/// A symbol name from an ONNX dim_param: identifier characters only.
std::string sanitizeSymbol(StringRef raw) {
  std::string s;
  for (char c : raw)
    s += (llvm::isAlnum(c) || c == '_') ? c : '_';
  if (s.empty() || llvm::isDigit(s[0]))
    s = "_" + s;
  if (!isValidSymbolName(s))
    s += "_";
  return s;
}

class GraphImporter {
public:
  GraphImporter(MLIRContext &ctx, StringRef modelName, StringRef baseDir,
                const ImportOptions &options)
      : ctx(ctx), builder(&ctx), folder(&ctx), modelName(modelName.str()),
        baseDir(baseDir.str()), options(options) {}

  /// Takes the initializers' inline raw bytes (convertInitializer): `model`
  /// is dropped after the import.
  OwningOpRef<ModuleOp> import(onnx::ModelProto &model);

private:
  LogicalResult error(const Twine &message) {
    return emitError(FileLineColLoc::get(&ctx, modelName, 0, 0)) << message;
  }
  Location nodeLoc(const onnx::NodeProto &node, size_t index) {
    std::string name = node.name().empty() ? node.op_type() + "_" + std::to_string(index)
                                           : node.name();
    return NameLoc::get(StringAttr::get(&ctx, name),
                        FileLineColLoc::get(&ctx, modelName, 0, 0));
  }

  FailureOr<int64_t> defaultOpset(const onnx::ModelProto &model);
  FailureOr<Type> inputType(const onnx::ValueInfoProto &input);
  LogicalResult defineValue(StringRef name, Value value, const Twine &what);
  FailureOr<SmallVector<const onnx::NodeProto *>> sortNodes(const onnx::GraphProto &graph);
  LogicalResult importNode(const onnx::NodeProto &node, size_t index, int64_t opset);
  /// Names the converted node's outputs.
  LogicalResult defineResults(const onnx::NodeProto &node, NodeImporter &importer);
  Value bindConstantInput(BlockArgument arg);

  MLIRContext &ctx;
  OpBuilder builder;
  OperationFolder folder;
  std::string modelName, baseDir;
  const ImportOptions &options;
  /// Value names by scope: the graph, then each enclosing subgraph being imported.
  SmallVector<llvm::StringMap<Value>> scopes = {llvm::StringMap<Value>()};
  Value lookup(StringRef name) const {
    for (auto it = scopes.rbegin(); it != scopes.rend(); ++it)
      if (auto found = it->find(name); found != it->end())
        return found->second;
    return Value();
  }
  LogicalResult importSubgraph(const onnx::GraphProto &graph, Region &region,
                               ArrayRef<Type> argTypes);
  LogicalResult importNodes(const onnx::GraphProto &graph);
  int64_t opset = 0;
  /// The model's opset_import of each domain but the default one.
  llvm::StringMap<int64_t> domainOpsets;
  int depth = 0;
  func::FuncOp func;
  llvm::DenseMap<BlockArgument, Value> boundInputs;
};

Value GraphImporter::bindConstantInput(BlockArgument arg) {
  if (auto it = boundInputs.find(arg); it != boundInputs.end())
    return it->second;
  auto name = func.getArgAttrOfType<StringAttr>(arg.getArgNumber(), kNameAttr);
  auto file = name ? options.constantInputs.find(name.str()) : options.constantInputs.end();
  if (file == options.constantInputs.end())
    return nullptr;
  Location loc = FileLineColLoc::get(&ctx, file->second, 0, 0);
  llvm::sys::fs::file_status status;
  if (llvm::sys::fs::status(file->second, status) ||
      status.type() != llvm::sys::fs::file_type::regular_file) {
    emitError(loc) << "cannot read a TensorProto for input '" << name.str()
                   << "': not a regular file";
    return nullptr;
  }
  auto buffer = llvm::MemoryBuffer::getFile(file->second);
  onnx::TensorProto tensor;
  if (!buffer || !tensor.ParseFromArray((*buffer)->getBufferStart(),
                                        (int)(*buffer)->getBufferSize())) {
    emitError(loc) << "cannot read a TensorProto for input '" << name.str() << "'";
    return nullptr;
  }
  FailureOr<ElementsAttr> value =
      convertTensor(tensor, &ctx, loc, baseDir, "constant for input '" + name.str() + "'");
  if (failed(value))
    return nullptr;
  auto argType = cast<RankedTensorType>(arg.getType());
  auto valueType = cast<RankedTensorType>(value->getType());
  bool fits = argType.getElementType() == valueType.getElementType() &&
              argType.getRank() == valueType.getRank();
  for (int64_t i = 0; fits && i < argType.getRank(); ++i)
    fits = argType.isDynamicDim(i) || argType.getDimSize(i) == valueType.getDimSize(i);
  if (!fits) {
    emitError(loc) << "the constant for input '" << name.str() << "' has type "
                         << valueType << ", which does not fit the input's " << argType;
    return nullptr;
  }
  OpBuilder::InsertionGuard guard(builder);
  builder.setInsertionPointToStart(arg.getOwner());
  Value c = ConstantOp::create(builder, loc, *value);
  func.setArgAttr(arg.getArgNumber(), "kiln.bound_constant", builder.getUnitAttr());
  boundInputs[arg] = c;
  return c;
}

FailureOr<int64_t> GraphImporter::defaultOpset(const onnx::ModelProto &model) {
  std::optional<int64_t> version;
  for (const auto &entry : model.opset_import())
    if (entry.domain().empty() || entry.domain() == "ai.onnx")
      version = entry.version();
  if (!version) {
    // A model of other domains only: each node reports its domain.
    bool usesDefault = llvm::any_of(model.graph().node(), [](const onnx::NodeProto &n) {
      return n.domain().empty() || n.domain() == "ai.onnx";
    });
    if (usesDefault)
      return error("the model imports no version of the default ONNX opset");
    return kMaxOpset;
  }
  if (*version < kMinOpset || *version > kMaxOpset)
    return error("opset " + Twine(*version) + " is not supported (kiln supports " +
                 Twine(kMinOpset) + " through " + Twine(kMaxOpset) + ")");
  return *version;
}

FailureOr<Type> GraphImporter::inputType(const onnx::ValueInfoProto &input) {
  const std::string &name = input.name();
  if (!input.type().has_tensor_type())
    return error("input '" + name +
                 "' is not a tensor (sequence, map and optional inputs are unsupported)");
  const auto &tensor = input.type().tensor_type();
  Type element = convertElementType(&ctx, tensor.elem_type());
  if (!element)
    return error("input '" + name + "' has element type " +
                 onnxTypeName(tensor.elem_type()) + ", which kiln does not support");
  if (!tensor.has_shape())
    return error("input '" + name + "' has no shape (unranked inputs are unsupported)");
  auto forced = options.dynamicDims.find(name);
  SymShape dims;
  for (auto [i, dim] : llvm::enumerate(tensor.shape().dim())) {
    bool force = options.allDynamic ||
                 (forced != options.dynamicDims.end() && forced->second.count(i));
    std::string forcedName =
        forced != options.dynamicDims.end() && forced->second.count(i) ? forced->second.at(i) : "";
    if (dim.has_dim_value() && !force) {
      int64_t v = dim.dim_value();
      if (v < 0 || v >= kMaxDim)
        return error("input '" + name + "' dim " + Twine(i) + " is " + Twine(v) +
                     ", which is not a valid size");
      dims.push_back(getConstantDim(&ctx, v));
    } else if (!forcedName.empty()) {
      dims.push_back(getSymbolDim(&ctx, sanitizeSymbol(forcedName)));
    } else if (dim.has_dim_param() && !dim.dim_param().empty()) {
      dims.push_back(getSymbolDim(&ctx, sanitizeSymbol(dim.dim_param())));
    } else {
      dims.push_back(getFreshSymbolDim(
          &ctx, sanitizeSymbol(name + "_d" + std::to_string(i))));
    }
  }
  for (const auto &[input, byDim] : options.dynamicDims) {
    if (input != name)
      continue;
    for (const auto &[d, sym] : byDim)
      if (d < 0 || d >= (int64_t)dims.size())
        return error("--dynamic names dim " + Twine(d) + " of input '" + name +
                     "', which has rank " + Twine(dims.size()));
  }
  return Type(makeTensorType(dims, element));
}

LogicalResult GraphImporter::defineValue(StringRef name, Value value, const Twine &what) {
  if (name.empty())
    return success();
  if (!scopes.back().try_emplace(name, value).second)
    return error(what + " defines value '" + name +
                 "', which is already defined (value names must be unique)");
  return success();
}

/// Orders nodes so each comes after the producers of its inputs. ONNX requires a
/// sorted graph, but exporters have emitted unsorted ones; a cycle is an error.
FailureOr<SmallVector<const onnx::NodeProto *>>
GraphImporter::sortNodes(const onnx::GraphProto &graph) {
  llvm::StringMap<size_t> producer;
  for (auto [i, node] : llvm::enumerate(graph.node()))
    for (const std::string &out : node.output())
      if (!out.empty() && !producer.try_emplace(out, i).second)
        return error("value '" + out + "' is produced by more than one node");
  size_t n = graph.node_size();
  SmallVector<int> state(n, 0); // 0 new, 1 visiting, 2 done
  SmallVector<const onnx::NodeProto *> order;
  // Iterative DFS, so a deep chain cannot overflow the stack.
  for (size_t root = 0; root < n; ++root) {
    if (state[root])
      continue;
    SmallVector<std::pair<size_t, int>> stack{{root, 0}};
    state[root] = 1;
    while (!stack.empty()) {
      auto &[i, next] = stack.back();
      const onnx::NodeProto &node = graph.node(i);
      if (next < node.input_size()) {
        const std::string &in = node.input(next++);
        auto it = producer.find(in);
        if (in.empty() || it == producer.end())
          continue;
        size_t p = it->second;
        if (state[p] == 1)
          return error("the graph has a cycle through node '" + node.name() + "' (" +
                       node.op_type() + ") and value '" + in + "'");
        if (state[p] == 0) {
          state[p] = 1;
          stack.push_back({p, 0});
        }
        continue;
      }
      state[i] = 2;
      order.push_back(&node);
      stack.pop_back();
    }
  }
  return order;
}

LogicalResult GraphImporter::importNode(const onnx::NodeProto &node, size_t index,
                                        int64_t opset) {
  Location loc = nodeLoc(node, index);
  SmallVector<Value> inputs;
  for (const std::string &in : node.input()) {
    if (in.empty()) {
      inputs.push_back(Value());
      continue;
    }
    Value v = lookup(in);
    if (!v)
      return emitError(loc) << "node '" << node.name() << "' (" << node.op_type()
                            << "): input '" << in << "' is not defined in the graph";
    inputs.push_back(v);
  }
  // Which version of this op the model's opset means: the newest change at or
  // before it.
  auto versions = opVersions().find(node.op_type());
  auto versionAt = [&](int64_t set) {
    int64_t selected = 0;
    if (versions != opVersions().end())
      for (int64_t v : versions->second)
        if (v <= set)
          selected = std::max(selected, v);
    return selected;
  };
  int64_t version = versionAt(opset);
  // An op outside ONNX (of another domain, or one onnxruntime registers in
  // the default domain) is versioned by its own table row.
  bool outsideOnnx = !node.domain().empty() && node.domain() != "ai.onnx";
  ConverterEntry domainConverter;
  if (outsideOnnx) {
    domainConverter = lookupDomainConverter(node.domain(), node.op_type());
    auto imported = domainOpsets.find(node.domain());
    version = imported == domainOpsets.end() ? 0 : imported->second;
  } else if (versions == opVersions().end()) {
    // onnxruntime registers a few ops of its own in the default domain
    // (SimplifiedLayerNormalization), each at version 1 whatever the opset.
    domainConverter = lookupDomainConverter("", node.op_type());
    if (domainConverter.convert) {
      outsideOnnx = true;
      version = 1;
    }
  }
  NodeImporter importer(
      builder, folder, node, version, loc, std::move(inputs), baseDir,
      [this](BlockArgument arg) { return bindConstantInput(arg); },
      [this](const onnx::GraphProto &g, Region &r, ArrayRef<Type> types) {
        return importSubgraph(g, r, types);
      });
  if (outsideOnnx && !domainConverter.convert)
    return importer.unsupported("kiln has no lowering for " + node.op_type() + " of domain '" +
                                node.domain() + "'");
  if (outsideOnnx && version == 0)
    return importer.error("the model imports no version of domain '" + node.domain() + "'");
  if (outsideOnnx && version > domainConverter.maxVersion)
    return importer.unsupported(node.op_type() + " of domain '" + node.domain() + "' version " +
                                Twine(version) + " (kiln implements up to version " +
                                Twine(domainConverter.maxVersion) + ")");
  if (outsideOnnx)
    return failed(domainConverter.convert(importer)) ? failure() : defineResults(node, importer);
  if (versions != opVersions().end() && version == 0)
    return importer.error(node.op_type() + " does not exist in opset " + Twine(opset));

  std::string reason;
  ConverterEntry converter = lookupConverter(node.op_type(), &reason);
  if (!converter.convert) {
    if (!reason.empty())
      return importer.unsupported(reason);
    if (versions == opVersions().end())
      return importer.error("'" + node.op_type() + "' is not an ONNX operator");
    return importer.unsupported("kiln has no lowering for " + node.op_type() + " yet");
  }
  if (opset < kOldestImplementedOpset && version != versionAt(kOldestImplementedOpset))
    return importer.unsupported(node.op_type() + " version " + Twine(version) +
                                " (kiln implements its versions from opset " +
                                Twine(kOldestImplementedOpset) + " on)");
  if (version > converter.maxVersion)
    return importer.unsupported(node.op_type() + " version " + Twine(version) +
                                " (kiln implements up to version " +
                                Twine(converter.maxVersion) + ")");
  if (failed(converter.convert(importer)))
    return failure();
  return defineResults(node, importer);
}

LogicalResult GraphImporter::defineResults(const onnx::NodeProto &node,
                                           NodeImporter &importer) {
  for (auto [i, v] : llvm::enumerate(importer.results()))
    if (failed(defineValue(node.output(i), v, "node '" + node.name() + "'")))
      return failure();
  return success();
}

LogicalResult GraphImporter::importNodes(const onnx::GraphProto &graph) {
  auto order = sortNodes(graph);
  if (failed(order))
    return failure();
  for (auto [i, node] : llvm::enumerate(*order))
    if (failed(importNode(*node, i, opset)))
      return failure();
  return success();
}

LogicalResult GraphImporter::importSubgraph(const onnx::GraphProto &graph, Region &region,
                                            ArrayRef<Type> argTypes) {
  // Subgraphs nest; a corrupt model must not recurse without bound.
  if (depth >= 32)
    return error("subgraphs nest more than 32 deep");
  if (graph.input_size() != (int)argTypes.size())
    return error("subgraph '" + graph.name() + "' has " + Twine(graph.input_size()) +
                 " inputs; the op passes it " + Twine(argTypes.size()));
  Location loc = FileLineColLoc::get(&ctx, modelName, 0, 0);
  Block *block = new Block();
  region.push_back(block);
  for (Type t : argTypes)
    block->addArgument(t, loc);
  OpBuilder::InsertionGuard guard(builder);
  builder.setInsertionPointToEnd(block);
  scopes.emplace_back();
  ++depth;
  llvm::scope_exit done([&] {
    scopes.pop_back();
    --depth;
  });
  for (auto [i, input] : llvm::enumerate(graph.input()))
    if (failed(defineValue(input.name(), block->getArgument(i), "subgraph input")))
      return failure();
  for (const auto &init : graph.initializer()) {
    FailureOr<ElementsAttr> value =
        convertTensor(init, &ctx, loc, baseDir, "initializer '" + init.name() + "'");
    if (failed(value))
      return failure();
    if (failed(defineValue(init.name(), ConstantOp::create(builder, loc, *value), "initializer")))
      return failure();
  }
  if (failed(importNodes(graph)))
    return failure();
  SmallVector<Value> outputs;
  for (const auto &output : graph.output()) {
    Value v = lookup(output.name());
    if (!v)
      return error("subgraph output '" + output.name() + "' is not produced by any node");
    outputs.push_back(v);
  }
  YieldOp::create(builder, loc, outputs);
  return success();
}

OwningOpRef<ModuleOp> GraphImporter::import(onnx::ModelProto &model) {
  loadImportDialects(ctx);
  if (!model.has_graph())
    return ((void)error("the model has no graph"), nullptr);
  FailureOr<int64_t> opset = defaultOpset(model);
  if (failed(opset))
    return nullptr;
  const onnx::GraphProto &graph = model.graph();
  Location fileLoc = FileLineColLoc::get(&ctx, modelName, 0, 0);
  OwningOpRef<ModuleOp> module = ModuleOp::create(fileLoc);

  llvm::StringSet<> initializerNames;
  for (const auto &init : graph.initializer())
    initializerNames.insert(init.name());

  SmallVector<Type> argTypes;
  SmallVector<const onnx::ValueInfoProto *> args;
  for (const auto &input : graph.input()) {
    if (initializerNames.contains(input.name()))
      continue; // an initializer with a default: kiln treats it as a constant
    FailureOr<Type> type = inputType(input);
    if (failed(type))
      return nullptr;
    argTypes.push_back(*type);
    args.push_back(&input);
  }

  builder.setInsertionPointToEnd(module->getBody());
  func = func::FuncOp::create(builder, fileLoc, options.functionName,
                                      builder.getFunctionType(argTypes, {}));
  Block *entry = func.addEntryBlock();
  builder.setInsertionPointToEnd(entry);
  for (auto [i, input] : llvm::enumerate(args)) {
    func.setArgAttr(i, kNameAttr, builder.getStringAttr(input->name()));
    if (failed(defineValue(input->name(), entry->getArgument(i), "input")))
      return nullptr;
  }
  for (onnx::TensorProto &init : *model.mutable_graph()->mutable_initializer()) {
    FailureOr<ElementsAttr> value =
        convertInitializer(init, &ctx, fileLoc, baseDir, "initializer '" + init.name() + "'");
    if (failed(value))
      return nullptr;
    Value c = ConstantOp::create(builder, NameLoc::get(builder.getStringAttr(init.name()), fileLoc),
                                         *value);
    if (failed(defineValue(init.name(), c, "initializer")))
      return nullptr;
  }

  this->opset = *opset;
  for (const auto &entry : model.opset_import())
    if (!entry.domain().empty() && entry.domain() != "ai.onnx")
      domainOpsets[entry.domain()] = entry.version();
  if (failed(importNodes(graph)))
    return nullptr;

  SmallVector<Value> results;
  for (const auto &output : graph.output()) {
    Value v = lookup(output.name());
    if (!v)
      return ((void)error("graph output '" + output.name() + "' is not produced by any node"),
              nullptr);
    results.push_back(v);
  }
  func::ReturnOp::create(builder, fileLoc, results);
  func.setFunctionType(builder.getFunctionType(argTypes, ValueRange(results).getTypes()));
  for (auto [i, output] : llvm::enumerate(graph.output()))
    func.setResultAttr(i, kNameAttr, builder.getStringAttr(output.name()));

  if (failed(verify(*module)))
    return nullptr;
  return module;
}

} // namespace

namespace {
/// Parses a ModelProto from `stream` and imports it. When the parse fails,
/// `readError` says whether reading did (the error then names that, not the
/// bytes).
OwningOpRef<ModuleOp> parseAndImport(MLIRContext &context,
                                     google::protobuf::io::ZeroCopyInputStream &stream,
                                     StringRef modelName, StringRef baseDir,
                                     const ImportOptions &options,
                                     const std::function<std::string()> &readError = {}) {
  onnx::ModelProto model;
  google::protobuf::io::CodedInputStream coded(&stream);
  coded.SetTotalBytesLimit(INT_MAX);
  if (!model.ParseFromCodedStream(&coded) || !coded.ConsumedEntireMessage()) {
    std::string why = readError ? readError() : std::string();
    emitError(FileLineColLoc::get(&context, modelName, 0, 0))
        << (why.empty() ? std::string("not a valid ONNX model: the protobuf does not parse "
                                      "(truncated or corrupt file)")
                        : "cannot read the model: " + why);
    return nullptr;
  }
  GraphImporter importer(context, modelName, baseDir, options);
  return importer.import(model);
}

/// The error for a model file of 2 GiB or more (protobuf's limit).
void tooLarge(MLIRContext &context, StringRef modelName) {
  emitError(FileLineColLoc::get(&context, modelName, 0, 0))
      << "the model file is 2 GiB or larger; a model this large must keep its "
         "weights as external data";
}
} // namespace

OwningOpRef<ModuleOp> importOnnxBytes(MLIRContext &context, StringRef bytes,
                                      StringRef modelName, StringRef baseDir,
                                      const ImportOptions &options) {
  if (bytes.size() >= size_t(INT_MAX))
    return (tooLarge(context, modelName), nullptr);
  google::protobuf::io::ArrayInputStream raw(bytes.data(), static_cast<int>(bytes.size()));
  return parseAndImport(context, raw, modelName, baseDir, options);
}

OwningOpRef<ModuleOp> importOnnxFile(MLIRContext &context, StringRef path,
                                     const ImportOptions &options) {
  // External data resolves beside the model ("model.onnx" is in ".").
  StringRef folder = llvm::sys::path::parent_path(path);
  if (folder.empty())
    folder = ".";
  auto cannotRead = [&](const std::string &why) {
    emitError(FileLineColLoc::get(&context, path, 0, 0)) << "cannot read the model: " << why;
    return nullptr;
  };
  llvm::sys::fs::file_status status;
  if (std::error_code ec = llvm::sys::fs::status(path, status))
    return cannotRead(ec.message());
  if (status.type() != llvm::sys::fs::file_type::regular_file) {
    // A pipe (kiln-translate --import-onnx /dev/stdin) is read whole. The
    // tools that load models refuse other files before this (LoadModel).
    auto buffer = llvm::MemoryBuffer::getFile(path, /*IsText=*/false,
                                              /*RequiresNullTerminator=*/false);
    if (!buffer)
      return cannotRead(buffer.getError().message());
    return importOnnxBytes(context, (*buffer)->getBuffer(), path, folder, options);
  }
  // A regular file is read in blocks rather than mapped: a mapped file stays
  // resident beside the parsed copy of its weights until the import ends
  // (twice the weights).
  int fd = -1;
  if (std::error_code ec = llvm::sys::fs::openFileForRead(path, fd))
    return cannotRead(ec.message());
  llvm::scope_exit closeFile([&] { ::close(fd); });
  if (status.getSize() >= uint64_t(INT_MAX))
    return (tooLarge(context, path), nullptr);
  google::protobuf::io::FileInputStream stream(fd, /*block_size=*/1 << 20);
  return parseAndImport(context, stream, path, folder, options,
                        [&] {
                          return stream.GetErrno() ? std::generic_category().message(stream.GetErrno())
                                                   : std::string();
                        });
}

namespace {
/// Adds the external data locations of `tensor`, `graph` (and the graphs
/// inside it) to `out`, each once.
void addLocations(const onnx::TensorProto &tensor, llvm::StringSet<> &seen,
                  std::vector<std::string> &out) {
  if (tensor.data_location() != onnx::TensorProto::EXTERNAL)
    return;
  for (const auto &entry : tensor.external_data())
    if (entry.key() == "location" && seen.insert(entry.value()).second)
      out.push_back(entry.value());
}
void addLocations(const onnx::GraphProto &graph, llvm::StringSet<> &seen,
                  std::vector<std::string> &out) {
  for (const onnx::TensorProto &t : graph.initializer())
    addLocations(t, seen, out);
  for (const onnx::SparseTensorProto &t : graph.sparse_initializer()) {
    addLocations(t.values(), seen, out);
    addLocations(t.indices(), seen, out);
  }
  for (const onnx::NodeProto &node : graph.node())
    for (const onnx::AttributeProto &a : node.attribute()) {
      if (a.has_t())
        addLocations(a.t(), seen, out);
      for (const onnx::TensorProto &t : a.tensors())
        addLocations(t, seen, out);
      if (a.has_g())
        addLocations(a.g(), seen, out);
      for (const onnx::GraphProto &g : a.graphs())
        addLocations(g, seen, out);
    }
}
} // namespace

std::optional<std::vector<std::string>> externalDataLocations(StringRef bytes) {
  if (bytes.size() >= size_t(INT_MAX))
    return std::nullopt;
  onnx::ModelProto model;
  google::protobuf::io::ArrayInputStream raw(bytes.data(), static_cast<int>(bytes.size()));
  google::protobuf::io::CodedInputStream coded(&raw);
  coded.SetTotalBytesLimit(INT_MAX);
  if (!model.ParseFromCodedStream(&coded) || !coded.ConsumedEntireMessage())
    return std::nullopt;
  llvm::StringSet<> seen;
  std::vector<std::string> out;
  addLocations(model.graph(), seen, out);
  return out;
}

} // namespace kiln::onnx_import
