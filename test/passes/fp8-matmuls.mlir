// --kiln-fp8-matmuls: matmuls by constant weights become float8 products,
// the activations' scales from the float64 reference run on calibration sets.
// RUN: rm -rf %t && mkdir -p %t/calib/test_data_set_0 %t/calib/test_data_set_1 %t/empty %t/two/test_data_set_0
// RUN: %python -c "import numpy as np; np.save('%t/calib/test_data_set_0/input_0.npy', np.linspace(-1, 3, 64, dtype=np.float32).reshape(2, 32)); np.save('%t/calib/test_data_set_1/input_0.npy', np.linspace(-4, 2, 96, dtype=np.float32).reshape(3, 32))"
// RUN: %python -c "import numpy as np; [np.save('%t/two/test_data_set_0/input_%%d.npy' %% i, np.zeros((1, 32), np.float32)) for i in range(2)]"
// RUN: kiln-opt %s --kiln-fp8-matmuls="calibration=%t/calib" | FileCheck %s
// RUN: not kiln-opt %s --kiln-fp8-matmuls 2>&1 | FileCheck %s --check-prefix=NONE
// RUN: not kiln-opt %s --kiln-fp8-matmuls="calibration=%t/empty" 2>&1 | FileCheck %s --check-prefix=EMPTY
// RUN: not kiln-opt %s --kiln-fp8-matmuls="calibration=%t/two" 2>&1 | FileCheck %s --check-prefix=COUNT
// RUN: mkdir -p %t/inf/test_data_set_0 && %python -c "import numpy as np; x = np.zeros((1, 32), np.float32); x[0, 3] = np.inf; np.save('%t/inf/test_data_set_0/input_0.npy', x)"
// RUN: not kiln-opt %s --kiln-fp8-matmuls="calibration=%t/inf" 2>&1 | FileCheck %s --check-prefix=INF

// Scales are the powers of two at or above range / 448. The first product:
// the weight's range is 0.5, its scale 2^-9, so it is 256 everywhere, stored
// [N, K]; the activation's range over both sets is 4 (the second set's -4),
// its scale 2^-6, so it is multiplied by 64 and cast to e4m3, saturating;
// alpha is 2^-15. The bias and the ReLU stay in the epilogue.
// CHECK-LABEL: func.func @mlp
// CHECK-DAG: %[[B1:.*]] = kiln.constant dense<2.500000e-01> : tensor<16xf32>
// CHECK-DAG: %[[W1:.*]] = kiln.constant dense<2.560000e+02> : tensor<16x32xf8E4M3FN>
// CHECK-DAG: %[[S1:.*]] = kiln.constant dense<6.400000e+01> : tensor<f32>
// CHECK: %[[X1:.*]] = kiln.mul %arg0, %[[S1]]
// CHECK: %[[Q1:.*]] = kiln.cast %[[X1]] to f8E4M3FN {kiln.fp8_operand}
// CHECK: %[[H:.*]] = kiln.matmul %[[Q1]], %[[W1]], %[[B1]] {activation = #kiln<activation relu>, alpha = 3.0517578125E-5 : f64, transpose_rhs = true} : ({{.*}}xf8E4M3FN{{.*}}, tensor<16x32xf8E4M3FN>, tensor<16xf32>) -> tensor<?x16xf32
// A weight read transposed is stored as it is (-0.125 at scale 2^-11); the
// second activation's range is what the first product reaches (its largest
// row sum, 32.25 + 0.25), its scale 2^-3.
// CHECK: %[[W2:.*]] = kiln.constant dense<-2.560000e+02> : tensor<8x16xf8E4M3FN>
// CHECK: %[[S2:.*]] = kiln.constant dense<8.000000e+00> : tensor<f32>
// CHECK: %[[X2:.*]] = kiln.mul %[[H]], %[[S2]]
// CHECK: %[[Q2:.*]] = kiln.cast %[[X2]] to f8E4M3FN {kiln.fp8_operand}
// CHECK: kiln.matmul %[[Q2]], %[[W2]] {alpha = {{.*}} : f64, transpose_rhs = true}
// N = 12 is not a multiple of 8 (16-byte rows of a 16-bit result): float.
// CHECK: kiln.matmul %[[H]], %{{.*}} : (tensor<?x16xf32, #kiln.dims<[n, 16]>>, tensor<16x12xf32>)

// NONE: error: --precision fp8 needs --calibrate DIR: the activations' scales come from the range they reach on its data sets
// EMPTY: error: --calibrate '{{.*}}empty': no data set (test_data_set_N/input_K.pb or .npy)
// COUNT: error: --calibrate: {{.*}}test_data_set_0 has 2 inputs; the model takes 1
// INF: error: --calibrate: the matmul's activation is infinite or NaN on the calibration sets: no FP8 scale holds it
func.func @mlp(%x: tensor<?x32xf32, #kiln.dims<[n, 32]>> {kiln.name = "x"}) -> (tensor<?x8xf32, #kiln.dims<[n, 8]>>, tensor<?x12xf32, #kiln.dims<[n, 12]>>) {
  %w1 = kiln.constant dense<0.5> : tensor<32x16xf32>
  %b1 = kiln.constant dense<0.25> : tensor<16xf32>
  %h = kiln.matmul %x, %w1, %b1 {activation = #kiln<activation relu>} : (tensor<?x32xf32, #kiln.dims<[n, 32]>>, tensor<32x16xf32>, tensor<16xf32>) -> tensor<?x16xf32, #kiln.dims<[n, 16]>>
  %w2 = kiln.constant dense<-0.125> : tensor<8x16xf32>
  %y = kiln.matmul %h, %w2 {transpose_rhs = true} : (tensor<?x16xf32, #kiln.dims<[n, 16]>>, tensor<8x16xf32>) -> tensor<?x8xf32, #kiln.dims<[n, 8]>>
  %w3 = kiln.constant dense<1.0> : tensor<16x12xf32>
  %z = kiln.matmul %h, %w3 : (tensor<?x16xf32, #kiln.dims<[n, 16]>>, tensor<16x12xf32>) -> tensor<?x12xf32, #kiln.dims<[n, 12]>>
  return %y, %z : tensor<?x8xf32, #kiln.dims<[n, 8]>>, tensor<?x12xf32, #kiln.dims<[n, 12]>>
}

// A product of two activations has no weight to quantize: it stays float,
// and a function with nothing to rewrite needs no calibration (its data sets
// would not fit its two inputs).
// CHECK-LABEL: func.func @pair
// CHECK: kiln.matmul %arg0, %arg1 : (tensor<4x32xf32>, tensor<32x16xf32>)
func.func @pair(%p: tensor<4x32xf32>, %q: tensor<32x16xf32>) -> tensor<4x16xf32> {
  %pq = kiln.matmul %p, %q : (tensor<4x32xf32>, tensor<32x16xf32>) -> tensor<4x16xf32>
  return %pq : tensor<4x16xf32>
}
