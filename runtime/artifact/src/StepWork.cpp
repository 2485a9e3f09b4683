//===- StepWork.cpp - what a plan step must move and compute --------------===//

#include "kiln/artifact/StepWork.h"
#include "kiln/artifact/MemoryPlan.h"

#include "kiln/reference/Tensor.h"

#include <algorithm>

namespace kiln::artifact {
namespace {

double elements(const ref::Shape &s) { return static_cast<double>(ref::numElements(s)); }

/// A library step's operations and the unit they run on.
void libraryFlops(const Plan &plan, const StepInfo &step, const Bindings &symbols, StepWork &w) {
  if (step.inputs.size() < 2 || step.outputs.empty())
    return;
  std::optional<ref::Shape> a = evaluateShape(plan.values[step.inputs[0]], symbols),
                            b = evaluateShape(plan.values[step.inputs[1]], symbols),
                            out = evaluateShape(plan.values[step.outputs[0]], symbols);
  if (!a || !b || !out || a->empty() || b->empty())
    return;
  ref::DType type = plan.values[step.inputs[0]].dtype;
  bool half = type == ref::DType::f16 || type == ref::DType::bf16;
  // The unit of a product of this operand type, allowed TF32 or not.
  auto unit = [&](bool allowTf32) {
    // H100/H200 run e4m3 products at int8's rate.
    if (type == ref::DType::i8 || type == ref::DType::f8e4m3fn)
      return FlopUnit::Int8;
    return half ? FlopUnit::Half : allowTf32 ? FlopUnit::Tf32 : FlopUnit::Fp32;
  };
  if (step.op == schema::StepOp::MatMul) {
    const schema::MatMul *t = step.table->op_as_MatMul();
    // C = A B: K is A's last dim (its second last when A is read transposed);
    // a vector A has K elements.
    int64_t k = a->size() == 1 ? (*a)[0]
                : t && t->transpose_a() ? (*a)[a->size() - 2]
                                        : a->back();
    w.flops = 2.0 * elements(*out) * static_cast<double>(k);
    w.unit = unit(t && t->allow_tf32());
  } else if (step.op == schema::StepOp::Conv || step.op == schema::StepOp::ConvTranspose) {
    // Each output element of a conv (each input element of a transposed one)
    // meets the filter elements of one of its first dim's entries (a conv's
    // output channels, a transposed conv's input channels).
    bool conv = step.op == schema::StepOp::Conv;
    double firstDim = static_cast<double>((*b)[0]);
    if (firstDim <= 0)
      return;
    bool allowTf32 = conv ? step.table->op_as_Conv() && step.table->op_as_Conv()->allow_tf32()
                          : step.table->op_as_ConvTranspose() &&
                                step.table->op_as_ConvTranspose()->allow_tf32();
    w.flops = 2.0 * elements(conv ? *out : *a) * (elements(*b) / firstDim);
    w.unit = unit(allowTf32);
  }
}

} // namespace

bool isLibraryStep(schema::StepOp op) {
  return op == schema::StepOp::MatMul || op == schema::StepOp::Conv ||
         op == schema::StepOp::ConvTranspose || op == schema::StepOp::Pool;
}

StepWork stepWork(const Plan &plan, const StepInfo &step, const Bindings &symbols) {
  StepWork w;
  if (step.kind == StepKind::SymbolicConstant || step.kind == StepKind::ShapeOf ||
      isViewStep(step)) {
    // Computed on the host from sizes, or (a view) the input's bytes renamed.
    w.bytes = w.elements = 0;
    return w;
  }
  const KernelInfo *kernel = step.kind == StepKind::Kernel ? &plan.kernels[step.kernel] : nullptr;
  int64_t bytes = 0, largest = 0;
  bool known = true;
  for (const std::vector<int> *values : {&step.inputs, &step.outputs})
    for (size_t i = 0; i < values->size(); ++i) {
      int v = (*values)[i];
      std::optional<ref::Shape> shape = evaluateShape(plan.values[v], symbols);
      if (!shape) {
        known = false;
        continue;
      }
      int64_t n = ref::numElements(*shape);
      // A kernel writing in place writes its work items (the new rows), not
      // the whole buffer (and reads none of it: its bounded read, below).
      if (kernel && step.inPlaceInput >= 0 && values == &step.outputs)
        if (std::optional<int64_t> items = kernel->workItems.evaluate(symbols))
          n = std::min(n, *items);
      // An input the kernel reads only in part (gathered rows, a slice):
      // what it reads, when that is less. (Also for `elements`: a gather's
      // loops run over its rows, not the table's.)
      if (kernel && values == &step.inputs)
        for (const auto &[input, elements] : kernel->boundedReads)
          if (static_cast<size_t>(input) == i)
            if (std::optional<int64_t> reads = elements.evaluate(symbols))
              n = std::min(n, *reads);
      largest = std::max(largest, n);
      bytes += n * ref::info(plan.values[v].dtype).bytes;
    }
  if (known) {
    w.bytes = bytes;
    w.elements = largest;
  }
  if (kernel) {
    const KernelInfo &k = *kernel;
    bool tensorCoreLaunch = false;
    if (k.flops.known())
      if (std::optional<int64_t> f = k.flops.evaluate(symbols)) {
        w.flops = static_cast<double>(*f);
        w.unit = k.flopUnit;
        if (k.tensorCoreMinRows > 0 && k.tensorCoreRows.known())
          if (std::optional<int64_t> rows = k.tensorCoreRows.evaluate(symbols);
              rows && *rows >= k.tensorCoreMinRows) {
            w.unit = FlopUnit::Half;
            tensorCoreLaunch = true;
          }
      }
    const Dim &l2Bytes =
        tensorCoreLaunch && k.tensorCoreL2Bytes.known() ? k.tensorCoreL2Bytes : k.l2Bytes;
    if (l2Bytes.known())
      if (std::optional<int64_t> l2 = l2Bytes.evaluate(symbols))
        w.l2Bytes = *l2;
  } else if (step.kind == StepKind::Host && isLibraryStep(step.op)) {
    libraryFlops(plan, step, symbols, w);
  }
  return w;
}

} // namespace kiln::artifact
