//===- KilnBase.td - kiln dialect, base op class, type constraints -*- tablegen -*-===//
//
// The kiln graph dialect: ops on builtin ranked tensors with value semantics. Dynamic
// dims are `?` in the tensor type; their symbolic value (an expression over named
// symbols such as `batch`) rides along as the tensor's `#kiln.dims` encoding.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_BASE_TD
#define KILN_BASE_TD

include "mlir/IR/OpBase.td"
include "mlir/IR/AttrTypeBase.td"
include "mlir/IR/EnumAttr.td"
include "mlir/Interfaces/InferTypeOpInterface.td"
include "mlir/Interfaces/SideEffectInterfaces.td"
include "ir/Kiln/KernelFacts.td"

def Kiln_Dialect : Dialect {
  let name = "kiln";
  let cppNamespace = "::kiln";
  let summary = "kiln's graph dialect: tensor ops with symbolic shapes";
  let description = [{
    The kiln dialect is the graph level of the kiln compiler. ONNX ops decompose onto
    its compact core op set; passes optimize it with symbolic shapes, and the codegen
    groups it into kernel regions and library calls.

    Every op works on builtin ranked tensors. A dynamic dim carries its value as an
    expression over named symbols in the tensor's encoding:

    ```mlir
    tensor<?x768xf32, #kiln.dims<[batch * seq, 768]>>
    ```
  }];
  let useDefaultAttributePrinterParser = 1;
  let hasConstantMaterializer = 1;
  let extraClassDeclaration = [{
    /// Returns the position of the symbol `name` in this context's symbol table,
    /// adding it when new. Symbol positions index AffineSymbolExpr; names are what
    /// prints. Thread-safe: passes on different functions may run concurrently.
    unsigned getOrCreateSymbol(::llvm::StringRef name);
    /// Returns the name of the symbol at `position`.
    ::llvm::StringRef getSymbolName(unsigned position);
    /// Returns a symbol whose name starts with `hint` and was not used before.
    unsigned createFreshSymbol(::llvm::StringRef hint);

  private:
    struct SymbolTable;
    std::unique_ptr<SymbolTable> symbols;
    void registerAttributes();
    void registerOps();
  public:
  }];
}

//===----------------------------------------------------------------------===//
// Type constraints
//===----------------------------------------------------------------------===//

def Kiln_Bool : I<1>;
def Kiln_F8E8M0FNU : Type<CPred<"::llvm::isa<::mlir::Float8E8M0FNUType>($_self)">,
                           "f8E8M0FNU type">;
// Narrow floats (ONNX's float8 and float4 types) are storage types: ops on them
// compute in f32, as ONNX's reference does.
def Kiln_NarrowFloat : AnyTypeOf<[F8E4M3FN, F8E4M3FNUZ, F8E5M2, F8E5M2FNUZ, F4E2M1FN,
                                  Kiln_F8E8M0FNU]>;
def Kiln_Float : AnyTypeOf<[F16, BF16, F32, F64, Kiln_NarrowFloat]>;
def Kiln_Int : AnyTypeOf<[AnySignlessInteger, AnyUnsignedInteger]>;
def Kiln_Element : AnyTypeOf<[Kiln_Float, Kiln_Int]>;

def Kiln_Tensor : RankedTensorOf<[Kiln_Element]>;
def Kiln_FloatTensor : RankedTensorOf<[Kiln_Float]>;
def Kiln_IntTensor : RankedTensorOf<[Kiln_Int]>;
def Kiln_BoolTensor : RankedTensorOf<[Kiln_Bool]>;
def Kiln_IndexTensor : RankedTensorOf<[I32, I64]>;
def Kiln_ShapeTensor : 1DTensorOf<[I64]>;

//===----------------------------------------------------------------------===//
// Base op class
//===----------------------------------------------------------------------===//

// Every kiln op has value semantics and a shape function. The shape function is the
// op's InferTypeOpInterface; a declared result type may be *less* refined than the
// inferred one (a `?` where inference knows more), which --kiln-infer-shapes refines.
def Kiln_InferResultTypes : InferTypeOpAdaptorBase<[{
    static bool isCompatibleReturnTypes(::mlir::TypeRange inferred,
                                        ::mlir::TypeRange declared) {
      return ::kiln::areRefinementCompatible(inferred, declared);
    }
  }]>;

// Runs the shape function as part of the op's own verification, so a malformed op
// gets the shape function's diagnostic alone (InferTypeOpInterface's own check
// would add a generic "failed to infer returned types" after it).
def Kiln_VerifyShapeFunction : NativeOpTrait<"VerifyShapeFunction"> {
  let cppNamespace = "::kiln::OpTrait";
}

class Kiln_Op<string mnemonic, list<Trait> traits = []>
    : Op<Kiln_Dialect, mnemonic,
         !listconcat([Pure, Kiln_InferResultTypes, Kiln_VerifyShapeFunction], traits)> {
  let assemblyFormat = "operands attr-dict `:` functional-type(operands, results)";
}

#endif // KILN_BASE_TD
