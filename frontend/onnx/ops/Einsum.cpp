//===- Einsum.cpp - ONNX Einsum onto transpose, reduce and matmul ---------===//
//
// Each operand first loses its repeated labels (a diagonal: multiply by an
// identity mask, sum one copy away) and the labels nothing else uses (summed);
// operands then contract pairwise, left to right, as one batched matmul each
// (batch labels, free labels of either side, contracted labels, each group
// flattened); a last transpose puts the result's labels in the asked order.
//
//===----------------------------------------------------------------------===//

#include "frontend/onnx/ops/Converters.h"

#include <set>

using namespace mlir;

namespace kiln::onnx_import {

namespace {

/// An operand during the decomposition: its value and one label per dim.
struct Labeled {
  Value value;
  std::string labels;
};

/// Parses one side of an equation into labels, expanding "..." into `rank -
/// letters` private labels (the same ones, aligned right, for every operand).
FailureOr<std::string> parseTerm(NodeImporter &n, StringRef term, int64_t rank) {
  std::string labels;
  size_t dots = term.find("...");
  std::string letters = term.str();
  if (dots != StringRef::npos)
    letters.erase(dots, 3);
  for (char c : letters)
    if (!std::isalpha(static_cast<unsigned char>(c)))
      return n.error("equation term '" + term + "' has '" + Twine(c) +
                     "'; only letters and one '...' may appear");
  int64_t ellipsis = rank - static_cast<int64_t>(letters.size());
  if (ellipsis < 0 || (ellipsis > 0 && dots == StringRef::npos))
    return n.error("equation term '" + term + "' does not match an operand of rank " +
                   Twine(rank));
  if (dots == StringRef::npos)
    return letters;
  labels = letters.substr(0, dots);
  // Private labels for the ellipsis dims, numbered from the right: the characters
  // 1..64, which no letter can be.
  if (ellipsis > kMaxRank)
    return n.error("equation term '" + term + "' covers more than " + Twine(kMaxRank) + " dims");
  for (int64_t i = ellipsis; i > 0; --i)
    labels += static_cast<char>(i);
  labels += letters.substr(dots);
  return labels;
}

} // namespace

LogicalResult convertEinsum(NodeImporter &n) {
  auto equation = n.stringAttr("equation");
  if (failed(equation))
    return failure();
  std::string eq;
  for (char c : *equation)
    if (c != ' ')
      eq += c;
  StringRef lhs = eq, rhs;
  bool explicitOutput = false;
  if (size_t arrow = eq.find("->"); arrow != std::string::npos) {
    lhs = StringRef(eq).take_front(arrow);
    rhs = StringRef(eq).drop_front(arrow + 2);
    explicitOutput = true;
  }
  SmallVector<StringRef> terms;
  lhs.split(terms, ',');
  if (terms.size() != n.numInputs())
    return n.error("the equation has " + Twine(terms.size()) + " operand terms for " +
                   Twine(n.numInputs()) + " inputs");
  Chain c(n);
  std::vector<Labeled> operands;
  int64_t maxEllipsis = 0;
  for (auto [i, term] : llvm::enumerate(terms)) {
    auto v = n.requiredInput(i);
    if (failed(v))
      return failure();
    auto labels = parseTerm(n, term, NodeImporter::typeOf(*v).getRank());
    if (failed(labels))
      return failure();
    for (char l : *labels)
      if (static_cast<unsigned char>(l) <= kMaxRank)
        maxEllipsis = std::max<int64_t>(maxEllipsis, static_cast<unsigned char>(l));
    operands.push_back({*v, *labels});
  }
  // The output's labels: given, or every label used once, in order (ellipsis first).
  std::string output;
  if (explicitOutput) {
    auto parsed = parseTerm(n, rhs, static_cast<int64_t>(rhs.size()) -
                                        (rhs.contains("...") ? 3 : 0) + maxEllipsis);
    if (failed(parsed))
      return failure();
    output = *parsed;
  } else {
    std::map<char, int> uses;
    for (const Labeled &o : operands)
      for (char l : o.labels)
        ++uses[l];
    for (int64_t i = maxEllipsis; i > 0; --i)
      output += static_cast<char>(i);
    for (auto [l, count] : uses)
      if (count == 1 && std::isalpha(static_cast<unsigned char>(l)))
        output += l;
  }

  MLIRContext *ctx = n.context();
  auto dimOf = [&](const Labeled &o, char l) {
    return getSymShape(o.value.getType())[o.labels.find(l)];
  };
  // Labels another operand (from `from` on) or the output still needs.
  auto neededLater = [&](char l, size_t from) {
    if (output.find(l) != std::string::npos)
      return true;
    for (size_t k = from; k < operands.size(); ++k)
      if (operands[k].labels.find(l) != std::string::npos)
        return true;
    return false;
  };
  auto sumAxes = [&](Labeled &o, ArrayRef<int64_t> axes) {
    std::string kept;
    for (int64_t d = 0; d < static_cast<int64_t>(o.labels.size()); ++d)
      if (!llvm::is_contained(axes, d))
        kept += o.labels[d];
    o.value = c(reduce(n, o.value, ReduceKind::sum, axes, false));
    o.labels = kept;
  };
  // Diagonals and private sums, operand by operand.
  for (size_t k = 0; k < operands.size(); ++k) {
    Labeled &o = operands[k];
    for (size_t a = 0; a < o.labels.size() && c.ok; ++a) {
      size_t b = o.labels.find(o.labels[a], a + 1);
      if (b == std::string::npos)
        continue;
      int64_t rank = o.labels.size();
      Value ia = c.iota(o.value, a, a, rank), ib = c.iota(o.value, b, b, rank);
      Value mask = c(castTo(n, c.cmp(CompareDirection::eq, ia, ib), elementTypeOf(o.value)));
      o.value = c.bin<MulOp>(o.value, mask);
      sumAxes(o, {static_cast<int64_t>(b)});
      a = -1; // rescan: labels moved
    }
    SmallVector<int64_t> unused;
    for (size_t d = 0; d < o.labels.size(); ++d) {
      char l = o.labels[d];
      bool elsewhere = false;
      for (size_t j = 0; j < operands.size(); ++j)
        elsewhere |= j != k && operands[j].labels.find(l) != std::string::npos;
      if (!elsewhere && output.find(l) == std::string::npos)
        unused.push_back(d);
    }
    if (!unused.empty() && c.ok)
      sumAxes(o, unused);
  }
  if (!c.ok)
    return failure();

  // Pairwise contraction as batched matmuls.
  Labeled acc = operands[0];
  for (size_t k = 1; k < operands.size() && c.ok; ++k) {
    Labeled &b = operands[k];
    std::string batch, freeA, freeB, contract;
    for (char l : acc.labels) {
      bool inB = b.labels.find(l) != std::string::npos;
      if (inB && neededLater(l, k + 1))
        batch += l;
      else if (inB)
        contract += l;
      else
        freeA += l;
    }
    for (char l : b.labels)
      if (acc.labels.find(l) == std::string::npos)
        freeB += l;
    auto permute = [&](Labeled &o, const std::string &order) {
      SmallVector<int64_t> perm;
      for (char l : order)
        perm.push_back(o.labels.find(l));
      o.value = c.transpose(o.value, perm);
      o.labels = order;
    };
    auto product = [&](const Labeled &o, const std::string &labels) {
      DimExpr p = getConstantDim(ctx, 1);
      for (char l : labels)
        p = mulDims(p, dimOf(o, l));
      return p;
    };
    permute(acc, batch + freeA + contract);
    permute(b, batch + contract + freeB);
    if (!c.ok)
      return failure();
    SmallVector<DimExpr> shapeA, shapeB, result;
    for (char l : batch) {
      shapeA.push_back(dimOf(acc, l));
      shapeB.push_back(dimOf(b, l));
      // Batch dims broadcast (an ellipsis dim of 1 against n).
      auto one = getConstantDimValue(dimOf(acc, l));
      result.push_back(one && *one == 1 ? dimOf(b, l) : dimOf(acc, l));
    }
    shapeA.push_back(product(acc, freeA));
    shapeA.push_back(product(acc, contract));
    shapeB.push_back(product(b, contract));
    shapeB.push_back(product(b, freeB));
    for (char l : freeA)
      result.push_back(dimOf(acc, l));
    for (char l : freeB)
      result.push_back(dimOf(b, l));
    Value product2 = c.matmul(c.reshape(acc.value, shapeA), c.reshape(b.value, shapeB));
    acc = {c.reshape(product2, result), batch + freeA + freeB};
  }
  if (!c.ok)
    return failure();
  // Labels the output drops are summed; the rest take the output's order.
  SmallVector<int64_t> dropped;
  for (size_t d = 0; d < acc.labels.size(); ++d)
    if (output.find(acc.labels[d]) == std::string::npos)
      dropped.push_back(d);
  if (!dropped.empty())
    sumAxes(acc, dropped);
  if (acc.labels.size() != output.size())
    return n.error("the output term names a label no operand has");
  SmallVector<int64_t> perm;
  bool identity = true;
  for (char l : output) {
    size_t at = acc.labels.find(l);
    if (at == std::string::npos)
      return n.error("the output term names a label no operand has");
    identity &= at == perm.size();
    perm.push_back(at);
  }
  Value result = identity ? acc.value : c.transpose(acc.value, perm);
  return c.done({result});
}

} // namespace kiln::onnx_import
