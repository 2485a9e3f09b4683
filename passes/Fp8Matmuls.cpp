//===- Fp8Matmuls.cpp - matmuls and convs with constant weights on FP8 tensor cores ===//
//
// `kiln-compile --precision fp8 --calibrate DIR`. A matmul of an activation by
// a constant weight matrix becomes cuBLASLt's FP8 matmul: both operands in
// e4m3 with one scale each (per tensor), fp32 accumulation, the scales'
// product as the call's alpha, the bias and activation in its epilogue.
// A 2-D convolution by a constant filter becomes the same call over its
// input's patches (passes/ConvPatches.h: the kernel that quantizes the
// activation writes its patch rows, KH * KW * C a row, padded to a multiple
// of 16 with zero taps), its result reshaped and transposed back to NCHW; a
// residual the conv added is added after, with the ReLU.
//
// - The weight's scale is the power of two at or above its largest magnitude
//   over e4m3's largest finite value (448; scaleFor says why a power of two);
//   the weight is divided by it and rounded to nearest (even), stored [N, K]
//   (cuBLASLt's FP8 layout rule: kiln's b transposed).
// - The activation's scale comes the same way from the largest magnitude it
//   reaches over a calibration set (the float64 reference interpreter runs
//   the model on each data set of DIR, as the ONNX tests lay them out:
//   DIR/test_data_set_N/input_K.pb or .npy). At run time the activation is
//   divided by it and cast to e4m3, saturating (a value past the calibrated
//   range clamps to +-448 times the scale): elementwise ops that fuse into
//   one kernel.
//
// What does not map stays as it is (kiln-lower-precision's bf16 then): a
// matmul of two activations (attention's, when not fused), a transposed
// activation, K not a multiple of 16 or N not of 8 (cuBLASLt's FP8
// alignment: 16-byte rows of e4m3 and of the 16-bit result), an activation
// cuBLASLt's FP8 epilogues lack, a conv ConvPatchBuilder refuses, with
// output channels not a multiple of 8 or that the device model predicts no
// faster in FP8 (fp8PredictedFaster), or an activation the calibration
// never reached (no data set runs it).
//===----------------------------------------------------------------------===//

#include "passes/ConstantValues.h"
#include "passes/ConvPatches.h"
#include "passes/Passes.h"

#include "interpreter/Interpreter.h"
#include "ir/Kiln/KilnDialect.h"
#include "ir/Kiln/SymbolicDims.h"
#include "runtime/tools/TensorFiles.h"

#include "kiln/artifact/DeviceModel.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"

#include "llvm/ADT/APFloat.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"

#include <algorithm>
#include <cmath>
#include <map>

namespace kiln {
#define GEN_PASS_DEF_FP8MATMULSPASS
#include "passes/Passes.h.inc"
} // namespace kiln

using namespace mlir;

namespace kiln {
namespace {

/// e4m3fn's largest finite value.
constexpr double kE4m3Max = 448.0;

/// A matmul this pass can rewrite: an f32 activation [.., M, K] (not
/// transposed) by a constant f32 matrix ([K, N], or [N, K] read transposed)
/// with K a multiple of 16 and N of 8, and an epilogue cuBLASLt's FP8 matmul
/// has.
bool isCandidate(MatmulOp m) {
  // At the top level only: kiln-lower-precision narrows the top-level block,
  // and a body's product would keep an f32 result (which takes no bias).
  if (!isa<func::FuncOp>(m->getParentOp()))
    return false;
  auto lhs = dyn_cast<RankedTensorType>(m.getLhs().getType());
  auto rhs = dyn_cast<RankedTensorType>(m.getRhs().getType());
  if (!lhs || !rhs || !lhs.getElementType().isF32() || !rhs.getElementType().isF32() ||
      lhs.getRank() < 2 || rhs.getRank() != 2 || !rhs.hasStaticShape() || m.getTransposeLhs())
    return false;
  if (!m.getRhs().getDefiningOp<ConstantOp>())
    return false;
  Activation a = m.getActivation();
  if (a != Activation::none && a != Activation::relu && a != Activation::gelu_tanh)
    return false;
  int64_t k = rhs.getDimSize(m.getTransposeRhs() ? 1 : 0);
  int64_t n = rhs.getDimSize(m.getTransposeRhs() ? 0 : 1);
  return k % 16 == 0 && n % 8 == 0 && k > 0 && n > 0;
}

/// cuBLASLt's FP8 matmul wants rows of a multiple of 16 bytes: K of e4m3.
constexpr int64_t kFp8RowMultiple = 16;

/// Whether the device model predicts `c` faster as the FP8 product of its
/// input's patches than as a bf16 convolution, per output position.
/// - The bf16 conv (cuDNN's implicit GEMM) reads its input once (2 bytes an
///   element), a residual in its epilogue and writes its result (2 bytes a
///   channel each), 2 M K flops at the fp16/bf16 rate.
/// - The FP8 form reads the input too and writes K' bytes of patch row (a
///   write of each input element per filter tap it meets), reads them back
///   in the product, writes the result and does its 2 M K' flops at the fp8
///   rate; with a residual, the result is read again beside it and written
///   once more in NCHW (two users read that sum: nothing fuses it away).
/// - With a symbolic batch, at a large batch: the regime FP8 is for, where
///   the patch kernel's launch and the filter's bytes, shared by the batch,
///   drop out. With a static batch both are shared by that batch's
///   positions only (a model exported at batch 1 keeps its convs).
/// So a conv gains where it is compute-bound and its channels are many
/// (ResNet's 512-channel 3x3 convs), and loses where its patches outweigh
/// its arithmetic (few channels, a 7x7 stem, a memory-bound 1x1).
bool fp8PredictedFaster(ConvOp c) {
  using namespace device_model;
  auto x = cast<RankedTensorType>(c.getInput().getType());
  auto y = cast<RankedTensorType>(c.getType());
  ConvPatchBuilder patches(c);
  double m = static_cast<double>(patches.outputChannels()), k = static_cast<double>(patches.taps()),
         paddedK = static_cast<double>(patches.paddedTaps(kFp8RowMultiple));
  double positions = static_cast<double>(y.getDimSize(2) * y.getDimSize(3));
  double inputBytes =
      2.0 * static_cast<double>(x.getDimSize(1) * x.getDimSize(2) * x.getDimSize(3)) / positions;
  double residualBytes = c.getResidual() ? 2 * m : 0;
  double bf16 = std::max(2 * m * k / kHalfFlopsPerUs,
                         (inputBytes + residualBytes + 2 * m) / kBandwidthBytesPerUs);
  double fp8 = (inputBytes + paddedK) / kBandwidthBytesPerUs +
               std::max(2 * m * paddedK / kInt8OpsPerUs, (paddedK + 2 * m) / kBandwidthBytesPerUs) +
               (c.getResidual() ? (2 * m + residualBytes + 2 * m) / kBandwidthBytesPerUs : 0);
  if (!x.isDynamicDim(0)) {
    double batchPositions = static_cast<double>(x.getDimSize(0)) * positions;
    bf16 += 2 * m * k / kBandwidthBytesPerUs / batchPositions;
    fp8 += (kLaunchUs + m * paddedK / kBandwidthBytesPerUs) / batchPositions;
  }
  return fp8 < bf16;
}

/// A conv this pass can rewrite: an f32 activation by a constant f32 filter,
/// a conv ConvPatchBuilder takes, with output channels (the matmul's N) a
/// multiple of 8.
bool isCandidate(ConvOp c) {
  if (!isa<func::FuncOp>(c->getParentOp()) || !c.getFilter().getDefiningOp<ConstantOp>() ||
      !ConvPatchBuilder::refusal(c).empty())
    return false;
  auto x = cast<RankedTensorType>(c.getInput().getType());
  auto w = cast<RankedTensorType>(c.getFilter().getType());
  return x.getElementType().isF32() && w.getElementType().isF32() &&
         cast<RankedTensorType>(c.getType()).getElementType().isF32() && w.getDimSize(0) % 8 == 0 &&
         w.getDimSize(0) > 0;
}

/// The data sets of a calibration folder: its test_data_set_* folders in
/// order, or the folder itself when it holds input files.
FailureOr<std::vector<std::string>> calibrationSets(func::FuncOp func, StringRef dir) {
  if (!llvm::sys::fs::is_directory(dir))
    return func.emitError() << "--calibrate '" << dir << "': not a folder";
  std::vector<std::string> sets;
  bool hasInputs = false;
  std::error_code ec;
  for (llvm::sys::fs::directory_iterator it(dir, ec), end; it != end && !ec; it.increment(ec)) {
    StringRef name = llvm::sys::path::filename(it->path());
    if (name.starts_with("test_data_set_") && llvm::sys::fs::is_directory(it->path()))
      sets.push_back(it->path());
    if (name.starts_with("input_"))
      hasInputs = true;
  }
  if (ec)
    return func.emitError() << "--calibrate '" << dir << "': " << ec.message();
  if (sets.empty() && hasInputs)
    sets.push_back(dir.str());
  if (sets.empty())
    return func.emitError() << "--calibrate '" << dir
                            << "': no data set (test_data_set_N/input_K.pb or .npy)";
  llvm::sort(sets);
  return sets;
}

/// The inputs of one data set, one per argument of `func`: input_K files in
/// the order of K, matched to arguments by their tensors' names where they
/// have names (kiln.name), else by position.
FailureOr<std::vector<ref::Tensor>> readDataSet(func::FuncOp func, const std::string &set) {
  std::map<int64_t, std::string> files;
  std::error_code ec;
  for (llvm::sys::fs::directory_iterator it(set, ec), end; it != end && !ec; it.increment(ec)) {
    StringRef name = llvm::sys::path::filename(it->path());
    int64_t k = 0;
    if (name.consume_front("input_") && (name.consume_back(".pb") || name.consume_back(".npy")) &&
        llvm::to_integer(name, k, 10))
      files[k] = it->path();
  }
  if (ec)
    return func.emitError() << "--calibrate: " << set << ": " << ec.message();
  unsigned arguments = func.getNumArguments();
  if (files.size() != arguments)
    return func.emitError() << "--calibrate: " << set << " has " << files.size()
                            << " inputs; the model takes " << arguments;
  std::vector<ref::Tensor> inputs(arguments);
  std::vector<bool> given(arguments, false);
  // Tensors named as an argument first, then the others into the arguments
  // left, in the order of K.
  std::vector<std::pair<std::string, NamedTensor>> unnamed;
  for (const auto &[k, path] : files) {
    absl::StatusOr<NamedTensor> read = readTensorFile(path);
    if (!read.ok())
      return func.emitError() << "--calibrate: " << read.status().message();
    std::optional<unsigned> index;
    for (unsigned a = 0; a < arguments && !read->name.empty(); ++a)
      if (auto name = func.getArgAttrOfType<StringAttr>(a, kNameAttr); name && name == read->name)
        index = a;
    if (!index) {
      unnamed.emplace_back(path, std::move(*read));
      continue;
    }
    if (given[*index])
      return func.emitError() << "--calibrate: " << path << " gives input " << *index << " twice";
    given[*index] = true;
    inputs[*index] = std::move(read->tensor);
  }
  unsigned next = 0;
  for (auto &[path, tensor] : unnamed) {
    while (given[next])
      ++next; // ends in range: as many files as arguments, each given once
    given[next] = true;
    inputs[next] = std::move(tensor.tensor);
  }
  return inputs;
}

/// `v` rounded to e4m3fn (nearest, ties to even), clamped to +-448 first.
APFloat toE4m3(double v) {
  APFloat f(std::clamp(v, -kE4m3Max, kE4m3Max));
  bool lost = false;
  f.convert(APFloat::Float8E4M3FN(), APFloat::rmNearestTiesToEven, &lost);
  return f;
}

/// The scale that maps `amax` into e4m3's range: the power of two at or above
/// amax / 448 (1 for an all-zero range; exponents kept to +-100, where the
/// inverse is an f32 too). A power of two is exact in every float type, so
/// the quantizing kernel multiplies by exactly 1 / scale in bf16 as well, and
/// alpha is exactly the product the operands were divided by; e4m3's
/// precision is relative, so a range that fills [224, 448] rather than up to
/// 448 loses none of it.
double scaleFor(double amax) {
  if (!(amax > 0))
    return 1.0;
  int exponent = static_cast<int>(std::ceil(std::log2(amax / kE4m3Max)));
  return std::ldexp(1.0, std::clamp(exponent, -100, 100));
}

struct Fp8MatmulsPass : public impl::Fp8MatmulsPassBase<Fp8MatmulsPass> {
  using Fp8MatmulsPassBase::Fp8MatmulsPassBase;

  void runOnOperation() override {
    func::FuncOp func = getOperation();
    if (func.getBody().empty())
      return;
    SmallVector<Operation *> candidates;
    func.walk([&](Operation *op) {
      if (auto m = dyn_cast<MatmulOp>(op); m && isCandidate(m))
        candidates.push_back(op);
      if (auto c = dyn_cast<ConvOp>(op); c && isCandidate(c) && (everyConv || fp8PredictedFaster(c)))
        candidates.push_back(op);
    });
    if (candidates.empty())
      return;
    if (calibration.empty()) {
      func.emitError() << "--precision fp8 needs --calibrate DIR: the activations' scales come "
                          "from the range they reach on its data sets";
      return signalPassFailure();
    }
    FailureOr<DenseMap<Operation *, double>> ranges = calibrate(func, candidates);
    if (failed(ranges))
      return signalPassFailure();
    for (Operation *op : candidates) {
      auto it = ranges->find(op);
      if (it == ranges->end())
        continue; // no data set reaches it
      if (!std::isfinite(it->second)) {
        op->emitError() << "--calibrate: the " << (isa<ConvOp>(op) ? "conv" : "matmul")
                        << "'s activation is infinite or NaN on the calibration sets: no FP8 "
                           "scale holds it";
        return signalPassFailure();
      }
      if (auto m = dyn_cast<MatmulOp>(op))
        rewrite(m, it->second);
      else
        rewrite(cast<ConvOp>(op), it->second);
    }
  }

  /// The largest magnitude each candidate's activation reaches over the
  /// calibration sets (candidates no set runs are absent).
  FailureOr<DenseMap<Operation *, double>> calibrate(func::FuncOp func,
                                                     ArrayRef<Operation *> candidates) {
    FailureOr<std::vector<std::string>> sets = calibrationSets(func, calibration);
    if (failed(sets))
      return failure();
    llvm::DenseSet<Operation *> wanted(candidates.begin(), candidates.end());
    DenseMap<Operation *, double> ranges;
    InterpretOptions options;
    options.observe = [&](Operation *op, ArrayRef<const ref::Tensor *> operands) {
      if (!wanted.contains(op) || operands.empty() || !operands[0])
        return;
      double &amax = ranges.try_emplace(op, 0.0).first->second;
      const ref::Tensor &x = *operands[0];
      // NaN counts as infinite: either is an error, not a silent scale.
      for (int64_t i = 0, n = x.numel(); i < n; ++i) {
        double v = std::fabs(x.getF(i));
        amax = std::isnan(v) ? INFINITY : std::max(amax, v);
      }
    };
    for (const std::string &set : *sets) {
      FailureOr<std::vector<ref::Tensor>> inputs = readDataSet(func, set);
      if (failed(inputs))
        return failure();
      if (failed(interpret(func, *inputs, options))) {
        func.emitError() << "--calibrate: the model does not run on " << set;
        return failure();
      }
    }
    return ranges;
  }

  void rewrite(MatmulOp m, double activationRange) {
    std::optional<std::vector<double>> w = readFloats(m.getRhs());
    if (!w)
      return;
    auto rhsType = cast<RankedTensorType>(m.getRhs().getType());
    bool transposed = m.getTransposeRhs();
    int64_t k = rhsType.getDimSize(transposed ? 1 : 0), n = rhsType.getDimSize(transposed ? 0 : 1);
    // [N, K]: row j holds column j of the [K, N] weight.
    std::vector<double> rows;
    rows.reserve(w->size());
    for (int64_t j = 0; j < n; ++j)
      for (int64_t i = 0; i < k; ++i)
        rows.push_back((*w)[transposed ? j * k + i : i * n + j]);
    OpBuilder b(m);
    Location loc = m.getLoc();
    auto [weight, sw] = quantizedWeight(b, loc, rows, n, k);
    double sx = scaleFor(activationRange);
    auto product = MatmulOp::create(b, loc, m.getType(), quantized(b, loc, m.getLhs(), sx), weight,
                                    m.getBias(), m.getActivation(), /*transpose_lhs=*/false,
                                    /*transpose_rhs=*/true, APFloat(sx * sw), TypeAttr());
    m.getResult().replaceAllUsesWith(product.getResult());
    Value oldWeight = m.getRhs();
    m.erase();
    eraseDeadWeight(oldWeight);
  }

  /// The conv as the FP8 matmul of its input's patches by its filter's rows,
  /// the bias in the call's epilogue; the ReLU too unless a residual comes
  /// first (added after, in the result's layout, with the ReLU: elementwise
  /// ops the next kernel takes).
  void rewrite(ConvOp conv, double activationRange) {
    std::optional<std::vector<double>> filter = readFloats(conv.getFilter());
    if (!filter)
      return;
    // Every op built here lies between `before` and the conv: what a
    // refused step leaves is erased from there, last first.
    Operation *before = conv->getPrevNode();
    auto giveUp = [&] {
      while (conv->getPrevNode() != before)
        conv->getPrevNode()->erase();
    };
    ConvPatchBuilder patches(conv);
    int64_t k = patches.paddedTaps(kFp8RowMultiple), n = patches.outputChannels();
    Value rows = patches.patches(conv.getInput(), kFp8RowMultiple);
    if (!rows)
      return giveUp();
    OpBuilder b(conv);
    Location loc = conv.getLoc();
    auto [weight, sw] = quantizedWeight(b, loc, patches.filterRows(*filter, k), n, k);
    double sx = scaleFor(activationRange);
    Value residual = conv.getResidual();
    Activation activation = residual ? Activation::none : conv.getActivation();
    SmallVector<Value> operands = {quantized(b, loc, rows, sx), weight};
    if (Value bias = conv.getBias())
      operands.push_back(bias);
    Value product = patches.make(
        MatmulOp::getOperationName(), operands,
        {b.getNamedAttr("transpose_rhs", b.getBoolAttr(true)),
         b.getNamedAttr("alpha", b.getF64FloatAttr(sx * sw)),
         b.getNamedAttr("activation", ActivationAttr::get(b.getContext(), activation))});
    Value y = patches.asConvResult(product);
    if (y && residual)
      y = patches.make(AddOp::getOperationName(), {y, residual});
    if (y && residual && conv.getActivation() == Activation::relu) {
      auto scalarType = RankedTensorType::get({}, b.getF32Type());
      Value zero = ConstantOp::create(
          b, loc, cast<ElementsAttr>(DenseElementsAttr::get(scalarType, ArrayRef<float>{0.0f})));
      y = patches.make(MaxOp::getOperationName(), {y, zero});
    }
    if (!y || y.getType() != conv.getType())
      return giveUp(); // a shape function refused a step: not expected of a conv ConvPatchBuilder takes
    conv.getResult().replaceAllUsesWith(y);
    Value oldFilter = conv.getFilter();
    conv.erase();
    eraseDeadWeight(oldFilter);
  }

  /// `rows` ([N, K] row-major, cuBLASLt's FP8 layout: kiln's b transposed)
  /// as an e4m3 constant, divided by its scale (scaleFor), and the scale.
  static std::pair<Value, double> quantizedWeight(OpBuilder &b, Location loc,
                                                  ArrayRef<double> rows, int64_t n, int64_t k) {
    double range = 0;
    for (double v : rows)
      range = std::fmax(range, std::fabs(v));
    double scale = scaleFor(range);
    std::vector<APFloat> codes;
    codes.reserve(rows.size());
    for (double v : rows)
      codes.push_back(toE4m3(v / scale));
    auto type = RankedTensorType::get({n, k}, b.getType<Float8E4M3FNType>());
    return {ConstantOp::create(b, loc, cast<ElementsAttr>(DenseElementsAttr::get(type, codes))),
            scale};
  }

  /// x / scale as e4m3, saturating: the cast is marked for
  /// kiln-lower-precision, which otherwise keeps a float8 cast's inputs in
  /// fp32.
  static Value quantized(OpBuilder &b, Location loc, Value x, double scale) {
    Type e4m3 = b.getType<Float8E4M3FNType>();
    auto scalarType = RankedTensorType::get({}, b.getF32Type());
    Value inverse = ConstantOp::create(
        b, loc,
        cast<ElementsAttr>(DenseElementsAttr::get(scalarType, ArrayRef<float>{float(1.0 / scale)})));
    Value scaled = MulOp::create(b, loc, x.getType(), x, inverse);
    auto quantize = CastOp::create(b, loc, llvm::cast<RankedTensorType>(x.getType()).clone(e4m3),
                                   scaled, e4m3);
    quantize->setAttr(kFp8OperandAttr, b.getUnitAttr());
    return quantize.getResult();
  }
};

} // namespace
} // namespace kiln
