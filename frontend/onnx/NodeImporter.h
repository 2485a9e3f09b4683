//===- NodeImporter.h - what an ONNX op converter works with ----*- C++ -*-===//
//
// One NodeImporter per ONNX node. A converter (declared in OnnxOps.def) reads the
// node's inputs and attributes through it, builds kiln ops with `create<Op>`, and
// maps the node's outputs with `setResults`. Every accessor that can meet bad input
// returns FailureOr and has already emitted a diagnostic naming the node.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_FRONTEND_ONNX_NODEIMPORTER_H
#define KILN_FRONTEND_ONNX_NODEIMPORTER_H

#include "ir/Kiln/KilnDialect.h"

#include "mlir/IR/Builders.h"
#include "mlir/Transforms/FoldUtils.h"

// onnx_pb.h defines ONNX_API; ONNX_ML (set by CMake) selects the onnx-ml proto,
// the one libonnx_proto is built from.
#include <onnx/onnx_pb.h>

#include <functional>

namespace kiln::onnx_import {

/// The ONNX element type as an MLIR type; null for types kiln does not support.
mlir::Type convertElementType(mlir::MLIRContext *context, int onnxType);
/// "FLOAT", "STRING", ... for messages.
llvm::StringRef onnxTypeName(int onnxType);

/// Decodes a TensorProto into an ElementsAttr. `externalBase` is the directory for
/// external data. Emits a diagnostic at `loc` naming `what` on failure.
mlir::FailureOr<mlir::ElementsAttr> convertTensor(const onnx::TensorProto &tensor,
                                                  mlir::MLIRContext *context,
                                                  mlir::Location loc,
                                                  llvm::StringRef externalBase,
                                                  const llvm::Twine &what);
/// convertTensor for a tensor the caller drops after it (a graph's
/// initializer): large inline raw_data moves into the attribute's blob instead
/// of being copied, leaving the tensor's raw_data empty.
mlir::FailureOr<mlir::ElementsAttr> convertInitializer(onnx::TensorProto &tensor,
                                                       mlir::MLIRContext *context,
                                                       mlir::Location loc,
                                                       llvm::StringRef externalBase,
                                                       const llvm::Twine &what);

class NodeImporter {
public:
  /// Turns a graph input into a constant where the caller bound one
  /// (ImportOptions::constantInputs); null when it did not.
  using ConstantBinder = std::function<mlir::Value(mlir::BlockArgument)>;
  /// Imports a subgraph (If branch, Loop or Scan body) into the single block of
  /// `region`, with block arguments of `argTypes` named after the subgraph's inputs,
  /// ending in a kiln.yield of its outputs.
  using SubgraphImporter = std::function<mlir::LogicalResult(
      const onnx::GraphProto &, mlir::Region &, llvm::ArrayRef<mlir::Type>)>;

  NodeImporter(mlir::OpBuilder &builder, mlir::OperationFolder &folder,
               const onnx::NodeProto &node, int64_t opset, mlir::Location loc,
               llvm::SmallVector<mlir::Value> inputs, llvm::StringRef externalBase,
               ConstantBinder binder = nullptr, SubgraphImporter subgraphs = nullptr);

  /// The version of this op the model's opset selects (its since_version).
  int64_t version() const { return opsetVersion; }
  mlir::Location loc() const { return location; }
  mlir::OpBuilder &builder() { return b; }
  mlir::MLIRContext *context() { return b.getContext(); }
  const onnx::NodeProto &proto() const { return node; }
  llvm::StringRef opType() const { return node.op_type(); }

  //===--- Diagnostics ----------------------------------------------------===//
  /// "node 'n' (OpType): <message>"; always failure.
  mlir::LogicalResult error(const llvm::Twine &message);
  /// An error explaining that kiln does not support this use of the op.
  mlir::LogicalResult unsupported(const llvm::Twine &reason);

  //===--- Inputs ---------------------------------------------------------===//
  size_t numInputs() const { return inputValues.size(); }
  /// The input, or null when it is absent (past the end or an empty name).
  mlir::Value input(size_t i) const {
    return i < inputValues.size() ? inputValues[i] : mlir::Value();
  }
  /// The input; an error when it is absent.
  mlir::FailureOr<mlir::Value> requiredInput(size_t i);
  /// Inputs `begin` up to `end`, each required (an error names the first
  /// absent one).
  mlir::FailureOr<llvm::SmallVector<mlir::Value>> requiredInputs(size_t begin, size_t end);
  /// The input's ranked tensor type.
  static mlir::RankedTensorType typeOf(mlir::Value v) {
    return llvm::cast<mlir::RankedTensorType>(v.getType());
  }
  /// Constant integer contents of an input (a shape, axes, pads), or an error when
  /// they are not compile-time constants.
  mlir::FailureOr<llvm::SmallVector<int64_t>> constantInts(size_t i, llvm::StringRef what);
  /// Like constantInts, but nullopt (no error) when the input is not constant.
  std::optional<llvm::SmallVector<int64_t>> maybeConstantInts(mlir::Value v);
  /// The dense constant value of `v` (a bound graph input counts), or null.
  mlir::DenseElementsAttr constantValue(mlir::Value v);
  /// Float contents of a constant, or nullopt.
  std::optional<llvm::SmallVector<double>> maybeConstantFloats(mlir::Value v);

  //===--- Attributes -----------------------------------------------------===//
  bool hasAttr(llvm::StringRef name) const { return findAttr(name) != nullptr; }
  mlir::FailureOr<int64_t> intAttr(llvm::StringRef name, std::optional<int64_t> dflt = {});
  mlir::FailureOr<float> floatAttr(llvm::StringRef name, std::optional<float> dflt = {});
  mlir::FailureOr<std::string> stringAttr(llvm::StringRef name,
                                          std::optional<std::string> dflt = {});
  mlir::FailureOr<llvm::SmallVector<int64_t>>
  intsAttr(llvm::StringRef name, std::optional<llvm::SmallVector<int64_t>> dflt = {});
  mlir::FailureOr<llvm::SmallVector<float>>
  floatsAttr(llvm::StringRef name, std::optional<llvm::SmallVector<float>> dflt = {});
  mlir::FailureOr<mlir::ElementsAttr> tensorAttr(llvm::StringRef name);
  /// A GRAPH attribute; an error when missing.
  mlir::FailureOr<const onnx::GraphProto *> graphAttr(llvm::StringRef name);
  /// Imports a subgraph into `region` (see SubgraphImporter).
  mlir::LogicalResult importSubgraph(const onnx::GraphProto &graph, mlir::Region &region,
                                     llvm::ArrayRef<mlir::Type> argTypes);

  //===--- Building -------------------------------------------------------===//
  /// Creates a kiln op whose result types its shape function infers, then folds it
  /// when its operands are constants. Fails (with the shape function's diagnostic)
  /// on operands the op rejects.
  template <typename OpTy>
  mlir::FailureOr<mlir::Value> create(mlir::ValueRange operands,
                                      llvm::ArrayRef<mlir::NamedAttribute> attrs = {}) {
    return createOp(OpTy::getOperationName(), operands, attrs);
  }
  mlir::FailureOr<mlir::Value> createOp(llvm::StringRef name, mlir::ValueRange operands,
                                        llvm::ArrayRef<mlir::NamedAttribute> attrs);
  /// Whether createOp folds; off while DequantizeLinear of a constant is
  /// built, which --kiln-integer-matmuls reads before canonicalization
  /// would fold it into a float constant.
  void setFolding(bool on) { folding = on; }
  /// The same for an op with `numResults` results (not folded).
  mlir::FailureOr<llvm::SmallVector<mlir::Value>>
  createMultiResultOp(llvm::StringRef name, mlir::ValueRange operands,
                      llvm::ArrayRef<mlir::NamedAttribute> attrs, unsigned numResults);

  /// A 1-D i64 constant (or 0-d when `scalar`).
  mlir::Value constI64(llvm::ArrayRef<int64_t> values, bool scalar = false);
  /// A 0-d constant of `elementType` holding `value`.
  mlir::Value constScalar(mlir::Type elementType, double value);
  mlir::NamedAttribute named(llvm::StringRef name, mlir::Attribute value) {
    return b.getNamedAttr(name, value);
  }

  /// Maps the node's outputs (in order) to `values`; outputs past `values` must
  /// be unused (empty names) or it is an error, and values past the node's
  /// outputs are dropped.
  mlir::LogicalResult setResults(llvm::ArrayRef<mlir::Value> values);
  llvm::ArrayRef<mlir::Value> results() const { return resultValues; }

private:
  const onnx::AttributeProto *findAttr(llvm::StringRef name) const;
  mlir::FailureOr<const onnx::AttributeProto *>
  typedAttr(llvm::StringRef name, onnx::AttributeProto::AttributeType type);

  mlir::OpBuilder &b;
  mlir::OperationFolder &folder;
  bool folding = true;
  const onnx::NodeProto &node;
  int64_t opsetVersion;
  mlir::Location location;
  llvm::SmallVector<mlir::Value> inputValues;
  llvm::SmallVector<mlir::Value> resultValues;
  std::string externalBase;
  ConstantBinder binder;
  SubgraphImporter subgraphs;
};

using Converter = mlir::LogicalResult (*)(NodeImporter &);

struct ConverterEntry {
  Converter convert = nullptr;
  /// The newest version of the op this converter implements.
  int64_t maxVersion = 0;
};

/// The converter for `opType` (convert is null when there is none).
/// `unsupportedReason` is set for ops kiln deliberately does not support.
ConverterEntry lookupConverter(llvm::StringRef opType, std::string *unsupportedReason);
/// The converter for `opType` of a domain other than the default one
/// (ONNX_DOMAIN_OP); convert is null when there is none.
ConverterEntry lookupDomainConverter(llvm::StringRef domain, llvm::StringRef opType);

} // namespace kiln::onnx_import

#endif // KILN_FRONTEND_ONNX_NODEIMPORTER_H
