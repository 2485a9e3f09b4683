// Every diagnostic of the irregular ops kept whole.
// RUN: kiln-opt %s -split-input-file -verify-diagnostics

func.func @grid_sample_rank(%x: tensor<3x8xf32>, %g: tensor<3x2xf32>) {
  // expected-error @+1 {{'kiln.grid_sample' op input must have rank >= 3 ([N, C, spatial...])}}
  %y = kiln.grid_sample %x, %g {mode = #kiln<resize_mode linear>, padding = #kiln<grid_padding zeros>} : (tensor<3x8xf32>, tensor<3x2xf32>) -> tensor<3x8xf32>
  return
}

// -----

func.func @grid_sample_grid_rank(%x: tensor<1x3x8x8xf32>, %g: tensor<1x4x2xf32>) {
  // expected-error @+1 {{'kiln.grid_sample' op grid must have the input's rank 4, got 3}}
  %y = kiln.grid_sample %x, %g {mode = #kiln<resize_mode linear>, padding = #kiln<grid_padding zeros>} : (tensor<1x3x8x8xf32>, tensor<1x4x2xf32>) -> tensor<1x3x4xf32>
  return
}

// -----

func.func @grid_sample_coords(%x: tensor<1x3x8x8xf32>, %g: tensor<1x4x4x3xf32>) {
  // expected-error @+1 {{'kiln.grid_sample' op grid's last dim must be the spatial rank 2, got 3}}
  %y = kiln.grid_sample %x, %g {mode = #kiln<resize_mode linear>, padding = #kiln<grid_padding zeros>} : (tensor<1x3x8x8xf32>, tensor<1x4x4x3xf32>) -> tensor<1x3x4x4xf32>
  return
}

// -----

func.func @grid_sample_batch(%x: tensor<1x3x8x8xf32>, %g: tensor<2x4x4x2xf32>) {
  // expected-error @+1 {{'kiln.grid_sample' op batch dim of grid must match, but is 1 and 2}}
  %y = kiln.grid_sample %x, %g {mode = #kiln<resize_mode linear>, padding = #kiln<grid_padding zeros>} : (tensor<1x3x8x8xf32>, tensor<2x4x4x2xf32>) -> tensor<1x3x4x4xf32>
  return
}

// -----

func.func @roi_align_input(%x: tensor<4x8x8xf32>, %r: tensor<3x4xf32>, %b: tensor<3xi64>) {
  // expected-error @+1 {{'kiln.roi_align' op input must be [N, C, H, W]}}
  %y = kiln.roi_align %x, %r, %b {mode = #kiln<pool avg>, output_height = 2 : i64, output_width = 2 : i64, sampling_ratio = 0 : i64, spatial_scale = 1.0 : f32} : (tensor<4x8x8xf32>, tensor<3x4xf32>, tensor<3xi64>) -> tensor<3x4x2x2xf32>
  return
}

// -----

func.func @roi_align_rois(%x: tensor<1x4x8x8xf32>, %r: tensor<3x5xf32>, %b: tensor<3xi64>) {
  // expected-error @+1 {{'kiln.roi_align' op rois must be [num_rois, 4]}}
  %y = kiln.roi_align %x, %r, %b {mode = #kiln<pool avg>, output_height = 2 : i64, output_width = 2 : i64, sampling_ratio = 0 : i64, spatial_scale = 1.0 : f32} : (tensor<1x4x8x8xf32>, tensor<3x5xf32>, tensor<3xi64>) -> tensor<3x4x2x2xf32>
  return
}

// -----

func.func @roi_align_rois_type(%x: tensor<1x4x8x8xf32>, %r: tensor<3x4xf64>, %b: tensor<3xi64>) {
  // expected-error @+1 {{'kiln.roi_align' op rois must have the input's element type}}
  %y = kiln.roi_align %x, %r, %b {mode = #kiln<pool avg>, output_height = 2 : i64, output_width = 2 : i64, sampling_ratio = 0 : i64, spatial_scale = 1.0 : f32} : (tensor<1x4x8x8xf32>, tensor<3x4xf64>, tensor<3xi64>) -> tensor<3x4x2x2xf32>
  return
}

// -----

func.func @roi_align_batch_rank(%x: tensor<1x4x8x8xf32>, %r: tensor<3x4xf32>, %b: tensor<3x1xi64>) {
  // expected-error @+1 {{'kiln.roi_align' op batch_indices must be 1-D}}
  %y = kiln.roi_align %x, %r, %b {mode = #kiln<pool avg>, output_height = 2 : i64, output_width = 2 : i64, sampling_ratio = 0 : i64, spatial_scale = 1.0 : f32} : (tensor<1x4x8x8xf32>, tensor<3x4xf32>, tensor<3x1xi64>) -> tensor<3x4x2x2xf32>
  return
}

// -----

func.func @roi_align_mode(%x: tensor<1x4x8x8xf32>, %r: tensor<3x4xf32>, %b: tensor<3xi64>) {
  // expected-error @+1 {{'kiln.roi_align' op mode must be max or avg}}
  %y = kiln.roi_align %x, %r, %b {mode = #kiln<pool lp>, output_height = 2 : i64, output_width = 2 : i64, sampling_ratio = 0 : i64, spatial_scale = 1.0 : f32} : (tensor<1x4x8x8xf32>, tensor<3x4xf32>, tensor<3xi64>) -> tensor<3x4x2x2xf32>
  return
}

// -----

func.func @roi_align_output(%x: tensor<1x4x8x8xf32>, %r: tensor<3x4xf32>, %b: tensor<3xi64>) {
  // expected-error @+1 {{'kiln.roi_align' op output_height and output_width must be >= 1}}
  %y = kiln.roi_align %x, %r, %b {mode = #kiln<pool avg>, output_height = 0 : i64, output_width = 2 : i64, sampling_ratio = 0 : i64, spatial_scale = 1.0 : f32} : (tensor<1x4x8x8xf32>, tensor<3x4xf32>, tensor<3xi64>) -> tensor<3x4x2x2xf32>
  return
}

// -----

func.func @roi_align_ratio(%x: tensor<1x4x8x8xf32>, %r: tensor<3x4xf32>, %b: tensor<3xi64>) {
  // expected-error @+1 {{'kiln.roi_align' op sampling_ratio must be >= 0}}
  %y = kiln.roi_align %x, %r, %b {mode = #kiln<pool avg>, output_height = 2 : i64, output_width = 2 : i64, sampling_ratio = -1 : i64, spatial_scale = 1.0 : f32} : (tensor<1x4x8x8xf32>, tensor<3x4xf32>, tensor<3xi64>) -> tensor<3x4x2x2xf32>
  return
}

// -----

func.func @roi_align_count(%x: tensor<1x4x8x8xf32>, %r: tensor<3x4xf32>, %b: tensor<2xi64>) {
  // expected-error @+1 {{'kiln.roi_align' op count of batch_indices must match, but is 3 and 2}}
  %y = kiln.roi_align %x, %r, %b {mode = #kiln<pool avg>, output_height = 2 : i64, output_width = 2 : i64, sampling_ratio = 0 : i64, spatial_scale = 1.0 : f32} : (tensor<1x4x8x8xf32>, tensor<3x4xf32>, tensor<2xi64>) -> tensor<3x4x2x2xf32>
  return
}

// -----

func.func @nms_boxes(%b: tensor<1x6x5xf32>, %s: tensor<1x2x6xf32>, %m: tensor<1xi64>, %i: tensor<f32>, %t: tensor<1xf32>) {
  // expected-error @+1 {{'kiln.non_max_suppression' op boxes must be [batch, boxes, 4]}}
  %sel = kiln.non_max_suppression %b, %s, %m, %i, %t : (tensor<1x6x5xf32>, tensor<1x2x6xf32>, tensor<1xi64>, tensor<f32>, tensor<1xf32>) -> tensor<?x3xi64>
  return
}

// -----

func.func @nms_scores(%b: tensor<1x6x4xf32>, %s: tensor<1x6xf32>, %m: tensor<1xi64>, %i: tensor<f32>, %t: tensor<1xf32>) {
  // expected-error @+1 {{'kiln.non_max_suppression' op scores must be [batch, classes, boxes]}}
  %sel = kiln.non_max_suppression %b, %s, %m, %i, %t : (tensor<1x6x4xf32>, tensor<1x6xf32>, tensor<1xi64>, tensor<f32>, tensor<1xf32>) -> tensor<?x3xi64>
  return
}

// -----

func.func @nms_batch(%b: tensor<1x6x4xf32>, %s: tensor<2x2x6xf32>, %m: tensor<1xi64>, %i: tensor<f32>, %t: tensor<1xf32>) {
  // expected-error @+1 {{'kiln.non_max_suppression' op batch dim of scores must match, but is 1 and 2}}
  %sel = kiln.non_max_suppression %b, %s, %m, %i, %t : (tensor<1x6x4xf32>, tensor<2x2x6xf32>, tensor<1xi64>, tensor<f32>, tensor<1xf32>) -> tensor<?x3xi64>
  return
}

// -----

func.func @nms_count(%b: tensor<1x6x4xf32>, %s: tensor<1x2x5xf32>, %m: tensor<1xi64>, %i: tensor<f32>, %t: tensor<1xf32>) {
  // expected-error @+1 {{'kiln.non_max_suppression' op box count of scores must match, but is 6 and 5}}
  %sel = kiln.non_max_suppression %b, %s, %m, %i, %t : (tensor<1x6x4xf32>, tensor<1x2x5xf32>, tensor<1xi64>, tensor<f32>, tensor<1xf32>) -> tensor<?x3xi64>
  return
}

// -----

func.func @nms_max(%b: tensor<1x6x4xf32>, %s: tensor<1x2x6xf32>, %m: tensor<2xi64>, %i: tensor<f32>, %t: tensor<1xf32>) {
  // expected-error @+1 {{'kiln.non_max_suppression' op max_output_boxes_per_class must hold exactly one value}}
  %sel = kiln.non_max_suppression %b, %s, %m, %i, %t : (tensor<1x6x4xf32>, tensor<1x2x6xf32>, tensor<2xi64>, tensor<f32>, tensor<1xf32>) -> tensor<?x3xi64>
  return
}

// -----

func.func @nms_iou(%b: tensor<1x6x4xf32>, %s: tensor<1x2x6xf32>, %m: tensor<1xi64>, %i: tensor<2xf32>, %t: tensor<1xf32>) {
  // expected-error @+1 {{'kiln.non_max_suppression' op iou_threshold must hold exactly one value}}
  %sel = kiln.non_max_suppression %b, %s, %m, %i, %t : (tensor<1x6x4xf32>, tensor<1x2x6xf32>, tensor<1xi64>, tensor<2xf32>, tensor<1xf32>) -> tensor<?x3xi64>
  return
}

// -----

func.func @nms_score(%b: tensor<1x6x4xf32>, %s: tensor<1x2x6xf32>, %m: tensor<1xi64>, %i: tensor<f32>, %t: tensor<1x1xf32>) {
  // expected-error @+1 {{'kiln.non_max_suppression' op score_threshold must hold exactly one value}}
  %sel = kiln.non_max_suppression %b, %s, %m, %i, %t : (tensor<1x6x4xf32>, tensor<1x2x6xf32>, tensor<1xi64>, tensor<f32>, tensor<1x1xf32>) -> tensor<?x3xi64>
  return
}

// -----

func.func @unique_axis(%x: tensor<2x3xf32>) {
  // expected-error @+1 {{'kiln.unique' op axis 2 is out of range for rank 2}}
  %y:4 = kiln.unique %x {axis = 2 : i64} : (tensor<2x3xf32>) -> (tensor<2x?xf32>, tensor<?xi64>, tensor<3xi64>, tensor<?xi64>)
  return
}

// -----

func.func @det_rank(%x: tensor<3xf32>) {
  // expected-error @+1 {{'kiln.det' op input must have rank >= 2 ([*, M, M])}}
  %d = kiln.det %x : (tensor<3xf32>) -> tensor<f32>
  return
}

// -----

func.func @det_square(%x: tensor<3x4xf32>) {
  // expected-error @+1 {{'kiln.det' op matrix width (matrices must be square) must match, but is 3 and 4}}
  %d = kiln.det %x : (tensor<3x4xf32>) -> tensor<f32>
  return
}

// -----

func.func @col2im_rank(%x: tensor<5x5xf32>) {
  // expected-error @+1 {{'kiln.col2im' op input must be [N, C * prod(block_shape), L]}}
  %y = kiln.col2im %x {image_shape = array<i64: 5, 5>, block_shape = array<i64: 1, 5>, strides = array<i64: 1, 1>, dilations = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>} : (tensor<5x5xf32>) -> tensor<1x1x5x5xf32>
  return
}

// -----

func.func @col2im_empty(%x: tensor<1x5x5xf32>) {
  // expected-error @+1 {{'kiln.col2im' op image_shape must have at least one entry}}
  %y = kiln.col2im %x {image_shape = array<i64>, block_shape = array<i64>, strides = array<i64>, dilations = array<i64>, pads = array<i64>} : (tensor<1x5x5xf32>) -> tensor<1x1x5x5xf32>
  return
}

// -----

func.func @col2im_image(%x: tensor<1x5x5xf32>) {
  // expected-error @+1 {{'kiln.col2im' op image_shape entries must be >= 1, got 0}}
  %y = kiln.col2im %x {image_shape = array<i64: 0, 5>, block_shape = array<i64: 1, 5>, strides = array<i64: 1, 1>, dilations = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>} : (tensor<1x5x5xf32>) -> tensor<1x1x5x5xf32>
  return
}

// -----

func.func @col2im_block(%x: tensor<1x5x5xf32>) {
  // expected-error @+1 {{'kiln.col2im' op block_shape has 1 entries; expected 2}}
  %y = kiln.col2im %x {image_shape = array<i64: 5, 5>, block_shape = array<i64: 5>, strides = array<i64: 1, 1>, dilations = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>} : (tensor<1x5x5xf32>) -> tensor<1x1x5x5xf32>
  return
}

// -----

func.func @col2im_strides(%x: tensor<1x5x5xf32>) {
  // expected-error @+1 {{'kiln.col2im' op strides entries must be >= 1, got 0}}
  %y = kiln.col2im %x {image_shape = array<i64: 5, 5>, block_shape = array<i64: 1, 5>, strides = array<i64: 0, 1>, dilations = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>} : (tensor<1x5x5xf32>) -> tensor<1x1x5x5xf32>
  return
}

// -----

func.func @col2im_dilations(%x: tensor<1x5x5xf32>) {
  // expected-error @+1 {{'kiln.col2im' op dilations has 3 entries; expected 2}}
  %y = kiln.col2im %x {image_shape = array<i64: 5, 5>, block_shape = array<i64: 1, 5>, strides = array<i64: 1, 1>, dilations = array<i64: 1, 1, 1>, pads = array<i64: 0, 0, 0, 0>} : (tensor<1x5x5xf32>) -> tensor<1x1x5x5xf32>
  return
}

// -----

func.func @col2im_pads(%x: tensor<1x5x5xf32>) {
  // expected-error @+1 {{'kiln.col2im' op pads entries must be >= 0, got -1}}
  %y = kiln.col2im %x {image_shape = array<i64: 5, 5>, block_shape = array<i64: 1, 5>, strides = array<i64: 1, 1>, dilations = array<i64: 1, 1>, pads = array<i64: 0, 0, -1, 0>} : (tensor<1x5x5xf32>) -> tensor<1x1x5x5xf32>
  return
}

// -----

func.func @col2im_fit(%x: tensor<1x5x5xf32>) {
  // expected-error @+1 {{'kiln.col2im' op block dim 1 (extent 9) does not fit the padded image (5)}}
  %y = kiln.col2im %x {image_shape = array<i64: 5, 5>, block_shape = array<i64: 1, 5>, strides = array<i64: 1, 1>, dilations = array<i64: 1, 2>, pads = array<i64: 0, 0, 0, 0>} : (tensor<1x5x5xf32>) -> tensor<1x1x5x5xf32>
  return
}

// -----

func.func @col2im_positions(%x: tensor<1x25x5xf32>) {
  // expected-error @+1 {{'kiln.col2im' op input has 5 block positions; the image holds 1}}
  %y = kiln.col2im %x {image_shape = array<i64: 5, 5>, block_shape = array<i64: 5, 5>, strides = array<i64: 1, 1>, dilations = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>} : (tensor<1x25x5xf32>) -> tensor<1x1x5x5xf32>
  return
}

// -----

func.func @col2im_channels(%x: tensor<1x7x5xf32>) {
  // expected-error @+1 {{'kiln.col2im' op input dim 1 (7) is not a multiple of prod(block_shape) = 5}}
  %y = kiln.col2im %x {image_shape = array<i64: 5, 5>, block_shape = array<i64: 1, 5>, strides = array<i64: 1, 1>, dilations = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>} : (tensor<1x7x5xf32>) -> tensor<1x1x5x5xf32>
  return
}

// -----

func.func @col2im_absurd(%x: tensor<1x5x5xf32>) {
  // expected-error @+1 {{'kiln.col2im' op block_shape or image_shape is absurdly large}}
  %y = kiln.col2im %x {image_shape = array<i64: 2000000000, 2000000000>, block_shape = array<i64: 1000000000, 1000000000>, strides = array<i64: 1, 1>, dilations = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>} : (tensor<1x5x5xf32>) -> tensor<1x1x5x5xf32>
  return
}

// -----

func.func @nms_select_rank(%boxes: tensor<2x6x4xf32>, %scores: tensor<2x3x6xf32>, %rank: tensor<2x6xi64>, %max: tensor<1xi64>, %iou: tensor<f32>) {
  // expected-error @+1 {{'kiln.nms_select' op rank must be [batch, classes, boxes]}}
  %k = kiln.nms_select %boxes, %scores, %rank, %max, %iou : (tensor<2x6x4xf32>, tensor<2x3x6xf32>, tensor<2x6xi64>, tensor<1xi64>, tensor<f32>) -> tensor<2x3x6xi64>
  return
}
