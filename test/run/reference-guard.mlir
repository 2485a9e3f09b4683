// The reference interpreter checks kiln.guard ops too, so compiled IR (after
// --kiln-materialize-guards) refuses the same inputs on the reference as in
// the runtime. The declared result [n] rests on m == n.
// RUN: rm -rf %t && mkdir -p %t
// RUN: %python -c "import numpy as np; np.save('%t/x3.npy', np.ones(3, np.float32)); np.save('%t/y3.npy', np.ones(3, np.float32)); np.save('%t/y2.npy', np.ones(2, np.float32))"
// RUN: kiln-reference %s --input x=%t/x3.npy --input y=%t/y3.npy --print | FileCheck %s --check-prefix=OK
// OK: f32[3] [2, 2, 2]
// RUN: not kiln-reference %s --input x=%t/x3.npy --input y=%t/y2.npy 2>&1 | FileCheck %s
// CHECK: error: 'kiln.guard' op guard 'm == n' does not hold (2 against 3): the declared result needs it
func.func @main(%x: tensor<?xf32, #kiln.dims<[n]>> {kiln.name = "x"}, %y: tensor<?xf32, #kiln.dims<[m]>> {kiln.name = "y"}) -> tensor<?xf32, #kiln.dims<[n]>> {
  kiln.guard <equal> [m, n], "the declared result needs it"
  %s = kiln.add %x, %y : (tensor<?xf32, #kiln.dims<[n]>>, tensor<?xf32, #kiln.dims<[m]>>) -> tensor<?xf32, #kiln.dims<[n]>>
  return %s : tensor<?xf32, #kiln.dims<[n]>>
}
