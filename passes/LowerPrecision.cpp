//===- LowerPrecision.cpp - fp16/bf16/tf32 precision modes ------------------===//
//
// `kiln-compile --precision fp16|bf16` stores weights and activations in the
// narrow type while every generated kernel still computes in fp32 registers
// (codegen loads f16/bf16 into `float`), matmuls and convs accumulate in fp32
// (cuBLASLt/cuDNN compute type), and the ops whose results need the range or
// the bits of fp32 (reductions, cumulative sums, ranges, ...) keep fp32
// results. The model's inputs and outputs keep their types: casts at the
// boundary fuse into the first and last kernels. `tf32` changes no type: it
// marks the function so matmul and conv steps may round their operands to TF32
// on tensor cores.
//===----------------------------------------------------------------------===//

#include "passes/ConstantValues.h"
#include "passes/Passes.h"

#include "ir/Kiln/KilnDialect.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"

#include "llvm/ADT/DenseSet.h"

#include <cmath>

namespace kiln {
#define GEN_PASS_DEF_LOWERPRECISIONPASS
#include "passes/Passes.h.inc"
} // namespace kiln

using namespace mlir;

namespace kiln {
namespace {

bool isF32Tensor(Type t) {
  auto ranked = dyn_cast<RankedTensorType>(t);
  return ranked && ranked.getElementType().isF32();
}

RankedTensorType withElement(Type t, Type element) {
  return cast<RankedTensorType>(t).clone(element);
}

/// Whether `op` may run in the narrow type (KernelFacts::runsNarrow): what
/// has no facts keeps fp32 (region ops and the rest), its narrow operands cast
/// back first.
bool runsNarrow(Operation *op) {
  auto facts = dyn_cast<KernelFacts>(op);
  return facts && facts.runsNarrow();
}

class PrecisionLowering {
public:
  PrecisionLowering(func::FuncOp func, Type narrow) : func(func), narrow(narrow) {}

  void run() {
    Block &body = func.getBody().front();
    OpBuilder b(func.getContext());
    b.setInsertionPointToStart(&body);
    // Inputs: one cast each, which fuses into the kernels reading them.
    for (BlockArgument arg : body.getArguments()) {
      if (!isF32Tensor(arg.getType()) || arg.use_empty())
        continue;
      Value cast = castTo(b, arg.getLoc(), arg, narrow);
      arg.replaceAllUsesExcept(cast, cast.getDefiningOp());
    }
    SmallVector<Operation *> ops;
    for (Operation &op : body)
      ops.push_back(&op);
    findValuesCastToIntegers(ops);
    keepIntegerSumsWide(ops);
    for (Operation *op : ops) {
      if (auto constant = dyn_cast<ConstantOp>(op))
        narrowConstant(constant);
      else if (auto cast = dyn_cast<CastOp>(op))
        narrowCast(cast);
      else if (auto product = dyn_cast<MatmulOp>(op); product && product.isFloat8Product())
        narrowFloat8Product(product);
      else if (mayRunNarrow(op) && takesFloatData(op))
        narrowOp(op);
      else
        widenOperands(op);
    }
    // Casts whose every reader took the fp32 value instead.
    for (auto [cast, original] : narrowedFrom)
      if (cast.use_empty())
        cast.getDefiningOp()->erase();
  }

private:
  bool mayRunNarrow(Operation *op) {
    return runsNarrow(op) && op->getNumRegions() == 0 && !keepWide.contains(op);
  }

  /// A float converted to an integer (or a float8) is exact only if every op
  /// before it computed in fp32: one narrow rounding moves a quantized value
  /// by a step (QuantizeLinear's `round(x / scale) + zero_point`), and
  /// rounding twice is not rounding once. So the ops whose results reach such
  /// a cast through narrow-capable ops keep fp32, back to the graph's inputs
  /// and weights.
  void findValuesCastToIntegers(ArrayRef<Operation *> ops) {
    SmallVector<Operation *> work;
    auto reach = [&](Value v) {
      Operation *def = v.getDefiningOp();
      auto product = dyn_cast_or_null<MatmulOp>(def);
      // A float8 product (an FP8 Q/DQ model's) keeps an f32 result; its
      // operands are e4m3 and stop the walk.
      bool float8 = product && product.isFloat8Product();
      if (def && isF32Tensor(v.getType()) && (runsNarrow(def) || isa<CastOp>(def) || float8) &&
          keepWide.insert(def).second)
        work.push_back(def);
    };
    for (Operation *op : ops) {
      auto cast = dyn_cast<CastOp>(op);
      // kiln-fp8-matmuls' quantization of an activation: a bf16 rounding
      // first moves it by far less than an e4m3 step, and nothing expects
      // it exact.
      if (!cast || !isF32Tensor(cast.getInput().getType()) || cast->hasAttr(kFp8OperandAttr))
        continue;
      // Any conversion that rounds again (integers, float8, the other 16-bit
      // float); not one to bool, f64 or the narrow type itself.
      Type to = cast.getTo();
      if (!to.isInteger(1) && !to.isF32() && !to.isF64() && to != narrow)
        reach(cast.getInput());
    }
    while (!work.empty()) {
      Operation *op = work.pop_back_val();
      for (Value operand : op->getOperands())
        reach(operand);
    }
  }

  /// An int8 product's sums (kiln-integer-matmuls' cast of an i32 sum to
  /// float, kiln-integer-convs' int8 conv) reach far beyond f16's range
  /// until their scale multiplies them: the ops from the sum up to that
  /// multiply (moves, adds of corrections) and the multiply keep fp32; the
  /// multiply's readers, which see the model's own magnitudes, may go narrow.
  void keepIntegerSumsWide(ArrayRef<Operation *> ops) {
    SmallVector<Value> work;
    for (Operation *op : ops) {
      auto cast = dyn_cast<CastOp>(op);
      auto conv = dyn_cast<ConvOp>(op);
      bool wideInteger = cast && isF32Tensor(cast.getType()) &&
                         getElementTypeOrSelf(cast.getInput().getType()).isInteger(32);
      if (wideInteger || (conv && conv.isInt8Conv())) {
        keepWide.insert(op);
        work.push_back(op->getResult(0));
      }
    }
    while (!work.empty()) {
      Value v = work.pop_back_val();
      for (Operation *user : v.getUsers()) {
        if (!isa<TransposeOp, ReshapeOp, AddOp, SubOp, MulOp>(user) || !keepWide.insert(user).second)
          continue;
        if (!isa<MulOp>(user))
          work.push_back(user->getResult(0));
      }
    }
  }

  Value castTo(OpBuilder &b, Location loc, Value v, Type element) {
    Value r = CastOp::create(b, loc, withElement(v.getType(), element), v, element).getResult();
    if (element == narrow) {
      narrowed.insert(r);
      narrowedFrom[r] = v;
    }
    return r;
  }

  /// True when some operand is fp32 or narrowed data.
  bool takesFloatData(Operation *op) {
    return llvm::any_of(op->getOperands(),
                        [&](Value v) { return isF32Tensor(v.getType()) || narrowed.contains(v); });
  }

  /// A constant goes narrow in place (the artifact stores half the bytes)
  /// when every user runs narrow; otherwise users narrow it with a cast.
  void narrowConstant(ConstantOp constant) {
    Value value = constant.getResult();
    if (!isF32Tensor(value.getType()) || value.use_empty())
      return;
    bool allNarrow = llvm::all_of(value.getUsers(), [&](Operation *user) {
      auto product = dyn_cast<MatmulOp>(user);
      return mayRunNarrow(user) || (isa<CastOp>(user) && !keepWide.contains(user)) ||
             (product && product.isFloat8Product()); // its bias, which goes narrow
    });
    if (!allNarrow)
      return;
    std::optional<std::vector<double>> values = readFloats(value);
    if (!values)
      return;
    OpBuilder b(constant);
    Value replacement = makeConstant(b, constant.getLoc(), withElement(value.getType(), narrow),
                                     *values);
    value.replaceAllUsesWith(replacement);
    constant.erase();
    narrowed.insert(replacement);
  }

  /// A cast to fp32 casts to the narrow type instead (one conversion, not two).
  void narrowCast(CastOp cast) {
    if (keepWide.contains(cast)) {
      widenOperands(cast);
      return;
    }
    if (!cast.getTo().isF32())
      return;
    cast.setTo(narrow);
    cast.getResult().setType(withElement(cast.getType(), narrow));
    narrowed.insert(cast.getResult());
  }

  void narrowOp(Operation *op) {
    OpBuilder b(op);
    for (OpOperand &operand : op->getOpOperands())
      if (isF32Tensor(operand.get().getType()))
        operand.set(castTo(b, op->getLoc(), operand.get(), narrow));
    for (Value result : op->getResults()) {
      if (!isF32Tensor(result.getType()))
        continue;
      result.setType(withElement(result.getType(), narrow));
      narrowed.insert(result);
    }
  }

  /// A float8 product (kiln-fp8-matmuls, an FP8 Q/DQ model's) writes the
  /// narrow type itself (cuBLASLt's FP8 matmul with a 16-bit D), its bias in
  /// that type too; except one whose result reaches a quantizing cast
  /// (findValuesCastToIntegers) and has no epilogue but ReLU, which keeps
  /// f32 (cuBLASLt takes no bias or GELU with an f32 D, and
  /// kiln-absorb-epilogues gave it those expecting the narrow result).
  void narrowFloat8Product(MatmulOp product) {
    if (!isF32Tensor(product.getType()))
      return;
    bool epilogueTakesF32 = !product.getBias() && (product.getActivation() == Activation::none ||
                                                   product.getActivation() == Activation::relu);
    if (keepWide.contains(product) && epilogueTakesF32)
      return;
    OpBuilder b(product);
    if (Value bias = product.getBias(); bias && isF32Tensor(bias.getType()))
      product.getBiasMutable().assign(castTo(b, product.getLoc(), bias, narrow));
    product.setFloat8ResultAttr(TypeAttr::get(narrow));
    product.getResult().setType(withElement(product.getType(), narrow));
    narrowed.insert(product.getResult());
  }

  /// `op` keeps fp32: narrowed values it reads, as operands or inside its
  /// regions, are cast back to fp32 before it.
  void widenOperands(Operation *op) {
    OpBuilder b(op);
    llvm::DenseMap<Value, Value> widened;
    auto wide = [&](Value v) {
      // A value this pass narrowed with a cast is still there in fp32: read it
      // instead of rounding twice (a graph input that NMS reads as it is).
      if (auto original = narrowedFrom.find(v); original != narrowedFrom.end())
        return original->second;
      auto [it, inserted] = widened.try_emplace(v, Value());
      if (inserted)
        it->second = castTo(b, op->getLoc(), v, b.getF32Type());
      return it->second;
    };
    for (OpOperand &operand : op->getOpOperands())
      if (narrowed.contains(operand.get()))
        operand.set(wide(operand.get()));
    op->walk([&](Operation *inner) {
      if (inner == op)
        return;
      for (OpOperand &operand : inner->getOpOperands())
        if (narrowed.contains(operand.get()))
          operand.set(wide(operand.get()));
    });
  }

  func::FuncOp func;
  Type narrow;
  llvm::DenseSet<Value> narrowed; ///< values that were fp32 and are narrow now
  llvm::DenseSet<Operation *> keepWide; ///< ops feeding float-to-integer casts
  /// Casts this pass inserted to narrow an fp32 value, to that value.
  llvm::DenseMap<Value, Value> narrowedFrom;
};

/// An f32 matmul whose activation only cuDNN's fused matmuls apply (the erf
/// GELU, SiLU: kiln-absorb-epilogues took them for the product to go narrow)
/// that the mode keeps in f32 (its result reaches an integer cast): cuDNN
/// would take its operands as TF32, which the mode does not allow, so the
/// activation goes back to elementwise ops after the product, a kernel.
void unfuseWideActivations(func::FuncOp func) {
  SmallVector<MatmulOp> wide;
  func.walk([&](MatmulOp m) {
    Activation a = m.getActivation();
    if (getElementTypeOrSelf(m.getType()).isF32() && (a == Activation::gelu_erf || a == Activation::silu))
      wide.push_back(m);
  });
  for (MatmulOp m : wide) {
    Activation activation = m.getActivation();
    m.setActivation(Activation::none);
    OpBuilder b(m->getContext());
    b.setInsertionPointAfter(m);
    Location loc = m.getLoc();
    Value x = m.getResult();
    auto scalar = [&](float v) -> Value {
      auto type = RankedTensorType::get({}, b.getF32Type());
      return ConstantOp::create(b, loc, cast<ElementsAttr>(DenseElementsAttr::get(type, ArrayRef<float>{v})));
    };
    Value y;
    if (activation == Activation::silu) {
      y = MulOp::create(b, loc, x, SigmoidOp::create(b, loc, x));
    } else { // 0.5 x (1 + erf(x / sqrt(2)))
      Value half = MulOp::create(b, loc, x, scalar(0.5f));
      Value erf = ErfOp::create(b, loc, MulOp::create(b, loc, x, scalar(static_cast<float>(M_SQRT1_2))));
      y = MulOp::create(b, loc, half, AddOp::create(b, loc, scalar(1.0f), erf));
    }
    x.replaceUsesWithIf(y, [&](OpOperand &use) {
      Operation *user = use.getOwner();
      return user->getBlock() != m->getBlock() || y.getDefiningOp()->isBeforeInBlock(user);
    });
  }
}

struct LowerPrecisionPass : public impl::LowerPrecisionPassBase<LowerPrecisionPass> {
  using LowerPrecisionPassBase::LowerPrecisionPassBase;

  void runOnOperation() override {
    func::FuncOp func = getOperation();
    Builder b(&getContext());
    std::optional<Precision> mode = symbolizePrecision(precision);
    if (!mode) {
      func.emitError() << "unknown precision '" << precision
                       << "' (expected fp32, tf32, fp16, bf16 or fp8)";
      return signalPassFailure();
    }
    // fp8 stores bf16 around kiln-fp8-matmuls' float8 products.
    Type narrow = *mode == Precision::fp16                              ? Type(b.getF16Type())
                  : *mode == Precision::bf16 || *mode == Precision::fp8 ? Type(b.getBF16Type())
                                                                        : Type();
    if (*mode != Precision::fp32)
      func->setAttr(kPrecisionAttr, PrecisionAttr::get(&getContext(), *mode));
    if (narrow && !func.getBody().empty()) {
      PrecisionLowering(func, narrow).run();
      unfuseWideActivations(func);
    }
  }
};

} // namespace

} // namespace kiln
