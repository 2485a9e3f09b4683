//===- Compare.h - an output against its expected value ---------*- C++ -*-===//
//
// The ONNX backend test rule, shared by kiln-conformance (every backend) and
// kiln-check-artifacts (artifacts run by the runtime alone, e.g. on a GPU
// machine without the compiler): floats within atol + rtol * |expected| (NaN
// matches NaN, infinities match exactly), integers exactly.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_REFERENCE_COMPARE_H
#define KILN_REFERENCE_COMPARE_H

#include "kiln/reference/Tensor.h"

#include <string>

namespace kiln::ref {

/// The first difference of `got` from `want`, described with `what`
/// ("output 0 'y' index 3: expected 1.5, got 1.25 (rtol 0.001, atol 1e-07)"), or "".
std::string compareTensors(const Tensor &got, const Tensor &want, double rtol, double atol,
                           const std::string &what);

/// The tolerance a precision mode (kiln-compile --precision) adds to every
/// float comparison, as both atol and rtol: 0 for fp32; about ten units of
/// roundoff of the type values are stored or multiplied in for the others
/// (tf32 and fp16 keep 10 mantissa bits, u = 2^-11: 5e-3; bf16 keeps 7,
/// u = 2^-8: 4e-2). docs/precision.md says why; -1 for an unknown mode.
double precisionTolerance(const std::string &mode);

} // namespace kiln::ref

#endif // KILN_REFERENCE_COMPARE_H
