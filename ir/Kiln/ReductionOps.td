//===- ReductionOps.td - reductions over axes -----------------*- tablegen -*-===//

#ifndef KILN_REDUCTION_OPS_TD
#define KILN_REDUCTION_OPS_TD

include "ir/Kiln/KilnAttrs.td"

def Kiln_ReduceOp : Kiln_Op<"reduce"> {
  let summary = "combines elements over a set of axes";
  let description = [{
    Reduces `input` over `axes` (distinct, negative counting from the end) with
    `kind`. Reduced dims become 1 when `keep_dims` is set and vanish otherwise. An
    empty `axes` reduces nothing. `mean` divides the sum by the number of reduced
    elements; `any` and `all` take i1. Reducing an empty dim yields the combiner's
    identity (0, 1, -inf, +inf; NaN for mean).

    ```mlir
    %r = kiln.reduce %x {kind = #kiln<reduce sum>, axes = array<i64: 1>, keep_dims = true} : (tensor<?x768xf32, #kiln.dims<[n, 768]>>) -> tensor<?x1xf32, #kiln.dims<[n, 1]>>
    ```
  }];
  let arguments = (ins Kiln_Tensor:$input, Kiln_ReduceKindAttr:$kind,
                       DenseI64ArrayAttr:$axes, DefaultValuedAttr<BoolAttr, "true">:$keep_dims);
  let results = (outs Kiln_Tensor:$result);
  let hasFolder = 1;
}

def Kiln_ArgReduceOp : Kiln_Op<"arg_reduce"> {
  let summary = "index of the largest or smallest element along an axis";
  let description = [{
    Yields i64 indices of the first (or, with `select_last_index`, the last)
    extreme element along `axis`. The axis becomes 1 with `keep_dims`, and vanishes
    otherwise.

    ```mlir
    %r = kiln.arg_reduce %x {kind = #kiln<arg_reduce argmax>, axis = 1 : i64, keep_dims = false} : (tensor<?x10xf32, #kiln.dims<[n, 10]>>) -> tensor<?xi64, #kiln.dims<[n]>>
    ```
  }];
  let arguments = (ins Kiln_Tensor:$input, Kiln_ArgReduceKindAttr:$kind, I64Attr:$axis,
                       DefaultValuedAttr<BoolAttr, "true">:$keep_dims,
                       DefaultValuedAttr<BoolAttr, "false">:$select_last_index);
  let results = (outs RankedTensorOf<[I64]>:$result);
}

#endif // KILN_REDUCTION_OPS_TD
