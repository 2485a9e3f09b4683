// Kernels that break each rule of tools/sass-lint.py, named as kiln names its
// own (test/run/sass-lint.test compiles them with nvcc).
extern "C" __global__ void kiln_pointwise_divides(float *out, const float *in, long long n, long long inner) {
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += gridDim.x * (long long)blockDim.x)
    out[i] = in[i % inner] + (float)(i / inner);
}
extern "C" __global__ void kiln_row_local(float *out, const float *in, int k) {
  float window[1024];
  for (int j = 0; j < 1024; ++j)
    window[(j * k) & 1023] = in[threadIdx.x + j];
  out[threadIdx.x] = window[k & 1023];
}
extern "C" __global__ void kiln_pointwise_scalar(float *out, const float *in, long long n) {
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += gridDim.x * (long long)blockDim.x)
    out[i] = in[i] * 2.0f;
}
extern "C" __global__ void kiln_reduction_registers(float *out, const float *in, int n) {
  // 96 accumulators live across the loop: more registers than 50% occupancy
  // allows at 256 threads (64).
  float acc[96];
#pragma unroll
  for (int a = 0; a < 96; ++a)
    acc[a] = in[a];
  for (int j = 0; j < n; ++j) {
#pragma unroll
    for (int a = 0; a < 96; ++a)
      acc[a] = acc[a] * in[j] + acc[(a + 1) % 96];
  }
  float s = 0;
#pragma unroll
  for (int a = 0; a < 96; ++a)
    s += acc[a];
  out[threadIdx.x] = s;
}
