//===- Converters.h - helpers shared by the ONNX op converters --*- C++ -*-===//

#ifndef KILN_FRONTEND_ONNX_OPS_CONVERTERS_H
#define KILN_FRONTEND_ONNX_OPS_CONVERTERS_H

#include "frontend/onnx/NodeImporter.h"

namespace kiln::onnx_import {

/// Converters are declared once in OnnxOps.def; this declares each of them.
#define ONNX_OP(name, converter, maxVersion) mlir::LogicalResult converter(NodeImporter &n);
#define ONNX_DOMAIN_OP(domain, name, converter, maxVersion)                                   \
  mlir::LogicalResult converter(NodeImporter &n);
#define ONNX_UNSUPPORTED(name, reason)
#include "frontend/onnx/OnnxOps.def"
#undef ONNX_OP
#undef ONNX_DOMAIN_OP
#undef ONNX_UNSUPPORTED

/// The converters of ONNX ops that are one kiln op, operand for operand: the op
/// table's 1:1 rows (OpTable.cpp) and a few converters that pick the op.
template <typename OpTy>
mlir::LogicalResult mapUnary(NodeImporter &n) {
  auto x = n.requiredInput(0);
  if (mlir::failed(x))
    return mlir::failure();
  auto r = n.create<OpTy>({*x});
  return mlir::failed(r) ? mlir::failure() : n.setResults({*r});
}
template <typename OpTy>
mlir::LogicalResult mapBinary(NodeImporter &n) {
  auto a = n.requiredInput(0), b = n.requiredInput(1);
  if (mlir::failed(a) || mlir::failed(b))
    return mlir::failure();
  auto r = n.create<OpTy>({*a, *b});
  return mlir::failed(r) ? mlir::failure() : n.setResults({*r});
}

/// Small builders that chain: each returns failure after a diagnostic. The op
/// is a class (binary<MulOp>), so a misspelt op is a build error.
template <typename OpTy>
mlir::FailureOr<mlir::Value> binary(NodeImporter &n, mlir::Value a, mlir::Value b) {
  return n.create<OpTy>({a, b});
}
template <typename OpTy> mlir::FailureOr<mlir::Value> unary(NodeImporter &n, mlir::Value a) {
  return n.create<OpTy>({a});
}
mlir::FailureOr<mlir::Value> compare(NodeImporter &n, CompareDirection direction,
                                     mlir::Value a, mlir::Value b);
mlir::FailureOr<mlir::Value> select(NodeImporter &n, mlir::Value c, mlir::Value a,
                                    mlir::Value b);
mlir::FailureOr<mlir::Value> castTo(NodeImporter &n, mlir::Value v, mlir::Type element);
/// A 0-d constant of `like`'s element type.
mlir::Value scalarLike(NodeImporter &n, mlir::Value like, double value);
mlir::Type elementTypeOf(mlir::Value v);

/// Reshape through a target whose entries may be symbolic (from a DimsAttr-like
/// SymShape): emits a constant or a symbolic_constant for it.
mlir::FailureOr<mlir::Value> reshapeTo(NodeImporter &n, mlir::Value v,
                                       llvm::ArrayRef<DimExpr> dims);
/// Two dims the op requires equal (ONNX states it; no shape function of what
/// the op is built from does): an error when both are constants that differ, a
/// `kiln.guard` checked on every call when a symbol decides, nothing when an
/// unknown dim leaves nothing to check. `what` completes "<op> at '<node>': ".
mlir::LogicalResult requireEqualDims(NodeImporter &n, DimExpr a, DimExpr b,
                                     const std::string &what);
/// `v` whose dims must equal `want` (a null entry: any): requireEqualDims for
/// each, then `v` viewed with those dims (a reshape, which is free) when its
/// own differ, so the ops after it see one symbol for each size and fuse.
mlir::FailureOr<mlir::Value> requireDimsOf(NodeImporter &n, mlir::Value v,
                                           llvm::ArrayRef<DimExpr> want,
                                           const std::string &what);
/// The same for `a` that must be 1 or equal to `b` (a per-head value or one
/// for every head).
mlir::LogicalResult requireOneOrEqualDims(NodeImporter &n, DimExpr a, DimExpr b,
                                          const std::string &what);
/// The same for `a` that must not exceed `b`.
mlir::LogicalResult requireLessEqualDims(NodeImporter &n, DimExpr a, DimExpr b,
                                         const std::string &what);
/// Rotary position embedding of `input` ([batch, heads, seq, head] or
/// [batch, seq, heads * head] with `numHeads`), as ONNX's RotaryEmbedding
/// defines it: the caches ([positions, rotated / 2], or already per token
/// when `positions` is null) gathered at `positions` ([batch or 1, seq]),
/// the first `rotaryDim` (0: all) of each head rotated in halves or
/// interleaved pairs, the rest passed through.
mlir::FailureOr<mlir::Value> rotaryEmbedding(NodeImporter &n, mlir::Value input,
                                             mlir::Value cosCache, mlir::Value sinCache,
                                             mlir::Value positions, bool interleaved,
                                             int64_t rotaryDim, int64_t numHeads);
/// A constant (or symbolic constant) 1-D i64 tensor of `dims`.
mlir::Value shapeConstant(NodeImporter &n, llvm::ArrayRef<DimExpr> dims);

/// A 1-element i64 tensor holding dim `i` of `x`: a constant when the dim is known,
/// gathered from shape_of at run time when not.
/// ONNX Conv of `x` by `w` (plus `bias` when given) with the node's Conv
/// attributes (kernel_shape, strides, dilations, pads or auto_pad, group):
/// Conv's own import, and QLinearConv's and ConvInteger's on their dequantized
/// (zero-point-centered) operands.
mlir::FailureOr<mlir::Value> buildConv(NodeImporter &n, mlir::Value x, mlir::Value w,
                                       mlir::Value bias);
mlir::FailureOr<mlir::Value> dimPiece(NodeImporter &n, mlir::Value x, int64_t i);
/// The product of dims [begin, end) of `x` as a 1-element i64 tensor.
mlir::FailureOr<mlir::Value> dimProduct(NodeImporter &n, mlir::Value x, int64_t begin,
                                        int64_t end);
/// Concatenates 1-D i64 pieces into one shape tensor.
mlir::FailureOr<mlir::Value> concatPieces(NodeImporter &n, llvm::ArrayRef<mlir::Value> pieces);
/// Reshapes `x` keeping its dims but inserting 1s at output positions `ones` (sorted).
mlir::FailureOr<mlir::Value> insertUnitDims(NodeImporter &n, mlir::Value x,
                                            llvm::ArrayRef<int64_t> ones);

/// 0, 1, ..., n-1 (i64) for n = dim `dim` of `like`, shaped to run along `axis` of
/// a rank-`rank` tensor (size 1 on every other axis).
mlir::FailureOr<mlir::Value> iotaAlongAxis(NodeImporter &n, mlir::Value like, int64_t dim,
                                           int64_t axis, int64_t rank);

/// kiln.reduce of `x` over `axes` with `kind`.
mlir::FailureOr<mlir::Value> reduce(NodeImporter &n, mlir::Value x, ReduceKind kind,
                                    llvm::ArrayRef<int64_t> axes, bool keepDims);
/// [0, rank).
llvm::SmallVector<int64_t> allAxes(int64_t rank);
/// The ONNX reduction attribute of ScatterElements/ScatterND ("none", "add", ...).
mlir::FailureOr<ScatterReduction> scatterReduction(NodeImporter &n);

/// Normalizes ONNX axes (negative allowed) against `rank`; error on out of range.
mlir::FailureOr<llvm::SmallVector<int64_t>> normalizeAxes(NodeImporter &n,
                                                          llvm::ArrayRef<int64_t> axes,
                                                          int64_t rank);

/// A chain of fallible building steps that stops at the first failure: every step
/// after a failed one (or given a null value) builds nothing and returns null, so a
/// converter writes its decomposition straight through and checks `ok` once.
class Chain {
public:
  explicit Chain(NodeImporter &n) : n(n) {}
  mlir::Value operator()(mlir::FailureOr<mlir::Value> v) {
    if (failed(v) || !ok) {
      ok = false;
      return {};
    }
    return *v;
  }
  template <typename OpTy> mlir::Value bin(mlir::Value a, mlir::Value b) {
    return ok && a && b ? (*this)(binary<OpTy>(n, a, b)) : mlir::Value();
  }
  template <typename OpTy> mlir::Value un(mlir::Value a) {
    return ok && a ? (*this)(unary<OpTy>(n, a)) : mlir::Value();
  }
  mlir::Value cmp(CompareDirection d, mlir::Value a, mlir::Value b) {
    return ok && a && b ? (*this)(compare(n, d, a, b)) : mlir::Value();
  }
  mlir::Value sel(mlir::Value c, mlir::Value a, mlir::Value b) {
    return ok && c && a && b ? (*this)(select(n, c, a, b)) : mlir::Value();
  }
  /// A 0-d constant of `like`'s element type.
  mlir::Value k(mlir::Value like, double v) { return like ? scalarLike(n, like, v) : mlir::Value(); }
  mlir::Value matmul(mlir::Value a, mlir::Value b);
  mlir::Value transpose(mlir::Value v, llvm::ArrayRef<int64_t> perm);
  /// `v` sliced to [start, end) along `axis` (static bounds).
  mlir::Value slice(mlir::Value v, int64_t axis, int64_t start, int64_t end);
  mlir::Value concat(llvm::ArrayRef<mlir::Value> parts, int64_t axis);
  mlir::Value reshape(mlir::Value v, llvm::ArrayRef<DimExpr> dims) {
    return ok && v ? (*this)(reshapeTo(n, v, dims)) : mlir::Value();
  }
  mlir::Value iota(mlir::Value like, int64_t dim, int64_t axis, int64_t rank) {
    return ok && like ? (*this)(iotaAlongAxis(n, like, dim, axis, rank)) : mlir::Value();
  }
  /// Maps the node's results, or fails when a step did.
  mlir::LogicalResult done(llvm::ArrayRef<mlir::Value> results) {
    if (!ok || llvm::any_of(results, [](mlir::Value v) { return !v; }))
      return mlir::failure();
    return n.setResults(results);
  }
  bool ok = true;

private:
  NodeImporter &n;
};

/// max(0, min(1, alpha * x + beta)) (ONNX HardSigmoid).
mlir::Value hardSigmoid(Chain &c, mlir::Value x, double alpha, double beta);
/// log(1 + exp(x)), as max(x, 0) + log(1 + exp(-|x|)) so it neither overflows for
/// large x nor loses precision.
mlir::Value softplus(Chain &c, mlir::Value x);

/// `v` with one row of zeros appended along `axis`: what a gather clamped
/// to v's length reads past v's own rows (there is one even when v has none).
mlir::Value withZeroRow(NodeImporter &n, Chain &c, mlir::Value v, int64_t axis);

/// The type a float computes in where ONNX asks for at least f32 (f16, bf16
/// and the f8 types widen to f32; f32 and f64 compute in themselves).
mlir::Type computeTypeOf(NodeImporter &n, mlir::Value x);

/// RMS normalization of `wide` (already in its compute type) over dims
/// [axis, rank): x * rsqrt(mean(x^2) + epsilon), and that rsqrt with the
/// dims kept (an inv_std_var output).
std::pair<mlir::Value, mlir::Value> rmsNormalize(NodeImporter &n, Chain &c, mlir::Value wide,
                                                 int64_t axis, float epsilon);

} // namespace kiln::onnx_import

#endif // KILN_FRONTEND_ONNX_OPS_CONVERTERS_H
