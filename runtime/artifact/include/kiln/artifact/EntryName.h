//===- EntryName.h - the entry point a variant's code exports ----*- C++ -*-===//
//
// A variant's kernels are their kernels' sources compiled again with
// -DKILN_SYM_<name>=<value>. The sources name their entry point through
// KILN_ENTRY (codegen/CudaEmitter.cpp): the kernel's name followed by
// "_v<i>_<value>" for each of its symbols the build defined, i being the
// symbol's position among the kernel's. So code knows the values it was built
// for, and a loader that looks the entry point up by the values a Variant
// states finds nothing in code built for others (an edited Variant.values, or
// a HostLibrary.variant that points at another variant's launchers) instead of
// running it at sizes it does not fit. The generic build defines none and
// keeps the kernel's own name.
//
// Header-only and free of other kiln headers: the fake CUDA driver uses it too.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_ARTIFACT_ENTRYNAME_H
#define KILN_ARTIFACT_ENTRYNAME_H

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace kiln::artifact {

/// `kernel`'s entry point when built with `fixed`: (position among the
/// kernel's symbols, value) pairs, ascending by position.
inline std::string variantEntryName(std::string kernel,
                                    const std::vector<std::pair<int, int64_t>> &fixed) {
  for (const auto &[position, value] : fixed)
    kernel += "_v" + std::to_string(position) + "_" + std::to_string(value);
  return kernel;
}

/// The kernel an entry point was built from: `name` without its variant tag
/// (a kernel's own name ends in hex digits, never in "_v<digits>_<digits>").
inline std::string genericEntryName(std::string name) {
  auto digitsBefore = [&](size_t end) {
    size_t begin = end;
    while (begin > 0 && name[begin - 1] >= '0' && name[begin - 1] <= '9')
      --begin;
    return begin;
  };
  for (;;) {
    size_t value = digitsBefore(name.size());
    if (value == name.size() || value < 1 || name[value - 1] != '_')
      return name;
    size_t position = digitsBefore(value - 1);
    if (position == value - 1 || position < 2 || name.compare(position - 2, 2, "_v") != 0)
      return name;
    name.resize(position - 2);
  }
}

} // namespace kiln::artifact

#endif // KILN_ARTIFACT_ENTRYNAME_H
