// How weights travel from the IR into an artifact: an artifact (or weights
// file) whose weights are deferred (ArtifactOptions::deferWeights, what
// kiln-compile writes) has the same bytes and checksum as one built whole, and
// the constants' storage
// copied without a reference tensor in between (elementsView) is what the
// reference tensor holds, for every kind of constant a model imports.

#include "codegen/Artifact.h"
#include "driver/Compile.h"
#include "driver/InitAll.h"
#include "interpreter/Interpreter.h"
#include "ir/Kiln/KilnDialect.h"
#include "kiln/artifact/Plan.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"

#include <gtest/gtest.h>

#include <cstring>
#include <string>

namespace {

using namespace kiln;

/// Weights of every storage: a resource blob (a large imported initializer),
/// dense f32, f16, i8 and i64 data, a splat, booleans (bit-packed in MLIR,
/// a byte each in the artifact) and 4-bit integers (sign-extended there).
constexpr const char *kModel = R"mlir(
func.func @main(%x: tensor<6xf32>) -> (tensor<6xf32>, tensor<3xf16>, tensor<5xi8>, tensor<2xi64>,
                                        tensor<4xf32>, tensor<3xi1>, tensor<4xi4>) {
  %w = kiln.constant dense_resource<weight> : tensor<6xf32>
  %d = kiln.constant dense<[1.5, -2.0, 3.25, 4.0, 5.0, 6.5]> : tensor<6xf32>
  %h = kiln.constant dense<[1.0, -0.5, 65504.0]> : tensor<3xf16>
  %b = kiln.constant dense<[-128, -1, 0, 1, 127]> : tensor<5xi8>
  %l = kiln.constant dense<[-9000000000, 7]> : tensor<2xi64>
  %s = kiln.constant dense<2.5> : tensor<4xf32>
  %p = kiln.constant dense<[true, false, true]> : tensor<3xi1>
  %q = kiln.constant dense<[-8, -1, 0, 7]> : tensor<4xi4>
  %a = kiln.add %x, %w : (tensor<6xf32>, tensor<6xf32>) -> tensor<6xf32>
  %y = kiln.mul %a, %d : (tensor<6xf32>, tensor<6xf32>) -> tensor<6xf32>
  return %y, %h, %b, %l, %s, %p, %q : tensor<6xf32>, tensor<3xf16>, tensor<5xi8>, tensor<2xi64>,
                                      tensor<4xf32>, tensor<3xi1>, tensor<4xi4>
}
{-#
  dialect_resources: {
    builtin: {
      weight: "0x040000000000803f0000004000004040000080400000a0400000c040"
    }
  }
#-}
)mlir";

class ArtifactWeights : public ::testing::Test {
protected:
  void SetUp() override {
    mlir::DialectRegistry registry;
    registerAllDialects(registry);
    context = std::make_unique<mlir::MLIRContext>(registry);
    context->loadAllAvailableDialects();
  }

  mlir::OwningOpRef<mlir::ModuleOp> parse() {
    return mlir::parseSourceString<mlir::ModuleOp>(kModel, context.get());
  }

  /// The model's artifact: sources only (nothing for NVRTC or a host compiler
  /// to build), its weights deferred or not.
  static mlir::FailureOr<CompiledArtifact> compile(mlir::ModuleOp module, bool defer,
                                                   std::string weightsFile = "") {
    ArtifactOptions options;
    options.cubinArchs = {};
    options.hostLibrary = false;
    options.deferWeights = defer;
    options.weightsFile = std::move(weightsFile);
    return compileToArtifact(module, options);
  }

  std::unique_ptr<mlir::MLIRContext> context;
};

TEST_F(ArtifactWeights, DeferredWeightsWriteTheSameArtifact) {
  mlir::OwningOpRef<mlir::ModuleOp> whole = parse(), deferred = parse();
  ASSERT_TRUE(whole && deferred);
  mlir::FailureOr<CompiledArtifact> a = compile(*whole, false), b = compile(*deferred, true);
  ASSERT_TRUE(mlir::succeeded(a) && mlir::succeeded(b));
  ASSERT_FALSE(a->deferredWeights);
  ASSERT_TRUE(b->deferredWeights);
  EXPECT_TRUE(b->bytes.empty()) << "a deferred artifact must not look whole";
  EXPECT_GT(b->deferredWeightBytes, 0u);
  EXPECT_EQ(a->size(), b->size());

  std::string written;
  llvm::raw_string_ostream os(written);
  ASSERT_TRUE(mlir::succeeded(writeArtifact(*b, os)));
  os.flush();
  ASSERT_EQ(written.size(), a->bytes.size());
  EXPECT_TRUE(written == a->bytes) << "deferred and whole artifacts differ";

  // The checksum the deferred path computed in pieces is the one a reader checks.
  absl::StatusOr<artifact::Plan> plan = artifact::readArtifact(
      reinterpret_cast<const uint8_t *>(written.data()), written.size());
  EXPECT_TRUE(plan.ok()) << plan.status().message();
  std::string damaged = written;
  damaged[b->head.size() + 1] ^= 1; // inside the weights
  EXPECT_FALSE(artifact::readArtifact(reinterpret_cast<const uint8_t *>(damaged.data()),
                                      damaged.size())
                   .ok());
}

// kiln-compile --weights-file: the weights file streams from the constants as
// it is written, and is the file a whole build writes, under the checksum the
// artifact records.
TEST_F(ArtifactWeights, DeferredWeightsFileIsTheSameFile) {
  mlir::OwningOpRef<mlir::ModuleOp> whole = parse(), deferred = parse();
  ASSERT_TRUE(whole && deferred);
  mlir::FailureOr<CompiledArtifact> a = compile(*whole, false, "m.weights"),
                                    b = compile(*deferred, true, "m.weights");
  ASSERT_TRUE(mlir::succeeded(a) && mlir::succeeded(b));
  ASSERT_FALSE(a->deferredWeightsFile);
  ASSERT_TRUE(b->deferredWeightsFile);
  EXPECT_TRUE(b->weights.empty()) << "deferred weights must not be held";
  EXPECT_EQ(b->deferredWeightsFileBytes, a->weights.size());
  EXPECT_GT(a->weights.size(), 0u);

  std::string written;
  llvm::raw_string_ostream os(written);
  ASSERT_TRUE(mlir::succeeded(writeWeightsFile(*b, os)));
  os.flush();
  EXPECT_TRUE(written == a->weights) << "deferred and whole weights files differ";
  EXPECT_TRUE(b->bytes == a->bytes) << "the artifacts beside them differ";

  // The artifact's record of the file (its checksum) accepts it and refuses
  // a damaged copy.
  auto readWith = [&](const std::string &weights) {
    return artifact::readArtifact(
        reinterpret_cast<const uint8_t *>(b->bytes.data()), b->bytes.size(),
        [&](const std::string &) -> absl::StatusOr<std::pair<const uint8_t *, size_t>> {
          return std::make_pair(reinterpret_cast<const uint8_t *>(weights.data()),
                                weights.size());
        });
  };
  absl::StatusOr<artifact::Plan> plan = readWith(written);
  EXPECT_TRUE(plan.ok()) << plan.status().message();
  std::string damaged = written;
  damaged[1] ^= 1;
  EXPECT_FALSE(readWith(damaged).ok());
}

TEST_F(ArtifactWeights, ConstantStorageCopiedAsIsIsTheReferenceTensor) {
  mlir::OwningOpRef<mlir::ModuleOp> module = parse();
  ASSERT_TRUE(module);
  int viewed = 0, converted = 0;
  module->walk([&](ConstantOp c) {
    std::string type;
    llvm::raw_string_ostream(type) << c.getType();
    mlir::FailureOr<ref::Tensor> t = tensorFromElements(c.getValue(), c.getLoc());
    ASSERT_TRUE(mlir::succeeded(t));
    mlir::FailureOr<size_t> bytes = elementsByteSize(c.getValue(), c.getLoc());
    ASSERT_TRUE(mlir::succeeded(bytes));
    EXPECT_EQ(*bytes, t->byteSize()) << "for " << type;
    std::string out(*bytes, '\x55');
    ASSERT_TRUE(mlir::succeeded(
        writeElements(c.getValue(), c.getLoc(), llvm::MutableArrayRef<char>(out.data(), out.size()))));
    EXPECT_EQ(0, std::memcmp(out.data(), t->bytes(), out.size())) << "for " << type;
    if (std::optional<llvm::ArrayRef<char>> view = elementsView(c.getValue())) {
      ++viewed;
      ASSERT_EQ(view->size(), t->byteSize());
      EXPECT_EQ(0, std::memcmp(view->data(), t->bytes(), view->size())) << "for " << type;
    } else {
      ++converted;
    }
  });
  // The resource and the dense f32, f16, i8, i64 data are views; the splat,
  // the booleans and the 4-bit integers are not stored as the artifact holds them.
  EXPECT_EQ(viewed, 5);
  EXPECT_EQ(converted, 3);
}

} // namespace
