// A model input or output above rank 8 (the C API's KILN_MAX_RANK) is refused by
// kiln-compile, naming it, and no file is written; intermediates may be higher.
// RUN: rm -f %t.kiln
// RUN: not kiln-compile %s -o %t.kiln --arch none 2>&1 | FileCheck %s
// RUN: not test -e %t.kiln

// CHECK: error: input 0 has rank 9; a model's inputs and outputs may have at most 8 dims
func.func @main(%x: tensor<1x1x1x1x1x1x1x1x2xf32>) -> tensor<1x1x1x1x1x1x1x1x2xf32> {
  %y = kiln.exp %x : (tensor<1x1x1x1x1x1x1x1x2xf32>) -> tensor<1x1x1x1x1x1x1x1x2xf32>
  return %y : tensor<1x1x1x1x1x1x1x1x2xf32>
}
