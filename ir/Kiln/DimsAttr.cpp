//===- DimsAttr.cpp - #kiln.dims: parsing, printing, verification ---------===//

#include "ir/Kiln/KilnDialect.h"

#include "mlir/IR/DialectImplementation.h"
#include "llvm/ADT/StringExtras.h"

using namespace mlir;

namespace kiln {

namespace {
/// Recursive-descent parser for dim expressions with MLIR's affine precedence:
/// `*`, `floordiv`, `ceildiv` and `mod` bind tighter than `+` and `-`.
class DimExprParser {
public:
  explicit DimExprParser(AsmParser &parser) : parser(parser) {}

  ParseResult parseDim(DimExpr &out) {
    if (succeeded(parser.parseOptionalQuestion())) {
      out = DimExpr();
      return success();
    }
    return parseSum(out);
  }

private:
  ParseResult parseSum(DimExpr &out) {
    if (parseProduct(out))
      return failure();
    while (true) {
      bool plus = succeeded(parser.parseOptionalPlus());
      if (!plus && failed(parser.parseOptionalMinus()))
        return success();
      DimExpr rhs;
      if (parseProduct(rhs))
        return failure();
      out = plus ? out + rhs : out - rhs;
    }
  }

  ParseResult parseProduct(DimExpr &out) {
    if (parseUnary(out))
      return failure();
    while (true) {
      SMLoc loc = parser.getCurrentLocation();
      AffineExprKind kind;
      if (succeeded(parser.parseOptionalStar()))
        kind = AffineExprKind::Mul;
      else if (succeeded(parser.parseOptionalKeyword("floordiv")))
        kind = AffineExprKind::FloorDiv;
      else if (succeeded(parser.parseOptionalKeyword("ceildiv")))
        kind = AffineExprKind::CeilDiv;
      else if (succeeded(parser.parseOptionalKeyword("mod")))
        kind = AffineExprKind::Mod;
      else
        return success();
      DimExpr rhs;
      if (parseUnary(rhs))
        return failure();
      if (kind != AffineExprKind::Mul) {
        if (auto c = getConstantDimValue(rhs); c && *c == 0)
          return parser.emitError(loc, "division by zero in dim expression");
      }
      out = getAffineBinaryOpExpr(kind, out, rhs);
    }
  }

  ParseResult parseUnary(DimExpr &out) {
    if (succeeded(parser.parseOptionalMinus())) {
      if (parseUnary(out))
        return failure();
      out = out * -1;
      return success();
    }
    return parsePrimary(out);
  }

  ParseResult parsePrimary(DimExpr &out) {
    MLIRContext *ctx = parser.getContext();
    int64_t value = 0;
    OptionalParseResult intResult = parser.parseOptionalInteger(value);
    if (intResult.has_value()) {
      if (failed(*intResult))
        return failure();
      out = getConstantDim(ctx, value);
      return success();
    }
    if (succeeded(parser.parseOptionalLParen())) {
      if (parseSum(out) || parser.parseRParen())
        return failure();
      return success();
    }
    SMLoc loc = parser.getCurrentLocation();
    StringRef name;
    if (failed(parser.parseOptionalKeyword(&name)))
      return parser.emitError(loc, "expected a dim: an integer, a symbol name, "
                                   "'?' or a parenthesized expression");
    if (!isValidSymbolName(name))
      return parser.emitError(loc, "'") << name << "' is not a valid symbol name";
    out = getSymbolDim(ctx, name);
    return success();
  }

  AsmParser &parser;
};
} // namespace

bool isValidSymbolName(StringRef name) {
  if (name.empty() || name == "floordiv" || name == "ceildiv" || name == "mod")
    return false;
  if (!(llvm::isAlpha(name[0]) || name[0] == '_'))
    return false;
  return llvm::all_of(name, [](char c) { return llvm::isAlnum(c) || c == '_'; });
}

DimsAttr DimsAttr::getCanonical(MLIRContext *context, ArrayRef<AffineExpr> dims) {
  SmallVector<AffineExpr> canonical;
  for (AffineExpr d : dims)
    canonical.push_back(canonicalizeDim(d));
  return DimsAttr::get(context, canonical);
}

bool DimsAttr::isFullyKnown() const {
  return llvm::all_of(getDims(), [](AffineExpr d) { return static_cast<bool>(d); });
}

ParseResult parseDimList(AsmParser &parser, SmallVectorImpl<AffineExpr> &dims) {
  DimExprParser exprParser(parser);
  return parser.parseCommaSeparatedList(AsmParser::Delimiter::Square, [&]() -> ParseResult {
    DimExpr d;
    if (exprParser.parseDim(d))
      return failure();
    dims.push_back(canonicalizeDim(d));
    return success();
  });
}

void printDimList(AsmPrinter &printer, ArrayRef<AffineExpr> dims) {
  printer << "[";
  llvm::interleaveComma(dims, printer.getStream(),
                        [&](AffineExpr d) { printDim(printer.getStream(), d); });
  printer << "]";
}

Attribute DimsAttr::parse(AsmParser &parser, Type) {
  SmallVector<AffineExpr> dims;
  if (parser.parseLess() || parseDimList(parser, dims) || parser.parseGreater())
    return {};
  return DimsAttr::get(parser.getContext(), dims);
}

void DimsAttr::print(AsmPrinter &printer) const {
  printer << "<";
  printDimList(printer, getDims());
  printer << ">";
}

LogicalResult
DimsAttr::verifyEncoding(ArrayRef<int64_t> shape, Type elementType,
                         function_ref<InFlightDiagnostic()> emitError) const {
  ArrayRef<AffineExpr> dims = getDims();
  if (dims.size() != shape.size())
    return emitError() << "#kiln.dims has " << dims.size()
                       << " dims but the tensor has rank " << shape.size();
  bool anySymbolic = false;
  for (auto [i, size, dim] : llvm::enumerate(shape, dims)) {
    std::optional<int64_t> constant = getConstantDimValue(dim);
    if (constant && (ShapedType::isDynamic(size) || size != *constant))
      return emitError() << "#kiln.dims dim " << i << " is " << *constant
                         << " but the tensor's dim " << i << " is "
                         << (ShapedType::isDynamic(size) ? std::string("?")
                                                         : std::to_string(size));
    if (!constant && !ShapedType::isDynamic(size))
      return emitError() << "#kiln.dims dim " << i << " is " << dimToString(dim)
                         << " but the tensor's dim " << i << " is static (" << size
                         << ")";
    anySymbolic |= isSymbolicDim(dim);
  }
  if (!anySymbolic)
    return emitError() << "#kiln.dims on a tensor without symbolic dims; "
                          "use the plain tensor type";
  return success();
}

} // namespace kiln
