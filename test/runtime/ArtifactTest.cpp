// The runtime's artifact reader, executor and memory planner on artifacts built
// here with the schema's own builder: no compiler, no kernels (library steps and
// shape steps only), so these run wherever the runtime builds.

#include "kiln/artifact/MemoryPlan.h"
#include "kiln/artifact/Plan.h"
#include "kiln/schema/kiln_variants_generated.h"
#include "kiln/runtime.h"
#include "kiln/runtime.hpp"

#include <gtest/gtest.h>

#include <fstream>
#include <functional>
#include <string>

namespace {
namespace fb = kiln::schema;

/// What a test may break in the artifact it builds.
struct Damage {
  int stepInput = 0;     ///< the matmul's first input value
  int weightIndex = 0;   ///< the weight value's index into the weight table
  int64_t symbol = 0;    ///< the symbol number of x's first dim
  uint32_t version = kiln::artifact::kFormatVersion;
  bool matmulBias = false; ///< claims a bias input the step does not have
  uint8_t activation = 0;  ///< the matmul's activation enum value
  int64_t predicateSymbol = 0; ///< the symbol of the predicate `n <= 4` (1: 'm', bound by nothing)
  int deviceSymbol = -1;       ///< a Model.device_symbols entry for this symbol (bound 4); -1 none
};

/// The dims of hand-built artifacts: an expression's ops, one symbol, one
/// constant.
struct DimBuilder {
  flatbuffers::FlatBufferBuilder &b;
  flatbuffers::Offset<fb::Dim> operator()(std::vector<fb::ExprOp> ops) const {
    return fb::CreateDim(b, b.CreateVectorOfStructs(ops));
  }
  flatbuffers::Offset<fb::Dim> sym(int64_t s) const {
    return (*this)({fb::ExprOp(fb::ExprKind::Symbol, s)});
  }
  flatbuffers::Offset<fb::Dim> lit(int64_t v) const {
    return (*this)({fb::ExprOp(fb::ExprKind::Constant, v)});
  }
};

/// The finished, checksummed bytes of a hand-built model.
std::string sealedBytes(flatbuffers::FlatBufferBuilder &b, flatbuffers::Offset<fb::Model> model) {
  fb::FinishModelBuffer(b, model);
  std::string bytes(reinterpret_cast<const char *>(b.GetBufferPointer()), b.GetSize());
  kiln::artifact::sealArtifact(reinterpret_cast<uint8_t *>(bytes.data()), bytes.size());
  return bytes;
}

/// x: f32[n, 2] -> y = x @ w (w: f32[2, 3] weight), s = shape_of(y), c = [n, 3]
std::string buildArtifact(const Damage &damage = {}) {
  flatbuffers::FlatBufferBuilder b;
  DimBuilder dim{b};
  auto sym = [&](int64_t s) { return dim.sym(s); };
  auto lit = [&](int64_t v) { return dim.lit(v); };
  auto value = [&](const char *name, fb::DType t, std::vector<flatbuffers::Offset<fb::Dim>> shape,
                   fb::ValueKind kind, int weight = -1) {
    return fb::CreateValue(b, b.CreateString(name), t, b.CreateVector(shape), kind, weight);
  };
  std::vector<flatbuffers::Offset<fb::Value>> values = {
      value("x", fb::DType::f32, {sym(damage.symbol), lit(2)}, fb::ValueKind::Input),
      value("", fb::DType::f32, {lit(2), lit(3)}, fb::ValueKind::Weight, damage.weightIndex),
      value("y", fb::DType::f32, {sym(0), lit(3)}, fb::ValueKind::Intermediate),
      value("s", fb::DType::i64, {lit(2)}, fb::ValueKind::Intermediate),
      value("c", fb::DType::i64, {lit(2)}, fb::ValueKind::Intermediate),
  };
  std::vector<float> w = {1, 2, 3, 4, 5, 6};
  std::vector<uint8_t> blob(reinterpret_cast<uint8_t *>(w.data()),
                            reinterpret_cast<uint8_t *>(w.data()) + 24);
  auto matmul = fb::CreateMatMul(b, false, false, 1.0, damage.matmulBias,
                                 static_cast<fb::Activation>(damage.activation));
  auto constant = fb::CreateSymbolicConstant(
      b, b.CreateVector(std::vector<flatbuffers::Offset<fb::Dim>>{sym(0), lit(3)}));
  std::vector<flatbuffers::Offset<fb::Step>> steps = {
      fb::CreateStep(b, fb::StepOp::MatMul, matmul.Union(),
                     b.CreateVector(std::vector<int>{damage.stepInput, 1}),
                     b.CreateVector(std::vector<int>{2})),
      fb::CreateStep(b, fb::StepOp::ShapeOf, fb::CreateShapeOf(b).Union(),
                     b.CreateVector(std::vector<int>{2}), b.CreateVector(std::vector<int>{3})),
      fb::CreateStep(b, fb::StepOp::SymbolicConstant, constant.Union(),
                     b.CreateVector(std::vector<int>{}), b.CreateVector(std::vector<int>{4})),
  };
  std::vector<flatbuffers::Offset<fb::Guard>> guards = {
      fb::CreateGuard(b, 0, 0, sym(0), true), fb::CreateGuard(b, 0, 1, lit(2), false)};
  std::vector<flatbuffers::Offset<fb::Weight>> weights = {fb::CreateWeight(b, 0, 24)};
  std::vector<flatbuffers::Offset<flatbuffers::String>> symbols = {b.CreateString("n"),
                                                                   b.CreateString("m")};
  std::vector<flatbuffers::Offset<fb::Predicate>> predicates = {
      fb::CreatePredicate(b, fb::PredicateKind::LessEqual, sym(damage.predicateSymbol), lit(4),
                          b.CreateString("the test's predicate"))};
  std::vector<flatbuffers::Offset<fb::DeviceSymbol>> deviceSymbols;
  if (damage.deviceSymbol >= 0)
    deviceSymbols.push_back(fb::CreateDeviceSymbol(b, damage.deviceSymbol, lit(4)));
  auto deviceSymbolVector = b.CreateVector(deviceSymbols);
  b.ForceVectorAlignment(blob.size(), 1, 64);
  auto data = b.CreateVector(blob);
  b.ForceDefaults(true);
  auto model = fb::CreateModel(
      b, damage.version, b.CreateString("test"), b.CreateString("test"), b.CreateVector(symbols),
      b.CreateVector(values), b.CreateVector(std::vector<int>{0}),
      b.CreateVector(std::vector<int>{2, 3, 4}), b.CreateVector(guards), b.CreateVector(steps), 0, 0,
      0, b.CreateVector(weights), data, 0, 0, 0, 0, b.CreateVector(predicates), 0, 0,
      deviceSymbolVector);
  return sealedBytes(b, model);
}

kiln_status_t load(const std::string &bytes, kiln_model_t **model) {
  return kiln_model_load_memory(bytes.data(), bytes.size(), KILN_BACKEND_HOST, model);
}

TEST(Artifact, RunsLibraryAndShapeSteps) {
  std::string bytes = buildArtifact();
  kiln::Model model;
  ASSERT_TRUE(kiln::Model::loadMemory(bytes.data(), bytes.size(), &model, KILN_BACKEND_HOST).ok())
      << kiln_last_error();
  ASSERT_EQ(model.numInputs(), 1u);
  ASSERT_EQ(model.numOutputs(), 3u);
  kiln_tensor_info_t info = model.inputInfo(0);
  EXPECT_STREQ(info.name, "x");
  EXPECT_EQ(info.dims[0], -1);
  EXPECT_STREQ(info.dim_names[0], "n");
  EXPECT_EQ(info.dims[1], 2);

  std::vector<kiln::HostTensor> inputs = {kiln::HostTensor(KILN_F32, {2, 2})};
  float x[] = {1, 0, 0, 1};
  std::memcpy(inputs[0].data.data(), x, sizeof(x));
  std::vector<kiln::HostTensor> outputs;
  kiln::Status s = model.run(inputs, &outputs);
  ASSERT_TRUE(s.ok()) << s.message();
  ASSERT_EQ(outputs[0].dims, (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(outputs[0].as<float>()[5], 6.0f);
  EXPECT_EQ(outputs[1].as<int64_t>()[0], 2);
  EXPECT_EQ(outputs[2].as<int64_t>()[0], 2);
  EXPECT_EQ(outputs[2].as<int64_t>()[1], 3);
}

TEST(Artifact, GuardsNameTheInputAndDim) {
  std::string bytes = buildArtifact();
  kiln::Model model;
  ASSERT_TRUE(kiln::Model::loadMemory(bytes.data(), bytes.size(), &model, KILN_BACKEND_HOST).ok());
  std::vector<kiln::HostTensor> outputs;
  std::vector<kiln::HostTensor> wrongDim = {kiln::HostTensor(KILN_F32, {2, 5})};
  kiln::Status s = model.run(wrongDim, &outputs);
  EXPECT_EQ(s.code(), KILN_INVALID_ARGUMENT);
  EXPECT_EQ(s.message(), "input 'x' dim 1 is 5 but the model expects 2");
  std::vector<kiln::HostTensor> wrongType = {kiln::HostTensor(KILN_F64, {2, 2})};
  s = model.run(wrongType, &outputs);
  EXPECT_EQ(s.message(), "input 'x' is f64[2, 2] but the model expects f32[n, 2]");
  std::vector<kiln::HostTensor> none;
  s = model.run(none, &outputs);
  EXPECT_EQ(s.message(), "the model takes 1 inputs, got 0");
}

TEST(Artifact, PredicatesAreCheckedAfterBinding) {
  std::string bytes = buildArtifact();
  kiln::Model model;
  ASSERT_TRUE(kiln::Model::loadMemory(bytes.data(), bytes.size(), &model, KILN_BACKEND_HOST).ok());
  std::vector<kiln::HostTensor> outputs;
  std::vector<kiln::HostTensor> four = {kiln::HostTensor(KILN_F32, {4, 2})};
  EXPECT_TRUE(model.run(four, &outputs).ok());
  std::vector<kiln::HostTensor> five = {kiln::HostTensor(KILN_F32, {5, 2})};
  kiln::Status s = model.run(five, &outputs);
  EXPECT_EQ(s.code(), KILN_INVALID_ARGUMENT);
  EXPECT_EQ(s.message(),
            "guard 'n <= 4' does not hold (n = 5) for inputs x [5, 2]: the test's predicate");

  // A predicate over a symbol no input binds could never be checked: refused at load.
  Damage unbound;
  unbound.predicateSymbol = 1;
  bytes = buildArtifact(unbound);
  kiln::Status loaded = kiln::Model::loadMemory(bytes.data(), bytes.size(), &model, KILN_BACKEND_HOST);
  EXPECT_EQ(loaded.code(), KILN_INVALID_ARGUMENT);
  EXPECT_NE(loaded.message().find("predicate 0: symbol 'm' is bound by no input"), std::string::npos)
      << loaded.message();
}

/// A variant pack fixing symbol `symbol` to `value` (no kernels to specialize:
/// the test artifact has none), for the artifact whose checksum is `artifact`.
std::string buildPack(uint64_t artifact, int symbol, int64_t value) {
  flatbuffers::FlatBufferBuilder b;
  std::vector<flatbuffers::Offset<fb::Variant>> variants = {fb::CreateVariant(
      b, b.CreateString("n=" + std::to_string(value)), b.CreateVector(std::vector<int>{symbol}),
      b.CreateVector(std::vector<int64_t>{value}))};
  b.ForceDefaults(true);
  auto pack = fb::CreateVariantPack(b, kiln::artifact::kFormatVersion, artifact,
                                    b.CreateVector(variants), 0, 0);
  fb::FinishVariantPackBuffer(b, pack);
  std::string bytes(reinterpret_cast<const char *>(b.GetBufferPointer()), b.GetSize());
  kiln::artifact::sealVariantPack(reinterpret_cast<uint8_t *>(bytes.data()), bytes.size());
  return bytes;
}

TEST(Artifact, VariantPacksInstallWhileTheModelServes) {
  std::string bytes = buildArtifact();
  kiln_model_t *model = nullptr;
  ASSERT_EQ(load(bytes, &model), KILN_OK) << kiln_last_error();
  absl::StatusOr<kiln::artifact::Plan> plan = kiln::artifact::readArtifact(
      reinterpret_cast<const uint8_t *>(bytes.data()), bytes.size());
  ASSERT_TRUE(plan.ok());
  // The miss handler hears of shapes no variant has.
  std::vector<int64_t> missed;
  ASSERT_EQ(kiln_model_set_variant_miss_handler(
                model,
                [](void *user, const int64_t *values, size_t count) {
                  static_cast<std::vector<int64_t> *>(user)->assign(values, values + count);
                },
                &missed),
            KILN_OK);
  kiln_context_t *context = nullptr;
  ASSERT_EQ(kiln_context_create(model, &context), KILN_OK);
  float x[6] = {1, 0, 0, 1, 1, 1};
  int64_t dims[2] = {3, 2};
  kiln_tensor_t input = {};
  input.dtype = KILN_F32;
  input.rank = 2;
  std::memcpy(input.dims, dims, sizeof(dims));
  input.data = x;
  input.size_bytes = sizeof(x);
  std::vector<float> y(9);
  int64_t s[2], c[2];
  kiln_tensor_t outputs[3] = {};
  outputs[0].data = y.data();
  outputs[0].size_bytes = y.size() * 4;
  outputs[1].data = s;
  outputs[1].size_bytes = sizeof(s);
  outputs[2].data = c;
  outputs[2].size_bytes = sizeof(c);
  ASSERT_EQ(kiln_context_run(context, &input, 1, outputs, 3, nullptr), KILN_OK) << kiln_last_error();
  const char *name = nullptr;
  ASSERT_EQ(kiln_context_variant(context, &name), KILN_OK);
  EXPECT_STREQ(name, "generic");
  EXPECT_EQ(missed, (std::vector<int64_t>{3, -1}));

  // A pack for another artifact, or a damaged one, is refused.
  std::string other = buildPack(plan->checksum + 1, 0, 3);
  EXPECT_EQ(kiln_model_add_variants(model, other.data(), other.size(), nullptr),
            KILN_INVALID_ARGUMENT);
  EXPECT_NE(std::string(kiln_last_error()).find("compiled for another artifact"), std::string::npos)
      << kiln_last_error();
  std::string pack = buildPack(plan->checksum, 0, 3);
  std::string damaged = pack;
  damaged[damaged.size() / 2] ^= 0x40;
  EXPECT_NE(kiln_model_add_variants(model, damaged.data(), damaged.size(), nullptr), KILN_OK);
  // A symbol no input binds is refused like in an artifact.
  std::string unbound = buildPack(plan->checksum, 1, 3);
  EXPECT_EQ(kiln_model_add_variants(model, unbound.data(), unbound.size(), nullptr),
            KILN_INVALID_ARGUMENT);

  size_t added = 0;
  ASSERT_EQ(kiln_model_add_variants(model, pack.data(), pack.size(), &added), KILN_OK)
      << kiln_last_error();
  EXPECT_EQ(added, 1u);
  ASSERT_EQ(kiln_model_add_variants(model, pack.data(), pack.size(), &added), KILN_OK);
  EXPECT_EQ(added, 0u); // installed already
  // The context's shapes did not change: it keeps its choice until they do.
  dims[0] = 2;
  std::memcpy(input.dims, dims, sizeof(dims));
  input.size_bytes = 16;
  ASSERT_EQ(kiln_context_run(context, &input, 1, outputs, 3, nullptr), KILN_OK);
  dims[0] = 3;
  std::memcpy(input.dims, dims, sizeof(dims));
  input.size_bytes = sizeof(x);
  missed.clear();
  outputs[0].size_bytes = y.size() * 4; // runs set each output's size to what they wrote
  ASSERT_EQ(kiln_context_run(context, &input, 1, outputs, 3, nullptr), KILN_OK) << kiln_last_error();
  ASSERT_EQ(kiln_context_variant(context, &name), KILN_OK);
  EXPECT_STREQ(name, "n=3");
  EXPECT_TRUE(missed.empty());
  EXPECT_EQ(y[8], 9.0f); // row 2 = [1, 1] @ w = [5, 7, 9]
  kiln_context_destroy(context);
  kiln_model_destroy(model);
}

TEST(Artifact, SmallOutputBufferReportsTheNeededSize) {
  std::string bytes = buildArtifact();
  kiln_model_t *model = nullptr;
  ASSERT_EQ(load(bytes, &model), KILN_OK);
  float x[4] = {};
  kiln_tensor_t in = {KILN_F32, 2, {2, 2}, x, sizeof(x)};
  float y[2];
  int64_t s[2], c[2];
  kiln_tensor_t out[3] = {{KILN_F32, 0, {}, y, sizeof(y)},
                          {KILN_I64, 0, {}, s, sizeof(s)},
                          {KILN_I64, 0, {}, c, sizeof(c)}};
  EXPECT_EQ(kiln_model_run(model, &in, 1, out, 3, nullptr), KILN_OUT_OF_RANGE);
  EXPECT_EQ(out[0].size_bytes, 24u);
  EXPECT_EQ(out[0].dims[1], 3);
  EXPECT_NE(std::string(kiln_last_error()).find("needs 24 bytes"), std::string::npos)
      << kiln_last_error();
  kiln_model_destroy(model);
}

TEST(Artifact, DamagedArtifactsAreErrors) {
  struct Case {
    Damage damage;
    kiln_status_t status;
    std::string message;
  };
  std::vector<Case> cases = {
      {{4, 0, 0}, KILN_INVALID_ARGUMENT, "step 0 reads value 4 before it is defined"},
      {{9, 0, 0}, KILN_INVALID_ARGUMENT, "step 0 names value 9 of 5"},
      {{0, 3, 0}, KILN_INVALID_ARGUMENT, "value 1: weight 3 is not in the table"},
      {{0, 0, 7}, KILN_INVALID_ARGUMENT, "value 0: symbol 7 is not in the table"},
      // An artifact of another format version names both versions.
      {{0, 0, 0, 1}, KILN_FAILED_PRECONDITION,
       "artifact format version 1, but this runtime reads version 9"},
      {{0, 0, 0, 10}, KILN_FAILED_PRECONDITION, "artifact format version 10"},
      // A typed step whose operands do not fit its table, or an enum value the
      // schema does not define, is refused at load, not at run time.
      {{0, 0, 0, kiln::artifact::kFormatVersion, true}, KILN_INVALID_ARGUMENT,
       "step 0 (MatMul): corrupt artifact: MatMul takes 3 inputs, the step has 2"},
      {{0, 0, 0, kiln::artifact::kFormatVersion, false, 7}, KILN_INVALID_ARGUMENT,
       "step 0 (MatMul): corrupt artifact: activation 7"},
      // A device symbol the model does not have.
      {{0, 0, 0, kiln::artifact::kFormatVersion, false, 0, 0, 9}, KILN_INVALID_ARGUMENT,
       "a device symbol is not in the table or has no bound"},
  };
  for (const Case &c : cases) {
    std::string bytes = buildArtifact(c.damage);
    kiln_model_t *model = nullptr;
    EXPECT_EQ(load(bytes, &model), c.status) << c.message;
    EXPECT_EQ(model, nullptr);
    EXPECT_NE(std::string(kiln_last_error()).find(c.message), std::string::npos)
        << kiln_last_error();
  }
  // A flipped bit anywhere (here: in the weights, which nothing else checks).
  std::string flipped = buildArtifact();
  size_t weightsAt = flipped.find(std::string("\x00\x00\x80\x3f", 4)); // 1.0f
  ASSERT_NE(weightsAt, std::string::npos);
  flipped[weightsAt + 2] ^= 0x10;
  kiln_model_t *damaged = nullptr;
  EXPECT_EQ(load(flipped, &damaged), KILN_INVALID_ARGUMENT);
  EXPECT_NE(std::string(kiln_last_error()).find("its checksum does not match its contents"),
            std::string::npos)
      << kiln_last_error();
  // Every truncation of a valid artifact is an error, never a crash.
  std::string bytes = buildArtifact();
  for (size_t n = 0; n < bytes.size(); n += 7) {
    kiln_model_t *model = nullptr;
    EXPECT_NE(load(bytes.substr(0, n), &model), KILN_OK) << n;
    EXPECT_EQ(model, nullptr);
  }
}

/// k: i64[1] -> ReadSizes(k) binds symbol 0 ("m"), then c = [m, 2] (a shape
/// step that needs the bound value). `readSymbol` is the symbol the read
/// binds, `readOutput` gives the read an output it must not have.
std::string buildReadSizesArtifact(int readSymbol = 0, bool readOutput = false) {
  flatbuffers::FlatBufferBuilder b;
  DimBuilder dim{b};
  auto sym = [&](int64_t s) { return dim.sym(s); };
  auto lit = [&](int64_t v) { return dim.lit(v); };
  std::vector<flatbuffers::Offset<fb::Value>> values = {
      fb::CreateValue(b, b.CreateString("k"), fb::DType::i64, b.CreateVector(std::vector{lit(1)}),
                      fb::ValueKind::Input),
      fb::CreateValue(b, b.CreateString("c"), fb::DType::i64, b.CreateVector(std::vector{lit(2)}),
                      fb::ValueKind::Intermediate),
  };
  auto read = fb::CreateReadSizes(b, b.CreateVector(std::vector<int>{readSymbol}));
  auto constant = fb::CreateSymbolicConstant(
      b, b.CreateVector(std::vector<flatbuffers::Offset<fb::Dim>>{sym(0), lit(2)}));
  std::vector<flatbuffers::Offset<fb::Step>> steps = {
      fb::CreateStep(b, fb::StepOp::ReadSizes, read.Union(), b.CreateVector(std::vector<int>{0}),
                     b.CreateVector(readOutput ? std::vector<int>{1} : std::vector<int>{})),
      fb::CreateStep(b, fb::StepOp::SymbolicConstant, constant.Union(),
                     b.CreateVector(std::vector<int>{}), b.CreateVector(std::vector<int>{1})),
  };
  std::vector<flatbuffers::Offset<flatbuffers::String>> symbols = {b.CreateString("m")};
  b.ForceDefaults(true);
  auto model = fb::CreateModel(b, kiln::artifact::kFormatVersion, b.CreateString("test"),
                               b.CreateString("test"), b.CreateVector(symbols),
                               b.CreateVector(values), b.CreateVector(std::vector<int>{0}),
                               b.CreateVector(std::vector<int>{1}), 0, b.CreateVector(steps));
  return sealedBytes(b, model);
}

TEST(Artifact, ReadSizesBindsSymbolsForTheStepsAfter) {
  std::string bytes = buildReadSizesArtifact();
  kiln::Model model;
  ASSERT_TRUE(kiln::Model::loadMemory(bytes.data(), bytes.size(), &model, KILN_BACKEND_HOST).ok())
      << kiln_last_error();
  auto run = [&](int64_t k, std::vector<kiln::HostTensor> *outputs) {
    std::vector<kiln::HostTensor> inputs = {kiln::HostTensor(KILN_I64, {1})};
    inputs[0].as<int64_t>()[0] = k;
    return model.run(inputs, outputs);
  };
  std::vector<kiln::HostTensor> outputs;
  kiln::Status s = run(5, &outputs);
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_EQ(outputs[0].as<int64_t>()[0], 5);
  EXPECT_EQ(outputs[0].as<int64_t>()[1], 2);
  // Each call binds afresh.
  s = run(0, &outputs);
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_EQ(outputs[0].as<int64_t>()[0], 0);
  // A negative size is the call's error, naming the step and the symbol.
  s = run(-2, &outputs);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(std::string(s.message()).find("step 0 (ReadSizes): size -2 for m is negative"),
            std::string::npos)
      << s.message();
  // A read of a symbol the table lacks, or with an output, is refused at load.
  for (auto [bad, message] :
       {std::pair{buildReadSizesArtifact(3), "step 0: symbol 3 is not in the table"},
        std::pair{buildReadSizesArtifact(0, true), "step 0: a size read has no outputs"}}) {
    kiln_model_t *damaged = nullptr;
    EXPECT_EQ(load(bad, &damaged), KILN_INVALID_ARGUMENT);
    EXPECT_NE(std::string(kiln_last_error()).find(message), std::string::npos)
        << kiln_last_error();
  }
}

/// How buildViewArtifact's view is wrong, if at all.
enum class ViewDamage { None, ElementCount, Dtype, InBody };

/// x: f32[n, 6] -> y = view(x) as f32[2n, 3] (the output). ElementCount makes
/// y f32[n, 4] (a run's error, not a load's: the counts are symbolic);
/// Dtype makes y i32; InBody puts the view in the then-branch of an If on a
/// constant condition.
std::string buildViewArtifact(ViewDamage damage = ViewDamage::None) {
  flatbuffers::FlatBufferBuilder b;
  DimBuilder dim{b};
  auto sym = [&](int64_t s) { return dim.sym(s); };
  auto lit = [&](int64_t v) { return dim.lit(v); };
  auto twice = [&](int64_t s) {
    return dim({fb::ExprOp(fb::ExprKind::Symbol, s), fb::ExprOp(fb::ExprKind::Constant, 2),
                fb::ExprOp(fb::ExprKind::Mul, 0)});
  };
  std::vector<flatbuffers::Offset<fb::Dim>> viewShape =
      damage == ViewDamage::ElementCount ? std::vector{sym(0), lit(4)} : std::vector{twice(0), lit(3)};
  std::vector<flatbuffers::Offset<fb::Value>> values = {
      fb::CreateValue(b, b.CreateString("x"), fb::DType::f32,
                      b.CreateVector(std::vector{sym(0), lit(6)}), fb::ValueKind::Input),
      fb::CreateValue(b, b.CreateString("y"),
                      damage == ViewDamage::Dtype ? fb::DType::i32 : fb::DType::f32,
                      b.CreateVector(viewShape), fb::ValueKind::Intermediate),
      fb::CreateValue(b, b.CreateString("c"), fb::DType::boolean, b.CreateVector(std::vector{lit(1)}),
                      fb::ValueKind::Weight, 0),
  };
  auto view = [&] {
    return fb::CreateStep(b, fb::StepOp::View, fb::CreateView(b).Union(),
                          b.CreateVector(std::vector<int>{0}), b.CreateVector(std::vector<int>{1}));
  };
  std::vector<flatbuffers::Offset<fb::Step>> steps;
  if (damage == ViewDamage::InBody) {
    auto then = fb::CreateBody(b, b.CreateVector(std::vector<int>{}),
                               b.CreateVector(std::vector{view()}), b.CreateVector(std::vector<int>{1}));
    auto otherwise = fb::CreateBody(b, b.CreateVector(std::vector<int>{}),
                                    b.CreateVector(std::vector<flatbuffers::Offset<fb::Step>>{}),
                                    b.CreateVector(std::vector<int>{0}));
    steps.push_back(fb::CreateStep(b, fb::StepOp::If, fb::CreateIf(b, then, otherwise).Union(),
                                   b.CreateVector(std::vector<int>{2}),
                                   b.CreateVector(std::vector<int>{1})));
  } else {
    steps.push_back(view());
  }
  std::vector<flatbuffers::Offset<fb::Guard>> guards = {fb::CreateGuard(b, 0, 0, sym(0), true),
                                                        fb::CreateGuard(b, 0, 1, lit(6), false)};
  std::vector<flatbuffers::Offset<fb::Weight>> weights = {fb::CreateWeight(b, 0, 1)};
  std::vector<uint8_t> blob = {1};
  std::vector<flatbuffers::Offset<flatbuffers::String>> symbols = {b.CreateString("n")};
  b.ForceVectorAlignment(blob.size(), 1, 64);
  auto data = b.CreateVector(blob);
  b.ForceDefaults(true);
  auto model = fb::CreateModel(b, kiln::artifact::kFormatVersion, b.CreateString("test"),
                               b.CreateString("test"), b.CreateVector(symbols),
                               b.CreateVector(values), b.CreateVector(std::vector<int>{0}),
                               b.CreateVector(std::vector<int>{1}), b.CreateVector(guards),
                               b.CreateVector(steps), 0, 0, 0, b.CreateVector(weights), data);
  return sealedBytes(b, model);
}

TEST(Artifact, ViewsNameTheirInputsBytesUnderNewDims) {
  std::string bytes = buildViewArtifact();
  kiln::Model model;
  ASSERT_TRUE(kiln::Model::loadMemory(bytes.data(), bytes.size(), &model, KILN_BACKEND_HOST).ok())
      << kiln_last_error();
  std::vector<kiln::HostTensor> inputs = {kiln::HostTensor(KILN_F32, {2, 6})};
  for (int i = 0; i < 12; ++i)
    inputs[0].as<float>()[i] = static_cast<float>(i);
  std::vector<kiln::HostTensor> outputs;
  kiln::Status s = model.run(inputs, &outputs);
  ASSERT_TRUE(s.ok()) << s.message();
  ASSERT_EQ(outputs[0].dims, (std::vector<int64_t>{4, 3}));
  for (int i = 0; i < 12; ++i)
    EXPECT_EQ(outputs[0].as<float>()[i], static_cast<float>(i));
  // The view takes no bytes of the plan.
  auto plan = kiln::artifact::readArtifact(reinterpret_cast<const uint8_t *>(bytes.data()),
                                           bytes.size());
  ASSERT_TRUE(plan.ok()) << plan.status().message();
  absl::StatusOr<kiln::artifact::MemoryPlan> memory = kiln::artifact::planMemory(*plan, {2});
  ASSERT_TRUE(memory.ok()) << memory.status().message();
  EXPECT_EQ(memory->viewValues, 1u);
  EXPECT_EQ(memory->plannedValues, 0u);
  EXPECT_EQ(memory->offsets[1], -1);

  // Dims that do not hold the input's elements are the call's error.
  std::string miscounted = buildViewArtifact(ViewDamage::ElementCount);
  kiln::Model bad;
  ASSERT_TRUE(kiln::Model::loadMemory(miscounted.data(), miscounted.size(), &bad,
                                      KILN_BACKEND_HOST).ok())
      << kiln_last_error();
  s = bad.run(inputs, &outputs);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(std::string(s.message()).find("step 0 (View): a view of 12 elements as [2, 4]"),
            std::string::npos)
      << s.message();
  // Another element type, or a view in a body, is refused at load.
  for (auto [damage, message] :
       {std::pair{ViewDamage::Dtype, "step 0: a view of f32 as i32"},
        std::pair{ViewDamage::InBody, "step 0 then step 0 is a view inside a body"}}) {
    kiln_model_t *damaged = nullptr;
    EXPECT_EQ(load(buildViewArtifact(damage), &damaged), KILN_INVALID_ARGUMENT);
    EXPECT_NE(std::string(kiln_last_error()).find(message), std::string::npos)
        << kiln_last_error();
  }
}

/// How buildCheckArtifact's check step is wrong, if at all.
enum class CheckDamage { None, TakesInput, UnknownSymbol, NoFacts };

/// x: f32[n] -> y = view(x) as f32[n], after a check step stating n <= 5
/// (a fact over a size a step binds, checked where it stands).
std::string buildCheckArtifact(CheckDamage damage = CheckDamage::None) {
  flatbuffers::FlatBufferBuilder b;
  DimBuilder dim{b};
  auto sym = [&](int64_t s) { return dim.sym(s); };
  auto lit = [&](int64_t v) { return dim.lit(v); };
  std::vector<flatbuffers::Offset<fb::Value>> values = {
      fb::CreateValue(b, b.CreateString("x"), fb::DType::f32, b.CreateVector(std::vector{sym(0)}),
                      fb::ValueKind::Input),
      fb::CreateValue(b, b.CreateString("y"), fb::DType::f32, b.CreateVector(std::vector{sym(0)}),
                      fb::ValueKind::Intermediate),
  };
  auto fact = fb::CreatePredicate(b, fb::PredicateKind::LessEqual,
                                  sym(damage == CheckDamage::UnknownSymbol ? 7 : 0), lit(5),
                                  b.CreateString("the test's fact"));
  auto facts = damage == CheckDamage::NoFacts
                   ? b.CreateVector(std::vector<flatbuffers::Offset<fb::Predicate>>{})
                   : b.CreateVector(std::vector{fact});
  std::vector<flatbuffers::Offset<fb::Step>> steps = {
      fb::CreateStep(b, fb::StepOp::Check, fb::CreateCheck(b, facts).Union(),
                     b.CreateVector(damage == CheckDamage::TakesInput ? std::vector<int>{0}
                                                                      : std::vector<int>{}),
                     b.CreateVector(std::vector<int>{})),
      fb::CreateStep(b, fb::StepOp::View, fb::CreateView(b).Union(),
                     b.CreateVector(std::vector<int>{0}), b.CreateVector(std::vector<int>{1}))};
  std::vector<flatbuffers::Offset<fb::Guard>> guards = {fb::CreateGuard(b, 0, 0, sym(0), true)};
  std::vector<flatbuffers::Offset<flatbuffers::String>> symbols = {b.CreateString("n")};
  b.ForceDefaults(true);
  auto model = fb::CreateModel(b, kiln::artifact::kFormatVersion, b.CreateString("test"),
                               b.CreateString("test"), b.CreateVector(symbols),
                               b.CreateVector(values), b.CreateVector(std::vector<int>{0}),
                               b.CreateVector(std::vector<int>{1}), b.CreateVector(guards),
                               b.CreateVector(steps));
  return sealedBytes(b, model);
}

TEST(Artifact, CheckStepsTestFactsWhereTheyStand) {
  std::string bytes = buildCheckArtifact();
  kiln::Model model;
  ASSERT_TRUE(kiln::Model::loadMemory(bytes.data(), bytes.size(), &model, KILN_BACKEND_HOST).ok())
      << kiln_last_error();
  std::vector<kiln::HostTensor> outputs;
  std::vector<kiln::HostTensor> small = {kiln::HostTensor(KILN_F32, {5})};
  kiln::Status s = model.run(small, &outputs);
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_EQ(outputs[0].dims, (std::vector<int64_t>{5}));
  // A call that breaks the fact fails at the check, naming it and the value.
  std::vector<kiln::HostTensor> large = {kiln::HostTensor(KILN_F32, {6})};
  s = model.run(large, &outputs);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(std::string(s.message()).find(
                "step 0 (Check): guard 'n <= 5' does not hold (n = 6): the test's fact"),
            std::string::npos)
      << s.message();
  // A check with an input, over a symbol not in the table, or stating
  // nothing is refused at load.
  for (auto [damage, message] :
       {std::pair{CheckDamage::TakesInput, "step 0: a check takes no inputs and states its facts"},
        std::pair{CheckDamage::UnknownSymbol, "step 0 fact 0: symbol 7 is not in the table"},
        std::pair{CheckDamage::NoFacts, "step 0: a check takes no inputs and states its facts"}}) {
    kiln_model_t *damaged = nullptr;
    EXPECT_EQ(load(buildCheckArtifact(damage), &damaged), KILN_INVALID_ARGUMENT);
    EXPECT_NE(std::string(kiln_last_error()).find(message), std::string::npos)
        << kiln_last_error();
  }
}

TEST(Artifact, NullArgumentsAreErrors) {
  kiln_model_t *model = nullptr;
  EXPECT_EQ(kiln_model_load_file(nullptr, KILN_BACKEND_HOST, &model), KILN_INVALID_ARGUMENT);
  EXPECT_EQ(kiln_model_load_file("/nonexistent.kiln", KILN_BACKEND_HOST, &model), KILN_NOT_FOUND);
  EXPECT_EQ(kiln_model_run(nullptr, nullptr, 0, nullptr, 0, nullptr), KILN_INVALID_ARGUMENT);
  size_t n;
  EXPECT_EQ(kiln_model_num_inputs(nullptr, &n), KILN_INVALID_ARGUMENT);
  kiln_model_destroy(nullptr);
}

// A specialization takes a kernel's 32-bit body only when every symbol of
// the kernel is fixed and every size with symbols fits (Kernel.index32_sizes).
TEST(Artifact, Index32FitsNeedsEverySymbolAndSizeInRange) {
  using Op = kiln::artifact::Dim::Op;
  kiln::artifact::KernelInfo kernel;
  kernel.symbols = {0, 1};
  // batch * seq * 768 elements.
  kernel.index32Sizes = {kiln::artifact::Dim{
      {{Op::Symbol, 0}, {Op::Symbol, 1}, {Op::Mul, 0}, {Op::Constant, 768}, {Op::Mul, 0}}}};
  EXPECT_TRUE(kiln::artifact::index32Fits(kernel, {8, 128}));
  EXPECT_FALSE(kiln::artifact::index32Fits(kernel, {8, std::nullopt})) << "seq unbound";
  EXPECT_FALSE(kiln::artifact::index32Fits(kernel, {4096, 4096})) << "12.9e9 elements";
  // The largest count that fits, and one more.
  int64_t limit = kiln::artifact::kMaxIndex32Elements;
  EXPECT_TRUE(kiln::artifact::index32Fits(kernel, {limit / 768, 1}));
  EXPECT_FALSE(kiln::artifact::index32Fits(kernel, {limit / 768 + 1, 1}));
  // A symbol no size shows is still bounded.
  kernel.symbols = {0, 1, 2};
  EXPECT_FALSE(kiln::artifact::index32Fits(kernel, {8, 128, int64_t{1} << 40}));
  EXPECT_TRUE(kiln::artifact::index32Fits(kernel, {8, 128, 3}));
  // Without the 32-bit body, never.
  kernel.index32Sizes.clear();
  EXPECT_FALSE(kiln::artifact::index32Fits(kernel, {8, 128, 3}));
}

TEST(MemoryPlan, ValuesWithDisjointLifetimesShareBytes) {
  std::string bytes = buildArtifact();
  auto plan = kiln::artifact::readArtifact(reinterpret_cast<const uint8_t *>(bytes.data()),
                                           bytes.size());
  ASSERT_TRUE(plan.ok()) << plan.status().message();
  absl::StatusOr<kiln::artifact::MemoryPlan> planned =
      kiln::artifact::planMemory(*plan, {int64_t(1000)});
  ASSERT_TRUE(planned.ok()) << planned.status().message();
  const kiln::artifact::MemoryPlan &memory = *planned;
  // y (12000 bytes), s and c are outputs, live to the end: nothing can share.
  EXPECT_EQ(memory.plannedValues, 3u);
  EXPECT_EQ(memory.peakBytes, memory.sumBytes);
  EXPECT_GE(memory.offsets[3], 12000);
  // A chain a -> b -> c -> d where only d is an output: a and c share.
  kiln::artifact::Plan chain;
  chain.symbols = {};
  for (int v = 0; v < 4; ++v) {
    kiln::artifact::ValueInfo info;
    info.dtype = kiln::ref::DType::f32;
    info.shape = {kiln::artifact::Dim{{{kiln::artifact::Dim::Op::Constant, 1024}}}};
    info.kind = v == 0 ? kiln::artifact::ValueKind::Input : kiln::artifact::ValueKind::Intermediate;
    chain.values.push_back(info);
  }
  chain.inputs = {0};
  chain.outputs = {3};
  for (int s = 0; s < 3; ++s) {
    kiln::artifact::StepInfo step;
    step.inputs = {s};
    step.outputs = {s + 1};
    chain.steps.push_back(step);
  }
  absl::StatusOr<kiln::artifact::MemoryPlan> chained = kiln::artifact::planMemory(chain, {});
  ASSERT_TRUE(chained.ok()) << chained.status().message();
  const kiln::artifact::MemoryPlan &m = *chained;
  EXPECT_EQ(m.sumBytes, 3u * 4096);
  EXPECT_EQ(m.peakBytes, 2u * 4096);
  EXPECT_EQ(m.offsets[1], m.offsets[3]);
  EXPECT_EQ(m.largestBytes, 4096u);
}

TEST(MemoryPlan, AViewKeepsItsInputsBytesLive) {
  // 0 (input) -> 1; view 1 -> 2; 0 -> 3; 3 -> 4; (2, 4) -> 5 (the output).
  // Without the view, 1 dies at step 1 and 3 or 4 would take its bytes; the
  // view reads them until step 4.
  kiln::artifact::Plan plan;
  for (int v = 0; v < 6; ++v) {
    kiln::artifact::ValueInfo info;
    info.dtype = kiln::ref::DType::f32;
    info.shape = {kiln::artifact::Dim{{{kiln::artifact::Dim::Op::Constant, 1024}}}};
    info.kind = v == 0 ? kiln::artifact::ValueKind::Input : kiln::artifact::ValueKind::Intermediate;
    plan.values.push_back(info);
  }
  plan.inputs = {0};
  plan.outputs = {5};
  auto step = [&](std::vector<int> in, int out, kiln::artifact::StepKind kind) {
    kiln::artifact::StepInfo s;
    s.kind = kind;
    s.inputs = std::move(in);
    s.outputs = {out};
    plan.steps.push_back(s);
  };
  step({0}, 1, kiln::artifact::StepKind::Kernel);
  step({1}, 2, kiln::artifact::StepKind::View);
  step({0}, 3, kiln::artifact::StepKind::Kernel);
  step({3}, 4, kiln::artifact::StepKind::Kernel);
  step({2, 4}, 5, kiln::artifact::StepKind::Kernel);
  absl::StatusOr<kiln::artifact::MemoryPlan> planned = kiln::artifact::planMemory(plan, {});
  ASSERT_TRUE(planned.ok()) << planned.status().message();
  const kiln::artifact::MemoryPlan &m = *planned;
  EXPECT_EQ(m.viewValues, 1u);
  EXPECT_EQ(m.plannedValues, 4u);
  EXPECT_EQ(m.offsets[2], -1);
  // 1 is live through step 4, beside 3 (steps 2-3), 4 (steps 3-4) and 5
  // (written at step 4); 3 is last read at step 3, so 5 takes its bytes.
  EXPECT_NE(m.offsets[1], m.offsets[3]);
  EXPECT_NE(m.offsets[1], m.offsets[4]);
  EXPECT_NE(m.offsets[1], m.offsets[5]);
  EXPECT_EQ(m.offsets[3], m.offsets[5]);
  EXPECT_EQ(m.peakBytes, 3u * 4096);
}

TEST(MemoryPlan, SizesThatOverflowOrExceedTheLimitAreErrors) {
  // y is f32[n, 3] in buildArtifact's plan: n = 2^62 makes 3 * 2^62 elements.
  std::string bytes = buildArtifact();
  auto plan = kiln::artifact::readArtifact(reinterpret_cast<const uint8_t *>(bytes.data()),
                                           bytes.size());
  ASSERT_TRUE(plan.ok()) << plan.status().message();
  absl::StatusOr<kiln::artifact::MemoryPlan> wrapped =
      kiln::artifact::planMemory(*plan, {int64_t(1) << 62});
  ASSERT_FALSE(wrapped.ok());
  EXPECT_NE(std::string(wrapped.status().message()).find("value 'y'"), std::string::npos)
      << wrapped.status().message();
  absl::StatusOr<kiln::artifact::MemoryPlan> limited =
      kiln::artifact::planMemory(*plan, {int64_t(1000)}, /*maxTensorBytes=*/4096);
  ASSERT_FALSE(limited.ok());
  EXPECT_NE(std::string(limited.status().message()).find("over the limit of 4096 bytes"),
            std::string::npos)
      << limited.status().message();
}

TEST(TensorSizes, CheckedArithmetic) {
  using kiln::ref::DType;
  EXPECT_EQ(*kiln::ref::checkedNumElements({2, 3}), 6);
  EXPECT_EQ(*kiln::ref::checkedNumElements({}), 1);
  // A zero dim makes the count 0 even when the others overflow together.
  EXPECT_EQ(*kiln::ref::checkedNumElements({int64_t(1) << 40, 0, int64_t(1) << 40}), 0);
  EXPECT_FALSE(kiln::ref::checkedNumElements({-1, 5}).ok());
  EXPECT_FALSE(kiln::ref::checkedNumElements({int64_t(1) << 40, int64_t(1) << 40}).ok());
  EXPECT_FALSE(kiln::ref::checkedByteSize(DType::f64, {int64_t(1) << 61}, UINT64_MAX).ok());
  EXPECT_EQ(*kiln::ref::checkedByteSize(DType::f32, {1024}, 4096), 4096u);
  EXPECT_FALSE(kiln::ref::checkedByteSize(DType::f32, {1025}, 4096).ok());
  // Tensor::zeros applies the thread's limit, scoped.
  {
    kiln::ref::MaxTensorBytesScope scope(64);
    EXPECT_FALSE(kiln::ref::Tensor::zeros(DType::f32, {17}).ok());
    EXPECT_TRUE(kiln::ref::Tensor::zeros(DType::f32, {16}).ok());
  }
  EXPECT_EQ(kiln::ref::maxTensorBytes(), kiln::ref::kDefaultMaxTensorBytes);
  EXPECT_FALSE(kiln::ref::Tensor::zeros(DType::f32, {int64_t(1) << 40}).ok());
}

#ifdef KILN_TEST_POINTWISE
// A launch step whose values do not match its kernel's signature (a buggy
// compiler, checksum recomputed) is refused at load instead of launched.
TEST(Artifact, KernelSignatureMismatchIsRefused) {
  std::ifstream file(KILN_TEST_POINTWISE, std::ios::binary);
  if (!file)
    GTEST_SKIP() << "the test model is built with the compiler";
  std::string bytes((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
  {
    std::string copy = bytes;
    auto *model = fb::GetMutableModel(copy.data());
    ASSERT_GT(model->kernels()->size(), 0u);
    model->mutable_kernels()->GetMutableObject(0)->mutable_buffer_dtypes()->Mutate(
        1, fb::DType::i64);
    kiln::artifact::sealArtifact(reinterpret_cast<uint8_t *>(copy.data()), copy.size());
    kiln_model_t *m = nullptr;
    EXPECT_EQ(load(copy, &m), KILN_INVALID_ARGUMENT);
    EXPECT_NE(std::string(kiln_last_error()).find("buffer 1 is i64, value"), std::string::npos)
        << kiln_last_error();
  }
  {
    // The kernel's code indexes a 64-wide row; a value planned narrower (or a
    // kernel claiming another width) would be written past its end.
    std::string copy = bytes;
    auto *model = fb::GetMutableModel(copy.data());
    auto *dims = model->mutable_kernels()->GetMutableObject(0)->mutable_buffer_shapes()
                     ->GetMutableObject(0)->mutable_dims();
    ASSERT_EQ(dims->size(), 2u);
    auto *width = dims->GetMutableObject(1)->mutable_ops()->GetMutableObject(0);
    ASSERT_EQ(width->value(), 64);
    width->mutate_value(32);
    kiln::artifact::sealArtifact(reinterpret_cast<uint8_t *>(copy.data()), copy.size());
    kiln_model_t *m = nullptr;
    EXPECT_EQ(load(copy, &m), KILN_INVALID_ARGUMENT);
    EXPECT_NE(std::string(kiln_last_error()).find("buffer 0 has dims [arg0_d0, 32], value"),
              std::string::npos)
        << kiln_last_error();
  }
  {
    // Code that takes the kernel scratch (its parameter written over the
    // source's first comment) where the kernel states none: a launch would
    // pass one argument too few.
    std::string copy = bytes;
    auto *model = fb::GetMutableModel(copy.data());
    auto *source = model->mutable_kernels()->GetMutableObject(0)->mutable_source();
    const std::string scratch = ", uint8_t *KILN_RESTRICT kiln_scratch";
    ASSERT_GT(source->size(), 3 + scratch.size());
    std::memcpy(const_cast<char *>(source->c_str()) + 3, scratch.data(), scratch.size());
    kiln::artifact::sealArtifact(reinterpret_cast<uint8_t *>(copy.data()), copy.size());
    kiln_model_t *m = nullptr;
    EXPECT_EQ(load(copy, &m), KILN_INVALID_ARGUMENT);
    EXPECT_NE(std::string(kiln_last_error()).find("takes a scratch its step would not pass"),
              std::string::npos)
        << kiln_last_error();
  }
}
#endif

} // namespace
