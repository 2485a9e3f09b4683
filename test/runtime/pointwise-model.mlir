// A model of generated kernels only (no host steps): the context test runs it
// to show that a context in steady state allocates nothing.
func.func @main_graph(%x: tensor<?x64xf32> {kiln.name = "x"}) -> (tensor<?x64xf32> {kiln.name = "y"}) {
  %half = kiln.constant dense<0.5> : tensor<f32>
  %one = kiln.constant dense<1.0> : tensor<f32>
  %e = kiln.exp %x : (tensor<?x64xf32>) -> tensor<?x64xf32>
  %m = kiln.mul %e, %half : (tensor<?x64xf32>, tensor<f32>) -> tensor<?x64xf32>
  %a = kiln.add %m, %one : (tensor<?x64xf32>, tensor<f32>) -> tensor<?x64xf32>
  %s = kiln.softmax %a {axis = -1 : i64} : (tensor<?x64xf32>) -> tensor<?x64xf32>
  %t = kiln.tanh %s : (tensor<?x64xf32>) -> tensor<?x64xf32>
  return %t : tensor<?x64xf32>
}
