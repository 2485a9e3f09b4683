// --kiln-check-tensor-sizes: a static size whose element or byte count does not
// fit 64 bits, or whose bytes exceed max-bytes, is an error at the op producing
// it; symbolic and unknown dims are left to the runtime.
// RUN: kiln-opt %s -split-input-file -verify-diagnostics --kiln-check-tensor-sizes

// 2^31 x 2^31 f32 is 2^64 bytes: it wraps to 0.
func.func @wraps(%x: tensor<1x1xf32>) -> tensor<2147483648x2147483648xf32> {
  %s = kiln.constant dense<2147483648> : tensor<2xi64>
  // expected-error @+1 {{result 0 (2147483648x2147483648xf32) is more than 2^63 elements or 2^64 bytes; the limit is 68719476736 bytes}}
  %y = kiln.broadcast_to %x, %s : (tensor<1x1xf32>, tensor<2xi64>) -> tensor<2147483648x2147483648xf32>
  return %y : tensor<2147483648x2147483648xf32>
}

// -----

// Over the default limit of 64 GiB without overflowing.
// expected-error @+1 {{argument 0 (1099511627776x1024xf32) is 4503599627370496 bytes; the limit is 68719476736 bytes}}
func.func @argument(%x: tensor<1099511627776x1024xf32>) -> tensor<1099511627776x1024xf32> {
  return %x : tensor<1099511627776x1024xf32>
}

// -----

// Symbolic and zero-sized tensors pass; their sizes are checked at run time.
func.func @symbolic(%x: tensor<?x1099511627776xf32, #kiln.dims<[n, 1099511627776]>>, %z: tensor<0x1099511627776x1099511627776xf32>) -> tensor<?x1099511627776xf32, #kiln.dims<[n, 1099511627776]>> {
  return %x : tensor<?x1099511627776xf32, #kiln.dims<[n, 1099511627776]>>
}
