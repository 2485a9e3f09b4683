//===- Buckets.cpp - shape buckets and declared ranges ---------------------===//

#include "driver/Buckets.h"

#include "ir/Kiln/KilnDialect.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "llvm/ADT/StringExtras.h"

#include <set>

using namespace mlir;

namespace kiln {
namespace {
llvm::Error error(const llvm::Twine &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), message);
}

bool parseSize(llvm::StringRef text, int64_t &value) {
  return !text.trim().getAsInteger(10, value) && value >= 0 && value <= kMaxSpecSize;
}
} // namespace

llvm::Expected<BucketLists> parseBuckets(llvm::StringRef spec) {
  BucketLists lists;
  std::set<std::string> seen;
  for (llvm::StringRef part : llvm::split(spec, ';')) {
    part = part.trim();
    if (part.empty())
      continue;
    auto [symbol, items] = part.split('=');
    symbol = symbol.trim();
    if (symbol.empty() || items.trim().empty())
      return error("'" + part + "' is not SYM=VALUES");
    if (!seen.insert(symbol.str()).second)
      return error("symbol '" + symbol + "' is listed twice");
    std::vector<int64_t> values;
    for (llvm::StringRef item : llvm::split(items, ',')) {
      item = item.trim();
      auto [from, rest] = item.split("..");
      int64_t a = 0, b = 0, step = 1;
      if (rest.empty() && !item.contains("..")) {
        if (!parseSize(item, a))
          return error("'" + item + "' in '" + part + "' is not a size (an integer from 0 to 2^62)");
        values.push_back(a);
        continue;
      }
      auto [to, stepText] = rest.split('/');
      if (!parseSize(from, a) || !parseSize(to, b) ||
          (!stepText.empty() && (!parseSize(stepText, step) || step == 0)) || a > b)
        return error("'" + item + "' in '" + part + "' is not a range A..B or A..B/STEP with 0 <= A <= B <= 2^62 and STEP >= 1");
      // Counted, not stepped to B: a step past B never wraps around int64.
      int64_t count = (b - a) / step + 1;
      if (count > static_cast<int64_t>(kMaxBuckets))
        return error("'" + item + "' has more than " + llvm::Twine(kMaxBuckets) + " values");
      for (int64_t i = 0; i < count; ++i)
        values.push_back(a + i * step);
    }
    std::sort(values.begin(), values.end());
    values.erase(std::unique(values.begin(), values.end()), values.end());
    lists.emplace_back(symbol.str(), std::move(values));
  }
  if (lists.empty())
    return error("names no symbol; expected SYM=VALUES;SYM=VALUES, e.g. batch=1,8,32;seq=128..512/64");
  return lists;
}

llvm::Expected<SymbolRange> parseSymbolRange(llvm::StringRef spec) {
  auto [symbol, range] = spec.split('=');
  auto [from, to] = range.split("..");
  SymbolRange r;
  r.symbol = symbol.trim().str();
  if (r.symbol.empty() || !range.contains("..") || !parseSize(from, r.min) ||
      !parseSize(to, r.max) || r.min > r.max)
    return error("'" + spec + "' is not SYM=MIN..MAX with 0 <= MIN <= MAX <= 2^62");
  return r;
}

BucketLists bucketsFromRanges(const std::vector<SymbolRange> &ranges) {
  BucketLists lists;
  for (const SymbolRange &r : ranges) {
    // The powers of two in [min, max]: at most 63 of them, and p never
    // doubles past max (max <= 2^62), so nothing overflows.
    std::vector<int64_t> powers;
    for (int64_t p = 1; p <= r.max; p *= 2) {
      if (p >= r.min)
        powers.push_back(p);
      if (p > r.max / 2)
        break;
    }
    if (powers.empty())
      continue; // a range without a power of two: the generic code serves it
    std::vector<int64_t> picked = powers;
    if (powers.size() > 4) {
      picked.clear();
      for (int i = 0; i < 4; ++i)
        picked.push_back(powers[i * (powers.size() - 1) / 3]);
    }
    lists.emplace_back(r.symbol, picked);
  }
  auto product = [&] {
    size_t n = 1;
    for (const auto &l : lists)
      n *= l.second.size();
    return n;
  };
  while (product() > kMaxAutomaticBuckets) {
    auto widest = std::max_element(lists.begin(), lists.end(), [](const auto &a, const auto &b) {
      return a.second.size() < b.second.size();
    });
    std::vector<int64_t> &values = widest->second;
    values.erase(values.end() - 2); // keep the ends
  }
  return lists;
}

llvm::Expected<std::vector<Bucket>> expandBuckets(const BucketLists &lists, size_t limit) {
  std::vector<Bucket> buckets = {{}};
  for (const auto &[symbol, values] : lists) {
    if (buckets.size() * values.size() > limit)
      return error("asks for more than " + llvm::Twine(limit) +
                   " variants (the product of the lists); each compiles its kernels again");
    std::vector<Bucket> next;
    for (const Bucket &b : buckets)
      for (int64_t v : values) {
        Bucket extended = b;
        extended.emplace_back(symbol, v);
        next.push_back(std::move(extended));
      }
    buckets = std::move(next);
  }
  if (buckets.size() == 1 && buckets[0].empty())
    buckets.clear();
  return buckets;
}

llvm::LogicalResult addRangeGuards(ModuleOp module, const std::vector<SymbolRange> &ranges) {
  if (ranges.empty())
    return success();
  func::FuncOp func;
  module.walk([&](func::FuncOp f) {
    if (!func && !f.isExternal())
      func = f;
  });
  if (!func)
    return module.emitError() << "--dynamic: the model has no function to guard";
  std::set<std::string> symbols;
  for (Type t : func.getArgumentTypes())
    if (isa<RankedTensorType>(t))
      for (DimExpr d : getSymShape(t))
        if (d && d.getKind() == AffineExprKind::SymbolId)
          symbols.insert(dimToString(d));
  OpBuilder builder = OpBuilder::atBlockBegin(&func.getBody().front());
  for (const SymbolRange &r : ranges) {
    if (!symbols.count(r.symbol)) {
      std::string known;
      for (const std::string &s : symbols)
        known += (known.empty() ? "" : ", ") + s;
      return func.emitError() << "--dynamic names symbol '" << r.symbol
                              << "', which no input dim of the model has (its symbols: "
                              << (known.empty() ? "none" : known) << ")";
    }
    MLIRContext *ctx = module.getContext();
    DimExpr sym = getSymbolDim(ctx, r.symbol);
    std::string reason = "the declared range (--dynamic " + r.symbol + "=" +
                         std::to_string(r.min) + ".." + std::to_string(r.max) + ")";
    if (r.min > 0)
      GuardOp::create(builder, func.getLoc(), GuardKind::less_equal,
                      DimsAttr::getCanonical(ctx, {getConstantDim(ctx, r.min), sym}),
                      builder.getStringAttr(reason));
    GuardOp::create(builder, func.getLoc(), GuardKind::less_equal,
                    DimsAttr::getCanonical(ctx, {sym, getConstantDim(ctx, r.max)}),
                    builder.getStringAttr(reason));
  }
  return success();
}

} // namespace kiln
