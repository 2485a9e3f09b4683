//===- Dequantized.h - operands the importer dequantized, as integers -*- C++ -*-===//
//
// The integer passes (--kiln-integer-matmuls, --kiln-integer-convs) read a
// float operand back as what it dequantizes: (q - zero) * scale with q of
// 8-bit integers and the scale and zero point constants, one value or one
// per index of one axis, as the ONNX importer writes DequantizeLinear,
// QLinearMatMul, MatMulInteger (in i32 with no scale) and ConvInteger (in
// f32 with no scale).
//===----------------------------------------------------------------------===//

#ifndef KILN_PASSES_DEQUANTIZED_H
#define KILN_PASSES_DEQUANTIZED_H

#include "mlir/IR/Attributes.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/Value.h"
#include "llvm/ADT/SmallVector.h"

#include <optional>
#include <vector>

namespace kiln {

/// One dequantized operand: (q - zero) * scale, q of 8-bit integers or of
/// e4m3 floats.
struct Dequantized {
  mlir::Value q;
  /// The scale and zero point (one value, or one per index of the axis
  /// asked for); `zero` is empty for none.
  std::vector<double> scale, zero;
  bool isUnsigned = false;
};

/// The codes an operand is dequantized from.
enum class QuantizedCodes {
  int8,  ///< 8-bit integers, signed or not, with integer zero points
  e4m3,  ///< float8 e4m3fn, whose zero points must be 0 (FP8 Q/DQ models)
};

/// `v` as (q - zero) * scale: mul(sub(cast(q), zero), scale) or
/// mul(cast(q), scale), the scale on either side; or, with no multiply
/// (MatMulInteger's operands in i32, ConvInteger's in f32: exact integer
/// products), sub(cast(q), zero) or cast(q) with a scale of 1. The scale and zero point may vary along
/// dim `axis` of `v` (-1: neither may). Nothing when `v` is not so, q is
/// not of `codes`, or a zero point is not an integer of q's range (not 0,
/// for e4m3 codes).
std::optional<Dequantized> dequantized(mlir::Value v, int64_t axis,
                                       QuantizedCodes codes = QuantizedCodes::int8);

/// Element `i` of a per-tensor (one value) or per-axis constant.
double at(const std::vector<double> &values, int64_t i);

/// The zero points as an int8 operand sees them (one, or `count`): uint8
/// values are stored minus 128, so their zero points move with them.
std::vector<int64_t> int8Zeros(const Dequantized &d, int64_t count);

/// What the integer passes build their ops with, at one op's place: ops of
/// the types their shape functions infer, each null when an operand is null
/// or the shape function refuses (the rewrite then gives up).
class IntegerOpBuilder {
public:
  explicit IntegerOpBuilder(mlir::Operation *at) : b(at), loc(at->getLoc()) {}

  mlir::Value make(llvm::StringRef name, mlir::ValueRange operands,
                   llvm::ArrayRef<mlir::NamedAttribute> attributes = {});
  mlir::Value castTo(mlir::Value v, mlir::Type element);
  mlir::Value transposed(mlir::Value v, llvm::ArrayRef<int64_t> permutation);
  /// A 0-d integer constant.
  mlir::Value scalar(mlir::Type element, int64_t value);
  /// The operand `d` dequantizes as int8: q itself, or a uint8 q minus 128.
  mlir::Value asInt8(const Dequantized &d);

protected:
  mlir::OpBuilder b;
  mlir::Location loc;
};

/// Records that `op`, a product of dequantized operands, stays float
/// because `why` instead of a `call` ("int8" or "FP8") library call: an
/// entry of the function's kiln.float_quantized_ops (kFloatQuantizedOpsAttr),
/// kept in `kept` until the pass writes it.
void recordKeptFloat(mlir::Operation *op, llvm::StringRef why,
                     llvm::SmallVectorImpl<mlir::Attribute> &kept, llvm::StringRef call = "int8");

} // namespace kiln

#endif // KILN_PASSES_DEQUANTIZED_H
