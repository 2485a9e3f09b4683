//===- KilnOps.td - every kiln op, one file per family --------*- tablegen -*-===//

#ifndef KILN_OPS_TD
#define KILN_OPS_TD

include "ir/Kiln/ElementwiseOps.td"
include "ir/Kiln/ShapeOps.td"
include "ir/Kiln/DataMovementOps.td"
include "ir/Kiln/ReductionOps.td"
include "ir/Kiln/CompositeOps.td"
include "ir/Kiln/ControlFlowOps.td"
include "ir/Kiln/SpecialOps.td"
include "ir/Kiln/KernelOps.td"

#endif // KILN_OPS_TD
