//===- CudaEmitter.cpp - CUDA C for kiln.kernel regions -------------------===//

#include "codegen/CudaEmitter.h"

#include "ir/Kiln/KilnDialect.h"
#include "ir/Kiln/OpTables.h"
#include "passes/KernelTypes.h"
#include "kiln/artifact/Format.h"

#include "mlir/IR/Matchers.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "llvm/ADT/TypeSwitch.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/Regex.h"
#include "llvm/Support/raw_ostream.h"
#include "llvm/Support/xxhash.h"

#include <cmath>
#include <map>
#include <array>
#include <set>

using namespace mlir;

namespace kiln {

namespace {

/// An op table row's CUDA C (kiln::ops::cudaTemplate) with `$x` (`$a`, `$b`)
/// replaced by the operands' expressions and `$T` by the compute type. The text
/// substituted is not scanned again.
std::string expandCudaTemplate(StringRef tmpl, ArrayRef<std::pair<char, std::string>> operands,
                               StringRef computeType) {
  std::string out;
  for (size_t i = 0; i < tmpl.size(); ++i) {
    if (tmpl[i] != '$' || i + 1 == tmpl.size()) {
      out += tmpl[i];
      continue;
    }
    char name = tmpl[++i];
    if (name == 'T') {
      out += computeType;
      continue;
    }
    auto operand = llvm::find_if(operands, [&](const auto &o) { return o.first == name; });
    if (operand != operands.end())
      out += operand->second;
    else
      out += {'$', name}; // not a placeholder of this arity: OpTableTest reports it
  }
  return out;
}

/// The device library's name of a float8 or float4 type ("f8e4m3fn",
/// "f4e2m1fn"): stored as a byte, computed in float. "" for other types.
std::string float8Name(Type t) {
  if (isa<Float8E4M3FNType>(t))
    return "f8e4m3fn";
  if (isa<Float8E4M3FNUZType>(t))
    return "f8e4m3fnuz";
  if (isa<Float8E5M2Type>(t))
    return "f8e5m2";
  if (isa<Float8E5M2FNUZType>(t))
    return "f8e5m2fnuz";
  if (isa<Float4E2M1FNType>(t))
    return "f4e2m1fn";
  return "";
}

/// The device library's name of a 2- or 4-bit integer type ("i4", "u2"):
/// stored one element per byte (the low bits, as the runtime holds them),
/// computed in int8_t/uint8_t. "" for other types.
std::string subByteIntegerName(Type t) {
  auto i = dyn_cast<IntegerType>(t);
  if (!i || (i.getWidth() != 2 && i.getWidth() != 4))
    return "";
  return (i.isUnsigned() ? "u" : "i") + std::to_string(i.getWidth());
}

/// The C type a value of `t` is computed in.
std::string computeType(Type t) {
  if (t.isF16() || t.isBF16() || t.isF32() || !float8Name(t).empty())
    return "float";
  if (t.isF64())
    return "double";
  auto i = cast<IntegerType>(t);
  if (i.getWidth() == 1)
    return "bool";
  if (!subByteIntegerName(t).empty())
    return i.isUnsigned() ? "uint8_t" : "int8_t";
  return (i.isUnsigned() ? "uint" : "int") + std::to_string(i.getWidth()) + "_t";
}

/// The C type a buffer of `t` holds.
std::string storageType(Type t) {
  if (t.isF16())
    return "kiln_f16";
  if (t.isBF16())
    return "kiln_bf16";
  if (std::string f8 = float8Name(t); !f8.empty())
    return "kiln_" + f8;
  if (std::string small = subByteIntegerName(t); !small.empty())
    return "kiln_" + small;
  return computeType(t);
}

bool isFloatType(Type t) { return isa<FloatType>(t); }

/// Bytes of one element of `t` as a buffer stores it (bool: 1).
unsigned storageBytes(Type t) { return std::max(1u, (t.getIntOrFloatBitWidth() + 7) / 8); }

/// An op's axis attribute counted from the front (ONNX lets it count back).
int64_t normalizedAxis(int64_t axis, int64_t rank) { return axis < 0 ? axis + rank : axis; }

Type elementOf(Value v) { return cast<RankedTensorType>(v.getType()).getElementType(); }

std::string int64Literal(int64_t v) {
  if (v == INT64_MIN)
    return "(-9223372036854775807LL - 1)";
  return "(" + std::to_string(v) + "LL)";
}

/// A constant scalar of `t` as a C expression of its compute type.
std::string scalarLiteral(Type t, Attribute value) {
  std::string type = computeType(t);
  if (auto f = dyn_cast<FloatAttr>(value)) {
    double d = f.getValueAsDouble();
    if (std::isnan(d))
      return "((" + type + ")kiln_f32_bits(0x7fc00000u))";
    if (std::isinf(d))
      return "((" + type + ")kiln_f32_bits(" + (d > 0 ? "0x7f800000u" : "0xff800000u") + "))";
    std::string s;
    llvm::raw_string_ostream os(s);
    os << "((" << type << ")" << llvm::format("%.17g", d) << ")";
    return s;
  }
  auto i = cast<IntegerAttr>(value);
  if (i.getType().isInteger(1))
    return i.getValue().isZero() ? "false" : "true";
  if (cast<IntegerType>(i.getType()).isUnsigned())
    return "((" + type + ")" + std::to_string(i.getValue().getZExtValue()) + "ULL)";
  return "((" + type + ")" + int64Literal(i.getValue().getSExtValue()) + ")";
}

class KernelEmitter {
public:
  explicit KernelEmitter(KernelOp kernel) : kernel(kernel) {
    kiln = kernel->getContext()->getLoadedDialect<KilnDialect>();
  }

  FailureOr<GeneratedKernel> run();

private:
  //===--- output -----------------------------------------------------------===//
  void line(const Twine &text) {
    body.append(indent * 2, ' ');
    body += text.str();
    body += "\n";
  }
  std::string temp(StringRef prefix = "t") { return (prefix + Twine(nextTemp++)).str(); }
  /// Lines the kernel runs first, before any loop: the fast divisors.
  std::string prologue;
  std::map<std::string, std::string> divisors;
  /// A kiln_divisor (kiln_device.h) for the dim `size`, built once in the
  /// prologue, when `size` depends on symbols only and is not a literal (the
  /// compiler turns a divide by a constant into a multiply itself); nullopt
  /// otherwise. Divides by it must have non-negative dividends (indices).
  std::optional<std::string> divisorFor(const std::string &size) {
    static const llvm::Regex symbolic("^([][()*+/ ,0-9-]|LL|KILN_SYM_[A-Za-z0-9_]+|kiln_dim[0-9]+|"
                                      "int64_t|kiln_floordiv|kiln_ceildiv|kiln_floormod)+$");
    if ((size.find("KILN_SYM_") == std::string::npos && size.find("kiln_dim") == std::string::npos) ||
        !symbolic.match(size))
      return std::nullopt;
    auto [it, inserted] = divisors.try_emplace(size, "");
    if (inserted) {
      it->second = "fd" + std::to_string(divisors.size() - 1);
      prologue += "  const kiln_divisor " + it->second + "(" + size + ");\n";
    }
    return it->second;
  }
  /// `n / size` for a non-negative `n`: through a kiln_divisor when `size`
  /// is known only at run time.
  std::string quotient(const std::string &n, const std::string &size) {
    if (std::optional<std::string> fd = divisorFor(size))
      return *fd + ".div(" + n + ")";
    return "(" + n + " / " + size + ")";
  }
  /// Sizes that divide symbols (a reshape's inferred dim: total / known), as
  /// constants of the prologue: computed once, not per element.
  std::map<std::string, std::string> hoistedDims;
  LogicalResult unsupported(Operation *op, const Twine &why) {
    // Ops the folders made (constants, symbolic constants) may have no location
    // of their own: the kernel's (its root op's node) says where then.
    Location loc = op->getLoc();
    if (isa<UnknownLoc>(loc))
      loc = kernel.getLoc();
    return emitError(loc) << "codegen: '" << op->getName() << "' " << why;
  }

  //===--- sizes ------------------------------------------------------------===//
  /// A dim as C: a literal, KILN_SYM_<name>, or an expression of them (one
  /// that divides symbols is computed once in the prologue, as kiln_dim<N>).
  std::string dim(DimExpr d);
  std::string dimText(DimExpr d);
  std::vector<std::string> dims(Value v) {
    std::vector<std::string> r;
    for (DimExpr d : getSymShape(v.getType()))
      r.push_back(dim(d));
    return r;
  }
  std::string product(ArrayRef<std::string> factors) {
    if (factors.empty())
      return "((int64_t)1)";
    std::string s = "(" + factors[0];
    for (size_t i = 1; i < factors.size(); ++i)
      s += " * " + factors[i];
    return s + ")";
  }
  /// Declares index variables for the row-major position `linear` in `shape`.
  std::vector<std::string> unravel(const std::string &linear, ArrayRef<std::string> shape);
  /// The row-major position of `index` in `shape`.
  std::string linearize(ArrayRef<std::string> index, ArrayRef<std::string> shape);
  /// Linear positions unravel() has declared, by indices and dims
  /// (positionKey): index variables are unique names, so a key only matches
  /// where its variables are in scope.
  std::map<std::string, std::string> unraveled;
  static std::string positionKey(ArrayRef<std::string> index, ArrayRef<std::string> shape) {
    std::string key;
    for (size_t d = 0; d < index.size(); ++d)
      key += index[d] + "@" + shape[d] + ";";
    return key;
  }

  //===--- elements ---------------------------------------------------------===//
  /// The name (or literal) of `v`'s element at `index`, emitting what computes it.
  FailureOr<std::string> element(Value v, ArrayRef<std::string> index);
  FailureOr<std::string> poolElement(PoolOp pool, ArrayRef<std::string> index);
  FailureOr<std::string> matmulElement(MatmulOp matmul, ArrayRef<std::string> index);
  FailureOr<std::string> resizeElement(ResizeOp resize, ArrayRef<std::string> index);
  FailureOr<std::string> gatherNdElement(GatherNDOp gather, ArrayRef<std::string> index);
  FailureOr<std::string> gridSampleElement(GridSampleOp sample, ArrayRef<std::string> index);
  FailureOr<std::string> roiAlignElement(RoiAlignOp roi, ArrayRef<std::string> index);
  FailureOr<std::string> col2ImElement(Col2ImOp op, ArrayRef<std::string> index);
  FailureOr<std::string> detElement(DetOp op, ArrayRef<std::string> index);
  FailureOr<std::string> scatterElementsElement(ScatterElementsOp scatter,
                                                ArrayRef<std::string> index);
  FailureOr<std::string> scatterNdElement(ScatterNDOp scatter, ArrayRef<std::string> index);
  /// Emits `acc = acc <reduction> updates[at]` (scatters' gathered form).
  LogicalResult combineUpdate(Value updates, ArrayRef<std::string> at, ScatterReduction reduction,
                              Type t, const std::string &acc);
  FailureOr<std::string> elementOfOp(Operation *op, Value v, ArrayRef<std::string> index);
  /// `operand`'s index for element `index` of `result`, numpy-broadcast.
  std::vector<std::string> broadcastIndex(Value operand, Value result,
                                          ArrayRef<std::string> index) {
    return broadcastIndex(operand, getSymShape(result.getType()), index);
  }
  /// The same for a result of dims `rd` that no value holds (attention's scores).
  std::vector<std::string> broadcastIndex(Value operand, const SymShape &rd,
                                          ArrayRef<std::string> index);
  /// A position read from an index tensor along a dim of size `n`: negative counts
  /// from the end; out of range is reported (KILN_ERROR_INDEX_OUT_OF_RANGE) and
  /// reads the nearest element meanwhile.
  std::string gatherPosition(const std::string &k, DimExpr n) {
    std::string size = dim(n), kk = temp("k");
    line("int64_t " + kk + " = (int64_t)" + k + ";");
    // Out of range is the call's error, as in the reference; the clamped read
    // keeps the kernel inside the buffer until the runtime reports it.
    checkData(kk + " < -" + size + " || " + kk + " >= " + size, "KILN_ERROR_INDEX_OUT_OF_RANGE");
    line(kk + " = kiln_clamp_index(" + kk + " < 0 ? " + kk + " + " + size + " : " + kk + ", " +
         size + ");");
    return kk;
  }
  /// `data`'s element at `index`, or 0 when one of its `gathered` dims (those
  /// the indices pick along) is empty (any index is out of range then, and
  /// there is nothing to read).
  FailureOr<std::string> gatheredElement(Value data, ArrayRef<std::string> index,
                                         ArrayRef<DimExpr> gathered, const std::string &ct) {
    std::string nonEmpty;
    for (DimExpr n : gathered)
      if (std::optional<int64_t> size = getConstantDimValue(n); !size || *size <= 0)
        nonEmpty += (nonEmpty.empty() ? "" : " && ") + dim(n) + " > 0";
    if (nonEmpty.empty())
      return element(data, index);
    std::string result = temp();
    line(ct + " " + result + " = " + ct + "();");
    openBlock("if (" + nonEmpty + ") {");
    FailureOr<std::string> e = element(data, index);
    if (failed(e))
      return failure();
    line(result + " = " + *e + ";");
    popScope();
    --indent;
    line("}");
    return result;
  }
  std::string bind(Value v, const std::string &expr) {
    std::string name = temp();
    Type t = elementOf(v);
    // A 2- or 4-bit integer wraps to its width wherever it is computed (the
    // int8_t it is computed in would not), as storing and reloading it does.
    std::string value = subByteIntegerName(t).empty() ? expr : "kiln_load(" + store(t, expr) + ")";
    line("const " + computeType(t) + " " + name + " = " + value + ";");
    return name;
  }
  std::string memoKey(Value v, ArrayRef<std::string> index) {
    std::string key = std::to_string(reinterpret_cast<uintptr_t>(v.getAsOpaquePointer()));
    for (const std::string &i : index)
      key += "|" + i;
    return key;
  }
  void pushScope() { memo.emplace_back(); }
  void popScope() { memo.pop_back(); }
  /// Opens a C block (`header` ends in "{") one level deeper, with its own memo:
  /// elements named inside are not visible after closeBlock().
  void openBlock(const Twine &header) {
    line(header);
    ++indent;
    pushScope();
  }
  void closeBlock() {
    popScope();
    --indent;
    line("}");
  }
  std::string store(Type t, const std::string &v) {
    if (t.isF16())
      return "kiln_to_f16(" + v + ")";
    if (t.isBF16())
      return "kiln_to_bf16(" + v + ")";
    // A stored float8 keeps inf and NaN (saturation is a cast's choice).
    if (std::string f8 = float8Name(t); !f8.empty())
      return "kiln_to_" + f8 + "(" + v + ", false)";
    if (std::string small = subByteIntegerName(t); !small.empty())
      return "kiln_to_" + small + "((" + computeType(t) + ")(" + v + "))";
    return "(" + computeType(t) + ")(" + v + ")";
  }

  //===--- schedules --------------------------------------------------------===//
  LogicalResult emitPointwise(Value root);
  LogicalResult emitTiledTranspose(TransposeOp root);
  LogicalResult emitReduction(ReduceOp root);
  LogicalResult emitArgReduction(ArgReduceOp root);
  LogicalResult emitCumulative(CumulativeOp root);
  LogicalResult emitTopK(TopKOp root);
  LogicalResult emitRow(Operation *root);
  LogicalResult emitCountNonZero(CountNonZeroOp root);
  LogicalResult emitCompactNonZero(CompactNonZeroOp root);
  LogicalResult emitNmsSelect(NmsSelectOp root);
  /// `outputPerm` (empty: none) is a transpose of the result the kernel
  /// writes in (the head merge), keeping the feature dim last.
  LogicalResult emitAttention(AttentionOp root, ArrayRef<int64_t> outputPerm);
  /// The element of a one-element operand (any rank).
  FailureOr<std::string> onlyElement(Value v) {
    std::vector<std::string> index(cast<RankedTensorType>(v.getType()).getRank(), "0");
    return element(v, index);
  }
  /// Opens the loop over the chunks of `input`'s row-major order (a block
  /// each): declares n, chunks, chunk, c, begin and end.
  void openChunkLoop(Value input, int64_t chunks);
  /// Whether the element named `v` (of `input`'s element type) is non-zero.
  std::string nonZero(Value input, const std::string &v) {
    std::string ct = computeType(elementOf(input));
    return "(" + v + " != (" + ct + ")0)";
  }

  KernelOp kernel;
  KilnDialect *kiln;
  std::string body;
  int indent = 1;
  int nextTemp = 0;
  /// Whether the kernel checks its data (gather indices, integer divisors,
  /// empty arg_reduce axes) and takes `int32_t *kiln_error`, the word its step
  /// reports the first failure in (the runtime turns it into the call's error).
  bool reportsErrors = false;
  /// Emits: when `condition` holds, report `code` (kiln_device.h KILN_ERROR_*).
  void checkData(const std::string &condition, const char *code) {
    reportsErrors = true;
    line("if (" + condition + ") kiln_report_error(kiln_error, " + code + ");");
  }
  /// The launch's work items (GeneratedKernel::workItems); null: the result's
  /// elements.
  DimExpr workItems;
  /// Floating-point operations per launch (GeneratedKernel::flops); null: a
  /// few per element.
  DimExpr flops;
  /// GeneratedKernel::vectorWidth and vectorLoads.
  int vectorWidth = 0, vectorLoads = 0;
  /// GeneratedKernel::dividesData.
  bool dividesData = false;
  /// GeneratedKernel::perThreadMatrix.
  bool perThreadMatrix = false;
  /// GeneratedKernel::doubleTaps.
  bool doubleTaps = false;
  /// Held to the registers of 50% occupancy (KILN_HALF_OCCUPANCY): row
  /// kernels, whose per-thread state (a few running values) fits in 64
  /// registers even in double, where ptxas would otherwise take a few more.
  bool halfOccupancy = false;
  DimExpr productOf(ArrayRef<DimExpr> dims) {
    DimExpr p = getAffineConstantExpr(1, kernel.getContext());
    for (DimExpr d : dims)
      p = p * d;
    return canonicalizeDim(p);
  }
  /// Nesting of element() calls, bounded by kMaxExpressionDepth.
  unsigned depth = 0;
  static constexpr unsigned kMaxExpressionDepth = 1024;
  std::set<std::string> symbols;
  std::vector<std::map<std::string, std::string>> memo;
  bool blockPerItem = false;
  /// Whether 32-bit index arithmetic is exact for this kernel once its sizes
  /// fit (see the definition); the sizes that are not constants go to
  /// `symbolicSizes`, for a shape-bucket variant to check.
  bool index32Candidate(StringRef schedule, SmallVectorImpl<DimExpr> &symbolicSizes);
  /// While emitting a vectorized lane: input number -> its loaded vector's name.
  std::map<unsigned, std::string> vectorInputs;
  /// The vector path of a pointwise kernel whose inputs broadcast: how each
  /// input is read (PointwiseRead), its width, and what lane 0 loaded (a
  /// vector's or a scalar's name) for the later lanes of the same vector.
  std::map<unsigned, int> broadcastReads;
  std::map<unsigned, std::string> laneZeroReads;
  int broadcastWidth = 0;
  int lane = 0;
};

/// How the vector path of a pointwise kernel reads an input: at the result's
/// own position (one vector at the result's offset), along the result's
/// innermost dim with other dims broadcast (a bias: one vector at the
/// input's own offset of the vector's first element), or broadcast along the
/// innermost dim (one scalar for the whole vector).
enum PointwiseRead { kReadSame, kReadContiguous, kReadBroadcast };

/// How a kernel whose ops broadcast by numpy rules (elementwise ops, compare,
/// select, cast, broadcast_to, splat constants; and `except`, a row op whose
/// row runs along the same innermost dim) reads its inputs along the
/// innermost dim `inner` of what it computes, which trailing alignment maps
/// every input's innermost dim onto: kReadBroadcast where that dim is 1,
/// kReadContiguous where it is `inner`. Nothing when another op or an input
/// of another innermost dim rules vectors out.
std::optional<std::map<unsigned, int>> innermostReads(KernelOp kernel, int64_t inner,
                                                      Operation *except = nullptr) {
  Block &body = kernel.getBody().front();
  for (Operation &op : body.without_terminator())
    if (&op != except &&
        !isa<ConstantOp, SymbolicConstantOp, CompareOp, SelectOp, CastOp, BroadcastToOp>(op) &&
        !op.hasTrait<OpTrait::Elementwise>())
      return std::nullopt;
  std::map<unsigned, int> reads;
  for (BlockArgument arg : body.getArguments()) {
    SymShape shape = getSymShape(arg.getType());
    std::optional<int64_t> last =
        shape.empty() ? std::optional<int64_t>(1) : getConstantDimValue(shape.back());
    if (last == 1)
      reads[arg.getArgNumber()] = kReadBroadcast;
    else if (last == inner)
      reads[arg.getArgNumber()] = kReadContiguous;
    else
      return std::nullopt;
  }
  return reads;
}

/// Whether a pointwise kernel whose inputs broadcast can take the vector
/// path: the result's innermost dim is known, and every input's innermost
/// dim is either that dim or 1 (innermostReads); inputs of the result's own
/// shape are read at its position. Returns each input's PointwiseRead, or
/// nothing.
std::optional<std::map<unsigned, int>> broadcastPointwiseReads(KernelOp kernel, Value root) {
  SymShape rootShape = getSymShape(root.getType());
  std::optional<int64_t> inner =
      rootShape.empty() ? std::nullopt : getConstantDimValue(rootShape.back());
  if (!inner)
    return std::nullopt;
  std::optional<std::map<unsigned, int>> reads = innermostReads(kernel, *inner);
  if (reads)
    for (BlockArgument arg : kernel.getBody().front().getArguments())
      if (getSymShape(arg.getType()) == rootShape)
        (*reads)[arg.getArgNumber()] = kReadSame;
  return reads;
}

/// True when every element of the kernel reads every input at the result's own
/// position (elementwise ops on operands of the result's shape, splat constants):
/// then inputs and result can move in 128-bit vectors.
bool isIdentityPointwise(KernelOp kernel, Value root) {
  Type rootType = root.getType();
  for (Operation &op : kernel.getBody().front().without_terminator()) {
    if (isa<ConstantOp>(op))
      continue;
    if (!op.hasTrait<OpTrait::Elementwise>() && !isa<CompareOp, SelectOp, CastOp>(op))
      return false;
    for (Value operand : op.getOperands()) {
      if (isa_and_nonnull<ConstantOp>(operand.getDefiningOp()))
        continue;
      if (getSymShape(operand.getType()) != getSymShape(rootType))
        return false;
    }
  }
  return true;
}

std::string KernelEmitter::dim(DimExpr d) {
  std::string text = dimText(d);
  bool divides = d.getKind() == AffineExprKind::FloorDiv || d.getKind() == AffineExprKind::CeilDiv ||
                 d.getKind() == AffineExprKind::Mod;
  if (!divides || getConstantDimValue(d))
    return text;
  auto [it, inserted] = hoistedDims.try_emplace(text, "");
  if (inserted) {
    it->second = "kiln_dim" + std::to_string(hoistedDims.size() - 1);
    prologue += "  const int64_t " + it->second + " = " + text + ";\n";
  }
  return it->second;
}

std::string KernelEmitter::dimText(DimExpr d) {
  if (auto c = getConstantDimValue(d))
    return int64Literal(*c);
  if (auto s = dyn_cast<AffineSymbolExpr>(d)) {
    std::string name = kiln->getSymbolName(s.getPosition()).str();
    symbols.insert(name);
    return "KILN_SYM_" + name;
  }
  auto bin = cast<AffineBinaryOpExpr>(d);
  std::string l = dim(bin.getLHS()), r = dim(bin.getRHS());
  switch (d.getKind()) {
  case AffineExprKind::Add:
    return "(" + l + " + " + r + ")";
  case AffineExprKind::Mul:
    return "(" + l + " * " + r + ")";
  case AffineExprKind::FloorDiv:
    return "kiln_floordiv(" + l + ", " + r + ")";
  case AffineExprKind::CeilDiv:
    return "kiln_ceildiv(" + l + ", " + r + ")";
  case AffineExprKind::Mod:
    return "kiln_floormod(" + l + ", " + r + ")";
  default:
    return "0";
  }
}

std::vector<std::string> KernelEmitter::unravel(const std::string &linear,
                                                ArrayRef<std::string> shape) {
  std::vector<std::string> index(shape.size());
  if (shape.empty())
    return index;
  // Each step's quotient is a const of its own: it is the linear position of
  // the dims before it, which linearize() reuses instead of multiplying the
  // indices back together.
  std::string rest = temp("r");
  line("const int64_t " + rest + " = " + linear + ";");
  for (int64_t d = static_cast<int64_t>(shape.size()) - 1; d >= 0; --d) {
    index[d] = temp("i");
    if (d == 0) {
      line("const int64_t " + index[d] + " = " + rest + ";");
      break;
    }
    std::string q = temp("q");
    line("const int64_t " + q + " = " + quotient(rest, shape[d]) + ";");
    line("const int64_t " + index[d] + " = " + rest + " - " + q + " * " + shape[d] + ";");
    unraveled[positionKey(ArrayRef<std::string>(index).take_front(d), shape.take_front(d))] = q;
    rest = q;
  }
  unraveled[positionKey(index, shape)] = "(" + linear + ")";
  return index;
}

std::string KernelEmitter::linearize(ArrayRef<std::string> index, ArrayRef<std::string> shape) {
  if (shape.empty())
    return "((int64_t)0)";
  // The longest leading part that an unravel produced starts from its linear
  // position: unravel-then-linearize of the same dims is no arithmetic at all.
  size_t known = 0;
  std::string linear;
  for (size_t k = shape.size(); k >= 1 && known == 0; --k)
    if (auto it = unraveled.find(positionKey(index.take_front(k), shape.take_front(k)));
        it != unraveled.end()) {
      known = k;
      linear = it->second;
    }
  if (known == 0) {
    known = 1;
    linear = index[0];
  }
  for (size_t d = known; d < shape.size(); ++d)
    linear = "(" + linear + " * " + shape[d] + " + " + index[d] + ")";
  return linear;
}

namespace {
/// A product of dims as a constant times a multiset of other factors (symbols
/// and expressions that are not products), to compare products of dims.
struct DimFactors {
  int64_t constant = 1;
  std::multiset<const void *> atoms;
  void multiply(DimExpr d) {
    if (auto c = getConstantDimValue(d)) {
      constant *= *c;
      return;
    }
    if (d.getKind() == AffineExprKind::Mul) {
      auto bin = cast<AffineBinaryOpExpr>(d);
      multiply(bin.getLHS());
      multiply(bin.getRHS());
      return;
    }
    atoms.insert(d.getAsOpaquePointer());
  }
  bool operator==(const DimFactors &o) const { return constant == o.constant && atoms == o.atoms; }
  /// This product divides `o` (o is a multiple of it).
  bool divides(const DimFactors &o) const {
    if (constant <= 0 || o.constant <= 0 || o.constant % constant != 0)
      return false;
    return std::includes(o.atoms.begin(), o.atoms.end(), atoms.begin(), atoms.end());
  }
};

/// Runs of consecutive dims of a reshape's result and input with equal
/// products ([B, S, 12, 64] and [B, S, 768]: (B)(B), (S)(S), (12 64)(768)),
/// as [resultBegin, resultEnd, inputBegin, inputEnd); nullopt when the dims do
/// not split so (or a dim is 0).
std::optional<std::vector<std::array<size_t, 4>>> reshapeGroups(const SymShape &out,
                                                                 const SymShape &in) {
  std::vector<std::array<size_t, 4>> groups;
  size_t i = 0, j = 0;
  while (i < out.size() && j < in.size()) {
    size_t i0 = i, j0 = j;
    DimFactors a, b;
    a.multiply(out[i++]);
    b.multiply(in[j++]);
    while (!(a == b)) {
      if (a.divides(b) && i < out.size())
        a.multiply(out[i++]);
      else if (b.divides(a) && j < in.size())
        b.multiply(in[j++]);
      else
        return std::nullopt;
    }
    groups.push_back({i0, i, j0, j});
  }
  // Dims left on one side must be 1s: they join the last group.
  for (size_t k = i; k < out.size(); ++k)
    if (getConstantDimValue(out[k]) != std::optional<int64_t>(1))
      return std::nullopt;
  for (size_t k = j; k < in.size(); ++k)
    if (getConstantDimValue(in[k]) != std::optional<int64_t>(1))
      return std::nullopt;
  if (groups.empty())
    return std::nullopt;
  groups.back()[1] = out.size();
  groups.back()[3] = in.size();
  return groups;
}
} // namespace

std::vector<std::string> KernelEmitter::broadcastIndex(Value operand, const SymShape &rd,
                                                       ArrayRef<std::string> index) {
  SymShape od = getSymShape(operand.getType());
  size_t offset = rd.size() - od.size();
  std::vector<std::string> out;
  for (size_t j = 0; j < od.size(); ++j) {
    const std::string &i = index[j + offset];
    if (auto c = getConstantDimValue(od[j]); c && *c == 1)
      out.push_back("0");
    else if (od[j] == rd[j + offset])
      out.push_back(i);
    else
      out.push_back("(" + dim(od[j]) + " == 1 ? (int64_t)0 : " + i + ")");
  }
  return out;
}

FailureOr<std::string> KernelEmitter::element(Value v, ArrayRef<std::string> index) {
  std::string key = memoKey(v, index);
  for (auto it = memo.rbegin(); it != memo.rend(); ++it)
    if (auto found = it->find(key); found != it->end())
      return found->second;
  // The walk recurses once per op of the expression; kiln-form-kernels keeps
  // chains far shorter, so only a hand-written kernel gets here.
  if (depth >= kMaxExpressionDepth) {
    Operation *where = v.getDefiningOp() ? v.getDefiningOp() : kernel.getOperation();
    return where->emitError() << "the kernel's expression is deeper than "
                              << kMaxExpressionDepth << " ops; split it into several kernels";
  }
  struct DepthGuard {
    unsigned &d;
    explicit DepthGuard(unsigned &d) : d(d) { ++d; }
    ~DepthGuard() { --d; }
  } guard(depth);
  std::string name;
  if (auto arg = dyn_cast<BlockArgument>(v)) {
    std::vector<std::string> shape = dims(v);
    std::string offset = linearize(index, shape);
    unsigned n = arg.getArgNumber();
    std::string in = "in" + std::to_string(n);
    auto read = broadcastReads.find(n);
    if (auto vec = vectorInputs.find(n); vec != vectorInputs.end()) {
      name = bind(v, "kiln_load(" + vec->second + ".x[" + std::to_string(lane) + "])");
    } else if (read != broadcastReads.end()) {
      // Lane 0 reads for the whole vector: its element is the vector's first
      // (innermost position a multiple of the width, so the input's offset
      // is one too); the later lanes are the next positions along the
      // innermost dim, or the same element where the input broadcasts there.
      std::string &first = laneZeroReads[n];
      if (lane == 0) {
        if (read->second == kReadContiguous) {
          std::string t = storageType(elementOf(v)), W = std::to_string(broadcastWidth);
          first = temp("v");
          line("const kiln_vec<" + t + ", " + W + "> " + first + " = *reinterpret_cast<const kiln_vec<" +
               t + ", " + W + "> *>(" + in + " + " + offset + ");");
        } else {
          first = bind(v, "kiln_load(" + in + "[" + offset + "])");
        }
      }
      name = read->second == kReadContiguous
                 ? bind(v, "kiln_load(" + first + ".x[" + std::to_string(lane) + "])")
                 : first;
    } else {
      name = bind(v, "kiln_load(" + in + "[" + offset + "])");
    }
  } else {
    FailureOr<std::string> r = elementOfOp(v.getDefiningOp(), v, index);
    if (failed(r))
      return failure();
    name = *r;
  }
  memo.back()[key] = name;
  return name;
}

/// One output element of a pool the kernel computes itself (those cuDNN does
/// not take: dilations, Lp, asymmetric pads, ceil_mode windows): a loop over
/// the window with the reference's rules (runtime/reference/src/Composite.cpp):
/// padding never wins a max and a NaN does; an average divides by the taps
/// inside the input, or with count_include_pad by those inside the padded
/// input; Lp is (sum |x|^p)^(1/p).
FailureOr<std::string> KernelEmitter::poolElement(PoolOp pool, ArrayRef<std::string> index) {
  Type t = elementOf(pool.getResult());
  std::string ct = computeType(t);
  std::vector<std::string> inShape = dims(pool.getInput());
  size_t spatial = inShape.size() - 2;
  ArrayRef<int64_t> window = pool.getKernelShape(), pads = pool.getPads(),
                    strides = pool.getStrides(), dilations = pool.getDilations();
  auto at = [](ArrayRef<int64_t> v, size_t i, int64_t otherwise) {
    return i < v.size() ? v[i] : otherwise;
  };
  std::string acc = temp("acc"), valid = temp("valid"), padded = temp("padded"),
              nan = temp("nan"), result = temp();
  bool max = pool.getKind() == PoolKind::max;
  line(ct + " " + acc + " = " +
       (max ? "(" + ct + ")kiln_f32_bits(0xff800000u)" : "(" + ct + ")0") + ";");
  line("int64_t " + valid + " = 0, " + padded + " = 0;");
  line("bool " + nan + " = false;");
  std::vector<std::string> in = {index[0], index[1]};
  std::string inside = "true", inPadding = "true";
  for (size_t d = 0; d < spatial; ++d) {
    std::string k = temp("k"), pos = temp("pos");
    int64_t begin = at(pads, d, 0), end = at(pads, d + spatial, 0);
    openBlock("for (int64_t " + k + " = 0; " + k + " < " + int64Literal(window[d]) + "; ++" + k +
              ") {");
    line("const int64_t " + pos + " = " + index[2 + d] + " * " + int64Literal(at(strides, d, 1)) +
         " - " + int64Literal(begin) + " + " + k + " * " + int64Literal(at(dilations, d, 1)) + ";");
    inside += " && " + pos + " >= 0 && " + pos + " < " + inShape[2 + d];
    inPadding += " && " + pos + " >= " + int64Literal(-begin) + " && " + pos + " < " +
                 inShape[2 + d] + " + " + int64Literal(end);
    in.push_back(pos);
  }
  line("if (" + inPadding + ") ++" + padded + ";");
  openBlock("if (" + inside + ") {");
  line("++" + valid + ";");
  FailureOr<std::string> v = element(pool.getInput(), in);
  if (failed(v))
    return failure();
  switch (pool.getKind()) {
  case PoolKind::max:
    line("if (kiln_isnan(" + *v + ")) " + nan + " = true;");
    line("if (" + *v + " > " + acc + ") " + acc + " = " + *v + ";");
    break;
  case PoolKind::avg:
    line(acc + " += " + *v + ";");
    break;
  case PoolKind::lp:
    line(acc + " += kiln_pow(kiln_abs(" + *v + "), (" + ct + ")" + std::to_string(pool.getP()) +
         ");");
    break;
  }
  closeBlock();
  for (size_t d = 0; d < spatial; ++d)
    closeBlock();
  switch (pool.getKind()) {
  case PoolKind::max:
    line(ct + " " + result + " = " + nan + " ? (" + ct + ")kiln_f32_bits(0x7fc00000u) : " + acc +
         ";");
    break;
  case PoolKind::avg:
    line(ct + " " + result + " = " + acc + " / (" + ct + ")" +
         (pool.getCountIncludePad() ? padded : valid) + ";");
    break;
  case PoolKind::lp:
    line(ct + " " + result + " = kiln_pow(" + acc + ", (" + ct + ")1 / (" + ct + ")" +
         std::to_string(pool.getP()) + ");");
    break;
  }
  return result;
}

/// One element of an integer matmul (what cuBLASLt does not take; kiln-form-
/// kernels leaves float matmuls to it): a dot product over K in the result's
/// integer type, wrapping as the reference does; numpy's vector promotion,
/// batch dims broadcast, the transpose flags, an optional bias and ReLU.
FailureOr<std::string> KernelEmitter::matmulElement(MatmulOp matmul, ArrayRef<std::string> index) {
  Value a = matmul.getLhs(), b = matmul.getRhs();
  std::string ct = computeType(elementOf(matmul.getResult()));
  SymShape as = getSymShape(a.getType()), bs = getSymShape(b.getType());
  bool aVector = as.size() == 1, bVector = bs.size() == 1;
  size_t rank = index.size();
  size_t batchRank = rank - (aVector ? 0 : 1) - (bVector ? 0 : 1);
  std::string m = aVector ? "" : index[rank - (bVector ? 1 : 2)];
  std::string n = bVector ? "" : index[rank - 1];
  // An operand's batch dims, right-aligned against the result's; dims of 1
  // broadcast.
  auto batchIndex = [&](const SymShape &shape) {
    std::vector<std::string> out;
    size_t own = shape.size() - 2;
    for (size_t j = 0; j < own; ++j) {
      const std::string &i = index[batchRank - own + j];
      std::optional<int64_t> size = getConstantDimValue(shape[j]);
      out.push_back(size && *size == 1 ? "0" : "(" + dim(shape[j]) + " == 1 ? (int64_t)0 : " + i + ")");
    }
    return out;
  };
  DimExpr kDim = aVector ? as[0] : as[matmul.getTransposeLhs() ? as.size() - 2 : as.size() - 1];
  std::string k = temp("k"), acc = temp("acc");
  line(ct + " " + acc + " = (" + ct + ")0;");
  openBlock("for (int64_t " + k + " = 0; " + k + " < " + dim(kDim) + "; ++" + k + ") {");
  std::vector<std::string> ai = aVector ? std::vector<std::string>{k} : batchIndex(as);
  if (!aVector) {
    ai.push_back(matmul.getTransposeLhs() ? k : m);
    ai.push_back(matmul.getTransposeLhs() ? m : k);
  }
  std::vector<std::string> bi = bVector ? std::vector<std::string>{k} : batchIndex(bs);
  if (!bVector) {
    bi.push_back(matmul.getTransposeRhs() ? n : k);
    bi.push_back(matmul.getTransposeRhs() ? k : n);
  }
  FailureOr<std::string> x = element(a, ai);
  FailureOr<std::string> y = failed(x) ? x : element(b, bi);
  if (failed(y))
    return failure();
  // Through uint64 as every integer op here: wrapping without undefined behaviour.
  line(acc + " = (" + ct + ")((uint64_t)" + acc + " + (uint64_t)" + *x + " * (uint64_t)" + *y + ");");
  closeBlock();
  if (Value bias = matmul.getBias()) {
    FailureOr<std::string> c = element(bias, broadcastIndex(bias, matmul.getResult(), index));
    if (failed(c))
      return failure();
    line(acc + " = (" + ct + ")((uint64_t)" + acc + " + (uint64_t)" + *c + ");");
  }
  if (matmul.getActivation() == Activation::relu)
    line(acc + " = " + acc + " < (" + ct + ")0 ? (" + ct + ")0 : " + acc + ";");
  return acc;
}

/// A double literal of `v` (an attribute's float, widened as the reference does).
std::string doubleLiteral(double v) {
  std::string s;
  llvm::raw_string_ostream(s) << "((double)" << llvm::format("%.17g", v) << ")";
  return s;
}

/// One output element of a resize, as the reference computes it
/// (runtime/reference/src/DataMovement.cpp): per dim, the source coordinate of
/// the output coordinate, then the taps of the interpolation (one for nearest,
/// two for linear, four for cubic, more where antialiasing stretches the filter
/// on a downsampled dim), weights normalized where exclude_outside or
/// antialiasing asks; the sum over the tensor product of every dim's taps, in
/// double. A dim that keeps its size at scale 1 reads its own position (every
/// mode but tf_crop_and_resize maps it onto itself with weight 1).
FailureOr<std::string> KernelEmitter::resizeElement(ResizeOp resize, ArrayRef<std::string> index) {
  Value input = resize.getInput(), result = resize.getResult();
  Type t = elementOf(result);
  std::string ct = computeType(t);
  SymShape inDims = getSymShape(input.getType()), outDims = getSymShape(result.getType());
  std::vector<std::string> inShape = dims(input), outShape = dims(result);
  size_t rank = index.size();
  ArrayRef<float> scales = resize.getScales(), roi = resize.getRoi();
  CoordinateMode coordinates = resize.getCoordinateMode();
  ResizeMode mode = resize.getMode();
  bool crop = coordinates == CoordinateMode::tf_crop_and_resize;
  bool exclude = resize.getExcludeOutside();
  double cubicA = resize.getCubicCoeffA().convertToDouble();
  // Per dim: the input position (identity and nearest dims) or the tap loop's
  // variables (linear and cubic dims).
  struct Taps {
    std::string position; // set: one tap of weight 1 at this position
    std::string x, floor, first, last, scale, count, norm;
  };
  std::vector<Taps> taps(rank);
  std::string outside = "false";
  auto weightAt = [&](const Taps &tp, const std::string &k) {
    std::string s = "((double)" + k + " - (" + tp.x + " - " + tp.floor + ")) * " + tp.scale;
    return mode == ResizeMode::linear ? "kiln_max<double>(0.0, 1.0 - kiln_abs(" + s + "))"
                                      : "kiln_cubic_weight(" + s + ", " + doubleLiteral(cubicA) + ")";
  };
  for (size_t d = 0; d < rank; ++d) {
    Taps &tp = taps[d];
    bool unitScale = scales.empty() || scales[d] == 1.0f;
    if (!crop && inDims[d] == outDims[d] && unitScale) {
      tp.position = index[d];
      continue;
    }
    std::string in = "(double)" + inShape[d], out = "(double)" + outShape[d];
    std::string scale = temp("scale"), x = temp("x"), o = "(double)" + index[d];
    line("const double " + scale + " = " +
         (scales.empty() ? "(" + out + " / " + in + ")" : doubleLiteral(scales[d])) + ";");
    std::string coordinate, halfPixel = "(" + o + " + 0.5) / " + scale + " - 0.5";
    switch (coordinates) {
    case CoordinateMode::half_pixel:
      coordinate = halfPixel;
      break;
    case CoordinateMode::half_pixel_symmetric:
      coordinate = "(" + in + " / 2.0) * (1.0 - " + out + " / (" + scale + " * " + in + ")) + " +
                   halfPixel;
      break;
    case CoordinateMode::pytorch_half_pixel:
      coordinate = outShape[d] + " > 1 ? " + halfPixel + " : 0.0";
      break;
    case CoordinateMode::align_corners:
      coordinate = "(" + scale + " * " + in + " == 1.0 ? 0.0 : " + o + " * (" + in + " - 1.0) / (" +
                   scale + " * " + in + " - 1.0))";
      break;
    case CoordinateMode::asymmetric:
      coordinate = o + " / " + scale;
      break;
    case CoordinateMode::tf_crop_and_resize: {
      if (roi.size() != 2 * rank)
        return unsupported(resize, "needs a roi of 2 * rank for tf_crop_and_resize");
      std::string start = doubleLiteral(roi[d]), end = doubleLiteral(roi[d + rank]);
      coordinate = outShape[d] + " > 1 ? " + start + " * (" + in + " - 1.0) + " + o + " * (" + end +
                   " - " + start + ") * (" + in + " - 1.0) / (" + out + " - 1.0) : 0.5 * (" +
                   start + " + " + end + ") * (" + in + " - 1.0)";
      break;
    }
    }
    line("const double " + x + " = " + coordinate + ";");
    if (crop)
      outside += " || " + x + " < 0.0 || " + x + " > " + in + " - 1.0";
    if (mode == ResizeMode::nearest) {
      tp.position = temp("p");
      line("const int64_t " + tp.position + " = kiln_clamp_index((int64_t)kiln_resize_nearest(" + x +
           ", " + std::to_string(static_cast<int>(resize.getNearestMode())) + "), " + inShape[d] +
           ");");
      continue;
    }
    // Antialiasing stretches the filter by 1/scale when downsampling and
    // normalizes its weights (ONNX Resize-18).
    tp.x = x;
    tp.floor = temp("f");
    tp.first = temp("first");
    tp.last = temp("last");
    tp.scale = temp("fs");
    line("const double " + tp.floor + " = kiln_floor(" + x + ");");
    std::string stretch = resize.getAntialias() ? "(" + scale + " < 1.0)" : "false";
    std::string reach = mode == ResizeMode::linear ? "1.0" : "2.0";
    std::string unstretched = mode == ResizeMode::linear ? "(int64_t)0" : "(int64_t)-1";
    line("const int64_t " + tp.first + " = " + stretch + " ? (int64_t)(kiln_floor(-" + reach + " / " +
         scale + ") + 1.0) : " + unstretched + ";");
    line("const int64_t " + tp.last + " = 1 - " + tp.first + ";");
    line("const double " + tp.scale + " = " + stretch + " ? " + scale + " : 1.0;");
    tp.norm = "1.0";
    tp.count = "1";
    if (exclude || resize.getAntialias()) {
      std::string total = temp("total"), k = temp("k"), at = temp("at");
      tp.count = temp("count");
      tp.norm = temp("norm");
      line("double " + total + " = 0.0;");
      line("int64_t " + tp.count + " = 0;");
      openBlock("for (int64_t " + k + " = " + tp.first + "; " + k + " <= " + tp.last + "; ++" + k +
                ") {");
      line("const int64_t " + at + " = (int64_t)" + tp.floor + " + " + k + ";");
      if (exclude)
        line("if (" + at + " < 0 || " + at + " >= " + inShape[d] + ") continue;");
      line(total + " += " + weightAt(tp, k) + ";");
      line("++" + tp.count + ";");
      closeBlock();
      std::string normalize = exclude ? "true" : stretch;
      line("const double " + tp.norm + " = " + normalize + " && " + total + " != 0.0 ? " + total +
           " : 1.0;");
    }
  }
  std::string value = temp();
  line(ct + " " + value + " = (" + ct + ")" + doubleLiteral(resize.getExtrapolationValue().convertToDouble()) +
       ";");
  openBlock("if (!(" + outside + ")) {");
  std::string sum = temp("sum");
  line("double " + sum + " = 0.0;");
  std::vector<std::string> position(rank), weights;
  unsigned loops = 0;
  for (size_t d = 0; d < rank; ++d) {
    Taps &tp = taps[d];
    if (!tp.position.empty()) {
      position[d] = tp.position;
      continue;
    }
    std::string k = temp("k"), w = temp("w"), at = temp("at");
    openBlock("for (int64_t " + k + " = " + tp.first + "; " + k + " <= " + tp.last + "; ++" + k +
              ") {");
    ++loops;
    line("double " + w + " = " + weightAt(tp, k) + ";");
    line("int64_t " + at + " = (int64_t)" + tp.floor + " + " + k + ";");
    if (exclude) {
      // No tap inside the input: the reference's single tap at the floor.
      line("if (" + tp.count + " == 0) { if (" + k + " != " + tp.first + ") continue; " + w +
           " = 1.0; " + at + " = kiln_clamp_index((int64_t)" + tp.floor + ", " + inShape[d] +
           "); } else if (" + at + " < 0 || " + at + " >= " + inShape[d] + ") continue;");
    }
    line(at + " = kiln_clamp_index(" + at + ", " + inShape[d] + ");");
    if (tp.norm != "1.0")
      line(w + " /= " + tp.norm + ";");
    position[d] = at;
    weights.push_back(w);
  }
  // The taps' positions and weights are doubles, as the reference computes
  // them: 70 to 90 registers with two interpolated dims, which leave room for
  // 25-38% of an SM's threads (tools/sass-lint.py reports it, not as a
  // violation); held to 64, ptxas spills.
  if (loops > 0)
    doubleTaps = true;
  FailureOr<std::string> v = element(input, position);
  if (failed(v))
    return failure();
  std::string weight = "1.0";
  for (const std::string &w : weights)
    weight += " * " + w;
  line(sum + " += " + weight + " * (double)" + *v + ";");
  for (unsigned i = 0; i < loops; ++i)
    closeBlock();
  line(value + " = (" + ct + ")" + sum + ";");
  closeBlock();
  return value;
}

/// One element of a grid_sample, as the reference computes it
/// (runtime/reference/src/Special.cpp): per spatial dim, the grid's coordinate
/// (innermost dim first along the grid's last axis) unnormalized by
/// align_corners, rounded for nearest, brought inside by the padding mode, and
/// its taps (one, two, or four with Keys' a = -0.75); a tap outside the input
/// reads zero (zeros padding) or the clamped or reflected pixel. Sums in
/// double over the taps' tensor product, skipping zero weights and zero pixels.
FailureOr<std::string> KernelEmitter::gridSampleElement(GridSampleOp sample,
                                                        ArrayRef<std::string> index) {
  // Taps in double, as Resize's (GeneratedKernel::doubleTaps).
  if (sample.getMode() != ResizeMode::nearest)
    doubleTaps = true;
  Value input = sample.getInput(), grid = sample.getGrid();
  std::string ct = computeType(elementOf(sample.getResult()));
  std::vector<std::string> inShape = dims(input);
  size_t r = inShape.size() - 2;
  bool align = sample.getAlignCorners();
  ResizeMode mode = sample.getMode();
  GridPadding padding = sample.getPadding();
  int taps = mode == ResizeMode::nearest ? 1 : mode == ResizeMode::linear ? 2 : 4;
  // The grid's position of this output point: [b, spatial..., coordinate].
  std::vector<std::string> at = {index[0]};
  at.insert(at.end(), index.begin() + 2, index.end());
  at.push_back("");
  std::vector<std::string> first(r), fraction(r), lo(r), hi(r);
  for (size_t d = 0; d < r; ++d) {
    at.back() = std::to_string(r - 1 - d);
    FailureOr<std::string> g = element(grid, at);
    if (failed(g))
      return failure();
    std::string size = "(double)" + inShape[2 + d], v = temp("v");
    lo[d] = align ? "0.0" : "-0.5";
    hi[d] = align ? "(" + size + " - 1.0)" : "(" + size + " - 0.5)";
    line("double " + v + " = " +
         (align ? "((double)" + *g + " + 1.0) / 2.0 * (" + size + " - 1.0)"
                : "(((double)" + *g + " + 1.0) * " + size + " - 1.0) / 2.0") + ";");
    if (mode == ResizeMode::nearest)
      line(v + " = kiln_round(" + v + ");");
    if (padding == GridPadding::border)
      line("if (" + v + " < " + lo[d] + " || " + v + " > " + hi[d] + ") " + v + " = kiln_max<double>(0.0, kiln_min<double>(" + v + ", " + size + " - 1.0));");
    else if (padding == GridPadding::reflection)
      line("if (" + v + " < " + lo[d] + " || " + v + " > " + hi[d] + ") " + v +
           " = kiln_reflect_coordinate(" + v + ", " + lo[d] + ", " + hi[d] + ");");
    first[d] = temp("f");
    fraction[d] = temp("t");
    if (mode == ResizeMode::nearest) {
      line("const int64_t " + first[d] + " = (int64_t)" + v + ";");
      line("const double " + fraction[d] + " = 0.0;");
    } else {
      line("const double " + fraction[d] + " = " + v + " - kiln_floor(" + v + ");");
      line("const int64_t " + first[d] + " = (int64_t)kiln_floor(" + v + ")" +
           (mode == ResizeMode::cubic ? " - 1" : "") + ";");
    }
  }
  std::string sum = temp("sum");
  line("double " + sum + " = 0.0;");
  std::vector<std::string> position = {index[0], index[1]}, weights;
  for (size_t d = 0; d < r; ++d) {
    std::string k = temp("k"), w = temp("w"), p = temp("p"), size = inShape[2 + d];
    openBlock("for (int64_t " + k + " = 0; " + k + " < " + std::to_string(taps) + "; ++" + k + ") {");
    switch (mode) {
    case ResizeMode::nearest:
      line("const double " + w + " = 1.0;");
      break;
    case ResizeMode::linear:
      line("const double " + w + " = " + k + " == 0 ? 1.0 - " + fraction[d] + " : " + fraction[d] + ";");
      break;
    case ResizeMode::cubic:
      line("const double " + w + " = kiln_cubic_weight(" + k + " == 0 ? " + fraction[d] + " + 1.0 : " +
           k + " == 1 ? " + fraction[d] + " : " + k + " == 2 ? 1.0 - " + fraction[d] + " : 2.0 - " +
           fraction[d] + ", -0.75);");
      break;
    }
    line("int64_t " + p + " = " + first[d] + " + " + k + ";");
    // Outside the input: zero, or the clamped or reflected pixel.
    switch (padding) {
    case GridPadding::zeros:
      line("if (" + p + " < 0 || " + p + " >= " + size + ") continue;");
      break;
    case GridPadding::border:
      line(p + " = kiln_clamp_index(" + p + ", " + size + ");");
      break;
    case GridPadding::reflection:
      line("if (" + p + " < 0 || " + p + " >= " + size + ") " + p +
           " = kiln_clamp_index((int64_t)kiln_reflect_coordinate((double)" + p + ", " + lo[d] + ", " +
           hi[d] + "), " + size + ");");
      break;
    }
    position.push_back(p);
    weights.push_back(w);
  }
  std::string weight = "1.0";
  for (const std::string &w : weights)
    weight += " * " + w;
  std::string wAll = temp("w");
  line("const double " + wAll + " = " + weight + ";");
  openBlock("if (" + wAll + " != 0.0) {");
  FailureOr<std::string> x = element(input, position);
  if (failed(x))
    return failure();
  line(sum + " += " + wAll + " * (double)" + *x + ";");
  closeBlock();
  for (size_t d = 0; d < r; ++d)
    closeBlock();
  return bind(sample.getResult(), "(" + ct + ")" + sum);
}

/// One element of a roi_align, as the reference computes it: the region's
/// bin [ph, pw] of channel ch in the image its batch index names (out of range
/// is the call's error, the nearest image read meanwhile), sampled on a
/// gridH x gridW grid (sampling_ratio, or ceil(roi size / bins)) by bilinear
/// interpolation, averaged or maxed; in double.
FailureOr<std::string> KernelEmitter::roiAlignElement(RoiAlignOp roi, ArrayRef<std::string> index) {
  Value input = roi.getInput();
  std::string ct = computeType(elementOf(roi.getResult()));
  std::vector<std::string> inShape = dims(input);
  std::string height = inShape[2], width = inShape[3];
  std::string oh = std::to_string(roi.getOutputHeight()), ow = std::to_string(roi.getOutputWidth());
  FailureOr<std::string> batchValue = element(roi.getBatchIndices(), {index[0]});
  if (failed(batchValue))
    return failure();
  // No counting from the end here: a negative batch index is out of range.
  std::string batch = temp("b"), images = inShape[0];
  line("int64_t " + batch + " = (int64_t)" + *batchValue + ";");
  checkData(batch + " < 0 || " + batch + " >= " + images, "KILN_ERROR_INDEX_OUT_OF_RANGE");
  line(batch + " = kiln_clamp_index(" + batch + ", " + images + ");");
  std::vector<std::string> corner(4);
  for (int k = 0; k < 4; ++k) {
    FailureOr<std::string> c = element(roi.getRois(), {index[0], std::to_string(k)});
    if (failed(c))
      return failure();
    corner[k] = *c;
  }
  std::string scale = doubleLiteral(roi.getSpatialScale().convertToDouble());
  std::string offset = roi.getHalfPixel() ? "0.5" : "0.0";
  std::string sw = temp("sw"), sh = temp("sh"), rw = temp("rw"), rh = temp("rh"), bh = temp("bh"),
              bw = temp("bw"), gh = temp("gh"), gw = temp("gw"), acc = temp("acc"), first = temp("first");
  line("const double " + sw + " = (double)" + corner[0] + " * " + scale + " - " + offset + ";");
  line("const double " + sh + " = (double)" + corner[1] + " * " + scale + " - " + offset + ";");
  line("double " + rw + " = (double)" + corner[2] + " * " + scale + " - " + offset + " - " + sw + ";");
  line("double " + rh + " = (double)" + corner[3] + " * " + scale + " - " + offset + " - " + sh + ";");
  if (!roi.getHalfPixel()) {
    line(rw + " = kiln_max<double>(" + rw + ", 1.0);");
    line(rh + " = kiln_max<double>(" + rh + ", 1.0);");
  }
  line("const double " + bh + " = " + rh + " / " + oh + ".0, " + bw + " = " + rw + " / " + ow + ".0;");
  int64_t ratio = roi.getSamplingRatio();
  line("const int64_t " + gh + " = " +
       (ratio > 0 ? std::to_string(ratio) : "(int64_t)kiln_ceil(" + rh + " / " + oh + ".0)") + ";");
  line("const int64_t " + gw + " = " +
       (ratio > 0 ? std::to_string(ratio) : "(int64_t)kiln_ceil(" + rw + " / " + ow + ".0)") + ";");
  bool max = roi.getMode() == PoolKind::max;
  line("double " + acc + " = 0.0;");
  line("bool " + first + " = true;");
  std::string iy = temp("iy"), ix = temp("ix"), yy = temp("yy"), xx = temp("xx");
  openBlock("for (int64_t " + iy + " = 0; " + iy + " < " + gh + "; ++" + iy + ") {");
  openBlock("for (int64_t " + ix + " = 0; " + ix + " < " + gw + "; ++" + ix + ") {");
  line("double " + yy + " = " + sh + " + (double)" + index[2] + " * " + bh + " + ((double)" + iy +
       " + 0.5) * " + bh + " / (double)" + gh + ";");
  line("double " + xx + " = " + sw + " + (double)" + index[3] + " * " + bw + " + ((double)" + ix +
       " + 0.5) * " + bw + " / (double)" + gw + ";");
  // Four taps and weights; all zero when the point is off the image.
  std::string w = temp("w"), y0 = temp("y0"), x0 = temp("x0"), y1 = temp("y1"), x1 = temp("x1");
  line("double " + w + "[4] = {0.0, 0.0, 0.0, 0.0};");
  line("int64_t " + y0 + " = 0, " + x0 + " = 0, " + y1 + " = 0, " + x1 + " = 0;");
  openBlock("if (!(" + yy + " < -1.0 || " + yy + " > (double)" + height + " || " + xx + " < -1.0 || " +
            xx + " > (double)" + width + ")) {");
  line(yy + " = kiln_max<double>(" + yy + ", 0.0);");
  line(xx + " = kiln_max<double>(" + xx + ", 0.0);");
  line(y0 + " = (int64_t)" + yy + ";");
  line(x0 + " = (int64_t)" + xx + ";");
  line("if (" + y0 + " >= " + height + " - 1) { " + y0 + " = " + y1 + " = " + height + " - 1; " + yy +
       " = (double)" + y0 + "; } else { " + y1 + " = " + y0 + " + 1; }");
  line("if (" + x0 + " >= " + width + " - 1) { " + x0 + " = " + x1 + " = " + width + " - 1; " + xx +
       " = (double)" + x0 + "; } else { " + x1 + " = " + x0 + " + 1; }");
  line("const double ly = " + yy + " - (double)" + y0 + ", lx = " + xx + " - (double)" + x0 +
       ", hy = 1.0 - ly, hx = 1.0 - lx;");
  line(w + "[0] = hy * hx; " + w + "[1] = hy * lx; " + w + "[2] = ly * hx; " + w + "[3] = ly * lx;");
  closeBlock();
  std::vector<std::string> taps;
  for (auto [py, px] : {std::pair{y0, x0}, {y0, x1}, {y1, x0}, {y1, x1}}) {
    FailureOr<std::string> v = element(input, {batch, index[1], py, px});
    if (failed(v))
      return failure();
    taps.push_back(*v);
  }
  if (!max) {
    for (int k = 0; k < 4; ++k)
      line(acc + " += " + w + "[" + std::to_string(k) + "] * (double)" + taps[k] + ";");
  } else {
    std::string v = temp("v");
    line("double " + v + " = " + w + "[0] * (double)" + taps[0] + ";");
    for (int k = 1; k < 4; ++k)
      line(v + " = kiln_max_plain(" + v + ", " + w + "[" + std::to_string(k) + "] * (double)" + taps[k] + ");");
    line(acc + " = " + first + " ? " + v + " : kiln_max_plain(" + acc + ", " + v + ");");
    line(first + " = false;");
  }
  closeBlock();
  closeBlock();
  if (!max)
    line(acc + " /= (double)(" + gh + " * " + gw + " > 1 ? " + gh + " * " + gw + " : 1);");
  return bind(roi.getResult(), "(" + ct + ")" + acc);
}

/// One element of a col2im, gathered: the image pixel sums, in block-element
/// order as the reference adds them, the column entry of every block element
/// whose sliding position lands on it (at most one position per element).
FailureOr<std::string> KernelEmitter::col2ImElement(Col2ImOp op, ArrayRef<std::string> index) {
  ArrayRef<int64_t> image = op.getImageShape(), block = op.getBlockShape(), strides = op.getStrides(),
                    dilations = op.getDilations(), pads = op.getPads();
  size_t k = image.size();
  int64_t blockSize = 1;
  for (int64_t b : block)
    blockSize *= b;
  std::vector<int64_t> counts(k);
  for (size_t d = 0; d < k; ++d)
    counts[d] = (image[d] + pads[d] + pads[d + k] - (dilations[d] * (block[d] - 1) + 1)) / strides[d] + 1;
  std::string ct = computeType(elementOf(op.getResult()));
  std::string sum = temp("sum"), e = temp("e");
  line("double " + sum + " = 0.0;");
  openBlock("for (int64_t " + e + " = 0; " + e + " < " + std::to_string(blockSize) + "; ++" + e + ") {");
  std::vector<std::string> blockShape, blockIndex;
  for (int64_t b : block)
    blockShape.push_back(int64Literal(b));
  blockIndex = unravel(e, blockShape);
  std::string position = "0", inside = "true";
  for (size_t d = 0; d < k; ++d) {
    std::string shifted = temp("s"), pos = temp("pos");
    line("const int64_t " + shifted + " = " + index[2 + d] + " + " + int64Literal(pads[d]) + " - " +
         blockIndex[d] + " * " + int64Literal(dilations[d]) + ";");
    line("const int64_t " + pos + " = " + shifted + " / " + int64Literal(strides[d]) + ";");
    inside += " && " + shifted + " >= 0 && " + shifted + " % " + int64Literal(strides[d]) + " == 0 && " +
              pos + " < " + int64Literal(counts[d]);
    position = d == 0 ? pos : "(" + position + " * " + int64Literal(counts[d]) + " + " + pos + ")";
  }
  openBlock("if (" + inside + ") {");
  FailureOr<std::string> v = element(
      op.getInput(), {index[0], "(" + index[1] + " * " + int64Literal(blockSize) + " + " + e + ")", position});
  if (failed(v))
    return failure();
  line(sum + " += (double)" + *v + ";");
  closeBlock();
  closeBlock();
  return bind(op.getResult(), "(" + ct + ")" + sum);
}

/// The longest row (elements, fp32) a row kernel keeps in registers between
/// its passes: 16 values a thread at 128 threads.
constexpr int64_t kMaxCachedRow = 2048;

/// Threads per block of the runtime's launches (runtime/src/cuda: 256):
/// schedules that give each warp its own item state their work in blocks
/// of that many threads.
constexpr int64_t kBlockThreads = 256;

/// The most reduced elements a trailing reduction gives one warp (8 a lane)
/// rather than a block.
constexpr int64_t kMaxWarpReduction = 256;

/// The longest row of a known length a row kernel gives one warp, the row in
/// registers (8 values a lane), rather than a block.
constexpr int64_t kMaxWarpRow = 256;

/// The most values of a row one thread of the vector row path keeps in
/// registers (half that in double): its threads a row are the fewest (32,
/// 64, 128 or 256) that hold the row in that many a thread.
constexpr int64_t kMaxRowValuesPerThread = 16;

/// Det matrices up to this size live in registers (16 doubles); larger ones in
/// local memory.
constexpr int64_t kMaxRegisterDetRows = 4;

/// One determinant, as the reference computes it: the matrix into an array,
/// Gaussian elimination with partial pivoting in double, the product of the
/// pivots (negated per swap; 0 at a zero pivot).
FailureOr<std::string> KernelEmitter::detElement(DetOp op, ArrayRef<std::string> index) {
  SymShape shape = getSymShape(op.getInput().getType());
  std::optional<int64_t> m = getConstantDimValue(shape.back());
  if (!m || *m > kMaxDetRows)
    return unsupported(op, "needs a known matrix size of at most 16");
  std::string ct = computeType(elementOf(op.getResult()));
  std::string a = temp("a"), d = temp("det"), M = std::to_string(*m);
  line("double " + a + "[" + std::to_string(std::max<int64_t>(*m * *m, 1)) + "];");
  // Up to 4x4 every loop unrolls, so every index is a constant and the
  // matrix lives in registers; larger matrices need it in local memory.
  perThreadMatrix = *m > kMaxRegisterDetRows;
  std::string unroll = perThreadMatrix ? "" : "KILN_UNROLL ";
  std::string i = temp("i"), j = temp("j");
  openBlock(unroll + "for (int64_t " + i + " = 0; " + i + " < " + M + "; ++" + i + ") {");
  openBlock(unroll + "for (int64_t " + j + " = 0; " + j + " < " + M + "; ++" + j + ") {");
  std::vector<std::string> at(index.begin(), index.end());
  at.push_back(i);
  at.push_back(j);
  FailureOr<std::string> v = element(op.getInput(), at);
  if (failed(v))
    return failure();
  line(a + "[" + i + " * " + M + " + " + j + "] = (double)" + *v + ";");
  closeBlock();
  closeBlock();
  // Gaussian elimination with partial pivoting, written so that every index
  // is a loop counter: the pivot row is swapped in by a test per row, not by
  // indexing with it.
  line("double " + d + " = 1.0;");
  openBlock(unroll + "for (int64_t col = 0; col < " + M + "; ++col) {");
  line("int64_t pivot = col;");
  line("double best = kiln_abs(" + a + "[col * " + M + " + col]);");
  line(unroll + "for (int64_t r = col + 1; r < " + M + "; ++r) if (kiln_abs(" + a + "[r * " + M +
       " + col]) > best) { best = kiln_abs(" + a + "[r * " + M + " + col]); pivot = r; }");
  line("if (best == 0.0) { " + d + " = 0.0; break; }");
  line("if (pivot != col) { " + d + " = -" + d + "; " + unroll + "for (int64_t r = col + 1; r < " + M +
       "; ++r) if (r == pivot) { " + unroll + "for (int64_t c = 0; c < " + M + "; ++c) { const double t = " +
       a + "[col * " + M + " + c]; " + a + "[col * " + M + " + c] = " + a + "[r * " + M + " + c]; " + a +
       "[r * " + M + " + c] = t; } } }");
  line(d + " *= " + a + "[col * " + M + " + col];");
  line(unroll + "for (int64_t r = col + 1; r < " + M + "; ++r) { const double f = " + a + "[r * " + M +
       " + col] / " + a + "[col * " + M + " + col]; " + unroll + "for (int64_t c = col; c < " + M + "; ++c) " +
       a + "[r * " + M + " + c] -= f * " + a + "[col * " + M + " + c]; }");
  closeBlock();
  return bind(op.getResult(), "(" + ct + ")" + d);
}

/// One element of a gather_nd: the index tuple at the result's leading
/// position picks data's dims batch_dims..batch_dims+q; the rest of the index
/// walks the slice it names.
FailureOr<std::string> KernelEmitter::gatherNdElement(GatherNDOp gather, ArrayRef<std::string> index) {
  Value data = gather.getData(), indices = gather.getIndices();
  std::string ct = computeType(elementOf(gather.getResult()));
  SymShape dataDims = getSymShape(data.getType());
  SymShape indexDims = getSymShape(indices.getType());
  std::optional<int64_t> q = getConstantDimValue(indexDims.back());
  if (!q)
    return unsupported(gather, "needs index tuples of a known length");
  size_t batch = static_cast<size_t>(gather.getBatchDims());
  size_t leading = indexDims.size() - 1;
  std::vector<std::string> in(index.begin(), index.begin() + batch);
  std::vector<std::string> tuple(index.begin(), index.begin() + leading);
  tuple.push_back("");
  for (int64_t j = 0; j < *q; ++j) {
    tuple.back() = std::to_string(j);
    FailureOr<std::string> k = element(indices, tuple);
    if (failed(k))
      return failure();
    in.push_back(gatherPosition(*k, dataDims[batch + j]));
  }
  in.insert(in.end(), index.begin() + leading, index.end());
  return gatheredElement(data, in, ArrayRef<DimExpr>(dataDims).slice(batch, *q), ct);
}

/// `current` combined with an update by a scatter's reduction, as the
/// reference does (integers wrapping; max/min as std::max/std::min).
std::string scatterCombine(ScatterReduction reduction, const std::string &ct, bool isF,
                           const std::string &current, const std::string &update) {
  const std::string &a = current, &b = update;
  switch (reduction) {
  case ScatterReduction::none:
    return b;
  case ScatterReduction::add:
    return isF ? "(" + a + " + " + b + ")" : "(" + ct + ")((uint64_t)" + a + " + (uint64_t)" + b + ")";
  case ScatterReduction::mul:
    return isF ? "(" + a + " * " + b + ")" : "(" + ct + ")((uint64_t)" + a + " * (uint64_t)" + b + ")";
  case ScatterReduction::max:
    return "(" + a + " < " + b + " ? " + b + " : " + a + ")";
  case ScatterReduction::min:
    return "(" + b + " < " + a + " ? " + b + " : " + a + ")";
  }
  return b;
}

LogicalResult KernelEmitter::combineUpdate(Value updates, ArrayRef<std::string> at,
                                          ScatterReduction reduction, Type t,
                                          const std::string &acc) {
  FailureOr<std::string> update = element(updates, at);
  if (failed(update))
    return failure();
  line(acc + " = " + scatterCombine(reduction, computeType(t), isFloatType(t), acc, *update) + ";");
  return success();
}

/// One element of a scatter_elements, gathered instead of scattered: the
/// element of data, combined in order with every update along the axis whose
/// index names this position (the last one wins for `none`, as in the
/// reference's sequential loop). An output element reads the indices of its
/// line along the axis: updates.shape[axis] reads, fine for the short update
/// axes exported models scatter along.
FailureOr<std::string> KernelEmitter::scatterElementsElement(ScatterElementsOp scatter,
                                                             ArrayRef<std::string> index) {
  Value result = scatter.getResult();
  Type t = elementOf(result);
  std::string ct = computeType(t);
  int64_t rank = index.size();
  int64_t axis = normalizedAxis(static_cast<int64_t>(scatter.getAxis()), rank);
  FailureOr<std::string> initial = element(scatter.getData(), index);
  if (failed(initial))
    return failure();
  std::string acc = temp("acc"), u = temp("u");
  line(ct + " " + acc + " = " + *initial + ";");
  std::vector<std::string> updateShape = dims(scatter.getUpdates());
  SymShape dataDims = getSymShape(scatter.getData().getType());
  SymShape updateDims = getSymShape(scatter.getUpdates().getType());
  // Positions past the updates' extent along another dim receive nothing.
  std::string covered = "true";
  for (int64_t d = 0; d < rank; ++d)
    if (d != axis && updateDims[d] != dataDims[d])
      covered += " && " + index[d] + " < " + updateShape[d];
  openBlock("if (" + covered + ") {");
  openBlock("for (int64_t " + u + " = 0; " + u + " < " + updateShape[axis] + "; ++" + u + ") {");
  std::vector<std::string> at(index.begin(), index.end());
  at[axis] = u;
  FailureOr<std::string> k = element(scatter.getIndices(), at);
  if (failed(k))
    return failure();
  std::string kk = gatherPosition(*k, dataDims[axis]);
  openBlock("if (" + kk + " == " + index[axis] + ") {");
  if (failed(combineUpdate(scatter.getUpdates(), at, scatter.getReduction(), t, acc)))
    return failure();
  closeBlock();
  closeBlock();
  closeBlock();
  return acc;
}

/// One element of a scatter_nd, gathered: the element of data combined in order
/// with the update slice of every index tuple that names this element's
/// leading q dims. Each element reads every tuple (tuples x q index reads).
FailureOr<std::string> KernelEmitter::scatterNdElement(ScatterNDOp scatter,
                                                       ArrayRef<std::string> index) {
  Value result = scatter.getResult(), indices = scatter.getIndices();
  Type t = elementOf(result);
  std::string ct = computeType(t);
  SymShape dataDims = getSymShape(scatter.getData().getType());
  SymShape indexDims = getSymShape(indices.getType());
  std::optional<int64_t> q = getConstantDimValue(indexDims.back());
  if (!q)
    return unsupported(scatter, "needs index tuples of a known length");
  FailureOr<std::string> initial = element(scatter.getData(), index);
  if (failed(initial))
    return failure();
  std::string acc = temp("acc"), tupleVar = temp("tuple"), matches = temp("match");
  line(ct + " " + acc + " = " + *initial + ";");
  std::vector<std::string> indexShape = dims(indices);
  std::vector<std::string> leadingShape(indexShape.begin(), indexShape.end() - 1);
  openBlock("for (int64_t " + tupleVar + " = 0; " + tupleVar + " < " + product(leadingShape) + "; ++" +
            tupleVar + ") {");
  std::vector<std::string> tuple = unravel(tupleVar, leadingShape);
  tuple.push_back("");
  line("bool " + matches + " = true;");
  for (int64_t j = 0; j < *q; ++j) {
    tuple.back() = std::to_string(j);
    FailureOr<std::string> k = element(indices, tuple);
    if (failed(k))
      return failure();
    std::string kk = gatherPosition(*k, dataDims[j]);
    line(matches + " = " + matches + " && " + kk + " == " + index[j] + ";");
  }
  openBlock("if (" + matches + ") {");
  std::vector<std::string> at(tuple.begin(), tuple.end() - 1);
  at.insert(at.end(), index.begin() + *q, index.end());
  if (failed(combineUpdate(scatter.getUpdates(), at, scatter.getReduction(), t, acc)))
    return failure();
  closeBlock();
  closeBlock();
  return acc;
}

FailureOr<std::string> KernelEmitter::elementOfOp(Operation *op, Value v,
                                                  ArrayRef<std::string> index) {
  Type t = elementOf(v);
  std::string ct = computeType(t);
  bool isF = isFloatType(t);
  auto operandElement = [&](unsigned i) {
    return element(op->getOperand(i), broadcastIndex(op->getOperand(i), v, index));
  };
  if (auto c = dyn_cast<CompareOp>(op)) {
    FailureOr<std::string> a = operandElement(0), b = failed(a) ? a : operandElement(1);
    if (failed(a) || failed(b))
      return failure();
    static const char *ops[] = {"==", "!=", "<", "<=", ">", ">="};
    return bind(v, "(" + *a + " " + ops[static_cast<int>(c.getDirection())] + " " + *b + ")");
  }
  if (isa<SelectOp>(op)) {
    FailureOr<std::string> c = operandElement(0);
    FailureOr<std::string> a = failed(c) ? c : operandElement(1);
    FailureOr<std::string> b = failed(a) ? a : operandElement(2);
    if (failed(b))
      return failure();
    return bind(v, "(" + *c + " ? " + *a + " : " + *b + ")");
  }
  if (auto cast = dyn_cast<CastOp>(op)) {
    FailureOr<std::string> x = operandElement(0);
    if (failed(x))
      return failure();
    Type from = elementOf(cast.getInput());
    if (t.isInteger(1))
      return bind(v, "(" + *x + " != 0)");
    if (isF) {
      std::string e = "(" + ct + ")(" + *x + ")";
      if (t.isF16())
        e = "kiln_load(kiln_to_f16(" + e + "))";
      else if (t.isBF16())
        e = "kiln_load(kiln_to_bf16(" + e + "))";
      else if (std::string f8 = float8Name(t); !f8.empty())
        e = "kiln_load(kiln_to_" + f8 + "(" + e + ", " +
            (cast.getSaturate() ? "true" : "false") + "))";
      return bind(v, e);
    }
    if (isFloatType(from))
      return bind(v, "kiln_f2i<" + ct + ">(" + *x + ")");
    return bind(v, "(" + ct + ")(" + *x + ")");
  }
  if (auto bc = dyn_cast<BitcastOp>(op)) {
    // Through the storage types: the value's bits as stored, read back as the new
    // type (f16/bf16/float8 convert on both sides).
    FailureOr<std::string> x = operandElement(0);
    if (failed(x))
      return failure();
    Type from = elementOf(bc.getInput());
    return bind(v, "kiln_load(kiln_bitcast<" + storageType(t) + ">(" + store(from, *x) + "))");
  }
  // Unary and binary elementwise ops: their rows in the op table spell them.
  if (std::optional<ops::UnaryFn> fn = unaryFnOf(op)) {
    FailureOr<std::string> x = operandElement(0);
    if (failed(x))
      return failure();
    return bind(v, expandCudaTemplate(ops::cudaTemplate(*fn, isF), {{'x', *x}}, ct));
  }
  if (std::optional<ops::BinaryFn> fn = binaryFnOf(op)) {
    FailureOr<std::string> a = operandElement(0), b = failed(a) ? a : operandElement(1);
    if (failed(a) || failed(b))
      return failure();
    // An integer divisor that is a nonzero constant needs no check.
    if (!isF && ops::intDivides(*fn)) {
      dividesData = true;
      DenseElementsAttr divisor;
      if (!matchPattern(op->getOperand(1), m_Constant(&divisor)) || !divisor.isSplat() ||
          divisor.getSplatValue<APInt>().isZero())
        checkData(*b + " == 0", "KILN_ERROR_DIVISION_BY_ZERO");
    }
    return bind(v, expandCudaTemplate(ops::cudaTemplate(*fn, isF), {{'a', *a}, {'b', *b}}, ct));
  }
  if (auto constant = dyn_cast<ConstantOp>(op)) {
    auto dense = dyn_cast<DenseElementsAttr>(constant.getValue());
    if (!dense || !dense.isSplat())
      return unsupported(op, "is not a splat (it should be a kernel operand)");
    return scalarLiteral(t, dense.getSplatValue<Attribute>());
  }
  if (auto range = dyn_cast<RangeOp>(op)) {
    // As the reference: floats in double, integers wrapping.
    FailureOr<std::string> start = element(range.getStart(), {});
    FailureOr<std::string> delta = failed(start) ? start : element(range.getDelta(), {});
    if (failed(delta))
      return failure();
    if (isF)
      return bind(v, "(" + ct + ")((double)" + *start + " + (double)" + index[0] + " * (double)" +
                         *delta + ")");
    return bind(v, "(" + ct + ")((uint64_t)" + *start + " + (uint64_t)" + index[0] +
                       " * (uint64_t)" + *delta + ")");
  }
  if (auto sc = dyn_cast<SymbolicConstantOp>(op)) {
    // A shape vector in a kernel (Tile's repeats times the input's dims, say):
    // element k is its k-th dim expression, symbols read as kernel parameters.
    ArrayRef<DimExpr> values = sc.getValue().getDims();
    if (index.empty())
      return bind(v, "(" + ct + ")" + dim(values.front()));
    std::string expr = "(" + ct + ")" + dim(values.back());
    for (size_t k = values.size() - 1; k-- > 0;)
      expr = "(" + index[0] + " == " + std::to_string(k) + " ? (" + ct + ")" + dim(values[k]) +
             " : " + expr + ")";
    return bind(v, expr);
  }
  if (auto b = dyn_cast<BroadcastToOp>(op))
    return element(b.getInput(), broadcastIndex(b.getInput(), v, index));
  if (auto tr = dyn_cast<TransposeOp>(op)) {
    std::vector<std::string> in(index.size());
    for (auto [d, p] : llvm::enumerate(tr.getPermutation()))
      in[p] = index[d];
    return element(tr.getInput(), in);
  }
  if (auto r = dyn_cast<ReshapeOp>(op)) {
    std::vector<std::string> outShape = dims(v), inShape = dims(r.getInput());
    // Dims the reshape keeps, splits or merges map group by group: a split
    // dim's index is its parts' linear position, a merged one's indices come
    // from dividing by the parts only (no divide for a head split).
    std::vector<std::array<size_t, 4>> groups = {{0, outShape.size(), 0, inShape.size()}};
    if (auto found = reshapeGroups(getSymShape(v.getType()), getSymShape(r.getInput().getType())))
      groups = std::move(*found);
    std::vector<std::string> in;
    ArrayRef<std::string> outIndex(index), outDims(outShape), inDims(inShape);
    for (auto [ob, oe, ib, ie] : groups) {
      std::string linear = linearize(outIndex.slice(ob, oe - ob), outDims.slice(ob, oe - ob));
      if (ie - ib == 1) {
        in.push_back(linear);
        continue;
      }
      std::string l = temp("l");
      line("const int64_t " + l + " = " + linear + ";");
      for (std::string &i : unravel(l, inDims.slice(ib, ie - ib)))
        in.push_back(std::move(i));
    }
    return element(r.getInput(), in);
  }
  if (auto s = dyn_cast<SliceOp>(op)) {
    std::optional<SymShape> starts = getKnownElements(s.getStarts());
    std::optional<SymShape> steps = getKnownElements(s.getSteps());
    if (!starts || !steps)
      return unsupported(op, "needs constant starts and steps");
    std::vector<std::string> inShape = dims(s.getInput()), in;
    for (size_t d = 0; d < index.size(); ++d) {
      if (!(*starts)[d] || !(*steps)[d])
        return unsupported(op, "needs constant starts and steps");
      std::string step = dim((*steps)[d]);
      in.push_back("(kiln_slice_start(" + dim((*starts)[d]) + ", " + step + ", " + inShape[d] +
                   ") + " + index[d] + " * " + step + ")");
    }
    return element(s.getInput(), in);
  }
  if (auto c = dyn_cast<ConcatOp>(op)) {
    int64_t rank = index.size();
    int64_t axis = normalizedAxis(static_cast<int64_t>(c.getAxis()), rank);
    std::string result = temp();
    line(ct + " " + result + ";");
    // Each input's end offset is a variable of its own, defined from the
    // previous one: code linear in the inputs (spelling the sums out would be
    // quadratic; 500 inputs made hundreds of megabytes of C).
    std::vector<std::string> ends;
    std::string offset = "((int64_t)0)";
    for (Value input : c.getInputs()) {
      std::string end = temp("end");
      line("const int64_t " + end + " = " + offset + " + " +
           dim(getSymShape(input.getType())[axis]) + ";");
      ends.push_back(end);
      offset = end;
    }
    offset = "((int64_t)0)";
    for (auto [k, input] : llvm::enumerate(c.getInputs())) {
      std::string next = ends[k];
      bool last = k + 1 == c.getInputs().size();
      openBlock((k ? "} else " : "") + std::string(last ? "{" : "if (" + index[axis] + " < " + next + ") {"));
      std::vector<std::string> in(index.begin(), index.end());
      in[axis] = "(" + index[axis] + " - " + offset + ")";
      FailureOr<std::string> e = element(input, in);
      if (failed(e))
        return failure();
      line(result + " = " + *e + ";");
      popScope();
      --indent;
      offset = next;
    }
    line("}");
    return result;
  }
  // Ops whose element is a loop or a search of their own (KernelEmitter::*Element).
  if (isa<PoolOp, MatmulOp, ResizeOp, GatherNDOp, GridSampleOp, RoiAlignOp, ScatterElementsOp,
          ScatterNDOp, Col2ImOp, DetOp>(op))
    return llvm::TypeSwitch<Operation *, FailureOr<std::string>>(op)
        .Case([&](PoolOp o) { return poolElement(o, index); })
        .Case([&](MatmulOp o) { return matmulElement(o, index); })
        .Case([&](ResizeOp o) { return resizeElement(o, index); })
        .Case([&](GatherNDOp o) { return gatherNdElement(o, index); })
        .Case([&](GridSampleOp o) { return gridSampleElement(o, index); })
        .Case([&](RoiAlignOp o) { return roiAlignElement(o, index); })
        .Case([&](ScatterElementsOp o) { return scatterElementsElement(o, index); })
        .Case([&](ScatterNDOp o) { return scatterNdElement(o, index); })
        .Case([&](Col2ImOp o) { return col2ImElement(o, index); })
        .Case([&](DetOp o) { return detElement(o, index); });
  if (auto p = dyn_cast<PadOp>(op)) {
    std::optional<SymShape> pads = getKnownElements(p.getPads());
    if (!pads)
      return unsupported(op, "needs constant pads");
    std::vector<std::string> inShape = dims(p.getInput()), in;
    std::string inside = "true";
    for (size_t d = 0; d < index.size(); ++d) {
      std::string k = "(" + index[d] + " - " + dim((*pads)[d]) + ")";
      switch (p.getMode()) {
      case PadMode::constant:
        inside += " && " + k + " >= 0 && " + k + " < " + inShape[d];
        in.push_back(k);
        break;
      case PadMode::edge:
        in.push_back("kiln_clamp_index(" + k + ", " + inShape[d] + ")");
        break;
      case PadMode::reflect:
        in.push_back("kiln_reflect_index(" + k + ", " + inShape[d] + ")");
        break;
      case PadMode::wrap:
        in.push_back("kiln_floormod(" + k + ", " + inShape[d] + ")");
        break;
      }
    }
    if (p.getMode() != PadMode::constant)
      return element(p.getInput(), in);
    FailureOr<std::string> fill = element(p.getValue(), {});
    if (failed(fill))
      return failure();
    std::string result = temp();
    line(ct + " " + result + " = " + *fill + ";");
    openBlock("if (" + inside + ") {");
    FailureOr<std::string> e = element(p.getInput(), in);
    if (failed(e))
      return failure();
    line(result + " = " + *e + ";");
    closeBlock();
    return result;
  }
  if (auto g = dyn_cast<GatherOp>(op)) {
    int64_t rank = cast<RankedTensorType>(g.getData().getType()).getRank();
    int64_t axis = normalizedAxis(static_cast<int64_t>(g.getAxis()), rank);
    int64_t ri = cast<RankedTensorType>(g.getIndices().getType()).getRank();
    std::vector<std::string> at(index.begin() + axis, index.begin() + axis + ri);
    FailureOr<std::string> k = element(g.getIndices(), at);
    if (failed(k))
      return failure();
    DimExpr n = getSymShape(g.getData().getType())[axis];
    std::string kk = gatherPosition(*k, n);
    std::vector<std::string> in(index.begin(), index.begin() + axis);
    in.push_back(kk);
    in.insert(in.end(), index.begin() + axis + ri, index.end());
    return gatheredElement(g.getData(), in, n, ct);
  }
  if (auto g = dyn_cast<GatherElementsOp>(op)) {
    int64_t rank = index.size();
    int64_t axis = normalizedAxis(static_cast<int64_t>(g.getAxis()), rank);
    FailureOr<std::string> k = element(g.getIndices(), index);
    if (failed(k))
      return failure();
    std::vector<std::string> in(index.begin(), index.end());
    DimExpr n = getSymShape(g.getData().getType())[axis];
    in[axis] = gatherPosition(*k, n);
    return gatheredElement(g.getData(), in, n, ct);
  }
  return unsupported(op, "has no CUDA C lowering yet");
}

/// A transpose of a kernel input that moves the input's innermost dim (the
/// result's innermost is another input dim): the tiled schedule applies.
bool isTiledTranspose(Value root) {
  auto t = dyn_cast_or_null<TransposeOp>(root.getDefiningOp());
  if (!t || !isa<BlockArgument>(t.getInput()))
    return false;
  ArrayRef<int64_t> perm = t.getPermutation();
  int64_t r = perm.size();
  return r >= 2 && perm[r - 1] != r - 1;
}

LogicalResult KernelEmitter::emitTiledTranspose(TransposeOp root) {
  // 32x32 tiles through shared memory (one column of padding against bank
  // conflicts) over two input dims: `a`, which becomes the result's innermost,
  // and the input's innermost. Reads walk the input's innermost dim and
  // writes the result's, so both are coalesced; every other dim is a batch
  // of tiles (NCHW -> NHWC tiles C against W for each n, h; a head split's
  // [B, S, H, D] -> [B, H, D, S] tiles S against D). A block per tile; any
  // block size.
  blockPerItem = true;
  Value input = root.getInput();
  std::vector<std::string> shape = dims(input), outShape = dims(root.getResult());
  ArrayRef<int64_t> perm = root.getPermutation();
  size_t r = shape.size(), a = static_cast<size_t>(perm[r - 1]), c = r - 1;
  std::string T = storageType(elementOf(input));
  std::vector<std::string> batchShape;
  SymShape d = getSymShape(input.getType());
  SmallVector<DimExpr> batchDims;
  for (size_t k = 0; k < r; ++k)
    if (k != a && k != c) {
      batchShape.push_back(shape[k]);
      batchDims.push_back(d[k]);
    }
  workItems = canonicalizeDim(productOf(batchDims) * d[a].ceilDiv(32) * d[c].ceilDiv(32));
  line("__shared__ " + T + " tile[32][33];");
  line("const int64_t batch = " + product(batchShape) + ";");
  line("const int64_t A = " + shape[a] + ", C = " + shape[c] + ";");
  line("const int64_t tilesA = (A + 31) / 32, tilesC = (C + 31) / 32;");
  std::string tilesA = "((" + shape[a] + " + 31) / 32)", tilesC = "((" + shape[c] + " + 31) / 32)";
  // The tiles' loops, moving `width` elements at a time along the input's
  // innermost dim as it is read and along the result's as it is written.
  auto tiles = [&](int width) {
    std::string W = std::to_string(width), perRow = std::to_string(32 / width);
    std::string vec = "kiln_vec<" + T + ", " + W + ">";
    openBlock("for (int64_t t = blockIdx.x; t < batch * tilesA * tilesC; t += gridDim.x) {");
    line("const int64_t b = " + quotient("t", "(" + tilesA + " * " + tilesC + ")") + ";");
    line("const int64_t ac = t - b * tilesA * tilesC;");
    line("const int64_t ta = " + quotient("ac", tilesC) + ", tc = ac - ta * tilesC;");
    // The tile's batch coordinates, then the input index of (row, col).
    std::vector<std::string> batchIndex = unravel("b", batchShape);
    auto inputIndex = [&](const std::string &row, const std::string &col) {
      std::vector<std::string> index;
      for (size_t k = 0, next = 0; k < r; ++k)
        index.push_back(k == a ? row : k == c ? col : batchIndex[next++]);
      return index;
    };
    openBlock("for (int64_t e = threadIdx.x; e < 32 * " + perRow + "; e += blockDim.x) {");
    line("const int64_t i = e / " + perRow + ", j = e % " + perRow + " * " + W +
         ", row = ta * 32 + i, col = tc * 32 + j;");
    std::string from = "in0 + " + linearize(inputIndex("row", "col"), shape);
    if (width == 1) {
      line("if (row < A && col < C) tile[i][j] = *(" + from + ");");
    } else {
      openBlock("if (row < A && col < C) {");
      line("const " + vec + " v = *reinterpret_cast<const " + vec + " *>(" + from + ");");
      line("KILN_UNROLL for (int l = 0; l < " + W + "; ++l) tile[i][j + l] = v.x[l];");
      closeBlock();
    }
    closeBlock();
    line("__syncthreads();");
    openBlock("for (int64_t e = threadIdx.x; e < 32 * " + perRow + "; e += blockDim.x) {");
    line("const int64_t i = e / " + perRow + ", j = e % " + perRow + " * " + W +
         ", col = tc * 32 + i, row = ta * 32 + j;");
    std::vector<std::string> in = inputIndex("row", "col"), outIndex;
    for (size_t k = 0; k < r; ++k)
      outIndex.push_back(in[perm[k]]);
    std::string to = "out + " + linearize(outIndex, outShape);
    if (width == 1) {
      line("if (row < A && col < C) *(" + to + ") = tile[j][i];");
    } else {
      openBlock("if (row < A && col < C) {");
      // kiln_store_vec: a plain vector store of lanes read from shared
      // memory comes out a lane at a time (the SASS lint's vector rule saw
      // four STG.E).
      line(vec + " v;");
      for (int l = 0; l < width; ++l)
        line("v.x[" + std::to_string(l) + "] = tile[j + " + std::to_string(l) + "][i];");
      line("kiln_store_vec(" + to + ", v);");
      closeBlock();
    }
    closeBlock();
    line("__syncthreads();");
    closeBlock();
  };
  // 128-bit accesses when both tiled dims are known multiples of the width
  // (a vector never crosses the edge of either dim, and every vector starts
  // at a multiple of the width: the other strides are multiples of the
  // innermost dims) and the buffers are aligned (checked at run time). The
  // padded shared-memory rows keep both directions free of bank conflicts:
  // a warp's 32 accesses of one lane fall on 32 banks.
  int width = 16 / static_cast<int>(storageBytes(elementOf(input)));
  std::optional<int64_t> staticA = getConstantDimValue(d[a]), staticC = getConstantDimValue(d[c]);
  if (width > 1 && staticA && staticC && *staticA % width == 0 && *staticC % width == 0) {
    std::string bytes = "sizeof(" + T + ") * " + std::to_string(width);
    openBlock("if (kiln_aligned(in0, " + bytes + ") && kiln_aligned(out, " + bytes + ")) {");
    tiles(width);
    line("return;");
    closeBlock();
    vectorWidth = width;
    vectorLoads = 1;
  }
  tiles(1);
  return success();
}

LogicalResult KernelEmitter::emitPointwise(Value root) {
  if (isTiledTranspose(root) &&
      cast<BlockArgument>(cast<TransposeOp>(root.getDefiningOp()).getInput()).getArgNumber() == 0)
    return emitTiledTranspose(cast<TransposeOp>(root.getDefiningOp()));
  std::vector<std::string> shape = dims(root);
  line("const int64_t n = " + product(shape) + ";");
  Block &body = kernel.getBody().front();
  std::string outType = storageType(elementOf(root));
  // 128-bit vector loads and stores when every input is read at the result's
  // position: whole vectors first, then the scalar loop takes the elements
  // after the last whole vector (all of them when a buffer is not aligned,
  // which is checked at run time). Not for a result known to hold less than
  // one vector, where the vector loop would never run.
  std::string scalarStart = "0";
  std::optional<int64_t> staticElements =
      getConstantDimValue(productOf(getSymShape(root.getType())));
  // The narrowest buffer moves 16 bytes per access; wider ones several 16-byte
  // accesses (a cast from f16 to f32 loads 8 halves, stores 2 x 4 floats).
  unsigned narrowest = storageBytes(elementOf(root));
  for (BlockArgument arg : body.getArguments())
    narrowest = std::min(narrowest, storageBytes(elementOf(arg)));
  int width = 16 / static_cast<int>(narrowest);
  // Inputs that broadcast (a bias, a per-channel scale, a mask) take the
  // vector path too when every vector stays inside one innermost row: the
  // innermost dim a multiple of the width. Inputs read one scalar per vector
  // do not count towards the width.
  bool identity = isIdentityPointwise(kernel, root);
  std::optional<std::map<unsigned, int>> reads;
  if (!identity)
    if ((reads = broadcastPointwiseReads(kernel, root))) {
      narrowest = storageBytes(elementOf(root));
      for (BlockArgument arg : body.getArguments())
        if ((*reads)[arg.getArgNumber()] != kReadBroadcast)
          narrowest = std::min(narrowest, storageBytes(elementOf(arg)));
      width = 16 / static_cast<int>(narrowest);
      if (*getConstantDimValue(getSymShape(root.getType()).back()) % width != 0)
        reads.reset();
    }
  if ((identity || reads) &&
      (!staticElements || *staticElements >= width)) {
    std::string W = std::to_string(width);
    vectorWidth = width;
    // Sized for the vector path (W elements per thread); the scalar fallback
    // strides over the same grid.
    workItems = canonicalizeDim(productOf(getSymShape(root.getType())).ceilDiv(width));
    std::string aligned = "kiln_aligned(out, sizeof(" + outType + ") * " + W + ")";
    for (BlockArgument arg : body.getArguments())
      if (!reads || (*reads)[arg.getArgNumber()] != kReadBroadcast)
        aligned += " && kiln_aligned(in" + std::to_string(arg.getArgNumber()) + ", sizeof(" +
                   storageType(elementOf(arg)) + ") * " + W + ")";
    line("int64_t vectorized = 0; // elements the vector loop covers");
    line("if (" + aligned + ") {");
    ++indent;
    line("for (int64_t vi = kiln_thread_index(); vi < n / " + W + "; vi += kiln_thread_count()) {");
    ++indent;
    for (BlockArgument arg : body.getArguments()) {
      if (reads && (*reads)[arg.getArgNumber()] != kReadSame) {
        broadcastReads[arg.getArgNumber()] = (*reads)[arg.getArgNumber()];
        vectorLoads += (*reads)[arg.getArgNumber()] == kReadContiguous;
        continue;
      }
      std::string t = storageType(elementOf(arg)), name = temp("v");
      line("const kiln_vec<" + t + ", " + W + "> " + name + " = *reinterpret_cast<const kiln_vec<" +
           t + ", " + W + "> *>(in" + std::to_string(arg.getArgNumber()) + " + vi * " + W + ");");
      vectorInputs[arg.getArgNumber()] = name;
      ++vectorLoads;
    }
    broadcastWidth = width;
    laneZeroReads.clear();
    line("kiln_vec<" + outType + ", " + W + "> result;");
    for (lane = 0; lane < width; ++lane) {
      pushScope();
      std::vector<std::string> index =
          unravel("vi * " + W + " + " + std::to_string(lane), shape);
      FailureOr<std::string> v = element(root, index);
      if (failed(v))
        return failure();
      line("result.x[" + std::to_string(lane) + "] = " + store(elementOf(root), *v) + ";");
      popScope();
    }
    vectorInputs.clear();
    broadcastReads.clear();
    laneZeroReads.clear();
    lane = 0;
    line("*reinterpret_cast<kiln_vec<" + outType + ", " + W + "> *>(out + vi * " + W + ") = result;");
    --indent;
    line("}");
    line("vectorized = n / " + W + " * " + W + ";");
    --indent;
    line("}");
    scalarStart = "vectorized";
  }
  openBlock("for (int64_t i = " + (scalarStart == "0" ? "" : scalarStart + " + ") +
            "kiln_thread_index(); i < n; i += kiln_thread_count()) {");
  std::vector<std::string> index = unravel("i", shape);
  FailureOr<std::string> v = element(root, index);
  if (failed(v))
    return failure();
  line("out[i] = " + store(elementOf(root), *v) + ";");
  closeBlock();
  return success();
}

LogicalResult KernelEmitter::emitReduction(ReduceOp root) {
  Value input = root.getInput(), result = root.getResult();
  int64_t rank = cast<RankedTensorType>(input.getType()).getRank();
  std::vector<bool> reduced(rank, false);
  for (int64_t a : root.getAxes())
    reduced[a < 0 ? a + rank : a] = true;
  std::vector<std::string> inShape = dims(input), outShape = dims(result), reducedShape;
  bool trailing = true;
  for (int64_t d = 0; d < rank; ++d) {
    if (reduced[d])
      reducedShape.push_back(inShape[d]);
    else if (d > 0 && reduced[d - 1])
      trailing = false;
  }
  blockPerItem = trailing && !reducedShape.empty();
  Type t = elementOf(result);
  std::string acc = computeType(t);
  bool isF = isFloatType(t);
  ReduceKind kind = root.getKind();
  std::string identity, combine;
  switch (kind) {
  case ReduceKind::sum:
  case ReduceKind::mean:
    identity = "(" + acc + ")0";
    combine = isF ? "a + b" : "(" + acc + ")((uint64_t)a + (uint64_t)b)";
    break;
  case ReduceKind::prod:
    identity = "(" + acc + ")1";
    combine = isF ? "a * b" : "(" + acc + ")((uint64_t)a * (uint64_t)b)";
    break;
  case ReduceKind::max:
    identity = isF ? "(" + acc + ")kiln_f32_bits(0xff800000u)"
                   : "(" + acc + ")(" + acc + "(-1) < " + acc + "(0) ? (" + acc + ")((uint64_t)1 << " +
                         std::to_string(t.getIntOrFloatBitWidth() - 1) + ") : (" + acc + ")0)";
    combine = "kiln_max<" + acc + ">(a, b)";
    break;
  case ReduceKind::min:
    identity = isF ? "(" + acc + ")kiln_f32_bits(0x7f800000u)"
                   : "(" + acc + ")(" + acc + "(-1) < " + acc + "(0) ? (" + acc + ")(((uint64_t)1 << " +
                         std::to_string(t.getIntOrFloatBitWidth() - 1) + ") - 1) : (" + acc + ")(~0ULL))";
    combine = "kiln_min<" + acc + ">(a, b)";
    break;
  case ReduceKind::any:
    identity = "false";
    combine = "a || b";
    break;
  case ReduceKind::all:
    identity = "true";
    combine = "a && b";
    break;
  }
  if (t.isInteger(1) && (kind == ReduceKind::max || kind == ReduceKind::min)) {
    identity = kind == ReduceKind::max ? "false" : "true";
    combine = kind == ReduceKind::max ? "a || b" : "a && b";
  }
  std::string combineFn = "[](" + acc + " a, " + acc + " b) { return (" + acc + ")(" + combine + "); }";
  line("const int64_t items = " + product(outShape) + ";");
  line("const int64_t R = " + product(reducedShape) + ";");
  // Combines the input element at output position `outIndex` and reduced
  // position `rr` into `acc`.
  auto accumulate = [&](const std::vector<std::string> &outIndex) -> LogicalResult {
    std::vector<std::string> redIndex = unravel("rr", reducedShape), inIndex;
    size_t nextOut = 0, nextRed = 0;
    for (int64_t d = 0; d < rank; ++d) {
      if (reduced[d]) {
        inIndex.push_back(redIndex[nextRed++]);
        if (root.getKeepDims())
          ++nextOut;
      } else {
        inIndex.push_back(outIndex[nextOut++]);
      }
    }
    FailureOr<std::string> x = element(input, inIndex);
    if (failed(x))
      return failure();
    line("acc = (" + combineFn + ")(acc, (" + acc + ")" + *x + ");");
    return success();
  };
  std::string final = "acc";
  if (kind == ReduceKind::mean)
    final = isF ? "acc / (" + acc + ")R" : "(R == 0 ? (" + acc + ")0 : (" + acc + ")(acc / R))";
  // One output's reduction: `outer` walks the outputs, `inner` the reduced
  // elements (each thread's share), `combineAll` joins the threads' partials
  // and `storeIf` picks the thread that writes.
  auto reduceOutputs = [&](const std::string &outer, const std::string &inner,
                           const std::string &combineAll, const std::string &storeIf) {
    openBlock(outer);
    std::vector<std::string> outIndex = unravel("o", outShape);
    line(acc + " acc = " + identity + ";");
    openBlock(inner);
    if (failed(accumulate(outIndex)))
      return failure();
    closeBlock();
    if (!combineAll.empty())
      line("acc = " + combineAll + ";");
    line(storeIf + "out[o] = " + store(t, final) + ";");
    closeBlock();
    return success();
  };
  if (!blockPerItem) {
    // A column reduction (every reduced dim before every kept one: the
    // outputs lie contiguous in each input row) in 2-D tiles: a block takes
    // 32 consecutive outputs, a lane each (reads coalesced along the row),
    // and its warps split the rows, their partials combined through shared
    // memory; 8x the threads of one per output at the runtime's 256. Other
    // patterns, and blocks that are not whole warps, take a thread per output.
    bool leading = !reducedShape.empty() && !outShape.empty();
    for (int64_t d = 1; d < rank; ++d)
      if (reduced[d] && !reduced[d - 1])
        leading = false;
    if (leading) {
      blockPerItem = true;
      workItems = canonicalizeDim(productOf(getSymShape(result.getType())).ceilDiv(32));
      line("__shared__ " + acc + " scratch[KILN_MAX_BLOCK];");
      openBlock("if (blockDim.x % 32 == 0) {");
      line("const int64_t lane = threadIdx.x % 32, slice = threadIdx.x / 32, slices = blockDim.x / 32;");
      openBlock("for (int64_t base = blockIdx.x * 32; base < items; base += gridDim.x * 32) {");
      line("const int64_t o = base + lane;");
      line(acc + " acc = " + identity + ";");
      openBlock("if (o < items) {");
      std::vector<std::string> outIndex = unravel("o", outShape);
      openBlock("for (int64_t rr = slice; rr < R; rr += slices) {");
      if (failed(accumulate(outIndex)))
        return failure();
      closeBlock();
      closeBlock();
      line("scratch[threadIdx.x] = acc;");
      line("__syncthreads();");
      openBlock("if (slice == 0 && o < items) {");
      line("for (int64_t s = 1; s < slices; ++s) acc = (" + combineFn + ")(acc, scratch[s * 32 + lane]);");
      line("out[o] = " + store(t, final) + ";");
      closeBlock();
      line("__syncthreads();");
      closeBlock();
      line("return;");
      closeBlock();
    }
    return reduceOutputs("for (int64_t o = kiln_thread_index(); o < items; o += kiln_thread_count()) {",
                         "for (int64_t rr = 0; rr < R; ++rr) {", "", "");
  }
  // Trailing axes: a warp per output where the reduced elements are few
  // (a global average pool's 49: a block's 256 threads would mostly idle),
  // eight outputs to a block of the runtime's 256 threads; else a block per
  // output. Blocks that are not whole warps (host emulation's one thread)
  // take the block path, correct for any grid.
  std::optional<int64_t> staticR =
      getConstantDimValue(productOf(ArrayRef<DimExpr>(getSymShape(input.getType())).take_back(
          static_cast<size_t>(std::count(reduced.begin(), reduced.end(), true)))));
  line("__shared__ " + acc + " scratch[KILN_MAX_BLOCK];");
  if (staticR && *staticR <= kMaxWarpReduction) {
    SymShape out = getSymShape(result.getType());
    workItems = canonicalizeDim(productOf(out).ceilDiv(kBlockThreads / 32));
    line("if (blockDim.x % 32 == 0) {");
    ++indent;
    line("const int64_t lane = threadIdx.x % 32, warps = blockDim.x / 32;");
    if (failed(reduceOutputs(
            "for (int64_t o = blockIdx.x * warps + threadIdx.x / 32; o < items; o += gridDim.x * warps) {",
            "for (int64_t rr = lane; rr < R; rr += 32) {", "kiln_warp_reduce(acc, " + combineFn + ")",
            "if (lane == 0) ")))
      return failure();
    line("return;");
    --indent;
    line("}");
  }
  return reduceOutputs("for (int64_t o = blockIdx.x; o < items; o += gridDim.x) {",
                       "for (int64_t rr = threadIdx.x; rr < R; rr += blockDim.x) {",
                       "kiln_block_reduce(acc, " + combineFn + ", scratch)", "if (threadIdx.x == 0) ");
}

LogicalResult KernelEmitter::emitArgReduction(ArgReduceOp root) {
  // One result element per thread, scanning the axis in order: ties keep the
  // first (or, with select_last_index, the last) position, and the first NaN wins.
  Value input = root.getInput(), result = root.getResult();
  int64_t rank = cast<RankedTensorType>(input.getType()).getRank();
  int64_t axis = normalizedAxis(static_cast<int64_t>(root.getAxis()), rank);
  std::vector<std::string> inShape = dims(input), outShape = dims(result);
  Type t = elementOf(input);
  std::string ct = computeType(t);
  bool isF = isFloatType(t);
  line("const int64_t items = " + product(outShape) + ";");
  line("const int64_t N = " + inShape[axis] + ";");
  // No position to name on an empty axis: the call's error, as in the reference.
  if (std::optional<int64_t> n = getConstantDimValue(getSymShape(input.getType())[axis]);
      !n || *n == 0)
    checkData("N == 0 && items > 0 && kiln_thread_index() == 0", "KILN_ERROR_EMPTY_REDUCTION");
  openBlock("for (int64_t o = kiln_thread_index(); o < items; o += kiln_thread_count()) {");
  std::vector<std::string> outIndex = unravel("o", outShape);
  auto inputIndex = [&](const std::string &k) {
    std::vector<std::string> in;
    size_t next = 0;
    for (int64_t d = 0; d < rank; ++d) {
      if (d == axis) {
        in.push_back(k);
        if (root.getKeepDims())
          ++next;
      } else {
        in.push_back(outIndex[next++]);
      }
    }
    return in;
  };
  line(ct + " best = " + ct + "();");
  line("int64_t at = 0;");
  openBlock("for (int64_t k = 0; k < N; ++k) {");
  FailureOr<std::string> v = element(input, inputIndex("k"));
  if (failed(v))
    return failure();
  line("if (k == 0) { best = " + *v + "; continue; }");
  if (isF) {
    line("if (kiln_isnan(best)) continue;");
    line("if (kiln_isnan(" + *v + ")) { best = " + *v + "; at = k; continue; }");
  }
  bool argmin = root.getKind() == ArgReduceKind::argmin;
  std::string better = argmin ? *v + " < best" : *v + " > best";
  std::string tie = root.getSelectLastIndex() ? " || " + *v + " == best" : "";
  line("if (" + better + tie + ") { best = " + *v + "; at = k; }");
  closeBlock();
  line("out[o] = (int64_t)at;");
  closeBlock();
  return success();
}

LogicalResult KernelEmitter::emitCumulative(CumulativeOp root) {
  // One thread per line along the axis, walking it in order (reversed with
  // `reverse`): neighbouring threads take neighbouring inner positions, so
  // each step's reads and writes are coalesced across a warp. Floats
  // accumulate in double as the reference does; integers wrap through uint64.
  Value input = root.getInput(), result = root.getResult();
  int64_t rank = cast<RankedTensorType>(input.getType()).getRank();
  int64_t axis = normalizedAxis(static_cast<int64_t>(root.getAxis()), rank);
  std::vector<std::string> shape = dims(input);
  std::vector<std::string> lineShape;
  for (int64_t d = 0; d < rank; ++d)
    if (d != axis)
      lineShape.push_back(shape[d]);
  SymShape symShape = getSymShape(input.getType());
  SmallVector<DimExpr> lineDims;
  for (int64_t d = 0; d < rank; ++d)
    if (d != axis)
      lineDims.push_back(symShape[d]);
  workItems = productOf(lineDims);
  Type t = elementOf(result);
  bool isF = isFloatType(t);
  bool sum = root.getKind() == CumulativeKind::sum;
  std::string acc = isF ? "double" : "uint64_t";
  line("const int64_t lines = " + product(lineShape) + ";");
  line("const int64_t N = " + shape[axis] + ";");
  openBlock("for (int64_t o = kiln_thread_index(); o < lines; o += kiln_thread_count()) {");
  std::vector<std::string> lineIndex = unravel("o", lineShape);
  line(acc + " acc = " + (sum ? "0" : "1") + ";");
  openBlock("for (int64_t step = 0; step < N; ++step) {");
  line(std::string("const int64_t k = ") + (root.getReverse() ? "N - 1 - step" : "step") + ";");
  std::vector<std::string> index(lineIndex.begin(), lineIndex.begin() + axis);
  index.push_back("k");
  index.insert(index.end(), lineIndex.begin() + axis, lineIndex.end());
  std::string at = "0";
  for (int64_t d = 0; d < rank; ++d)
    at = d == 0 ? index[0] : "(" + at + " * " + shape[d] + " + " + index[d] + ")";
  FailureOr<std::string> x = element(input, index);
  if (failed(x))
    return failure();
  std::string stored = store(t, isF ? "acc" : "(" + computeType(t) + ")acc");
  if (root.getExclusive())
    line("out[" + at + "] = " + stored + ";");
  line(std::string("acc = ") + (sum ? "acc + " : "acc * ") + "(" + acc + ")" + *x + ";");
  if (!root.getExclusive())
    line("out[" + at + "] = " + stored + ";");
  closeBlock();
  closeBlock();
  return success();
}

LogicalResult KernelEmitter::emitTopK(TopKOp root) {
  // A top_k's indices (its values are a gather of them): a block per line
  // along the axis; each thread takes elements of the line and counts the
  // elements that come before each (larger, or smaller with largest = false;
  // NaN as the largest; ties by position): an element whose count is below k
  // is written at that place. Sorted as the reference sorts; O(n) reads per
  // element, n^2 per line, from the cache: for the candidate counts detection
  // heads and classifiers rank, not a vocabulary-sized axis.
  blockPerItem = true;
  Value input = root.getInput(), result = root.getIndices();
  int64_t rank = cast<RankedTensorType>(input.getType()).getRank();
  int64_t axis = normalizedAxis(static_cast<int64_t>(root.getAxis()), rank);
  std::vector<std::string> shape = dims(input), outShape = dims(result);
  std::vector<std::string> lineShape;
  SymShape symShape = getSymShape(input.getType());
  SmallVector<DimExpr> lineDims;
  for (int64_t d = 0; d < rank; ++d)
    if (d != axis) {
      lineShape.push_back(shape[d]);
      lineDims.push_back(symShape[d]);
    }
  workItems = productOf(lineDims);
  std::string ct = computeType(elementOf(input));
  line("const int64_t lines = " + product(lineShape) + ";");
  line("const int64_t N = " + shape[axis] + ", K = " + outShape[axis] + ";");
  // k beyond the axis is the call's error, as in the reference.
  checkData("K > N && kiln_thread_index() == 0", "KILN_ERROR_INDEX_OUT_OF_RANGE");
  openBlock("for (int64_t o = blockIdx.x; o < lines; o += gridDim.x) {");
  std::vector<std::string> lineIndex = unravel("o", lineShape);
  auto at = [&](const std::string &k) {
    std::vector<std::string> index(lineIndex.begin(), lineIndex.begin() + axis);
    index.push_back(k);
    index.insert(index.end(), lineIndex.begin() + axis, lineIndex.end());
    return index;
  };
  openBlock("for (int64_t e = threadIdx.x; e < N; e += blockDim.x) {");
  FailureOr<std::string> mine = element(input, at("e"));
  if (failed(mine))
    return failure();
  line("int64_t before = 0;");
  openBlock("for (int64_t l = 0; l < N; ++l) {");
  FailureOr<std::string> other = element(input, at("l"));
  if (failed(other))
    return failure();
  line("before += kiln_topk_before<" + ct + ">(" + *other + ", l, " + *mine + ", e, " +
       (root.getLargest() ? "true" : "false") + ") ? 1 : 0;");
  closeBlock();
  std::vector<std::string> outIndex = at("before");
  std::string position = "0";
  for (int64_t d = 0; d < rank; ++d)
    position = d == 0 ? outIndex[0] : "(" + position + " * " + outShape[d] + " + " + outIndex[d] + ")";
  line("if (before < K) out[" + position + "] = (int64_t)e;");
  closeBlock();
  closeBlock();
  return success();
}

/// The combining functions the block reductions of int64 counts take.
constexpr const char *kSumI64 = "[](int64_t a, int64_t b) { return a + b; }";
constexpr const char *kMaxI64 = "[](int64_t a, int64_t b) { return a < b ? b : a; }";

void KernelEmitter::openChunkLoop(Value input, int64_t chunks) {
  blockPerItem = true;
  workItems = getAffineConstantExpr(chunks, kernel.getContext());
  line("const int64_t n = " + product(dims(input)) + ";");
  line("const int64_t chunks = " + int64Literal(chunks) + ", chunk = (n + chunks - 1) / chunks;");
  openBlock("for (int64_t c = blockIdx.x; c < chunks; c += gridDim.x) {");
  line("const int64_t begin = c * chunk, end = begin + chunk < n ? begin + chunk : n;");
}

LogicalResult KernelEmitter::emitCountNonZero(CountNonZeroOp root) {
  // A block per chunk: its threads stride the chunk and the block sums.
  Value input = root.getInput();
  line("__shared__ int64_t scratch[KILN_MAX_BLOCK];");
  openChunkLoop(input, static_cast<int64_t>(root.getChunks()));
  line("int64_t mine = 0;");
  openBlock("for (int64_t e = begin + threadIdx.x; e < end; e += blockDim.x) {");
  FailureOr<std::string> v = element(input, unravel("e", dims(input)));
  if (failed(v))
    return failure();
  line("mine += " + nonZero(input, *v) + " ? 1 : 0;");
  closeBlock();
  line("const int64_t total = kiln_block_reduce(mine, " + std::string(kSumI64) + ", scratch);");
  line("if (threadIdx.x == 0) out[c] = total;");
  closeBlock();
  return success();
}

LogicalResult KernelEmitter::emitCompactNonZero(CompactNonZeroOp root) {
  // A block per chunk (the chunks count_non_zero counted): the block sums the
  // counts before its chunk (where its indices start), then walks the chunk a
  // tile of blockDim elements at a time, a block-wide prefix sum of the
  // non-zero flags placing each hit after the ones before it, in order.
  Value input = root.getInput(), counts = root.getChunkCounts();
  auto countsType = cast<RankedTensorType>(counts.getType());
  if (countsType.isDynamicDim(0))
    return unsupported(root, "needs chunk counts of a known length");
  std::vector<std::string> shape = dims(input);
  line("__shared__ int64_t scratch[KILN_MAX_BLOCK];");
  line("const int64_t N = " + dim(getSymShape(root.getType())[1]) + ";");
  openChunkLoop(input, countsType.getDimSize(0));
  line("int64_t before = 0;");
  openBlock("for (int64_t j = threadIdx.x; j < c; j += blockDim.x) {");
  FailureOr<std::string> count = element(counts, {"j"});
  if (failed(count))
    return failure();
  line("before += " + *count + ";");
  closeBlock();
  line("int64_t offset = kiln_block_reduce(before, " + std::string(kSumI64) + ", scratch);");
  openBlock("for (int64_t tile = begin; tile < end; tile += blockDim.x) {");
  line("const int64_t e = tile + threadIdx.x;");
  line("bool hit = false;");
  openBlock("if (e < end) {");
  FailureOr<std::string> v = element(input, unravel("e", shape));
  if (failed(v))
    return failure();
  line("hit = " + nonZero(input, *v) + ";");
  closeBlock();
  line("int64_t hits = 0;");
  line("const int64_t rank = kiln_block_exclusive_scan(hit ? 1 : 0, scratch, &hits);");
  // Counted by the same test, so the position is inside the result; checked
  // all the same, so a disagreement can never write past it.
  openBlock("if (hit && offset + rank < N) {");
  std::vector<std::string> index = unravel("e", shape);
  for (size_t d = 0; d < index.size(); ++d)
    line("out[" + int64Literal(static_cast<int64_t>(d)) + " * N + offset + rank] = " + index[d] +
         ";");
  closeBlock();
  line("offset += hits;");
  closeBlock();
  closeBlock();
  return success();
}

LogicalResult KernelEmitter::emitNmsSelect(NmsSelectOp root) {
  // A block per (batch, class) row. The greedy loop runs in order, every
  // thread keeping the same count: the candidate of the next rank is found
  // across the block (each thread looks at its boxes), and the overlap with
  // each box taken so far is tested across the block; thread 0 appends. The
  // row's taken boxes are the result's own row, read back as the list.
  blockPerItem = true;
  Value boxes = root.getBoxes(), scores = root.getScores(), rank = root.getRank();
  std::vector<std::string> shape = dims(scores);
  SymShape scoreDims = getSymShape(scores.getType());
  workItems = productOf({scoreDims[0], scoreDims[1]});
  line("__shared__ int64_t scratch[KILN_MAX_BLOCK];");
  line("const int64_t classes = " + shape[1] + ", S = " + shape[2] + ";");
  line("const int64_t rows = " + shape[0] + " * classes;");
  FailureOr<std::string> maxOut = onlyElement(root.getMaxOutputBoxesPerClass());
  FailureOr<std::string> iou = failed(maxOut) ? maxOut : onlyElement(root.getIouThreshold());
  if (failed(iou))
    return failure();
  line("const int64_t max_out = (int64_t)" + *maxOut + ";");
  line("const double iou_threshold = (double)" + *iou + ";");
  if (Value t = root.getScoreThreshold()) {
    FailureOr<std::string> v = onlyElement(t);
    if (failed(v))
      return failure();
    line("const double score_threshold = (double)" + *v + ";");
  }
  std::string center = root.getCenterPointBox() ? "true" : "false";
  const std::string max = kMaxI64;
  openBlock("for (int64_t row = blockIdx.x; row < rows; row += gridDim.x) {");
  line("const int64_t b = row / classes, k = row % classes;");
  line("for (int64_t j = threadIdx.x; j < S; j += blockDim.x) out[row * S + j] = -1;");
  line("int64_t taken = 0;");
  openBlock("for (int64_t r = 0; r < S && taken < max_out; ++r) {");
  line("int64_t mine = -1;");
  openBlock("for (int64_t i = threadIdx.x; i < S; i += blockDim.x) {");
  FailureOr<std::string> score = element(scores, {"b", "k", "i"});
  FailureOr<std::string> position = failed(score) ? score : element(rank, {"b", "k", "i"});
  if (failed(position))
    return failure();
  line(root.getScoreThreshold() ? "const bool candidate = (double)" + *score + " > score_threshold;"
                                : std::string("const bool candidate = true;"));
  line("if (candidate && " + *position + " == r) mine = i;");
  closeBlock();
  line("const int64_t next = kiln_block_reduce(mine, " + max + ", scratch);");
  line("if (next < 0) break;");
  auto corners = [&](const std::string &i) -> FailureOr<std::vector<std::string>> {
    std::vector<std::string> c;
    for (const char *d : {"0", "1", "2", "3"}) {
      FailureOr<std::string> e = element(boxes, {"b", i, d});
      if (failed(e))
        return failure();
      c.push_back("(double)" + *e);
    }
    return c;
  };
  FailureOr<std::vector<std::string>> a = corners("next");
  if (failed(a))
    return failure();
  line("int64_t overlaps = 0;");
  openBlock("for (int64_t t = threadIdx.x; t < taken; t += blockDim.x) {");
  line("const int64_t other = out[row * S + t];");
  FailureOr<std::vector<std::string>> o = corners("other");
  if (failed(o))
    return failure();
  line("if (kiln_box_iou(" + (*a)[0] + ", " + (*a)[1] + ", " + (*a)[2] + ", " + (*a)[3] + ", " +
       (*o)[0] + ", " + (*o)[1] + ", " + (*o)[2] + ", " + (*o)[3] + ", " + center +
       ") > iou_threshold) overlaps = 1;");
  closeBlock();
  line("if (kiln_block_reduce(overlaps, " + max + ", scratch) == 0) {");
  line("  if (threadIdx.x == 0) out[row * S + taken] = next;");
  line("  ++taken;");
  line("}");
  closeBlock();
  closeBlock();
  return success();
}

/// Query rows and keys per tile of the attention kernel: the largest power of
/// two up to 64 whose tiles (queries, keys, values, scores, the output
/// accumulator, in the compute type) fit in 40 KiB of static shared memory.
int64_t attentionTile(int64_t d, int64_t dv, int64_t computeBytes) {
  int64_t tile = 64;
  auto bytes = [&](int64_t t) {
    return computeBytes * (t * d + t * (d + 1) + t * dv + t * t + t * dv + 3 * t);
  };
  while (tile > 4 && bytes(tile) > 40 * 1024)
    tile /= 2;
  return tile;
}

LogicalResult KernelEmitter::emitAttention(AttentionOp root, ArrayRef<int64_t> outputPerm) {
  // A block per tile of BR query rows of one (batch, head): the tile of
  // queries (scaled) stays in shared memory while tiles of BC keys and values
  // pass through it; the scores of a tile never leave the chip. Each query row
  // keeps a running maximum m, a running sum l and an output accumulator
  // rescaled by exp(m_old - m_new) when the maximum grows (an online softmax),
  // so one pass over the keys gives softmax(q k^T * scale + mask) v. Every loop
  // strides by the block's threads: any block size is right.
  blockPerItem = true;
  Value q = root.getQuery(), k = root.getKey(), v = root.getValue(), mask = root.getMask();
  Type t = elementOf(root.getResult());
  std::string acc = computeType(t);
  int64_t rank = cast<RankedTensorType>(q.getType()).getRank();
  int64_t d = cast<RankedTensorType>(q.getType()).getDimSize(rank - 1);
  int64_t dv = cast<RankedTensorType>(v.getType()).getDimSize(rank - 1);
  if (ShapedType::isDynamic(d) || ShapedType::isDynamic(dv))
    return root.emitError() << "codegen: attention needs static feature dims";
  int64_t tile = attentionTile(d, dv, acc == "double" ? 8 : 4);
  std::string D = std::to_string(d), DV = std::to_string(dv), BR = std::to_string(tile),
              BC = BR, KS = std::to_string(d + 1);
  std::vector<std::string> qShape = dims(q), kShape = dims(k);
  std::vector<std::string> lead(qShape.begin(), qShape.end() - 2);
  {
    SymShape qd = getSymShape(q.getType());
    workItems = canonicalizeDim(productOf(ArrayRef<DimExpr>(qd).drop_back(2)) *
                                qd[rank - 2].ceilDiv(tile));
    // A multiply and an add per feature, for the scores and for the output.
    flops = canonicalizeDim(productOf(ArrayRef<DimExpr>(qd).drop_back(1)) *
                            getSymShape(k.getType())[rank - 2] * (2 * (d + dv)));
  }
  std::string ninf = "(" + acc + ")kiln_f32_bits(0xff800000u)";
  // ks rows are padded by one: threads of a warp read different keys at one
  // feature, which would otherwise fall in one shared-memory bank.
  line("__shared__ " + acc + " qs[" + BR + " * " + D + "];");
  line("__shared__ " + acc + " ks[" + BC + " * " + KS + "];");
  line("__shared__ " + acc + " vs[" + BC + " * " + DV + "];");
  line("__shared__ " + acc + " ps[" + BR + " * " + BC + "];");
  line("__shared__ " + acc + " os[" + BR + " * " + DV + "];");
  line("__shared__ " + acc + " ms[" + BR + "], ls[" + BR + "], as[" + BR + "];");
  line("const int64_t P = " + product(lead) + ";");
  line("const int64_t Sq = " + qShape[rank - 2] + ", Sk = " + kShape[rank - 2] + ";");
  line("const int64_t qTiles = (Sq + " + BR + " - 1) / " + BR + ";");
  openBlock("for (int64_t item = blockIdx.x; item < P * qTiles; item += gridDim.x) {");
  line("const int64_t p = " + quotient("item", "((" + qShape[rank - 2] + " + " + BR + " - 1) / " + BR + ")") +
       ", i0 = (item - p * qTiles) * " + BR + ";");
  // The rows of this tile (the last one may be partial): loops stop there.
  line("const int64_t nr = kiln_min<int64_t>(" + BR + ", Sq - i0);");
  std::vector<std::string> prefix = unravel("p", lead);
  auto at = [&](const std::string &row, const std::string &col) {
    std::vector<std::string> index = prefix;
    index.push_back(row);
    index.push_back(col);
    return index;
  };
  auto tileLoop = [&](const std::string &count,
                      const std::function<LogicalResult()> &body) -> LogicalResult {
    openBlock("for (int64_t t = threadIdx.x; t < " + count + "; t += blockDim.x) {");
    LogicalResult r = body();
    closeBlock();
    return r;
  };
  // Loads element (row, col) of `x` into `dst` (the loops stop at the tile's
  // last row and key, so every element they reach exists).
  auto load = [&](Value x, const std::string &dst, const std::string &row,
                  const std::string &col) -> LogicalResult {
    FailureOr<std::string> e = element(x, at(row, col));
    if (failed(e))
      return failure();
    line(dst + " = (" + acc + ")" + *e + ";");
    return success();
  };
  // The tile of queries, and the accumulators of its rows.
  if (failed(tileLoop("nr * " + D, [&] {
        line("const int64_t r = t / " + D + ", c = t % " + D + ", i = i0 + r;");
        return load(q, "qs[t]", "i", "c");
      })))
    return failure();
  line("for (int64_t t = threadIdx.x; t < nr * " + DV + "; t += blockDim.x) os[t] = (" + acc +
       ")0;");
  line("for (int64_t t = threadIdx.x; t < nr; t += blockDim.x) { ms[t] = " + ninf +
       "; ls[t] = (" + acc + ")0; }");
  line("__syncthreads();");
  openBlock("for (int64_t j0 = 0; j0 < Sk; j0 += " + BC + ") {");
  line("const int64_t nc = kiln_min<int64_t>(" + BC + ", Sk - j0);");
  if (failed(tileLoop("nc * " + D, [&] {
        line("const int64_t r = t / " + D + ", c = t % " + D + ", j = j0 + r;");
        return load(k, "ks[r * " + KS + " + c]", "j", "c");
      })) ||
      failed(tileLoop("nc * " + DV, [&] {
        line("const int64_t r = t / " + DV + ", c = t % " + DV + ", j = j0 + r;");
        return load(v, "vs[t]", "j", "c");
      })))
    return failure();
  line("__syncthreads();");
  // The tile's scores; -inf past the last key.
  std::string scale = scalarLiteral(t, root.getScaleAttr());
  SymShape scoresDims = getSymShape(root.getType());
  scoresDims.back() = getSymShape(k.getType())[rank - 2];
  if (failed(tileLoop("nr * " + BC, [&]() -> LogicalResult {
        line("const int64_t r = t / " + BC + ", c = t % " + BC + ", i = i0 + r, j = j0 + c;");
        line(acc + " s = " + ninf + ";");
        openBlock("if (j < Sk) {");
        line(acc + " dot = (" + acc + ")0;");
        line("for (int64_t f = 0; f < " + D + "; ++f) dot += qs[r * " + D + " + f] * ks[c * " + KS +
             " + f];");
        line("s = dot * " + scale + ";");
        if (mask) {
          FailureOr<std::string> e = element(mask, broadcastIndex(mask, scoresDims, at("i", "j")));
          if (failed(e))
            return failure();
          line("s += (" + acc + ")" + *e + ";");
        }
        closeBlock();
        line("ps[t] = s;");
        return success();
      })))
    return failure();
  line("__syncthreads();");
  // Per row: the new maximum, the tile's weights, the rescale of what came
  // before. A maximum of -inf (every score so far masked) weighs nothing yet.
  openBlock("for (int64_t r = threadIdx.x; r < nr; r += blockDim.x) {");
  line(acc + " mx = ms[r];");
  line("for (int64_t c = 0; c < nc; ++c) mx = kiln_max<" + acc + ">(mx, ps[r * " + BC +
       " + c]);");
  line("const bool none = mx == " + ninf + ";");
  line(acc + " sum = (" + acc + ")0;");
  openBlock("for (int64_t c = 0; c < nc; ++c) {");
  line("const " + acc + " w = none ? (" + acc + ")0 : kiln_exp(ps[r * " + BC + " + c] - mx);");
  line("ps[r * " + BC + " + c] = w;");
  line("sum += w;");
  closeBlock();
  line("const " + acc + " alpha = none ? (" + acc + ")1 : kiln_exp(ms[r] - mx);");
  line("ls[r] = ls[r] * alpha + sum;");
  line("ms[r] = mx;");
  line("as[r] = alpha;");
  closeBlock();
  line("__syncthreads();");
  openBlock("for (int64_t t = threadIdx.x; t < nr * " + DV + "; t += blockDim.x) {");
  line("const int64_t r = t / " + DV + ", e = t % " + DV + ";");
  line(acc + " o = os[t] * as[r];");
  line("for (int64_t c = 0; c < nc; ++c) o += ps[r * " + BC + " + c] * vs[c * " + DV +
       " + e];");
  line("os[t] = o;");
  closeBlock();
  line("__syncthreads();");
  closeBlock(); // key tiles
  // A row whose every score was masked has l = 0: 0 / 0, NaN, as kiln.softmax.
  openBlock("for (int64_t t = threadIdx.x; t < nr * " + DV + "; t += blockDim.x) {");
  line("const int64_t r = t / " + DV + ", e = t % " + DV + ", i = i0 + r;");
  std::string offset = "(p * Sq + i) * " + DV + " + e";
  if (!outputPerm.empty()) {
    // Element [prefix.., i, e] of the attention lands at the transposed place.
    std::vector<std::string> index = at("i", "e");
    std::vector<std::string> attShape = lead;
    attShape.push_back(qShape[rank - 2]);
    attShape.push_back(DV);
    std::vector<std::string> permutedIndex, permutedShape;
    for (int64_t d : outputPerm) {
      permutedIndex.push_back(index[d]);
      permutedShape.push_back(attShape[d]);
    }
    offset = linearize(permutedIndex, permutedShape);
  }
  line("out[" + offset + "] = " + store(t, "os[t] / ls[r]") + ";");
  closeBlock();
  line("__syncthreads();");
  closeBlock(); // items
  return success();
}

LogicalResult KernelEmitter::emitRow(Operation *root) {
  halfOccupancy = true;
  blockPerItem = true;
  Value x = root->getOperand(0), result = root->getResult(0);
  Type t = elementOf(result);
  std::string acc = computeType(t);
  int64_t rank = cast<RankedTensorType>(x.getType()).getRank();
  int64_t axis = isa<LayerNormOp>(root) ? static_cast<int64_t>(cast<LayerNormOp>(root).getAxis())
                 : isa<SoftmaxOp>(root) ? static_cast<int64_t>(cast<SoftmaxOp>(root).getAxis())
                                        : static_cast<int64_t>(cast<LogSoftmaxOp>(root).getAxis());
  axis = axis < 0 ? axis + rank : axis;
  std::vector<std::string> shape = dims(x);
  bool layerNorm = isa<LayerNormOp>(root);
  // A row: softmax runs along one axis (outer x inner rows); layer_norm over the
  // trailing dims from the axis (outer rows).
  std::vector<std::string> outerShape(shape.begin(), shape.begin() + axis), innerShape,
      rowShape;
  if (layerNorm) {
    rowShape.assign(shape.begin() + axis, shape.end());
  } else {
    rowShape.push_back(shape[axis]);
    innerShape.assign(shape.begin() + axis + 1, shape.end());
  }
  line("__shared__ " + acc + " scratch[KILN_MAX_BLOCK];");
  line("const int64_t rows = " + product(outerShape) + " * " + product(innerShape) + ";");
  std::optional<int64_t> staticRow = getConstantDimValue(
      productOf(ArrayRef<DimExpr>(getSymShape(x.getType())).slice(axis, layerNorm ? rank - axis : 1)));
  // The vector path: a row of a known length that lies contiguous in memory
  // (layer norm's trailing dims; softmax along the last axis), whose kernel
  // reads its inputs along the row's innermost dim or broadcast there
  // (elementwise producers of x, layer norm's scale and bias), moves in
  // 128-bit vectors of `rowWidth` elements: `rowThreads` threads a row (a
  // warp, or a group of whole warps reducing through one shared-memory
  // step), each keeping its `rowVectors` vectors in registers between the
  // passes, and kBlockThreads / rowThreads rows a block.
  int rowWidth = 0, rowThreads = 0, rowVectors = 0;
  std::map<unsigned, int> rowReads;
  {
    SymShape d = getSymShape(x.getType());
    bool contiguous = layerNorm || getConstantDimValue(productOf(ArrayRef<DimExpr>(d).drop_front(axis + 1))) == 1;
    std::optional<int64_t> innermost = d.empty() ? std::nullopt : getConstantDimValue(d.back());
    std::optional<std::map<unsigned, int>> reads;
    if (staticRow && contiguous && innermost && *innermost > 1)
      reads = innermostReads(kernel, *innermost, root);
    unsigned narrowest = storageBytes(t);
    if (reads) {
      rowReads = *reads;
      for (auto [n, read] : rowReads)
        if (read == kReadContiguous)
          narrowest = std::min(narrowest, storageBytes(elementOf(kernel.getBody().front().getArgument(n))));
    }
    int width = 16 / static_cast<int>(narrowest);
    if (reads && *innermost % width == 0 && *staticRow >= 32 * width) {
      int64_t vectors = *staticRow / width;
      for (int threads = 32; threads <= kBlockThreads && !rowThreads; threads *= 2)
        if ((vectors + threads - 1) / threads * width <= kMaxRowValuesPerThread / (t.isF64() ? 2 : 1)) {
          rowThreads = threads;
          rowVectors = static_cast<int>((vectors + threads - 1) / threads);
          rowWidth = width;
        }
    }
    // A block per row, or for rows known to take the warp path (at most
    // kMaxWarpRow elements) a block per eight rows, or for the vector path
    // kBlockThreads / rowThreads: the rows, not the elements.
    SymShape rowDims(d.begin(), d.begin() + axis);
    if (!layerNorm)
      rowDims.append(d.begin() + axis + 1, d.end());
    int64_t rowsPerBlock = rowThreads ? kBlockThreads / rowThreads : staticRow && *staticRow <= kMaxWarpRow ? kBlockThreads / 32 : 1;
    workItems = canonicalizeDim(productOf(rowDims).ceilDiv(rowsPerBlock));
  }
  line("const int64_t L = " + product(rowShape) + ";");
  line("const int64_t inner = " + product(innerShape) + ";");
  // Short rows take a warp each (lanes stride the row, shuffles reduce; rows
  // of a known length up to kMaxWarpRow kept in registers, ceil(L / 32) values
  // a lane); longer ones a block each (warp shuffles and one shared-memory
  // step). A row of a known length up to kMaxCachedRow (half that in double)
  // is read once: each
  // thread keeps its K = ceil(L / 128) elements in registers (rowCache) for
  // the passes after the first, when the block has the threads for it
  // (blockDim * K >= L: the runtime's 256 always; host emulation's threaded
  // test mode from 128 up); otherwise every pass reads the row again. Host
  // emulation with one thread per block always takes the uncached block path.
  int64_t cacheLimit = kMaxCachedRow / (t.isF64() ? 2 : 1);
  int64_t cached = staticRow && *staticRow > kMaxWarpRow && *staticRow <= cacheLimit ? (*staticRow + 127) / 128 : 0;
  // `vectorThreads`: the vector path, that many threads a row (rowVectors
  // vectors of rowWidth each in rowCache), otherwise 0.
  auto rowLoop = [&](bool warp, int64_t cache, int vectorThreads = 0) -> LogicalResult {
    auto reduce = [&](const std::string &v, const std::string &fn) {
      if (vectorThreads > 32)
        return "kiln_group_reduce<" + std::to_string(vectorThreads / 32) + ">(" + v + ", " + fn + ", scratch)";
      return warp || vectorThreads ? "kiln_warp_reduce(" + v + ", " + fn + ")"
                                   : "kiln_block_reduce(" + v + ", " + fn + ", scratch)";
    };
    if (vectorThreads) {
      // Every thread of the block runs the same trips (the group reduction's
      // barriers): a group past the last row computes nothing it stores.
      openBlock("for (int64_t base = blockIdx.x * groups; base < rows; base += gridDim.x * groups) {");
      line("const int64_t row = base + group;");
      line("const bool live = row < rows;");
    } else {
      openBlock(warp ? "for (int64_t row = blockIdx.x * warps + threadIdx.x / 32; row < rows; row += gridDim.x * warps) {"
                     : "for (int64_t row = blockIdx.x; row < rows; row += gridDim.x) {");
    }
    // The row's position before and after the reduced axis.
    std::string rowOuter = temp("ro"), rowInner = temp("ri");
    line("const int64_t " + rowOuter + " = " + quotient("row", product(innerShape)) + ";");
    line("const int64_t " + rowInner + " = row - " + rowOuter + " * inner;");
    std::vector<std::string> outerIndex = unravel(rowOuter, outerShape);
    std::vector<std::string> innerIndex = unravel(rowInner, innerShape);
    // The element at position j of the row, and its flat offset in the result.
    auto rowIndex = [&](const std::string &j) {
      std::vector<std::string> index = outerIndex;
      std::vector<std::string> within = unravel(j, rowShape);
      index.insert(index.end(), within.begin(), within.end());
      index.insert(index.end(), innerIndex.begin(), innerIndex.end());
      return index;
    };
    std::string maxFn = "[](" + acc + " a, " + acc + " b) { return kiln_max<" + acc + ">(a, b); }";
    std::string sumFn = "[](" + acc + " a, " + acc + " b) { return a + b; }";
    if (cache)
      line(acc + " rowCache[" + std::to_string(cache) + "];");
    int pass = 0;
    std::string W = std::to_string(rowWidth), vectorType = "kiln_vec<" + storageType(t) + ", " + W + ">";
    auto loop = [&](const std::function<LogicalResult(const std::vector<std::string> &)> &f) {
      if (vectorThreads) {
        // Each thread's vectors: x's elements computed lane by lane from
        // vectors of its inputs (element() reads them through
        // broadcastReads), kept in rowCache by the first pass.
        bool first = pass++ == 0;
        openBlock("KILN_UNROLL for (int64_t k = 0; k < " + std::to_string(rowVectors) + "; ++k) {");
        line("const int64_t vj = part + k * " + std::to_string(vectorThreads) + ";");
        openBlock("if (live && vj < " + std::to_string(*staticRow / rowWidth) + ") {");
        for (lane = 0; lane < rowWidth; ++lane) {
          pushScope();
          std::vector<std::string> index = rowIndex("(vj * " + W + " + " + std::to_string(lane) + ")");
          std::string slot = "rowCache[k * " + W + " + " + std::to_string(lane) + "]";
          if (first) {
            FailureOr<std::string> v = element(x, index);
            if (failed(v))
              return failure();
            line(slot + " = " + *v + ";");
          }
          memo.back()[memoKey(x, index)] = slot;
          LogicalResult r = f(index);
          popScope();
          if (failed(r))
            return failure();
        }
        lane = 0;
        closeBlock();
        closeBlock();
        return success();
      }
      if (!cache) {
        openBlock(warp ? "for (int64_t j = lane; j < L; j += 32) {"
                       : "for (int64_t j = threadIdx.x; j < L; j += blockDim.x) {");
        LogicalResult r = f(rowIndex("j"));
        closeBlock();
        return r;
      }
      // The first pass loads the thread's elements into rowCache; later
      // passes read them from there (x's element at this pass's index is
      // rowCache[k]).
      openBlock("KILN_UNROLL for (int64_t k = 0; k < " + std::to_string(cache) + "; ++k) {");
      line(warp ? "const int64_t j = lane + k * 32;" : "const int64_t j = threadIdx.x + k * blockDim.x;");
      openBlock("if (j < L) {");
      std::vector<std::string> index = rowIndex("j");
      if (pass++ == 0) {
        FailureOr<std::string> v = element(x, index);
        if (failed(v))
          return failure();
        line("rowCache[k] = " + *v + ";");
      }
      memo.back()[memoKey(x, index)] = "rowCache[k]";
      LogicalResult r = f(index);
      closeBlock();
      closeBlock();
      return r;
    };
    std::string flat = "(" + rowOuter + " * L + j) * inner + " + rowInner;
    // A result element at `offset` (the vector path: lane by lane into one
    // vector, stored at the last lane).
    auto storeResult = [&](const std::string &offset, const std::string &y) {
      if (!vectorThreads) {
        line("out[" + offset + "] = " + store(t, y) + ";");
        return;
      }
      if (lane == 0)
        line(vectorType + " rowOut;");
      line("rowOut.x[" + std::to_string(lane) + "] = " + store(t, y) + ";");
      if (lane == rowWidth - 1)
        line("*reinterpret_cast<" + vectorType + " *>(out + row * L + vj * " + W + ") = rowOut;");
    };
    if (!layerNorm) {
      bool logarithm = isa<LogSoftmaxOp>(root);
      line(acc + " mx = (" + acc + ")kiln_f32_bits(0xff800000u);");
      if (failed(loop([&](const std::vector<std::string> &index) {
            FailureOr<std::string> v = element(x, index);
            if (failed(v))
              return failure();
            line("mx = kiln_max<" + acc + ">(mx, " + *v + ");");
            return success();
          })))
        return failure();
      line("mx = " + reduce("mx", maxFn) + ";");
      line("if (kiln_isinf(mx)) mx = (" + acc + ")0;");
      line(acc + " sum = (" + acc + ")0;");
      if (failed(loop([&](const std::vector<std::string> &index) {
            FailureOr<std::string> v = element(x, index);
            if (failed(v))
              return failure();
            line("sum += kiln_exp(" + *v + " - mx);");
            return success();
          })))
        return failure();
      line("sum = " + reduce("sum", sumFn) + ";");
      if (failed(loop([&](const std::vector<std::string> &index) {
            FailureOr<std::string> v = element(x, index);
            if (failed(v))
              return failure();
            std::string y = logarithm ? "(" + *v + " - mx) - kiln_log(sum)"
                                      : "kiln_exp(" + *v + " - mx) / sum";
            storeResult(flat, y);
            return success();
          })))
        return failure();
      closeBlock();
      return success();
    }
    auto ln = cast<LayerNormOp>(root);
    line(acc + " mean = (" + acc + ")0;");
    if (failed(loop([&](const std::vector<std::string> &index) {
          FailureOr<std::string> v = element(x, index);
          if (failed(v))
            return failure();
          line("mean += " + *v + ";");
          return success();
        })))
      return failure();
    line("mean = " + reduce("mean", sumFn) + " / (" + acc + ")L;");
    line(acc + " var = (" + acc + ")0;");
    if (failed(loop([&](const std::vector<std::string> &index) {
          FailureOr<std::string> v = element(x, index);
          if (failed(v))
            return failure();
          line("var += (" + *v + " - mean) * (" + *v + " - mean);");
          return success();
        })))
      return failure();
    line("var = " + reduce("var", sumFn) + " / (" + acc + ")L;");
    std::string eps = scalarLiteral(t.isF64() ? Type(Float64Type::get(t.getContext()))
                                              : Type(Float32Type::get(t.getContext())),
                                    FloatAttr::get(Float64Type::get(t.getContext()),
                                                   ln.getEpsilon().convertToDouble()));
    line("const " + acc + " inv = (" + acc + ")1 / kiln_sqrt(var + (" + acc + ")" + eps + ");");
    if (failed(loop([&](const std::vector<std::string> &index) {
          FailureOr<std::string> v = element(x, index);
          FailureOr<std::string> g =
              failed(v) ? v : element(ln.getScale(), broadcastIndex(ln.getScale(), result, index));
          if (failed(g))
            return failure();
          std::string y = "(" + *v + " - mean) * inv * " + *g;
          if (ln.getBias()) {
            FailureOr<std::string> b =
                element(ln.getBias(), broadcastIndex(ln.getBias(), result, index));
            if (failed(b))
              return failure();
            y += " + " + *b;
          }
          storeResult("(row * L) + j", y);
          return success();
        })))
      return failure();
    closeBlock();
    return success();

  };
  // A row of a known length up to kMaxWarpRow takes a warp with the row in
  // registers (ceil(L / 32) values a lane); of a length known at run time, a
  // warp when it holds at most 32.
  if (rowThreads) {
    std::string T = std::to_string(rowThreads), aligned;
    for (auto [n, read] : rowReads)
      if (read == kReadContiguous)
        aligned += " && kiln_aligned(in" + std::to_string(n) + ", sizeof(" +
                   storageType(elementOf(kernel.getBody().front().getArgument(n))) + ") * " +
                   std::to_string(rowWidth) + ")";
    line("if (blockDim.x % " + T + " == 0 && kiln_aligned(out, sizeof(" + storageType(t) + ") * " +
         std::to_string(rowWidth) + ")" + aligned + ") {");
    ++indent;
    line("const int64_t part = threadIdx.x % " + T + ", group = threadIdx.x / " + T +
         ", groups = blockDim.x / " + T + ";");
    broadcastReads = rowReads;
    broadcastWidth = rowWidth;
    laneZeroReads.clear();
    LogicalResult r = rowLoop(false, int64_t{rowVectors} * rowWidth, rowThreads);
    broadcastReads.clear();
    laneZeroReads.clear();
    if (failed(r))
      return failure();
    vectorWidth = rowWidth;
    vectorLoads = static_cast<int>(llvm::count_if(rowReads, [](auto &r) { return r.second == kReadContiguous; }));
    line("return;");
    --indent;
    line("}");
  }
  bool warpRow = staticRow && *staticRow <= kMaxWarpRow;
  line(warpRow ? "if (blockDim.x % 32 == 0) {" : "if (L <= 32 && blockDim.x % 32 == 0) {");
  ++indent;
  line("const int64_t lane = threadIdx.x % 32, warps = blockDim.x / 32;");
  if (failed(rowLoop(true, warpRow ? (*staticRow + 31) / 32 : 0)))
    return failure();
  line("return;");
  --indent;
  line("}");
  if (cached) {
    line("if (blockDim.x * " + std::to_string(cached) + " >= L) {");
    ++indent;
    if (failed(rowLoop(false, cached)))
      return failure();
    line("return;");
    --indent;
    line("}");
  }
  return rowLoop(false, 0);
}

/// The most elements a buffer of a kernel with 32-bit indices may hold
/// (Format.h says why).
constexpr int64_t kMaxIndex32Elements = artifact::kMaxIndex32Elements;

/// 32-bit index arithmetic for a pointwise kernel whose ops move elements by
/// position only (no index read from data: elementwise ops, compare, select,
/// cast, broadcast, reshape, transpose, slice, concat, pad, constants), whose
/// data has no 64-bit integers and whose every buffer holds at most
/// kMaxIndex32Elements. Then every `int64_t` the kernel body declares or
/// casts to is an index or a size, and every literal with an LL suffix one of
/// their constants; both become 32-bit (IMAD instead of IMAD.WIDE pairs,
/// 32-bit magic-number divides). Data arithmetic through `uint64_t` (integer
/// wraparound) is left as it is. Sizes that are constants are checked here;
/// those with symbols go to `symbolicSizes`: such a kernel keeps 64 bits, and
/// a shape-bucket variant that fixes its symbols takes the 32-bit body when
/// they fit there (index32Fits).
bool KernelEmitter::index32Candidate(StringRef schedule, SmallVectorImpl<DimExpr> &symbolicSizes) {
  if (schedule != "pointwise")
    return false;
  bool ok = true;
  auto fits = [&](Type t) {
    auto tensor = dyn_cast<RankedTensorType>(t);
    if (!tensor)
      return true;
    Type e = tensor.getElementType();
    if (e.isInteger(64) || e.isIndex())
      return false;
    DimExpr n = productOf(getSymShape(t));
    if (!n)
      return false;
    if (std::optional<int64_t> c = getConstantDimValue(n))
      return *c <= kMaxIndex32Elements;
    if (!llvm::is_contained(symbolicSizes, n))
      symbolicSizes.push_back(n);
    return true;
  };
  kernel.getBody().walk([&](Operation *op) {
    if (!isa<YieldOp, ConstantOp, SymbolicConstantOp, CompareOp, SelectOp, CastOp, BroadcastToOp,
             ReshapeOp, TransposeOp, SliceOp, ConcatOp, PadOp>(op) &&
        !op->hasTrait<OpTrait::Elementwise>())
      ok = false;
    // Shape operands (i64 constants) are compile-time values, not data; an
    // i64 data constant shows in the result of the op that reads it.
    for (Value v : isa<ConstantOp, SymbolicConstantOp>(op) ? ValueRange() : op->getResults())
      ok = ok && fits(v.getType());
  });
  for (BlockArgument arg : kernel.getBody().front().getArguments())
    ok = ok && fits(arg.getType());
  // Symbols that no size shows (a slice's start, say) could hold anything.
  return ok && (symbols.empty() || !symbolicSizes.empty());
}

/// `text` with 32-bit index arithmetic (index32Candidate says when that is
/// exact): whole-word `int64_t` (not `uint64_t`) becomes `int32_t`, LL
/// literals plain ones, and run-time divisors plain divides (a variant's
/// sizes are constants the compiler divides by itself). Nullopt when a
/// literal does not fit 32 bits.
static std::optional<std::string> narrowIndexText(const std::string &text) {
  static const llvm::Regex literal("\\((-?[0-9]+)LL\\)");
  std::string rewritten, rest = text;
  SmallVector<StringRef, 2> m;
  while (literal.match(rest, &m)) {
    int64_t v = 0;
    if (m[1].getAsInteger(10, v) || v < INT32_MIN || v > INT32_MAX)
      return std::nullopt;
    size_t at = m[0].data() - rest.data();
    rewritten += rest.substr(0, at) + "(" + m[1].str() + ")";
    rest = rest.substr(at + m[0].size());
  }
  rewritten += rest;
  auto isWordChar = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; };
  auto wordAt = [&](size_t i, StringRef word) {
    return rewritten.compare(i, word.size(), word.str()) == 0 && (i == 0 || !isWordChar(rewritten[i - 1])) &&
           (i + word.size() >= rewritten.size() || !isWordChar(rewritten[i + word.size()]));
  };
  std::string out;
  for (size_t i = 0; i < rewritten.size();) {
    if (wordAt(i, "int64_t")) {
      out += "int32_t";
      i += 7;
    } else if (wordAt(i, "kiln_divisor")) {
      out += "kiln_divisor32";
      i += 12;
    } else {
      out += rewritten[i++];
    }
  }
  return out;
}

FailureOr<GeneratedKernel> KernelEmitter::run() {
  auto yield = cast<YieldOp>(kernel.getBody().front().getTerminator());
  if (yield.getValues().size() != 1)
    return emitError(kernel.getLoc()) << "codegen: a kernel with "
                                      << yield.getValues().size() << " results";
  Value root = yield.getValues()[0];
  pushScope();
  LogicalResult ok = success();
  StringRef schedule = kernel.getSchedule();
  Operation *rootOp = root.getDefiningOp();
  if (schedule == "reduction") {
    if (auto reduce = dyn_cast_or_null<ReduceOp>(rootOp))
      ok = emitReduction(reduce);
    else if (auto arg = dyn_cast_or_null<ArgReduceOp>(rootOp))
      ok = emitArgReduction(arg);
    else if (auto cumulative = dyn_cast_or_null<CumulativeOp>(rootOp))
      ok = emitCumulative(cumulative);
    else if (auto topK = dyn_cast_or_null<TopKOp>(rootOp); topK && root == topK.getIndices())
      ok = emitTopK(topK);
    else if (auto count = dyn_cast_or_null<CountNonZeroOp>(rootOp))
      ok = emitCountNonZero(count);
    else
      return emitError(kernel.getLoc()) << "codegen: a reduction kernel must yield a kiln.reduce, "
                                           "kiln.arg_reduce, kiln.cumulative, kiln.top_k's indices "
                                           "or kiln.count_non_zero";
  } else if (schedule == "compaction") {
    if (auto compact = dyn_cast_or_null<CompactNonZeroOp>(rootOp))
      ok = emitCompactNonZero(compact);
    else if (auto select = dyn_cast_or_null<NmsSelectOp>(rootOp))
      ok = emitNmsSelect(select);
    else
      return emitError(kernel.getLoc()) << "codegen: a compaction kernel must yield a "
                                           "kiln.compact_non_zero or kiln.nms_select";
  } else if (schedule == "attention") {
    auto attention = dyn_cast_or_null<AttentionOp>(rootOp);
    ArrayRef<int64_t> outputPerm;
    // The head merge (kiln-form-kernels): reshapes keep the row-major order,
    // so the transpose under them says where each element lands.
    while (auto reshape = dyn_cast_or_null<ReshapeOp>(rootOp))
      rootOp = reshape.getInput().getDefiningOp();
    if (auto transpose = dyn_cast_or_null<TransposeOp>(rootOp)) {
      attention = transpose.getInput().getDefiningOp<AttentionOp>();
      outputPerm = transpose.getPermutation();
    }
    if (!attention)
      return emitError(kernel.getLoc()) << "codegen: an attention kernel must yield a "
                                           "kiln.attention or a transpose of one";
    ok = emitAttention(attention, outputPerm);
  } else if (schedule == "row") {
    if (!isa_and_nonnull<SoftmaxOp, LogSoftmaxOp, LayerNormOp>(rootOp))
      return emitError(kernel.getLoc())
             << "codegen: a row kernel must yield a softmax, log_softmax or layer_norm";
    ok = emitRow(rootOp);
  } else {
    ok = emitPointwise(root);
  }
  if (failed(ok))
    return failure();

  // The signature: result, inputs, then one value per symbol.
  std::string params = storageType(elementOf(root)) + " *KILN_RESTRICT out";
  for (BlockArgument arg : kernel.getBody().front().getArguments())
    params += ", const " + storageType(elementOf(arg)) + " *KILN_RESTRICT in" +
              std::to_string(arg.getArgNumber());
  GeneratedKernel g;
  g.schedule = schedule.str();
  g.blockPerItem = blockPerItem;
  for (const std::string &s : symbols) {
    params += ", int64_t sym_" + s;
    g.symbols.push_back(s);
  }
  g.reportsErrors = reportsErrors;
  g.workItems = workItems;
  g.flops = flops;
  g.vectorWidth = vectorWidth;
  g.vectorLoads = vectorLoads;
  g.resultBytes = static_cast<int>(storageBytes(elementOf(root)));
  g.dividesData = dividesData;
  g.perThreadMatrix = perThreadMatrix;
  g.doubleTaps = doubleTaps;
  if (reportsErrors)
    params += ", int32_t *kiln_error";
  body = prologue + body;
  SmallVector<DimExpr> symbolicSizes;
  if (index32Candidate(schedule, symbolicSizes))
    if (std::optional<std::string> narrow = narrowIndexText(body)) {
      if (symbols.empty()) {
        body = std::move(*narrow);
        g.index32 = true;
      } else {
        // Both bodies; a variant whose sizes fit defines KILN_INDEX32.
        body = "#ifdef KILN_INDEX32\n" + *narrow + "#else\n" + body + "#endif\n";
        g.index32Sizes.assign(symbolicSizes.begin(), symbolicSizes.end());
      }
    }
  // (KILN_HALF_OCCUPANCY follows from the schedule: row kernels have it.)
  uint64_t hash = llvm::xxh3_64bits(StringRef(params + "\n" + schedule.str() + "\n" + body));
  std::string hex;
  llvm::raw_string_ostream(hex) << llvm::format_hex_no_prefix(hash, 16);
  g.name = "kiln_" + g.schedule + "_" + hex;

  std::string src;
  llvm::raw_string_ostream os(src);
  os << "// " << g.name << ": " << g.schedule << " kernel\n";
  for (const std::string &s : symbols)
    os << "#ifndef KILN_SYM_" << s << "\n#define KILN_SYM_" << s << " sym_" << s
       << "\n#define KILN_UNDEF_SYM_" << s << "\n#endif\n";
  os << "extern \"C\" __global__ void " << (halfOccupancy ? "KILN_HALF_OCCUPANCY " : "") << g.name
     << "(" << params << ") {\n"
     << body << "}\n";
  for (const std::string &s : symbols)
    os << "#ifdef KILN_UNDEF_SYM_" << s << "\n#undef KILN_SYM_" << s << "\n#undef KILN_UNDEF_SYM_"
       << s << "\n#endif\n";
  // Host emulation: the launcher runs blocks as iterations (OpenMP across them,
  // unless there is one block: a team per tiny kernel costs more than the
  // kernel); `args` holds a pointer to each parameter, as cuLaunchKernel takes them.
  // (KILN_HOST_BLOCK_THREADS, a test mode of kiln_device.h: threads per
  // block, blocks in order.)
  std::string call = g.name + "(*(" + storageType(elementOf(root)) + " **)args[0]";
  unsigned next = 1;
  for (BlockArgument arg : kernel.getBody().front().getArguments())
    call += ", *(const " + storageType(elementOf(arg)) + " **)args[" + std::to_string(next++) + "]";
  for (size_t s = 0; s < symbols.size(); ++s)
    call += ", *(int64_t *)args[" + std::to_string(next++) + "]";
  if (reportsErrors)
    call += ", *(int32_t **)args[" + std::to_string(next++) + "]";
  call += ")";
  os << "#ifndef __CUDACC_RTC__\nextern \"C\" void " << g.name
     << "_host(void **args, int64_t grid) {\n"
     << "#ifdef KILN_HOST_BLOCK_THREADS\n"
     << "  kiln_run_blocks(grid, [&] { " << call << "; });\n"
     << "#else\n"
     << "#pragma omp parallel for schedule(static) if(grid > 1)\n"
     << "  for (int64_t b = 0; b < grid; ++b) {\n"
     << "    blockIdx.x = b;\n    gridDim.x = grid;\n    " << call << ";\n  }\n"
     << "#endif\n}\n"
     // How many parameters the launcher reads: a capturing driver (the fake
     // CUDA driver's graphs) copies their values as the launch is recorded.
     << "extern \"C\" const int " << g.name << "_host_argc = " << next << ";\n#endif\n";
  g.source = src;
  return g;
}

} // namespace

FailureOr<GeneratedKernel> emitKernel(KernelOp kernel) { return KernelEmitter(kernel).run(); }

bool index32Fits(const GeneratedKernel &kernel, const std::map<std::string, int64_t> &symbolValues) {
  if (kernel.index32Sizes.empty())
    return false;
  std::map<unsigned, int64_t> byPosition;
  for (const std::string &name : kernel.symbols) {
    auto it = symbolValues.find(name);
    if (it == symbolValues.end() || it->second < 0 || it->second > kMaxIndex32Elements)
      return false;
    byPosition[cast<AffineSymbolExpr>(getSymbolDim(kernel.index32Sizes[0].getContext(), name))
                   .getPosition()] = it->second;
  }
  for (DimExpr size : kernel.index32Sizes) {
    std::optional<int64_t> n = evaluateDim(size, [&](unsigned position) -> std::optional<int64_t> {
      auto it = byPosition.find(position);
      return it == byPosition.end() ? std::nullopt : std::optional<int64_t>(it->second);
    });
    if (!n || *n > kMaxIndex32Elements)
      return false;
  }
  return true;
}

GeneratedKernel withIndex32(GeneratedKernel kernel) {
  kernel.source = "#define KILN_INDEX32\n" + kernel.source + "#undef KILN_INDEX32\n";
  return kernel;
}

void addLintFacts(llvm::json::Object &o, const GeneratedKernel &kernel) {
  o["vector_width"] = kernel.vectorWidth;
  o["vector_loads"] = kernel.vectorLoads;
  o["index32"] = kernel.index32;
  o["result_bytes"] = kernel.resultBytes;
  o["divides_data"] = kernel.dividesData;
  o["per_thread_matrix"] = kernel.perThreadMatrix;
  o["double_taps"] = kernel.doubleTaps;
}

FailureOr<std::vector<GeneratedKernel>> emitKernels(ModuleOp module) {
  std::vector<GeneratedKernel> kernels;
  WalkResult r = module.walk([&](KernelOp k) {
    FailureOr<GeneratedKernel> g = emitKernel(k);
    if (failed(g))
      return WalkResult::interrupt();
    kernels.push_back(std::move(*g));
    return WalkResult::advance();
  });
  if (r.wasInterrupted())
    return failure();
  return kernels;
}

std::string kernelTranslationUnit(const std::vector<GeneratedKernel> &kernels) {
  std::string tu = "#include \"kiln/device/kiln_device.h\"\n";
  std::set<std::string> seen;
  for (const GeneratedKernel &k : kernels)
    if (seen.insert(k.name).second)
      tu += "\n" + k.source;
  return tu;
}

} // namespace kiln
