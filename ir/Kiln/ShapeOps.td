//===- ShapeOps.td - constants and shape computations ----------*- tablegen -*-===//
//
// Exported models compute shapes at run time (Shape -> Gather -> Concat -> Reshape).
// kiln folds those computations onto `kiln.symbolic_constant`, whose value is a list
// of dim expressions, so shape functions downstream see symbolic sizes, not `?`.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_SHAPE_OPS_TD
#define KILN_SHAPE_OPS_TD

include "ir/Kiln/KilnAttrs.td"

def Kiln_ConstantOp : Kiln_Op<"constant", [ConstantLike]> {
  let summary = "a tensor constant";
  let description = [{
    A tensor whose value is `value`, dense or a resource blob (large weights are kept
    as blobs, not copied into the IR). The result type is the value's type.

    ```mlir
    %c = kiln.constant dense<[1.0, 2.0]> : tensor<2xf32>
    ```
  }];
  let arguments = (ins ElementsAttr:$value);
  let results = (outs Kiln_Tensor:$result);
  let assemblyFormat = "attr-dict $value";
  let hasFolder = 1;
}

// Not a Kiln_Op: its result type (0-d or 1-D) is declared, not inferred.
def Kiln_SymbolicConstantOp : Op<Kiln_Dialect, "symbolic_constant", [Pure, ConstantLike]> {
  let summary = "an i64 tensor (0-d or 1-D) whose elements are symbolic dims";
  let description = [{
    The value of a shape computation that folding resolved: each element is an
    expression over the function's symbols. Every element must be known (no `?`);
    a 0-d result holds exactly one.

    ```mlir
    %s = kiln.symbolic_constant [batch * seq, 768] : tensor<2xi64>
    ```
  }];
  let arguments = (ins Kiln_DimsAttr:$value);
  let results = (outs TensorRankOf<[I64], [0, 1]>:$result);
  // Printed bare (`[batch, 768]`): a `#kiln.dims<...>` followed by `:` would read
  // as a typed attribute.
  let assemblyFormat = "custom<DimsValue>($value) attr-dict `:` type($result)";
  let hasFolder = 1;
  let hasVerifier = 1;
}

// Not a Kiln_Op: it has no result to infer, and it must stay where it is.
def Kiln_GuardOp : Op<Kiln_Dialect, "guard", [MemoryEffects<[MemWrite]>]> {
  let summary = "a fact about the symbols that the runtime checks on every call";
  let description = [{
    A relation between two dim expressions that a shape function assumed and
    could not prove: `equal` (matmul's contraction dims, concat's other dims, a
    reshape's element counts), `equal_or_one` (the first dim broadcasts against
    the second) or `less_equal` (a slice position inside its dim). `reason` says
    which op relied on it and why. `--kiln-materialize-guards` creates them; the
    artifact carries them and the runtime fails a call whose inputs break one,
    naming it, instead of computing with wrong sizes. The memory effect keeps the
    op alive: it has no result for anything to use.

    ```mlir
    kiln.guard <equal> [seq * 64, 320], "kiln.reshape at 'Reshape_3': the input's and the result's element counts must be equal"
    ```
  }];
  let arguments = (ins Kiln_GuardKindAttr:$kind, Kiln_DimsAttr:$dims, StrAttr:$reason);
  let assemblyFormat = "$kind custom<DimsValue>($dims) `,` $reason attr-dict";
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    ::mlir::AffineExpr getLhs() { return getDims().getDims()[0]; }
    ::mlir::AffineExpr getRhs() { return getDims().getDims()[1]; }
    /// "seq * 64 == 320", "n == 4 or n == 1", "5 <= seq".
    std::string describe();
  }];
}

// Not a Kiln_Op: it has no result to infer, and it must stay where it is (the
// ops after it are sized by the symbols it binds).
def Kiln_ReadSizesOp : Op<Kiln_Dialect, "read_sizes", [MemoryEffects<[MemWrite]>]> {
  let summary = "binds symbols to the values of a small i64 tensor computed at run time";
  let description = [{
    Element i of `sizes` becomes the value of symbol `symbols[i]` for the ops
    after it: a size the data decides (a non-zero count, a top_k's k) that the
    device computed, read back alone so the op that needs it can be a kernel
    sized by the symbol. The runtime reads the few bytes (on CUDA, a stream
    synchronization), refuses a negative value naming the step, and binds.
    `--kiln-sizes-on-device` creates them. The memory effect keeps the op
    alive: it has no result for anything to use.

    ```mlir
    kiln.read_sizes %count ["run0"] : tensor<1xi64>
    ```
  }];
  let arguments = (ins RankedTensorOf<[I64]>:$sizes, StrArrayAttr:$symbols);
  let assemblyFormat = "$sizes $symbols attr-dict `:` type($sizes)";
  let hasVerifier = 1;
}

def Kiln_ShapeOfOp : Kiln_Op<"shape_of"> {
  let summary = "the shape of a tensor as a 1-D i64 tensor";
  let description = [{
    Yields the dims of `input`. Folds to a constant when the shape is static and to
    a `kiln.symbolic_constant` when every dim is known symbolically.

    ```mlir
    %s = kiln.shape_of %x : (tensor<?x768xf32, #kiln.dims<[n, 768]>>) -> tensor<2xi64>
    ```
  }];
  let arguments = (ins Kiln_Tensor:$input);
  let results = (outs Kiln_ShapeTensor:$result);
  let hasFolder = 1;
}

def Kiln_RangeOp : Kiln_Op<"range", [
    DeclareOpInterfaceMethods<Kiln_KernelFacts, ["isInlinable"]>]> {
  let summary = "evenly spaced values in [start, limit)";
  let description = [{
    A 1-D tensor `start, start + delta, ...` stopping before `limit` (ONNX Range).
    Operands are 0-d tensors of one numeric type; the length is
    `max(ceil((limit - start) / delta), 0)`, known when the operands are constants.
    A zero `delta` is an error when it is a constant.

    ```mlir
    %r = kiln.range %start, %limit, %delta : (tensor<i64>, tensor<i64>, tensor<i64>) -> tensor<?xi64>
    ```
  }];
  let arguments = (ins 0DTensorOf<[Kiln_Element]>:$start, 0DTensorOf<[Kiln_Element]>:$limit,
                       0DTensorOf<[Kiln_Element]>:$delta);
  let results = (outs Kiln_Tensor:$result);
  let hasFolder = 1;
}

#endif // KILN_SHAPE_OPS_TD
