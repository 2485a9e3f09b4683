//===- Buckets.h - shape buckets and declared ranges for kiln-compile -*- C++ -*-===//
//
// kiln-compile --buckets names the symbol values to specialize kernels for
// (`batch=1,8,32;seq=128..512/64`: the product of the lists, one variant each);
// --dynamic SYM=MIN..MAX declares a symbol's range, which becomes two guards
// every call checks and, without --buckets, the source of automatic buckets.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_DRIVER_BUCKETS_H
#define KILN_DRIVER_BUCKETS_H

#include "mlir/IR/BuiltinOps.h"
#include "llvm/Support/Error.h"

#include <string>
#include <utility>
#include <vector>

namespace kiln {

/// Per symbol, the values to specialize for, in the order the spec names them.
using BucketLists = std::vector<std::pair<std::string, std::vector<int64_t>>>;
/// One variant: symbol values.
using Bucket = std::vector<std::pair<std::string, int64_t>>;

/// The most variants --buckets may ask for (each one compiles its kernels again).
constexpr size_t kMaxBuckets = 256;
/// The most variants kiln picks by itself from --dynamic ranges.
constexpr size_t kMaxAutomaticBuckets = 16;
/// The largest size a spec may name: 2^62, past any dim a tensor can have and
/// far from int64's end, so ranges and their steps never wrap.
constexpr int64_t kMaxSpecSize = int64_t(1) << 62;

/// Parses `SYM=ITEM,ITEM;SYM=...` where an ITEM is a value `N` or a range with
/// a step `A..B/S` (A, A+S, ... up to B). Values are sizes (0 to kMaxSpecSize).
llvm::Expected<BucketLists> parseBuckets(llvm::StringRef spec);

struct SymbolRange {
  std::string symbol;
  int64_t min = 0, max = 0;
};
/// Parses `SYM=MIN..MAX` (0 <= MIN <= MAX <= kMaxSpecSize).
llvm::Expected<SymbolRange> parseSymbolRange(llvm::StringRef spec);

/// Buckets kiln picks from declared ranges: per symbol the powers of two in its
/// range, at most 4 (the smallest, the largest, and evenly spaced ones between);
/// then, while the product exceeds kMaxAutomaticBuckets, the symbol with the
/// most values loses its largest-but-one. Why: traffic concentrates at the ends
/// (single requests, full batches), dynamic batchers and padding tokenizers
/// produce powers of two, and a power of two gives kernels the most
/// divisibility to vectorize by.
BucketLists bucketsFromRanges(const std::vector<SymbolRange> &ranges);

/// The product of the lists: one bucket per combination, or an error past `limit`.
llvm::Expected<std::vector<Bucket>> expandBuckets(const BucketLists &lists, size_t limit);

/// Puts `MIN <= SYM` and `SYM <= MAX` guards at the top of the module's
/// function for each range; an error names a symbol no input dim has.
llvm::LogicalResult addRangeGuards(mlir::ModuleOp module, const std::vector<SymbolRange> &ranges);

} // namespace kiln

#endif // KILN_DRIVER_BUCKETS_H
