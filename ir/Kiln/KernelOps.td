//===- KernelOps.td - kernel regions formed by fusion ------*- tablegen -*-===//
//
// The fusion pass (--kiln-form-kernels) groups graph ops into kiln.kernel regions;
// codegen turns each into one CUDA C kernel. A region is isolated from above: what
// it reads are its operands (device buffers at run time), what it writes are its
// results.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_KERNEL_OPS_TD
#define KILN_KERNEL_OPS_TD

include "ir/Kiln/KilnAttrs.td"
include "mlir/IR/RegionKindInterface.td"

def Kiln_KernelOp : Op<Kiln_Dialect, "kernel", [IsolatedFromAbove, RecursiveMemoryEffects]> {
  let summary = "a group of graph ops that becomes one generated kernel";
  let description = [{
    The body's arguments are the operands; it computes with kiln graph ops and
    yields the results. `schedule` names how the kernel iterates (`pointwise`:
    one thread per result element; `reduction`: one result element per block or
    thread, looping over what it reduces; `row`: one block per row of a
    softmax/log_softmax/layer_norm; `compaction`: one block per chunk of the
    input, writing the chunk's selected elements after the chunks before it;
    `attention`: one block per tile of query rows of a `kiln.attention`)
    and is decided by the fusion pass from the region's root op. It is a typed
    enum (`kiln::Schedule`), written as its name in quotes.

    ```mlir
    %y = kiln.kernel "pointwise" (%x, %b) : (tensor<?x768xf32, #kiln.dims<[n, 768]>>, tensor<768xf32>) -> tensor<?x768xf32, #kiln.dims<[n, 768]>> {
    ^bb0(%a: tensor<?x768xf32, #kiln.dims<[n, 768]>>, %c: tensor<768xf32>):
      %s = kiln.add %a, %c : (tensor<?x768xf32, #kiln.dims<[n, 768]>>, tensor<768xf32>) -> tensor<?x768xf32, #kiln.dims<[n, 768]>>
      %t = kiln.tanh %s : (tensor<?x768xf32, #kiln.dims<[n, 768]>>) -> tensor<?x768xf32, #kiln.dims<[n, 768]>>
      kiln.yield %t : tensor<?x768xf32, #kiln.dims<[n, 768]>>
    }
    ```
  }];
  let arguments = (ins Kiln_ScheduleAttr:$schedule, Variadic<Kiln_Tensor>:$inputs);
  let results = (outs Variadic<Kiln_Tensor>:$results);
  let regions = (region SizedRegion<1>:$body);
  let assemblyFormat = [{
    custom<ScheduleName>($schedule) `(` $inputs `)` attr-dict `:` functional-type($inputs, $results)
    $body
  }];
  let hasVerifier = 1;
}

#endif // KILN_KERNEL_OPS_TD
