module @jit_masks attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<16xf32>, %arg1: tensor<3xi1>) -> (tensor<3xi1> {jax.result_info = "result[0]"}, tensor<16xf32> {jax.result_info = "result[1]"}, tensor<1xi1> {jax.result_info = "result[2]"}) {
    %c = stablehlo.constant dense<[true, false, true]> : tensor<3xi1>
    %c_0 = stablehlo.constant dense<[true, false, false, true, false, false, true, false, false, true, false, false, true, false, false, true]> : tensor<16xi1>
    %c_1 = stablehlo.constant dense<true> : tensor<1xi1>
    %0 = stablehlo.and %arg1, %c : tensor<3xi1>
    %1 = stablehlo.negate %arg0 : tensor<16xf32>
    %2 = call @_where(%c_0, %arg0, %1) : (tensor<16xi1>, tensor<16xf32>, tensor<16xf32>) -> tensor<16xf32>
    %3 = stablehlo.slice %arg1 [0:1] : (tensor<3xi1>) -> tensor<1xi1>
    %4 = stablehlo.and %c_1, %3 : tensor<1xi1>
    return %0, %2, %4 : tensor<3xi1>, tensor<16xf32>, tensor<1xi1>
  }
  func.func private @_where(%arg0: tensor<16xi1>, %arg1: tensor<16xf32>, %arg2: tensor<16xf32>) -> tensor<16xf32> {
    %0 = stablehlo.select %arg0, %arg1, %arg2 : tensor<16xi1>, tensor<16xf32>
    return %0 : tensor<16xf32>
  }
}
