//===- MergeSiblingMatmuls.cpp - Q, K and V projections as one matmul ------===//
//
// Attention layers exported from HuggingFace-style code project one input
// through three Linear layers (Q, K, V), three matmuls of the same activation
// by three constant weights. One matmul by the weights side by side reads the
// activation once and makes one larger, more efficient cuBLASLt call; each
// projection is then a slice of the last dim of its result, which the head
// split's kernel reads in place. The same holds for any matmuls sharing their
// left operand with constant right operands (gate and up projections of a
// gated MLP). Weight-only quantized projections (kiln.matmul_nbits: an int4
// model's, or --weights') merge the same way: their packed columns, scales
// and zero points are rows, so the merged weights are the members' one after
// the other, and one GEMV reads the activation once for all of them, with one
// launch instead of three (a decode step's Q/K/V). Gate and up projections
// whose only reader is SwiGLU's `silu(gate) * up` become one gated product
// instead (kiln.matmul_nbits {glu}: their columns interleaved by 8, the
// product its kernel's epilogue).
//===----------------------------------------------------------------------===//

#include "passes/ConstantValues.h"
#include "passes/Matching.h"
#include "passes/Passes.h"

#include "ir/Kiln/KilnDialect.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "llvm/ADT/MapVector.h"

#include <cstring>
#include <memory>
#include <tuple>

namespace kiln {
#define GEN_PASS_DEF_MERGESIBLINGMATMULSPASS
#include "passes/Passes.h.inc"
} // namespace kiln

using namespace mlir;

namespace kiln {
namespace {

/// A matmul that can join a group: 2-D constant f64/f32/f16/bf16 right operand, not
/// transposed (its columns are concatenated), at the function's top level.
/// Its weights are a view of the constant's bytes (a copy only for a splat):
/// a model's every matmul is a candidate, most of them in no group.
struct Candidate {
  MatmulOp op;
  llvm::ArrayRef<char> weights;
  /// Backs `weights` for a splat; shared, so that a copy of the candidate
  /// points at the same bytes.
  std::shared_ptr<std::vector<char>> splatWeights;
  int64_t rows = 0, cols = 0;
};

std::optional<Candidate> candidate(MatmulOp m) {
  if (m.getTransposeRhs())
    return std::nullopt;
  auto rhsType = dyn_cast<RankedTensorType>(m.getRhs().getType());
  // The float types matmuls are exported in, each of which spells +0.0 as
  // zero bytes (the merged bias's filler).
  Type element = rhsType ? rhsType.getElementType() : Type();
  if (!rhsType || rhsType.getRank() != 2 || !rhsType.hasStaticShape() ||
      !(element.isF64() || element.isF32() || element.isF16() || element.isBF16()))
    return std::nullopt;
  Candidate c{m, {}, std::make_shared<std::vector<char>>(), rhsType.getDimSize(0),
              rhsType.getDimSize(1)};
  std::optional<llvm::ArrayRef<char>> weights = constantBytes(m.getRhs(), *c.splatWeights);
  if (!weights)
    return std::nullopt;
  c.weights = *weights;
  if (Value bias = m.getBias()) {
    std::vector<char> unused;
    auto biasType = dyn_cast<RankedTensorType>(bias.getType());
    if (!constantBytes(bias, unused) || !biasType || biasType.getNumElements() != c.cols ||
        biasType.getElementType() != rhsType.getElementType())
      return std::nullopt;
  }
  return c;
}

/// Replaces each member of `group` by its columns of `merged` (a slice of
/// its last dim, in the group's order) and erases the members and the
/// constants only they read; false (and `created` erased, nothing changed)
/// when a slice's type would not be its member's result type.
template <typename CandidateT>
bool replaceBySlices(OpBuilder &b, Location loc, Value merged, ArrayRef<CandidateT> group,
                     SmallVectorImpl<Operation *> &created) {
  int64_t rank = cast<RankedTensorType>(merged.getType()).getRank();
  SmallVector<Value> slices;
  int64_t offset = 0;
  bool typesMatch = true;
  for (const CandidateT &c : group) {
    SmallVector<int64_t> starts(rank, 0), ends(rank, kSliceToEnd), steps(rank, 1);
    starts.back() = offset;
    ends.back() = offset + c.cols;
    offset += c.cols;
    Value s = i64Vector(b, loc, starts), e = i64Vector(b, loc, ends), st = i64Vector(b, loc, steps);
    auto slice = SliceOp::create(b, loc, ValueRange{merged, s, e, st});
    for (Value v : {s, e, st})
      created.push_back(v.getDefiningOp());
    created.push_back(slice);
    typesMatch = typesMatch && slice.getType() == c.op->getResult(0).getType();
    slices.push_back(slice.getResult());
  }
  if (!typesMatch) {
    for (Operation *op : llvm::reverse(created))
      op->erase();
    return false;
  }
  for (auto [c, slice] : llvm::zip(group, slices)) {
    Operation *member = c.op;
    // The member's constants (weights, scales, zero points, bias): erased
    // when nothing else reads them.
    SmallVector<Value> constants;
    for (Value v : llvm::drop_begin(member->getOperands()))
      if (!llvm::is_contained(constants, v))
        constants.push_back(v);
    member->getResult(0).replaceAllUsesWith(slice);
    member->erase();
    for (Value v : constants)
      eraseDeadWeight(v);
  }
  return true;
}

/// The biases of `group`'s members (ops of OpT, `cols` columns each) side by
/// side as one constant of `element`, zero bytes (+0.0 in each float type)
/// for a member without one; null when no member has one.
template <typename OpT, typename CandidateT>
Value joinedBias(OpBuilder &b, Location loc, ArrayRef<CandidateT> group, Type element) {
  if (llvm::none_of(group, [](const CandidateT &c) { return bool(OpT(c.op).getBias()); }))
    return {};
  size_t elementBytes = cast<FloatType>(element).getWidth() / 8, cols = 0;
  for (const CandidateT &c : group)
    cols += static_cast<size_t>(c.cols);
  return makeConstantFromBytes(
      b, loc, RankedTensorType::get({static_cast<int64_t>(cols)}, element), cols * elementBytes,
      [&](MutableArrayRef<char> out) {
        size_t offset = 0;
        for (const CandidateT &c : group) {
          size_t memberBytes = static_cast<size_t>(c.cols) * elementBytes;
          std::vector<char> splat;
          Value bias = OpT(c.op).getBias();
          std::optional<ArrayRef<char>> bytes = bias ? constantBytes(bias, splat) : std::nullopt;
          if (bytes && bytes->size() == memberBytes)
            std::memcpy(out.data() + offset, bytes->data(), memberBytes);
          else
            std::memset(out.data() + offset, 0, memberBytes);
          offset += memberBytes;
        }
      });
}

/// Replaces `group` (same left operand, flags, activation and weight rows) by
/// one matmul and a slice per member; false (nothing changed) when the slices'
/// types would not be the members' result types.
bool merge(ArrayRef<Candidate> group) {
  MatmulOp first = group.front().op;
  for (const Candidate &c : group)
    if (MatmulOp member = c.op; member->isBeforeInBlock(first))
      first = member;
  int64_t rows = group.front().rows, cols = 0;
  for (const Candidate &c : group)
    cols += c.cols;
  Type element = cast<RankedTensorType>(first.getRhs().getType()).getElementType();
  size_t elementBytes = cast<FloatType>(element).getWidth() / 8;
  OpBuilder b(first);
  Location loc = first.getLoc();
  SmallVector<Operation *> created;
  // Weights side by side: row r of the merged matrix is row r of each
  // member's, copied as bytes.
  Value weights = makeConstantFromBytes(
      b, loc, RankedTensorType::get({rows, cols}, element),
      static_cast<size_t>(rows * cols) * elementBytes, [&](MutableArrayRef<char> out) {
        size_t offset = 0;
        for (const Candidate &c : group) {
          size_t rowBytes = static_cast<size_t>(c.cols) * elementBytes;
          for (int64_t r = 0; r < rows; ++r)
            std::memcpy(out.data() + (static_cast<size_t>(r * cols) * elementBytes) + offset,
                        c.weights.data() + r * rowBytes, rowBytes);
          offset += rowBytes;
        }
      });
  SmallVector<Value> operands = {first.getLhs(), weights};
  created.push_back(operands.back().getDefiningOp());
  if (Value bias = joinedBias<MatmulOp>(b, loc, group, element)) {
    operands.push_back(bias);
    created.push_back(bias.getDefiningOp());
  }
  SmallVector<NamedAttribute> attributes;
  if (first.getActivation() != Activation::none)
    attributes.push_back(b.getNamedAttr("activation", first.getActivationAttr()));
  if (first.getTransposeLhs())
    attributes.push_back(b.getNamedAttr("transpose_lhs", b.getBoolAttr(true)));
  auto merged = MatmulOp::create(b, loc, operands, attributes);
  created.push_back(merged);
  return replaceBySlices(b, loc, merged.getResult(), group, created);
}

/// A kiln.matmul_nbits that can join a group: constant weights, scales and
/// zero points (each with a row a column), no bias or a constant vector one.
struct NBitsCandidate {
  MatmulNBitsOp op;
  int64_t cols = 0;
};

bool isStaticConstant(Value v) {
  auto type = v ? dyn_cast<RankedTensorType>(v.getType()) : RankedTensorType();
  return type && type.hasStaticShape() && v.getDefiningOp<ConstantOp>();
}

std::optional<NBitsCandidate> nbitsCandidate(MatmulNBitsOp m) {
  // (A gated product's columns are not its result's: no sibling.)
  if (m.getGlu() || !isStaticConstant(m.getWeights()) || !isStaticConstant(m.getScales()) ||
      (m.getZeroPoints() && !isStaticConstant(m.getZeroPoints())))
    return std::nullopt;
  int64_t cols = cast<RankedTensorType>(m.getWeights().getType()).getDimSize(0);
  if (Value bias = m.getBias()) {
    // Its bytes are read when the merged bias is written: a bias that
    // cannot be read is no candidate (never a member's zeros).
    auto biasType = cast<RankedTensorType>(bias.getType());
    std::vector<char> unused;
    std::optional<ArrayRef<char>> bytes = isStaticConstant(bias) ? constantBytes(bias, unused)
                                                                 : std::nullopt;
    if (!bytes || biasType.getRank() != 1 || biasType.getDimSize(0) != cols ||
        bytes->size() != static_cast<size_t>(cols) * biasType.getElementTypeBitWidth() / 8)
      return std::nullopt;
  }
  return NBitsCandidate{m, cols};
}

/// The constants `values` (one type but for dim 0) joined along dim 0: their
/// bytes one after the other; null when one's bytes cannot be read.
Value concatRows(OpBuilder &b, Location loc, ArrayRef<Value> values) {
  auto type = cast<RankedTensorType>(values.front().getType());
  SmallVector<int64_t> shape(type.getShape());
  shape.front() = 0;
  std::vector<std::vector<char>> storage(values.size());
  SmallVector<ArrayRef<char>> bytes;
  size_t total = 0;
  for (auto [v, keep] : llvm::zip(values, storage)) {
    std::optional<ArrayRef<char>> data = constantBytes(v, keep);
    if (!data)
      return {};
    bytes.push_back(*data);
    total += data->size();
    shape.front() += cast<RankedTensorType>(v.getType()).getDimSize(0);
  }
  return makeConstantFromBytes(b, loc, RankedTensorType::get(shape, type.getElementType()), total,
                               [&](MutableArrayRef<char> out) {
                                 size_t offset = 0;
                                 for (ArrayRef<char> data : bytes) {
                                   std::memcpy(out.data() + offset, data.data(), data.size());
                                   offset += data.size();
                                 }
                               });
}

/// A kiln.matmul_nbits of `like`'s input, bits and block size over these
/// constants (zero points and bias where not null); null where its shape
/// function refuses them.
Operation *createNBits(OpBuilder &b, Location loc, MatmulNBitsOp like, Value weights,
                       Value scales, Value zeros, Value bias, bool glu) {
  SmallVector<Value> operands = {like.getInput(), weights, scales};
  if (zeros)
    operands.push_back(zeros);
  if (bias)
    operands.push_back(bias);
  SmallVector<NamedAttribute> attributes = {
      b.getNamedAttr("bits", like.getBitsAttr()),
      b.getNamedAttr("block_size", like.getBlockSizeAttr()),
      b.getNamedAttr("operandSegmentSizes",
                     b.getDenseI32ArrayAttr({1, 1, 1, zeros ? 1 : 0, bias ? 1 : 0}))};
  if (glu)
    attributes.push_back(b.getNamedAttr("glu", b.getUnitAttr()));
  return createInferred(b, loc, MatmulNBitsOp::getOperationName(), operands, attributes);
}

/// Replaces `group` (same input, bits, block size, blocks, scale and zero
/// point kinds) by one kiln.matmul_nbits and a slice per member.
bool mergeNBits(ArrayRef<NBitsCandidate> group) {
  MatmulNBitsOp first = group.front().op;
  for (const NBitsCandidate &c : group)
    if (c.op->isBeforeInBlock(first))
      first = c.op;
  OpBuilder b(first);
  Location loc = first.getLoc();
  SmallVector<Operation *> created;
  auto joined = [&](auto get) -> Value {
    SmallVector<Value> values;
    for (const NBitsCandidate &c : group)
      values.push_back(get(MatmulNBitsOp(c.op)));
    Value v = concatRows(b, loc, values);
    if (v)
      created.push_back(v.getDefiningOp());
    return v;
  };
  Value weights = joined([](MatmulNBitsOp m) { return m.getWeights(); });
  Value scales = joined([](MatmulNBitsOp m) { return m.getScales(); });
  Value zeros = first.getZeroPoints() ? joined([](MatmulNBitsOp m) { return m.getZeroPoints(); })
                                      : Value();
  Value bias = joinedBias<MatmulNBitsOp>(
      b, loc, group, cast<RankedTensorType>(first.getType()).getElementType());
  if (bias)
    created.push_back(bias.getDefiningOp());
  Operation *merged = nullptr;
  if (weights && scales && (zeros || !first.getZeroPoints())) {
    merged = createNBits(b, loc, first, weights, scales, zeros, bias, /*glu=*/false);
  }
  if (!merged) {
    for (Operation *op : llvm::reverse(created))
      op->erase();
    return false;
  }
  created.push_back(merged);
  return replaceBySlices(b, loc, merged->getResult(0), group, created);
}

/// The constants `gate` and `up` (one type, `cols` rows each along dim 0; a
/// null one is zeros) interleaved as kiln.matmul_nbits {glu} takes its
/// columns: in each group of 16 rows, 8 of gate's and then the same 8 of
/// up's. Null when a constant's bytes cannot be read.
Value interleaveGates(OpBuilder &b, Location loc, Value gate, Value up, int64_t cols) {
  auto type = cast<RankedTensorType>((gate ? gate : up).getType());
  SmallVector<int64_t> shape(type.getShape());
  shape.front() = 2 * cols;
  auto joinedType = RankedTensorType::get(shape, type.getElementType());
  const size_t total = static_cast<size_t>(joinedType.getNumElements()) *
                       joinedType.getElementTypeBitWidth() / 8,
               rowBytes = total / static_cast<size_t>(2 * cols);
  std::vector<char> gateKeep, upKeep, zeros(total / 2, 0);
  std::optional<ArrayRef<char>> g = gate ? constantBytes(gate, gateKeep) : ArrayRef<char>(zeros),
                                u = up ? constantBytes(up, upKeep) : ArrayRef<char>(zeros);
  if (!g || !u || g->size() != total / 2 || u->size() != total / 2)
    return {};
  return makeConstantFromBytes(b, loc, joinedType, total, [&](MutableArrayRef<char> out) {
    for (int64_t i = 0; i < cols; ++i) {
      size_t to = static_cast<size_t>(16 * (i / 8) + i % 8) * rowBytes;
      std::memcpy(out.data() + to, g->data() + i * rowBytes, rowBytes);
      std::memcpy(out.data() + to + 8 * rowBytes, u->data() + i * rowBytes, rowBytes);
    }
  });
}

/// SwiGLU's gate over two weight-only products of one input, `silu(x Wg) *
/// (x Wu)` (the SiLU as `g * sigmoid(g)`), each product read by the gate
/// alone: one kiln.matmul_nbits {glu}, whose kernel stores the gated
/// product and never the two halves (one launch, and [.., N] values neither
/// written nor read back by a kernel of the product). Codes below 8 bits,
/// where the GEMV's plan pairs two columns a thread (at 8 a column's bytes
/// are its codes, and one a thread is its plan); a multiple of 8 columns
/// each. False (nothing changed) where `product` is no such gate.
bool fuseGate(MulOp product) {
  for (bool swapped : {false, true}) {
    Value siluValue = swapped ? product.getRhs() : product.getLhs(),
          upValue = swapped ? product.getLhs() : product.getRhs();
    auto silu = siluValue.getDefiningOp<MulOp>();
    auto up = upValue.getDefiningOp<MatmulNBitsOp>();
    if (!silu || !silu->hasOneUse() || !up || !upValue.hasOneUse())
      continue;
    // silu = g * sigmoid(g), either way round.
    for (bool sigmoidFirst : {false, true}) {
      Value x = sigmoidFirst ? silu.getRhs() : silu.getLhs();
      auto sigmoid = (sigmoidFirst ? silu.getLhs() : silu.getRhs()).getDefiningOp<SigmoidOp>();
      auto gate = x.getDefiningOp<MatmulNBitsOp>();
      if (!sigmoid || sigmoid.getInput() != x || !sigmoid->hasOneUse() || !gate || gate == up ||
          std::distance(x.use_begin(), x.use_end()) != 2)
        continue;
      std::optional<NBitsCandidate> g = nbitsCandidate(gate), u = nbitsCandidate(up);
      if (!g || !u || g->cols != u->cols || g->cols % 8 != 0 || gate.getBits() >= 8 ||
          gate.getInput() != up.getInput() || gate.getBits() != up.getBits() ||
          gate.getBlockSize() != up.getBlockSize() || gate.getGlu() || up.getGlu() ||
          gate.getWeights().getType() != up.getWeights().getType() ||
          gate.getScales().getType() != up.getScales().getType() ||
          bool(gate.getZeroPoints()) != bool(up.getZeroPoints()) ||
          (gate.getZeroPoints() &&
           gate.getZeroPoints().getType() != up.getZeroPoints().getType()) ||
          gate.getType() != up.getType() || product.getType() != up.getType())
        continue;
      Operation *first = gate->isBeforeInBlock(up) ? gate.getOperation() : up.getOperation();
      OpBuilder b(first);
      Location loc = product.getLoc();
      SmallVector<Operation *> created;
      auto joined = [&](Value a, Value c) {
        Value v = interleaveGates(b, loc, a, c, g->cols);
        if (v)
          created.push_back(v.getDefiningOp());
        return v;
      };
      Value weights = joined(gate.getWeights(), up.getWeights());
      Value scales = joined(gate.getScales(), up.getScales());
      Value zeros = gate.getZeroPoints() ? joined(gate.getZeroPoints(), up.getZeroPoints()) : Value();
      Value bias = gate.getBias() || up.getBias() ? joined(gate.getBias(), up.getBias()) : Value();
      Operation *fused = nullptr;
      if (weights && scales && (zeros || !gate.getZeroPoints()) &&
          (bias || !(gate.getBias() || up.getBias()))) {
        fused = createNBits(b, loc, gate, weights, scales, zeros, bias, /*glu=*/true);
      }
      if (!fused || fused->getResult(0).getType() != product.getType()) {
        if (fused)
          fused->erase();
        for (Operation *op : llvm::reverse(created))
          op->erase();
        return false;
      }
      product.getResult().replaceAllUsesWith(fused->getResult(0));
      // (Once each: the two may share one, a splat's or tied weights.)
      SmallVector<Value> constants;
      for (MatmulNBitsOp m : {gate, up})
        for (Value v : llvm::drop_begin(m->getOperands()))
          if (!llvm::is_contained(constants, v))
            constants.push_back(v);
      product.erase();
      silu.erase();
      sigmoid.erase();
      gate.erase();
      up.erase();
      for (Value v : constants)
        eraseDeadWeight(v);
      return true;
    }
  }
  return false;
}

struct MergeSiblingMatmulsPass
    : public impl::MergeSiblingMatmulsPassBase<MergeSiblingMatmulsPass> {
  using MergeSiblingMatmulsPassBase::MergeSiblingMatmulsPassBase;
  void runOnOperation() override {
    func::FuncOp func = getOperation();
    // Groups by (left operand, its transpose flag, activation, weight rows,
    // element type), in the order they are met.
    using Key = std::tuple<const void *, unsigned, unsigned, int64_t, const void *>;
    llvm::MapVector<Key, std::vector<Candidate>> groups;
    for (Operation &op : func.getBody().front()) {
      auto m = dyn_cast<MatmulOp>(&op);
      if (!m)
        continue;
      std::optional<Candidate> c = candidate(m);
      if (!c)
        continue;
      Key key{m.getLhs().getAsOpaquePointer(), static_cast<unsigned>(m.getTransposeLhs()),
              static_cast<unsigned>(m.getActivation()), c->rows,
              cast<RankedTensorType>(m.getRhs().getType()).getElementType().getAsOpaquePointer()};
      groups[key].push_back(std::move(*c));
    }
    for (auto &[key, group] : groups)
      if (group.size() >= 2)
        merge(group);
    // SwiGLU's gates over weight-only products first: the pair becomes one
    // gated product rather than siblings whose halves a kernel multiplies.
    // (A fusion erases the product and ops before it: the walk has passed them.)
    for (Operation &op : llvm::make_early_inc_range(func.getBody().front()))
      if (auto mul = dyn_cast<MulOp>(&op); mul && gates)
        fuseGate(mul);
    // Weight-only quantized ones by (input, bits, block size, blocks, bytes a
    // block, scale type, zero points' type and row length, or none).
    using NBitsKey = std::tuple<const void *, int64_t, int64_t, int64_t, int64_t, const void *,
                                const void *, int64_t>;
    llvm::MapVector<NBitsKey, std::vector<NBitsCandidate>> nbitsGroups;
    for (Operation &op : func.getBody().front()) {
      auto m = dyn_cast<MatmulNBitsOp>(&op);
      std::optional<NBitsCandidate> c = m ? nbitsCandidate(m) : std::nullopt;
      if (!c)
        continue;
      auto weights = cast<RankedTensorType>(m.getWeights().getType());
      auto zeros = m.getZeroPoints() ? cast<RankedTensorType>(m.getZeroPoints().getType())
                                     : RankedTensorType();
      NBitsKey key{m.getInput().getAsOpaquePointer(), static_cast<int64_t>(m.getBits()),
                   static_cast<int64_t>(m.getBlockSize()), weights.getDimSize(1),
                   weights.getDimSize(2),
                   cast<RankedTensorType>(m.getScales().getType()).getElementType().getAsOpaquePointer(),
                   zeros ? zeros.getElementType().getAsOpaquePointer() : nullptr,
                   zeros ? zeros.getDimSize(1) : -1};
      nbitsGroups[key].push_back(std::move(*c));
    }
    for (auto &[key, group] : nbitsGroups)
      if (group.size() >= 2)
        mergeNBits(group);
  }
};

} // namespace
} // namespace kiln
