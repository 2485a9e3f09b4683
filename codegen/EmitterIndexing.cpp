//===- EmitterIndexing.cpp - dims, indices and elements of kernel values ---===//
//
// Sizes as C expressions, indices unravelled and linearized, broadcasts, and
// element(): one element of a value, inlining its producer or loading an input.
//
//===----------------------------------------------------------------------===//

#include "codegen/KernelEmitter.h"

namespace kiln::codegen {

std::string KernelEmitter::dim(DimExpr d) {
  std::string text = dimText(d);
  bool divides = d.getKind() == AffineExprKind::FloorDiv || d.getKind() == AffineExprKind::CeilDiv ||
                 d.getKind() == AffineExprKind::Mod;
  if (!divides || getConstantDimValue(d))
    return text;
  auto [it, inserted] = hoistedDims.try_emplace(text, "");
  if (inserted) {
    it->second = "kiln_dim" + std::to_string(hoistedDims.size() - 1);
    prologue += "  const " + indexType + " " + it->second + " = " + text + ";\n";
  }
  return it->second;
}

std::string KernelEmitter::dimText(DimExpr d) {
  if (auto c = getConstantDimValue(d))
    return indexLiteral(*c);
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
  line("const " + indexType + " " + rest + " = " + linear + ";");
  for (int64_t d = static_cast<int64_t>(shape.size()) - 1; d >= 0; --d) {
    index[d] = temp("i");
    if (d == 0) {
      line("const " + indexType + " " + index[d] + " = " + rest + ";");
      break;
    }
    std::string q = temp("q");
    line("const " + indexType + " " + q + " = " + quotient(rest, shape[d]) + ";");
    line("const " + indexType + " " + index[d] + " = " + rest + " - " + q + " * " + shape[d] + ";");
    unraveled[positionKey(ArrayRef<std::string>(index).take_front(d), shape.take_front(d))] = q;
    rest = q;
  }
  unraveled[positionKey(index, shape)] = "(" + linear + ")";
  return index;
}

std::string KernelEmitter::linearize(ArrayRef<std::string> index, ArrayRef<std::string> shape) {
  if (shape.empty())
    return "((" + indexType + ")0)";
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
} // namespace

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
      out.push_back("(" + dim(od[j]) + " == 1 ? (" + indexType + ")0 : " + i + ")");
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

} // namespace kiln::codegen
