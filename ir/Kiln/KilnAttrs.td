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
def Kiln_Precision : I32EnumAttr<"Precision", "a precision mode", [
    I32EnumAttrCase<"fp32", 0>, I32EnumAttrCase<"tf32", 1>,
    I32EnumAttrCase<"fp16", 2>, I32EnumAttrCase<"bf16", 3>]> {
  let cppNamespace = "::kiln";
  let genSpecializedAttr = 0;
}
def Kiln_PrecisionAttr : EnumAttr<Kiln_Dialect, Kiln_Precision, "precision">;

def Kiln_CompareDirection : I32EnumAttr<"CompareDirection", "comparison predicate", [
    I32EnumAttrCase<"eq", 0>, I32EnumAttrCase<"ne", 1>,
    I32EnumAttrCase<"lt", 2>, I32EnumAttrCase<"le", 3>,
    I32EnumAttrCase<"gt", 4>, I32EnumAttrCase<"ge", 5>]> {
  let cppNamespace = "::kiln";
  let genSpecializedAttr = 0;
}
def Kiln_CompareDirectionAttr : EnumAttr<Kiln_Dialect, Kiln_CompareDirection, "compare">;

def Kiln_GuardKind : I32EnumAttr<"GuardKind", "a relation between two dims", [
    I32EnumAttrCase<"equal", 0>, I32EnumAttrCase<"equal_or_one", 1>,
    I32EnumAttrCase<"less_equal", 2>]> {
  let cppNamespace = "::kiln";
  let genSpecializedAttr = 0;
}
def Kiln_GuardKindAttr : EnumAttr<Kiln_Dialect, Kiln_GuardKind, "guard"> {
  let assemblyFormat = "`<` $value `>`";
}

def Kiln_ReduceKind : I32EnumAttr<"ReduceKind", "reduction combiner", [
    I32EnumAttrCase<"sum", 0>, I32EnumAttrCase<"prod", 1>,
    I32EnumAttrCase<"max", 2>, I32EnumAttrCase<"min", 3>,
    I32EnumAttrCase<"mean", 4>, I32EnumAttrCase<"any", 5>,
    I32EnumAttrCase<"all", 6>]> {
  let cppNamespace = "::kiln";
  let genSpecializedAttr = 0;
}
def Kiln_ReduceKindAttr : EnumAttr<Kiln_Dialect, Kiln_ReduceKind, "reduce">;

def Kiln_ArgReduceKind : I32EnumAttr<"ArgReduceKind", "arg reduction", [
    I32EnumAttrCase<"argmax", 0>, I32EnumAttrCase<"argmin", 1>]> {
  let cppNamespace = "::kiln";
  let genSpecializedAttr = 0;
}
def Kiln_ArgReduceKindAttr : EnumAttr<Kiln_Dialect, Kiln_ArgReduceKind, "arg_reduce">;

def Kiln_PoolKind : I32EnumAttr<"PoolKind", "pooling combiner", [
    I32EnumAttrCase<"max", 0>, I32EnumAttrCase<"avg", 1>, I32EnumAttrCase<"lp", 2>]> {
  let cppNamespace = "::kiln";
  let genSpecializedAttr = 0;
}
def Kiln_PoolKindAttr : EnumAttr<Kiln_Dialect, Kiln_PoolKind, "pool">;

def Kiln_CumulativeKind : I32EnumAttr<"CumulativeKind", "running combiner", [
    I32EnumAttrCase<"sum", 0>, I32EnumAttrCase<"prod", 1>]> {
  let cppNamespace = "::kiln";
  let genSpecializedAttr = 0;
}
def Kiln_CumulativeKindAttr : EnumAttr<Kiln_Dialect, Kiln_CumulativeKind, "cumulative">;

def Kiln_ScatterReduction : I32EnumAttr<"ScatterReduction", "how scattered updates combine", [
    I32EnumAttrCase<"none", 0>, I32EnumAttrCase<"add", 1>, I32EnumAttrCase<"mul", 2>,
    I32EnumAttrCase<"max", 3>, I32EnumAttrCase<"min", 4>]> {
  let cppNamespace = "::kiln";
  let genSpecializedAttr = 0;
}
def Kiln_ScatterReductionAttr : EnumAttr<Kiln_Dialect, Kiln_ScatterReduction, "scatter">;

def Kiln_ResizeMode : I32EnumAttr<"ResizeMode", "resize interpolation", [
    I32EnumAttrCase<"nearest", 0>, I32EnumAttrCase<"linear", 1>, I32EnumAttrCase<"cubic", 2>]> {
  let cppNamespace = "::kiln";
  let genSpecializedAttr = 0;
}
def Kiln_ResizeModeAttr : EnumAttr<Kiln_Dialect, Kiln_ResizeMode, "resize_mode">;

def Kiln_CoordinateMode : I32EnumAttr<"CoordinateMode", "output to input coordinate map", [
    I32EnumAttrCase<"half_pixel", 0>, I32EnumAttrCase<"half_pixel_symmetric", 1>,
    I32EnumAttrCase<"pytorch_half_pixel", 2>, I32EnumAttrCase<"align_corners", 3>,
    I32EnumAttrCase<"asymmetric", 4>, I32EnumAttrCase<"tf_crop_and_resize", 5>]> {
  let cppNamespace = "::kiln";
  let genSpecializedAttr = 0;
}
def Kiln_CoordinateModeAttr : EnumAttr<Kiln_Dialect, Kiln_CoordinateMode, "coordinate_mode">;

def Kiln_NearestMode : I32EnumAttr<"NearestMode", "rounding of nearest-neighbour coordinates", [
    I32EnumAttrCase<"round_prefer_floor", 0>, I32EnumAttrCase<"round_prefer_ceil", 1>,
    I32EnumAttrCase<"floor", 2>, I32EnumAttrCase<"ceil", 3>]> {
  let cppNamespace = "::kiln";
  let genSpecializedAttr = 0;
}
def Kiln_NearestModeAttr : EnumAttr<Kiln_Dialect, Kiln_NearestMode, "nearest_mode">;

def Kiln_PadMode : I32EnumAttr<"PadMode", "padding mode", [
    I32EnumAttrCase<"constant", 0>, I32EnumAttrCase<"reflect", 1>,
    I32EnumAttrCase<"edge", 2>, I32EnumAttrCase<"wrap", 3>]> {
  let cppNamespace = "::kiln";
  let genSpecializedAttr = 0;
}
def Kiln_PadModeAttr : EnumAttr<Kiln_Dialect, Kiln_PadMode, "pad_mode">;

def Kiln_GridPadding : I32EnumAttr<"GridPadding", "what grid_sample reads outside the input", [
    I32EnumAttrCase<"zeros", 0>, I32EnumAttrCase<"border", 1>,
    I32EnumAttrCase<"reflection", 2>]> {
  let cppNamespace = "::kiln";
  let genSpecializedAttr = 0;
}
def Kiln_GridPaddingAttr : EnumAttr<Kiln_Dialect, Kiln_GridPadding, "grid_padding">;

// gelu_tanh is GELU's tanh approximation (cuBLASLt's GELU epilogue; matmul only).
def Kiln_Activation : I32EnumAttr<"Activation", "an activation a library op applies last", [
    I32EnumAttrCase<"none", 0>, I32EnumAttrCase<"relu", 1>, I32EnumAttrCase<"gelu_tanh", 2>]> {
  let cppNamespace = "::kiln";
  let genSpecializedAttr = 0;
}
def Kiln_ActivationAttr : EnumAttr<Kiln_Dialect, Kiln_Activation, "activation">;

#endif // KILN_ATTRS_TD
