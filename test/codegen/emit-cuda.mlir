// CUDA C for every schedule and element type (kiln-translate --emit-cuda forms the
// kernels first: graph pipeline, then --kiln-form-kernels).
// RUN: kiln-translate --compile --emit-cuda %s | FileCheck %s
// Every kernel here also compiles with NVRTC for sm_80 and sm_90, without spills in
// pointwise kernels.
// RUN: kiln-translate --compile --emit-cuda --nvrtc %s -o %t.cu | FileCheck %s --check-prefix=NVRTC
// NVRTC: NVRTC compiled {{[0-9]+}} kernels for sm_80 and sm_90; 0 spill reports

// CHECK: #include "kiln/device/kiln_device.h"

// Pointwise, f32, a symbolic size as a parameter with a -D override,
// broadcasting: the bias [8] is read along the innermost dim, so the vector
// path reads it as a vector at its own offset of each vector's first element
// (test/run/broadcast-kernels.test); the scalar loop takes the rest.
// CHECK-LABEL: pointwise kernel
// A variant's build defines KILN_SYM_n, which then tags the entry point
// (kiln/artifact/EntryName.h: kiln_pointwise_<hash>_v0_<n>).
// CHECK: #ifndef KILN_SYM_n
// CHECK-NEXT: #define KILN_SYM_n sym_n
// CHECK-NEXT: #define KILN_UNDEF_SYM_n
// CHECK-NEXT: #define KILN_TAG0
// CHECK-NEXT: #else
// CHECK-NEXT: #define KILN_TAG0 KILN_PASTE(_v0_, KILN_SYM_n)
// CHECK-NEXT: #endif
// CHECK-NEXT: #define KILN_ENTRY KILN_PASTE(kiln_pointwise_{{[0-9a-f]+}}, KILN_TAG0)
// CHECK-NEXT: extern "C" __global__ void KILN_ENTRY(float *KILN_RESTRICT out, const float *KILN_RESTRICT in0, const float *KILN_RESTRICT in1, int64_t sym_n)
// CHECK: const int64_t n = (KILN_SYM_n * (8LL));
// CHECK: *reinterpret_cast<const kiln_vec<float, 4> *>(in1 + {{i[0-9]+}});
// CHECK: for (int64_t i = vectorized + kiln_thread_index(); i < n; i += kiln_thread_count())
// CHECK: kiln_load(in1[{{i[0-9]+}}])
// CHECK: kiln_tanh(
// CHECK: out[i] = (float)(
// CHECK: extern "C" void KILN_PASTE(KILN_ENTRY, _host)(void **args, int64_t grid)
// CHECK: #undef KILN_ENTRY
// CHECK-NEXT: #undef KILN_TAG0
func.func @f32_bias_tanh(%x: tensor<?x8xf32, #kiln.dims<[n, 8]>>, %b: tensor<8xf32>) -> tensor<?x8xf32, #kiln.dims<[n, 8]>> {
  %s = kiln.add %x, %b : (tensor<?x8xf32, #kiln.dims<[n, 8]>>, tensor<8xf32>) -> tensor<?x8xf32, #kiln.dims<[n, 8]>>
  %t = kiln.tanh %s : (tensor<?x8xf32, #kiln.dims<[n, 8]>>) -> tensor<?x8xf32, #kiln.dims<[n, 8]>>
  return %t : tensor<?x8xf32, #kiln.dims<[n, 8]>>
}

// f16 and bf16 load as float, compute in float and round once on the store. Every
// input is read at the result's position, so they move in 128-bit vectors when
// the buffers are aligned (checked at run time); the scalar loop takes what is
// left after the last whole vector (everything when a buffer is not aligned).
// Constant sizes that fit and ops that move elements by position: 32-bit
// indices (test/run/index32.test).
// CHECK-LABEL: pointwise kernel
// CHECK: (kiln_f16 *KILN_RESTRICT out, const kiln_bf16 *KILN_RESTRICT in0, const kiln_f16 *KILN_RESTRICT in1)
// CHECK: int32_t vectorized = 0;
// CHECK: if (kiln_aligned(out, sizeof(kiln_f16) * 8) && kiln_aligned(in0, sizeof(kiln_bf16) * 8)
// CHECK: const kiln_vec<kiln_bf16, 8> {{v[0-9]+}} = *reinterpret_cast<const kiln_vec<kiln_bf16, 8> *>(in0 + vi * 8);
// CHECK: result.x[7] = kiln_to_f16(
// CHECK: *reinterpret_cast<kiln_vec<kiln_f16, 8> *>(out + vi * 8) = result;
// CHECK: vectorized = n / 8 * 8;
// CHECK: for (int32_t i = vectorized + kiln_thread_index(); i < n; i += kiln_thread_count())
// CHECK: const float {{t[0-9]+}} = kiln_load(in0[
// CHECK: kiln_load(kiln_to_f16(
// CHECK: out[i] = kiln_to_f16(
func.func @half_and_bfloat(%x: tensor<16xf16>, %y: tensor<16xbf16>) -> tensor<16xf16> {
  %c = kiln.cast %y to f16 : (tensor<16xbf16>) -> tensor<16xf16>
  %m = kiln.mul %x, %c : (tensor<16xf16>, tensor<16xf16>) -> tensor<16xf16>
  return %m : tensor<16xf16>
}

// Integers: division and modulo through helpers without undefined behaviour,
// a zero divisor reported through the error word, wrapping arithmetic through
// uint64.
// CHECK-LABEL: pointwise kernel
// CHECK: (int32_t *KILN_RESTRICT out, const int32_t *KILN_RESTRICT in0, const int32_t *KILN_RESTRICT in1, int32_t *kiln_error)
// CHECK: if ({{t[0-9]+}} == 0) kiln_report_error(kiln_error, KILN_ERROR_DIVISION_BY_ZERO);
// CHECK: kiln_idiv<int32_t>(
// CHECK: kiln_imod<int32_t>(
// CHECK: (int32_t)((uint64_t){{t[0-9]+}} + (uint64_t){{t[0-9]+}})
func.func @int32_div_mod(%a: tensor<6xi32>, %b: tensor<6xi32>) -> tensor<6xi32> {
  %d = kiln.div %a, %b : (tensor<6xi32>, tensor<6xi32>) -> tensor<6xi32>
  %m = kiln.mod %a, %b : (tensor<6xi32>, tensor<6xi32>) -> tensor<6xi32>
  %s = kiln.add %d, %m : (tensor<6xi32>, tensor<6xi32>) -> tensor<6xi32>
  return %s : tensor<6xi32>
}

// Booleans and f64 select.
// CHECK-LABEL: pointwise kernel
// CHECK: (double *KILN_RESTRICT out, const double *KILN_RESTRICT in0, const double *KILN_RESTRICT in1)
// CHECK: const bool {{t[0-9]+}} = ({{t[0-9]+}} < {{t[0-9]+}});
// CHECK: const double {{t[0-9]+}} = ({{t[0-9]+}} ? {{t[0-9]+}} : {{t[0-9]+}});
func.func @f64_select(%a: tensor<3xf64>, %b: tensor<3xf64>) -> tensor<3xf64> {
  %c = kiln.compare %a, %b {direction = #kiln<compare lt>} : (tensor<3xf64>, tensor<3xf64>) -> tensor<3xi1>
  %s = kiln.select %c, %a, %b : (tensor<3xi1>, tensor<3xf64>, tensor<3xf64>) -> tensor<3xf64>
  return %s : tensor<3xf64>
}

// Data movement: transpose, slice (ONNX clamping at run time), concat, pad and
// gather as index maps (64-bit: the gather reads its indices from data).
// CHECK-LABEL: pointwise kernel
// CHECK: kiln_clamp_index(
// CHECK: const int64_t [[END:end[0-9]+]] = ((int64_t)0) + (2LL);
// CHECK: if ({{k[0-9]+}} < [[END]]) {
// CHECK: kiln_slice_start(
// CHECK: } else {
func.func @data_movement(%x: tensor<4x6xf32>, %y: tensor<2x6xf32>, %idx: tensor<3xi64>) -> tensor<3x6xf32> {
  %st = kiln.constant dense<[1, 0]> : tensor<2xi64>
  %en = kiln.constant dense<[3, 6]> : tensor<2xi64>
  %sp = kiln.constant dense<1> : tensor<2xi64>
  %s = kiln.slice %x, %st, %en, %sp : (tensor<4x6xf32>, tensor<2xi64>, tensor<2xi64>, tensor<2xi64>) -> tensor<2x6xf32>
  %c = kiln.concat %s, %y {axis = 0 : i64} : (tensor<2x6xf32>, tensor<2x6xf32>) -> tensor<4x6xf32>
  %g = kiln.gather %c, %idx {axis = 0 : i64} : (tensor<4x6xf32>, tensor<3xi64>) -> tensor<3x6xf32>
  return %g : tensor<3x6xf32>
}

// CHECK-LABEL: pointwise kernel
// CHECK: kiln_reflect_index(
func.func @reflect_pad(%x: tensor<3x4xf32>) -> tensor<5x4xf32> {
  %p = kiln.constant dense<[1, 0, 1, 0]> : tensor<4xi64>
  %v = kiln.constant dense<0.0> : tensor<f32>
  %r = kiln.pad %x, %p, %v {mode = #kiln<pad_mode reflect>} : (tensor<3x4xf32>, tensor<4xi64>, tensor<f32>) -> tensor<5x4xf32>
  return %r : tensor<5x4xf32>
}

// Row reduction (trailing axes): one block per result element, a shared-memory
// tree across its threads.
// CHECK-LABEL: reduction kernel
// CHECK: __shared__ float scratch[KILN_MAX_BLOCK];
// CHECK: for (int64_t o = blockIdx.x; o < items; o += gridDim.x)
// CHECK: for (int64_t rr = threadIdx.x; rr < R; rr += blockDim.x)
// CHECK: acc = kiln_block_reduce(acc,
// CHECK: if (threadIdx.x == 0) out[o] =
func.func @row_sum(%x: tensor<?x64xf32, #kiln.dims<[n, 64]>>) -> tensor<?xf32, #kiln.dims<[n]>> {
  %s = kiln.reduce %x {kind = #kiln<reduce sum>, axes = array<i64: 1>, keep_dims = false} : (tensor<?x64xf32, #kiln.dims<[n, 64]>>) -> tensor<?xf32, #kiln.dims<[n]>>
  return %s : tensor<?xf32, #kiln.dims<[n]>>
}

// Column reduction (a leading axis): one result element per thread, a serial loop
// whose reads are coalesced across threads.
// CHECK-LABEL: reduction kernel
// CHECK: for (int64_t o = kiln_thread_index(); o < items; o += kiln_thread_count())
// CHECK: for (int64_t rr = 0; rr < R; ++rr)
// CHECK: kiln_max<float>(a, b)
func.func @column_max(%x: tensor<32x16xf32>) -> tensor<1x16xf32> {
  %m = kiln.reduce %x {kind = #kiln<reduce max>, axes = array<i64: 0>} : (tensor<32x16xf32>) -> tensor<1x16xf32>
  return %m : tensor<1x16xf32>
}

// softmax and layer_norm: a warp per row when rows are short (shuffle
// reductions; a row of a known length up to 256 kept in registers, 4 values
// a lane for 128), else a block per row (shared-memory tree), each pass over
// the row.
// CHECK-LABEL: row kernel
// CHECK: if (blockDim.x % 32 == 0) {
// CHECK: for (int64_t row = blockIdx.x * warps + threadIdx.x / 32; row < rows; row += gridDim.x * warps)
// CHECK: float rowCache[4];
// CHECK: const int64_t j = lane + k * 32;
// CHECK: mx = kiln_warp_reduce(mx,
// CHECK: return;
// CHECK: for (int64_t row = blockIdx.x; row < rows; row += gridDim.x)
// CHECK: mx = kiln_block_reduce(mx,
// CHECK: sum += kiln_exp(
// CHECK: kiln_exp({{t[0-9]+}} - mx) / sum
func.func @softmax(%x: tensor<?x128xf32, #kiln.dims<[n, 128]>>) -> tensor<?x128xf32, #kiln.dims<[n, 128]>> {
  %s = kiln.softmax %x {axis = -1 : i64} : (tensor<?x128xf32, #kiln.dims<[n, 128]>>) -> tensor<?x128xf32, #kiln.dims<[n, 128]>>
  return %s : tensor<?x128xf32, #kiln.dims<[n, 128]>>
}

// CHECK-LABEL: row kernel
// CHECK: mean = kiln_block_reduce(mean,
// The deviations scaled by the largest when it is above 1 (no overflow when
// squared), then the variance and 1 / sqrt(unit^2 var + eps).
// CHECK: spread = kiln_block_reduce(spread,
// CHECK: const float shrink = (float)1 / unit;
// CHECK: var += ({{.*}} - mean) * shrink) * ({{.*}} - mean) * shrink);
// CHECK: var = kiln_block_reduce(var,
// CHECK: const float inv = (float)1 / (unit * kiln_sqrt(var +
// CHECK: out[(row * L) + j] = kiln_to_bf16(
func.func @layer_norm_bf16(%x: tensor<4x32xbf16>, %g: tensor<32xbf16>, %b: tensor<32xbf16>) -> tensor<4x32xbf16> {
  %y = kiln.layer_norm %x, %g, %b {axis = -1 : i64, epsilon = 1.0e-05 : f32} : (tensor<4x32xbf16>, tensor<32xbf16>, tensor<32xbf16>) -> tensor<4x32xbf16>
  return %y : tensor<4x32xbf16>
}

// arg_reduce: one result element per thread scanning the axis in order.
// CHECK-LABEL: reduction kernel
// CHECK: (int64_t *KILN_RESTRICT out, const float *KILN_RESTRICT in0)
// CHECK: for (int64_t k = 0; k < N; ++k)
// CHECK: if (kiln_isnan(best)) continue;
// CHECK: > best || {{t[0-9]+}} == best) { best =
// CHECK: out[o] = (int64_t)at;
func.func @argmax_last(%x: tensor<3x5xf32>) -> tensor<3x1xi64> {
  %a = kiln.arg_reduce %x {kind = #kiln<arg_reduce argmax>, axis = 1 : i64, select_last_index = true} : (tensor<3x5xf32>) -> tensor<3x1xi64>
  return %a : tensor<3x1xi64>
}

// float8: stored as bytes, computed in float; a cast rounds (saturating or not)
// where it stands.
// CHECK-LABEL: pointwise kernel
// CHECK: (kiln_f8e4m3fn *KILN_RESTRICT out, const float *KILN_RESTRICT in0)
// CHECK: kiln_load(kiln_to_f8e4m3fn((float)({{t[0-9]+}}), false))
// CHECK: out[i] = kiln_to_f8e4m3fn({{t[0-9]+}}, false);
func.func @to_float8(%x: tensor<8xf32>) -> tensor<8xf8E4M3FN> {
  %c = kiln.cast %x to f8E4M3FN {saturate = false} : (tensor<8xf32>) -> tensor<8xf8E4M3FN>
  return %c : tensor<8xf8E4M3FN>
}

// A transpose of the two innermost dims goes through 32x32 shared-memory
// tiles (test/run/transpose-kernels.test: any permutation that moves the
// innermost dim), in vectors of 4 floats (64 and 48 are multiples of 4)
// when the buffers are aligned, scalars otherwise. Checked in the 64-bit
// body (the symbol b gives the kernel a 32-bit one for variants first).
// CHECK-LABEL: pointwise kernel
// CHECK: #else
// CHECK: __shared__ float tile[32][33];
// CHECK: if (kiln_aligned(in0, sizeof(float) * 4) && kiln_aligned(out, sizeof(float) * 4)) {
// CHECK: const kiln_vec<float, 4> v = *reinterpret_cast<const kiln_vec<float, 4> *>(in0 + (((b) * (64LL) + row) * (48LL) + col));
// CHECK: __syncthreads();
// CHECK: kiln_store_vec(out + (((b) * (48LL) + col) * (64LL) + row), v);
// CHECK: return;
// CHECK: if (row < A && col < C) tile[i][j] = *(in0 + (((b) * (64LL) + row) * (48LL) + col));
// CHECK: __syncthreads();
// CHECK: if (row < A && col < C) *(out + (((b) * (48LL) + col) * (64LL) + row)) = tile[j][i];
func.func @transpose_inner(%x: tensor<?x64x48xf32, #kiln.dims<[b, 64, 48]>>) -> tensor<?x48x64xf32, #kiln.dims<[b, 48, 64]>> {
  %t = kiln.transpose %x {permutation = array<i64: 0, 2, 1>} : (tensor<?x64x48xf32, #kiln.dims<[b, 64, 48]>>) -> tensor<?x48x64xf32, #kiln.dims<[b, 48, 64]>>
  return %t : tensor<?x48x64xf32, #kiln.dims<[b, 48, 64]>>
}

// bitcast goes through the storage types.
// CHECK-LABEL: pointwise kernel
// CHECK: (int32_t *KILN_RESTRICT out, const float *KILN_RESTRICT in0)
// CHECK: kiln_load(kiln_bitcast<int32_t>((float)(
func.func @bitcast(%x: tensor<4xf32>) -> tensor<4xi32> {
  %b = kiln.bitcast %x to i32 : (tensor<4xf32>) -> tensor<4xi32>
  return %b : tensor<4xi32>
}
