//===- FakeElements.h - element loads and stores for the library doubles --===//
//
// The cuBLASLt and cuDNN doubles compute in double and read and write their
// operands as the libraries' data types say: fp32, fp64, fp16 and bf16
// (rounded to nearest even, as the real libraries store them). Their work goes
// to the fake driver's stream through `submit`: run now, or recorded into a
// graph while the stream captures.
//===----------------------------------------------------------------------===//

#ifndef KILN_TEST_FAKE_ELEMENTS_H
#define KILN_TEST_FAKE_ELEMENTS_H

#include <cmath>
#include <cstdint>
#include <cstring>
#include <dlfcn.h>
#include <functional>

namespace fake {

/// Runs `work` on `stream` as the fake driver (libcuda.so.1, already loaded
/// by the runtime) says: in order on the stream's worker, or when the graph a
/// capture of the stream recorded it into is launched. Without that driver,
/// now. The work must own copies of what it reads from the call's
/// descriptors (a graph outlives them), and reaches device memory through
/// hostView. Returns the driver's CUresult (0: queued).
inline int submit(void *stream, std::function<void()> work) {
  using Submit = int (*)(void *, void (*)(void *), void (*)(void *), void *);
  static Submit driverSubmit = [] {
    void *driver = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
    return driver ? reinterpret_cast<Submit>(dlsym(driver, "kiln_fake_cuda_submit")) : nullptr;
  }();
  if (!driverSubmit) {
    work();
    return 0;
  }
  return driverSubmit(
      stream, [](void *p) { (*static_cast<std::function<void()> *>(p))(); },
      [](void *p) { delete static_cast<std::function<void()> *>(p); },
      new std::function<void()>(std::move(work)));
}

/// The host bytes behind device address `p`, for the double's work while it
/// runs on the fake driver's stream: the driver's device memory is not
/// readable from the host. Null (and an illegal-address fault on the
/// running context, which the next synchronization reports) when `p` is not
/// device memory of that context; a null `p` stays null. Without the fake
/// driver, `p` itself.
template <typename T> T *hostView(T *p) {
  using View = void *(*)(const void *, size_t);
  static View driverView = [] {
    void *driver = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
    return driver ? reinterpret_cast<View>(dlsym(driver, "kiln_fake_cuda_host_view")) : nullptr;
  }();
  if (!p || !driverView)
    return p;
  return static_cast<T *>(driverView(p, 0));
}

/// Fault injection (KILN_FAKE_CUDA_FAULTS, a comma-separated list of
/// `kind:N`, kept by the fake driver, which documents it): whether this call
/// is the Nth of `kind`. Without the driver, never.
inline bool injectedFault(const char *kind) {
  using Now = int (*)(const char *);
  static Now driverNow = [] {
    void *driver = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
    return driver ? reinterpret_cast<Now>(dlsym(driver, "kiln_fake_cuda_fault_now")) : nullptr;
  }();
  return driverNow && driverNow(kind) != 0;
}

enum class Element { f32, f64, f16, bf16, i8, i32, f8e4m3, unknown };

/// An OCP e4m3fn byte's value: 1 sign, 4 exponent (bias 7), 3 mantissa bits;
/// subnormals below exponent 1, no infinities, 0x7f/0xff NaN.
inline double decodeE4m3(uint8_t b) {
  double sign = b & 0x80 ? -1.0 : 1.0;
  int exponent = (b >> 3) & 0xf, mantissa = b & 0x7;
  if (exponent == 0xf && mantissa == 0x7)
    return std::nan("");
  if (exponent == 0)
    return sign * std::ldexp(mantissa / 8.0, -6);
  return sign * std::ldexp(1.0 + mantissa / 8.0, exponent - 7);
}

inline double load(Element t, const void *base, int64_t index) {
  switch (t) {
  case Element::f32: return static_cast<const float *>(base)[index];
  case Element::f64: return static_cast<const double *>(base)[index];
  case Element::f16: return static_cast<double>(static_cast<const _Float16 *>(base)[index]);
  case Element::i8: return static_cast<const int8_t *>(base)[index];
  case Element::i32: return static_cast<const int32_t *>(base)[index];
  case Element::f8e4m3: return decodeE4m3(static_cast<const uint8_t *>(base)[index]);
  case Element::bf16: {
    uint32_t bits = static_cast<uint32_t>(static_cast<const uint16_t *>(base)[index]) << 16;
    float f;
    std::memcpy(&f, &bits, sizeof(f));
    return f;
  }
  default: return 0;
  }
}

inline void store(Element t, void *base, int64_t index, double v) {
  switch (t) {
  case Element::f32: static_cast<float *>(base)[index] = static_cast<float>(v); break;
  case Element::f64: static_cast<double *>(base)[index] = v; break;
  case Element::f16: static_cast<_Float16 *>(base)[index] = static_cast<_Float16>(v); break;
  // Integers: the value modulo 2^bits, as a wrapping int32 accumulator
  // stores it (v is an exact integer of a sum).
  case Element::i8:
    static_cast<int8_t *>(base)[index] = static_cast<int8_t>(static_cast<int64_t>(v));
    break;
  case Element::i32:
    static_cast<int32_t *>(base)[index] =
        static_cast<int32_t>(static_cast<uint32_t>(static_cast<int64_t>(v)));
    break;
  case Element::bf16: {
    float f = static_cast<float>(v);
    uint32_t bits;
    std::memcpy(&bits, &f, sizeof(bits));
    if (std::isnan(f))
      bits = 0x7fc00000u;
    else
      bits += 0x7fffu + ((bits >> 16) & 1); // round to nearest even
    static_cast<uint16_t *>(base)[index] = static_cast<uint16_t>(bits >> 16);
    break;
  }
  default: break;
  }
}

/// `v` (an fp32 value) as a TF32 tensor core reads it: the mantissa rounded to
/// 10 bits, nearest even; the exponent range stays fp32's.
inline double roundToTf32(double v) {
  float f = static_cast<float>(v);
  if (!std::isfinite(f))
    return f;
  uint32_t bits;
  std::memcpy(&bits, &f, sizeof(bits));
  bits += 0xfffu + ((bits >> 13) & 1);
  bits &= ~0x1fffu;
  std::memcpy(&f, &bits, sizeof(f));
  return f;
}

/// Loads an fp32 operand of a product, rounded to TF32 when `tf32` (the
/// library was allowed TF32 tensor ops); other types as stored.
inline double loadOperand(Element t, const void *base, int64_t index, bool tf32) {
  double v = load(t, base, index);
  return tf32 && t == Element::f32 ? roundToTf32(v) : v;
}

} // namespace fake

#endif // KILN_TEST_FAKE_ELEMENTS_H
