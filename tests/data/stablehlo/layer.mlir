module @jit_layer attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<4x5xf32>, %arg1: tensor<5x6xf32>, %arg2: tensor<3xi32>) -> (tensor<6x2xf32> {jax.result_info = "result[0]"}, tensor<2x2xf32> {jax.result_info = "result[1]"}, tensor<3xi32> {jax.result_info = "result[2]"}) {
    %0 = stablehlo.dot_general %arg0, %arg1, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] : (tensor<4x5xf32>, tensor<5x6xf32>) -> tensor<4x6xf32>
    %1 = call @_take(%0, %arg2) : (tensor<4x6xf32>, tensor<3xi32>) -> tensor<4x3xf32>
    %2 = call @sort(%1) : (tensor<4x3xf32>) -> tensor<4x3xf32>
    %c = stablehlo.constant dense<0> : tensor<i32>
    %3 = call @_pad(%2, %c) : (tensor<4x3xf32>, tensor<i32>) -> tensor<5x5xf32>
    %cst = stablehlo.constant dense<0xFF800000> : tensor<f32>
    %4 = stablehlo.broadcast_in_dim %cst, dims = [] : (tensor<f32>) -> tensor<f32>
    %5 = "stablehlo.reduce_window"(%3, %4) <{base_dilations = array<i64: 1, 1>, padding = dense<[[0, 1], [0, 1]]> : tensor<2x2xi64>, window_dilations = array<i64: 1, 1>, window_dimensions = array<i64: 2, 2>, window_strides = array<i64: 1, 1>}> ({
    ^bb0(%arg3: tensor<f32>, %arg4: tensor<f32>):
      %25 = stablehlo.maximum %arg3, %arg4 : tensor<f32>
      stablehlo.return %25 : tensor<f32>
    }) : (tensor<5x5xf32>, tensor<f32>) -> tensor<5x5xf32>
    %6 = stablehlo.transpose %5, dims = [1, 0] : (tensor<5x5xf32>) -> tensor<5x5xf32>
    %7 = stablehlo.slice %6 [0:5:2, 1:3] : (tensor<5x5xf32>) -> tensor<3x2xf32>
    %8 = stablehlo.negate %7 : tensor<3x2xf32>
    %9 = stablehlo.concatenate %7, %8, dim = 0 : (tensor<3x2xf32>, tensor<3x2xf32>) -> tensor<6x2xf32>
    %cst_0 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %10 = stablehlo.broadcast_in_dim %cst_0, dims = [] : (tensor<f32>) -> tensor<6x2xf32>
    %11 = stablehlo.compare GT, %9, %10, FLOAT : (tensor<6x2xf32>, tensor<6x2xf32>) -> tensor<6x2xi1>
    %12 = stablehlo.exponential %9 : tensor<6x2xf32>
    %13 = call @_where_0(%11, %9, %12) : (tensor<6x2xi1>, tensor<6x2xf32>, tensor<6x2xf32>) -> tensor<6x2xf32>
    %14 = stablehlo.slice %arg2 [0:1] : (tensor<3xi32>) -> tensor<1xi32>
    %15 = stablehlo.reshape %14 : (tensor<1xi32>) -> tensor<i32>
    %c_1 = stablehlo.constant dense<0> : tensor<i32>
    %16 = stablehlo.compare LT, %15, %c_1, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
    %c_2 = stablehlo.constant dense<4> : tensor<i32>
    %17 = stablehlo.add %15, %c_2 : tensor<i32>
    %18 = stablehlo.select %16, %17, %15 : tensor<i1>, tensor<i32>
    %c_3 = stablehlo.constant dense<1> : tensor<i32>
    %19 = stablehlo.dynamic_slice %0, %18, %c_3, sizes = [2, 2] : (tensor<4x6xf32>, tensor<i32>, tensor<i32>) -> tensor<2x2xf32>
    %20 = stablehlo.iota dim = 0 : tensor<3xi32>
    %21 = stablehlo.slice %arg2 [1:2] : (tensor<3xi32>) -> tensor<1xi32>
    %22 = stablehlo.reshape %21 : (tensor<1xi32>) -> tensor<i32>
    %23 = stablehlo.broadcast_in_dim %22, dims = [] : (tensor<i32>) -> tensor<3xi32>
    %24 = stablehlo.multiply %20, %23 : tensor<3xi32>
    return %13, %19, %24 : tensor<6x2xf32>, tensor<2x2xf32>, tensor<3xi32>
  }
  func.func private @_take(%arg0: tensor<4x6xf32>, %arg1: tensor<3xi32>) -> tensor<4x3xf32> {
    %c = stablehlo.constant dense<0> : tensor<i32>
    %0 = stablehlo.broadcast_in_dim %c, dims = [] : (tensor<i32>) -> tensor<3xi32>
    %1 = stablehlo.compare LT, %arg1, %0, SIGNED : (tensor<3xi32>, tensor<3xi32>) -> tensor<3xi1>
    %c_0 = stablehlo.constant dense<6> : tensor<i32>
    %2 = stablehlo.broadcast_in_dim %c_0, dims = [] : (tensor<i32>) -> tensor<3xi32>
    %3 = stablehlo.add %arg1, %2 : tensor<3xi32>
    %4 = call @_where(%1, %3, %arg1) : (tensor<3xi1>, tensor<3xi32>, tensor<3xi32>) -> tensor<3xi32>
    %5 = stablehlo.broadcast_in_dim %4, dims = [0] : (tensor<3xi32>) -> tensor<3x1xi32>
    %c_1 = stablehlo.constant dense<5> : tensor<1xi32>
    %c_2 = stablehlo.constant dense<0> : tensor<i32>
    %6 = stablehlo.broadcast_in_dim %c_2, dims = [] : (tensor<i32>) -> tensor<3x1xi32>
    %7 = stablehlo.compare GE, %5, %6, SIGNED : (tensor<3x1xi32>, tensor<3x1xi32>) -> tensor<3x1xi1>
    %8 = stablehlo.broadcast_in_dim %c_1, dims = [1] : (tensor<1xi32>) -> tensor<1x1xi32>
    %9 = stablehlo.broadcast_in_dim %8, dims = [0, 1] : (tensor<1x1xi32>) -> tensor<3x1xi32>
    %10 = stablehlo.compare LE, %5, %9, SIGNED : (tensor<3x1xi32>, tensor<3x1xi32>) -> tensor<3x1xi1>
    %11 = stablehlo.and %7, %10 : tensor<3x1xi1>
    %c_3 = stablehlo.constant dense<true> : tensor<i1>
    %12 = stablehlo.reduce(%11 init: %c_3) applies stablehlo.and across dimensions = [1] : (tensor<3x1xi1>, tensor<i1>) -> tensor<3xi1>
    %13 = "stablehlo.gather"(%arg0, %5) <{dimension_numbers = #stablehlo.gather<offset_dims = [0], collapsed_slice_dims = [1], start_index_map = [1], index_vector_dim = 1>, indices_are_sorted = false, slice_sizes = array<i64: 4, 1>}> : (tensor<4x6xf32>, tensor<3x1xi32>) -> tensor<4x3xf32>
    %14 = stablehlo.broadcast_in_dim %12, dims = [1] : (tensor<3xi1>) -> tensor<4x3xi1>
    %cst = stablehlo.constant dense<0x7FC00000> : tensor<f32>
    %15 = stablehlo.broadcast_in_dim %cst, dims = [] : (tensor<f32>) -> tensor<4x3xf32>
    %16 = stablehlo.select %14, %13, %15 : tensor<4x3xi1>, tensor<4x3xf32>
    return %16 : tensor<4x3xf32>
  }
  func.func private @_where(%arg0: tensor<3xi1>, %arg1: tensor<3xi32>, %arg2: tensor<3xi32>) -> tensor<3xi32> {
    %0 = stablehlo.select %arg0, %arg1, %arg2 : tensor<3xi1>, tensor<3xi32>
    return %0 : tensor<3xi32>
  }
  func.func private @sort(%arg0: tensor<4x3xf32>) -> tensor<4x3xf32> {
    %0 = "stablehlo.sort"(%arg0) <{dimension = 1 : i64, is_stable = true}> ({
    ^bb0(%arg1: tensor<f32>, %arg2: tensor<f32>):
      %cst = stablehlo.constant dense<0.000000e+00> : tensor<f32>
      %1 = stablehlo.compare EQ, %arg1, %cst, FLOAT : (tensor<f32>, tensor<f32>) -> tensor<i1>
      %cst_0 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
      %2 = stablehlo.select %1, %cst_0, %arg1 : tensor<i1>, tensor<f32>
      %3 = stablehlo.compare NE, %arg1, %arg1, FLOAT : (tensor<f32>, tensor<f32>) -> tensor<i1>
      %cst_1 = stablehlo.constant dense<0x7FC00000> : tensor<f32>
      %4 = stablehlo.select %3, %cst_1, %2 : tensor<i1>, tensor<f32>
      %cst_2 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
      %5 = stablehlo.compare EQ, %arg2, %cst_2, FLOAT : (tensor<f32>, tensor<f32>) -> tensor<i1>
      %cst_3 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
      %6 = stablehlo.select %5, %cst_3, %arg2 : tensor<i1>, tensor<f32>
      %7 = stablehlo.compare NE, %arg2, %arg2, FLOAT : (tensor<f32>, tensor<f32>) -> tensor<i1>
      %cst_4 = stablehlo.constant dense<0x7FC00000> : tensor<f32>
      %8 = stablehlo.select %7, %cst_4, %6 : tensor<i1>, tensor<f32>
      %9 = stablehlo.compare LT, %4, %8, TOTALORDER : (tensor<f32>, tensor<f32>) -> tensor<i1>
      stablehlo.return %9 : tensor<i1>
    }) : (tensor<4x3xf32>) -> tensor<4x3xf32>
    return %0 : tensor<4x3xf32>
  }
  func.func private @_pad(%arg0: tensor<4x3xf32>, %arg1: tensor<i32>) -> tensor<5x5xf32> {
    %0 = stablehlo.convert %arg1 : (tensor<i32>) -> tensor<f32>
    %1 = stablehlo.pad %arg0, %0, low = [1, 0], high = [0, 2], interior = [0, 0] : (tensor<4x3xf32>, tensor<f32>) -> tensor<5x5xf32>
    return %1 : tensor<5x5xf32>
  }
  func.func private @_where_0(%arg0: tensor<6x2xi1>, %arg1: tensor<6x2xf32>, %arg2: tensor<6x2xf32>) -> tensor<6x2xf32> {
    %0 = stablehlo.select %arg0, %arg1, %arg2 : tensor<6x2xi1>, tensor<6x2xf32>
    return %0 : tensor<6x2xf32>
  }
}
