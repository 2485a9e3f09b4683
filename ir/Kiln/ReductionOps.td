//===- ReductionOps.td - reductions over axes -----------------*- tablegen -*-===//

#ifndef KILN_REDUCTION_OPS_TD
#define KILN_REDUCTION_OPS_TD

include "ir/Kiln/KilnAttrs.td"

def Kiln_ReduceOp : Kiln_Op<"reduce", [
    DeclareOpInterfaceMethods<Kiln_KernelFacts, ["rootSchedule"]>]> {
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

def Kiln_ArgReduceOp : Kiln_Op<"arg_reduce", [
    DeclareOpInterfaceMethods<Kiln_KernelFacts, ["rootSchedule"]>]> {
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

def Kiln_CumulativeOp : Kiln_Op<"cumulative", [
    DeclareOpInterfaceMethods<Kiln_KernelFacts, ["rootSchedule"]>]> {
  let summary = "running sum or product along an axis";
  let description = [{
    Element `i` along `axis` combines elements `0..i` (`0..i-1` when `exclusive`,
    and from the end when `reverse`). The result has the input's type (ONNX CumSum,
    CumProd).

    ```mlir
    %r = kiln.cumulative %x {kind = #kiln<cumulative sum>, axis = 1 : i64} : (tensor<?x8xf32, #kiln.dims<[n, 8]>>) -> tensor<?x8xf32, #kiln.dims<[n, 8]>>
    ```
  }];
  let arguments = (ins Kiln_Tensor:$input, Kiln_CumulativeKindAttr:$kind, I64Attr:$axis,
                       DefaultValuedAttr<BoolAttr, "false">:$exclusive,
                       DefaultValuedAttr<BoolAttr, "false">:$reverse);
  let results = (outs Kiln_Tensor:$result);
  let extraClassDefinition = [{
    ::llvm::LogicalResult $cppClass::inferReturnTypes(::mlir::MLIRContext *context,
        std::optional<::mlir::Location> location, Adaptor adaptor,
        ::llvm::SmallVectorImpl<::mlir::Type> &inferred) {
      return ::kiln::inferSameShapeAlongAxis(location, getOperationName(),
          adaptor.getInput(), adaptor.getAxis(), inferred);
    }
  }];
}

def Kiln_TopKOp : Kiln_Op<"top_k", [
    DeclareOpInterfaceMethods<Kiln_KernelFacts, ["rootSchedule", "fusesProducers",
                                                 "kernelDataOperands", "kernelResult",
                                                 "runsNarrow"]>]> {
  let summary = "the k largest (or smallest) elements along an axis, and their indices";
  let description = [{
    `k` is a 1-element i64 tensor (ONNX TopK). Ties keep the lower index first;
    with `sorted` the results are in order, largest first unless `largest` is
    false.

    ```mlir
    %v, %i = kiln.top_k %x, %k {axis = -1 : i64} : (tensor<?x100xf32, #kiln.dims<[n, 100]>>, tensor<1xi64>) -> (tensor<?x5xf32, #kiln.dims<[n, 5]>>, tensor<?x5xi64, #kiln.dims<[n, 5]>>)
    ```
  }];
  let arguments = (ins Kiln_Tensor:$input, Kiln_ShapeTensor:$k, I64Attr:$axis,
                       DefaultValuedAttr<BoolAttr, "true">:$largest,
                       DefaultValuedAttr<BoolAttr, "true">:$sorted);
  let results = (outs Kiln_Tensor:$values, RankedTensorOf<[I64]>:$indices);
}

def Kiln_SampleTokensOp : Kiln_Op<"sample_tokens", [
    DeclareOpInterfaceMethods<Kiln_KernelFacts, ["rootSchedule", "fusesProducers"]>]> {
  let summary = "each sequence's next token, chosen from its logits on the device";
  let description = [{
    `logits` is `[B, S, V]`; sequence `b` chooses from row `positions[b]` of
    its `S` (the prompt's last token, or the decode step's one). With
    `temperature <= 0`, `top_k == 1` or `top_p <= 0` the choice is the row's
    argmax (the first of equal maxima). Otherwise the candidates are the
    tokens at least as likely as the `top_k`-th likeliest (`top_k <= 0`:
    every token; ties at that place all stay), then of those the likeliest
    whose weights reach `top_p` of theirs (every token at least as likely as
    the one that reaches it; `top_p >= 1`: all), each weighted
    `exp((logit - max) / temperature)`; the choice is the first candidate, in
    token order, whose running weight exceeds `uniform[b]` (in [0, 1)) times
    the candidates' total (the argmax should none: a uniform of 1). -0 and +0
    are equal; NaN options choose greedily. A row with a NaN, or (sampling)
    no finite largest logit, gives -1, and a position outside the row is the
    call's error. `kiln-append-sampler` adds it to a decoder; the host
    draws `uniform` from its seeded generator, so a seed gives the same tokens
    on every backend.

    ```mlir
    %t = kiln.sample_tokens %logits, %positions, %uniform, %temperature, %top_k, %top_p : (tensor<?x?x96xf32, #kiln.dims<[b, s, 96]>>, tensor<?xi64, #kiln.dims<[b]>>, tensor<?xf32, #kiln.dims<[b]>>, tensor<f32>, tensor<i64>, tensor<f32>) -> tensor<?xi64, #kiln.dims<[b]>>
    ```
  }];
  let arguments = (ins Kiln_FloatTensor:$logits, RankedTensorOf<[I64]>:$positions,
                       RankedTensorOf<[F32]>:$uniform, RankedTensorOf<[F32]>:$temperature,
                       RankedTensorOf<[I64]>:$top_k, RankedTensorOf<[F32]>:$top_p);
  let results = (outs RankedTensorOf<[I64]>:$tokens);
}

#endif // KILN_REDUCTION_OPS_TD
