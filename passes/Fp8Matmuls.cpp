//===- Fp8Matmuls.cpp - matmuls with constant weights on FP8 tensor cores -===//
//
// `kiln-compile --precision fp8 --calibrate DIR`. A matmul of an activation by
// a constant weight matrix becomes cuBLASLt's FP8 matmul: both operands in
// e4m3 with one scale each (per tensor), fp32 accumulation, the scales'
// product as the call's alpha, the bias and activation in its epilogue.
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
// cuBLASLt's FP8 epilogues lack, or an activation the calibration never
// reached (no data set runs it).
//===----------------------------------------------------------------------===//

#include "passes/ConstantValues.h"
#include "passes/Passes.h"

#include "interpreter/Interpreter.h"
#include "ir/Kiln/KilnDialect.h"
#include "ir/Kiln/SymbolicDims.h"
#include "runtime/tools/TensorFiles.h"

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
    SmallVector<MatmulOp> candidates;
    func.walk([&](MatmulOp m) {
      if (isCandidate(m))
        candidates.push_back(m);
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
    for (MatmulOp m : candidates) {
      auto it = ranges->find(m);
      if (it == ranges->end())
        continue; // no data set reaches it
      if (!std::isfinite(it->second)) {
        m.emitError() << "--calibrate: the matmul's activation is infinite or NaN on the "
                         "calibration sets: no FP8 scale holds it";
        return signalPassFailure();
      }
      rewrite(m, it->second);
    }
  }

  /// The largest magnitude each candidate's activation reaches over the
  /// calibration sets (candidates no set runs are absent).
  FailureOr<DenseMap<Operation *, double>> calibrate(func::FuncOp func,
                                                     ArrayRef<MatmulOp> candidates) {
    FailureOr<std::vector<std::string>> sets = calibrationSets(func, calibration);
    if (failed(sets))
      return failure();
    llvm::DenseSet<Operation *> wanted;
    for (MatmulOp m : candidates)
      wanted.insert(m);
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
    double weightRange = 0;
    for (double v : *w)
      weightRange = std::fmax(weightRange, std::fabs(v));
    double sw = scaleFor(weightRange), sx = scaleFor(activationRange);
    // [N, K]: row j holds column j of the [K, N] weight.
    std::vector<APFloat> quantized;
    quantized.reserve(w->size());
    for (int64_t j = 0; j < n; ++j)
      for (int64_t i = 0; i < k; ++i)
        quantized.push_back(toE4m3((*w)[transposed ? j * k + i : i * n + j] / sw));
    OpBuilder b(m);
    Location loc = m.getLoc();
    Type e4m3 = b.getType<Float8E4M3FNType>();
    auto weightType = RankedTensorType::get({n, k}, e4m3);
    Value weight = ConstantOp::create(
        b, loc, cast<ElementsAttr>(DenseElementsAttr::get(weightType, quantized)));
    // x / sx as e4m3, saturating: the cast is marked for kiln-lower-precision,
    // which otherwise keeps a float8 cast's inputs in fp32.
    Value x = m.getLhs();
    auto scalarType = RankedTensorType::get({}, b.getF32Type());
    Value inverse = ConstantOp::create(
        b, loc,
        cast<ElementsAttr>(DenseElementsAttr::get(scalarType, ArrayRef<float>{float(1.0 / sx)})));
    Value scaled = MulOp::create(b, loc, x.getType(), x, inverse);
    auto quantize = CastOp::create(b, loc, llvm::cast<RankedTensorType>(x.getType()).clone(e4m3),
                                   scaled, e4m3);
    quantize->setAttr(kFp8OperandAttr, b.getUnitAttr());
    auto product = MatmulOp::create(b, loc, m.getType(), quantize.getResult(), weight, m.getBias(),
                                    m.getActivation(), /*transpose_lhs=*/false,
                                    /*transpose_rhs=*/true, APFloat(sx * sw), TypeAttr());
    m.getResult().replaceAllUsesWith(product.getResult());
    Value oldWeight = m.getRhs();
    m.erase();
    eraseDeadWeight(oldWeight);
  }
};

} // namespace
} // namespace kiln
