// kiln_device.h - the device library of kiln's generated kernels.
//
// Generated CUDA C includes this one header. It has two flavors:
//  - CUDA (compiled by NVRTC, __CUDACC_RTC__ defined): needs no other header;
//    half and bfloat16 convert through PTX and bit operations.
//  - host (compiled by the host C++ compiler for host emulation): one thread per
//    block, blocks in a loop (or OpenMP); __global__/__shared__/__syncthreads map
//    to plain C++, and every kernel must be correct for any block size, 1 included.
//    A test mode (KILN_HOST_BLOCK_THREADS) runs blocks of N threads as fibers.
//
// Storage types: f16 and bf16 are stored as kiln_f16/kiln_bf16 (16-bit patterns)
// and computed in float; everything else computes in its own C type.

#ifndef KILN_DEVICE_H
#define KILN_DEVICE_H

// Pastes two tokens after expanding them: a kernel's entry point is its name
// pasted with a tag per symbol a variant's build defines (KILN_ENTRY, the
// kernel sources' own macro; kiln/artifact/EntryName.h).
#define KILN_PASTE_EXPANDED(a, b) a##b
#define KILN_PASTE(a, b) KILN_PASTE_EXPANDED(a, b)

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
// A test mode: N threads per block (KILN_HOST_BLOCK_THREADS=N in the
// environment of a host-emulation compile, and the fake CUDA driver's build
// of each library at its launches' block size). A block's threads run as
// fibers on the launching thread: each runs until it reaches a barrier
// (__syncthreads, or one of a warp's shuffles), and they all go on when every
// thread the barrier waits for is there. __shared__ is one copy the block's
// threads share; blocks run one after another (one at a time per library:
// the statics are the running block's). Between two barriers the threads run
// one after another, in ascending order and descending in turn (the order
// flips every block and every launch), so a thread that reads another's write
// without a barrier between them reads it in one order and, in the other, the
// value before it (which an earlier block or launch may have left right: the
// shared arrays are not cleared). A barrier that not every thread reaches
// (one has returned, or waits at a barrier of the other kind) is a fault, as
// it is undefined on a GPU (it hangs or races there): the block stops and
// kiln_host_block_fault says what each thread did. Barriers are matched by
// kind, not by place: threads at two different __syncthreads go on together. With N a multiple of 32
// the block is whole warps and the kernels take their warp paths: a shuffle
// is a store to the lane's slot, a barrier of the warp's 32 lanes, a load of
// the partner's slot and another barrier (every lane of a warp shuffles
// together, as __shfl_xor_sync with a full mask requires on a GPU).
#if KILN_HOST_BLOCK_THREADS < 1 || KILN_HOST_BLOCK_THREADS > 256
#error "KILN_HOST_BLOCK_THREADS must be 1 to 256"
#endif
#define KILN_HOST_WARPS (KILN_HOST_BLOCK_THREADS % 32 == 0)
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <sys/mman.h>
#ifndef __x86_64__
#include <ucontext.h>
#endif
#define __shared__ static
static kiln_dim3 blockIdx = {0}, gridDim = {1}, threadIdx = {0};
static const kiln_dim3 blockDim = {KILN_HOST_BLOCK_THREADS};
extern "C" {
// The last barrier fault of a launch ("" when none). A caller that reads it
// (the fake CUDA driver) sets kiln_host_block_fault_checked and clears it;
// unread, a fault is printed and the process aborts: its results are wrong.
__attribute__((weak, visibility("default"))) char kiln_host_block_fault[256];
__attribute__((weak, visibility("default"))) int kiln_host_block_fault_checked;
}
enum { KILN_FIBER_RUNS, KILN_FIBER_AT_SYNCTHREADS, KILN_FIBER_AT_SHUFFLE, KILN_FIBER_RETURNED };
// Each fiber's stack, above a guard of at least a page (an overflow faults,
// not corrupts): 64 KiB covers the largest pages Linux hosts use.
static const size_t kiln_fiber_stack_bytes = 256 << 10, kiln_fiber_guard_bytes = 64 << 10;
struct kiln_fiber {
#ifdef __x86_64__
  void *sp; // its saved stack pointer, the callee-saved registers below it
#else
  ucontext_t context;
#endif
  int state;
};
static kiln_fiber kiln_fibers[KILN_HOST_BLOCK_THREADS];
static char *kiln_fiber_stacks;
static int kiln_running;
static void (*kiln_block_body)(void *);
static void *kiln_block_closure;
static uint64_t kiln_warp_words[KILN_HOST_BLOCK_THREADS];
static std::mutex kiln_block_lock;
#ifdef __x86_64__
// Saves the callee-saved registers on the current stack and its pointer in
// *save, then resumes the stack at `load` (the System V ABI's callee-saved
// set; kernels change neither MXCSR nor the x87 control word).
extern "C" __attribute__((visibility("hidden"))) void kiln_fiber_swap(void **save, void *load);
__asm__(".text\n.p2align 4\n.weak kiln_fiber_swap\n.hidden kiln_fiber_swap\n"
        ".type kiln_fiber_swap,@function\nkiln_fiber_swap:\n"
        "pushq %rbp\npushq %rbx\npushq %r12\npushq %r13\npushq %r14\npushq %r15\n"
        "movq %rsp, (%rdi)\nmovq %rsi, %rsp\n"
        "popq %r15\npopq %r14\npopq %r13\npopq %r12\npopq %rbx\npopq %rbp\nret\n"
        ".size kiln_fiber_swap, .-kiln_fiber_swap\n");
static void *kiln_scheduler_sp;
#else
static ucontext_t kiln_scheduler_context;
#endif
static void kiln_fiber_main() {
  kiln_block_body(kiln_block_closure);
  kiln_fibers[kiln_running].state = KILN_FIBER_RETURNED;
#ifdef __x86_64__
  kiln_fiber_swap(&kiln_fibers[kiln_running].sp, kiln_scheduler_sp);
  __builtin_unreachable();
#endif
}
// The running thread stops at a barrier until the scheduler releases it.
static void kiln_fiber_wait(int state) {
  kiln_fiber &self = kiln_fibers[kiln_running];
  self.state = state;
#ifdef __x86_64__
  kiln_fiber_swap(&self.sp, kiln_scheduler_sp);
#else
  swapcontext(&self.context, &kiln_scheduler_context);
#endif
  // Other threads wrote memory (shared arrays, shuffle slots, threadIdx) meanwhile.
  __asm__ __volatile__("" ::: "memory");
}
static inline void __syncthreads() { kiln_fiber_wait(KILN_FIBER_AT_SYNCTHREADS); }
// Thread t starts at the top of its stack, in kiln_fiber_main.
static void kiln_fiber_start(int t) {
  char *top = kiln_fiber_stacks + static_cast<size_t>(t + 1) * (kiln_fiber_stack_bytes + kiln_fiber_guard_bytes);
  kiln_fiber &f = kiln_fibers[t];
  f.state = KILN_FIBER_RUNS;
#ifdef __x86_64__
  // kiln_fiber_swap's `ret` pops kiln_fiber_main from a 16-byte-aligned slot,
  // so the function starts with the stack as a call leaves it.
  void **slot = reinterpret_cast<void **>((reinterpret_cast<uintptr_t>(top) & ~uintptr_t(15)) - 16);
  slot[1] = nullptr;
  slot[0] = reinterpret_cast<void *>(&kiln_fiber_main);
  for (int r = 1; r <= 6; ++r)
    slot[-r] = nullptr;
  f.sp = slot - 6;
#else
  getcontext(&f.context);
  f.context.uc_stack.ss_sp = top - kiln_fiber_stack_bytes;
  f.context.uc_stack.ss_size = kiln_fiber_stack_bytes;
  f.context.uc_link = &kiln_scheduler_context;
  makecontext(&f.context, kiln_fiber_main, 0);
#endif
}
static void kiln_fiber_resume(int t) {
  threadIdx.x = t;
  kiln_running = t;
#ifdef __x86_64__
  kiln_fiber_swap(&kiln_scheduler_sp, kiln_fibers[t].sp);
#else
  swapcontext(&kiln_scheduler_context, &kiln_fibers[t].context);
  if (kiln_fibers[t].state == KILN_FIBER_RUNS) // it returned through uc_link
    kiln_fibers[t].state = KILN_FIBER_RETURNED;
#endif
}
// Runs block blockIdx.x to its end; false (kiln_host_block_fault set) when
// its threads do not meet at a barrier.
static bool kiln_run_block(bool descending) {
  const int n = KILN_HOST_BLOCK_THREADS;
  for (int t = 0; t < n; ++t)
    kiln_fiber_start(t);
  for (;;) {
    for (int i = 0; i < n; ++i) {
      int t = descending ? n - 1 - i : i;
      if (kiln_fibers[t].state == KILN_FIBER_RUNS)
        kiln_fiber_resume(t);
    }
    int counts[4] = {0, 0, 0, 0};
    for (int t = 0; t < n; ++t)
      ++counts[kiln_fibers[t].state];
    if (counts[KILN_FIBER_RETURNED] == n)
      return true;
    bool released = false;
    if (counts[KILN_FIBER_AT_SYNCTHREADS] == n) {
      for (int t = 0; t < n; ++t)
        kiln_fibers[t].state = KILN_FIBER_RUNS;
      released = true;
    }
    for (int w = 0; KILN_HOST_WARPS && w < n / 32; ++w) {
      bool whole = true;
      for (int l = 0; l < 32; ++l)
        whole = whole && kiln_fibers[w * 32 + l].state == KILN_FIBER_AT_SHUFFLE;
      for (int l = 0; whole && l < 32; ++l)
        kiln_fibers[w * 32 + l].state = KILN_FIBER_RUNS;
      released = released || whole;
    }
    if (released)
      continue;
    std::snprintf(kiln_host_block_fault, sizeof kiln_host_block_fault,
                  "block %lld of %d threads: %d wait at __syncthreads, %d at a warp shuffle, "
                  "%d have returned",
                  static_cast<long long>(blockIdx.x), n, counts[KILN_FIBER_AT_SYNCTHREADS],
                  counts[KILN_FIBER_AT_SHUFFLE], counts[KILN_FIBER_RETURNED]);
    if (!kiln_host_block_fault_checked) {
      std::fprintf(stderr, "kiln_device: a barrier not every thread reaches: %s\n",
                   kiln_host_block_fault);
      std::abort();
    }
    return false;
  }
}
// Runs `body` as `grid` blocks of KILN_HOST_BLOCK_THREADS threads, in order.
template <typename F> static void kiln_run_blocks(int64_t grid, F body) {
  std::lock_guard<std::mutex> lock(kiln_block_lock);
  if (!kiln_fiber_stacks) {
    const size_t stride = kiln_fiber_stack_bytes + kiln_fiber_guard_bytes;
    void *m = mmap(nullptr, stride * KILN_HOST_BLOCK_THREADS + kiln_fiber_guard_bytes,
                   PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (m == MAP_FAILED) {
      std::fprintf(stderr, "kiln_device: cannot map the stacks of %d threads\n",
                   KILN_HOST_BLOCK_THREADS);
      std::abort();
    }
    kiln_fiber_stacks = static_cast<char *>(m);
    for (int t = 0; t < KILN_HOST_BLOCK_THREADS; ++t) // the guard below each stack
      if (mprotect(kiln_fiber_stacks + t * stride, kiln_fiber_guard_bytes, PROT_NONE) != 0) {
        std::fprintf(stderr, "kiln_device: cannot protect the guard of thread %d's stack\n", t);
        std::abort();
      }
  }
  kiln_block_body = [](void *closure) { (*static_cast<F *>(closure))(); };
  kiln_block_closure = &body;
  gridDim.x = grid;
  // The order flips every block, and every launch (so a grid of one block
  // runs both ways over a suite's launches).
  static unsigned launches = 0;
  ++launches;
  for (int64_t b = 0; b < grid; ++b) {
    blockIdx.x = b;
    if (!kiln_run_block((b + launches) % 2 == 1))
      return;
  }
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

// Byte I (0-3) of `w` as the float 2^23 + byte, exactly: the byte under the
// exponent of 2^23, `magic` (0x4B000000: one PRMT on a device, no conversion
// instruction). matmul_nbits' kernel turns a packed code into a float so,
// then subtracts 2^23 and the zero point at once. The kernel computes
// `magic` from a value ptxas cannot fold (kiln_opaque_zero): with a constant
// there, ptxas makes it the PRMT's immediate and the selector a register, a
// MOV per byte.
template <int I> KILN_DEVICE float kiln_byte_float(uint32_t w, uint32_t magic) {
  static_assert(I >= 0 && I < 4, "a word has four bytes");
#ifdef __CUDACC_RTC__
  return __uint_as_float(__byte_perm(w, magic, 0x7650 | I));
#else
  return kiln_f32_bits(magic | ((w >> (8 * I)) & 0xFFu));
#endif
}
// 0, from a pointer's top bit (0 for every address a process has), which no
// compiler can know: keeps a constant combined with it out of immediates.
KILN_DEVICE uint32_t kiln_opaque_zero(const void *p) {
  return static_cast<uint32_t>(reinterpret_cast<unsigned long long>(p) >> 63);
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

//===--- float sine, cosine and tangent -------------------------------------===//
// libm's sinf/cosf/tanf reduce an argument past 105615 through a small array
// that the compiler leaves in a kernel's local memory whenever it does not
// unroll it away (tools/sass-lint.py's local rule). kiln's own reduce by pi/2
// in registers: below 2^23 Cody-Waite with pi/2 in three parts (k * P1 and
// k * P2 exact), above it Payne-Hanek on 96 bits of 2/pi's expansion in
// 128-bit integers (the bits before the window only add multiples of 4; the
// ones after it, less than 2^-70). The reduced argument, in [-pi/4, pi/4],
// goes through Taylor polynomials in double (error below 1e-11, far under
// half a float ulp) and is rounded once. Host emulation runs the same code,
// so the reference checks it (test/run/trig-kernels.test).

// Word i (most significant first) of 2/pi's binary fraction after 64 zero
// bits: a switch, so the words are immediates, never a table in memory.
KILN_DEVICE uint32_t kiln_two_over_pi_word(int i) {
  switch (i) {
  case 2: return 0xA2F9836Eu;
  case 3: return 0x4E441529u;
  case 4: return 0xFC2757D1u;
  case 5: return 0xF534DDC0u;
  case 6: return 0xDB629599u;
  case 7: return 0x3C439041u;
  case 8: return 0xFE5163ABu;
  case 9: return 0xDEBBC561u;
  case 10: return 0xB7246E3Au;
  case 11: return 0x424DD2E0u;
  default: return 0u;
  }
}

// |x| - q pi/2 for the quadrant q (mod 4) that leaves it in [-pi/4, pi/4];
// x finite.
KILN_DEVICE double kiln_reduce_half_pi(float x, int &quadrant) {
  const double d = kiln_fabs(static_cast<double>(x));
  if (d < 8388608.0) {
    const double k = kiln_round(d * 0.63661977236758134308);
    quadrant = static_cast<int>(static_cast<int64_t>(k) & 3);
    return ((d - k * 1.5707963276654482) - k * -8.705515692000731e-10) - k * -3.50343439808993e-19;
  }
  // |x| = m 2^e with e >= 0: x 2/pi mod 4 is m times the 96 bits of 2/pi
  // from bit e - 2 of its fraction on (bit e + 62 of the padded expansion),
  // scaled by 2^-94.
  const uint32_t bits = kiln_bits_f32(x) & 0x7fffffffu;
  const int e = static_cast<int>(bits >> 23) - 150;
  const uint64_t m = (bits & 0x7fffffu) | 0x800000u;
  const int start = e + 62, word = start >> 5, shift = start & 31;
  unsigned __int128 window = 0;
  for (int w = 0; w < 4; ++w)
    window = (window << 32) | kiln_two_over_pi_word(word + w);
  window = (window << shift) >> 32;
  const unsigned __int128 product = static_cast<unsigned __int128>(m) * window;
  quadrant = static_cast<int>(static_cast<uint64_t>(product >> 94) & 3u);
  const unsigned __int128 fractionBits = product & ((static_cast<unsigned __int128>(1) << 94) - 1u);
  double fraction = static_cast<double>(static_cast<uint64_t>(fractionBits >> 30)) * 5.421010862427522e-20;
  if (fraction >= 0.5) {
    fraction -= 1.0;
    quadrant = (quadrant + 1) & 3;
  }
  return fraction * 1.5707963267948966;
}
KILN_DEVICE double kiln_sin_poly(double r) {
  const double r2 = r * r;
  return r + r * r2 * (-1.0 / 6 + r2 * (1.0 / 120 + r2 * (-1.0 / 5040 + r2 * (1.0 / 362880 +
                        r2 * (-1.0 / 39916800 + r2 * (1.0 / 6227020800.0))))));
}
KILN_DEVICE double kiln_cos_poly(double r) {
  const double r2 = r * r;
  return 1.0 + r2 * (-0.5 + r2 * (1.0 / 24 + r2 * (-1.0 / 720 + r2 * (1.0 / 40320 +
                   r2 * (-1.0 / 3628800 + r2 * (1.0 / 479001600.0))))));
}
// kind 0: sine, 1: cosine, 2: tangent.
KILN_DEVICE float kiln_trig(float x, int kind) {
  if (!(kiln_fabs(x) <= 3.40282347e38f))
    return x - x; // NaN for NaN and the infinities
  int q = 0;
  const double r = kiln_reduce_half_pi(x, q);
  const double s = kiln_sin_poly(r), c = kiln_cos_poly(r);
  const double sign = x < 0 ? -1.0 : 1.0;
  double v;
  if (kind == 0)
    v = sign * (q == 0 ? s : q == 1 ? c : q == 2 ? -s : -c);
  else if (kind == 1)
    v = q == 0 ? c : q == 1 ? -s : q == 2 ? -c : s;
  else
    v = sign * ((q & 1) ? -c / s : s / c);
  return static_cast<float>(v);
}
#if defined(__CUDACC_RTC__) && defined(KILN_FAST_MATH)
KILN_DEVICE float kiln_sin(float x) { return __sinf(x); }
KILN_DEVICE float kiln_cos(float x) { return __cosf(x); }
KILN_DEVICE float kiln_tan(float x) { return __tanf(x); }
#else
KILN_DEVICE float kiln_sin(float x) { return kiln_trig(x, 0); }
KILN_DEVICE float kiln_cos(float x) { return kiln_trig(x, 1); }
KILN_DEVICE float kiln_tan(float x) { return kiln_trig(x, 2); }
#endif
#ifdef __CUDACC_RTC__
KILN_DEVICE double kiln_sin(double x) { return sin(x); }
KILN_DEVICE double kiln_cos(double x) { return cos(x); }
KILN_DEVICE double kiln_tan(double x) { return tan(x); }
#else
KILN_DEVICE double kiln_sin(double x) { return std::sin(x); }
KILN_DEVICE double kiln_cos(double x) { return std::cos(x); }
KILN_DEVICE double kiln_tan(double x) { return std::tan(x); }
#endif
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

// A float as an unsigned key in its order (a larger float, a larger key; -0
// and +0 one key, as they compare equal), and back: kiln.sample_tokens
// bisects the keys, bit by bit, to find its thresholds exactly.
KILN_DEVICE uint32_t kiln_order_key(float x) {
  uint32_t u = x == 0.0f ? 0u : kiln_bits_f32(x);
  return (u & 0x80000000u) ? ~u : (u | 0x80000000u);
}
KILN_DEVICE float kiln_order_value(uint32_t key) {
  return kiln_f32_bits((key & 0x80000000u) ? (key & 0x7fffffffu) : ~key);
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
#define KILN_ERROR_MISALIGNED 4

KILN_DEVICE void kiln_report_error(int32_t *word, int32_t code) {
#ifdef __CUDACC_RTC__
  atomicCAS(reinterpret_cast<int *>(word), 0, code);
#else
  int32_t expected = 0;
  __atomic_compare_exchange_n(word, &expected, code, false, __ATOMIC_RELAXED, __ATOMIC_RELAXED);
#endif
}

// Kernels that split an item's work across blocks (attention's keys, at
// decode sizes) meet in the kernel scratch (Kernel.scratch_bytes, a buffer the
// runtime keeps zeroed between launches): each block stores its partial
// result there, then counts itself in at the item's counter; the block that
// counts last combines the partials, and clears what it read and the counter.
// kiln_fence: orders this thread's stores before, and its loads after, the
// count (every thread of a block calls it after its stores and before the
// barrier that precedes the count; the last block calls it again before it
// reads). kiln_arrive: one thread's increment of the counter; the count
// before it.
KILN_DEVICE void kiln_fence() {
#ifdef __CUDACC_RTC__
  __threadfence();
#else
  __atomic_thread_fence(__ATOMIC_SEQ_CST);
#endif
}
KILN_DEVICE int kiln_arrive(int *counter) {
#ifdef __CUDACC_RTC__
  return atomicAdd(counter, 1);
#else
  return __atomic_fetch_add(counter, 1, __ATOMIC_ACQ_REL);
#endif
}
// A load of what other blocks of this launch stored: volatile, so not from a
// line L1 kept from before their stores.
template <typename T> KILN_DEVICE T kiln_load_fresh(const T *p) {
  return *static_cast<const volatile T *>(p);
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
  // A bool (the only T where T(2) == T(1)) is one bit wide: a shift by 1 moves
  // it out, as the reference computes it; T(a << b) would keep it true.
  const uint64_t bits = T(2) == T(1) ? 1 : sizeof(T) * 8;
  return static_cast<uint64_t>(b) >= bits ? T(0) : T(a << b);
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
    if (kiln_f8_hardware_encode(E, kind, saturate)) {                                     \
      r.bits = kiln_e4m3_satfinite(v);                                                    \
      return r;                                                                           \
    }                                                                                     \
    r.bits = static_cast<uint8_t>(kiln_f8_encode(v, E, M, bias, kind, maxFinite, saturate)); \
    return r;                                                                             \
  }
// sm_89 and newer convert fp32 to OCP e4m3 in one instruction (round to
// nearest even, saturating to +-448, NaN kept: what the software encoding does
// with `saturate`); FP8 matmuls quantize their activations through it.
KILN_DEVICE constexpr bool kiln_f8_hardware_encode(int E, int kind, bool saturate) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 890
  return E == 4 && kind == 1 && saturate;
#else
  return false && E == 4 && kind == 1 && saturate;
#endif
}
KILN_DEVICE uint8_t kiln_e4m3_satfinite(float v) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 890
  unsigned short pair; // the upper byte converts the 0.0f, the lower byte v
  asm("{cvt.rn.satfinite.e4m3x2.f32 %0, %2, %1;}\n" : "=h"(pair) : "f"(v), "f"(0.0f));
  return static_cast<uint8_t>(pair & 0xff);
#else
  return static_cast<uint8_t>(v * 0); // never called: kiln_f8_hardware_encode is false here
#endif
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
// Stores `v` at `p` (aligned to the vector) in 128-bit pieces. Lanes read
// from shared memory and stored to global memory are a copy NVVM recognizes
// and lowers at the shared side's alignment (4 bytes: a tile row is padded),
// one store a lane; the store is written out so it stays one.
template <typename T, int N> KILN_DEVICE void kiln_store_vec(T *p, const kiln_vec<T, N> &v) {
#ifdef __CUDACC_RTC__
  static_assert(sizeof(v) % 16 == 0, "kiln_store_vec moves whole 128-bit pieces");
  const unsigned *w = reinterpret_cast<const unsigned *>(&v);
  for (int k = 0; k < static_cast<int>(sizeof(v) / 16); ++k)
    asm volatile("{\n\t.reg .u64 g;\n\tcvta.to.global.u64 g, %0;\n\t"
                 "st.global.v4.b32 [g], {%1, %2, %3, %4};\n\t}"
                 :
                 : "l"(reinterpret_cast<char *>(p) + 16 * k), "r"(w[4 * k]), "r"(w[4 * k + 1]),
                   "r"(w[4 * k + 2]), "r"(w[4 * k + 3])
                 : "memory");
#else
  *reinterpret_cast<kiln_vec<T, N> *>(p) = v;
#endif
}
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
// Division of a non-negative index by a dim known only at run time, without a
// divide per element: the kernel builds one kiln_divisor per such dim before its
// loops (the one 128-bit divide is there), and each divide in the loops is a
// 64-bit multiply-high, an add and a shift (Granlund & Montgomery, "Division by
// invariant integers using multiplication", figure 4.1): for 1 <= d < 2^63,
// l = ceil(log2 d) and m = floor(2^64 (2^l - d) / d) + 1 < 2^64,
// floor(n / d) = (mulhi(m, n) + n) >> l for every 0 <= n < 2^63 (the sum
// cannot overflow there, which lets it skip the figure's halving step; d = 1
// gives m = 1, l = 0). Two words a divisor, no branch. Indices are never
// negative; a dim of 0 (a loop over no elements never divides) divides as 1.
// A divisor the compiler knows (a variant's KILN_SYM_*) folds.
KILN_DEVICE uint64_t kiln_umulhi64(uint64_t a, uint64_t b) {
#ifdef __CUDACC_RTC__
  return __umul64hi(a, b);
#else
  return static_cast<uint64_t>((static_cast<unsigned __int128>(a) * b) >> 64);
#endif
}
KILN_DEVICE uint32_t kiln_clz64(uint64_t v) {
#ifdef __CUDACC_RTC__
  return static_cast<uint32_t>(__clzll(static_cast<long long>(v)));
#else
  return v ? static_cast<uint32_t>(__builtin_clzll(v)) : 64u;
#endif
}
struct kiln_divisor {
  uint64_t m;
  uint32_t l;
#ifdef __CUDACC_RTC__
  __device__ __forceinline__
#endif
  explicit kiln_divisor(int64_t divisor) {
    const uint64_t d = divisor > 1 ? static_cast<uint64_t>(divisor) : 1u;
    l = d > 1 ? 64u - kiln_clz64(d - 1) : 0u;
    m = static_cast<uint64_t>(((static_cast<unsigned __int128>((uint64_t(1) << l) - d) << 64) / d) + 1u);
  }
#ifdef __CUDACC_RTC__
  __device__ __forceinline__
#endif
  int64_t div(int64_t n) const {
    return static_cast<int64_t>((kiln_umulhi64(m, static_cast<uint64_t>(n)) + static_cast<uint64_t>(n)) >> l);
  }
};
// A divisor in a shape-bucket variant's 32-bit body (GeneratedKernel's
// index32Sizes): the variant's sizes are constants, so a plain divide is the
// compiler's own 32-bit multiply-high. A dim of 0 divides as 1, as above.
struct kiln_divisor32 {
  int32_t d;
#ifdef __CUDACC_RTC__
  __device__ __forceinline__
#endif
  explicit kiln_divisor32(int64_t divisor) : d(divisor > 1 ? static_cast<int32_t>(divisor) : 1) {}
#ifdef __CUDACC_RTC__
  __device__ __forceinline__
#endif
  int32_t div(int32_t n) const { return n / d; }
};
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
// Loops whose bounds are constants unroll on the device (their arrays then
// live in registers); the host compiler decides alone.
// KILN_HALF_OCCUPANCY holds a kernel to the registers that let half an SM's
// 2048 threads run at KILN_MAX_BLOCK threads per block (64 per thread).
#ifdef __CUDACC_RTC__
#define KILN_UNROLL _Pragma("unroll")
#define KILN_HALF_OCCUPANCY __launch_bounds__(KILN_MAX_BLOCK, 1024 / KILN_MAX_BLOCK)
#else
#define KILN_UNROLL
#define KILN_HALF_OCCUPANCY
#endif

// A warp's lanes exchange values of any type up to 8 bytes (bool, integers,
// float, double) as the bits of a 64-bit word.
template <typename T> KILN_DEVICE T kiln_shfl_xor(T v, int offset) {
#ifdef __CUDACC_RTC__
  static_assert(sizeof(T) <= 8, "kiln_shfl_xor moves at most 8 bytes");
  unsigned long long bits = 0;
  memcpy(&bits, &v, sizeof(T));
  bits = __shfl_xor_sync(0xffffffffu, bits, offset);
  T r;
  memcpy(&r, &bits, sizeof(T));
  return r;
#elif defined(KILN_HOST_BLOCK_THREADS)
  if (!KILN_HOST_WARPS)
    return v;
  static_assert(sizeof(T) <= 8, "kiln_shfl_xor moves at most 8 bytes");
  unsigned t = static_cast<unsigned>(threadIdx.x);
  uint64_t bits = 0;
  memcpy(&bits, &v, sizeof(T));
  kiln_warp_words[t] = bits;
  kiln_fiber_wait(KILN_FIBER_AT_SHUFFLE);
  bits = kiln_warp_words[t ^ static_cast<unsigned>(offset)];
  kiln_fiber_wait(KILN_FIBER_AT_SHUFFLE);
  T r;
  memcpy(&r, &bits, sizeof(T));
  return r;
#else
  (void)offset;
  return v;
#endif
}
// A warp's 16x8x16 product on tensor cores, d += a b, operands bf16 (or f16
// with kF16) and sums fp32, in mma.sync.m16n8k16's fragments: lane L holds
// of the row-major 16x16 `a` four words of two values, rows L/4 and L/4 + 8
// by columns 2 (L % 4) + {0, 1} and 2 (L % 4) + {8, 9} (a[0]: row L/4,
// columns +{0, 1}; a[1]: row L/4 + 8; a[2], a[3]: the columns +{8, 9}), of
// the column-major 16x8 `b` two words, rows 2 (L % 4) + {0, 1} and
// + {8, 9} of column L/4, and of the 16x8 `d` rows L/4 and L/4 + 8 by
// columns 2 (L % 4) + {0, 1} (d[0], d[1]; d[2], d[3]). Every lane of a full
// warp calls it together. On a device sm_80 or newer (the callers test
// __CUDA_ARCH__); in host emulation's blocks of whole warps each lane posts
// its fragments, as a shuffle does, and sums its four results' products
// exactly (in double) onto d, rounding once: the tensor cores' order of
// additions is not IEEE's, so results agree to fp32 rounding, not bits.
#if defined(__CUDACC_RTC__)
#if __CUDA_ARCH__ >= 800
template <bool kF16> KILN_DEVICE void kiln_mma_16816(float d[4], const uint32_t a[4],
                                                     const uint32_t b[2]) {
  if (kF16)
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, "
                 "{%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
  else
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, "
                 "{%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}
// Two floats as the bf16 (or f16) pair of one fragment word, `lo` in the low
// half, rounded to nearest even.
template <bool kF16> KILN_DEVICE uint32_t kiln_pack_pair(float lo, float hi) {
  uint32_t r;
  if (kF16)
    asm("cvt.rn.f16x2.f32 %0, %1, %2;" : "=r"(r) : "f"(hi), "f"(lo));
  else
    asm("cvt.rn.bf16x2.f32 %0, %1, %2;" : "=r"(r) : "f"(hi), "f"(lo));
  return r;
}
#endif
#else
template <bool kF16> KILN_DEVICE uint32_t kiln_pack_pair(float lo, float hi) {
  if (kF16)
    return static_cast<uint32_t>(kiln_to_f16(lo).bits) |
           static_cast<uint32_t>(kiln_to_f16(hi).bits) << 16;
  return static_cast<uint32_t>(kiln_to_bf16(lo).bits) |
         static_cast<uint32_t>(kiln_to_bf16(hi).bits) << 16;
}
#endif
#if !defined(__CUDACC_RTC__) || __CUDA_ARCH__ >= 800
// Value `half` (0 low, 1 high) of a fragment word as a float (exact).
template <bool kF16> KILN_DEVICE float kiln_pair_float(uint32_t word, int half) {
  uint16_t bits = static_cast<uint16_t>(half ? word >> 16 : word & 0xFFFFu);
  if (kF16) {
    kiln_f16 h;
    h.bits = bits;
    return kiln_load(h);
  }
  return kiln_f32_bits(static_cast<uint32_t>(bits) << 16);
}
// What kiln_pack_pair(lo, hi) leaves of the two floats, as a fragment word
// of its own (the remainders rounded): the two words sum to the pair to some
// 16 significant bits where one bf16 word keeps 8. A product taken with each
// (two mma's) keeps attention's softmax weights that exact, whose bf16
// rounding alone would be as large as the output's.
template <bool kF16> KILN_DEVICE uint32_t kiln_pack_rest(float lo, float hi) {
  uint32_t big = kiln_pack_pair<kF16>(lo, hi);
  return kiln_pack_pair<kF16>(lo - kiln_pair_float<kF16>(big, 0), hi - kiln_pair_float<kF16>(big, 1));
}
#endif
#if !defined(__CUDACC_RTC__)
#if defined(KILN_HOST_BLOCK_THREADS)
static uint32_t kiln_mma_words[KILN_HOST_BLOCK_THREADS][6];
#endif
template <bool kF16> KILN_DEVICE void kiln_mma_16816(float d[4], const uint32_t a[4],
                                                     const uint32_t b[2]) {
#if defined(KILN_HOST_BLOCK_THREADS)
  if (!KILN_HOST_WARPS)
    return; // no warps: callers take their other path
  unsigned t = static_cast<unsigned>(threadIdx.x), warp = t & ~31u, lane = t & 31u;
  for (int i = 0; i < 4; ++i)
    kiln_mma_words[t][i] = a[i];
  kiln_mma_words[t][4] = b[0];
  kiln_mma_words[t][5] = b[1];
  kiln_fiber_wait(KILN_FIBER_AT_SHUFFLE);
  // A(row, k) and B(k, column) from the lanes that hold them.
  auto A = [&](unsigned row, unsigned k) {
    unsigned from = warp + (row & 7u) * 4u + ((k & 7u) >> 1);
    return static_cast<double>(kiln_pair_float<kF16>(
        kiln_mma_words[from][(row >= 8 ? 1 : 0) + (k >= 8 ? 2 : 0)], static_cast<int>(k & 1u)));
  };
  auto B = [&](unsigned k, unsigned column) {
    unsigned from = warp + column * 4u + ((k & 7u) >> 1);
    return static_cast<double>(
        kiln_pair_float<kF16>(kiln_mma_words[from][4 + (k >= 8 ? 1 : 0)], static_cast<int>(k & 1u)));
  };
  for (int i = 0; i < 4; ++i) {
    unsigned row = lane / 4 + (i >= 2 ? 8 : 0), column = 2 * (lane % 4) + (i & 1);
    double sum = 0;
    for (unsigned k = 0; k < 16; ++k)
      sum += A(row, k) * B(k, column);
    d[i] = static_cast<float>(static_cast<double>(d[i]) + sum);
  }
  kiln_fiber_wait(KILN_FIBER_AT_SHUFFLE);
#else
  (void)d;
  (void)a;
  (void)b; // one thread a block: callers take their other path
#endif
}
#endif

// Every lane of a full warp gets the reduction of the warp's values (a
// butterfly of shuffles). Host emulation with one thread per block: a no-op.
template <typename T, typename F> KILN_DEVICE T kiln_warp_reduce(T v, F f) {
#if defined(__CUDACC_RTC__) || defined(KILN_HOST_BLOCK_THREADS)
  for (int offset = 16; offset > 0; offset /= 2)
    v = f(v, kiln_shfl_xor(v, offset));
#endif
  return v;
}
// Combines every thread's `v` with `f` (associative); `scratch` holds blockDim.x
// values. Correct for any block size, 1 included, and every thread of the
// block gets the result. On a device with whole warps: shuffles within each warp, one shared-memory
// slot per warp, one barrier, and each thread combines the warps' partials
// (broadcast reads). Otherwise (host emulation's threaded blocks, a block
// size that is not whole warps) a tree over shared memory whose strides are
// powers of two, tested with a mask: no integer divide.
template <typename T, typename F> KILN_DEVICE T kiln_block_reduce(T v, F f, T *scratch) {
  unsigned t = threadIdx.x, n = blockDim.x;
#if defined(__CUDACC_RTC__) || defined(KILN_HOST_BLOCK_THREADS)
  if ((n & 31u) == 0) {
    v = kiln_warp_reduce(v, f);
    if ((t & 31u) == 0)
      scratch[t >> 5] = v;
    __syncthreads();
    T r = scratch[0];
    for (unsigned w = 1; w < (n >> 5); ++w)
      r = f(r, scratch[w]);
    __syncthreads();
    return r;
  }
#endif
  scratch[t] = v;
  __syncthreads();
  for (unsigned s = 1; s < n; s *= 2) {
    if ((t & (2 * s - 1)) == 0 && t + s < n)
      scratch[t] = f(scratch[t], scratch[t + s]);
    __syncthreads();
  }
  T r = scratch[0];
  __syncthreads();
  return r;
}

// Combines `v` over each group of G whole warps (G a power of two that divides
// the block's warps; a row kernel's vector path gives each row a group):
// shuffles within each warp, one shared-memory slot per warp, one barrier,
// and each thread combines its group's partials. Every thread of the block
// calls it, the same number of times (its two barriers); `scratch` holds
// blockDim.x / 32 values. Needs whole warps (a device, or host emulation's
// threaded blocks).
template <int G, typename T, typename F> KILN_DEVICE T kiln_group_reduce(T v, F f, T *scratch) {
  const unsigned warp = threadIdx.x >> 5;
  v = kiln_warp_reduce(v, f);
  if ((threadIdx.x & 31u) == 0)
    scratch[warp] = v;
  __syncthreads();
  const unsigned first = warp & ~static_cast<unsigned>(G - 1);
  T r = scratch[first];
  for (unsigned w = 1; w < static_cast<unsigned>(G); ++w)
    r = f(r, scratch[first + w]);
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

#endif // KILN_DEVICE_H
