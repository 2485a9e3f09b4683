// The op tables against every place that expands them: each ODS elementwise op
// has a row and each row an ODS op; each row's op imports from ONNX, encodes as
// its host step, runs on the reference, emits CUDA C that NVRTC compiles and that
// host emulation runs to the reference's numbers. A row added for a new op is
// checked on every backend here without a test of its own. The enums of ops'
// attributes (OpEnums.def) are checked the same way: each value has its row's
// name and number in the dialect, the schema and kiln::ops.

#include "codegen/CudaEmitter.h"
#include "codegen/HostEmulation.h"
#include "codegen/NvrtcCheck.h"
#include "codegen/StepEncoding.h"
#include "frontend/onnx/NodeImporter.h"
#include "interpreter/Interpreter.h"
#include "ir/Kiln/OpTables.h"
#include "kiln/ops/Enums.h"
#include "kiln/schema/kiln_artifact_generated.h"
#include "passes/Passes.h"
#include "driver/InitAll.h"

#include "mlir/AsmParser/AsmParser.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"

#include <gtest/gtest.h>

#include <cmath>
#include <iostream>
#include <optional>
#include <set>
#include <string>

namespace {

using namespace kiln;
namespace fb = kiln::schema;

constexpr int64_t kElements = 64;

/// One row of the table as the test needs it.
struct Row {
  std::string fn;        ///< its name in the table
  std::string opName;    ///< "kiln.erf"
  int arity;
  std::string onnx;      ///< "" when the row has no ONNX op
  int64_t onnxVersion;
  int code;
  bool boolResult; ///< the row's Result is Bool (i1)
};

std::vector<Row> rows() {
  std::vector<Row> out;
#define KILN_UNARY(Fn, Code, OpClass, Onnx, OnnxVersion, Result, ...)                              \
  out.push_back({#Fn, OpClass::getOperationName().str(), 1, Onnx, OnnxVersion, Code,               \
                 ops::ResultType::Result == ops::ResultType::Bool});
#define KILN_BINARY(Fn, Code, OpClass, Onnx, OnnxVersion, ...)                                     \
  out.push_back({#Fn, OpClass::getOperationName().str(), 2, Onnx, OnnxVersion, Code, false});
#include "kiln/ops/ElementwiseOps.def"
  return out;
}

class OpTable : public ::testing::Test {
protected:
  OpTable() {
    mlir::DialectRegistry registry;
    registerAllDialects(registry);
    context.appendDialectRegistry(registry);
    context.loadAllAvailableDialects();
  }
  mlir::MLIRContext context;
};

TEST_F(OpTable, EveryElementwiseOpHasARowAndEveryRowAnOp) {
  std::set<std::string> inTable;
  for (const Row &r : rows())
    EXPECT_TRUE(inTable.insert(r.opName).second) << r.opName << " has two rows";
  // The elementwise ops that are not functions of the table: their operands
  // or attributes make them more than a row (a direction, a target type).
  const std::set<std::string> notFunctions = {"kiln.compare", "kiln.select", "kiln.cast",
                                              "kiln.bitcast"};
  std::set<std::string> elementwise;
  for (mlir::RegisteredOperationName name : context.getRegisteredOperations()) {
    if (name.getDialectNamespace() != "kiln" || !name.hasTrait<OpTrait::Elementwise>())
      continue;
    std::string op = name.getStringRef().str();
    elementwise.insert(op);
    if (!notFunctions.count(op)) {
      EXPECT_TRUE(inTable.count(op)) << op << " is elementwise but has no row in the op table";
    }
  }
  for (const std::string &op : inTable) {
    EXPECT_TRUE(elementwise.count(op)) << op << " has a row but is not an elementwise op";
  }
}

// Fusion and the precision pass ask an op's KernelFacts and list no ops, so a
// new op either states its facts or is named here, with why no kernel ever
// computes it.
TEST_F(OpTable, EveryOpStatesItsKernelFactsOrWhyItIsNeverInAKernel) {
  const std::set<std::string> neverInKernels = {
      // Regions: their bodies form kernels of their own.
      "kiln.if", "kiln.loop", "kiln.scan", "kiln.yield", "kiln.kernel",
      // Values a kernel copies in as literals or codegen reads while emitting.
      "kiln.constant", "kiln.symbolic_constant",
      // Host work on sizes: guards on symbols, shapes, sizes read back.
      "kiln.guard", "kiln.shape_of", "kiln.read_sizes"};
  size_t withFacts = 0;
  for (mlir::RegisteredOperationName name : context.getRegisteredOperations()) {
    if (name.getDialectNamespace() != "kiln")
      continue;
    std::string op = name.getStringRef().str();
    if (name.hasInterface<KernelFacts>()) {
      ++withFacts;
      EXPECT_FALSE(neverInKernels.count(op))
          << op << " has KernelFacts but is listed as never in a kernel";
    } else {
      EXPECT_TRUE(neverInKernels.count(op))
          << op << " states no KernelFacts (ir/Kiln/KernelFacts.td): declare them on the op, "
          << "or list it here with why no kernel computes it";
    }
  }
  EXPECT_GT(withFacts, 80u);
}

TEST_F(OpTable, CodesAreUniqueAndTheSchemaNamesThem) {
  std::set<int> unary, binary;
  for (const Row &r : rows()) {
    std::set<int> &codes = r.arity == 1 ? unary : binary;
    EXPECT_TRUE(codes.insert(r.code).second) << r.fn << " reuses code " << r.code;
    const char *schemaName = r.arity == 1 ? fb::EnumNameUnaryFn(static_cast<fb::UnaryFn>(r.code))
                                          : fb::EnumNameBinaryFn(static_cast<fb::BinaryFn>(r.code));
    EXPECT_EQ(std::string(schemaName), r.fn);
  }
}

/// What one value of OpEnums.def's rows became in each expansion.
struct EnumValue {
  std::string enumName, mnemonic, name, schemaName;
  int number;
  std::optional<int> odsNumber;   ///< symbolize<Enum>(name), the dialect's
  std::string odsName;            ///< stringify<Enum> of the row's number
  std::string schemaNameOfNumber; ///< the schema's name for the row's number
  bool opsKnowsNumber;            ///< kiln::ops::enumFromNumber
  mlir::Attribute attribute;      ///< the dialect's attribute of the value
};

std::vector<EnumValue> enumValues(mlir::MLIRContext &context) {
  std::vector<EnumValue> out;
#define KILN_ENUM(Enum, Mnemonic, Summary)                                                        \
  {                                                                                                \
    using Ods = ::kiln::Enum;                                                                      \
    auto odsNumber = [](const char *name) -> std::optional<int> {                                  \
      std::optional<Ods> v = symbolize##Enum(name);                                                \
      return v ? std::optional<int>(static_cast<int>(*v)) : std::nullopt;                          \
    };                                                                                             \
    auto fill = [&](const char *name, const char *schemaName, int number) {                        \
      out.push_back({#Enum, #Mnemonic, name, schemaName, number, odsNumber(name),                 \
                     stringify##Enum(static_cast<Ods>(number)).str(),                              \
                     fb::EnumName##Enum(static_cast<fb::Enum>(number)),                            \
                     ops::enumFromNumber<ops::Enum>(number).has_value(),                          \
                     Enum##Attr::get(&context, static_cast<Ods>(number))});                        \
    };
#define KILN_CASE(Case, SchemaCase, Number) fill(#Case, #SchemaCase, Number);
#define KILN_END_ENUM() }
#include "kiln/ops/OpEnums.def"
  return out;
}

TEST_F(OpTable, EveryEnumValueIsTheSameInEveryExpansion) {
  std::vector<EnumValue> values = enumValues(context);
  ASSERT_GT(values.size(), 40u);
  std::set<std::pair<std::string, int>> numbers;
  std::set<std::pair<std::string, std::string>> names;
  for (const EnumValue &v : values) {
    std::string what = v.enumName + "::" + v.name;
    EXPECT_TRUE(numbers.insert({v.enumName, v.number}).second) << what << " reuses a number";
    EXPECT_TRUE(names.insert({v.enumName, v.name}).second) << what << " is listed twice";
    // The dialect parses and prints the row's name with the row's number.
    EXPECT_EQ(v.odsNumber, std::optional<int>(v.number)) << what;
    EXPECT_EQ(v.odsName, v.name) << what;
    // The schema names the row's number as the row does, and the runtime's
    // decoder accepts it.
    EXPECT_EQ(v.schemaNameOfNumber, v.schemaName) << what;
    EXPECT_TRUE(v.opsKnowsNumber) << what;
    // The attribute prints as #kiln<mnemonic name> and parses back.
    std::string printed;
    llvm::raw_string_ostream os(printed);
    v.attribute.print(os);
    EXPECT_EQ(printed, "#kiln<" + v.mnemonic + " " + v.name + ">") << what;
    EXPECT_EQ(mlir::parseAttribute(printed, &context), v.attribute) << what;
  }
  // A number past every row's is no value: the decoder calls it corrupt.
  EXPECT_FALSE(ops::enumFromNumber<ops::CoordinateMode>(6).has_value());
  EXPECT_FALSE(ops::enumFromNumber<ops::Activation>(255).has_value());
  EXPECT_FALSE(ops::enumFromNumber<ops::ReduceKind>(-1).has_value());
}

TEST_F(OpTable, OnnxOpsMapOneToOneWithTheRowsVersion) {
  std::set<std::string> declared = {
#define ONNX_OP(name, converter, maxVersion) name,
#define ONNX_UNSUPPORTED(name, reason) name,
#include "frontend/onnx/OnnxOps.def"
#undef ONNX_OP
#undef ONNX_UNSUPPORTED
  };
  for (const Row &r : rows()) {
    if (r.onnx.empty())
      continue;
    EXPECT_FALSE(declared.count(r.onnx))
        << r.onnx << " is in OnnxOps.def and in the op table: one of them must go";
    onnx_import::ConverterEntry entry = onnx_import::lookupConverter(r.onnx, nullptr);
    EXPECT_NE(entry.convert, nullptr) << r.onnx;
    EXPECT_EQ(entry.maxVersion, r.onnxVersion) << r.onnx;
  }
}

/// The result element type of a row over operands of `type`.
std::string resultOf(const Row &r, const std::string &type) {
  return r.boolResult ? "i1" : type;
}

/// The op of row `r` over `type` in a function `name`, in the generic form.
std::string function(const Row &r, const std::string &type, const std::string &name) {
  std::string arg = "tensor<" + std::to_string(kElements) + "x" + type + ">";
  std::string result = "tensor<" + std::to_string(kElements) + "x" + resultOf(r, type) + ">";
  return "func.func @" + name + "(%a: " + arg + ", %b: " + arg + ") -> " + result +
         " {\n  %r = \"" + r.opName + "\"(" + (r.arity == 1 ? "%a" : "%a, %b") + ") : (" + arg +
         (r.arity == 1 ? "" : ", " + arg) + ") -> " + result + "\n  return %r : " + result +
         "\n}\n";
}

/// The element types a row is tried on: those its ODS operand constraint takes.
std::vector<std::string> typesOf(mlir::MLIRContext &ctx, const Row &r) {
  std::vector<std::string> out;
  // The verifier decides; its refusals are not failures here.
  mlir::ScopedDiagnosticHandler quiet(&ctx, [](mlir::Diagnostic &) { return mlir::success(); });
  for (std::string t : {"f32", "i32", "i1"})
    if (mlir::parseSourceString<mlir::ModuleOp>(function(r, t, "f"), &ctx))
      out.push_back(t);
  return out;
}

/// Inputs every function is defined on somewhere, and a few where it is not
/// (NaN on both sides then); integer divisors and shift counts are nonzero and
/// in range.
ref::Tensor input(ref::DType dtype, int which) {
  ref::Tensor t(dtype, {kElements});
  for (int64_t i = 0; i < kElements; ++i) {
    if (dtype == ref::DType::f32)
      t.setF(i, which == 0 ? -3.0 + 6.0 * i / (kElements - 1) : 0.25 + 0.05 * i);
    else if (dtype == ref::DType::boolean)
      t.setI(i, (i >> which) & 1);
    else
      t.setI(i, which == 0 ? (i * 37 % 200) - 100 : 1 + i % 7);
  }
  return t;
}

bool close(double want, double got, bool exact) {
  if (std::isnan(want) || std::isnan(got))
    return std::isnan(want) && std::isnan(got);
  if (exact || std::isinf(want))
    return want == got;
  // The fp32 tolerances of the conformance runs (docs/precision.md).
  return std::fabs(want - got) <= 1e-5 + 1e-5 * std::fabs(want);
}

TEST_F(OpTable, EveryRowRunsOnEveryBackend) {
  // One function per (row, element type), all compiled together.
  std::string src;
  struct Case {
    Row row;
    std::string type, func;
  };
  std::vector<Case> cases;
  for (const Row &r : rows()) {
    std::vector<std::string> types = typesOf(context, r);
    EXPECT_FALSE(types.empty()) << r.opName << " takes none of f32, i32, i1";
    for (const std::string &t : types) {
      std::string func = r.fn + "_" + t;
      src += function(r, t, func);
      cases.push_back({r, t, func});
    }
  }
  std::cout << "op table: " << rows().size() << " rows, " << cases.size()
            << " (row, element type) cases\n";
  mlir::OwningOpRef<mlir::ModuleOp> module = mlir::parseSourceString<mlir::ModuleOp>(src, &context);
  ASSERT_TRUE(module) << src;

  // Every row is a host step of its own function number before kernels form.
  for (mlir::func::FuncOp f : module->getOps<mlir::func::FuncOp>()) {
    mlir::Operation *op = &f.getBody().front().front();
    ASSERT_TRUE(isHostStepOp(op)) << f.getName().str();
    flatbuffers::FlatBufferBuilder b;
    mlir::FailureOr<EncodedStep> step = encodeStep(op, b);
    ASSERT_TRUE(succeeded(step)) << f.getName().str();
    std::optional<ops::UnaryFn> u = unaryFnOf(op);
    std::optional<ops::BinaryFn> bin = binaryFnOf(op);
    ASSERT_TRUE(u || bin);
    EXPECT_EQ(step->type, u ? fb::StepOp::Unary : fb::StepOp::Binary) << f.getName().str();
  }

  mlir::PassManager pm(&context);
  buildCompilePipeline(pm, CompilePipelineOptions());
  ASSERT_TRUE(succeeded(pm.run(*module)));
  mlir::FailureOr<std::vector<GeneratedKernel>> kernels = emitKernels(*module);
  ASSERT_TRUE(succeeded(kernels));
  EXPECT_EQ(kernels->size(), cases.size()) << "one kernel per row and type";
  for (const GeneratedKernel &k : *kernels) {
    EXPECT_EQ(k.source.find('$'), std::string::npos)
        << k.name << ": a placeholder of the op table's CUDA C is left:\n" << k.source;
  }

  // NVRTC for one architecture (the others differ only in code generation).
  auto cubins = compileKernelsForArch(*kernels, 90);
  EXPECT_TRUE(cubins.ok()) << cubins.status().message();

  absl::StatusOr<std::unique_ptr<HostKernels>> host = HostKernels::build(*kernels);
  ASSERT_TRUE(host.ok()) << host.status().message();
  InterpretOptions emulated;
  emulated.runKernel = hostKernelRunner(**host);

  for (const Case &c : cases) {
    auto f = module->lookupSymbol<mlir::func::FuncOp>(c.func);
    ASSERT_TRUE(f) << c.func;
    ref::DType dtype = c.type == "f32" ? ref::DType::f32
                       : c.type == "i1" ? ref::DType::boolean
                                        : ref::DType::i32;
    std::vector<ref::Tensor> in = {input(dtype, 0), input(dtype, 1)};
    mlir::FailureOr<std::vector<ref::Tensor>> want = interpret(f, in);
    mlir::FailureOr<std::vector<ref::Tensor>> got = interpret(f, in, emulated);
    // Data errors (a bool divisor of 0) are the reference's and the kernel's both.
    ASSERT_EQ(succeeded(want), succeeded(got)) << c.func;
    if (failed(want))
      continue;
    const ref::Tensor &w = want->front(), &g = got->front();
    ASSERT_EQ(w.numel(), g.numel()) << c.func;
    bool exact = c.type != "f32" || w.dtype() == ref::DType::boolean;
    int mismatches = 0;
    for (int64_t i = 0; i < w.numel() && mismatches < 3; ++i) {
      double a = exact ? static_cast<double>(w.getI(i)) : w.getF(i);
      double b = exact ? static_cast<double>(g.getI(i)) : g.getF(i);
      if (!close(a, b, exact)) {
        ++mismatches;
        ADD_FAILURE() << c.func << "[" << i << "]: reference " << a << ", host emulation " << b;
      }
    }
  }
}

} // namespace
