//===- IntegerMatmuls.cpp - dequantized matmuls as int8 tensor-core products -===//
//
// A Q/DQ graph (onnxruntime's quantize_static, TensorRT's model optimizer,
// torch's PT2E export), and QLinearMatMul as imported, multiply dequantized
// 8-bit tensors in float:
//   ((a - za) * sa) @ ((b - zb) * sb)
// With sa one scale and sb one scale or one a column, that is
//   sa * sb[n] * sum_k (a - za)(b - zb)
// and the sum is integer arithmetic, exactly:
//   sum_k a b  -  zb[n] * sum_k a  -  za * sum_k (b - zb[n])
// The first term is an 8-bit product into int32 (kiln.matmul of i8
// operands, cuBLASLt's int8 tensor cores), the second a row sum of `a`
// (only where zb is not 0), the third a column sum of `b` (a constant when
// b is a weight). The scale, a bias and the next QuantizeLinear that follow
// are elementwise ops, which form-kernels fuses into one kernel reading the
// int32 product. uint8 operands become int8 by subtracting 128 from the
// values and the zero point (a constant at compile time, an activation in
// the kernel that quantized it). MatMulInteger, imported as the same
// centered operands in i32 with no scale, is the int32 sum itself.
//
// cuBLASLt's int8 matmul takes one layout, "TN": in kiln's row-major terms
// `a` [.., M, K] as it is and `b` stored [.., N, K] (transpose_rhs). A
// constant weight is stored so; an activation gets a transpose, which fuses
// into the kernel that quantized it. --kiln-absorb-matmul-transposes leaves
// these matmuls alone.
//
// Runs first in the graph pipeline, before shape inference and
// canonicalization would fold a constant weight's dequantization into a
// float constant (the importer keeps it unfolded for this pass). What does
// not match (a scale per K, a blocked scale, another integer width, an
// unknown K or N, a product that could overflow int32, an f16 or bf16
// result, whose range the int32 sums exceed) stays the float matmul it was.
// K and N that are not multiples of 4 are padded with zeros (the operand's
// pad fuses into the kernel that quantized it; the result is sliced); a K
// known only at run time gets a guard that its sums fit int32.
//
// FP8 Q/DQ graphs (e4m3fn codes, zero points 0) say the same of float8
// operands: `sa * sb[n] * sum_k a b` with e4m3 `a` and `b`, which is
// cuBLASLt's FP8 matmul (e4m3 products exact in its fp32 sums) with `b` a
// constant weight stored [N, K], K a multiple of 16 and N of 8 (rows of 16
// bytes), and the scales as its alpha (rewriteFloat8). A product of two
// activations stays float.
//
//===----------------------------------------------------------------------===//

#include "passes/ConstantValues.h"
#include "passes/Dequantized.h"
#include "passes/Matching.h"
#include "passes/Passes.h"

#include "ir/Kiln/KilnDialect.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

#include <cmath>
#include <cstring>

namespace kiln {
#define GEN_PASS_DEF_INTEGERMATMULSPASS
#include "passes/Passes.h.inc"
} // namespace kiln

using namespace mlir;

namespace kiln {
namespace {

/// The largest K whose sums fit int32: per k, |a b| <= 128 * 128,
/// |za (b - zb)| <= 128 * 255 and |zb a| <= 128 * 128 (int8 values and
/// zero points), 65408 in all.
constexpr int64_t kMaxK = ((int64_t(1) << 31) - 1) / 65408;

/// K and N are padded to multiples of this: cuBLASLt's int8 matmul needs
/// leading dimensions (K for the operands, N for the result) of 4 elements.
constexpr int64_t kLeadingDimMultiple = 4;

/// Builds the integer form of one matmul; nothing when an op refuses.
class Rewriter : public IntegerOpBuilder {
public:
  explicit Rewriter(MatmulOp matmul) : IntegerOpBuilder(matmul), ctx(matmul.getContext()) {}

  /// The replacement of `matmul`'s result, or null (the matmul stays, and
  /// `why` says why when a rule refused it).
  /// `storedNK`: `b8.q` is a constant weight stored [N, K] (Gemm's transB,
  /// a transpose the importer wrote), already cuBLASLt's layout.
  Value rewrite(MatmulOp matmul, Dequantized a, Dequantized b8, bool storedNK, std::string &why);
  /// The same for e4m3 operands: cuBLASLt's FP8 matmul (rewriteFloat8).
  Value rewriteFloat8(MatmulOp matmul, const Dequantized &a, const Dequantized &w, bool storedNK,
                      std::string &why);

  /// After a rewrite whose K is known only at run time: that K, which a
  /// guard must bound by kMaxK; null otherwise.
  DimExpr overflowGuard;

private:
  MLIRContext *ctx;

  /// An i32 constant of one value, or one per column ([N]).
  Value i32Constant(ArrayRef<int64_t> values) {
    Type i32 = b.getI32Type();
    SmallVector<int32_t> narrow(values.begin(), values.end());
    if (values.size() == 1)
      return ConstantOp::create(b, loc, DenseElementsAttr::get(RankedTensorType::get({}, i32),
                                                               narrow.front()));
    return ConstantOp::create(
        b, loc,
        DenseElementsAttr::get(RankedTensorType::get({static_cast<int64_t>(values.size())}, i32),
                               ArrayRef<int32_t>(narrow)));
  }
  Value reduceSum(Value v, int64_t axis) {
    return make("kiln.reduce", {v},
                {b.getNamedAttr("kind", ReduceKindAttr::get(ctx, ReduceKind::sum)),
                 b.getNamedAttr("axes", b.getDenseI64ArrayAttr({axis})),
                 b.getNamedAttr("keep_dims", b.getBoolAttr(true))});
  }
  /// The constant weight `w.q` [K, N] (or [N, K] when `storedNK`) as int8
  /// stored [N', K'] (padded with zeros by `nPad` and `kPad`), and the sums
  /// of each column minus its int8 zero point (`zeros`: one, or one a
  /// column); nothing when it is not a constant.
  std::optional<std::pair<Value, std::vector<int64_t>>> weightTN(const Dequantized &w,
                                                                 ArrayRef<int64_t> zeros,
                                                                 bool storedNK, int64_t kPad,
                                                                 int64_t nPad);
};

std::optional<std::pair<Value, std::vector<int64_t>>>
Rewriter::weightTN(const Dequantized &w, ArrayRef<int64_t> zeros, bool storedNK, int64_t kPad,
                   int64_t nPad) {
  std::vector<char> storage;
  std::optional<ArrayRef<char>> bytes = constantBytes(w.q, storage);
  auto type = cast<RankedTensorType>(w.q.getType());
  if (!bytes || type.getRank() != 2)
    return std::nullopt;
  int64_t k = type.getDimSize(storedNK ? 1 : 0), n = type.getDimSize(storedNK ? 0 : 1);
  std::vector<int64_t> columnSums(static_cast<size_t>(n), 0);
  // Stored [N', K'], padded with zeros to multiples of 4.
  int64_t rows = n + nPad, columns = k + kPad;
  auto transposedType = RankedTensorType::get({rows, columns}, b.getI8Type());
  Value transposed = makeConstantFromBytes(
      b, loc, transposedType, static_cast<size_t>(rows * columns), [&](MutableArrayRef<char> out) {
        std::fill(out.begin(), out.end(), 0);
        for (int64_t r = 0; r < k; ++r)
          for (int64_t c = 0; c < n; ++c) {
            auto byte = static_cast<uint8_t>(
                (*bytes)[static_cast<size_t>(storedNK ? c * k + r : r * n + c)]);
            // uint8 to int8: minus 128, which is the top bit flipped.
            int64_t value = w.isUnsigned ? int64_t(byte) - 128 : int64_t(int8_t(byte));
            out[static_cast<size_t>(c * columns + r)] = static_cast<char>(static_cast<int8_t>(value));
            columnSums[static_cast<size_t>(c)] += value - zeros[zeros.size() == 1 ? 0 : c];
          }
      });
  return std::make_pair(transposed, columnSums);
}

Value Rewriter::rewrite(MatmulOp matmul, Dequantized a, Dequantized w, bool storedNK,
                        std::string &why) {
  auto aType = cast<RankedTensorType>(a.q.getType()), wType = cast<RankedTensorType>(w.q.getType());
  auto resultType = cast<RankedTensorType>(matmul.getType());
  Type element = resultType.getElementType();
  int64_t k = aType.getShape().back(), n = storedNK ? wType.getDimSize(0) : wType.getShape().back();
  // K and N as dims (symbols where they are not known: attention's sequence
  // length), each padded with zeros up to a multiple of 4, cuBLASLt's int8
  // rule; zeros add nothing to the products, and the zero points' terms
  // read the operands unpadded.
  // A constant weight's K is known even where the activation's is a symbol
  // (an import with every dim dynamic).
  bool constantWeight = w.q.getDefiningOp<ConstantOp>() && wType.getRank() == 2;
  if (constantWeight)
    k = wType.getDimSize(storedNK ? 1 : 0);
  DimExpr kDim = constantWeight ? getConstantDim(ctx, k) : getSymShape(aType).back(),
          nDim = getSymShape(wType)[storedNK ? 0 : wType.getRank() - 1];
  DimExpr four = getConstantDim(ctx, kLeadingDimMultiple);
  auto padding = [&](DimExpr d) { return modDims(subDims(four, modDims(d, four)), four); };
  bool topLevel = isa<func::FuncOp>(matmul->getParentOp());
  if (aType.getRank() < 2 || wType.getRank() < 2)
    why = "an operand is a vector";
  else if (!kDim || !nDim || !padding(kDim) || !padding(nDim))
    why = "K or N is an unknown size";
  else if (!constantWeight && kDim != getSymShape(wType)[wType.getRank() - 2])
    why = "its operands' K are different symbols";
  else if (!(element.isF32() || element.isF64() || element.isInteger(32)))
    why = "its result is narrower than f32, whose range the int32 sums exceed";
  else if (!ShapedType::isDynamic(k) && k > kMaxK)
    why = "K is so long that int32 sums could overflow";
  else if (ShapedType::isDynamic(k) && !topLevel)
    why = "K is known only at run time inside control flow, where no guard can bound it";
  if (!why.empty())
    return {};
  // A K known only at run time is bounded there (the pass adds the guard
  // once the rewrite stands).
  if (ShapedType::isDynamic(k))
    overflowGuard = kDim;
  DimExpr kPad = padding(kDim), nPad = padding(nDim);
  auto isZero = [](DimExpr d) { return getConstantDimValue(d) == int64_t(0); };
  /// `v` padded with zeros at the end of the dims `amounts` names.
  auto padEnds = [&](Value v, ArrayRef<std::pair<int64_t, DimExpr>> amounts) -> Value {
    if (!v)
      return v;
    int64_t rank = cast<RankedTensorType>(v.getType()).getRank();
    SmallVector<DimExpr> pads(2 * rank, getConstantDim(ctx, 0));
    for (auto [axis, amount] : amounts)
      pads[rank + axis] = amount;
    Value vector = SymbolicConstantOp::create(
        b, loc, RankedTensorType::get({2 * rank}, b.getI64Type()), DimsAttr::getCanonical(ctx, pads));
    return make("kiln.pad", {v, vector, scalar(b.getI8Type(), 0)},
                {b.getNamedAttr("mode", PadModeAttr::get(ctx, PadMode::constant))});
  };
  int64_t za = int8Zeros(a, 1).front();
  std::vector<int64_t> wz = int8Zeros(w, n);
  Value a8 = asInt8(a);
  if (!a8)
    return {};
  Value a8Padded = isZero(kPad) ? a8 : padEnds(a8, {{aType.getRank() - 1, kPad}});
  Type i32 = b.getI32Type();
  Value product, columnTerm;
  if (constantWeight) {
    auto tn = weightTN(w, wz, storedNK, *getConstantDimValue(kPad), *getConstantDimValue(nPad));
    if (!tn)
      return {};
    product = make("kiln.matmul", {a8Padded, tn->first},
                   {b.getNamedAttr("transpose_rhs", b.getBoolAttr(true))});
    std::vector<int64_t> correction(tn->second.size());
    for (size_t c = 0; c < correction.size(); ++c)
      correction[c] = -za * tn->second[c];
    if (llvm::any_of(correction, [](int64_t v) { return v != 0; }))
      columnTerm = i32Constant(correction);
  } else {
    // An activation: stored [.., N, K] by a transpose (and padded), which
    // fuses into the kernel that quantized it.
    Value w8 = asInt8(w);
    int64_t rank = wType.getRank();
    SmallVector<int64_t> perm = llvm::to_vector(llvm::seq<int64_t>(0, rank));
    std::swap(perm[rank - 1], perm[rank - 2]);
    Value stored = transposed(w8, perm);
    SmallVector<std::pair<int64_t, DimExpr>> storedPads;
    if (!isZero(kPad))
      storedPads.push_back({rank - 1, kPad});
    if (!isZero(nPad))
      storedPads.push_back({rank - 2, nPad});
    if (!storedPads.empty())
      stored = padEnds(stored, storedPads);
    product = make("kiln.matmul", {a8Padded, stored},
                   {b.getNamedAttr("transpose_rhs", b.getBoolAttr(true))});
    if (product && za != 0) {
      // -za * sum_k (w - zw), a column sum of the activation.
      Value wide = castTo(w8, i32);
      if (llvm::any_of(wz, [](int64_t z) { return z != 0; }))
        wide = wide ? make("kiln.sub", {wide, i32Constant(wz)}) : Value();
      Value sums = wide ? reduceSum(wide, rank - 2) : Value();
      columnTerm = sums ? make("kiln.mul", {sums, i32Constant({-za})}) : Value();
      if (!columnTerm)
        return {};
    }
  }
  // The padded columns go.
  if (product && !isZero(nPad)) {
    int64_t rank = cast<RankedTensorType>(product.getType()).getRank();
    SmallVector<DimExpr> ends(rank, getConstantDim(ctx, kSliceToEnd));
    ends.back() = nDim;
    auto vector = [&](ArrayRef<DimExpr> d) -> Value {
      return SymbolicConstantOp::create(b, loc, RankedTensorType::get({rank}, b.getI64Type()),
                                        DimsAttr::getCanonical(ctx, d));
    };
    product = make("kiln.slice", {product, i64Vector(b, loc, SmallVector<int64_t>(rank, 0)),
                                  vector(ends), i64Vector(b, loc, SmallVector<int64_t>(rank, 1))});
  }
  if (!product)
    return {};
  Value sum = product;
  if (columnTerm)
    sum = make("kiln.add", {sum, columnTerm});
  // -zb[n] * sum_k a, a row sum of the activation, where zb is not 0.
  if (sum && llvm::any_of(wz, [](int64_t v) { return v != 0; })) {
    Value wide = castTo(a8, i32);
    Value rows = wide ? reduceSum(wide, aType.getRank() - 1) : Value();
    std::vector<int64_t> negated;
    for (int64_t z : wz)
      negated.push_back(-z);
    Value term = rows ? make("kiln.mul", {rows, i32Constant(negated)}) : Value();
    sum = term ? make("kiln.add", {sum, term}) : Value();
  }
  if (!sum)
    return {};
  // MatMulInteger's result is the int32 sum itself.
  if (element.isInteger(32))
    return sum.getType() == resultType ? sum : Value();
  // sa * sb[n], in the result's float type, once a column.
  std::vector<double> scales;
  for (int64_t c = 0; c < (w.scale.size() > 1 ? n : 1); ++c)
    scales.push_back(a.scale[0] * at(w.scale, c));
  auto scaleType = scales.size() == 1 ? RankedTensorType::get({}, element)
                                      : RankedTensorType::get({n}, element);
  Value real = castTo(sum, element);
  Value scaled = real ? make("kiln.mul", {real, makeConstant(b, loc, scaleType, scales)}) : Value();
  return scaled && scaled.getType() == resultType ? scaled : Value();
}

Value Rewriter::rewriteFloat8(MatmulOp matmul, const Dequantized &a, const Dequantized &w,
                              bool storedNK, std::string &why) {
  auto aType = cast<RankedTensorType>(a.q.getType()), wType = cast<RankedTensorType>(w.q.getType());
  auto resultType = cast<RankedTensorType>(matmul.getType());
  Type element = resultType.getElementType();
  bool constantWeight = w.q.getDefiningOp<ConstantOp>() && wType.getRank() == 2 &&
                        wType.hasStaticShape();
  int64_t k = constantWeight ? wType.getDimSize(storedNK ? 1 : 0) : 0,
          n = constantWeight ? wType.getDimSize(storedNK ? 0 : 1) : 0;
  if (aType.getRank() < 2)
    why = "an operand is a vector";
  else if (!constantWeight)
    why = "an FP8 product of two activations (constant weights only)";
  else if (k % 16 != 0 || n % 8 != 0)
    why = "K is not a multiple of 16 or N of 8 (cuBLASLt's FP8 rows of 16 bytes)";
  else if (!isa<Float32Type, Float16Type, BFloat16Type>(element))
    why = "its result is not f32, f16 or bf16 (cuBLASLt's FP8 results)";
  if (!why.empty())
    return {};
  std::vector<char> storage;
  std::optional<ArrayRef<char>> bytes = constantBytes(w.q, storage);
  if (!bytes)
    return {};
  // Stored [N, K], cuBLASLt's FP8 layout (kiln's b transposed).
  auto tnType = RankedTensorType::get({n, k}, wType.getElementType());
  Value tn = makeConstantFromBytes(
      b, loc, tnType, static_cast<size_t>(n * k), [&](MutableArrayRef<char> out) {
        for (int64_t r = 0; r < k; ++r)
          for (int64_t c = 0; c < n; ++c)
            out[static_cast<size_t>(c * k + r)] =
                (*bytes)[static_cast<size_t>(storedNK ? c * k + r : r * n + c)];
      });
  // sa * sb as the call's alpha, one scale each. Scales a column: alpha
  // takes the largest, and the product is multiplied by each column's share
  // of it after the call (an elementwise op the next kernel takes), so that
  // the call's own result stays at the model's magnitudes (a 16-bit result
  // of sa alone, the weight scales being ~1e-4, would overflow f16).
  bool perColumn = w.scale.size() > 1;
  double largest = 0;
  for (double sb : w.scale)
    largest = std::max(largest, std::fabs(sb));
  if (!(largest > 0))
    largest = 1;
  double alpha = a.scale[0] * (perColumn ? largest : w.scale[0]);
  SmallVector<NamedAttribute> attributes = {
      b.getNamedAttr("transpose_rhs", b.getBoolAttr(true)),
      b.getNamedAttr("alpha", b.getF64FloatAttr(alpha))};
  if (!element.isF32())
    attributes.push_back(b.getNamedAttr("float8_result", TypeAttr::get(element)));
  Value product = make("kiln.matmul", {a.q, tn}, attributes);
  if (!product || (!perColumn && product.getType() != resultType)) {
    why = "the FP8 product's shape does not infer as the matmul's";
    return {};
  }
  if (!perColumn)
    return product;
  std::vector<double> shares;
  for (double sb : w.scale)
    shares.push_back(sb / largest);
  Value scaled =
      make("kiln.mul", {product, makeConstant(b, loc, RankedTensorType::get({n}, element), shares)});
  return scaled && scaled.getType() == resultType ? scaled : Value();
}

struct IntegerMatmulsPass : public impl::IntegerMatmulsPassBase<IntegerMatmulsPass> {
  using IntegerMatmulsPassBase::IntegerMatmulsPassBase;

  void runOnOperation() override {
    // Dequantized matmuls that stay float, and why: the function's
    // kiln.float_quantized_ops, which --explain lists.
    SmallVector<Attribute> keptFloat;
    SmallVector<MatmulOp> matmuls;
    getOperation().walk([&](MatmulOp m) { matmuls.push_back(m); });
    for (MatmulOp m : matmuls) {
      if (m.getBias() || m.getTransposeLhs() || m.getTransposeRhs() ||
          m.getActivation() != Activation::none)
        continue;
      // The operands as codes of one kind, 8-bit integers or e4m3.
      std::optional<Dequantized> a, w;
      bool storedNK = false;
      auto match = [&](QuantizedCodes codes) {
        a = dequantized(m.getLhs(), /*axis=*/-1, codes);
        // A constant weight stored [N, K] and transposed (Gemm's transB):
        // its scale and zero point go along N, its dim 0.
        auto rhsType = cast<RankedTensorType>(m.getRhs().getType());
        w = dequantized(m.getRhs(), /*axis=*/rhsType.getRank() - 1, codes);
        storedNK = false;
        if (auto t = m.getRhs().getDefiningOp<TransposeOp>();
            !w && t && rhsType.getRank() == 2 && t.getPermutation()[0] == 1) {
          w = dequantized(t.getInput(), /*axis=*/0, codes);
          storedNK = w && w->q.getDefiningOp<ConstantOp>();
          if (!storedNK)
            w.reset();
        }
        return a && w;
      };
      bool e4m3 = false;
      if (!match(QuantizedCodes::int8)) {
        if (!match(QuantizedCodes::e4m3))
          continue;
        e4m3 = true;
      }
      Value lhs = m.getLhs(), rhs = m.getRhs();
      std::string why;
      if (e4m3 && !float8) {
        recordKeptFloat(m, "an FP8 call needs every --arch sm_89 or newer (FP8 tensor cores)",
                        keptFloat, "FP8");
        continue;
      }
      Rewriter rewriter(m);
      Value replacement = e4m3 ? rewriter.rewriteFloat8(m, *a, *w, storedNK, why)
                               : rewriter.rewrite(m, *a, *w, storedNK, why);
      if (!replacement) {
        recordKeptFloat(m, why, keptFloat, e4m3 ? "FP8" : "int8");
        continue;
      }
      // A call whose K could overflow the int32 sums fails at its guard.
      if (DimExpr k = rewriter.overflowGuard) {
        OpBuilder top = OpBuilder::atBlockBegin(&getOperation().getBody().front());
        GuardOp::create(top, m.getLoc(), GuardKind::less_equal,
                        DimsAttr::getCanonical(&getContext(), {k, getConstantDim(&getContext(), kMaxK)}),
                        top.getStringAttr(describeOp(m) +
                                          ": an int8 product's int32 sums must not overflow"));
      }
      m.getResult().replaceAllUsesWith(replacement);
      m->erase();
      eraseUnreadProducers(lhs);
      if (rhs != lhs)
        eraseUnreadProducers(rhs);
    }
    if (!keptFloat.empty())
      getOperation()->setAttr(kFloatQuantizedOpsAttr,
                              ArrayAttr::get(&getContext(), keptFloat));
  }
};

} // namespace
} // namespace kiln
