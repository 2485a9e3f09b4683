//===- ExactSizeCasts.h - sizes computed in floats, read as sizes -*- C++ -*-===//
//
// Exporters compute some sizes in floats: torchvision's detection transform
// pads an image to `ceil(float(h) / 32) * 32` through Cast, Div, Ceil, Mul and
// a Cast back to int64. On non-negative integers below 2^p (p the float's
// significand bits: 24 for f32) those operations are exact, so the result is
// `32 * ((h + 31) floordiv 32)`, a symbolic size, whenever h is that small.
// kiln-infer-shapes and kiln-name-unknown-dims fold such a cast back to a
// kiln.symbolic_constant and put a kiln.guard of that bound before it (over
// symbols a step binds, the guard stays there: a check step).
//
//===----------------------------------------------------------------------===//

#ifndef KILN_PASSES_EXACTSIZECASTS_H
#define KILN_PASSES_EXACTSIZECASTS_H

namespace mlir {
class Operation;
} // namespace mlir

namespace kiln {

/// When `op` is a kiln.cast to i64 of sizes computed exactly in floats,
/// replaces it by their value (guards before it state the bounds that make
/// the float arithmetic exact) and returns true; otherwise changes nothing.
bool foldExactSizeCast(mlir::Operation *op);

} // namespace kiln

#endif // KILN_PASSES_EXACTSIZECASTS_H
