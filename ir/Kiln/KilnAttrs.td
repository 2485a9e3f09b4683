//===- KilnAttrs.td - kiln attributes and enums ---------------*- tablegen -*-===//

#ifndef KILN_ATTRS_TD
#define KILN_ATTRS_TD

include "ir/Kiln/KilnBase.td"
include "mlir/IR/TensorEncoding.td"

class Kiln_Attr<string name, string attrMnemonic, list<Trait> traits = []>
    : AttrDef<Kiln_Dialect, name, traits> {
  let mnemonic = attrMnemonic;
}

def Kiln_DimsAttr : Kiln_Attr<"Dims", "dims",
    [DeclareAttrInterfaceMethods<VerifiableTensorEncoding>]> {
  let summary = "symbolic dims: one expression over named symbols per dim";
  let description = [{
    A list of dim expressions over named symbols with `+`, `-`, `*`, `floordiv`,
    `ceildiv` and `mod`, or `?` where nothing is known. Expressions are kept in a
    canonical polynomial form, so two values have equal dims exactly when their
    attributes are equal (`seq * batch` and `batch * seq` are one attribute).

    As a tensor encoding it gives the value of every dim of the tensor; its static
    dims must match the type's, and a tensor whose dims are all static or unknown
    carries no encoding. As the value of `kiln.symbolic_constant` it is the contents
    of a 1-D integer tensor.

    ```mlir
    tensor<?x?x768xf32, #kiln.dims<[batch, seq, 768]>>
    tensor<?x768xf32, #kiln.dims<[batch * seq, 768]>>
    ```
  }];
  let parameters = (ins
    ArrayRefParameter<"::mlir::AffineExpr", "canonical dim expressions, null when unknown">:$dims);
  let hasCustomAssemblyFormat = 1;
  let extraClassDeclaration = [{
    /// Builds the attribute from arbitrary expressions, canonicalizing each.
    static DimsAttr getCanonical(::mlir::MLIRContext *context,
                                 ::llvm::ArrayRef<::mlir::AffineExpr> dims);
    /// True when every dim is known (no `?`).
    bool isFullyKnown() const;
  }];
}

// How a kiln.kernel iterates (KernelOps.td), chosen once by --kiln-form-kernels;
// codegen has one file per schedule (codegen/Schedule*.cpp). Printed and
// parsed as its name in quotes: kiln.kernel "pointwise"(...).
def Kiln_Schedule : I32EnumAttr<"Schedule", "a kernel's iteration schedule", [
    I32EnumAttrCase<"pointwise", 0>, I32EnumAttrCase<"reduction", 1>,
    I32EnumAttrCase<"row", 2>, I32EnumAttrCase<"compaction", 3>,
    I32EnumAttrCase<"attention", 4>]> {
  let cppNamespace = "::kiln";
  let genSpecializedAttr = 0;
}
def Kiln_ScheduleAttr : EnumAttr<Kiln_Dialect, Kiln_Schedule, "schedule">;

// The precision mode kiln-lower-precision records on a function (kiln-compile
// --precision; docs/precision.md), as `kiln.precision = #kiln<precision fp16>`.
// The artifact writer reads it: tf32 lets the libraries round fp32 operands.
// fp8 is bf16 storage with kiln-fp8-matmuls' float8 products.
def Kiln_Precision : I32EnumAttr<"Precision", "a precision mode", [
    I32EnumAttrCase<"fp32", 0>, I32EnumAttrCase<"tf32", 1>,
    I32EnumAttrCase<"fp16", 2>, I32EnumAttrCase<"bf16", 3>, I32EnumAttrCase<"fp8", 4>]> {
  let cppNamespace = "::kiln";
  let genSpecializedAttr = 0;
}
def Kiln_PrecisionAttr : EnumAttr<Kiln_Dialect, Kiln_Precision, "precision">;

def Kiln_GuardKind : I32EnumAttr<"GuardKind", "a relation between two dims", [
    I32EnumAttrCase<"equal", 0>, I32EnumAttrCase<"equal_or_one", 1>,
    I32EnumAttrCase<"less_equal", 2>]> {
  let cppNamespace = "::kiln";
  let genSpecializedAttr = 0;
}
def Kiln_GuardKindAttr : EnumAttr<Kiln_Dialect, Kiln_GuardKind, "guard"> {
  let assemblyFormat = "`<` $value `>`";
}

// The enums of ops' attributes (CompareDirection, ReduceKind, ResizeMode,
// Activation, ...): generated from runtime/ops/include/kiln/ops/OpEnums.def,
// the one list of their values, which the artifact schema's enums and
// kiln::ops's come from too.
include "KilnOpEnums.td"

#endif // KILN_ATTRS_TD
