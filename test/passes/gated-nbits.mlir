// --kiln-merge-sibling-matmuls on SwiGLU's gate over weight-only products:
// `silu(x Wg) * (x Wu)` (the SiLU as g * sigmoid(g)), the two products of one
// input read by the gate alone, becomes one kiln.matmul_nbits {glu}: the
// columns interleaved by 8 (in each group of 16, 8 gates and then their 8
// ups: the pairs a thread of its kernel holds), the gate its epilogue.
// RUN: rm -rf %t && mkdir -p %t
// RUN: kiln-opt %s --kiln-merge-sibling-matmuls | FileCheck %s
// RUN: kiln-opt %s --kiln-merge-sibling-matmuls -o %t/fused.mlir
// With gates=false (a benchmark's baseline) the two are siblings.
// RUN: kiln-opt %s --kiln-merge-sibling-matmuls=gates=false | FileCheck %s --check-prefix=SIBLINGS
// SIBLINGS: kiln.matmul_nbits {{.*}} {bits = 4 : i64, block_size = 32 : i64} : {{.*}} -> tensor<?x32xf32
// SIBLINGS: kiln.sigmoid
// The fused product against the three ops on the float64 reference (which
// rounds the halves and the SiLU to f32 where the fused product rounds once:
// within 1e-5 relative, not exact): columns or scales in the wrong place
// would be far off.
// RUN: %python -c "import numpy as np; np.save('%t/x.npy', np.random.default_rng(3).standard_normal((3, 32)).astype(np.float32))"
// RUN: kiln-reference %s --no-optimize --input x=%t/x.npy --output-dir %t/before > /dev/null
// RUN: kiln-reference %t/fused.mlir --no-optimize --input x=%t/x.npy --output-dir %t/after > /dev/null
// RUN: %python %S/../run/compare_outputs.py %t/after/output_0.pb %t/before/output_0.pb --atol 1e-6 --rtol 1e-5 | FileCheck %s --check-prefix=CLOSE
// CLOSE: OK

// 16 gate and 16 up columns (4 bits, blocks of 32, zero points; a bias on
// up alone, zeros for the gates'): one product of 32 columns, gated to 16.
// CHECK-LABEL: func.func @swiglu
// CHECK: kiln.constant dense<{{\[\[}}7.812500e-02], [2.343750e-01], [9.375000e-02], [3.125000e-02], [4.687500e-02], [3.125000e-02], [1.093750e-01], [1.562500e-01], [1.406250e-01], [6.250000e-02], [3.125000e-02], [1.718750e-01], [1.562500e-02], [2.343750e-01], [1.875000e-01], [1.093750e-01], [2.031250e-01]
// The bias: the gates' zeros, then up's first 8 (0, -0.125, ...), and so on.
// CHECK: kiln.constant dense<[0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00, -1.250000e-01, -3.750000e-01, -1.250000e-01, 8.750000e-01, -1.250000e-01, -2.500000e-01, 0.000000e+00, 0.000000e+00,
// CHECK: %[[Y:.*]] = kiln.matmul_nbits %arg0, %{{.*}}, %{{.*}}, %{{.*}} bias(%{{.*}}) {bits = 4 : i64, block_size = 32 : i64, glu} : (tensor<?x32xf32, #kiln.dims<[n, 32]>>, tensor<32x1x16xui8>, tensor<32x1xf32>, tensor<32x1xui8>, tensor<32xf32>) -> tensor<?x16xf32, #kiln.dims<[n, 16]>>
// CHECK-NOT: kiln.sigmoid
// CHECK-NOT: kiln.mul
// CHECK: return %[[Y]]
func.func @swiglu(%x: tensor<?x32xf32, #kiln.dims<[n, 32]>> {kiln.name = "x"}) -> tensor<?x16xf32, #kiln.dims<[n, 16]>> {
  %wg = kiln.constant dense<[[[107, 222, 246, 73, 29, 154, 170, 199, 164, 183, 234, 234, 237, 220, 184, 235]], [[3, 6, 204, 111, 191, 124, 230, 16, 172, 1, 37, 212, 74, 251, 89, 200]], [[245, 80, 250, 180, 247, 76, 131, 189, 247, 71, 123, 200, 214, 252, 54, 252]], [[29, 226, 223, 233, 223, 181, 148, 141, 20, 236, 235, 22, 152, 94, 190, 155]], [[150, 122, 28, 202, 227, 49, 119, 15, 111, 32, 105, 246, 36, 33, 180, 57]], [[1, 96, 45, 159, 141, 200, 155, 20, 15, 238, 188, 195, 208, 82, 135, 48]], [[0, 152, 57, 152, 228, 68, 65, 43, 85, 196, 169, 172, 10, 204, 189, 56]], [[152, 185, 13, 19, 56, 1, 156, 45, 147, 200, 67, 138, 164, 157, 66, 151]], [[59, 162, 73, 82, 244, 184, 35, 3, 24, 96, 228, 13, 29, 32, 67, 231]], [[80, 154, 3, 202, 142, 155, 244, 146, 18, 203, 140, 159, 11, 130, 227, 142]], [[105, 145, 10, 87, 218, 170, 71, 104, 17, 167, 202, 124, 161, 191, 203, 177]], [[178, 10, 83, 200, 199, 229, 76, 84, 248, 187, 9, 216, 81, 127, 194, 33]], [[165, 187, 167, 214, 252, 79, 38, 55, 124, 196, 146, 132, 228, 3, 219, 50]], [[217, 55, 197, 148, 128, 143, 199, 132, 1, 87, 164, 100, 27, 128, 21, 145]], [[144, 144, 195, 183, 146, 254, 194, 191, 134, 125, 181, 250, 173, 32, 203, 243]], [[78, 128, 223, 123, 56, 217, 7, 155, 117, 210, 39, 94, 165, 141, 227, 166]]]> : tensor<16x1x16xui8>
  %sg = kiln.constant dense<[[0.078125], [0.234375], [0.09375], [0.03125], [0.046875], [0.03125], [0.109375], [0.15625], [0.203125], [0.046875], [0.21875], [0.015625], [0.140625], [0.15625], [0.1875], [0.03125]]> : tensor<16x1xf32>
  %zg = kiln.constant dense<[[15], [8], [14], [1], [2], [4], [11], [13], [15], [5], [1], [12], [7], [10], [3], [1]]> : tensor<16x1xui8>
  %g = kiln.matmul_nbits %x, %wg, %sg, %zg {bits = 4 : i64, block_size = 32 : i64} : (tensor<?x32xf32, #kiln.dims<[n, 32]>>, tensor<16x1x16xui8>, tensor<16x1xf32>, tensor<16x1xui8>) -> tensor<?x16xf32, #kiln.dims<[n, 16]>>
  %wu = kiln.constant dense<[[[137, 60, 183, 195, 163, 39, 146, 34, 223, 69, 110, 207, 39, 121, 184, 8]], [[238, 50, 147, 144, 160, 15, 238, 80, 132, 54, 244, 176, 30, 37, 195, 94]], [[69, 115, 72, 230, 127, 103, 67, 34, 233, 107, 165, 95, 200, 145, 41, 31]], [[194, 108, 63, 167, 157, 104, 54, 242, 195, 93, 121, 223, 162, 85, 60, 102]], [[64, 180, 48, 137, 50, 238, 97, 226, 35, 72, 185, 82, 91, 165, 255, 202]], [[233, 28, 198, 231, 226, 90, 190, 36, 199, 67, 92, 204, 180, 65, 59, 30]], [[165, 152, 54, 233, 148, 80, 208, 130, 159, 99, 229, 241, 149, 221, 216, 124]], [[55, 250, 108, 57, 88, 106, 174, 144, 219, 197, 154, 180, 100, 106, 33, 240]], [[13, 251, 37, 217, 141, 116, 0, 209, 211, 68, 249, 44, 35, 19, 118, 205]], [[1, 249, 64, 76, 128, 184, 82, 67, 61, 197, 251, 42, 52, 132, 89, 202]], [[77, 248, 180, 172, 167, 176, 179, 103, 175, 43, 184, 206, 177, 20, 6, 191]], [[77, 79, 145, 13, 115, 37, 206, 136, 157, 81, 48, 33, 194, 82, 131, 204]], [[157, 186, 46, 118, 165, 94, 112, 253, 9, 130, 138, 172, 41, 214, 240, 129]], [[233, 160, 91, 114, 28, 214, 134, 195, 162, 114, 157, 212, 31, 60, 174, 89]], [[106, 172, 3, 32, 157, 237, 20, 5, 27, 238, 48, 73, 183, 228, 254, 78]], [[121, 200, 246, 136, 158, 111, 202, 138, 146, 254, 61, 230, 56, 77, 252, 61]]]> : tensor<16x1x16xui8>
  %su = kiln.constant dense<[[0.140625], [0.0625], [0.03125], [0.171875], [0.015625], [0.234375], [0.1875], [0.109375], [0.1875], [0.125], [0.015625], [0.015625], [0.125], [0.125], [0.109375], [0.046875]]> : tensor<16x1xf32>
  %zu = kiln.constant dense<[[8], [7], [5], [8], [6], [7], [7], [3], [9], [4], [7], [11], [11], [9], [7], [6]]> : tensor<16x1xui8>
  %bu = kiln.constant dense<[0.0, -0.125, -0.375, -0.125, 0.875, -0.125, -0.25, 0.0, -0.125, 0.75, -0.75, -1.0, 0.625, 0.125, 0.5, -0.875]> : tensor<16xf32>
  %u = kiln.matmul_nbits %x, %wu, %su, %zu bias(%bu) {bits = 4 : i64, block_size = 32 : i64} : (tensor<?x32xf32, #kiln.dims<[n, 32]>>, tensor<16x1x16xui8>, tensor<16x1xf32>, tensor<16x1xui8>, tensor<16xf32>) -> tensor<?x16xf32, #kiln.dims<[n, 16]>>
  %sig = kiln.sigmoid %g : (tensor<?x16xf32, #kiln.dims<[n, 16]>>) -> tensor<?x16xf32, #kiln.dims<[n, 16]>>
  %silu = kiln.mul %g, %sig : (tensor<?x16xf32, #kiln.dims<[n, 16]>>, tensor<?x16xf32, #kiln.dims<[n, 16]>>) -> tensor<?x16xf32, #kiln.dims<[n, 16]>>
  %y = kiln.mul %silu, %u : (tensor<?x16xf32, #kiln.dims<[n, 16]>>, tensor<?x16xf32, #kiln.dims<[n, 16]>>) -> tensor<?x16xf32, #kiln.dims<[n, 16]>>
  return %y : tensor<?x16xf32, #kiln.dims<[n, 16]>>
}
