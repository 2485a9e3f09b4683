//===- DataMovementOps.td - reshape, transpose, slice, ... ----*- tablegen -*-===//
//
// Ops that move data without arithmetic. The codegen expresses each as an index map,
// so they fuse into their consumers' kernels.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_DATA_MOVEMENT_OPS_TD
#define KILN_DATA_MOVEMENT_OPS_TD

include "ir/Kiln/KilnAttrs.td"

def Kiln_ReshapeOp : Kiln_Op<"reshape"> {
  let summary = "reinterprets a tensor's elements with a new shape";
  let description = [{
    `shape` lists the result dims, each non-negative except at most one `-1`, which
    stands for whatever size keeps the element count. When `shape` is a constant or
    a symbolic constant the result type is known, symbolically where the input is
    dynamic; the element counts must then agree.

    ```mlir
    %s = kiln.symbolic_constant [batch * seq, 768] : tensor<2xi64>
    %r = kiln.reshape %x, %s : (tensor<?x?x768xf32, #kiln.dims<[batch, seq, 768]>>, tensor<2xi64>) -> tensor<?x768xf32, #kiln.dims<[batch * seq, 768]>>
    ```
  }];
  let arguments = (ins Kiln_Tensor:$input, Kiln_ShapeTensor:$shape);
  let results = (outs Kiln_Tensor:$result);
  let hasFolder = 1;
  let hasCanonicalizer = 1;
}

def Kiln_TransposeOp : Kiln_Op<"transpose"> {
  let summary = "permutes the dims of a tensor";
  let description = [{
    Result dim `i` is input dim `permutation[i]`.

    ```mlir
    %r = kiln.transpose %x {permutation = array<i64: 1, 0>} : (tensor<?x4xf32, #kiln.dims<[n, 4]>>) -> tensor<4x?xf32, #kiln.dims<[4, n]>>
    ```
  }];
  let arguments = (ins Kiln_Tensor:$input, DenseI64ArrayAttr:$permutation);
  let results = (outs Kiln_Tensor:$result);
  let hasFolder = 1;
}

def Kiln_BroadcastToOp : Kiln_Op<"broadcast_to"> {
  let summary = "broadcasts a tensor against a shape (ONNX Expand)";
  let description = [{
    The result shape is the numpy broadcast of the input's shape and `shape`, so a
    `1` in `shape` keeps the input's dim, as ONNX Expand does.

    ```mlir
    %s = kiln.constant dense<[4, 1]> : tensor<2xi64>
    %r = kiln.broadcast_to %x, %s : (tensor<1x8xf32>, tensor<2xi64>) -> tensor<4x8xf32>
    ```
  }];
  let arguments = (ins Kiln_Tensor:$input, Kiln_ShapeTensor:$shape);
  let results = (outs Kiln_Tensor:$result);
  let hasFolder = 1;
}

def Kiln_ConcatOp : Kiln_Op<"concat"> {
  let summary = "joins tensors along an axis";
  let description = [{
    All inputs have one rank and element type and agree on every dim but `axis`;
    the result's `axis` dim is the sum of theirs.

    ```mlir
    %r = kiln.concat %a, %b {axis = 0 : i64} : (tensor<?x4xf32, #kiln.dims<[n, 4]>>, tensor<2x4xf32>) -> tensor<?x4xf32, #kiln.dims<[n + 2, 4]>>
    ```
  }];
  let arguments = (ins Variadic<Kiln_Tensor>:$inputs, I64Attr:$axis);
  let results = (outs Kiln_Tensor:$result);
  let hasFolder = 1;
}

def Kiln_SliceOp : Kiln_Op<"slice"> {
  let summary = "a strided window of a tensor (ONNX Slice over every axis)";
  let description = [{
    `starts`, `ends` and `steps` hold one entry per input dim, with ONNX Slice
    semantics: negative positions count from the end, positions clamp to the dim,
    and a negative step walks backwards. A step of 0 is an error when it is a
    constant. With constant positions and a static dim the result dim is exact; on a
    symbolic dim it is symbolic when the positions are in range.

    ```mlir
    %r = kiln.slice %x, %starts, %ends, %steps : (tensor<8x6xf32>, tensor<2xi64>, tensor<2xi64>, tensor<2xi64>) -> tensor<4x6xf32>
    ```
  }];
  let arguments = (ins Kiln_Tensor:$input, Kiln_ShapeTensor:$starts,
                       Kiln_ShapeTensor:$ends, Kiln_ShapeTensor:$steps);
  let results = (outs Kiln_Tensor:$result);
  let hasFolder = 1;
}

def Kiln_GatherOp : Kiln_Op<"gather"> {
  let summary = "selects slices along an axis by index (ONNX Gather)";
  let description = [{
    The result shape is `data.shape[:axis] + indices.shape + data.shape[axis+1:]`.
    Negative indices count from the end of the axis.

    ```mlir
    %r = kiln.gather %table, %ids {axis = 0 : i64} : (tensor<1000x64xf32>, tensor<?x?xi64, #kiln.dims<[batch, seq]>>) -> tensor<?x?x64xf32, #kiln.dims<[batch, seq, 64]>>
    ```
  }];
  let arguments = (ins Kiln_Tensor:$data, Kiln_IndexTensor:$indices, I64Attr:$axis);
  let results = (outs Kiln_Tensor:$result);
  let hasFolder = 1;
}

def Kiln_PadOp : Kiln_Op<"pad"> {
  let summary = "pads a tensor at both ends of every dim";
  let description = [{
    `pads` holds `[begin_0, ..., begin_r-1, end_0, ..., end_r-1 ]` (ONNX order);
    negative pads crop. `value` (a 0-d tensor of the input's element type) fills
    in `constant` mode; `reflect`, `edge` and `wrap` mirror, repeat or wrap the
    input.

    ```mlir
    %r = kiln.pad %x, %pads, %zero {mode = #kiln<pad_mode constant>} : (tensor<2x3xf32>, tensor<4xi64>, tensor<f32>) -> tensor<4x5xf32>
    ```
  }];
  let arguments = (ins Kiln_Tensor:$input, Kiln_ShapeTensor:$pads,
                       0DTensorOf<[Kiln_Element]>:$value, Kiln_PadModeAttr:$mode);
  let results = (outs Kiln_Tensor:$result);
}

#endif // KILN_DATA_MOVEMENT_OPS_TD
