//===- Compare.cpp - an output against its expected value -----------------===//

#include "kiln/reference/Compare.h"

#include "absl/strings/str_format.h"

#include <cmath>

namespace kiln::ref {
namespace {
std::string formatValue(const Tensor &t, int64_t i) {
  if (isFloat(t.dtype()))
    return absl::StrFormat("%.9g", t.getF(i));
  return std::to_string(t.getI(i));
}
} // namespace

std::string compareTensors(const Tensor &got, const Tensor &want, double rtol, double atol,
                           const std::string &what) {
  if (got.dtype() != want.dtype() || got.shape() != want.shape())
    return what + " is " + got.describe() + ", expected " + want.describe();
  bool isF = isFloat(got.dtype());
  for (int64_t i = 0; i < got.numel(); ++i) {
    bool ok;
    if (isF) {
      double g = got.getF(i), w = want.getF(i);
      if (std::isnan(w) || std::isnan(g))
        ok = std::isnan(w) && std::isnan(g);
      else if (std::isinf(w) || std::isinf(g))
        ok = g == w;
      else
        ok = std::fabs(g - w) <= atol + rtol * std::fabs(w);
    } else {
      ok = got.getI(i) == want.getI(i);
    }
    if (!ok)
      return what + " index " + std::to_string(i) + ": expected " + formatValue(want, i) +
             ", got " + formatValue(got, i) +
             (isF ? absl::StrFormat(" (rtol %g, atol %g)", rtol, atol) : std::string());
  }
  return "";
}

double precisionTolerance(const std::string &mode) {
  if (mode == "fp32")
    return 0;
  if (mode == "tf32" || mode == "fp16")
    return 5e-3;
  if (mode == "bf16")
    return 4e-2;
  return -1;
}

} // namespace kiln::ref
