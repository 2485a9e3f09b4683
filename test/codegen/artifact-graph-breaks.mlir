// Ops that neither fuse into kernels nor are library calls run on the host as
// graph breaks between kernels: here top_k with a k given at run time whose
// result type fixes k at 2 (with a constant k, or a k only the data sizes, it
// is a kernel). non_zero, whose result size depends on the data, computes on
// the device and only its count is read back (kiln-sizes-on-device): a size
// read, not a graph break.
// RUN: rm -rf %t && mkdir -p %t
// RUN: kiln-compile %s -o %t/breaks.kiln --arch none --report %t/report.json
// RUN: FileCheck %s < %t/report.json
// RUN: %python -c "import json, sys; r = json.load(open('%t/report.json')); sys.exit([b['op'] for b in r['graph_breaks']] != ['kiln.top_k'] or [(s['op'], s['symbols']) for s in r['size_reads']] != [('kiln.non_zero', ['run0'])])"
// CHECK-DAG: "values_sized_at_run_time": 1
// RUN: %python -c "import numpy as np; np.save('%t/x.npy', np.array([[3, -1, 4, -1, 5, 9]], np.float32))"
// RUN: %python -c "import numpy as np; np.save('%t/k.npy', np.array([2], np.int64))"
// RUN: kiln-run %t/breaks.kiln --input x=%t/x.npy --input k=%t/k.npy --print | FileCheck %s --check-prefix=OUT
// OUT-DAG: top: f32[1, 2] [18, 10]
// OUT-DAG: where: i64[1, 2] [5, 4]
// OUT-DAG: nonzero: i64[2, 4] [0, 0, 0, 0, 0, 2, 4, 5]

func.func @main(%x: tensor<1x6xf32> {kiln.name = "x"}, %k: tensor<1xi64> {kiln.name = "k"})
    -> (tensor<1x2xf32> {kiln.name = "top"}, tensor<1x2xi64> {kiln.name = "where"},
        tensor<2x?xi64> {kiln.name = "nonzero"}) {
  %two = kiln.constant dense<2.0> : tensor<f32>
  %y = kiln.mul %x, %two : (tensor<1x6xf32>, tensor<f32>) -> tensor<1x6xf32>
  %v, %i = kiln.top_k %y, %k {axis = -1 : i64} : (tensor<1x6xf32>, tensor<1xi64>) -> (tensor<1x2xf32>, tensor<1x2xi64>)
  %z = kiln.max %y, %two : (tensor<1x6xf32>, tensor<f32>) -> tensor<1x6xf32>
  %zero = kiln.constant dense<2.0> : tensor<f32>
  %pos = kiln.compare %z, %zero {direction = #kiln<compare gt>} : (tensor<1x6xf32>, tensor<f32>) -> tensor<1x6xi1>
  %nz = kiln.non_zero %pos : (tensor<1x6xi1>) -> tensor<2x?xi64>
  return %v, %i, %nz : tensor<1x2xf32>, tensor<1x2xi64>, tensor<2x?xi64>
}
