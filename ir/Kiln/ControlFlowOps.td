//===- ControlFlowOps.td - if, loop, scan: ONNX control flow as regions -*- tablegen -*-===//
//
// ONNX If, Loop and Scan import as region ops; the regions use values of the
// enclosing function directly, as ONNX subgraphs do. They are where the later
// partitioning pass breaks the graph: their bodies compile as separate kernels and
// the host drives the iteration.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_CONTROL_FLOW_OPS_TD
#define KILN_CONTROL_FLOW_OPS_TD

include "ir/Kiln/KilnAttrs.td"
include "mlir/Interfaces/ControlFlowInterfaces.td"

def Kiln_YieldOp : Op<Kiln_Dialect, "yield",
    [Pure, Terminator, ReturnLike, ParentOneOf<["IfOp", "LoopOp", "ScanOp", "KernelOp"]>]> {
  let summary = "ends a kiln.if, kiln.loop, kiln.scan or kiln.kernel region with its values";
  let description = [{
    ```mlir
    kiln.yield %a, %b : tensor<4xf32>, tensor<i1>
    ```
  }];
  let arguments = (ins Variadic<Kiln_Tensor>:$values);
  let assemblyFormat = "($values^ `:` type($values))? attr-dict";
}

def Kiln_IfOp : Op<Kiln_Dialect, "if", [RecursiveMemoryEffects, NoRegionArguments]> {
  let summary = "runs one of two regions on a boolean condition (ONNX If)";
  let description = [{
    `condition` holds one i1. Each region yields one value per result; a result's
    type may be less refined than the branches' (dims the branches disagree on are
    `?`).

    ```mlir
    %r = kiln.if %c : tensor<i1> -> tensor<?xf32> {
      kiln.yield %a : tensor<3xf32>
    } else {
      kiln.yield %b : tensor<5xf32>
    }
    ```
  }];
  let arguments = (ins Kiln_BoolTensor:$condition);
  let results = (outs Variadic<Kiln_Tensor>:$results);
  let regions = (region SizedRegion<1>:$then_region, SizedRegion<1>:$else_region);
  let assemblyFormat = [{
    $condition `:` type($condition) (`->` type($results)^)? $then_region `else` $else_region attr-dict
  }];
  let hasVerifier = 1;
}

def Kiln_LoopOp : Op<Kiln_Dialect, "loop", [RecursiveMemoryEffects]> {
  let summary = "a counted and conditional loop with carried values (ONNX Loop)";
  let description = [{
    Runs the body while the iteration count is below `max_trip_count` and the
    condition holds. The body's arguments are the iteration number (i64), the
    condition (i1) and the carried values; it yields the next condition, the next
    carried values and then one slice per scan output. Results are the final carried
    values followed by the scan outputs, each its slices stacked along a new leading
    dim.

    ```mlir
    %sum, %steps = kiln.loop %max, %true, %zero : (tensor<i64>, tensor<i1>, tensor<f32>) -> (tensor<f32>, tensor<?xf32>) {
    ^bb0(%i: tensor<i64>, %c: tensor<i1>, %acc: tensor<f32>):
      %next = kiln.add %acc, %one : (tensor<f32>, tensor<f32>) -> tensor<f32>
      kiln.yield %c, %next, %next : tensor<i1>, tensor<f32>, tensor<f32>
    }
    ```
  }];
  let arguments = (ins 0DTensorOf<[I64]>:$max_trip_count, Kiln_BoolTensor:$condition,
                       Variadic<Kiln_Tensor>:$initial);
  let results = (outs Variadic<Kiln_Tensor>:$results);
  let regions = (region SizedRegion<1>:$body);
  let assemblyFormat = [{
    $max_trip_count `,` $condition (`,` $initial^)? `:` functional-type(operands, results) $body attr-dict
  }];
  let hasVerifier = 1;
}

def Kiln_ScanOp : Op<Kiln_Dialect, "scan", [RecursiveMemoryEffects]> {
  let summary = "runs a body over slices of inputs with carried state (ONNX Scan)";
  let description = [{
    `inputs` holds the initial states followed by `num_scan_inputs` scanned inputs.
    Each iteration the body gets the states and one slice of every scanned input
    (along its `scan_input_axes` entry, backwards where `scan_input_directions` is
    1) and yields the next states and one slice per scan output. Results are the
    final states followed by the scan outputs, slices stacked along
    `scan_output_axes`.

    ```mlir
    %s, %ys = kiln.scan %init, %xs {num_scan_inputs = 1 : i64, scan_input_axes = array<i64: 0>, scan_input_directions = array<i64: 0>, scan_output_axes = array<i64: 0>, scan_output_directions = array<i64: 0>} : (tensor<2xf32>, tensor<3x2xf32>) -> (tensor<2xf32>, tensor<3x2xf32>) {
    ^bb0(%state: tensor<2xf32>, %x: tensor<2xf32>):
      %next = kiln.add %state, %x : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
      kiln.yield %next, %next : tensor<2xf32>, tensor<2xf32>
    }
    ```
  }];
  let arguments = (ins Variadic<Kiln_Tensor>:$inputs, I64Attr:$num_scan_inputs,
                       DenseI64ArrayAttr:$scan_input_axes,
                       DenseI64ArrayAttr:$scan_input_directions,
                       DenseI64ArrayAttr:$scan_output_axes,
                       DenseI64ArrayAttr:$scan_output_directions);
  let results = (outs Variadic<Kiln_Tensor>:$results);
  let regions = (region SizedRegion<1>:$body);
  let assemblyFormat = [{
    $inputs attr-dict `:` functional-type($inputs, $results) $body
  }];
  let hasVerifier = 1;
}

#endif // KILN_CONTROL_FLOW_OPS_TD
