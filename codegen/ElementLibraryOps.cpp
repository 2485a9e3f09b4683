//===- ElementLibraryOps.cpp - pool and matmul elements inside kernels ----===//

#include "codegen/KernelEmitter.h"

namespace kiln::codegen {

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
  line(indexType + " " + valid + " = 0, " + padded + " = 0;");
  line("bool " + nan + " = false;");
  std::vector<std::string> in = {index[0], index[1]};
  std::string inside = "true", inPadding = "true";
  for (size_t d = 0; d < spatial; ++d) {
    std::string k = temp("k"), pos = temp("pos");
    int64_t begin = at(pads, d, 0), end = at(pads, d + spatial, 0);
    openBlock("for (" + indexType + " " + k + " = 0; " + k + " < " + indexLiteral(window[d]) + "; ++" + k +
              ") {");
    line("const " + indexType + " " + pos + " = " + index[2 + d] + " * " + indexLiteral(at(strides, d, 1)) +
         " - " + indexLiteral(begin) + " + " + k + " * " + indexLiteral(at(dilations, d, 1)) + ";");
    inside += " && " + pos + " >= 0 && " + pos + " < " + inShape[2 + d];
    inPadding += " && " + pos + " >= " + indexLiteral(-begin) + " && " + pos + " < " +
                 inShape[2 + d] + " + " + indexLiteral(end);
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
      out.push_back(size && *size == 1 ? "0" : "(" + dim(shape[j]) + " == 1 ? (" + indexType + ")0 : " + i + ")");
    }
    return out;
  };
  DimExpr kDim = aVector ? as[0] : as[matmul.getTransposeLhs() ? as.size() - 2 : as.size() - 1];
  std::string k = temp("k"), acc = temp("acc");
  line(ct + " " + acc + " = (" + ct + ")0;");
  openBlock("for (" + indexType + " " + k + " = 0; " + k + " < " + dim(kDim) + "; ++" + k + ") {");
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

} // namespace kiln::codegen
