module @jit_loop_sum attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<3x2xf32>, %arg1: tensor<i32>) -> (tensor<2xf32> {jax.result_info = "result[0]"}, tensor<f32> {jax.result_info = "result[1]"}) {
    %cst = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %0 = stablehlo.broadcast_in_dim %cst, dims = [] : (tensor<f32>) -> tensor<3x2xf32>
    %c = stablehlo.constant dense<0> : tensor<i32>
    %1:4 = stablehlo.while(%iterArg = %arg0, %iterArg_2 = %c, %iterArg_3 = %arg1, %iterArg_4 = %0) : tensor<3x2xf32>, tensor<i32>, tensor<i32>, tensor<3x2xf32>
    cond {
      %4 = stablehlo.compare LT, %iterArg_2, %iterArg_3, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
      stablehlo.return %4 : tensor<i1>
    } do {
      %c_5 = stablehlo.constant dense<1> : tensor<i32>
      %4 = stablehlo.add %iterArg_2, %c_5 : tensor<i32>
      %5 = stablehlo.convert %iterArg_2 : (tensor<i32>) -> tensor<f32>
      %6 = stablehlo.broadcast_in_dim %5, dims = [] : (tensor<f32>) -> tensor<3x2xf32>
      %7 = stablehlo.multiply %iterArg, %6 : tensor<3x2xf32>
      %8 = stablehlo.add %iterArg_4, %7 : tensor<3x2xf32>
      stablehlo.return %iterArg, %4, %iterArg_3, %8 : tensor<3x2xf32>, tensor<i32>, tensor<i32>, tensor<3x2xf32>
    }
    %cst_0 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %2 = stablehlo.reduce(%1#3 init: %cst_0) applies stablehlo.add across dimensions = [0] : (tensor<3x2xf32>, tensor<f32>) -> tensor<2xf32>
    %cst_1 = stablehlo.constant dense<0xFF800000> : tensor<f32>
    %3 = stablehlo.reduce(%1#3 init: %cst_1) applies stablehlo.maximum across dimensions = [0, 1] : (tensor<3x2xf32>, tensor<f32>) -> tensor<f32>
    return %2, %3 : tensor<2xf32>, tensor<f32>
  }
}
