// Round trip of the irregular ops kept whole, and their shape functions.
// RUN: kiln-opt %s | kiln-opt | FileCheck %s

// CHECK-LABEL: func.func @grid_sample
func.func @grid_sample(%x: tensor<?x3x8x8xf32, #kiln.dims<[n, 3, 8, 8]>>, %g: tensor<?x4x5x2xf32, #kiln.dims<[n, 4, 5, 2]>>, %v: tensor<1x2x4x4x4xf64>, %vg: tensor<1x3x3x3x3xf64>) {
  // CHECK: kiln.grid_sample %{{.*}}, %{{.*}} {align_corners = true, mode = #kiln<resize_mode cubic>, padding = #kiln<grid_padding reflection>}
  %y = kiln.grid_sample %x, %g {mode = #kiln<resize_mode cubic>, padding = #kiln<grid_padding reflection>, align_corners = true} : (tensor<?x3x8x8xf32, #kiln.dims<[n, 3, 8, 8]>>, tensor<?x4x5x2xf32, #kiln.dims<[n, 4, 5, 2]>>) -> tensor<?x3x4x5xf32, #kiln.dims<[n, 3, 4, 5]>>
  // CHECK: kiln.grid_sample {{.*}} -> tensor<1x2x3x3x3xf64>
  %z = kiln.grid_sample %v, %vg {mode = #kiln<resize_mode nearest>, padding = #kiln<grid_padding zeros>} : (tensor<1x2x4x4x4xf64>, tensor<1x3x3x3x3xf64>) -> tensor<1x2x3x3x3xf64>
  return
}

// CHECK-LABEL: func.func @roi_align
func.func @roi_align(%x: tensor<1x4x10x10xf32>, %rois: tensor<?x4xf32, #kiln.dims<[r, 4]>>, %b: tensor<?xi64, #kiln.dims<[r]>>) {
  // CHECK: kiln.roi_align {{.*}} -> tensor<?x4x5x3xf32, #kiln.dims<[r, 4, 5, 3]>>
  %y = kiln.roi_align %x, %rois, %b {mode = #kiln<pool max>, output_height = 5 : i64, output_width = 3 : i64, sampling_ratio = 0 : i64, spatial_scale = 0.5 : f32, half_pixel = false} : (tensor<1x4x10x10xf32>, tensor<?x4xf32, #kiln.dims<[r, 4]>>, tensor<?xi64, #kiln.dims<[r]>>) -> tensor<?x4x5x3xf32, #kiln.dims<[r, 4, 5, 3]>>
  return
}

// CHECK-LABEL: func.func @non_max_suppression
func.func @non_max_suppression(%boxes: tensor<2x6x4xf32>, %scores: tensor<2x3x6xf32>, %max: tensor<1xi64>, %iou: tensor<f32>, %score: tensor<1xf32>) {
  // CHECK: kiln.non_max_suppression {{.*}} -> tensor<?x3xi64>
  %s = kiln.non_max_suppression %boxes, %scores, %max, %iou, %score {center_point_box = true} : (tensor<2x6x4xf32>, tensor<2x3x6xf32>, tensor<1xi64>, tensor<f32>, tensor<1xf32>) -> tensor<?x3xi64>
  // Its selection before listing (kiln-sizes-on-device): a row per batch and class.
  %rank = kiln.constant dense<0> : tensor<2x3x6xi64>
  // CHECK: kiln.nms_select {{.*}} -> tensor<2x3x6xi64>
  %k = kiln.nms_select %boxes, %scores, %rank, %max, %iou, %score : (tensor<2x6x4xf32>, tensor<2x3x6xf32>, tensor<2x3x6xi64>, tensor<1xi64>, tensor<f32>, tensor<1xf32>) -> tensor<2x3x6xi64>
  // CHECK: kiln.non_max_suppression %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} : {{.*}} -> tensor<?x3xi64>
  %t = kiln.non_max_suppression %boxes, %scores, %max, %iou : (tensor<2x6x4xf32>, tensor<2x3x6xf32>, tensor<1xi64>, tensor<f32>) -> tensor<?x3xi64>
  return
}

// CHECK-LABEL: func.func @unique
func.func @unique(%x: tensor<2x3x4xi32>) {
  // CHECK: kiln.unique {{.*}} -> (tensor<?xi32>, tensor<?xi64>, tensor<24xi64>, tensor<?xi64>)
  %y:4 = kiln.unique %x : (tensor<2x3x4xi32>) -> (tensor<?xi32>, tensor<?xi64>, tensor<24xi64>, tensor<?xi64>)
  // CHECK: kiln.unique %{{.*}} {axis = -2 : i64, sorted = false} {{.*}} -> (tensor<2x?x4xi32>, tensor<?xi64>, tensor<3xi64>, tensor<?xi64>)
  %z:4 = kiln.unique %x {axis = -2 : i64, sorted = false} : (tensor<2x3x4xi32>) -> (tensor<2x?x4xi32>, tensor<?xi64>, tensor<3xi64>, tensor<?xi64>)
  return
}

// CHECK-LABEL: func.func @det
func.func @det(%x: tensor<?x3x3xf32, #kiln.dims<[b, 3, 3]>>, %m: tensor<?x?xf64, #kiln.dims<[m, m]>>) {
  // CHECK: kiln.det {{.*}} -> tensor<?xf32, #kiln.dims<[b]>>
  %d = kiln.det %x : (tensor<?x3x3xf32, #kiln.dims<[b, 3, 3]>>) -> tensor<?xf32, #kiln.dims<[b]>>
  // CHECK: kiln.det {{.*}} -> tensor<f64>
  %e = kiln.det %m : (tensor<?x?xf64, #kiln.dims<[m, m]>>) -> tensor<f64>
  return
}

// CHECK-LABEL: func.func @col2im
func.func @col2im(%x: tensor<?x10x6xf32, #kiln.dims<[n, 10, 6]>>) {
  // 5x5 image padded by 1 on each side, 2x5 blocks, stride 2: (7-2)/2+1 = 3 by (7-5)/2+1 = 2.
  // CHECK: kiln.col2im {{.*}} -> tensor<?x1x5x5xf32, #kiln.dims<[n, 1, 5, 5]>>
  %y = kiln.col2im %x {image_shape = array<i64: 5, 5>, block_shape = array<i64: 2, 5>, strides = array<i64: 2, 2>, dilations = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>} : (tensor<?x10x6xf32, #kiln.dims<[n, 10, 6]>>) -> tensor<?x1x5x5xf32, #kiln.dims<[n, 1, 5, 5]>>
  return
}
