//===- ElementwiseOps.td - unary, binary, compare, select, cast -*- tablegen -*-===//
//
// Elementwise ops broadcast their operands with numpy rules: shapes align from the
// right, and a dim of 1 stretches. A symbolic dim broadcasts against an equal
// expression or against 1; anything else the shape function cannot prove becomes `?`.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_ELEMENTWISE_OPS_TD
#define KILN_ELEMENTWISE_OPS_TD

include "ir/Kiln/KilnAttrs.td"

//===----------------------------------------------------------------------===//
// Unary
//===----------------------------------------------------------------------===//

// Marks the broadcasting elementwise family for the passes (fusion groups them). It is
// kiln's own: upstream's Elementwise trait forbids broadcasting.
def Kiln_ElementwiseTrait : NativeOpTrait<"Elementwise"> {
  let cppNamespace = "::kiln::OpTrait";
}

// Everything but the record itself is the op's row in the op table
// (runtime/ops/include/kiln/ops/ElementwiseOps.def): the folder and the result type
// come from there (UnaryFnOf, ir/Kiln/OpTables.h). `boolResult` marks predicates
// (is_nan, is_inf) for the description; the build checks that it agrees with the
// row's result.
class Kiln_UnaryOp<string mnemonic, Type operandType, string formula, bit boolResult = 0>
    : Kiln_Op<mnemonic, [Kiln_ElementwiseTrait, Kiln_KernelFacts]> {
  let summary = "elementwise " # mnemonic;
  let description = "Computes `" # formula # "` for every element; the result has the "
    # "shape of the input" # !if(boolResult, " and element type i1.", " and its element type.") # [{

    ```mlir
    }] # "%r = kiln." # mnemonic # " %x : (tensor<?x4x" # !if(!eq(mnemonic, "not"), "i1", !if(!eq(mnemonic, "bitwise_not"), "i32", "f32"))
    # ", #kiln.dims<[n, 4]>>) -> tensor<?x4x"
    # !if(boolResult, "i1", !if(!eq(mnemonic, "not"), "i1", !if(!eq(mnemonic, "bitwise_not"), "i32", "f32"))) # [{, #kiln.dims<[n, 4]>>
    ```
  }];
  let arguments = (ins RankedTensorOf<[operandType]>:$input);
  let results = (outs Kiln_Tensor:$result);
  let hasFolder = 1;
  let extraClassDefinition = [{
    static_assert((::kiln::ops::resultType(::kiln::UnaryFnOf<$cppClass>::value) ==
                   ::kiln::ops::ResultType::Bool) == }] # !if(boolResult, "true", "false") # [{,
                  "the op table's Result and ODS's boolResult disagree");
    ::llvm::LogicalResult $cppClass::inferReturnTypes(::mlir::MLIRContext *context,
        std::optional<::mlir::Location> location, Adaptor adaptor,
        ::llvm::SmallVectorImpl<::mlir::Type> &inferred) {
      return ::kiln::inferUnaryElementwise(adaptor.getInput(), }] #
        !if(boolResult, "::mlir::IntegerType::get(context, 1)", "::mlir::Type()") # [{,
        inferred);
    }
    ::mlir::OpFoldResult $cppClass::fold(FoldAdaptor adaptor) {
      return ::kiln::foldUnaryFn(::kiln::UnaryFnOf<$cppClass>::value, adaptor.getInput(),
                                 getType());
    }
  }];
}

def Kiln_NegOp : Kiln_UnaryOp<"neg", Kiln_Element, "-x">;
def Kiln_AbsOp : Kiln_UnaryOp<"abs", Kiln_Element, "|x|">;
def Kiln_SignOp : Kiln_UnaryOp<"sign", Kiln_Element, "x > 0 ? 1 : (x < 0 ? -1 : 0)">;
def Kiln_ExpOp : Kiln_UnaryOp<"exp", Kiln_Float, "e^x">;
def Kiln_LogOp : Kiln_UnaryOp<"log", Kiln_Float, "ln(x)">;
def Kiln_SqrtOp : Kiln_UnaryOp<"sqrt", Kiln_Float, "sqrt(x)">;
def Kiln_RsqrtOp : Kiln_UnaryOp<"rsqrt", Kiln_Float, "1 / sqrt(x)">;
def Kiln_ReciprocalOp : Kiln_UnaryOp<"reciprocal", Kiln_Float, "1 / x">;
def Kiln_TanhOp : Kiln_UnaryOp<"tanh", Kiln_Float, "tanh(x)">;
def Kiln_SigmoidOp : Kiln_UnaryOp<"sigmoid", Kiln_Float, "1 / (1 + e^-x)">;
def Kiln_ErfOp : Kiln_UnaryOp<"erf", Kiln_Float, "erf(x)">;
def Kiln_SinOp : Kiln_UnaryOp<"sin", Kiln_Float, "sin(x)">;
def Kiln_CosOp : Kiln_UnaryOp<"cos", Kiln_Float, "cos(x)">;
def Kiln_TanOp : Kiln_UnaryOp<"tan", Kiln_Float, "tan(x)">;
def Kiln_AsinOp : Kiln_UnaryOp<"asin", Kiln_Float, "asin(x)">;
def Kiln_AcosOp : Kiln_UnaryOp<"acos", Kiln_Float, "acos(x)">;
def Kiln_AtanOp : Kiln_UnaryOp<"atan", Kiln_Float, "atan(x)">;
def Kiln_SinhOp : Kiln_UnaryOp<"sinh", Kiln_Float, "sinh(x)">;
def Kiln_CoshOp : Kiln_UnaryOp<"cosh", Kiln_Float, "cosh(x)">;
def Kiln_AsinhOp : Kiln_UnaryOp<"asinh", Kiln_Float, "asinh(x)">;
def Kiln_AcoshOp : Kiln_UnaryOp<"acosh", Kiln_Float, "acosh(x)">;
def Kiln_AtanhOp : Kiln_UnaryOp<"atanh", Kiln_Float, "atanh(x)">;
def Kiln_FloorOp : Kiln_UnaryOp<"floor", Kiln_Float, "floor(x)">;
def Kiln_CeilOp : Kiln_UnaryOp<"ceil", Kiln_Float, "ceil(x)">;
def Kiln_RoundOp : Kiln_UnaryOp<"round", Kiln_Float, "x rounded to nearest, ties to even">;
def Kiln_IsNanOp : Kiln_UnaryOp<"is_nan", Kiln_Float, "x != x", /*boolResult=*/1>;
def Kiln_IsInfOp : Kiln_UnaryOp<"is_inf", Kiln_Float, "x == +inf || x == -inf", /*boolResult=*/1>;
def Kiln_NotOp : Kiln_UnaryOp<"not", Kiln_Bool, "!x">;
def Kiln_BitwiseNotOp : Kiln_UnaryOp<"bitwise_not", Kiln_Int, "~x">;

//===----------------------------------------------------------------------===//
// Binary
//===----------------------------------------------------------------------===//

class Kiln_BinaryOp<string mnemonic, Type elementType, string formula,
                    list<Trait> traits = []>
    : Kiln_Op<mnemonic, !listconcat([Kiln_ElementwiseTrait, Kiln_KernelFacts], traits)> {
  let summary = "elementwise " # mnemonic # " with numpy broadcasting";
  let description = "Computes `" # formula # "` elementwise after broadcasting the "
    # "operands to a common shape. Both operands have the same element type." # [{

    ```mlir
    }] # "%r = kiln." # mnemonic # [{ %a, %b : (tensor<?x1xf32, #kiln.dims<[n, 1]>>, tensor<8xf32>) -> tensor<?x8xf32, #kiln.dims<[n, 8]>>
    ```
  }];
  let arguments = (ins RankedTensorOf<[elementType]>:$lhs, RankedTensorOf<[elementType]>:$rhs);
  let results = (outs Kiln_Tensor:$result);
  let hasFolder = 1;
  let extraClassDefinition = [{
    ::llvm::LogicalResult $cppClass::inferReturnTypes(::mlir::MLIRContext *context,
        std::optional<::mlir::Location> location, Adaptor adaptor,
        ::llvm::SmallVectorImpl<::mlir::Type> &inferred) {
      return ::kiln::inferBroadcastElementwise(location, getOperationName(),
          {adaptor.getLhs(), adaptor.getRhs()}, {adaptor.getLhs(), adaptor.getRhs()},
          ::mlir::Type(), inferred);
    }
  }];
}

def Kiln_AddOp : Kiln_BinaryOp<"add", Kiln_Element, "a + b", [Commutative]>;
def Kiln_SubOp : Kiln_BinaryOp<"sub", Kiln_Element, "a - b">;
def Kiln_MulOp : Kiln_BinaryOp<"mul", Kiln_Element, "a * b", [Commutative]>;
def Kiln_DivOp : Kiln_BinaryOp<"div", Kiln_Element,
    "a / b (integers truncate toward zero)">;
def Kiln_RemOp : Kiln_BinaryOp<"rem", Kiln_Element,
    "a - trunc(a / b) * b: the sign of the dividend, like C fmod">;
def Kiln_ModOp : Kiln_BinaryOp<"mod", Kiln_Element,
    "a - floor(a / b) * b: the sign of the divisor, like Python %">;
def Kiln_PowOp : Kiln_BinaryOp<"pow", Kiln_Element, "a ^ b">;
def Kiln_MaxOp : Kiln_BinaryOp<"max", Kiln_Element, "max(a, b), NaN if either is NaN",
    [Commutative]>;
def Kiln_MinOp : Kiln_BinaryOp<"min", Kiln_Element, "min(a, b), NaN if either is NaN",
    [Commutative]>;
def Kiln_AndOp : Kiln_BinaryOp<"and", Kiln_Bool, "a && b", [Commutative]>;
def Kiln_OrOp : Kiln_BinaryOp<"or", Kiln_Bool, "a || b", [Commutative]>;
def Kiln_XorOp : Kiln_BinaryOp<"xor", Kiln_Bool, "a != b", [Commutative]>;
def Kiln_BitwiseAndOp : Kiln_BinaryOp<"bitwise_and", Kiln_Int, "a & b", [Commutative]>;
def Kiln_BitwiseOrOp : Kiln_BinaryOp<"bitwise_or", Kiln_Int, "a | b", [Commutative]>;
def Kiln_BitwiseXorOp : Kiln_BinaryOp<"bitwise_xor", Kiln_Int, "a ^ b", [Commutative]>;
def Kiln_ShiftLeftOp : Kiln_BinaryOp<"shift_left", Kiln_Int,
    "a << b (0 when b >= bit width)">;
def Kiln_ShiftRightOp : Kiln_BinaryOp<"shift_right", Kiln_Int,
    "a >> b, logical for unsigned and arithmetic for signless (0 or -1 past bit width)">;

//===----------------------------------------------------------------------===//
// Compare, select, cast
//===----------------------------------------------------------------------===//

def Kiln_CompareOp : Kiln_Op<"compare", [Kiln_ElementwiseTrait, Kiln_KernelFacts]> {
  let summary = "elementwise comparison with numpy broadcasting";
  let description = [{
    Compares the broadcast operands with `direction` and yields i1. Any comparison
    with NaN is false except `ne`, which is true.

    ```mlir
    %r = kiln.compare %a, %b {direction = #kiln<compare lt>} : (tensor<4xf32>, tensor<1xf32>) -> tensor<4xi1>
    ```
  }];
  let arguments = (ins Kiln_Tensor:$lhs, Kiln_Tensor:$rhs,
                       Kiln_CompareDirectionAttr:$direction);
  let results = (outs Kiln_BoolTensor:$result);
  let hasFolder = 1;
}

def Kiln_SelectOp : Kiln_Op<"select", [Kiln_ElementwiseTrait, Kiln_KernelFacts]> {
  let summary = "elementwise choice with three-way numpy broadcasting";
  let description = [{
    Yields `on_true` where `condition` is true and `on_false` elsewhere, after
    broadcasting all three operands to a common shape (ONNX Where).

    ```mlir
    %r = kiln.select %c, %a, %b : (tensor<4xi1>, tensor<4xf32>, tensor<f32>) -> tensor<4xf32>
    ```
  }];
  let arguments = (ins Kiln_BoolTensor:$condition, Kiln_Tensor:$on_true,
                       Kiln_Tensor:$on_false);
  let results = (outs Kiln_Tensor:$result);
  let hasFolder = 1;
}

def Kiln_CastOp : Kiln_Op<"cast", [
    Kiln_ElementwiseTrait, DeclareOpInterfaceMethods<Kiln_KernelFacts, ["runsNarrow"]>]> {
  let summary = "elementwise conversion to another element type";
  let description = [{
    Converts every element to `to` with ONNX Cast semantics: float to integer
    truncates toward zero, integer to narrower integer wraps, anything to i1 is
    `x != 0`, and float to narrower float rounds to nearest even. For float8
    targets, `saturate` clamps out-of-range values to the largest finite value
    (ONNX's default) instead of producing inf or NaN.

    ```mlir
    %r = kiln.cast %x to i32 : (tensor<?xf32, #kiln.dims<[n]>>) -> tensor<?xi32, #kiln.dims<[n]>>
    ```
  }];
  let arguments = (ins Kiln_Tensor:$input, TypeAttrOf<Kiln_Element>:$to,
                       DefaultValuedAttr<BoolAttr, "true">:$saturate);
  let results = (outs Kiln_Tensor:$result);
  let assemblyFormat = "$input `to` $to attr-dict `:` functional-type(operands, results)";
  let hasFolder = 1;
}

def Kiln_BitcastOp : Kiln_Op<"bitcast", [
    Kiln_ElementwiseTrait, DeclareOpInterfaceMethods<Kiln_KernelFacts, ["runsNarrow"]>]> {
  let summary = "reinterprets each element's bits as another type of the same width";
  let description = [{
    ONNX BitCast between element types of equal bit width (a bool counts as its
    one-byte storage); the shape is kept.

    ```mlir
    %r = kiln.bitcast %x to i32 : (tensor<4xf32>) -> tensor<4xi32>
    ```
  }];
  let arguments = (ins Kiln_Tensor:$input, TypeAttrOf<Kiln_Element>:$to);
  let results = (outs Kiln_Tensor:$result);
  let assemblyFormat = "$input `to` $to attr-dict `:` functional-type(operands, results)";
}

#endif // KILN_ELEMENTWISE_OPS_TD
