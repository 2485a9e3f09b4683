//===- Export.h - symbol visibility for libkiln_runtime's C++ API -*- C++ -*-===//
//
// libkiln_runtime hides its symbols by default; classes that tools and tests use
// directly are exported with KILN_RUNTIME_EXPORT.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_RUNTIME_EXPORT_H
#define KILN_RUNTIME_EXPORT_H

#define KILN_RUNTIME_EXPORT __attribute__((visibility("default")))

#endif // KILN_RUNTIME_EXPORT_H
