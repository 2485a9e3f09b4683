//===- KilnOps.cpp - the ODS-generated op classes -------------------------===//
//
// Hand-written op methods (shape functions, verifiers, folders) live in one file per
// op family beside this one; this file only instantiates what ODS generates.
//
//===----------------------------------------------------------------------===//

#include "ir/Kiln/Folding.h"
#include "ir/Kiln/KilnDialect.h"
#include "ir/Kiln/OpTables.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/OpImplementation.h"

#include <cmath>

using namespace mlir;
using namespace kiln;

// custom<DimsValue>: kiln.symbolic_constant's value, printed as a bare dim list.
static ParseResult parseDimsValue(OpAsmParser &parser, DimsAttr &value) {
  SmallVector<AffineExpr> dims;
  if (parseDimList(parser, dims))
    return failure();
  value = DimsAttr::get(parser.getContext(), dims);
  return success();
}

static void printDimsValue(OpAsmPrinter &printer, Operation *, DimsAttr value) {
  printDimList(printer, value.getDims());
}

// custom<ScheduleName>: kiln.kernel's schedule, printed as its name in quotes.
static ParseResult parseScheduleName(OpAsmParser &parser, ScheduleAttr &schedule) {
  SMLoc loc = parser.getCurrentLocation();
  std::string name;
  if (parser.parseString(&name))
    return failure();
  std::optional<Schedule> value = symbolizeSchedule(name);
  if (!value)
    return parser.emitError(loc) << "'kiln.kernel' op schedule '" << name
                                 << "' is not pointwise, reduction, row, compaction or attention";
  schedule = ScheduleAttr::get(parser.getContext(), *value);
  return success();
}

static void printScheduleName(OpAsmPrinter &printer, Operation *, ScheduleAttr schedule) {
  printer << '"' << stringifySchedule(schedule.getValue()) << '"';
}

#include "ir/Kiln/KernelFacts.cpp.inc"

#define GET_OP_CLASSES
#include "ir/Kiln/KilnOps.cpp.inc"

void KilnDialect::registerOps() {
  addOperations<
#define GET_OP_LIST
#include "ir/Kiln/KilnOps.cpp.inc"
      >();
}
