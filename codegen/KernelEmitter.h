//===- KernelEmitter.h - one kernel to CUDA C, for the schedules -*- C++ -*-===//
//
// Private to codegen/: the emitter of one kiln.kernel (KernelEmitter), whose
// schedules each live in a file of their own (SchedulePointwise.cpp,
// ScheduleReduction.cpp, ScheduleRow.cpp, ScheduleAttention.cpp,
// ScheduleCompaction.cpp, ScheduleSampleTokens.cpp, ScheduleMatmulNBits.cpp)
// over the element emitter (ElementOps.cpp,
// ElementLibraryOps.cpp, ElementSampling.cpp) and the index arithmetic
// (EmitterIndexing.cpp); CudaEmitter.cpp picks the schedule and writes the
// kernel. CudaEmitter.h is the interface the rest of kiln sees.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_CODEGEN_KERNELEMITTER_H
#define KILN_CODEGEN_KERNELEMITTER_H

#include "codegen/CudaEmitter.h"

#include "ir/Kiln/KilnDialect.h"
#include "ir/Kiln/OpTables.h"
#include "ir/Kiln/KernelTypes.h"
#include "kiln/artifact/DeviceLaunch.h"
#include "kiln/artifact/Format.h"

#include "mlir/IR/Matchers.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "llvm/ADT/TypeSwitch.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/Regex.h"
#include "llvm/Support/raw_ostream.h"
#include "llvm/Support/xxhash.h"

#include <array>
#include <cmath>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace kiln::codegen {

// The emitter's files all spell MLIR's types unqualified; only they include
// this header.
using namespace mlir;

/// The device library's name of a float8 or float4 type ("f8e4m3fn",
/// "f4e2m1fn"): stored as a byte, computed in float. "" for other types.
inline std::string float8Name(Type t) {
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
inline std::string subByteIntegerName(Type t) {
  auto i = dyn_cast<IntegerType>(t);
  if (!i || (i.getWidth() != 2 && i.getWidth() != 4))
    return "";
  return (i.isUnsigned() ? "u" : "i") + std::to_string(i.getWidth());
}

/// The C type a value of `t` is computed in.
inline std::string computeType(Type t) {
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
inline std::string storageType(Type t) {
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

inline bool isFloatType(Type t) { return isa<FloatType>(t); }

/// Bytes of one element of `t` as a buffer stores it (bool: 1).
inline unsigned storageBytes(Type t) { return std::max(1u, (t.getIntOrFloatBitWidth() + 7) / 8); }

/// An op's axis attribute counted from the front (ONNX lets it count back).
inline int64_t normalizedAxis(int64_t axis, int64_t rank) { return axis < 0 ? axis + rank : axis; }

inline Type elementOf(Value v) { return cast<RankedTensorType>(v.getType()).getElementType(); }

inline std::string int64Literal(int64_t v) {
  if (v == INT64_MIN)
    return "(-9223372036854775807LL - 1)";
  return "(" + std::to_string(v) + "LL)";
}


/// The longest row (elements, fp32) a row kernel keeps in registers between
/// its passes: 16 values a thread at 128 threads.
constexpr int64_t kMaxCachedRow = 2048;

/// Threads per block of the runtime's launches (kiln/artifact/DeviceLaunch.h):
/// schedules that give each warp its own item state their work in blocks
/// of that many threads.
constexpr int64_t kBlockThreads = artifact::kDeviceBlockThreads;

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

/// The combining functions the block reductions of int64 counts take.
constexpr const char *kSumI64 = "[](int64_t a, int64_t b) { return a + b; }";
constexpr const char *kMaxI64 = "[](int64_t a, int64_t b) { return a < b ? b : a; }";

/// Runs of consecutive dims of a reshape's result and input with equal
/// products, as [resultBegin, resultEnd, inputBegin, inputEnd); nullopt when
/// the dims do not split so (EmitterIndexing.cpp).
std::optional<std::vector<std::array<size_t, 4>>> reshapeGroups(const SymShape &out,
                                                                 const SymShape &in);

/// The width of a kernel body's index arithmetic: the type its indices,
/// sizes and their casts are declared as, and the literals of their
/// constants. 32 bits only for the kernels index32Candidate admits, whose
/// every index and size fits (IMAD instead of IMAD.WIDE pairs, 32-bit
/// magic-number divides); the signature's symbols stay 64-bit either way.
enum class IndexWidth { i64, i32 };

class KernelEmitter {
public:
  explicit KernelEmitter(KernelOp kernel, IndexWidth width = IndexWidth::i64)
      : kernel(kernel), width(width), indexType(width == IndexWidth::i32 ? "int32_t" : "int64_t") {
    kiln = kernel->getContext()->getLoadedDialect<KilnDialect>();
  }

  FailureOr<GeneratedKernel> run();

private:
  KernelOp kernel;

  //===--- index width ------------------------------------------------------===//
  const IndexWidth width;
  /// The C type of every index and size the body declares or casts to.
  const std::string indexType;
  /// Set when a constant did not fit the narrow width: the 32-bit body is
  /// then not exact and run() keeps the 64-bit one.
  bool indexLiteralOverflow = false;
  /// An index or size constant as a C literal of indexType.
  std::string indexLiteral(int64_t v) {
    if (width == IndexWidth::i64)
      return int64Literal(v);
    if (v < INT32_MIN || v > INT32_MAX) {
      indexLiteralOverflow = true;
      return int64Literal(v);
    }
    return "(" + std::to_string(v) + ")";
  }
  /// A constant scalar of `t` as a C expression of its compute type (an
  /// integer's digits as an index literal: a narrow kernel's integer data is
  /// at most 32 bits, index32Candidate says).
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
    return "((" + type + ")" + indexLiteral(i.getValue().getSExtValue()) + ")";
  }

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
                                      "int64_t|int32_t|kiln_floordiv|kiln_ceildiv|kiln_floormod)+$");
    if ((size.find("KILN_SYM_") == std::string::npos && size.find("kiln_dim") == std::string::npos) ||
        !symbolic.match(size))
      return std::nullopt;
    auto [it, inserted] = divisors.try_emplace(size, "");
    if (inserted) {
      it->second = "fd" + std::to_string(divisors.size() - 1);
      prologue += std::string("  const ") + (width == IndexWidth::i32 ? "kiln_divisor32 " : "kiln_divisor ") + it->second + "(" + size + ");\n";
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
      return "((" + indexType + ")1)";
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
  FailureOr<std::string> scalarElement(Operation *op, Value v, ArrayRef<std::string> index);
  FailureOr<std::string> reshapeElement(ReshapeOp r, Value v, ArrayRef<std::string> index);
  FailureOr<std::string> sliceElement(SliceOp s, Value v, ArrayRef<std::string> index);
  FailureOr<std::string> concatElement(ConcatOp c, Value v, ArrayRef<std::string> index);
  FailureOr<std::string> padElement(PadOp p, Value v, ArrayRef<std::string> index);
  FailureOr<std::string> gatherElement(GatherOp g, Value v, ArrayRef<std::string> index);
  FailureOr<std::string> gatherElementsElement(GatherElementsOp g, Value v,
                                               ArrayRef<std::string> index);
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
    line(indexType + " " + kk + " = (" + indexType + ")" + k + ";");
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
  /// `closer`: "};" ends a lambda's body.
  void closeBlock(const char *closer = "}") {
    popScope();
    --indent;
    line(closer);
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
  LogicalResult emitCacheUpdate(CacheUpdateOp update);
  LogicalResult emitCacheWrite(CacheWriteOp write);
  /// An element of kiln.cache_write's new tensor (not in place).
  FailureOr<std::string> cacheWriteElement(CacheWriteOp w, Value v, ArrayRef<std::string> index);
  /// A circular cache_write's ring: the cache's length along `axis` (1 where
  /// that is a constant 0: no rows to place, and no literal `% 0` in the
  /// code). A length known only at run time makes the kernel divide by it
  /// (dividesData: the modulo is the op's own).
  std::string ringLength(CacheWriteOp w, int64_t axis);
  /// `start`'s place in the ring, in [0, ring) for any i64 start: one
  /// remainder (the compiler computes `start % ring` once).
  static std::string ringPlace(const std::string &start, const std::string &ring) {
    std::string rem = "(" + start + " % " + ring + ")";
    return "(" + rem + " < 0 ? " + rem + " + " + ring + " : " + rem + ")";
  }
  LogicalResult emitTiledTranspose(TransposeOp root);
  LogicalResult emitReduction(ReduceOp root);
  LogicalResult emitArgReduction(ArgReduceOp root);
  LogicalResult emitCumulative(CumulativeOp root);
  LogicalResult emitTopK(TopKOp root);
  LogicalResult emitSampleTokens(SampleTokensOp root);
  LogicalResult emitMatmulNBits(MatmulNBitsOp root);
  /// What a row kernel's loops need of its plan (ScheduleRow.cpp): the row op,
  /// its input and result, the accumulator type, the dims before, along and
  /// after the row, its length when known, and the vector path's width and
  /// vectors a thread (0 when it has none).
  struct RowPlan {
    Operation *root;
    Value x, result;
    Type t;
    std::string acc;
    std::vector<std::string> outerShape, innerShape, rowShape;
    std::optional<int64_t> staticRow;
    int rowWidth = 0, rowVectors = 0;
    bool layerNorm = false;
  };
  /// What one row loop gives its passes: the reduction across a row's threads,
  /// the loop over the thread's elements of the row, the store of a result
  /// element, the result's flat offset, and the max and sum combiners.
  struct RowPasses {
    std::function<std::string(const std::string &, const std::string &)> reduce;
    std::function<LogicalResult(
        const std::function<LogicalResult(const std::vector<std::string> &)> &)>
        loop;
    std::function<void(const std::string &, const std::string &)> storeResult;
    std::string flat, maxFn, sumFn;
  };
  LogicalResult emitRowLoop(const RowPlan &plan, bool warp, int64_t cache, int vectorThreads = 0);
  LogicalResult emitSoftmaxPasses(const RowPlan &plan, const RowPasses &passes);
  LogicalResult emitLayerNormPasses(const RowPlan &plan, const RowPasses &passes);
  LogicalResult emitRow(Operation *root);
  LogicalResult emitCountNonZero(CountNonZeroOp root);
  LogicalResult emitCompactNonZero(CompactNonZeroOp root);
  LogicalResult emitNmsSelect(NmsSelectOp root);
  void openTensorCoreBlock();
  /// `mmaF16` (empty: none) is "true" or "false": P V on tensor cores where
  /// the tile's `mma` says so, of fp16 (or bf16) operands.
  void emitOnlineSoftmaxStep(const std::string &acc, const std::string &ninf,
                             const std::string &BR, const std::string &BC, const std::string &DV,
                             const std::string &mmaF16);
  /// `outputPerm` (empty: none) is a transpose of the result the kernel
  /// writes in (the head merge), keeping the feature dim last.
  LogicalResult emitAttention(AttentionOp root, ArrayRef<int64_t> outputPerm);
  void setAttentionWork(AttentionOp root, int64_t tile, int64_t d, int64_t dv);
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
  /// `flops` run on tensor cores of fp16/bf16 operands
  /// (GeneratedKernel::halfTensorCoreFlops).
  bool halfTensorCoreFlops = false;
  /// Or at launches of tensorCoreMinRows rows or more
  /// (GeneratedKernel::tensorCoreRows).
  DimExpr tensorCoreRows;
  int64_t tensorCoreMinRows = 0;
  DimExpr tensorCoreL2Bytes;
  /// Bytes a launch reads through L2 (GeneratedKernel::l2Bytes); null: its
  /// buffers once.
  DimExpr l2Bytes;
  /// The kernel scratch a launch uses (GeneratedKernel::scratchBytes); null:
  /// none, and no `kiln_scratch` parameter.
  DimExpr scratchBytes;
  /// GeneratedKernel::vectorWidth and vectorLoads.
  int vectorWidth = 0, vectorLoads = 0;
  /// GeneratedKernel::dividesData.
  bool dividesData = false;
  /// GeneratedKernel::perThreadMatrix.
  bool perThreadMatrix = false;
  /// GeneratedKernel::streamBytesATrip.
  int streamBytesATrip = 0;
  /// GeneratedKernel::doubleTaps.
  bool doubleTaps = false;
  /// Held to the registers of 50% occupancy (KILN_HALF_OCCUPANCY): row
  /// kernels, whose per-thread state (a few running values) fits in 64
  /// registers even in double, where ptxas would otherwise take a few more;
  /// matmul_nbits with two columns a thread (emitMatmulNBits says when that
  /// fits).
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
  /// Writes the body of the kernel yielding `root` by its schedule.
  LogicalResult emitSchedule(Value root);
  bool index32Candidate(Schedule schedule, SmallVectorImpl<DimExpr> &symbolicSizes);
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

/// `op`'s KernelFacts::elementAccess; `computed` for an op without the facts.
inline ElementAccess elementAccessOf(Operation *op) {
  auto facts = dyn_cast<KernelFacts>(op);
  return facts ? facts.elementAccess() : ElementAccess::computed;
}

/// How a kernel whose ops broadcast by numpy rules reads its inputs along the
/// innermost dim `inner` of what it computes (SchedulePointwise.cpp).
std::optional<std::map<unsigned, int>> innermostReads(KernelOp kernel, int64_t inner,
                                                      Operation *except = nullptr);
/// Each input's PointwiseRead on the vector path of a pointwise kernel whose
/// inputs broadcast, or nothing.
std::optional<std::map<unsigned, int>> broadcastPointwiseReads(KernelOp kernel, Value root);
/// True when every element of the kernel reads every input at the result's own
/// position.
bool isIdentityPointwise(KernelOp kernel, Value root);

} // namespace kiln::codegen

#endif // KILN_CODEGEN_KERNELEMITTER_H
