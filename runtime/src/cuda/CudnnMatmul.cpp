//===- CudnnMatmul.cpp - a matmul and its epilogue as one cuDNN graph -----===//
//
// cuBLASLt's epilogues stop at ReLU and the tanh GELU. A matmul whose
// activation is the exact (erf) GELU or SiLU runs as a graph of cuDNN's
// backend API instead: a matmul operation into a virtual f32 tensor, a
// pointwise ADD of the bias (a [1, 1, N] vector or a residual of the result's
// dims) into another, and the pointwise activation (GELU_FWD, SWISH_FWD with
// its default beta 1) into the result, which cuDNN's runtime fusion engines
// compile into one kernel: the intermediate is never stored.
//
// Mapping: operands as 3-D [batch, M, K] and [batch, K, N] tensors, a
// transposed one through its strides; a 2-D weight with a batched left
// operand (a Linear over [B, S, H]) folds the batch into M, since cuDNN's
// engines want equal batches; other batch broadcasting stays on the host.
// Each tensor states its pointer's real alignment (up to 16 bytes), which is
// part of the problem's key. The heuristic's configurations are tried in
// order; one is skipped when its numerical notes say it converts inputs
// down or reduces in reduced precision, and for f32 operands when it uses
// tensor cores (TF32) unless the artifact allows TF32. The first that
// finalizes into an execution plan within the workspace limit is kept per
// problem; none is a refusal (UNIMPLEMENTED), which the executor answers by
// running the step on the host.
//
//===----------------------------------------------------------------------===//

#include "cuda/Cudnn.h"

#include "cuda/Alignment.h"

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

#include <array>
#include <optional>
#include <tuple>

namespace kiln::rt {

struct GraphPlan {
  const Cudnn *dnn = nullptr;
  /// Every descriptor the plan was built from, destroyed last first.
  std::vector<cudnnBackendDescriptor_t> owned;
  cudnnBackendDescriptor_t plan = nullptr;
  int64_t workspaceBytes = 0;
  /// Why there is no plan; empty when there is one.
  std::string refused;
};

void GraphPlanDeleter::operator()(GraphPlan *plan) const {
  for (auto it = plan->owned.rbegin(); it != plan->owned.rend(); ++it)
    plan->dnn->cudnnBackendDestroyDescriptor(*it);
  delete plan;
}

namespace {

/// A fused matmul as cuDNN's graph takes it.
struct FusedProblem {
  cudnnDataType_t data = CUDNN_DATA_FLOAT;
  cudnnPointwiseMode_t mode = CUDNN_POINTWISE_GELU_FWD;
  int64_t batch = 1, m = 0, n = 0, k = 0;
  std::array<int64_t, 3> aStrides{}, bStrides{};
  enum class Bias { none, vector, residual } bias = Bias::none;
};

std::optional<cudnnDataType_t> graphType(ref::DType dtype) {
  switch (dtype) {
  case ref::DType::f32: return CUDNN_DATA_FLOAT;
  case ref::DType::f16: return CUDNN_DATA_HALF;
  case ref::DType::bf16: return CUDNN_DATA_BFLOAT16;
  default: return std::nullopt;
  }
}

std::optional<cudnnPointwiseMode_t> pointwiseMode(Epilogue activation) {
  switch (activation) {
  case Epilogue::gelu_erf: return CUDNN_POINTWISE_GELU_FWD;
  case Epilogue::silu: return CUDNN_POINTWISE_SWISH_FWD;
  default: return std::nullopt;
  }
}

std::optional<FusedProblem> planFused(const MatMulParams &params, const MatmulCall &call) {
  std::optional<cudnnDataType_t> data = graphType(call.dtype);
  std::optional<cudnnPointwiseMode_t> mode = pointwiseMode(params.activation);
  const ref::Shape &a = call.a, &b = call.b;
  if (!data || !mode || params.alpha != 1.0 || a.size() < 2 || b.size() < 2)
    return std::nullopt;
  FusedProblem p;
  p.data = *data;
  p.mode = *mode;
  size_t ra = a.size(), rb = b.size();
  bool ta = params.transposeA, tb = params.transposeB;
  p.m = ta ? a[ra - 1] : a[ra - 2];
  int64_t ka = ta ? a[ra - 2] : a[ra - 1], kb = tb ? b[rb - 1] : b[rb - 2];
  p.n = tb ? b[rb - 2] : b[rb - 1];
  if (ka != kb)
    return std::nullopt;
  p.k = ka;
  ref::Shape aBatch(a.begin(), a.end() - 2), bBatch(b.begin(), b.end() - 2);
  int64_t batch = ref::numElements(aBatch);
  if (rb == 2 && !ta) {
    p.m *= batch; // [B, M, K] row-major is [B * M, K]
    p.batch = 1;
  } else if (aBatch == bBatch) {
    p.batch = batch;
  } else {
    return std::nullopt;
  }
  if (p.batch == 0 || p.m == 0 || p.n == 0 || p.k == 0 ||
      ref::numElements(call.result) != p.batch * p.m * p.n)
    return std::nullopt;
  // [batch, M, K] over A's buffer ([.., K, M] when transposed), [batch, K, N]
  // over B's ([.., N, K] when transposed).
  // A transposed A of one row is the same bytes as its row-major self:
  // described so (engines read strides, and a unit stride on both of the
  // last dims reads as rows of one element).
  bool aColumns = ta && p.m > 1;
  p.aStrides = aColumns ? std::array<int64_t, 3>{p.m * p.k, 1, p.m}
                        : std::array<int64_t, 3>{p.m * p.k, p.k, 1};
  p.bStrides =
      tb ? std::array<int64_t, 3>{p.k * p.n, 1, p.k} : std::array<int64_t, 3>{p.k * p.n, p.n, 1};
  if (params.hasBias) {
    if (call.bias.size() == 1 && call.bias[0] == p.n)
      p.bias = FusedProblem::Bias::vector;
    else if (call.bias == call.result)
      p.bias = FusedProblem::Bias::residual;
    else
      return std::nullopt;
  }
  return p;
}

/// What a tensor tells cuDNN of its pointer: its alignment up to 16 bytes
/// (engines for 16-byte aligned operands are the tensor-core ones).
int64_t alignmentOf(uintptr_t address) { return pointerAlignment(address, 16); }

std::string problemKey(const MatMulParams &params, const FusedProblem &p, const MatmulCall &call) {
  return absl::StrCat(static_cast<int>(p.data), "|", static_cast<int>(p.mode), "|",
                      params.allowTf32 ? "tf32|" : "|", p.batch, ",", p.m, ",", p.n, ",", p.k, "|",
                      absl::StrJoin(p.aStrides, ","), "|", absl::StrJoin(p.bStrides, ","), "|",
                      static_cast<int>(p.bias), "|", alignmentOf(call.aAddress), ",",
                      alignmentOf(call.bAddress), ",", alignmentOf(call.biasAddress), ",",
                      alignmentOf(call.resultAddress));
}

/// Unique ids of the graph's tensors (the variant pack's keys).
enum Uid : int64_t { kA = 1, kB, kBias, kResult, kProduct, kBiased };

/// Builds one graph's descriptors into a GraphPlan; the first failure is
/// kept as the plan's refusal.
class GraphBuilder {
public:
  /// Descriptors made go to `owned`; the first failure's message to `refused`.
  GraphBuilder(const Cudnn &dnn, std::vector<cudnnBackendDescriptor_t> &owned, std::string &refused)
      : dnn_(dnn), owned_(owned), refused_(refused) {}

  bool ok() const { return refused_.empty(); }

  cudnnBackendDescriptor_t make(cudnnBackendDescriptorType_t type, const char *what) {
    cudnnBackendDescriptor_t d = nullptr;
    if (!ok())
      return nullptr;
    if (cudnnStatus_t s = dnn_.cudnnBackendCreateDescriptor(type, &d); s != CUDNN_STATUS_SUCCESS) {
      fail(absl::StrCat("cudnnBackendCreateDescriptor(", what, ")"), s);
      return nullptr;
    }
    owned_.push_back(d);
    return d;
  }
  void set(cudnnBackendDescriptor_t d, cudnnBackendAttributeName_t name,
           cudnnBackendAttributeType_t type, int64_t count, const void *values, const char *what) {
    if (!ok())
      return;
    if (cudnnStatus_t s = dnn_.cudnnBackendSetAttribute(d, name, type, count, values);
        s != CUDNN_STATUS_SUCCESS)
      fail(absl::StrCat("cudnnBackendSetAttribute(", what, ")"), s);
  }
  void finalize(cudnnBackendDescriptor_t d, const char *what) {
    if (!ok())
      return;
    if (cudnnStatus_t s = dnn_.cudnnBackendFinalize(d); s != CUDNN_STATUS_SUCCESS)
      fail(absl::StrCat("cudnnBackendFinalize(", what, ")"), s);
  }
  /// A NOT_SUPPORTED status is cuDNN's refusal of the graph; any other is
  /// an error in what kiln asked (`failedHard`), which is not kept.
  void fail(const std::string &call, cudnnStatus_t s) {
    if (!ok())
      return;
    refused_ = dnn_.describe(call.c_str(), s);
    failedHard_ = CUDNN_STATUS_CATEGORY(s) != CUDNN_STATUS_NOT_SUPPORTED;
  }
  bool failedHard() const { return failedHard_; }

  cudnnBackendDescriptor_t tensor(Uid uid, cudnnDataType_t type, std::array<int64_t, 3> dims,
                                  std::array<int64_t, 3> strides, int64_t alignment,
                                  bool isVirtual) {
    cudnnBackendDescriptor_t t = make(CUDNN_BACKEND_TENSOR_DESCRIPTOR, "tensor");
    int64_t id = uid;
    set(t, CUDNN_ATTR_TENSOR_DATA_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &type, "tensor type");
    set(t, CUDNN_ATTR_TENSOR_DIMENSIONS, CUDNN_TYPE_INT64, 3, dims.data(), "tensor dims");
    set(t, CUDNN_ATTR_TENSOR_STRIDES, CUDNN_TYPE_INT64, 3, strides.data(), "tensor strides");
    set(t, CUDNN_ATTR_TENSOR_UNIQUE_ID, CUDNN_TYPE_INT64, 1, &id, "tensor id");
    set(t, CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT, CUDNN_TYPE_INT64, 1, &alignment, "tensor alignment");
    set(t, CUDNN_ATTR_TENSOR_IS_VIRTUAL, CUDNN_TYPE_BOOLEAN, 1, &isVirtual, "tensor virtual");
    finalize(t, "tensor");
    return t;
  }

  /// y = mode(x) or, for a binary mode, mode(x, b); f32 math.
  cudnnBackendDescriptor_t pointwise(cudnnPointwiseMode_t mode, cudnnBackendDescriptor_t x,
                                     cudnnBackendDescriptor_t b, cudnnBackendDescriptor_t y) {
    cudnnBackendDescriptor_t fn = make(CUDNN_BACKEND_POINTWISE_DESCRIPTOR, "pointwise");
    cudnnDataType_t precision = CUDNN_DATA_FLOAT;
    set(fn, CUDNN_ATTR_POINTWISE_MODE, CUDNN_TYPE_POINTWISE_MODE, 1, &mode, "pointwise mode");
    set(fn, CUDNN_ATTR_POINTWISE_MATH_PREC, CUDNN_TYPE_DATA_TYPE, 1, &precision,
        "pointwise precision");
    if (mode == CUDNN_POINTWISE_SWISH_FWD) { // SiLU: x sigmoid(1 x), not the library's default
      double beta = 1.0;
      set(fn, CUDNN_ATTR_POINTWISE_SWISH_BETA, CUDNN_TYPE_DOUBLE, 1, &beta, "swish beta");
    }
    finalize(fn, "pointwise");
    cudnnBackendDescriptor_t op =
        make(CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR, "pointwise op");
    set(op, CUDNN_ATTR_OPERATION_POINTWISE_PW_DESCRIPTOR, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &fn,
        "pointwise op's function");
    set(op, CUDNN_ATTR_OPERATION_POINTWISE_XDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &x,
        "pointwise x");
    if (b)
      set(op, CUDNN_ATTR_OPERATION_POINTWISE_BDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &b,
          "pointwise b");
    set(op, CUDNN_ATTR_OPERATION_POINTWISE_YDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &y,
        "pointwise y");
    finalize(op, "pointwise op");
    return op;
  }

private:
  const Cudnn &dnn_;
  std::vector<cudnnBackendDescriptor_t> &owned_;
  std::string &refused_;
  bool failedHard_ = false;
};

/// Whether an engine's numerical notes fit the step: no inputs converted
/// down, no reduced-precision reduction, and for f32 data no tensor cores
/// (TF32) unless allowed.
bool notesFit(const std::vector<cudnnBackendNumericalNote_t> &notes, cudnnDataType_t data,
              bool allowTf32) {
  for (cudnnBackendNumericalNote_t note : notes) {
    if (note == CUDNN_NUMERICAL_NOTE_DOWN_CONVERT_INPUTS ||
        note == CUDNN_NUMERICAL_NOTE_REDUCED_PRECISION_REDUCTION)
      return false;
    if (note == CUDNN_NUMERICAL_NOTE_TENSOR_CORE && data == CUDNN_DATA_FLOAT && !allowTf32)
      return false;
  }
  return true;
}

/// The graph of problem `p` (A, B, the f32 sums, the bias added, the
/// activation into the result), its descriptors built through `g`.
cudnnBackendDescriptor_t describeGraph(GraphBuilder &g, const FusedProblem &p,
                                       const MatmulCall &call, cudnnHandle_t handle) {
  std::array<int64_t, 3> product{p.batch, p.m, p.n}, packed{p.m * p.n, p.n, 1};
  cudnnBackendDescriptor_t a =
      g.tensor(kA, p.data, {p.batch, p.m, p.k}, p.aStrides, alignmentOf(call.aAddress), false);
  cudnnBackendDescriptor_t b =
      g.tensor(kB, p.data, {p.batch, p.k, p.n}, p.bStrides, alignmentOf(call.bAddress), false);
  cudnnBackendDescriptor_t sums =
      g.tensor(kProduct, CUDNN_DATA_FLOAT, product, packed, 16, /*isVirtual=*/true);
  cudnnBackendDescriptor_t y =
      g.tensor(kResult, p.data, product, packed, alignmentOf(call.resultAddress), false);
  std::vector<cudnnBackendDescriptor_t> ops;
  cudnnBackendDescriptor_t comp = g.make(CUDNN_BACKEND_MATMUL_DESCRIPTOR, "matmul");
  cudnnDataType_t compute = CUDNN_DATA_FLOAT;
  g.set(comp, CUDNN_ATTR_MATMUL_COMP_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &compute,
        "matmul compute type");
  g.finalize(comp, "matmul");
  cudnnBackendDescriptor_t mm = g.make(CUDNN_BACKEND_OPERATION_MATMUL_DESCRIPTOR, "matmul op");
  g.set(mm, CUDNN_ATTR_OPERATION_MATMUL_ADESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &a, "matmul a");
  g.set(mm, CUDNN_ATTR_OPERATION_MATMUL_BDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &b, "matmul b");
  g.set(mm, CUDNN_ATTR_OPERATION_MATMUL_CDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &sums, "matmul c");
  g.set(mm, CUDNN_ATTR_OPERATION_MATMUL_DESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &comp,
        "matmul desc");
  g.finalize(mm, "matmul op");
  ops.push_back(mm);
  cudnnBackendDescriptor_t activationInput = sums;
  if (p.bias != FusedProblem::Bias::none) {
    bool vector = p.bias == FusedProblem::Bias::vector;
    cudnnBackendDescriptor_t bias =
        g.tensor(kBias, p.data, vector ? std::array<int64_t, 3>{1, 1, p.n} : product,
                 vector ? std::array<int64_t, 3>{p.n, p.n, 1} : packed,
                 alignmentOf(call.biasAddress), false);
    cudnnBackendDescriptor_t biased =
        g.tensor(kBiased, CUDNN_DATA_FLOAT, product, packed, 16, /*isVirtual=*/true);
    ops.push_back(g.pointwise(CUDNN_POINTWISE_ADD, sums, bias, biased));
    activationInput = biased;
  }
  ops.push_back(g.pointwise(p.mode, activationInput, nullptr, y));
  cudnnBackendDescriptor_t graph =
      g.make(CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR, "operation graph");
  g.set(graph, CUDNN_ATTR_OPERATIONGRAPH_OPS, CUDNN_TYPE_BACKEND_DESCRIPTOR,
        static_cast<int64_t>(ops.size()), ops.data(), "graph ops");
  g.set(graph, CUDNN_ATTR_OPERATIONGRAPH_HANDLE, CUDNN_TYPE_HANDLE, 1, &handle, "graph handle");
  g.finalize(graph, "operation graph");
  return graph;
}

/// The heuristic's configurations for `graph`, tried in order: the first
/// whose notes fit and that finalizes into a plan within the workspace limit
/// becomes `plan`'s; none leaves `plan.refused` saying why.
void choosePlan(const Cudnn &dnn, GraphBuilder &g, cudnnHandle_t handle,
                cudnnBackendDescriptor_t graph, const FusedProblem &p, bool allowTf32,
                size_t maxWorkspace, GraphPlan &plan) {
  cudnnBackendDescriptor_t heuristic = g.make(CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR, "heuristic");
  cudnnBackendHeurMode_t heurMode = CUDNN_HEUR_MODE_A;
  g.set(heuristic, CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &graph,
        "heuristic graph");
  g.set(heuristic, CUDNN_ATTR_ENGINEHEUR_MODE, CUDNN_TYPE_HEUR_MODE, 1, &heurMode,
        "heuristic mode");
  g.finalize(heuristic, "heuristic");
  int64_t offered = 0;
  if (g.ok())
    if (cudnnStatus_t s =
            dnn.cudnnBackendGetAttribute(heuristic, CUDNN_ATTR_ENGINEHEUR_RESULTS,
                                         CUDNN_TYPE_BACKEND_DESCRIPTOR, 0, &offered, nullptr);
        s != CUDNN_STATUS_SUCCESS)
      g.fail("cudnnBackendGetAttribute(heuristic results)", s);
  std::vector<cudnnBackendDescriptor_t> configs;
  for (int64_t i = 0; g.ok() && i < offered; ++i)
    configs.push_back(g.make(CUDNN_BACKEND_ENGINECFG_DESCRIPTOR, "engine config"));
  int64_t returned = 0;
  if (g.ok() && offered > 0)
    if (cudnnStatus_t s = dnn.cudnnBackendGetAttribute(heuristic, CUDNN_ATTR_ENGINEHEUR_RESULTS,
                                                       CUDNN_TYPE_BACKEND_DESCRIPTOR, offered,
                                                       &returned, configs.data());
        s != CUDNN_STATUS_SUCCESS)
      g.fail("cudnnBackendGetAttribute(heuristic results)", s);
  // A configuration that does not make a plan is skipped, not fatal: the
  // next may.
  std::string skipped;
  for (int64_t i = 0; g.ok() && i < returned && !plan.plan; ++i) {
    cudnnBackendDescriptor_t engine = g.make(CUDNN_BACKEND_ENGINE_DESCRIPTOR, "engine");
    int64_t one = 0, count = 0;
    std::vector<cudnnBackendNumericalNote_t> notes(CUDNN_NUMERICAL_NOTE_TYPE_COUNT);
    if (!g.ok() ||
        dnn.cudnnBackendGetAttribute(configs[i], CUDNN_ATTR_ENGINECFG_ENGINE,
                                     CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &one,
                                     &engine) != CUDNN_STATUS_SUCCESS ||
        dnn.cudnnBackendGetAttribute(engine, CUDNN_ATTR_ENGINE_NUMERICAL_NOTE,
                                     CUDNN_TYPE_NUMERICAL_NOTE, static_cast<int64_t>(notes.size()),
                                     &count, notes.data()) != CUDNN_STATUS_SUCCESS) {
      skipped = "an engine's numerical notes could not be read";
      continue;
    }
    notes.resize(static_cast<size_t>(count));
    if (!notesFit(notes, p.data, allowTf32)) {
      skipped =
          p.data == CUDNN_DATA_FLOAT && !allowTf32
              ? "its engines use TF32 tensor cores on f32 data, which the artifact does not allow"
              : "its engines convert inputs down or reduce in reduced precision";
      continue;
    }
    cudnnBackendDescriptor_t candidate =
        g.make(CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR, "execution plan");
    if (!g.ok())
      break;
    int64_t workspace = 0;
    if (dnn.cudnnBackendSetAttribute(candidate, CUDNN_ATTR_EXECUTION_PLAN_HANDLE, CUDNN_TYPE_HANDLE,
                                     1, &handle) != CUDNN_STATUS_SUCCESS ||
        dnn.cudnnBackendSetAttribute(candidate, CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG,
                                     CUDNN_TYPE_BACKEND_DESCRIPTOR, 1,
                                     &configs[i]) != CUDNN_STATUS_SUCCESS) {
      skipped = "an execution plan could not be described";
      continue;
    }
    if (cudnnStatus_t s = dnn.cudnnBackendFinalize(candidate); s != CUDNN_STATUS_SUCCESS) {
      skipped = dnn.describe("cudnnBackendFinalize(execution plan)", s);
      continue;
    }
    if (dnn.cudnnBackendGetAttribute(candidate, CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE,
                                     CUDNN_TYPE_INT64, 1, &one,
                                     &workspace) != CUDNN_STATUS_SUCCESS ||
        workspace < 0 || static_cast<size_t>(workspace) > maxWorkspace) {
      skipped = "its plan needs more workspace than the limit";
      continue;
    }
    plan.plan = candidate;
    plan.workspaceBytes = workspace;
  }
  if (g.ok() && !plan.plan)
    plan.refused = absl::StrCat("cuDNN has no engine for the fused matmul",
                                skipped.empty() ? "" : absl::StrCat(": ", skipped));
}

/// Runs `plan` on `call`'s operands: a variant pack of this call's pointers
/// (the plan is per problem, the pointers per call).
absl::Status execute(const Cudnn &dnn, cudnnHandle_t handle, CUstream stream, const GraphPlan &plan,
                     const FusedProblem &p, const MatmulCall &call, void *workspace) {
  std::vector<int64_t> uids = {kA, kB, kResult};
  std::vector<void *> pointers = {reinterpret_cast<void *>(call.aAddress),
                                  reinterpret_cast<void *>(call.bAddress),
                                  reinterpret_cast<void *>(call.resultAddress)};
  if (p.bias != FusedProblem::Bias::none) {
    uids.push_back(kBias);
    pointers.push_back(reinterpret_cast<void *>(call.biasAddress));
  }
  cudnnBackendDescriptor_t pack = nullptr;
  auto failed = [&](const char *what, cudnnStatus_t s) {
    if (pack)
      dnn.cudnnBackendDestroyDescriptor(pack);
    return absl::InternalError(dnn.describe(what, s));
  };
  if (cudnnStatus_t s =
          dnn.cudnnBackendCreateDescriptor(CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR, &pack);
      s != CUDNN_STATUS_SUCCESS)
    return failed("cudnnBackendCreateDescriptor(variant pack)", s);
  int64_t n = static_cast<int64_t>(uids.size());
  for (auto [name, type, count, values] :
       {std::tuple{CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS, CUDNN_TYPE_INT64, n,
                   static_cast<const void *>(uids.data())},
        std::tuple{CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS, CUDNN_TYPE_VOID_PTR, n,
                   static_cast<const void *>(pointers.data())},
        std::tuple{CUDNN_ATTR_VARIANT_PACK_WORKSPACE, CUDNN_TYPE_VOID_PTR, int64_t{1},
                   static_cast<const void *>(&workspace)}})
    if (cudnnStatus_t s = dnn.cudnnBackendSetAttribute(pack, name, type, count, values);
        s != CUDNN_STATUS_SUCCESS)
      return failed("cudnnBackendSetAttribute(variant pack)", s);
  if (cudnnStatus_t s = dnn.cudnnBackendFinalize(pack); s != CUDNN_STATUS_SUCCESS)
    return failed("cudnnBackendFinalize(variant pack)", s);
  if (cudnnStatus_t s = dnn.cudnnSetStream(handle, stream); s != CUDNN_STATUS_SUCCESS)
    return failed("cudnnSetStream", s);
  if (cudnnStatus_t s = dnn.cudnnBackendExecute(handle, plan.plan, pack); s != CUDNN_STATUS_SUCCESS)
    return failed("cudnnBackendExecute", s);
  dnn.cudnnBackendDestroyDescriptor(pack);
  return absl::OkStatus();
}

} // namespace

bool DnnRunner::supportsMatmul(const MatMulParams &params, const MatmulCall &call) {
  return planFused(params, call).has_value();
}

absl::Status DnnRunner::matmul(const MatMulParams &params, const MatmulCall &call, CUstream stream,
                               WorkspaceFn workspaceFor) const {
  std::optional<FusedProblem> problem = planFused(params, call);
  if (!problem)
    return absl::InternalError("the matmul does not map onto a cuDNN graph");
  const Cudnn &dnn = *dnn_;
  std::string key = problemKey(params, *problem, call);
  std::lock_guard<std::mutex> lock(mutex_);
  auto found = graphPlans_.find(key);
  if (found == graphPlans_.end()) {
    std::unique_ptr<GraphPlan, GraphPlanDeleter> plan(new GraphPlan());
    plan->dnn = dnn_;
    GraphBuilder g(dnn, plan->owned, plan->refused);
    cudnnBackendDescriptor_t graph = describeGraph(g, *problem, call, handle_);
    choosePlan(dnn, g, handle_, graph, *problem, params.allowTf32, kMaxWorkspaceBytes, *plan);
    // A descriptor cuDNN rejected (not a graph it does not support) is a
    // fault in kiln's mapping, or a transient one: an error, and not kept.
    if (g.failedHard())
      return absl::InternalError(absl::StrCat("fused matmul: ", plan->refused));
    found = graphPlans_.emplace(key, std::move(plan)).first;
  }
  const GraphPlan &plan = *found->second;
  if (!plan.refused.empty())
    return absl::UnimplementedError(plan.refused);
  absl::StatusOr<std::pair<uintptr_t, size_t>> space =
      workspaceFor(static_cast<size_t>(plan.workspaceBytes));
  if (!space.ok())
    return space.status();
  return execute(dnn, handle_, stream, plan, *problem, call,
                 reinterpret_cast<void *>(space->first));
}

} // namespace kiln::rt
