//===- KernelFacts.td - what codegen and the passes know of an op -*- tablegen -*-===//
//
// The facts kiln-form-kernels, kiln-lower-precision and codegen ask of an op,
// stated on the op (beside its definition) rather than in lists in the passes. An op
// without the interface is never part of a generated kernel and keeps fp32.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_KERNEL_FACTS_TD
#define KILN_KERNEL_FACTS_TD

include "mlir/IR/OpBase.td"

def Kiln_KernelFacts : OpInterface<"KernelFacts"> {
  let cppNamespace = "::kiln";
  let description = [{
    How generated kernels compute an op. An op is one of: inlinable (codegen
    computes each result element from its operands' elements, inside whatever
    kernel reads it: elementwise ops, data movement with known shape operands);
    the root of a kernel with its own schedule (a reduction, a row, a
    compaction, attention), which consumers never inline; or neither, a graph
    break on the host, for the reason `kernelRefusal` gives. The defaults fit a
    kiln elementwise op (`Kiln_ElementwiseTrait`).
  }];
  let methods = [
    InterfaceMethod<[{
        Whether codegen computes the op element by element from its operands'
        elements, inlined into the kernel that reads it. May look at the
        operands' producers (a shape operand must be a constant).
      }], "bool", "isInlinable", (ins), "",
      "return ConcreteOp::template hasTrait<::kiln::OpTrait::Elementwise>();">,
    InterfaceMethod<[{
        The schedule of the kernel the op roots, for an op no consumer inlines
        (reductions, rows, compactions, attention); none for the others.
      }], "std::optional<::kiln::Schedule>", "rootSchedule", (ins), "",
      "return std::nullopt;">,
    InterfaceMethod<[{
        Whether the kernel the op roots computes its producers inline. False
        where it reads an input element many times (top_k O(n) times per
        element, nms_select once per step of its loop): producers would be
        recomputed as often, so its inputs are materialized.
      }], "bool", "fusesProducers", (ins), "",
      "return true;">,
    InterfaceMethod<[{
        The operands a kernel reads as data; the others (sizes, starts, k) are
        values codegen reads at compile time.
      }], "::llvm::SmallVector<::mlir::Value>", "kernelDataOperands", (ins), "",
      "return ::llvm::SmallVector<::mlir::Value>($_op->getOperands());">,
    InterfaceMethod<[{
        The result a kernel computes for the op (top_k's indices; its values
        are a gather of them).
      }], "::mlir::Value", "kernelResult", (ins), "",
      "return $_op->getResult(0);">,
    InterfaceMethod<[{
        Why no kernel computes the op when it is neither inlinable nor a root,
        as `--explain` prints it after "no kernel: ".
      }], "std::string", "kernelRefusal", (ins), "",
      "return \"it has no CUDA C lowering\";">,
    InterfaceMethod<[{
        Whether the op may run in a narrow float type (kiln-lower-precision):
        it takes its float operands as data and gives results of the same
        type. Ops that keep fp32 (reductions and cumulative sums, whose results
        grow with the row; ranges and resize, whose float operands are
        positions and scales) have their narrow operands cast back first.
      }], "bool", "runsNarrow", (ins), "",
      "return ConcreteOp::template hasTrait<::kiln::OpTrait::Elementwise>();">,
    InterfaceMethod<[{
        How each result element finds the operand elements it reads
        (`::kiln::ElementAccess`, KernelTypes.h). Codegen narrows the index
        arithmetic of kernels made only of `broadcast` and `moved` ops to 32
        bits, and reads the inputs of kernels made only of `broadcast` ops as
        vectors along the innermost dim.
      }], "::kiln::ElementAccess", "elementAccess", (ins), "",
      "return ConcreteOp::template hasTrait<::kiln::OpTrait::Elementwise>()"
      " ? ::kiln::ElementAccess::broadcast : ::kiln::ElementAccess::computed;">,
    InterfaceMethod<[{
        Whether each result element reads at most one element of operand 0,
        while the result may be smaller than that operand (slices, pads,
        gathers): a launch then reads no more of it than the result has
        elements, which is what the roofline counts (StepWork) when that is
        less than the operand's size.
      }], "bool", "boundsReadsOfInput", (ins), "",
      "return false;">,
  ];
}

#endif // KILN_KERNEL_FACTS_TD
