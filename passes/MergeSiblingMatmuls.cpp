//===- MergeSiblingMatmuls.cpp - Q, K and V projections as one matmul ------===//
//
// Attention layers exported from HuggingFace-style code project one input
// through three Linear layers (Q, K, V), three matmuls of the same activation
// by three constant weights. One matmul by the weights side by side reads the
// activation once and makes one larger, more efficient cuBLASLt call; each
// projection is then a slice of the last dim of its result, which the head
// split's kernel reads in place. The same holds for any matmuls sharing their
// left operand with constant right operands (gate and up projections of a
// gated MLP).
//===----------------------------------------------------------------------===//

#include "passes/ConstantValues.h"
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

/// Replaces `group` (same left operand, flags, activation and weight rows) by
/// one matmul and a slice per member; false (nothing changed) when the slices'
/// types would not be the members' result types.
bool merge(ArrayRef<Candidate> group) {
  MatmulOp first = group.front().op;
  for (const Candidate &c : group)
    if (MatmulOp member = c.op; member->isBeforeInBlock(first))
      first = member;
  int64_t rows = group.front().rows, cols = 0;
  bool anyBias = false;
  for (const Candidate &c : group) {
    cols += c.cols;
    anyBias = anyBias || MatmulOp(c.op).getBias();
  }
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
  if (anyBias) {
    // The members' biases side by side, zero bytes (+0.0 in each of the
    // candidates' types) for a member without one.
    operands.push_back(makeConstantFromBytes(
        b, loc, RankedTensorType::get({cols}, element), static_cast<size_t>(cols) * elementBytes,
        [&](MutableArrayRef<char> out) {
          size_t offset = 0;
          for (const Candidate &c : group) {
            size_t memberBytes = static_cast<size_t>(c.cols) * elementBytes;
            std::vector<char> splat;
            MatmulOp member = c.op;
            std::optional<ArrayRef<char>> bytes =
                member.getBias() ? constantBytes(member.getBias(), splat) : std::nullopt;
            if (bytes)
              std::memcpy(out.data() + offset, bytes->data(), memberBytes);
            else
              std::memset(out.data() + offset, 0, memberBytes);
            offset += memberBytes;
          }
        }));
    created.push_back(operands.back().getDefiningOp());
  }
  SmallVector<NamedAttribute> attributes;
  if (first.getActivation() != Activation::none)
    attributes.push_back(b.getNamedAttr("activation", first.getActivationAttr()));
  if (first.getTransposeLhs())
    attributes.push_back(b.getNamedAttr("transpose_lhs", b.getBoolAttr(true)));
  auto merged = MatmulOp::create(b, loc, operands, attributes);
  created.push_back(merged);
  int64_t rank = merged.getType().getRank();
  SmallVector<Value> slices;
  int64_t offset = 0;
  bool typesMatch = true;
  for (const Candidate &c : group) {
    SmallVector<int64_t> starts(rank, 0), ends(rank, kSliceToEnd), steps(rank, 1);
    starts.back() = offset;
    ends.back() = offset + c.cols;
    offset += c.cols;
    Value s = i64Vector(b, loc, starts), e = i64Vector(b, loc, ends), st = i64Vector(b, loc, steps);
    auto slice = SliceOp::create(b, loc, ValueRange{merged.getResult(), s, e, st});
    for (Value v : {s, e, st})
      created.push_back(v.getDefiningOp());
    created.push_back(slice);
    MatmulOp member = c.op;
    typesMatch = typesMatch && slice.getType() == member.getType();
    slices.push_back(slice.getResult());
  }
  if (!typesMatch) {
    for (Operation *op : llvm::reverse(created))
      op->erase();
    return false;
  }
  for (auto [c, slice] : llvm::zip(group, slices)) {
    MatmulOp member = c.op;
    Value oldRhs = member.getRhs(), oldBias = member.getBias();
    member.getResult().replaceAllUsesWith(slice);
    member->erase();
    eraseDeadWeight(oldRhs);
    if (oldBias != oldRhs)
      eraseDeadWeight(oldBias);
  }
  return true;
}

struct MergeSiblingMatmulsPass
    : public impl::MergeSiblingMatmulsPassBase<MergeSiblingMatmulsPass> {
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
  }
};

} // namespace
} // namespace kiln
