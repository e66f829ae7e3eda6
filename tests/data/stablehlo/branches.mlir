module @jit_branches attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<3xf32>, %arg1: tensor<i32>) -> (tensor<3xf32> {jax.result_info = "result[0]"}, tensor<3xf32> {jax.result_info = "result[1]"}) {
    %c = stablehlo.constant dense<0> : tensor<i32>
    %0 = stablehlo.compare GT, %arg1, %c, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
    %1 = stablehlo.convert %0 : (tensor<i1>) -> tensor<i32>
    %2 = "stablehlo.case"(%1) ({
      %cst = stablehlo.constant dense<0.000000e+00> : tensor<f32>
      %5 = stablehlo.reduce(%arg0 init: %cst) applies stablehlo.add across dimensions = [0] : (tensor<3xf32>, tensor<f32>) -> tensor<f32>
      %6 = stablehlo.broadcast_in_dim %5, dims = [] : (tensor<f32>) -> tensor<3xf32>
      %7 = stablehlo.subtract %arg0, %6 : tensor<3xf32>
      stablehlo.return %7 : tensor<3xf32>
    }, {
      %cst = stablehlo.constant dense<2.000000e+00> : tensor<f32>
      %5 = stablehlo.broadcast_in_dim %cst, dims = [] : (tensor<f32>) -> tensor<3xf32>
      %6 = stablehlo.multiply %arg0, %5 : tensor<3xf32>
      stablehlo.return %6 : tensor<3xf32>
    }) : (tensor<i32>) -> tensor<3xf32>
    %c_0 = stablehlo.constant dense<0> : tensor<i32>
    %c_1 = stablehlo.constant dense<2> : tensor<i32>
    %3 = stablehlo.clamp %c_0, %arg1, %c_1 : tensor<i32>
    %4 = "stablehlo.case"(%3) ({
      %5 = stablehlo.sine %arg0 : tensor<3xf32>
      stablehlo.return %5 : tensor<3xf32>
    }, {
      %5 = stablehlo.cosine %arg0 : tensor<3xf32>
      stablehlo.return %5 : tensor<3xf32>
    }, {
      %5 = stablehlo.tanh %arg0 : tensor<3xf32>
      %6 = stablehlo.add %5, %2 : tensor<3xf32>
      stablehlo.return %6 : tensor<3xf32>
    }) : (tensor<i32>) -> tensor<3xf32>
    return %2, %4 : tensor<3xf32>, tensor<3xf32>
  }
}
