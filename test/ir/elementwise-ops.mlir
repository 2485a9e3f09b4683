// Round trip of every elementwise op: parse, print, parse again, and through the
// generic form.
// RUN: kiln-opt %s | kiln-opt | FileCheck %s
// RUN: kiln-opt %s --mlir-print-op-generic | kiln-opt | FileCheck %s

// CHECK-LABEL: func @unary_float
func.func @unary_float(%x: tensor<?x4xf32, #kiln.dims<[n, 4]>>) {
  // CHECK: kiln.neg %{{.*}} : (tensor<?x4xf32, #kiln.dims<[n, 4]>>) -> tensor<?x4xf32, #kiln.dims<[n, 4]>>
  %neg = kiln.neg %x : (tensor<?x4xf32, #kiln.dims<[n, 4]>>) -> tensor<?x4xf32, #kiln.dims<[n, 4]>>
  // CHECK: kiln.abs %{{.*}} : (tensor<?x4xf32, #kiln.dims<[n, 4]>>) -> tensor<?x4xf32, #kiln.dims<[n, 4]>>
  %abs = kiln.abs %x : (tensor<?x4xf32, #kiln.dims<[n, 4]>>) -> tensor<?x4xf32, #kiln.dims<[n, 4]>>
  // CHECK: kiln.sign %{{.*}} : (tensor<?x4xf32, #kiln.dims<[n, 4]>>) -> tensor<?x4xf32, #kiln.dims<[n, 4]>>
  %sign = kiln.sign %x : (tensor<?x4xf32, #kiln.dims<[n, 4]>>) -> tensor<?x4xf32, #kiln.dims<[n, 4]>>
  // CHECK: kiln.exp %{{.*}} : (tensor<?x4xf32, #kiln.dims<[n, 4]>>) -> tensor<?x4xf32, #kiln.dims<[n, 4]>>
  %exp = kiln.exp %x : (tensor<?x4xf32, #kiln.dims<[n, 4]>>) -> tensor<?x4xf32, #kiln.dims<[n, 4]>>
  // CHECK: kiln.log %{{.*}} : (tensor<?x4xf32, #kiln.dims<[n, 4]>>) -> tensor<?x4xf32, #kiln.dims<[n, 4]>>
  %log = kiln.log %x : (tensor<?x4xf32, #kiln.dims<[n, 4]>>) -> tensor<?x4xf32, #kiln.dims<[n, 4]>>
  // CHECK: kiln.sqrt %{{.*}} : (tensor<?x4xf32, #kiln.dims<[n, 4]>>) -> tensor<?x4xf32, #kiln.dims<[n, 4]>>
  %sqrt = kiln.sqrt %x : (tensor<?x4xf32, #kiln.dims<[n, 4]>>) -> tensor<?x4xf32, #kiln.dims<[n, 4]>>
  // CHECK: kiln.rsqrt %{{.*}} : (tensor<?x4xf32, #kiln.dims<[n, 4]>>) -> tensor<?x4xf32, #kiln.dims<[n, 4]>>
  %rsqrt = kiln.rsqrt %x : (tensor<?x4xf32, #kiln.dims<[n, 4]>>) -> tensor<?x4xf32, #kiln.dims<[n, 4]>>
  // CHECK: kiln.reciprocal %{{.*}} : (tensor<?x4xf32, #kiln.dims<[n, 4]>>) -> tensor<?x4xf32, #kiln.dims<[n, 4]>>
  %reciprocal = kiln.reciprocal %x : (tensor<?x4xf32, #kiln.dims<[n, 4]>>) -> tensor<?x4xf32, #kiln.dims<[n, 4]>>
  // CHECK: kiln.tanh %{{.*}} : (tensor<?x4xf32, #kiln.dims<[n, 4]>>) -> tensor<?x4xf32, #kiln.dims<[n, 4]>>
  %tanh = kiln.tanh %x : (tensor<?x4xf32, #kiln.dims<[n, 4]>>) -> tensor<?x4xf32, #kiln.dims<[n, 4]>>
  // CHECK: kiln.sigmoid %{{.*}} : (tensor<?x4xf32, #kiln.dims<[n, 4]>>) -> tensor<?x4xf32, #kiln.dims<[n, 4]>>
  %sigmoid = kiln.sigmoid %x : (tensor<?x4xf32, #kiln.dims<[n, 4]>>) -> tensor<?x4xf32, #kiln.dims<[n, 4]>>
  // CHECK: kiln.erf %{{.*}} : (tensor<?x4xf32, #kiln.dims<[n, 4]>>) -> tensor<?x4xf32, #kiln.dims<[n, 4]>>
  %erf = kiln.erf %x : (tensor<?x4xf32, #kiln.dims<[n, 4]>>) -> tensor<?x4xf32, #kiln.dims<[n, 4]>>
  // CHECK: kiln.sin %{{.*}} : (tensor<?x4xf32, #kiln.dims<[n, 4]>>) -> tensor<?x4xf32, #kiln.dims<[n, 4]>>
  %sin = kiln.sin %x : (tensor<?x4xf32, #kiln.dims<[n, 4]>>) -> tensor<?x4xf32, #kiln.dims<[n, 4]>>
  // CHECK: kiln.cos %{{.*}} : (tensor<?x4xf32, #kiln.dims<[n, 4]>>) -> tensor<?x4xf32, #kiln.dims<[n, 4]>>
  %cos = kiln.cos %x : (tensor<?x4xf32, #kiln.dims<[n, 4]>>) -> tensor<?x4xf32, #kiln.dims<[n, 4]>>
  // CHECK: kiln.tan %{{.*}} : (tensor<?x4xf32, #kiln.dims<[n, 4]>>) -> tensor<?x4xf32, #kiln.dims<[n, 4]>>
  %tan = kiln.tan %x : (tensor<?x4xf32, #kiln.dims<[n, 4]>>) -> tensor<?x4xf32, #kiln.dims<[n, 4]>>
  // CHECK: kiln.asin %{{.*}} : (tensor<?x4xf32, #kiln.dims<[n, 4]>>) -> tensor<?x4xf32, #kiln.dims<[n, 4]>>
  %asin = kiln.asin %x : (tensor<?x4xf32, #kiln.dims<[n, 4]>>) -> tensor<?x4xf32, #kiln.dims<[n, 4]>>
  // CHECK: kiln.acos %{{.*}} : (tensor<?x4xf32, #kiln.dims<[n, 4]>>) -> tensor<?x4xf32, #kiln.dims<[n, 4]>>
  %acos = kiln.acos %x : (tensor<?x4xf32, #kiln.dims<[n, 4]>>) -> tensor<?x4xf32, #kiln.dims<[n, 4]>>
  // CHECK: kiln.atan %{{.*}} : (tensor<?x4xf32, #kiln.dims<[n, 4]>>) -> tensor<?x4xf32, #kiln.dims<[n, 4]>>
  %atan = kiln.atan %x : (tensor<?x4xf32, #kiln.dims<[n, 4]>>) -> tensor<?x4xf32, #kiln.dims<[n, 4]>>
  // CHECK: kiln.sinh %{{.*}} : (tensor<?x4xf32, #kiln.dims<[n, 4]>>) -> tensor<?x4xf32, #kiln.dims<[n, 4]>>
  %sinh = kiln.sinh %x : (tensor<?x4xf32, #kiln.dims<[n, 4]>>) -> tensor<?x4xf32, #kiln.dims<[n, 4]>>
  // CHECK: kiln.cosh %{{.*}} : (tensor<?x4xf32, #kiln.dims<[n, 4]>>) -> tensor<?x4xf32, #kiln.dims<[n, 4]>>
  %cosh = kiln.cosh %x : (tensor<?x4xf32, #kiln.dims<[n, 4]>>) -> tensor<?x4xf32, #kiln.dims<[n, 4]>>
  // CHECK: kiln.asinh %{{.*}} : (tensor<?x4xf32, #kiln.dims<[n, 4]>>) -> tensor<?x4xf32, #kiln.dims<[n, 4]>>
  %asinh = kiln.asinh %x : (tensor<?x4xf32, #kiln.dims<[n, 4]>>) -> tensor<?x4xf32, #kiln.dims<[n, 4]>>
  // CHECK: kiln.acosh %{{.*}} : (tensor<?x4xf32, #kiln.dims<[n, 4]>>) -> tensor<?x4xf32, #kiln.dims<[n, 4]>>
  %acosh = kiln.acosh %x : (tensor<?x4xf32, #kiln.dims<[n, 4]>>) -> tensor<?x4xf32, #kiln.dims<[n, 4]>>
  // CHECK: kiln.atanh %{{.*}} : (tensor<?x4xf32, #kiln.dims<[n, 4]>>) -> tensor<?x4xf32, #kiln.dims<[n, 4]>>
  %atanh = kiln.atanh %x : (tensor<?x4xf32, #kiln.dims<[n, 4]>>) -> tensor<?x4xf32, #kiln.dims<[n, 4]>>
  // CHECK: kiln.floor %{{.*}} : (tensor<?x4xf32, #kiln.dims<[n, 4]>>) -> tensor<?x4xf32, #kiln.dims<[n, 4]>>
  %floor = kiln.floor %x : (tensor<?x4xf32, #kiln.dims<[n, 4]>>) -> tensor<?x4xf32, #kiln.dims<[n, 4]>>
  // CHECK: kiln.ceil %{{.*}} : (tensor<?x4xf32, #kiln.dims<[n, 4]>>) -> tensor<?x4xf32, #kiln.dims<[n, 4]>>
  %ceil = kiln.ceil %x : (tensor<?x4xf32, #kiln.dims<[n, 4]>>) -> tensor<?x4xf32, #kiln.dims<[n, 4]>>
  // CHECK: kiln.round %{{.*}} : (tensor<?x4xf32, #kiln.dims<[n, 4]>>) -> tensor<?x4xf32, #kiln.dims<[n, 4]>>
  %round = kiln.round %x : (tensor<?x4xf32, #kiln.dims<[n, 4]>>) -> tensor<?x4xf32, #kiln.dims<[n, 4]>>
  // CHECK: kiln.is_nan %{{.*}} : (tensor<?x4xf32, #kiln.dims<[n, 4]>>) -> tensor<?x4xi1, #kiln.dims<[n, 4]>>
  %is_nan = kiln.is_nan %x : (tensor<?x4xf32, #kiln.dims<[n, 4]>>) -> tensor<?x4xi1, #kiln.dims<[n, 4]>>
  // CHECK: kiln.is_inf %{{.*}} : (tensor<?x4xf32, #kiln.dims<[n, 4]>>) -> tensor<?x4xi1, #kiln.dims<[n, 4]>>
  %is_inf = kiln.is_inf %x : (tensor<?x4xf32, #kiln.dims<[n, 4]>>) -> tensor<?x4xi1, #kiln.dims<[n, 4]>>
  return
}

// CHECK-LABEL: func @unary_int
func.func @unary_int(%i: tensor<8xi32>, %u: tensor<8xui8>, %b: tensor<8xi1>) {
  // CHECK: kiln.neg %{{.*}} : (tensor<8xi32>) -> tensor<8xi32>
  %neg = kiln.neg %i : (tensor<8xi32>) -> tensor<8xi32>
  // CHECK: kiln.abs %{{.*}} : (tensor<8xi32>) -> tensor<8xi32>
  %abs = kiln.abs %i : (tensor<8xi32>) -> tensor<8xi32>
  // CHECK: kiln.sign %{{.*}} : (tensor<8xi32>) -> tensor<8xi32>
  %sign = kiln.sign %i : (tensor<8xi32>) -> tensor<8xi32>
  // CHECK: kiln.bitwise_not %{{.*}} : (tensor<8xui8>) -> tensor<8xui8>
  %bitwise_not = kiln.bitwise_not %u : (tensor<8xui8>) -> tensor<8xui8>
  // CHECK: kiln.not %{{.*}} : (tensor<8xi1>) -> tensor<8xi1>
  %not = kiln.not %b : (tensor<8xi1>) -> tensor<8xi1>
  return
}

// CHECK-LABEL: func @binary
func.func @binary(%a: tensor<?x1xf32, #kiln.dims<[n, 1]>>, %b: tensor<8xf32>, %p: tensor<3xi1>, %q: tensor<3xi1>, %i: tensor<3xi64>, %j: tensor<i64>) {
  // CHECK: kiln.add %{{.*}}, %{{.*}} : (tensor<?x1xf32, #kiln.dims<[n, 1]>>, tensor<8xf32>) -> tensor<?x8xf32, #kiln.dims<[n, 8]>>
  %add = kiln.add %a, %b : (tensor<?x1xf32, #kiln.dims<[n, 1]>>, tensor<8xf32>) -> tensor<?x8xf32, #kiln.dims<[n, 8]>>
  // CHECK: kiln.sub %{{.*}}, %{{.*}} : (tensor<?x1xf32, #kiln.dims<[n, 1]>>, tensor<8xf32>) -> tensor<?x8xf32, #kiln.dims<[n, 8]>>
  %sub = kiln.sub %a, %b : (tensor<?x1xf32, #kiln.dims<[n, 1]>>, tensor<8xf32>) -> tensor<?x8xf32, #kiln.dims<[n, 8]>>
  // CHECK: kiln.mul %{{.*}}, %{{.*}} : (tensor<?x1xf32, #kiln.dims<[n, 1]>>, tensor<8xf32>) -> tensor<?x8xf32, #kiln.dims<[n, 8]>>
  %mul = kiln.mul %a, %b : (tensor<?x1xf32, #kiln.dims<[n, 1]>>, tensor<8xf32>) -> tensor<?x8xf32, #kiln.dims<[n, 8]>>
  // CHECK: kiln.div %{{.*}}, %{{.*}} : (tensor<?x1xf32, #kiln.dims<[n, 1]>>, tensor<8xf32>) -> tensor<?x8xf32, #kiln.dims<[n, 8]>>
  %div = kiln.div %a, %b : (tensor<?x1xf32, #kiln.dims<[n, 1]>>, tensor<8xf32>) -> tensor<?x8xf32, #kiln.dims<[n, 8]>>
  // CHECK: kiln.rem %{{.*}}, %{{.*}} : (tensor<?x1xf32, #kiln.dims<[n, 1]>>, tensor<8xf32>) -> tensor<?x8xf32, #kiln.dims<[n, 8]>>
  %rem = kiln.rem %a, %b : (tensor<?x1xf32, #kiln.dims<[n, 1]>>, tensor<8xf32>) -> tensor<?x8xf32, #kiln.dims<[n, 8]>>
  // CHECK: kiln.mod %{{.*}}, %{{.*}} : (tensor<?x1xf32, #kiln.dims<[n, 1]>>, tensor<8xf32>) -> tensor<?x8xf32, #kiln.dims<[n, 8]>>
  %mod = kiln.mod %a, %b : (tensor<?x1xf32, #kiln.dims<[n, 1]>>, tensor<8xf32>) -> tensor<?x8xf32, #kiln.dims<[n, 8]>>
  // CHECK: kiln.pow %{{.*}}, %{{.*}} : (tensor<?x1xf32, #kiln.dims<[n, 1]>>, tensor<8xf32>) -> tensor<?x8xf32, #kiln.dims<[n, 8]>>
  %pow = kiln.pow %a, %b : (tensor<?x1xf32, #kiln.dims<[n, 1]>>, tensor<8xf32>) -> tensor<?x8xf32, #kiln.dims<[n, 8]>>
  // CHECK: kiln.max %{{.*}}, %{{.*}} : (tensor<?x1xf32, #kiln.dims<[n, 1]>>, tensor<8xf32>) -> tensor<?x8xf32, #kiln.dims<[n, 8]>>
  %max = kiln.max %a, %b : (tensor<?x1xf32, #kiln.dims<[n, 1]>>, tensor<8xf32>) -> tensor<?x8xf32, #kiln.dims<[n, 8]>>
  // CHECK: kiln.min %{{.*}}, %{{.*}} : (tensor<?x1xf32, #kiln.dims<[n, 1]>>, tensor<8xf32>) -> tensor<?x8xf32, #kiln.dims<[n, 8]>>
  %min = kiln.min %a, %b : (tensor<?x1xf32, #kiln.dims<[n, 1]>>, tensor<8xf32>) -> tensor<?x8xf32, #kiln.dims<[n, 8]>>
  // CHECK: kiln.and %{{.*}}, %{{.*}} : (tensor<3xi1>, tensor<3xi1>) -> tensor<3xi1>
  %and = kiln.and %p, %q : (tensor<3xi1>, tensor<3xi1>) -> tensor<3xi1>
  // CHECK: kiln.or %{{.*}}, %{{.*}} : (tensor<3xi1>, tensor<3xi1>) -> tensor<3xi1>
  %or = kiln.or %p, %q : (tensor<3xi1>, tensor<3xi1>) -> tensor<3xi1>
  // CHECK: kiln.xor %{{.*}}, %{{.*}} : (tensor<3xi1>, tensor<3xi1>) -> tensor<3xi1>
  %xor = kiln.xor %p, %q : (tensor<3xi1>, tensor<3xi1>) -> tensor<3xi1>
  // CHECK: kiln.bitwise_and %{{.*}}, %{{.*}} : (tensor<3xi64>, tensor<i64>) -> tensor<3xi64>
  %bitwise_and = kiln.bitwise_and %i, %j : (tensor<3xi64>, tensor<i64>) -> tensor<3xi64>
  // CHECK: kiln.bitwise_or %{{.*}}, %{{.*}} : (tensor<3xi64>, tensor<i64>) -> tensor<3xi64>
  %bitwise_or = kiln.bitwise_or %i, %j : (tensor<3xi64>, tensor<i64>) -> tensor<3xi64>
  // CHECK: kiln.bitwise_xor %{{.*}}, %{{.*}} : (tensor<3xi64>, tensor<i64>) -> tensor<3xi64>
  %bitwise_xor = kiln.bitwise_xor %i, %j : (tensor<3xi64>, tensor<i64>) -> tensor<3xi64>
  // CHECK: kiln.shift_left %{{.*}}, %{{.*}} : (tensor<3xi64>, tensor<i64>) -> tensor<3xi64>
  %shift_left = kiln.shift_left %i, %j : (tensor<3xi64>, tensor<i64>) -> tensor<3xi64>
  // CHECK: kiln.shift_right %{{.*}}, %{{.*}} : (tensor<3xi64>, tensor<i64>) -> tensor<3xi64>
  %shift_right = kiln.shift_right %i, %j : (tensor<3xi64>, tensor<i64>) -> tensor<3xi64>
  return
}

// CHECK-LABEL: func @compare_select_cast
func.func @compare_select_cast(%a: tensor<?x4xf32, #kiln.dims<[n, 4]>>, %b: tensor<4xf32>, %s: tensor<f32>) {
  // CHECK: kiln.compare %{{.*}}, %{{.*}} {direction = #kiln<compare lt>} : (tensor<?x4xf32, #kiln.dims<[n, 4]>>, tensor<4xf32>) -> tensor<?x4xi1, #kiln.dims<[n, 4]>>
  %c = kiln.compare %a, %b {direction = #kiln<compare lt>} : (tensor<?x4xf32, #kiln.dims<[n, 4]>>, tensor<4xf32>) -> tensor<?x4xi1, #kiln.dims<[n, 4]>>
  // CHECK: kiln.select %{{.*}}, %{{.*}}, %{{.*}} : (tensor<?x4xi1, #kiln.dims<[n, 4]>>, tensor<?x4xf32, #kiln.dims<[n, 4]>>, tensor<f32>) -> tensor<?x4xf32, #kiln.dims<[n, 4]>>
  %w = kiln.select %c, %a, %s : (tensor<?x4xi1, #kiln.dims<[n, 4]>>, tensor<?x4xf32, #kiln.dims<[n, 4]>>, tensor<f32>) -> tensor<?x4xf32, #kiln.dims<[n, 4]>>
  // CHECK: kiln.cast %{{.*}} to i32 : (tensor<?x4xf32, #kiln.dims<[n, 4]>>) -> tensor<?x4xi32, #kiln.dims<[n, 4]>>
  %i = kiln.cast %a to i32 : (tensor<?x4xf32, #kiln.dims<[n, 4]>>) -> tensor<?x4xi32, #kiln.dims<[n, 4]>>
  // CHECK: kiln.cast %{{.*}} to bf16 : (tensor<4xf32>) -> tensor<4xbf16>
  %h = kiln.cast %b to bf16 : (tensor<4xf32>) -> tensor<4xbf16>
  return
}

// CHECK-LABEL: func @bitcast
func.func @bitcast(%x: tensor<4xf32>, %b: tensor<4xi1>) {
  // CHECK: kiln.bitcast %{{.*}} to i32 : (tensor<4xf32>) -> tensor<4xi32>
  %i = kiln.bitcast %x to i32 : (tensor<4xf32>) -> tensor<4xi32>
  // CHECK: kiln.bitcast %{{.*}} to ui8 : (tensor<4xi1>) -> tensor<4xui8>
  %u = kiln.bitcast %b to ui8 : (tensor<4xi1>) -> tensor<4xui8>
  return
}
