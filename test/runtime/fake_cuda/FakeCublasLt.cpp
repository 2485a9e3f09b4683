//===- FakeCublasLt.cpp - cuBLASLt's matmul, on the host, for CI ----------===//
//
// libcublasLt.so.13 beside the fake driver (libcuda.so.1: its work on the
// driver's streams, its operands through fake::hostView): the entry points the
// runtime resolves
// (runtime/src/cuda/CublasLtSymbols.inc), implementing what cuBLASLt documents
// for them, so a wrong argument fails the fake-CUDA runs as it would fail (or
// compute garbage) on a GPU:
//
// - layouts are column-major (CUBLASLT_ORDER_COL, the default; other orders
//   are refused): element (r, c) of a rows x cols matrix is at r + c * ld, and
//   ld < rows is CUBLAS_STATUS_INVALID_VALUE;
// - D = epilogue(alpha * op(A) op(B) + beta * C) with op(A) m x k, op(B) k x n,
//   C and D m x n; CUBLASLT_MATMUL_DESC_TRANSA/TRANSB transpose the stored
//   matrices; every layout's batch count must be D's, each batch offset by its
//   CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET (0 repeats the matrix);
// - epilogues DEFAULT, RELU, BIAS, RELU_BIAS, GELU and GELU_BIAS (GELU as
//   cuBLASLt documents it, the tanh approximation); the bias is a vector of m
//   (D's rows) elements of D's type, offset per batch by
//   CUBLASLT_MATMUL_DESC_BIAS_BATCH_STRIDE;
// - preferences: the workspace given (CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
//   default 0) and the alignment promised for A, B, C and D
//   (CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_*_BYTES, default 256). The heuristic's
//   algorithm needs exactly what was promised (as far as the layout's leading
//   dimension and batch stride allow), and a split-K workspace for a long K
//   when one was offered; cublasLtMatmul refuses (CUBLAS_STATUS_NOT_SUPPORTED)
//   a pointer less aligned than its algorithm needs, or less workspace;
// - injected refusals (KILN_FAKE_CUDA_FAULTS): cublaslt-heuristic:N (the Nth
//   query finds no algorithm), cublaslt-matmul:N (the Nth matmul refused);
// - types: data 32F, 16F or 16BF with CUBLAS_COMPUTE_32F and a 32F scale,
//   data 32F with CUBLAS_COMPUTE_32F_FAST_TF32 (A and B rounded to TF32), or
//   data 64F with CUBLAS_COMPUTE_64F and a 64F scale, all four matrices of one
//   data type; or int8 (IMMA): A and B 8I, C and D 32I, CUBLAS_COMPUTE_32I
//   (or _PEDANTIC) and a 32I scale, under the rules cuBLASLt documents for
//   the regular (column) order, the only one Hopper has: "TN" only (A
//   transposed, B not), leading dims of A, B and C and the dims m and k
//   multiples of 4, every pointer 4-byte aligned (the heuristic finds no
//   algorithm when promised less), no epilogue; or FP8 (sm_89/sm_90): A and
//   B 8F_E4M3, C and D one of 16BF, 16F or 32F, CUBLAS_COMPUTE_32F and a 32F
//   scale, "TN" only, leading dims and pointers of all four multiples of 16
//   bytes (the heuristic finds no algorithm when promised less), epilogues
//   as above except that a 32F result takes no GELU and no bias (cuBLASLt
//   wants a BF16 bias there, through CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE,
//   which this double does not implement); the bias has D's type. Anything
//   else (int8 output, a 32F scale for int8, E5M2 operands, an FP8 result,
//   the FP8 scale pointers) is CUBLAS_STATUS_NOT_SUPPORTED, as are
//   attributes this double does not implement.
//
// Sums are taken in double, so results match the reference kernels within
// the fp32 tolerance. Whether a matmul ran here shows in kiln-run --profile
// (kind `cublasLt`).
//
//===----------------------------------------------------------------------===//

#include "FakeElements.h"

#include <cublasLt.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

namespace {

struct Layout {
  cudaDataType_t type;
  uint64_t rows, cols;
  int64_t ld;
  int32_t batch = 1;
  int64_t stride = 0;
};

struct Desc {
  cublasComputeType_t compute;
  cudaDataType_t scale;
  int32_t transa = CUBLAS_OP_N, transb = CUBLAS_OP_N;
  uint32_t epilogue = CUBLASLT_EPILOGUE_DEFAULT;
  const void *bias = nullptr;
  int64_t biasStride = 0;
};

/// A matmul preference: the workspace the caller gives (cuBLASLt's default
/// is none) and the alignment it promises for A, B, C and D (default 256).
struct Preference {
  uint64_t maxWorkspace = 0;
  uint32_t alignment[4] = {256, 256, 256, 256};
};

/// What an algorithm this double chose needs, kept in cublasLtMatmulAlgo_t's
/// opaque words: the marker, the alignment of A, B, C and D, the workspace.
constexpr uint64_t kMarker = 0x6b696c6eu; // "kiln"
struct Needs {
  uint32_t alignment[4];
  uint64_t workspace;
};
void storeNeeds(cublasLtMatmulAlgo_t &algo, const Needs &needs) {
  algo.data[0] = kMarker;
  for (int i = 0; i < 4; ++i)
    algo.data[1 + i] = needs.alignment[i];
  algo.data[5] = needs.workspace;
}
Needs needsOf(const cublasLtMatmulAlgo_t &algo) {
  Needs needs;
  for (int i = 0; i < 4; ++i)
    needs.alignment[i] = static_cast<uint32_t>(algo.data[1 + i]);
  needs.workspace = algo.data[5];
  return needs;
}

/// The largest power of two (at most 256) dividing `bytes`; 256 for 0.
uint32_t alignmentOf(uint64_t bytes) {
  uint32_t a = 256;
  while (a > 1 && bytes % a != 0)
    a /= 2;
  return a;
}


struct Context {};

Layout *L(cublasLtMatrixLayout_t l) { return reinterpret_cast<Layout *>(l); }
Desc *D(cublasLtMatmulDesc_t d) { return reinterpret_cast<Desc *>(d); }

size_t elementBytes(cudaDataType_t t) {
  switch (t) {
  case CUDA_R_32F: return 4;
  case CUDA_R_64F: return 8;
  case CUDA_R_16F:
  case CUDA_R_16BF: return 2;
  case CUDA_R_8I: return 1;
  case CUDA_R_8F_E4M3: return 1;
  case CUDA_R_32I: return 4;
  default: return 0;
  }
}

fake::Element element(cudaDataType_t t) {
  switch (t) {
  case CUDA_R_32F: return fake::Element::f32;
  case CUDA_R_64F: return fake::Element::f64;
  case CUDA_R_16F: return fake::Element::f16;
  case CUDA_R_16BF: return fake::Element::bf16;
  case CUDA_R_8I: return fake::Element::i8;
  case CUDA_R_32I: return fake::Element::i32;
  case CUDA_R_8F_E4M3: return fake::Element::f8e4m3;
  default: return fake::Element::unknown;
  }
}

double load(cudaDataType_t t, const void *base, int64_t index) {
  return fake::load(element(t), base, index);
}

void store(cudaDataType_t t, void *base, int64_t index, double v) {
  fake::store(element(t), base, index, v);
}

/// The problem's m, n, k if the descriptors describe a valid matmul, else a status.
struct Shape {
  uint64_t m = 0, n = 0, k = 0;
  cublasStatus_t status = CUBLAS_STATUS_SUCCESS;
};

/// Whether the descriptors ask for an int8 (IMMA) matmul: 8I operands into
/// a 32I result with 32I compute and scale.
bool isInt8(const Desc &op, const Layout &a, const Layout &b, const Layout &c, const Layout &d) {
  return (op.compute == CUBLAS_COMPUTE_32I || op.compute == CUBLAS_COMPUTE_32I_PEDANTIC) &&
         op.scale == CUDA_R_32I && a.type == CUDA_R_8I && b.type == CUDA_R_8I &&
         c.type == CUDA_R_32I && d.type == CUDA_R_32I;
}

/// IMMA's rules for the regular (column) order: TN, leading dims of A, B and
/// C and the dims m and k multiples of 4, no epilogue.
bool int8Supported(const Desc &op, const Layout &a, const Layout &b, const Layout &c) {
  uint64_t m = op.transa == CUBLAS_OP_N ? a.rows : a.cols, k = op.transa == CUBLAS_OP_N ? a.cols : a.rows;
  return op.transa == CUBLAS_OP_T && op.transb == CUBLAS_OP_N && a.ld % 4 == 0 && b.ld % 4 == 0 &&
         c.ld % 4 == 0 && m % 4 == 0 && k % 4 == 0 && op.epilogue == CUBLASLT_EPILOGUE_DEFAULT;
}

/// Whether the descriptors ask for an FP8 matmul: e4m3 operands into a
/// 16BF, 16F or 32F result (C's type D's), 32F compute and scale.
bool isFloat8(const Desc &op, const Layout &a, const Layout &b, const Layout &c, const Layout &d) {
  return op.compute == CUBLAS_COMPUTE_32F && op.scale == CUDA_R_32F && a.type == CUDA_R_8F_E4M3 &&
         b.type == CUDA_R_8F_E4M3 && c.type == d.type &&
         (d.type == CUDA_R_16BF || d.type == CUDA_R_16F || d.type == CUDA_R_32F);
}

/// FP8's rules on sm_89/sm_90: TN, every leading dim a multiple of 16 bytes,
/// and with a 32F result no GELU and no bias of D's type.
bool float8Supported(const Desc &op, const Layout &a, const Layout &b, const Layout &c,
                     const Layout &d) {
  auto bytes16 = [](const Layout &l) {
    return static_cast<uint64_t>(l.ld) * elementBytes(l.type) % 16 == 0;
  };
  bool gelu = op.epilogue == CUBLASLT_EPILOGUE_GELU || op.epilogue == CUBLASLT_EPILOGUE_GELU_BIAS;
  bool bias = op.epilogue == CUBLASLT_EPILOGUE_BIAS || op.epilogue == CUBLASLT_EPILOGUE_RELU_BIAS ||
              op.epilogue == CUBLASLT_EPILOGUE_GELU_BIAS;
  return op.transa == CUBLAS_OP_T && op.transb == CUBLAS_OP_N && bytes16(a) && bytes16(b) &&
         bytes16(c) && bytes16(d) && !(d.type == CUDA_R_32F && (gelu || bias));
}

Shape validate(const Desc &op, const Layout &a, const Layout &b, const Layout &c, const Layout &d) {
  Shape s;
  bool int8 = isInt8(op, a, b, c, d);
  bool float8 = isFloat8(op, a, b, c, d);
  bool single = op.compute == CUBLAS_COMPUTE_32F && op.scale == CUDA_R_32F &&
                (d.type == CUDA_R_32F || d.type == CUDA_R_16F || d.type == CUDA_R_16BF);
  // TF32 tensor ops take fp32 data only.
  single = single || (op.compute == CUBLAS_COMPUTE_32F_FAST_TF32 && op.scale == CUDA_R_32F &&
                      d.type == CUDA_R_32F);
  bool wide = op.compute == CUBLAS_COMPUTE_64F && op.scale == CUDA_R_64F && d.type == CUDA_R_64F;
  if (!int8 && !float8 &&
      ((!single && !wide) || a.type != d.type || b.type != d.type || c.type != d.type)) {
    s.status = CUBLAS_STATUS_NOT_SUPPORTED;
    return s;
  }
  uint64_t am = op.transa == CUBLAS_OP_N ? a.rows : a.cols, ak = op.transa == CUBLAS_OP_N ? a.cols : a.rows;
  uint64_t bk = op.transb == CUBLAS_OP_N ? b.rows : b.cols, bn = op.transb == CUBLAS_OP_N ? b.cols : b.rows;
  bool shapes = am == d.rows && bn == d.cols && ak == bk && c.rows == d.rows && c.cols == d.cols;
  bool batches = a.batch == d.batch && b.batch == d.batch && c.batch == d.batch;
  bool ops = (op.transa == CUBLAS_OP_N || op.transa == CUBLAS_OP_T) &&
             (op.transb == CUBLAS_OP_N || op.transb == CUBLAS_OP_T);
  bool epilogue = op.epilogue == CUBLASLT_EPILOGUE_DEFAULT || op.epilogue == CUBLASLT_EPILOGUE_RELU ||
                  op.epilogue == CUBLASLT_EPILOGUE_BIAS || op.epilogue == CUBLASLT_EPILOGUE_RELU_BIAS ||
                  op.epilogue == CUBLASLT_EPILOGUE_GELU || op.epilogue == CUBLASLT_EPILOGUE_GELU_BIAS;
  if (!shapes || !batches || !ops || d.rows == 0 || d.cols == 0 || ak == 0) {
    s.status = CUBLAS_STATUS_INVALID_VALUE;
    return s;
  }
  if (!epilogue || (int8 && !int8Supported(op, a, b, c)) ||
      (float8 && !float8Supported(op, a, b, c, d))) {
    s.status = CUBLAS_STATUS_NOT_SUPPORTED;
    return s;
  }
  s.m = d.rows;
  s.n = d.cols;
  s.k = ak;
  return s;
}

template <typename T> cublasStatus_t setValue(T *field, const void *buf, size_t size) {
  if (!buf || size != sizeof(T))
    return CUBLAS_STATUS_INVALID_VALUE;
  std::memcpy(field, buf, sizeof(T));
  return CUBLAS_STATUS_SUCCESS;
}

} // namespace

const char *cublasLtGetStatusString(cublasStatus_t status) {
  switch (status) {
  case CUBLAS_STATUS_SUCCESS: return "success (fake cuBLASLt)";
  case CUBLAS_STATUS_INVALID_VALUE: return "invalid value (fake cuBLASLt)";
  case CUBLAS_STATUS_NOT_SUPPORTED: return "not supported (fake cuBLASLt)";
  default: return "error (fake cuBLASLt)";
  }
}

cublasStatus_t cublasLtCreate(cublasLtHandle_t *handle) {
  if (!handle)
    return CUBLAS_STATUS_INVALID_VALUE;
  *handle = reinterpret_cast<cublasLtHandle_t>(new Context());
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtDestroy(cublasLtHandle_t handle) {
  delete reinterpret_cast<Context *>(handle);
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatmulDescCreate(cublasLtMatmulDesc_t *desc, cublasComputeType_t compute,
                                        cudaDataType_t scale) {
  if (!desc)
    return CUBLAS_STATUS_INVALID_VALUE;
  *desc = reinterpret_cast<cublasLtMatmulDesc_t>(new Desc{compute, scale});
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatmulDescDestroy(cublasLtMatmulDesc_t desc) {
  delete D(desc);
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatmulDescSetAttribute(cublasLtMatmulDesc_t desc,
                                              cublasLtMatmulDescAttributes_t attr, const void *buf,
                                              size_t size) {
  Desc *d = D(desc);
  if (!d)
    return CUBLAS_STATUS_INVALID_VALUE;
  switch (attr) {
  case CUBLASLT_MATMUL_DESC_TRANSA: return setValue(&d->transa, buf, size);
  case CUBLASLT_MATMUL_DESC_TRANSB: return setValue(&d->transb, buf, size);
  case CUBLASLT_MATMUL_DESC_EPILOGUE: return setValue(&d->epilogue, buf, size);
  case CUBLASLT_MATMUL_DESC_BIAS_POINTER: return setValue(&d->bias, buf, size);
  case CUBLASLT_MATMUL_DESC_BIAS_BATCH_STRIDE: return setValue(&d->biasStride, buf, size);
  default: return CUBLAS_STATUS_NOT_SUPPORTED;
  }
}

cublasStatus_t cublasLtMatrixLayoutCreate(cublasLtMatrixLayout_t *layout, cudaDataType type,
                                          uint64_t rows, uint64_t cols, int64_t ld) {
  if (!layout || elementBytes(type) == 0)
    return !layout ? CUBLAS_STATUS_INVALID_VALUE : CUBLAS_STATUS_NOT_SUPPORTED;
  if (ld < static_cast<int64_t>(rows) || ld < 1)
    return CUBLAS_STATUS_INVALID_VALUE;
  *layout = reinterpret_cast<cublasLtMatrixLayout_t>(new Layout{type, rows, cols, ld});
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatrixLayoutDestroy(cublasLtMatrixLayout_t layout) {
  delete L(layout);
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatrixLayoutSetAttribute(cublasLtMatrixLayout_t layout,
                                                cublasLtMatrixLayoutAttribute_t attr,
                                                const void *buf, size_t size) {
  Layout *l = L(layout);
  if (!l)
    return CUBLAS_STATUS_INVALID_VALUE;
  switch (attr) {
  case CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT: {
    cublasStatus_t s = setValue(&l->batch, buf, size);
    return s == CUBLAS_STATUS_SUCCESS && l->batch < 1 ? CUBLAS_STATUS_INVALID_VALUE : s;
  }
  case CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET: return setValue(&l->stride, buf, size);
  case CUBLASLT_MATRIX_LAYOUT_ORDER: {
    int32_t order = 0;
    cublasStatus_t s = setValue(&order, buf, size);
    return s == CUBLAS_STATUS_SUCCESS && order != CUBLASLT_ORDER_COL ? CUBLAS_STATUS_NOT_SUPPORTED : s;
  }
  default: return CUBLAS_STATUS_NOT_SUPPORTED;
  }
}

cublasStatus_t cublasLtMatmulPreferenceCreate(cublasLtMatmulPreference_t *pref) {
  if (!pref)
    return CUBLAS_STATUS_INVALID_VALUE;
  *pref = reinterpret_cast<cublasLtMatmulPreference_t>(new Preference());
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatmulPreferenceDestroy(cublasLtMatmulPreference_t pref) {
  delete reinterpret_cast<Preference *>(pref);
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatmulPreferenceSetAttribute(cublasLtMatmulPreference_t pref,
                                                    cublasLtMatmulPreferenceAttributes_t attr,
                                                    const void *buf, size_t size) {
  auto *p = reinterpret_cast<Preference *>(pref);
  if (!p)
    return CUBLAS_STATUS_INVALID_VALUE;
  switch (attr) {
  case CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES: return setValue(&p->maxWorkspace, buf, size);
  case CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES: return setValue(&p->alignment[0], buf, size);
  case CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES: return setValue(&p->alignment[1], buf, size);
  case CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES: return setValue(&p->alignment[2], buf, size);
  case CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES: return setValue(&p->alignment[3], buf, size);
  default: return CUBLAS_STATUS_NOT_SUPPORTED;
  }
}

cublasStatus_t cublasLtMatmulAlgoGetHeuristic(cublasLtHandle_t handle, cublasLtMatmulDesc_t op,
                                              cublasLtMatrixLayout_t a, cublasLtMatrixLayout_t b,
                                              cublasLtMatrixLayout_t c, cublasLtMatrixLayout_t d,
                                              cublasLtMatmulPreference_t pref, int requested,
                                              cublasLtMatmulHeuristicResult_t results[],
                                              int *returned) {
  if (!handle || !op || !a || !b || !c || !d || !pref || requested < 1 || !results || !returned)
    return CUBLAS_STATUS_INVALID_VALUE;
  Shape s = validate(*D(op), *L(a), *L(b), *L(c), *L(d));
  if (s.status != CUBLAS_STATUS_SUCCESS)
    return s.status;
  // An injected refusal: no algorithm for this problem (as for a type or
  // epilogue combination the library lacks).
  if (fake::injectedFault("cublaslt-heuristic"))
    return CUBLAS_STATUS_NOT_SUPPORTED;
  const Preference &p = *reinterpret_cast<Preference *>(pref);
  // The algorithm takes the caller at its word: it needs each matrix as
  // aligned as the preference promised (256 unless told), as far as the
  // layout's leading dimension and batch stride allow, no less than an
  // element. A pointer less aligned than promised is then refused by
  // cublasLtMatmul, as a real algorithm's vector loads would fault.
  Needs needs;
  const Layout *layouts[4] = {L(a), L(b), L(c), L(d)};
  // IMMA needs every pointer 4-byte aligned: promised less, there is no
  // algorithm.
  // FP8 needs them 16-byte aligned.
  uint32_t least = isInt8(*D(op), *L(a), *L(b), *L(c), *L(d))     ? 4
                   : isFloat8(*D(op), *L(a), *L(b), *L(c), *L(d)) ? 16
                                                                  : 1;
  for (int i = 0; i < 4; ++i) {
    const Layout &l = *layouts[i];
    size_t element = elementBytes(l.type);
    uint32_t layout = alignmentOf(static_cast<uint64_t>(l.ld) * element);
    if (l.batch > 1 && l.stride != 0)
      layout = std::min(layout, alignmentOf(static_cast<uint64_t>(l.stride) * element));
    if (p.alignment[i] < least || layout < least)
      return CUBLAS_STATUS_NOT_SUPPORTED;
    needs.alignment[i] = std::max<uint32_t>({std::min(p.alignment[i], layout),
                                             static_cast<uint32_t>(element), least});
  }
  // A long K is split across blocks with partial sums in the workspace
  // (fp32, four splits) when the preference allows that much; else the
  // algorithm without a split.
  uint64_t split = s.m * s.n * 4 * 4;
  needs.workspace = s.k >= 8 * std::max(s.m, s.n) && split <= p.maxWorkspace ? split : 0;
  std::memset(&results[0], 0, sizeof(results[0]));
  storeNeeds(results[0].algo, needs);
  results[0].workspaceSize = needs.workspace;
  results[0].state = CUBLAS_STATUS_SUCCESS;
  results[0].wavesCount = 1.0f;
  *returned = 1;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatmul(cublasLtHandle_t handle, cublasLtMatmulDesc_t opDesc,
                              const void *alpha, const void *A, cublasLtMatrixLayout_t aDesc,
                              const void *B, cublasLtMatrixLayout_t bDesc, const void *beta,
                              const void *C, cublasLtMatrixLayout_t cDesc, void *Dout,
                              cublasLtMatrixLayout_t dDesc, const cublasLtMatmulAlgo_t *algo,
                              void *workspace, size_t workspaceSize, cudaStream_t stream) {
  if (!handle || !opDesc || !alpha || !beta || !A || !B || !Dout || !aDesc || !bDesc || !cDesc ||
      !dDesc || !algo || algo->data[0] != kMarker)
    return CUBLAS_STATUS_INVALID_VALUE;
  // What the algorithm needs: its alignments (for C too when beta reads it)
  // and its workspace.
  Needs needs = needsOf(*algo);
  const void *pointers[4] = {A, B, C, Dout};
  for (int i = 0; i < 4; ++i)
    if (pointers[i] && reinterpret_cast<uintptr_t>(pointers[i]) % needs.alignment[i] != 0)
      return CUBLAS_STATUS_NOT_SUPPORTED;
  if (needs.workspace > workspaceSize || (needs.workspace && !workspace))
    return CUBLAS_STATUS_NOT_SUPPORTED;
  if (fake::injectedFault("cublaslt-matmul"))
    return CUBLAS_STATUS_NOT_SUPPORTED;
  // Copies: a captured call runs after its descriptors may be gone.
  const Desc op = *D(opDesc);
  const Layout a = *L(aDesc), b = *L(bDesc), c = *L(cDesc), d = *L(dDesc);
  Shape s = validate(op, a, b, c, d);
  if (s.status != CUBLAS_STATUS_SUCCESS)
    return s.status;
  // alpha and beta in the scale type.
  auto scalar = [&](const void *v) -> double {
    if (op.scale == CUDA_R_64F)
      return *static_cast<const double *>(v);
    if (op.scale == CUDA_R_32I)
      return *static_cast<const int32_t *>(v);
    return *static_cast<const float *>(v);
  };
  double alphaValue = scalar(alpha), betaValue = scalar(beta);
  if (betaValue != 0 && !C)
    return CUBLAS_STATUS_INVALID_VALUE;
  bool bias = op.epilogue == CUBLASLT_EPILOGUE_BIAS || op.epilogue == CUBLASLT_EPILOGUE_RELU_BIAS ||
              op.epilogue == CUBLASLT_EPILOGUE_GELU_BIAS;
  bool relu = op.epilogue == CUBLASLT_EPILOGUE_RELU || op.epilogue == CUBLASLT_EPILOGUE_RELU_BIAS;
  bool gelu = op.epilogue == CUBLASLT_EPILOGUE_GELU || op.epilogue == CUBLASLT_EPILOGUE_GELU_BIAS;
  if (bias && !op.bias)
    return CUBLAS_STATUS_INVALID_VALUE;
  // With CUBLAS_COMPUTE_32F_FAST_TF32, A and B are rounded to TF32 as tensor
  // cores read them (C and the bias are not); sums stay wide.
  bool tf32 = op.compute == CUBLAS_COMPUTE_32F_FAST_TF32;
  const void *biasPointer = op.bias;
  fake::submit(stream, [=] {
    const void *hA = fake::hostView(A), *hB = fake::hostView(B), *hC = fake::hostView(C),
               *hBias = fake::hostView(biasPointer);
    void *hD = fake::hostView(Dout);
    if (!hA || !hB || !hD || (C && !hC) || (biasPointer && !hBias))
      return;
    // D may be C: each batch's result is computed whole before it is stored.
    std::vector<double> result(s.m * s.n);
    for (int32_t batch = 0; batch < d.batch; ++batch) {
      int64_t aOff = batch * a.stride, bOff = batch * b.stride, cOff = batch * c.stride,
              dOff = batch * d.stride;
      for (uint64_t j = 0; j < s.n; ++j)
        for (uint64_t i = 0; i < s.m; ++i) {
          double sum = 0;
          for (uint64_t l = 0; l < s.k; ++l) {
            int64_t ai = op.transa == CUBLAS_OP_N ? i + l * a.ld : l + i * a.ld;
            int64_t bi = op.transb == CUBLAS_OP_N ? l + j * b.ld : j + l * b.ld;
            sum += fake::loadOperand(element(a.type), hA, aOff + ai, tf32) *
                   fake::loadOperand(element(b.type), hB, bOff + bi, tf32);
          }
          double v = alphaValue * sum;
          if (betaValue != 0)
            v += betaValue * load(c.type, hC, cOff + static_cast<int64_t>(i + j * c.ld));
          if (bias)
            v += load(d.type, hBias, batch * op.biasStride + static_cast<int64_t>(i));
          if (relu && v < 0)
            v = 0;
          if (gelu)
            v = 0.5 * v * (1.0 + std::tanh(std::sqrt(2.0 / M_PI) * (v + 0.044715 * v * v * v)));
          result[i + j * s.m] = v;
        }
      for (uint64_t j = 0; j < s.n; ++j)
        for (uint64_t i = 0; i < s.m; ++i)
          store(d.type, hD, dOff + static_cast<int64_t>(i + j * d.ld), result[i + j * s.m]);
    }
  });
  return CUBLAS_STATUS_SUCCESS;
}
