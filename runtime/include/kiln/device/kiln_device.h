// kiln_device.h - the device library of kiln's generated kernels.
//
// Generated CUDA C includes this one header. It has two flavors:
//  - CUDA (compiled by NVRTC, __CUDACC_RTC__ defined): needs no other header;
//    half and bfloat16 convert through PTX and bit operations.
//  - host (compiled by the host C++ compiler for host emulation): one thread per
//    block, blocks in a loop (or OpenMP); __global__/__shared__/__syncthreads map
//    to plain C++, and every kernel must be correct for any block size, 1 included.
//
// Storage types: f16 and bf16 are stored as kiln_f16/kiln_bf16 (16-bit patterns)
// and computed in float; everything else computes in its own C type.

#ifndef KILN_DEVICE_H
#define KILN_DEVICE_H

#ifdef __CUDACC_RTC__
typedef signed char int8_t;
typedef short int16_t;
typedef int int32_t;
typedef long long int64_t;
typedef unsigned char uint8_t;
typedef unsigned short uint16_t;
typedef unsigned int uint32_t;
typedef unsigned long long uint64_t;
#define KILN_DEVICE __device__ __forceinline__
#define KILN_RESTRICT __restrict__
#else
#include <cmath>
#include <cstdint>
#include <cstring>
#define KILN_DEVICE static inline
#define KILN_RESTRICT __restrict
#define __global__
struct kiln_dim3 {
  int64_t x;
};
#ifdef KILN_HOST_BLOCK_THREADS
// A test mode (HostEmulation: KILN_HOST_BLOCK_THREADS=N in the environment of
// the compile): N host threads per block, __syncthreads a barrier across them,
// __shared__ one copy the block's threads share, blocks one after another. It
// runs the code paths a GPU's blocks take, which one thread per block never
// does. Warp shuffles are not emulated: N must not be a multiple of 32 (the
// kernels take their warp paths only then).
#if KILN_HOST_BLOCK_THREADS % 32 == 0 || KILN_HOST_BLOCK_THREADS > 256
#error "KILN_HOST_BLOCK_THREADS must be at most 256 and not a multiple of 32"
#endif
#include <pthread.h>
#include <thread>
#include <vector>
#define __shared__ static
static thread_local kiln_dim3 blockIdx = {0}, gridDim = {1}, threadIdx = {0};
static const kiln_dim3 blockDim = {KILN_HOST_BLOCK_THREADS};
static pthread_barrier_t kiln_block_barrier;
static inline void __syncthreads() { pthread_barrier_wait(&kiln_block_barrier); }
// Runs `body` as `grid` blocks of KILN_HOST_BLOCK_THREADS threads, in order:
// the same threads run every block, meeting at a barrier before the next one
// reuses the __shared__ arrays.
template <typename F> static void kiln_run_blocks(int64_t grid, F body) {
  pthread_barrier_init(&kiln_block_barrier, nullptr, KILN_HOST_BLOCK_THREADS);
  std::vector<std::thread> threads;
  for (int64_t t = 0; t < KILN_HOST_BLOCK_THREADS; ++t)
    threads.emplace_back([&, t] {
      threadIdx.x = t;
      gridDim.x = grid;
      for (int64_t b = 0; b < grid; ++b) {
        blockIdx.x = b;
        body();
        __syncthreads();
      }
    });
  for (std::thread &thread : threads)
    thread.join();
  pthread_barrier_destroy(&kiln_block_barrier);
}
#else
// One thread per block: a block is one call, so its shared arrays are the
// call's own (on its stack). Not thread_local statics: those would be TLS in
// every host library, too big for the static TLS glibc keeps for dlopen, and
// dynamic TLS in many loaded libraries is more than LeakSanitizer's exit-time
// scan handles ("Tracer caught signal 11" in the fuzz tests).
#define __shared__
// The block this host thread runs; set by the launcher before each call.
static thread_local kiln_dim3 blockIdx = {0}, gridDim = {1};
static const kiln_dim3 threadIdx = {0}, blockDim = {1};
static inline void __syncthreads() {}
#endif
#endif

struct kiln_f16 {
  uint16_t bits;
};
struct kiln_bf16 {
  uint16_t bits;
};

//===--- conversions --------------------------------------------------------===//

KILN_DEVICE float kiln_f32_bits(uint32_t u) {
#ifdef __CUDACC_RTC__
  return __uint_as_float(u);
#else
  float f;
  std::memcpy(&f, &u, 4);
  return f;
#endif
}
KILN_DEVICE uint32_t kiln_bits_f32(float f) {
#ifdef __CUDACC_RTC__
  return __float_as_uint(f);
#else
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
#endif
}

KILN_DEVICE float kiln_load(kiln_f16 h) {
#ifdef __CUDACC_RTC__
  float f;
  asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(h.bits));
  return f;
#else
  uint32_t sign = (h.bits & 0x8000u) << 16, exp = (h.bits >> 10) & 0x1f, man = h.bits & 0x3ff;
  if (exp == 0x1f)
    return kiln_f32_bits(sign | 0x7f800000u | (man << 13));
  if (exp == 0) { // zero or subnormal: man * 2^-24
    float v = std::ldexp(static_cast<float>(man), -24);
    return sign ? -v : v;
  }
  return kiln_f32_bits(sign | ((exp + 112) << 23) | (man << 13));
#endif
}

KILN_DEVICE kiln_f16 kiln_to_f16(float f) {
  kiln_f16 h;
#ifdef __CUDACC_RTC__
  asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h.bits) : "f"(f));
#else
  uint32_t u = kiln_bits_f32(f), sign = (u >> 16) & 0x8000u;
  float a = std::fabs(f);
  if (a != a) {
    h.bits = static_cast<uint16_t>(sign | 0x7e00u);
  } else if (a >= 65520.0f) {
    h.bits = static_cast<uint16_t>(sign | 0x7c00u);
  } else if (a < 6.103515625e-05f) { // subnormal: round to a multiple of 2^-24
    h.bits = static_cast<uint16_t>(sign | static_cast<uint32_t>(std::nearbyint(a * 16777216.0f)));
  } else {
    uint32_t v = kiln_bits_f32(a);
    uint32_t rounded = v + 0xfffu + ((v >> 13) & 1u); // to nearest, ties to even
    h.bits = static_cast<uint16_t>(sign | (((rounded >> 13) - (112u << 10)) & 0x7fffu));
  }
#endif
  return h;
}

KILN_DEVICE float kiln_load(kiln_bf16 b) { return kiln_f32_bits(static_cast<uint32_t>(b.bits) << 16); }

KILN_DEVICE kiln_bf16 kiln_to_bf16(float f) {
  uint32_t u = kiln_bits_f32(f);
  kiln_bf16 b;
  if ((u & 0x7fffffffu) > 0x7f800000u)
    b.bits = static_cast<uint16_t>((u >> 16) | 0x40u); // quiet NaN
  else
    b.bits = static_cast<uint16_t>((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
  return b;
}

// The same bits as another type of the same size.
template <typename To, typename From> KILN_DEVICE To kiln_bitcast(From v) {
  static_assert(sizeof(To) == sizeof(From), "bitcast changes the size");
  union {
    From from;
    To to;
  } u;
  u.from = v;
  return u.to;
}

// Loads of types that compute as themselves.
template <typename T> KILN_DEVICE T kiln_load(T v) { return v; }

//===--- math ---------------------------------------------------------------===//

#ifdef __CUDACC_RTC__
#define KILN_MATH1(name, ffn, dfn)                                                       \
  KILN_DEVICE float name(float x) { return ffn(x); }                                      \
  KILN_DEVICE double name(double x) { return dfn(x); }
// -DKILN_FAST_MATH trades accuracy (a few ulp) for the hardware approximations of
// the float transcendentals.
#ifdef KILN_FAST_MATH
#define expf __expf
#define logf __logf
#define sinf __sinf
#define cosf __cosf
#define tanf __tanf
#endif
#else
// std::exp(float) and friends are the float overloads.
#define KILN_MATH1(name, ffn, dfn)                                                       \
  KILN_DEVICE float name(float x) { return std::dfn(x); }                                 \
  KILN_DEVICE double name(double x) { return std::dfn(x); }
#endif
KILN_MATH1(kiln_exp, expf, exp)
KILN_MATH1(kiln_log, logf, log)
KILN_MATH1(kiln_sqrt, sqrtf, sqrt)
KILN_MATH1(kiln_tanh, tanhf, tanh)
KILN_MATH1(kiln_erf, erff, erf)
KILN_MATH1(kiln_sin, sinf, sin)
KILN_MATH1(kiln_cos, cosf, cos)
KILN_MATH1(kiln_tan, tanf, tan)
KILN_MATH1(kiln_asin, asinf, asin)
KILN_MATH1(kiln_acos, acosf, acos)
KILN_MATH1(kiln_atan, atanf, atan)
KILN_MATH1(kiln_sinh, sinhf, sinh)
KILN_MATH1(kiln_cosh, coshf, cosh)
KILN_MATH1(kiln_asinh, asinhf, asinh)
KILN_MATH1(kiln_acosh, acoshf, acosh)
KILN_MATH1(kiln_atanh, atanhf, atanh)
KILN_MATH1(kiln_floor, floorf, floor)
KILN_MATH1(kiln_ceil, ceilf, ceil)
KILN_MATH1(kiln_round, rintf, nearbyint)
KILN_MATH1(kiln_fabs, fabsf, fabs)
#undef KILN_MATH1
#ifdef KILN_FAST_MATH
#undef expf
#undef logf
#undef sinf
#undef cosf
#undef tanf
#endif

#ifdef __CUDACC_RTC__
#define KILN_MATH2(name, ffn, dfn)                                                       \
  KILN_DEVICE float name(float a, float b) { return ffn(a, b); }                          \
  KILN_DEVICE double name(double a, double b) { return dfn(a, b); }
#else
#define KILN_MATH2(name, ffn, dfn)                                                       \
  KILN_DEVICE float name(float a, float b) { return std::dfn(a, b); }                     \
  KILN_DEVICE double name(double a, double b) { return std::dfn(a, b); }
#endif
KILN_MATH2(kiln_pow, powf, pow)
KILN_MATH2(kiln_fmod, fmodf, fmod)
#undef KILN_MATH2

template <typename T> KILN_DEVICE T kiln_sigmoid(T x) { return T(1) / (T(1) + kiln_exp(-x)); }
template <typename T> KILN_DEVICE T kiln_rsqrt(T x) { return T(1) / kiln_sqrt(x); }
template <typename T> KILN_DEVICE bool kiln_isnan(T x) { return x != x; }
KILN_DEVICE bool kiln_isinf(float x) { return x == x && kiln_fabs(x) > 3.402823466e38f; }
KILN_DEVICE bool kiln_isinf(double x) { return x == x && kiln_fabs(x) > 1.7976931348623157e308; }
template <typename T> KILN_DEVICE T kiln_abs(T x) { return x < T(0) ? T(-x) : x; }
KILN_DEVICE float kiln_abs(float x) { return kiln_fabs(x); }
KILN_DEVICE double kiln_abs(double x) { return kiln_fabs(x); }
template <typename T> KILN_DEVICE T kiln_sign(T x) { return x > T(0) ? T(1) : (x < T(0) ? T(-1) : x); }

// max and min that propagate NaN (ONNX Max/Min), and the plain ones for integers.
template <typename T> KILN_DEVICE T kiln_max(T a, T b) {
  return kiln_isnan(a) || kiln_isnan(b) ? (a != a ? a : b) : (a < b ? b : a);
}
template <typename T> KILN_DEVICE T kiln_min(T a, T b) {
  return kiln_isnan(a) || kiln_isnan(b) ? (a != a ? a : b) : (b < a ? b : a);
}

// std::max's rule (the first argument unless the second is larger): what the
// reference's max-mode RoiAlign does with NaN.
template <typename T> KILN_DEVICE T kiln_max_plain(T a, T b) { return a < b ? b : a; }

// Whether element a (at position ia) comes before b (at ib) in top_k's order:
// larger first (smaller with largest = false), NaN as the largest, ties by
// position (the reference's stable sort).
template <typename T> KILN_DEVICE bool kiln_topk_before(T a, int64_t ia, T b, int64_t ib, bool largest) {
  bool na = kiln_isnan(a), nb = kiln_isnan(b);
  int cmp = na || nb ? (na == nb ? 0 : (na ? 1 : -1)) : (a < b ? -1 : (a > b ? 1 : 0));
  if (cmp == 0)
    return ia < ib;
  return largest ? cmp > 0 : cmp < 0;
}

// Float mod with the sign of the divisor (Python %).
template <typename T> KILN_DEVICE T kiln_fmod_floor(T a, T b) {
  T r = kiln_fmod(a, b);
  return (r != T(0) && ((r < T(0)) != (b < T(0)))) ? r + b : r;
}

//===--- data errors --------------------------------------------------------===//
//
// Kernels that check their data (gather indices, integer divisors, arg_reduce
// axes) take `int32_t *kiln_error`, one word per step in the run's arena, and
// store the first failure's code there; the runtime reads the words when the call
// completes and fails it with the step and the reason, as the reference does.
// The kernel itself goes on safely (clamped reads, 0 for a quotient).
// kiln::artifact::kernelErrorText (kiln/artifact/HostLaunch.h) words these codes.
#define KILN_ERROR_INDEX_OUT_OF_RANGE 1
#define KILN_ERROR_DIVISION_BY_ZERO 2
#define KILN_ERROR_EMPTY_REDUCTION 3

KILN_DEVICE void kiln_report_error(int32_t *word, int32_t code) {
#ifdef __CUDACC_RTC__
  atomicCAS(reinterpret_cast<int *>(word), 0, code);
#else
  int32_t expected = 0;
  __atomic_compare_exchange_n(word, &expected, code, false, __ATOMIC_RELAXED, __ATOMIC_RELAXED);
#endif
}

// Integer division and remainders without undefined behaviour: division by zero
// gives 0 here and is reported (KILN_ERROR_DIVISION_BY_ZERO).
template <typename T> KILN_DEVICE T kiln_idiv(T a, T b) {
  if (b == T(0))
    return T(0);
  if (T(-1) < T(0) && b == T(-1))
    return T(T(0) - a); // avoids INT_MIN / -1
  return T(a / b);
}
template <typename T> KILN_DEVICE T kiln_irem(T a, T b) {
  if (b == T(0) || (T(-1) < T(0) && b == T(-1)))
    return T(0);
  return T(a % b);
}
template <typename T> KILN_DEVICE T kiln_imod(T a, T b) {
  T r = kiln_irem(a, b);
  return (r != T(0) && ((r < T(0)) != (b < T(0)))) ? T(r + b) : r;
}
template <typename T> KILN_DEVICE T kiln_ipow(T a, T b) {
  if (T(-1) < T(0) && b < T(0))
    return a == T(1) ? T(1) : (a == T(-1) ? ((b % T(2)) ? T(-1) : T(1)) : T(0));
  T r = T(1);
  for (uint64_t e = static_cast<uint64_t>(b); e; e >>= 1, a = T(a * a))
    if (e & 1u)
      r = T(r * a);
  return r;
}
template <typename T> KILN_DEVICE T kiln_shl(T a, T b) {
  return static_cast<uint64_t>(b) >= sizeof(T) * 8 ? T(0) : T(a << b);
}
template <typename T> KILN_DEVICE T kiln_shr(T a, T b) {
  if (static_cast<uint64_t>(b) >= sizeof(T) * 8)
    return T(-1) < T(0) && a < T(0) ? T(-1) : T(0);
  return T(a >> b);
}

// Float to integer: truncation toward zero, clamped to int64 (NaN is 0), then
// wrapped to the target width, as the reference kernels do.
template <typename T, typename F> KILN_DEVICE T kiln_f2i(F x) {
  if (x != x)
    return T(0);
  if (x >= F(9.2233720368547758e18))
    return T(static_cast<int64_t>(0x7fffffffffffffffLL));
  if (x <= F(-9.2233720368547758e18))
    return T(static_cast<int64_t>(-0x7fffffffffffffffLL - 1));
  return T(static_cast<int64_t>(x));
}

//===--- float8: stored as bytes, computed in float -------------------------===//
// kind 0: IEEE-like (inf and NaN at the all-ones exponent; E5M2); 1: "fn" (no inf,
// NaN is all ones; E4M3FN); 2: "fnuz" (no inf, no -0, 0x80 is NaN); 3: finite only
// (FLOAT4E2M1: NaN stores as -0, anything too large as the largest value).

KILN_DEVICE float kiln_ldexp(float x, int e) {
#ifdef __CUDACC_RTC__
  return ldexpf(x, e);
#else
  return std::ldexp(x, e);
#endif
}
KILN_DEVICE float kiln_frexp(float x, int *e) {
#ifdef __CUDACC_RTC__
  return frexpf(x, e);
#else
  return std::frexp(x, e);
#endif
}

KILN_DEVICE float kiln_f8_decode(uint32_t b, int E, int M, int bias, int kind) {
  uint32_t signBit = 1u << (E + M), expAllOnes = (1u << E) - 1;
  float nan = kiln_f32_bits(0x7fc00000u);
  if (kind == 2 && b == signBit)
    return nan;
  uint32_t exp = (b >> M) & expAllOnes, man = b & ((1u << M) - 1);
  bool negative = (b & signBit) != 0;
  if (kind == 0 && exp == expAllOnes)
    return man ? nan : (negative ? kiln_f32_bits(0xff800000u) : kiln_f32_bits(0x7f800000u));
  if (kind == 1 && exp == expAllOnes && man == (1u << M) - 1)
    return nan;
  float v = exp == 0 ? kiln_ldexp(static_cast<float>(man), 1 - bias - M)
                     : kiln_ldexp(static_cast<float>(man + (1u << M)),
                                  static_cast<int>(exp) - bias - M);
  return negative ? -v : v;
}

KILN_DEVICE uint32_t kiln_f8_encode(float v, int E, int M, int bias, int kind, float maxFinite,
                                    bool saturate) {
  uint32_t signBit = 1u << (E + M), expAllOnes = (1u << E) - 1;
  uint32_t nan = kind == 2 ? signBit
                 : kind == 0 ? ((expAllOnes << M) | (1u << (M - 1)))
                             : ((expAllOnes << M) | ((1u << M) - 1));
  if (v != v)
    return kind == 3 ? signBit : nan;
  uint32_t sign = (kiln_bits_f32(v) >> 31) ? signBit : 0u;
  float a = kiln_fabs(v);
  const int emin = 1 - bias;
  auto magnitude = [&](float r) -> uint32_t {
    if (r == 0.0f)
      return kind == 2 ? 0u : sign;
    int ex;
    kiln_frexp(r, &ex);
    int e = ex - 1;
    if (e < emin)
      return sign | static_cast<uint32_t>(kiln_ldexp(r, M - emin));
    return sign | (static_cast<uint32_t>(e + bias) << M) |
           (static_cast<uint32_t>(kiln_ldexp(r, M - e)) - (1u << M));
  };
  bool overflow = a > 3.402823466e38f;
  float rounded = a;
  if (!overflow) {
    int ex;
    kiln_frexp(a, &ex);
    int e = ex - 1 < emin ? emin : ex - 1;
    float q = kiln_ldexp(1.0f, e - M);
    rounded = kiln_round(a / q) * q; // ties to even
    overflow = rounded > maxFinite;
  }
  if (overflow) {
    if (saturate || kind == 3)
      return magnitude(maxFinite);
    return kind == 0 ? (sign | (expAllOnes << M)) : nan;
  }
  return magnitude(rounded);
}

#define KILN_F8_TYPE(name, E, M, bias, kind, maxFinite)                                   \
  struct kiln_##name {                                                                    \
    uint8_t bits;                                                                         \
  };                                                                                      \
  KILN_DEVICE float kiln_load(kiln_##name v) { return kiln_f8_decode(v.bits, E, M, bias, kind); } \
  KILN_DEVICE kiln_##name kiln_to_##name(float v, bool saturate) {                         \
    kiln_##name r;                                                                        \
    r.bits = static_cast<uint8_t>(kiln_f8_encode(v, E, M, bias, kind, maxFinite, saturate)); \
    return r;                                                                             \
  }
KILN_F8_TYPE(f8e4m3fn, 4, 3, 7, 1, 448.0f)
KILN_F8_TYPE(f8e4m3fnuz, 4, 3, 8, 2, 240.0f)
KILN_F8_TYPE(f8e5m2, 5, 2, 15, 0, 57344.0f)
KILN_F8_TYPE(f8e5m2fnuz, 5, 2, 16, 2, 57344.0f)
KILN_F8_TYPE(f4e2m1fn, 2, 1, 1, 3, 6.0f)
#undef KILN_F8_TYPE

//===--- 2- and 4-bit integers: one per byte, the low bits ------------------===//

#define KILN_SUBBYTE_INT(name, T, width)                                                  \
  struct kiln_##name {                                                                    \
    uint8_t bits;                                                                         \
  };                                                                                      \
  KILN_DEVICE T kiln_load(kiln_##name v) {                                                \
    return T(-1) < T(0) ? T(static_cast<int8_t>(v.bits << (8 - width)) >> (8 - width))     \
                        : T(v.bits & ((1u << width) - 1));                                \
  }                                                                                       \
  KILN_DEVICE kiln_##name kiln_to_##name(T v) {                                           \
    kiln_##name r;                                                                        \
    r.bits = static_cast<uint8_t>(static_cast<uint8_t>(v) & ((1u << width) - 1));          \
    return r;                                                                             \
  }
KILN_SUBBYTE_INT(i4, int8_t, 4)
KILN_SUBBYTE_INT(u4, uint8_t, 4)
KILN_SUBBYTE_INT(i2, int8_t, 2)
KILN_SUBBYTE_INT(u2, uint8_t, 2)
#undef KILN_SUBBYTE_INT

//===--- vector access ------------------------------------------------------===//

// N elements moved as one access (128 bits for the widths the emitter picks).
template <typename T, int N> struct alignas(sizeof(T) * N) kiln_vec {
  T x[N];
};
KILN_DEVICE bool kiln_aligned(const void *p, uint64_t bytes) {
  return (reinterpret_cast<uint64_t>(p) % bytes) == 0;
}

//===--- indexing -----------------------------------------------------------===//

KILN_DEVICE int64_t kiln_floordiv(int64_t a, int64_t b) {
  int64_t q = a / b;
  return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}
KILN_DEVICE int64_t kiln_ceildiv(int64_t a, int64_t b) { return -kiln_floordiv(-a, b); }
KILN_DEVICE int64_t kiln_floormod(int64_t a, int64_t b) { return a - kiln_floordiv(a, b) * b; }
KILN_DEVICE int64_t kiln_clamp_index(int64_t i, int64_t n) { return i < 0 ? 0 : (i >= n ? n - 1 : i); }
// ONNX Slice's first position along a dim of size n.
KILN_DEVICE int64_t kiln_slice_start(int64_t start, int64_t step, int64_t n) {
  if (start < 0)
    start = start + n < -1 ? -1 : start + n;
  if (step > 0)
    return start < 0 ? 0 : (start > n ? n : start);
  return start < -1 ? -1 : (start > n - 1 ? n - 1 : start);
}
// ONNX Resize's cubic convolution weight at distance s (coefficient a).
KILN_DEVICE double kiln_cubic_weight(double s, double a) {
  s = s < 0 ? -s : s;
  if (s <= 1)
    return ((a + 2) * s - (a + 3)) * s * s + 1;
  if (s < 2)
    return ((a * s - 5 * a) * s + 8 * a) * s - 4 * a;
  return 0;
}
// ONNX Resize's nearest position of coordinate x: `mode` 0 round_prefer_floor,
// 1 round_prefer_ceil, 2 floor, 3 ceil (the first two round other fractions to
// the nearest integer, where rint and round agree).
KILN_DEVICE double kiln_resize_nearest(double x, int mode) {
  double f = kiln_floor(x);
  switch (mode) {
  case 0: return x - f == 0.5 ? f : kiln_round(x);
  case 1: return x - f == 0.5 ? kiln_ceil(x) : kiln_round(x);
  case 2: return f;
  default: return kiln_ceil(x);
  }
}
// x reflected into [lo, hi] by bouncing off the borders (GridSample's
// reflection padding).
KILN_DEVICE double kiln_reflect_coordinate(double x, double lo, double hi) {
  double range = hi - lo;
  if (range <= 0)
    return lo;
  if (x < lo) {
    double dx = lo - x;
    int64_t n = static_cast<int64_t>(dx / range);
    double r = dx - n * range;
    return n % 2 == 0 ? lo + r : hi - r;
  }
  if (x > hi) {
    double dx = x - hi;
    int64_t n = static_cast<int64_t>(dx / range);
    double r = dx - n * range;
    return n % 2 == 0 ? hi - r : lo + r;
  }
  return x;
}
// Reflection without repeating the edge (ONNX Pad "reflect").
KILN_DEVICE int64_t kiln_reflect_index(int64_t k, int64_t n) {
  if (n == 1)
    return 0;
  int64_t period = 2 * (n - 1);
  k = kiln_floormod(k, period);
  return k >= n ? period - k : k;
}

#ifdef __CUDACC_RTC__
KILN_DEVICE int64_t kiln_thread_index() {
  return static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
}
KILN_DEVICE int64_t kiln_thread_count() { return static_cast<int64_t>(gridDim.x) * blockDim.x; }
#else
KILN_DEVICE int64_t kiln_thread_index() { return blockIdx.x * blockDim.x + threadIdx.x; }
KILN_DEVICE int64_t kiln_thread_count() { return gridDim.x * blockDim.x; }
#endif

//===--- block reductions ---------------------------------------------------===//

// The largest block the generated kernels are launched with.
#define KILN_MAX_BLOCK 256

// Combines every thread's `v` with `f` (associative); `scratch` holds blockDim.x
// values. Correct for any block size, 1 included.
template <typename T, typename F> KILN_DEVICE T kiln_block_reduce(T v, F f, T *scratch) {
  unsigned t = threadIdx.x, n = blockDim.x;
  scratch[t] = v;
  __syncthreads();
  for (unsigned s = 1; s < n; s *= 2) {
    if (t % (2 * s) == 0 && t + s < n)
      scratch[t] = f(scratch[t], scratch[t + s]);
    __syncthreads();
  }
  T r = scratch[0];
  __syncthreads();
  return r;
}

// The overlap (intersection over union) of two boxes as non_max_suppression
// measures it, in double as the reference: corners y1, x1, y2, x2 in either
// order, or x_center, y_center, width, height with `center`.
KILN_DEVICE double kiln_box_iou(double a0, double a1, double a2, double a3, double b0, double b1,
                                double b2, double b3, bool center) {
  double ay1, ax1, ay2, ax2, by1, bx1, by2, bx2;
  if (center) {
    ay1 = a1 - a3 / 2, ax1 = a0 - a2 / 2, ay2 = a1 + a3 / 2, ax2 = a0 + a2 / 2;
    by1 = b1 - b3 / 2, bx1 = b0 - b2 / 2, by2 = b1 + b3 / 2, bx2 = b0 + b2 / 2;
  } else {
    // As std::min and std::max pick (the reference's): the first on ties.
    ay1 = a2 < a0 ? a2 : a0, ax1 = a3 < a1 ? a3 : a1;
    ay2 = a0 < a2 ? a2 : a0, ax2 = a1 < a3 ? a3 : a1;
    by1 = b2 < b0 ? b2 : b0, bx1 = b3 < b1 ? b3 : b1;
    by2 = b0 < b2 ? b2 : b0, bx2 = b1 < b3 ? b3 : b1;
  }
  double top = ay1 < by1 ? by1 : ay1, bottom = by2 < ay2 ? by2 : ay2;
  double left = ax1 < bx1 ? bx1 : ax1, right = bx2 < ax2 ? bx2 : ax2;
  double h = bottom - top, w = right - left;
  h = 0.0 < h ? h : 0.0;
  w = 0.0 < w ? w : 0.0;
  double inter = h * w;
  double areaA = (ay2 - ay1) * (ax2 - ax1), areaB = (by2 - by1) * (bx2 - bx1);
  double uni = areaA + areaB - inter;
  return uni <= 0 ? 0.0 : inter / uni;
}

// The sum of the `v`s of the threads before this one in the block (an
// exclusive prefix sum, in thread order), and the block's total in `*total`;
// `scratch` holds blockDim.x values. Correct for any block size, 1 included.
KILN_DEVICE int64_t kiln_block_exclusive_scan(int64_t v, int64_t *scratch, int64_t *total) {
  unsigned t = threadIdx.x, n = blockDim.x;
  scratch[t] = v;
  __syncthreads();
  // Hillis-Steele: after the round of stride s each slot sums the 2s slots
  // ending at it.
  for (unsigned s = 1; s < n; s *= 2) {
    int64_t add = t >= s ? scratch[t - s] : 0;
    __syncthreads();
    scratch[t] += add;
    __syncthreads();
  }
  int64_t inclusive = scratch[t];
  *total = scratch[n - 1];
  __syncthreads();
  return inclusive - v;
}

// Combines `v` across the 32 lanes of a warp (every lane gets the result). On the
// host a warp is one thread.
template <typename T, typename F> KILN_DEVICE T kiln_warp_reduce(T v, F f) {
#ifdef __CUDACC_RTC__
  for (int offset = 16; offset > 0; offset /= 2)
    v = f(v, __shfl_xor_sync(0xffffffffu, v, offset));
#endif
  return v;
}

#endif // KILN_DEVICE_H
