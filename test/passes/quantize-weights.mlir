// --kiln-quantize-weights (kiln-compile --weights int4|int8 --group-size N):
// constant matmul weights become kiln.matmul_nbits operands, per column in
// blocks along K: a scale and a packed zero point a block, codes packed low
// bits first. test/run/quantize-weights.test runs the result.
// RUN: kiln-opt %s --split-input-file --kiln-quantize-weights="bits=4 group-size=16" | FileCheck %s
// RUN: kiln-opt %s --split-input-file --kiln-quantize-weights="bits=8 group-size=16" | FileCheck %s --check-prefix=INT8
// With the bf16 precision mode to come, an fp32 model's scales are bf16
// already (the codes chosen for them): 0.1 rounded up.
// RUN: kiln-opt %s --split-input-file --kiln-quantize-weights="bits=4 group-size=16 precision=bf16" | FileCheck %s --check-prefix=BF16
// BF16-LABEL: func @packing
// BF16: kiln.constant dense<1.000980e-01> : tensor<2x1xbf16>

// Column 0 is 0.0, 0.1, .., 1.5: its block's range [0, 1.5] over 15 steps
// is a scale of 0.1 and a zero point of 0, so its codes are 0..15, two a
// byte (0x10, 0x32, ..); column 1 is -0.8, -0.7, .., 0.7: scale 0.1, zero
// point 8, codes 0..15 again. The zero points pack as one byte a column.
// CHECK-LABEL: func @packing
// CHECK-DAG: %[[W:.*]] = kiln.constant dense<{{\[\[\[}}16, 50, 84, 118, 152, 186, 220, 254]], {{\[\[}}16, 50, 84, 118, 152, 186, 220, 254]]]> : tensor<2x1x8xui8>
// CHECK-DAG: %[[S:.*]] = kiln.constant dense<1.000000e-01> : tensor<2x1xf32>
// CHECK-DAG: %[[Z:.*]] = kiln.constant dense<{{\[\[}}0], [8]]> : tensor<2x1xui8>
// CHECK: kiln.matmul_nbits %arg0, %[[W]], %[[S]], %[[Z]] {bits = 4 : i64, block_size = 16 : i64} : {{.*}} -> tensor<?x2xf32, #kiln.dims<[m, 2]>>
// CHECK-NOT: kiln.matmul %
// INT8-LABEL: func @packing
// INT8: kiln.matmul_nbits {{.*}} {bits = 8 : i64, block_size = 16 : i64} : (tensor<?x16xf32, #kiln.dims<[m, 16]>>, tensor<2x1x16xui8>, tensor<2x1xf32>, tensor<2x1xui8>)
func.func @packing(%x: tensor<?x16xf32, #kiln.dims<[m, 16]>>) -> tensor<?x2xf32, #kiln.dims<[m, 2]>> {
  %w = kiln.constant dense<[[0.0, -0.8], [0.1, -0.7], [0.2, -0.6], [0.3, -0.5], [0.4, -0.4], [0.5, -0.3], [0.6, -0.2], [0.7, -0.1], [0.8, 0.0], [0.9, 0.1], [1.0, 0.2], [1.1, 0.3], [1.2, 0.4], [1.3, 0.5], [1.4, 0.6], [1.5, 0.7]]> : tensor<16x2xf32>
  %y = kiln.matmul %x, %w : (tensor<?x16xf32, #kiln.dims<[m, 16]>>, tensor<16x2xf32>) -> tensor<?x2xf32, #kiln.dims<[m, 2]>>
  return %y : tensor<?x2xf32, #kiln.dims<[m, 2]>>
}

// -----

// A weight stored [N, K] (transpose_rhs, torch's Linear) is read as it is;
// K = 20 is two blocks of 16, the second holding 4 weights and 12 codes of
// padding; a block of zeros has scale 1.
// CHECK-LABEL: func @stored
// CHECK: kiln.matmul_nbits %arg0, %{{.*}}, %{{.*}}, %{{.*}} {bits = 4 : i64, block_size = 16 : i64} : (tensor<3x20xf32>, tensor<4x2x8xui8>, tensor<4x2xf32>, tensor<4x1xui8>) -> tensor<3x4xf32>
func.func @stored(%x: tensor<3x20xf32>) -> tensor<3x4xf32> {
  %w = kiln.constant dense<0.0> : tensor<4x20xf32>
  %y = kiln.matmul %x, %w {transpose_rhs = true} : (tensor<3x20xf32>, tensor<4x20xf32>) -> tensor<3x4xf32>
  return %y : tensor<3x4xf32>
}

// -----

// Siblings of one input (Q, K, V) are one kernel over their columns, each
// reading its slice; a 1-D input is a row.
// CHECK-LABEL: func @siblings
// CHECK: %[[Y:.*]] = kiln.matmul_nbits %arg0, {{.*}} -> tensor<?x?x24xf32, #kiln.dims<[b, s, 24]>>
// CHECK: kiln.slice %[[Y]]{{.*}} -> tensor<?x?x16xf32, #kiln.dims<[b, s, 16]>>
// CHECK: kiln.slice %[[Y]]{{.*}} -> tensor<?x?x8xf32, #kiln.dims<[b, s, 8]>>
// CHECK: %[[R:.*]] = kiln.reshape %arg1
// CHECK: %[[V:.*]] = kiln.matmul_nbits %[[R]], {{.*}} -> tensor<1x8xf32>
// CHECK: kiln.reshape %[[V]]{{.*}} -> tensor<8xf32>
func.func @siblings(%x: tensor<?x?x32xf32, #kiln.dims<[b, s, 32]>>, %r: tensor<32xf32>) -> (tensor<?x?x16xf32, #kiln.dims<[b, s, 16]>>, tensor<?x?x8xf32, #kiln.dims<[b, s, 8]>>, tensor<8xf32>) {
  %wq = kiln.constant dense<0.5> : tensor<32x16xf32>
  %wk = kiln.constant dense<-0.25> : tensor<32x8xf32>
  %q = kiln.matmul %x, %wq : (tensor<?x?x32xf32, #kiln.dims<[b, s, 32]>>, tensor<32x16xf32>) -> tensor<?x?x16xf32, #kiln.dims<[b, s, 16]>>
  %k = kiln.matmul %x, %wk : (tensor<?x?x32xf32, #kiln.dims<[b, s, 32]>>, tensor<32x8xf32>) -> tensor<?x?x8xf32, #kiln.dims<[b, s, 8]>>
  %v = kiln.matmul %r, %wk : (tensor<32xf32>, tensor<32x8xf32>) -> tensor<8xf32>
  return %q, %k, %v : tensor<?x?x16xf32, #kiln.dims<[b, s, 16]>>, tensor<?x?x8xf32, #kiln.dims<[b, s, 8]>>, tensor<8xf32>
}

// -----

// Left alone: a weight computed at run time, a matmul with an epilogue, a
// batched weight.
// CHECK-LABEL: func @left_alone
// CHECK-COUNT-3: kiln.matmul %
// CHECK-NOT: kiln.matmul_nbits
func.func @left_alone(%x: tensor<3x16xf32>, %w: tensor<16x4xf32>) -> (tensor<3x4xf32>, tensor<3x4xf32>, tensor<2x3x4xf32>) {
  %c = kiln.constant dense<1.0> : tensor<16x4xf32>
  %b = kiln.constant dense<1.0> : tensor<4xf32>
  %c3 = kiln.constant dense<1.0> : tensor<2x16x4xf32>
  %a = kiln.matmul %x, %w : (tensor<3x16xf32>, tensor<16x4xf32>) -> tensor<3x4xf32>
  %e = kiln.matmul %x, %c, %b {activation = #kiln<activation relu>} : (tensor<3x16xf32>, tensor<16x4xf32>, tensor<4xf32>) -> tensor<3x4xf32>
  %t = kiln.matmul %x, %c3 : (tensor<3x16xf32>, tensor<2x16x4xf32>) -> tensor<2x3x4xf32>
  return %a, %e, %t : tensor<3x4xf32>, tensor<3x4xf32>, tensor<2x3x4xf32>
}

// -----

// An fp16 weight: its scales are fp16, as the kernel reads them.
// CHECK-LABEL: func @half
// CHECK: kiln.matmul_nbits {{.*}} : (tensor<3x16xf16>, tensor<4x1x8xui8>, tensor<4x1xf16>, tensor<4x1xui8>) -> tensor<3x4xf16>
func.func @half(%h: tensor<3x16xf16>) -> tensor<3x4xf16> {
  %c = kiln.constant dense<1.0> : tensor<16x4xf16>
  %n = kiln.matmul %h, %c : (tensor<3x16xf16>, tensor<16x4xf16>) -> tensor<3x4xf16>
  return %n : tensor<3x4xf16>
}

// -----

// RUN: not kiln-opt %s --split-input-file --kiln-quantize-weights="bits=3" 2>&1 | FileCheck %s --check-prefix=BITS
// BITS: kiln-quantize-weights: bits must be 4 or 8, not 3
// RUN: not kiln-opt %s --split-input-file --kiln-quantize-weights="group-size=24" 2>&1 | FileCheck %s --check-prefix=GROUP
// GROUP: kiln-quantize-weights: group-size must be a power of 2 from 16 to 65536, not 24
