//===- NodeImporter.cpp - inputs, attributes and op creation for converters -===//

#include "frontend/onnx/NodeImporter.h"

#include "mlir/IR/Matchers.h"

using namespace mlir;

namespace kiln::onnx_import {

NodeImporter::NodeImporter(OpBuilder &builder, OperationFolder &folder,
                           const onnx::NodeProto &node, int64_t opset, Location loc,
                           SmallVector<Value> inputs, StringRef externalBase,
                           ConstantBinder binder, SubgraphImporter subgraphs)
    : b(builder), folder(folder), node(node), opsetVersion(opset), location(loc),
      inputValues(std::move(inputs)), externalBase(externalBase.str()),
      binder(std::move(binder)), subgraphs(std::move(subgraphs)) {}

FailureOr<const onnx::GraphProto *> NodeImporter::graphAttr(StringRef name) {
  auto a = typedAttr(name, onnx::AttributeProto::GRAPH);
  if (failed(a))
    return failure();
  if (!*a || !(*a)->has_g())
    return error("missing required graph attribute '" + name + "'");
  return &(*a)->g();
}

LogicalResult NodeImporter::importSubgraph(const onnx::GraphProto &graph, Region &region,
                                           ArrayRef<Type> argTypes) {
  if (!subgraphs)
    return unsupported("subgraphs here");
  return subgraphs(graph, region, argTypes);
}

LogicalResult NodeImporter::error(const Twine &message) {
  std::string name = node.name();
  if (name.empty() && node.output_size() > 0)
    name = "producing '" + node.output(0) + "'";
  else
    name = "'" + name + "'";
  return emitError(location) << "node " << name << " (" << node.op_type() << "): "
                             << message;
}

LogicalResult NodeImporter::unsupported(const Twine &reason) {
  return error("unsupported: " + reason);
}

FailureOr<Value> NodeImporter::requiredInput(size_t i) {
  if (Value v = input(i))
    return v;
  return error("missing required input " + Twine(i));
}

FailureOr<SmallVector<Value>> NodeImporter::requiredInputs(size_t begin, size_t end) {
  SmallVector<Value> values;
  for (size_t i = begin; i < end; ++i) {
    auto v = requiredInput(i);
    if (failed(v))
      return failure();
    values.push_back(*v);
  }
  return values;
}

DenseElementsAttr NodeImporter::constantValue(Value v) {
  if (!v)
    return nullptr;
  if (auto arg = dyn_cast<BlockArgument>(v); arg && binder)
    if (Value bound = binder(arg))
      v = bound;
  Attribute attr;
  if (!matchPattern(v, m_Constant(&attr)))
    return nullptr;
  return dyn_cast<DenseElementsAttr>(attr);
}

std::optional<SmallVector<double>> NodeImporter::maybeConstantFloats(Value v) {
  auto dense = dyn_cast_if_present<DenseFPElementsAttr>(constantValue(v));
  if (!dense)
    return std::nullopt;
  SmallVector<double> out;
  for (APFloat f : dense.getValues<APFloat>()) {
    bool losesInfo;
    f.convert(APFloat::IEEEdouble(), APFloat::rmNearestTiesToEven, &losesInfo);
    out.push_back(f.convertToDouble());
  }
  return out;
}

std::optional<SmallVector<int64_t>> NodeImporter::maybeConstantInts(Value v) {
  auto dense = dyn_cast_if_present<DenseIntElementsAttr>(constantValue(v));
  if (!dense)
    return std::nullopt;
  SmallVector<int64_t> out;
  for (const APInt &x : dense.getValues<APInt>())
    out.push_back(x.getSExtValue());
  return out;
}

FailureOr<SmallVector<int64_t>> NodeImporter::constantInts(size_t i, StringRef what) {
  auto values = maybeConstantInts(input(i));
  if (!values)
    return unsupported(what + " (input " + Twine(i) +
                       ") must be a compile-time constant");
  return *values;
}

const onnx::AttributeProto *NodeImporter::findAttr(StringRef name) const {
  for (const auto &a : node.attribute())
    if (a.name() == name)
      return &a;
  return nullptr;
}

static StringRef attrTypeName(int type) {
  switch (type) {
  case onnx::AttributeProto::FLOAT: return "FLOAT";
  case onnx::AttributeProto::INT: return "INT";
  case onnx::AttributeProto::STRING: return "STRING";
  case onnx::AttributeProto::TENSOR: return "TENSOR";
  case onnx::AttributeProto::GRAPH: return "GRAPH";
  case onnx::AttributeProto::FLOATS: return "FLOATS";
  case onnx::AttributeProto::INTS: return "INTS";
  case onnx::AttributeProto::STRINGS: return "STRINGS";
  case onnx::AttributeProto::TENSORS: return "TENSORS";
  case onnx::AttributeProto::GRAPHS: return "GRAPHS";
  default: return "UNDEFINED";
  }
}

FailureOr<const onnx::AttributeProto *>
NodeImporter::typedAttr(StringRef name, onnx::AttributeProto::AttributeType type) {
  const onnx::AttributeProto *a = findAttr(name);
  if (!a)
    return nullptr;
  if (a->has_ref_attr_name())
    return unsupported("attribute '" + name + "' refers to a function attribute");
  // Old exporters leave `type` unset; then the populated field decides.
  int actual = a->type();
  if (actual == onnx::AttributeProto::UNDEFINED) {
    if (a->has_f()) actual = onnx::AttributeProto::FLOAT;
    else if (a->has_i()) actual = onnx::AttributeProto::INT;
    else if (a->has_s()) actual = onnx::AttributeProto::STRING;
    else if (a->has_t()) actual = onnx::AttributeProto::TENSOR;
    else if (a->has_g()) actual = onnx::AttributeProto::GRAPH;
    else if (a->ints_size()) actual = onnx::AttributeProto::INTS;
    else if (a->floats_size()) actual = onnx::AttributeProto::FLOATS;
    else actual = type; // an empty list
  }
  if (actual != type)
    return error("attribute '" + name + "' must be " + attrTypeName(type) + ", not " +
                 attrTypeName(actual));
  return a;
}

FailureOr<int64_t> NodeImporter::intAttr(StringRef name, std::optional<int64_t> dflt) {
  auto a = typedAttr(name, onnx::AttributeProto::INT);
  if (failed(a))
    return failure();
  if (*a)
    return (*a)->i();
  if (dflt)
    return *dflt;
  return error("missing required attribute '" + name + "'");
}

FailureOr<float> NodeImporter::floatAttr(StringRef name, std::optional<float> dflt) {
  auto a = typedAttr(name, onnx::AttributeProto::FLOAT);
  if (failed(a))
    return failure();
  if (*a)
    return (*a)->f();
  if (dflt)
    return *dflt;
  return error("missing required attribute '" + name + "'");
}

FailureOr<std::string> NodeImporter::stringAttr(StringRef name,
                                                std::optional<std::string> dflt) {
  auto a = typedAttr(name, onnx::AttributeProto::STRING);
  if (failed(a))
    return failure();
  if (*a)
    return (*a)->s();
  if (dflt)
    return *dflt;
  return error("missing required attribute '" + name + "'");
}

FailureOr<SmallVector<int64_t>>
NodeImporter::intsAttr(StringRef name, std::optional<SmallVector<int64_t>> dflt) {
  auto a = typedAttr(name, onnx::AttributeProto::INTS);
  if (failed(a))
    return failure();
  if (*a)
    return SmallVector<int64_t>((*a)->ints().begin(), (*a)->ints().end());
  if (dflt)
    return *dflt;
  return error("missing required attribute '" + name + "'");
}

FailureOr<SmallVector<float>>
NodeImporter::floatsAttr(StringRef name, std::optional<SmallVector<float>> dflt) {
  auto a = typedAttr(name, onnx::AttributeProto::FLOATS);
  if (failed(a))
    return failure();
  if (*a)
    return SmallVector<float>((*a)->floats().begin(), (*a)->floats().end());
  if (dflt)
    return *dflt;
  return error("missing required attribute '" + name + "'");
}

FailureOr<ElementsAttr> NodeImporter::tensorAttr(StringRef name) {
  auto a = typedAttr(name, onnx::AttributeProto::TENSOR);
  if (failed(a))
    return failure();
  if (!*a)
    return error("missing required attribute '" + name + "'");
  return convertTensor((*a)->t(), context(), location, externalBase,
                       "node '" + node.name() + "' attribute '" + name + "'");
}

/// Creates `name` with placeholder result types and sets the ones its shape function
/// infers; null (after the shape function's diagnostic) when it rejects the operands.
static Operation *createInferred(OpBuilder &b, Location location, StringRef name,
                                 ValueRange operands, ArrayRef<NamedAttribute> attrs,
                                 unsigned numResults) {
  OperationState state(location, name);
  state.addOperands(operands);
  state.addAttributes(attrs);
  state.addTypes(SmallVector<Type>(numResults, NoneType::get(b.getContext())));
  Operation *op = b.create(state);
  auto infer = dyn_cast<InferTypeOpInterface>(op);
  SmallVector<Type> types;
  if (!infer ||
      failed(infer.inferReturnTypes(b.getContext(), location, op->getOperands(),
                                    op->getRawDictionaryAttrs(), op->getPropertiesStorage(),
                                    op->getRegions(), types)) ||
      types.size() != numResults) {
    op->erase();
    return nullptr;
  }
  for (auto [result, type] : llvm::zip(op->getResults(), types))
    result.setType(type);
  return op;
}

/// Converters chain steps; an operand left null by a failed step must not reach
/// an op (the failed step already reported why, or this reports it).
static bool hasNullOperand(NodeImporter &n, StringRef name, ValueRange operands) {
  if (llvm::all_of(operands, [](Value v) { return static_cast<bool>(v); }))
    return false;
  (void)n.error("cannot build " + name + ": an operand could not be built");
  return true;
}

FailureOr<SmallVector<Value>>
NodeImporter::createMultiResultOp(StringRef name, ValueRange operands,
                                  ArrayRef<NamedAttribute> attrs, unsigned numResults) {
  if (hasNullOperand(*this, name, operands))
    return failure();
  Operation *op = createInferred(b, location, name, operands, attrs, numResults);
  if (!op)
    return failure();
  return SmallVector<Value>(op->getResults());
}

FailureOr<Value> NodeImporter::createOp(StringRef name, ValueRange operands,
                                        ArrayRef<NamedAttribute> attrs) {
  if (hasNullOperand(*this, name, operands))
    return failure();
  Operation *op = createInferred(b, location, name, operands, attrs, 1);
  if (!op)
    return failure();

  // Fold right away, so shape computations resolve before the ops that use them
  // are created and their shape functions see symbolic constants.
  SmallVector<Attribute> constants;
  for (Value v : op->getOperands()) {
    Attribute attr;
    matchPattern(v, m_Constant(&attr));
    constants.push_back(attr);
  }
  SmallVector<OpFoldResult> folded;
  if (folding && !isa<ConstantOp, SymbolicConstantOp>(op) && succeeded(op->fold(constants, folded)) &&
      folded.size() == 1) {
    Value replacement;
    if (auto v = dyn_cast<Value>(folded.front()))
      replacement = v;
    else
      replacement = folder.getOrCreateConstant(op->getBlock(), op->getDialect(),
                                               cast<Attribute>(folded.front()),
                                               op->getResult(0).getType());
    if (replacement && replacement.getType() == op->getResult(0).getType()) {
      // The folder makes constants without a location; the first node that
      // produced one names it, so errors about the value (its size, say) say
      // where it came from.
      if (Operation *constant = replacement.getDefiningOp();
          constant && isa<UnknownLoc>(constant->getLoc()))
        constant->setLoc(op->getLoc());
      op->erase();
      return replacement;
    }
  }
  return op->getResult(0);
}

Value NodeImporter::constI64(ArrayRef<int64_t> values, bool scalar) {
  auto type = RankedTensorType::get(scalar ? ArrayRef<int64_t>{} : ArrayRef<int64_t>{(int64_t)values.size()},
                                    b.getI64Type());
  return ConstantOp::create(b, location, DenseIntElementsAttr::get(type, values));
}

Value NodeImporter::constScalar(Type elementType, double value) {
  auto type = RankedTensorType::get({}, elementType);
  Attribute attr;
  if (auto f = dyn_cast<FloatType>(elementType)) {
    APFloat v(value);
    bool losesInfo;
    v.convert(f.getFloatSemantics(), APFloat::rmNearestTiesToEven, &losesInfo);
    attr = DenseElementsAttr::get(type, v);
  } else if (elementType.isInteger(1)) {
    attr = DenseElementsAttr::get(type, value != 0);
  } else {
    attr = DenseElementsAttr::get(
        type, APInt(elementType.getIntOrFloatBitWidth(), static_cast<int64_t>(value),
                    /*isSigned=*/true, /*implicitTrunc=*/true));
  }
  return ConstantOp::create(b, location, cast<ElementsAttr>(attr));
}

LogicalResult NodeImporter::setResults(ArrayRef<Value> values) {
  for (int i = values.size(); i < node.output_size(); ++i)
    if (!node.output(i).empty())
      return unsupported("output " + Twine(i) + " ('" + node.output(i) +
                         "') is not produced by kiln's lowering of " + node.op_type());
  // Values past the node's outputs are optional results the node does not ask for.
  size_t count = std::min<size_t>(values.size(), node.output_size());
  resultValues.assign(values.begin(), values.begin() + count);
  return success();
}

} // namespace kiln::onnx_import
