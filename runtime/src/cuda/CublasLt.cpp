//===- CublasLt.cpp - matmul steps in cuBLASLt ----------------------------===//

#include "cuda/CublasLt.h"

#include "cuda/Alignment.h"

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

#include <mutex>
#include <dlfcn.h>

#include <array>

#include <limits>

namespace kiln::rt {

absl::StatusOr<const CublasLt *> CublasLt::load() {
  // The soname of CUDA 13's cuBLASLt; a bare libcublasLt.so (a toolkit's
  // development link) serves where only that is installed.
  void *handle = dlopen("libcublasLt.so.13", RTLD_NOW | RTLD_LOCAL);
  if (!handle)
    handle = dlopen("libcublasLt.so", RTLD_NOW | RTLD_LOCAL);
  if (!handle)
    return absl::UnavailableError(
        absl::StrCat("no cuBLASLt: cannot load libcublasLt.so.13 (", dlerror(), ")"));
  auto *lt = new CublasLt();
#define KILN_LT_SYMBOL(name)                                                           \
  lt->name = reinterpret_cast<decltype(&::name)>(dlsym(handle, #name));                 \
  if (!lt->name)                                                                       \
    return absl::UnavailableError("cuBLASLt lacks " #name "; it is too old");
#include "cuda/CublasLtSymbols.inc"
#undef KILN_LT_SYMBOL
  return lt;
}

absl::StatusOr<const CublasLt *> CublasLt::get() {
  // Loaded once and kept for the life of the process, like the driver.
  static const absl::StatusOr<const CublasLt *> library = load();
  return library;
}

std::string CublasLt::describe(const char *call, cublasStatus_t status) const {
  const char *message = cublasLtGetStatusString ? cublasLtGetStatusString(status) : nullptr;
  return absl::StrCat(call, " failed: status ", static_cast<int>(status),
                      message ? absl::StrCat(" (", message, ")") : "");
}

namespace {

/// cuBLASLt's types for a kiln dtype: data (A and B), compute, scale
/// (alpha/beta) and result (C and D).
struct LtTypes {
  cudaDataType_t data;
  cublasComputeType_t compute;
  cudaDataType_t scale;
  cudaDataType_t result;
};

/// cuBLASLt's type for a float8 product's result (D, and C with it).
std::optional<cudaDataType_t> float8ResultType(ref::DType result) {
  switch (result) {
  case ref::DType::f32: return CUDA_R_32F;
  case ref::DType::f16: return CUDA_R_16F;
  case ref::DType::bf16: return CUDA_R_16BF;
  default: return std::nullopt;
  }
}

std::optional<LtTypes> ltTypes(ref::DType dtype, bool allowTf32, ref::DType result) {
  switch (dtype) {
  // FP8 tensor cores (sm_89/sm_90): e4m3 operands, fp32 accumulation and
  // scale type, a result of f32, f16 or bf16 (the datatype table's FP8 rows).
  case ref::DType::f8e4m3fn: {
    std::optional<cudaDataType_t> d = float8ResultType(result);
    if (!d)
      return std::nullopt;
    return LtTypes{CUDA_R_8F_E4M3, CUBLAS_COMPUTE_32F, CUDA_R_32F, *d};
  }
  // int8 tensor cores: exact int32 sums, an int32 result, alpha and beta
  // int32 (the datatype table's row with no epilogue).
  case ref::DType::i8: return LtTypes{CUDA_R_8I, CUBLAS_COMPUTE_32I, CUDA_R_32I, CUDA_R_32I};
  // fp32 is IEEE (CUBLAS_COMPUTE_32F) unless the artifact was compiled with
  // --precision tf32; fp16 and bf16 accumulate in fp32.
  case ref::DType::f32:
    return LtTypes{CUDA_R_32F, allowTf32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F,
                   CUDA_R_32F, CUDA_R_32F};
  case ref::DType::f16: return LtTypes{CUDA_R_16F, CUBLAS_COMPUTE_32F, CUDA_R_32F, CUDA_R_16F};
  case ref::DType::bf16: return LtTypes{CUDA_R_16BF, CUBLAS_COMPUTE_32F, CUDA_R_32F, CUDA_R_16BF};
  case ref::DType::f64: return LtTypes{CUDA_R_64F, CUBLAS_COMPUTE_64F, CUDA_R_64F, CUDA_R_64F};
  default: return std::nullopt;
  }
}

int64_t product(const ref::Shape &shape, size_t begin, size_t end) {
  int64_t n = 1;
  for (size_t i = begin; i < end; ++i)
    n *= shape[i];
  return n;
}

/// A matmul in cuBLASLt's terms. Row-major operands a [.., M, K] (op'd) and
/// b [.., K, N] give row-major d [.., M, N], which is column-major N x M: so
/// cuBLASLt's A is b's buffer and its B is a's, with m = N, n = M.
struct Problem {
  int64_t m = 0, n = 0, k = 0;
  int64_t batch = 1;
  /// cuBLASLt's A (kiln's b) and B (kiln's a): stored rows, cols, ld, op.
  uint64_t ltARows = 0, ltACols = 0, ltBRows = 0, ltBCols = 0;
  int64_t ltALd = 0, ltBLd = 0;
  cublasOperation_t ltAOp = CUBLAS_OP_N, ltBOp = CUBLAS_OP_N;
  int64_t ltAStride = 0, ltBStride = 0; ///< 0: broadcast over the batch
  enum class Bias { None, Vector, Matrix } bias = Bias::None;
  /// Leading batch dims that broadcast partially (a [2, 1] batch against
  /// [1, 3]) are a loop of calls around the strided batch, each at an offset
  /// (in elements) per outer dim: 0 where that operand broadcasts.
  ref::Shape outer;
  std::vector<int64_t> aOuterStrides, bOuterStrides, dOuterStrides;
};

/// The batch dims of an operand (all but the last two; none for a vector),
/// right-aligned against `rank` dims with leading 1s.
ref::Shape batchDims(const ref::Shape &shape, size_t rank) {
  size_t own = shape.size() >= 2 ? shape.size() - 2 : 0;
  ref::Shape dims(rank - std::min(rank, own), 1);
  dims.insert(dims.end(), shape.begin(), shape.begin() + own);
  return dims;
}

/// The matrix dims of `a` (op) `b`: vectors are promoted as numpy does (a:
/// [1, K], b: [K, 1]) and their op is the identity, as on the host.
struct MatrixDims {
  bool aVector, bVector, transA, transB;
  int64_t m, ka, kb, n;
};

std::optional<MatrixDims> matrixDims(const MatMulParams &params, const ref::Shape &a,
                                     const ref::Shape &b) {
  if (a.empty() || b.empty())
    return std::nullopt;
  MatrixDims d;
  d.aVector = a.size() == 1, d.bVector = b.size() == 1;
  d.transA = params.transposeA && !d.aVector, d.transB = params.transposeB && !d.bVector;
  d.m = d.aVector ? 1 : (d.transA ? a[a.size() - 1] : a[a.size() - 2]);
  d.ka = d.aVector ? a[0] : (d.transA ? a[a.size() - 2] : a[a.size() - 1]);
  d.kb = d.bVector ? b[0] : (d.transB ? b[b.size() - 1] : b[b.size() - 2]);
  d.n = d.bVector ? 1 : (d.transB ? b[b.size() - 2] : b[b.size() - 1]);
  return d;
}

std::optional<Problem> plan(const MatMulParams &params, const MatmulCall &call) {
  const ref::Shape &a = call.a, &b = call.b;
  std::optional<MatrixDims> dims = matrixDims(params, a, b);
  if (!dims)
    return std::nullopt;
  Problem p;
  auto [aVector, bVector, transA, transB, m, ka, kb, n] = *dims;
  if (ka != kb || ka <= 0)
    return std::nullopt; // K = 0 is a result of zeros (or the bias): the host does it
  p.m = n; // cuBLASLt's m is kiln's N (see Problem)
  p.n = m;
  p.k = ka;

  // Batches: in cuBLASLt's strided batch each operand's batch dims either
  // equal the result's or are all 1 (a stride of 0). Where leading dims
  // broadcast partially ([2, 1] against [1, 3]), the fewest leading dims that
  // make the rest fit become a loop of calls (no copies either way).
  size_t batchRank = std::max(batchDims(a, 0).size(), batchDims(b, 0).size());
  ref::Shape aBatch = batchDims(a, batchRank), bBatch = batchDims(b, batchRank);
  ref::Shape outBatch(batchRank);
  for (size_t i = 0; i < batchRank; ++i) {
    if (aBatch[i] != bBatch[i] && aBatch[i] != 1 && bBatch[i] != 1)
      return std::nullopt;
    outBatch[i] = std::max(aBatch[i], bBatch[i]);
  }
  auto fitsFrom = [&](const ref::Shape &batch, size_t from) {
    return std::equal(batch.begin() + from, batch.end(), outBatch.begin() + from) ||
           product(batch, from, batch.size()) == 1;
  };
  size_t split = 0;
  while (!(fitsFrom(aBatch, split) && fitsFrom(bBatch, split)))
    ++split; // ends by batchRank at the latest: empty suffixes fit
  p.batch = product(outBatch, split, outBatch.size());
  if (p.batch > std::numeric_limits<int32_t>::max())
    return std::nullopt;
  auto stride = [&](const ref::Shape &batch, int64_t matrix) -> int64_t {
    return product(batch, split, batch.size()) == 1 ? 0 : matrix;
  };
  int64_t aStride = stride(aBatch, m * ka), bStride = stride(bBatch, kb * n);
  // Element strides of the outer dims: an operand's own batch layout, 0 where
  // it broadcasts; the result's are its dense layout.
  auto outerStrides = [&](const ref::Shape &batch, int64_t matrix) {
    std::vector<int64_t> strides(split);
    for (size_t i = 0; i < split; ++i)
      strides[i] = batch[i] == 1 ? 0 : product(batch, i + 1, batch.size()) * matrix;
    return strides;
  };
  p.outer.assign(outBatch.begin(), outBatch.begin() + split);
  p.aOuterStrides = outerStrides(aBatch, m * ka);
  p.bOuterStrides = outerStrides(bBatch, kb * n);
  p.dOuterStrides = outerStrides(outBatch, m * n);

  // cuBLASLt's A is kiln's b: stored [K, N] row-major is column-major N x K.
  p.ltAOp = transB ? CUBLAS_OP_T : CUBLAS_OP_N;
  p.ltARows = static_cast<uint64_t>(transB ? kb : n);
  p.ltACols = static_cast<uint64_t>(transB ? n : kb);
  p.ltALd = static_cast<int64_t>(p.ltARows);
  p.ltAStride = bStride;
  // cuBLASLt's B is kiln's a: stored [M, K] row-major is column-major K x M.
  p.ltBOp = transA ? CUBLAS_OP_T : CUBLAS_OP_N;
  p.ltBRows = static_cast<uint64_t>(transA ? m : ka);
  p.ltBCols = static_cast<uint64_t>(transA ? ka : m);
  p.ltBLd = static_cast<int64_t>(p.ltBRows);
  p.ltBStride = aStride;

  // FP8's layout rule on sm_89/sm_90: cuBLASLt's A transposed and its B not
  // ("TN"), i.e. kiln's b stored [N, K] and its a [M, K]. Its epilogues
  // with an f32 result take a BF16 bias only and no GELU; kiln's bias has
  // the result's type, so those stay on the host.
  bool float8 = call.dtype == ref::DType::f8e4m3fn;
  if (float8 && (p.ltAOp != CUBLAS_OP_T || p.ltBOp != CUBLAS_OP_N))
    return std::nullopt;
  if (float8 && call.resultDtype == ref::DType::f32 &&
      (params.hasBias || params.activation == Epilogue::gelu_tanh))
    return std::nullopt;

  if (params.hasBias) {
    const ref::Shape &bias = call.bias;
    bool lastDimVector = !bias.empty() && bias.size() <= call.result.size() &&
                         bias.back() == n && product(bias, 0, bias.size()) == n;
    if (lastDimVector && !bVector)
      p.bias = Problem::Bias::Vector; // the BIAS epilogue: one value per row of D
    else if (bias == call.result)
      p.bias = Problem::Bias::Matrix; // C = bias, beta = 1
    else
      return std::nullopt;
  }
  return p;
}

/// Frees cuBLASLt descriptors at the end of a scope.
struct Descriptors {
  const CublasLt &lt;
  cublasLtMatmulDesc_t op = nullptr;
  cublasLtMatrixLayout_t a = nullptr, b = nullptr, c = nullptr, d = nullptr;
  cublasLtMatmulPreference_t preference = nullptr;
  ~Descriptors() {
    if (preference)
      lt.cublasLtMatmulPreferenceDestroy(preference);
    for (cublasLtMatrixLayout_t layout : {a, b, c, d})
      if (layout)
        lt.cublasLtMatrixLayoutDestroy(layout);
    if (op)
      lt.cublasLtMatmulDescDestroy(op);
  }
};

} // namespace

MatmulRunner::~MatmulRunner() {
  if (handle_)
    lt_->cublasLtDestroy(handle_);
}

absl::StatusOr<std::unique_ptr<MatmulRunner>> MatmulRunner::create() {
  absl::StatusOr<const CublasLt *> lt = CublasLt::get();
  if (!lt.ok())
    return lt.status();
  std::unique_ptr<MatmulRunner> runner(new MatmulRunner());
  runner->lt_ = *lt;
  if (cublasStatus_t s = (*lt)->cublasLtCreate(&runner->handle_); s != CUBLAS_STATUS_SUCCESS)
    return absl::UnavailableError((*lt)->describe("cublasLtCreate", s));
  return runner;
}

std::optional<ref::Shape> MatmulRunner::resultShape(const MatMulParams &params, const ref::Shape &a,
                                                    const ref::Shape &b) {
  std::optional<MatrixDims> dims = matrixDims(params, a, b);
  if (!dims || dims->ka != dims->kb)
    return std::nullopt;
  auto [aVector, bVector, transA, transB, m, ka, kb, n] = *dims;
  size_t batchRank = std::max(batchDims(a, 0).size(), batchDims(b, 0).size());
  absl::StatusOr<ref::Shape> batch =
      ref::broadcastShapes(batchDims(a, batchRank), batchDims(b, batchRank));
  if (!batch.ok())
    return std::nullopt;
  ref::Shape result = *batch;
  if (!aVector)
    result.push_back(m);
  if (!bVector)
    result.push_back(n);
  return result;
}

bool MatmulRunner::takesActivation(Epilogue activation) {
  return activation == Epilogue::none || activation == Epilogue::relu ||
         activation == Epilogue::gelu_tanh;
}

bool MatmulRunner::supports(const MatMulParams &params, const MatmulCall &call) {
  return takesActivation(params.activation) &&
         ltTypes(call.dtype, params.allowTf32, call.resultDtype).has_value() &&
         plan(params, call).has_value();
}

namespace {
/// The alignment cuBLASLt may assume of a pointer (its preferences' unit):
/// up to 256 bytes.
uint32_t alignmentOf(uintptr_t address) { return pointerAlignment(address, 256); }
} // namespace

/// One call's descriptors, algorithm and scalars: what run() issues, per
/// index of the outer batch loop.
struct MatmulRunner::Prepared {
  explicit Prepared(const CublasLt &lt) : desc{lt} {}
  Descriptors desc;
  Problem problem;
  LtTypes types;
  cublasLtMatmulAlgo_t algo;
  size_t workspace = 0;
  std::string key; ///< the problem's, in algorithms_
  /// Per outer-loop call: cuBLASLt's A, B, C and D addresses.
  std::vector<std::array<uintptr_t, 4>> addresses;
};

absl::Status MatmulRunner::prepare(const MatMulParams &params, const MatmulCall &call,
                                   Prepared &out) const {
  std::optional<LtTypes> types = ltTypes(call.dtype, params.allowTf32, call.resultDtype);
  std::optional<Problem> problem = plan(params, call);
  if (!types || !problem)
    return absl::InternalError("the matmul does not map onto cuBLASLt");
  out.types = *types;
  out.problem = *problem;
  const Problem &p = out.problem;
  const CublasLt &lt = *lt_;
  Descriptors &desc = out.desc;
  // A descriptor the library does not support is a refusal too (the step
  // then runs on the host); any other failure is an error.
  auto check = [&](const char *call, cublasStatus_t s) {
    if (s == CUBLAS_STATUS_SUCCESS)
      return absl::OkStatus();
    return s == CUBLAS_STATUS_NOT_SUPPORTED ? absl::UnimplementedError(lt.describe(call, s))
                                            : absl::InternalError(lt.describe(call, s));
  };
  int32_t batch = static_cast<int32_t>(p.batch);
  auto layout = [&](cublasLtMatrixLayout_t *layoutOut, cudaDataType_t type, uint64_t rows,
                    uint64_t cols, int64_t ld, int64_t stride) -> absl::Status {
    if (absl::Status s = check("cublasLtMatrixLayoutCreate",
                               lt.cublasLtMatrixLayoutCreate(layoutOut, type, rows, cols, ld));
        !s.ok())
      return s;
    if (batch == 1)
      return absl::OkStatus();
    if (absl::Status s = check("cublasLtMatrixLayoutSetAttribute",
                               lt.cublasLtMatrixLayoutSetAttribute(*layoutOut,
                                                                   CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT,
                                                                   &batch, sizeof(batch)));
        !s.ok())
      return s;
    return check("cublasLtMatrixLayoutSetAttribute",
                 lt.cublasLtMatrixLayoutSetAttribute(
                     *layoutOut, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &stride, sizeof(stride)));
  };
  int64_t resultStride = p.m * p.n;
  if (absl::Status s = layout(&desc.a, types->data, p.ltARows, p.ltACols, p.ltALd, p.ltAStride);
      !s.ok())
    return s;
  if (absl::Status s = layout(&desc.b, types->data, p.ltBRows, p.ltBCols, p.ltBLd, p.ltBStride);
      !s.ok())
    return s;
  if (absl::Status s = layout(&desc.c, types->result, p.m, p.n, p.m, resultStride); !s.ok())
    return s;
  if (absl::Status s = layout(&desc.d, types->result, p.m, p.n, p.m, resultStride); !s.ok())
    return s;

  if (absl::Status s = check("cublasLtMatmulDescCreate",
                             lt.cublasLtMatmulDescCreate(&desc.op, types->compute, types->scale));
      !s.ok())
    return s;
  auto attribute = [&](cublasLtMatmulDescAttributes_t which, const void *value, size_t size) {
    return check("cublasLtMatmulDescSetAttribute",
                 lt.cublasLtMatmulDescSetAttribute(desc.op, which, value, size));
  };
  int32_t opA = p.ltAOp, opB = p.ltBOp;
  // A vector bias rides in the epilogue (BIAS, RELU_BIAS, GELU_BIAS); a
  // full-shape one came in as C, added before the activation either way.
  bool vectorBias = p.bias == Problem::Bias::Vector;
  uint32_t epilogue = vectorBias ? CUBLASLT_EPILOGUE_BIAS : CUBLASLT_EPILOGUE_DEFAULT;
  if (params.activation == Epilogue::relu)
    epilogue = vectorBias ? CUBLASLT_EPILOGUE_RELU_BIAS : CUBLASLT_EPILOGUE_RELU;
  else if (params.activation == Epilogue::gelu_tanh)
    epilogue = vectorBias ? CUBLASLT_EPILOGUE_GELU_BIAS : CUBLASLT_EPILOGUE_GELU;
  const void *biasPointer = reinterpret_cast<const void *>(call.biasAddress);
  for (absl::Status s :
       {attribute(CUBLASLT_MATMUL_DESC_TRANSA, &opA, sizeof(opA)),
        attribute(CUBLASLT_MATMUL_DESC_TRANSB, &opB, sizeof(opB)),
        attribute(CUBLASLT_MATMUL_DESC_EPILOGUE, &epilogue, sizeof(epilogue)),
        p.bias == Problem::Bias::Vector
            ? attribute(CUBLASLT_MATMUL_DESC_BIAS_POINTER, &biasPointer, sizeof(biasPointer))
            : absl::OkStatus()})
    if (!s.ok())
      return s;

  // Every call's pointers (one per index of the outer, partially broadcast,
  // batch dims), and the alignment all of them have, per matrix: what the
  // heuristic is told, so it picks an algorithm every call can take.
  size_t element = ref::info(call.dtype).bytes, resultElement = ref::info(call.resultDtype).bytes;
  int64_t calls = product(p.outer, 0, p.outer.size());
  std::vector<int64_t> index(p.outer.size(), 0);
  uint32_t alignment[4] = {256, 256, 256, 256};
  for (int64_t c = 0; c < calls; ++c) {
    int64_t aOffset = 0, bOffset = 0, dOffset = 0;
    for (size_t i = 0; i < index.size(); ++i) {
      aOffset += index[i] * p.aOuterStrides[i];
      bOffset += index[i] * p.bOuterStrides[i];
      dOffset += index[i] * p.dOuterStrides[i];
    }
    uintptr_t aAddress = call.aAddress + static_cast<uintptr_t>(aOffset) * element;
    uintptr_t bAddress = call.bAddress + static_cast<uintptr_t>(bOffset) * element;
    uintptr_t dAddress = call.resultAddress + static_cast<uintptr_t>(dOffset) * resultElement;
    // C is the bias for a full-size bias (beta = 1), else D itself (beta = 0).
    uintptr_t cAddress = p.bias == Problem::Bias::Matrix
                             ? call.biasAddress + static_cast<uintptr_t>(dOffset) * resultElement
                             : dAddress;
    // cuBLASLt's A is kiln's b and its B kiln's a (see Problem).
    out.addresses.push_back({bAddress, aAddress, cAddress, dAddress});
    for (int m = 0; m < 4; ++m)
      alignment[m] = std::min(alignment[m], alignmentOf(out.addresses.back()[m]));
    for (size_t i = index.size(); i-- > 0;) {
      if (++index[i] < p.outer[i])
        break;
      index[i] = 0;
    }
  }

  std::string key = absl::StrCat(
      static_cast<int>(call.dtype), ">", static_cast<int>(call.resultDtype),
      params.allowTf32 ? "tf32," : ",", p.m, ",", p.n, ",", p.k, ",",
      p.batch, ",", p.ltAStride, ",", p.ltBStride, ",", opA, ",", opB, ",", epilogue, ",",
      p.bias == Problem::Bias::Matrix, ",align ", alignment[0], "/", alignment[1], "/",
      alignment[2], "/", alignment[3]);
  out.key = key;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (auto it = algorithms_.find(key); it != algorithms_.end()) {
      if (!it->second.refused.empty())
        return absl::UnimplementedError(it->second.refused);
      out.algo = it->second.algo;
      out.workspace = it->second.workspace;
      return absl::OkStatus();
    }
  }
  if (absl::Status s = check("cublasLtMatmulPreferenceCreate",
                             lt.cublasLtMatmulPreferenceCreate(&desc.preference));
      !s.ok())
    return s;
  uint64_t limit = kWorkspaceBytes;
  const cublasLtMatmulPreferenceAttributes_t alignments[4] = {
      CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES,
      CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES};
  if (absl::Status s = check("cublasLtMatmulPreferenceSetAttribute",
                             lt.cublasLtMatmulPreferenceSetAttribute(
                                 desc.preference, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &limit,
                                 sizeof(limit)));
      !s.ok())
    return s;
  for (int m = 0; m < 4; ++m)
    if (absl::Status s = check("cublasLtMatmulPreferenceSetAttribute",
                               lt.cublasLtMatmulPreferenceSetAttribute(
                                   desc.preference, alignments[m], &alignment[m],
                                   sizeof(alignment[m])));
        !s.ok())
      return s;
  cublasLtMatmulHeuristicResult_t result = {};
  int found = 0;
  cublasStatus_t asked = lt.cublasLtMatmulAlgoGetHeuristic(handle_, desc.op, desc.a, desc.b, desc.c,
                                                           desc.d, desc.preference, 1, &result,
                                                           &found);
  Algorithm answer;
  if (asked == CUBLAS_STATUS_NOT_SUPPORTED || (asked == CUBLAS_STATUS_SUCCESS &&
                                               (found == 0 || result.state != CUBLAS_STATUS_SUCCESS)))
    answer.refused = absl::StrCat("cuBLASLt has no algorithm for this matmul (", key, ")");
  else if (asked != CUBLAS_STATUS_SUCCESS)
    return absl::InternalError(lt.describe("cublasLtMatmulAlgoGetHeuristic", asked));
  answer.algo = result.algo;
  answer.workspace = result.workspaceSize;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    algorithms_.emplace(key, answer);
  }
  if (!answer.refused.empty())
    return absl::UnimplementedError(answer.refused);
  out.algo = answer.algo;
  out.workspace = answer.workspace;
  return absl::OkStatus();
}

absl::Status MatmulRunner::run(const MatMulParams &params, const MatmulCall &call, CUstream stream,
                               WorkspaceFn workspaceFor) const {
  {
    std::optional<Problem> problem = plan(params, call);
    if (!problem)
      return absl::InternalError("the matmul does not map onto cuBLASLt");
    // An empty result: no call, no algorithm. Empty outer dims ([0, 2] of
    // which only the 2 is cuBLASLt's strided batch) are no call either.
    if (problem->m == 0 || problem->n == 0 || problem->batch == 0 ||
        product(problem->outer, 0, problem->outer.size()) == 0)
      return absl::OkStatus();
  }
  const CublasLt &lt = *lt_;
  Prepared prepared(lt);
  if (absl::Status s = prepare(params, call, prepared); !s.ok())
    return s;
  absl::StatusOr<std::pair<uintptr_t, size_t>> given = workspaceFor(prepared.workspace);
  if (!given.ok())
    return given.status();
  auto [workspace, workspaceBytes] = *given;
  if (prepared.workspace > workspaceBytes)
    return absl::InternalError(absl::StrCat("the matmul's algorithm needs ", prepared.workspace,
                                            " bytes of workspace; the context gave ",
                                            workspaceBytes));
  // alpha and beta in the scale type.
  float alpha32 = static_cast<float>(params.alpha), beta32 = 0;
  double alpha64 = params.alpha, beta64 = 0;
  int32_t alphaInt = static_cast<int32_t>(params.alpha), betaInt = 0;
  if (prepared.problem.bias == Problem::Bias::Matrix)
    beta32 = 1, beta64 = 1, betaInt = 1;
  const void *alpha = &alpha32, *beta = &beta32;
  if (prepared.types.scale == CUDA_R_64F)
    alpha = &alpha64, beta = &beta64;
  else if (prepared.types.scale == CUDA_R_32I)
    alpha = &alphaInt, beta = &betaInt;
  const Descriptors &desc = prepared.desc;
  for (const std::array<uintptr_t, 4> &a : prepared.addresses) {
    cublasStatus_t s = lt.cublasLtMatmul(
        handle_, desc.op, alpha, reinterpret_cast<const void *>(a[0]), desc.a,
        reinterpret_cast<const void *>(a[1]), desc.b, beta, reinterpret_cast<const void *>(a[2]),
        desc.c, reinterpret_cast<void *>(a[3]), desc.d, &prepared.algo,
        reinterpret_cast<void *>(workspace), workspaceBytes, stream);
    // A refusal of the call itself (the algorithm cannot take these
    // operands): the step runs elsewhere, as for no algorithm at all, and
    // so does every later call of this problem.
    if (s == CUBLAS_STATUS_NOT_SUPPORTED) {
      std::string refused = lt.describe("cublasLtMatmul", s);
      std::lock_guard<std::mutex> lock(mutex_);
      algorithms_[prepared.key].refused = refused;
      return absl::UnimplementedError(refused);
    }
    if (s != CUBLAS_STATUS_SUCCESS)
      return absl::InternalError(lt.describe("cublasLtMatmul", s));
  }
  return absl::OkStatus();
}

} // namespace kiln::rt
