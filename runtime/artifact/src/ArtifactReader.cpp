//===- ArtifactReader.cpp - read and check an artifact --------------------===//

#include "kiln/artifact/Plan.h"
#include "kiln/artifact/EntryName.h"
#include "kiln/schema/kiln_variants_generated.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

#define XXH_INLINE_ALL
#include <xxhash.h>

#include <cctype>
#include <cstring>
#include <limits>

namespace kiln::artifact {
namespace fb = kiln::schema;

static_assert(static_cast<int>(fb::DType::u2) == static_cast<int>(ref::DType::u2),
              "the schema's DType must list kiln::ref::DType in order");

namespace {

absl::Status corrupt(const std::string &what) {
  return absl::InvalidArgumentError(absl::StrCat("corrupt artifact: ", what));
}

/// Dims that are the same expressions (a symbolic dim equals only itself).
bool sameDims(const std::vector<Dim> &a, const std::vector<Dim> &b) {
  if (a.size() != b.size())
    return false;
  for (size_t d = 0; d < a.size(); ++d)
    if (!a[d].known() || a[d].ops != b[d].ops)
      return false;
  return true;
}

std::string dimsToString(const std::vector<Dim> &dims, const std::vector<std::string> &symbols) {
  std::vector<std::string> parts;
  for (const Dim &d : dims)
    parts.push_back(d.toString(symbols));
  return absl::StrJoin(parts, ", ");
}

int64_t floorDiv(int64_t a, int64_t b) {
  int64_t q = a / b;
  return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}

std::vector<CubinInfo> readCubins(const flatbuffers::Vector<flatbuffers::Offset<fb::Cubin>> *list);

/// A HostLibrary table's kernel names, bytes (in place) and variant.
HostLibraryInfo readHostLibrary(const fb::HostLibrary *h) {
  HostLibraryInfo info;
  if (h->kernels())
    for (const flatbuffers::String *name : *h->kernels())
      info.kernels.push_back(name->str());
  if (h->data()) {
    info.data = h->data()->data();
    info.size = h->data()->size();
  }
  info.variant = h->variant();
  return info;
}
/// A Variant table checked against `plan` (symbols bound by its guards, kernels).
absl::StatusOr<VariantInfo> readVariant(const fb::Variant *v, const Plan &plan, size_t index);

class Reader {
public:
  /// `weights` is where Weight offsets point: weights_data, or the weights file.
  Reader(const fb::Model &model, const uint8_t *weights, size_t weightsSize)
      : model(model), blobData(weights), blobSize(weightsSize) {}

  absl::StatusOr<Plan> read();

private:
  const fb::Model &model;
  const uint8_t *blobData;
  size_t blobSize;
  Plan plan;

  absl::StatusOr<Dim> dim(const fb::Dim *d, const std::string &where) {
    Dim out;
    if (!d || !d->ops() || d->ops()->size() == 0)
      return out;
    // The verifier checks the vector's length field, not the alignment of its
    // 8-byte structs; a builder always aligns them.
    if (reinterpret_cast<uintptr_t>(d->ops()->Data()) % alignof(fb::ExprOp) != 0)
      return corrupt(absl::StrCat(where, ": misaligned dim expression"));
    int depth = 0;
    for (const fb::ExprOp *op : *d->ops()) {
      auto kind = static_cast<Dim::Op>(op->kind());
      if (op->kind() > fb::ExprKind::MAX)
        return corrupt(absl::StrCat(where, ": unknown expression op"));
      if (kind == Dim::Op::Symbol &&
          (op->value() < 0 || op->value() >= static_cast<int64_t>(plan.symbols.size())))
        return corrupt(absl::StrCat(where, ": symbol ", op->value(), " is not in the table"));
      depth += (kind == Dim::Op::Constant || kind == Dim::Op::Symbol) ? 1 : -1;
      if (depth < 1)
        return corrupt(absl::StrCat(where, ": malformed dim expression"));
      out.ops.push_back({kind, op->value()});
    }
    if (depth != 1)
      return corrupt(absl::StrCat(where, ": malformed dim expression"));
    return out;
  }

  absl::StatusOr<std::vector<Dim>> dims(const flatbuffers::Vector<flatbuffers::Offset<fb::Dim>> *v,
                                        const std::string &where) {
    std::vector<Dim> out;
    if (!v)
      return out;
    for (const fb::Dim *d : *v) {
      absl::StatusOr<Dim> one = dim(d, where);
      if (!one.ok())
        return one.status();
      out.push_back(std::move(*one));
    }
    return out;
  }

  absl::StatusOr<std::vector<int>> valueList(const flatbuffers::Vector<int32_t> *v,
                                             const std::string &where) {
    std::vector<int> out;
    if (!v)
      return out;
    for (int32_t i : *v) {
      if (i < 0 || i >= static_cast<int>(plan.values.size()))
        return corrupt(absl::StrCat(where, " names value ", i, " of ", plan.values.size()));
      out.push_back(i);
    }
    return out;
  }

  absl::Status readValues();
  absl::Status readKernels();
  absl::Status readSteps();
  /// Reads `list` into `steps` (nested `depth` bodies deep), checking every
  /// value it reads is in scope and every value it defines is new.
  absl::Status readStepList(const flatbuffers::Vector<flatbuffers::Offset<fb::Step>> *list,
                            std::vector<StepInfo> &steps, const std::string &prefix, int depth);
  absl::Status readControl(const fb::Step *s, StepInfo &step, const std::string &where, int depth);
  absl::Status readBody(const fb::Body *table, BodyInfo &body, size_t parameters, size_t results,
                        const std::string &where, int depth);
  absl::Status defineValue(int v, const std::string &where);
  /// How many loop or scan bodies the steps being read are in. Sizes may be
  /// bound at the top level and in an if's branches (each runs at most once
  /// per call), not in a body that runs once per iteration.
  int loopDepth_ = 0;
  absl::Status readValuesUsed(const std::vector<int> &values, const std::string &where);

  /// Per value: whether a step may read it (Visible), or not yet / any more.
  enum class Scope : uint8_t { Undefined, Visible, Ended };
  std::vector<Scope> defined;
  /// Values defined inside the bodies being read, innermost last.
  std::vector<int> scoped;
  absl::Status readGuards();
  absl::Status readPredicates();
  /// One schema Predicate, its kind and dims checked; `bound` (when given)
  /// says which symbols have values where it is checked.
  absl::StatusOr<PredicateInfo> predicate(const fb::Predicate *p, const std::string &where,
                                          const std::vector<bool> *bound);
  absl::Status readVariants();
};

absl::Status Reader::readValues() {
  const auto *weights = model.weights();
  if (!model.values())
    return corrupt("no value table");
  for (const fb::Value *v : *model.values()) {
    ValueInfo info;
    std::string where = absl::StrCat("value ", plan.values.size());
    info.name = v->name() ? v->name()->str() : "";
    if (v->dtype() > fb::DType::MAX || v->kind() > fb::ValueKind::MAX)
      return corrupt(absl::StrCat(where, ": unknown dtype or kind"));
    info.dtype = static_cast<ref::DType>(v->dtype());
    info.kind = static_cast<ValueKind>(v->kind());
    absl::StatusOr<std::vector<Dim>> shape = dims(v->shape(), where);
    if (!shape.ok())
      return shape.status();
    info.shape = std::move(*shape);
    if (info.kind == ValueKind::Weight) {
      int w = v->weight();
      if (!weights || !blobData || w < 0 || w >= static_cast<int>(weights->size()))
        return corrupt(absl::StrCat(where, ": weight ", w, " is not in the table"));
      const fb::Weight *weight = weights->Get(w);
      if (weight->offset() > blobSize || weight->size() > blobSize - weight->offset())
        return corrupt(absl::StrCat(where, ": weight bytes lie outside the artifact"));
      std::optional<ref::Shape> s = evaluateShape(info, {});
      if (!s || static_cast<uint64_t>(ref::numElements(*s)) * ref::info(info.dtype).bytes !=
                    weight->size())
        return corrupt(absl::StrCat(where, ": weight size does not match its type"));
      info.weightData = blobData + weight->offset();
      info.weightSize = weight->size();
    }
    plan.values.push_back(std::move(info));
  }
  return absl::OkStatus();
}

std::vector<CubinInfo> readCubins(const flatbuffers::Vector<flatbuffers::Offset<fb::Cubin>> *list) {
  std::vector<CubinInfo> out;
  if (list)
    for (const fb::Cubin *c : *list) {
      CubinInfo cubin;
      cubin.sm = c->sm();
      if (c->cubin()) {
        cubin.data = c->cubin()->data();
        cubin.size = c->cubin()->size();
      }
      cubin.ptx = c->ptx() ? c->ptx()->str() : "";
      out.push_back(std::move(cubin));
    }
  return out;
}

absl::Status Reader::readVariants() {
  if (model.variants())
    for (const fb::Variant *v : *model.variants()) {
      absl::StatusOr<VariantInfo> info = readVariant(v, plan, plan.variants.size());
      if (!info.ok())
        return info.status();
      plan.variants.push_back(std::move(*info));
    }
  for (const HostLibraryInfo &lib : plan.hostLibraries)
    if (lib.variant < -1 || lib.variant >= static_cast<int>(plan.variants.size()))
      return corrupt(absl::StrCat("a host library belongs to variant ", lib.variant,
                                  ", which the artifact does not have"));
  return absl::OkStatus();
}

absl::StatusOr<VariantInfo> readVariant(const fb::Variant *v, const Plan &plan, size_t index) {
  auto corrupt = [](const std::string &what) {
    return absl::InvalidArgumentError(absl::StrCat("corrupt artifact: ", what));
  };
  std::vector<bool> bound(plan.symbols.size(), false);
  for (const GuardInfo &g : plan.guards)
    if (g.binds)
      bound[*g.expected.soleSymbol()] = true;
  VariantInfo info;
  std::string where = absl::StrCat("variant ", index);
  info.name = v->name() ? v->name()->str() : where;
  if (v->symbols())
    info.symbols.assign(v->symbols()->begin(), v->symbols()->end());
  if (v->values())
    info.values.assign(v->values()->begin(), v->values()->end());
  if (info.symbols.empty() || info.symbols.size() != info.values.size() ||
      info.symbols.size() > static_cast<size_t>(kMaxVariantSymbols))
    return corrupt(absl::StrCat(where, ": needs 1 to ", kMaxVariantSymbols,
                                " symbols, each with one value"));
  for (size_t i = 0; i < info.symbols.size(); ++i) {
    int s = info.symbols[i];
    if (s < 0 || s >= static_cast<int>(plan.symbols.size()) || !bound[s] ||
        (i && s <= info.symbols[i - 1]) || info.values[i] < 0)
      return corrupt(absl::StrCat(where, ": symbol ", s,
                                  " is not an ascending, input-bound symbol with a value >= 0"));
  }
  std::vector<bool> seen(plan.kernels.size(), false);
  if (v->kernels())
    for (const fb::VariantKernel *k : *v->kernels()) {
      int kernel = k->kernel();
      if (kernel < 0 || kernel >= static_cast<int>(plan.kernels.size()) || seen[kernel])
        return corrupt(absl::StrCat(where, ": kernel ", kernel,
                                    " is not a kernel or is specialized twice"));
      seen[kernel] = true;
      info.kernels.emplace_back(kernel, readCubins(k->cubins()));
    }
  return info;
}

absl::Status Reader::readKernels() {
  if (model.kernels())
    for (const fb::Kernel *k : *model.kernels()) {
      KernelInfo info;
      std::string where = absl::StrCat("kernel ", plan.kernels.size());
      if (!k->name() || !k->source())
        return corrupt(absl::StrCat(where, " has no name or source"));
      info.name = k->name()->str();
      info.source = k->source()->str();
      if (k->schedule() > fb::Schedule::MAX)
        return corrupt(absl::StrCat(where, ": unknown schedule"));
      info.schedule = k->schedule();
      info.blockPerItem = k->block_per_item();
      if (k->symbols())
        for (int32_t s : *k->symbols()) {
          if (s < 0 || s >= static_cast<int>(plan.symbols.size()))
            return corrupt(absl::StrCat(where, ": symbol ", s, " is not in the table"));
          info.symbols.push_back(s);
        }
      // The symbols a kernel takes are parameters of its code (", int64_t
      // sym_<name>", in this order): a list that names others would pass the
      // kernel sizes it does not index by.
      // A symbol read from device memory (Kernel.device_symbols) is a
      // pointer parameter instead (", const int64_t *KILN_RESTRICT
      // kiln_device_sym_<name>"), spelled "*<name>" in these lists.
      if (k->device_symbols())
        for (int32_t s : *k->device_symbols()) {
          if (std::find(info.symbols.begin(), info.symbols.end(), s) == info.symbols.end())
            return corrupt(absl::StrCat(where, ": device symbol ", s, " is not one of its symbols"));
          info.deviceSymbols.push_back(s);
        }
      {
        std::vector<std::pair<size_t, std::string>> found;
        for (const std::string marker :
             {", int64_t sym_", ", const int64_t *KILN_RESTRICT kiln_device_sym_"})
          for (size_t at = info.source.find(marker); at != std::string::npos;
               at = info.source.find(marker, at + 1)) {
            size_t begin = at + marker.size(), end = begin;
            while (end < info.source.size() &&
                   (std::isalnum(static_cast<unsigned char>(info.source[end])) ||
                    info.source[end] == '_'))
              ++end;
            bool pointer = marker[2] == 'c';
            found.emplace_back(at, (pointer ? "*" : "") + info.source.substr(begin, end - begin));
          }
        std::sort(found.begin(), found.end());
        std::vector<std::string> declared;
        for (auto &[at, name] : found)
          declared.push_back(name);
        std::vector<std::string> listed;
        for (int s : info.symbols)
          listed.push_back((info.readsOnDevice(s) ? "*" : "") + plan.symbols[s]);
        if (declared != listed)
          return corrupt(absl::StrCat(where, " lists symbols [", absl::StrJoin(listed, ", "),
                                      "] but its code takes [", absl::StrJoin(declared, ", "),
                                      "]"));
        // Likewise the error word: a launch passes it exactly when the code takes it.
        info.reportsErrors = k->reports_errors();
        if (info.reportsErrors != (info.source.find(", int32_t *kiln_error)") != std::string::npos))
          return corrupt(absl::StrCat(where, info.reportsErrors ? " reports errors but its code "
                                                                  "takes no error word"
                                                                : " takes an error word its "
                                                                  "step would not pass"));
      }
      if (!k->buffer_dtypes() || k->buffer_dtypes()->size() == 0)
        return corrupt(absl::StrCat(where, " has no signature (buffer dtypes)"));
      for (fb::DType t : *k->buffer_dtypes()) {
        if (t > fb::DType::MAX)
          return corrupt(absl::StrCat(where, ": unknown dtype in its signature"));
        info.bufferDtypes.push_back(static_cast<ref::DType>(t));
      }
      if (k->flops()) {
        absl::StatusOr<Dim> flops = dim(k->flops(), where);
        if (!flops.ok())
          return flops.status();
        info.flops = std::move(*flops);
      }
      // Only the roofline reads it: a unit this reader does not know (a newer
      // writer's) is charged as fp32, as a reader before the field charges all.
      info.flopUnit = k->flop_unit() <= fb::FlopUnit::MAX ? k->flop_unit() : fb::FlopUnit::Fp32;
      if (k->tensor_core_rows() && k->tensor_core_min_rows() > 0) {
        absl::StatusOr<Dim> rows = dim(k->tensor_core_rows(), where);
        if (!rows.ok())
          return rows.status();
        info.tensorCoreRows = std::move(*rows);
        info.tensorCoreMinRows = k->tensor_core_min_rows();
        if (k->tensor_core_l2_bytes()) {
          absl::StatusOr<Dim> bytes = dim(k->tensor_core_l2_bytes(), where);
          if (!bytes.ok())
            return bytes.status();
          info.tensorCoreL2Bytes = std::move(*bytes);
        }
      }
      if (k->work_items()) {
        absl::StatusOr<Dim> items = dim(k->work_items(), where);
        if (!items.ok())
          return items.status();
        info.workItems = std::move(*items);
      }
      if (k->index32_sizes())
        for (const fb::Dim *d : *k->index32_sizes()) {
          absl::StatusOr<Dim> size = dim(d, where);
          if (!size.ok())
            return size.status();
          info.index32Sizes.push_back(std::move(*size));
        }
      if (k->bounded_reads())
        for (const fb::BoundedRead *r : *k->bounded_reads()) {
          if (!r->elements() || r->input() < 0 ||
              static_cast<size_t>(r->input()) + 1 >= info.bufferDtypes.size())
            return corrupt(absl::StrCat(where, " bounds the reads of an input it lacks"));
          absl::StatusOr<Dim> elements = dim(r->elements(), where);
          if (!elements.ok())
            return elements.status();
          info.boundedReads.emplace_back(r->input(), std::move(*elements));
        }
      if (k->l2_bytes()) {
        absl::StatusOr<Dim> bytes = dim(k->l2_bytes(), where);
        if (!bytes.ok())
          return bytes.status();
        info.l2Bytes = std::move(*bytes);
      }
      if (k->scratch_bytes()) {
        absl::StatusOr<Dim> bytes = dim(k->scratch_bytes(), where);
        if (!bytes.ok())
          return bytes.status();
        info.scratchBytes = std::move(*bytes);
      }
      // A launch passes the scratch exactly when the code takes it.
      if (info.scratchBytes.known() !=
          (info.source.find(", uint8_t *KILN_RESTRICT kiln_scratch") != std::string::npos))
        return corrupt(absl::StrCat(where, info.scratchBytes.known()
                                               ? " uses a scratch its code does not take"
                                               : " takes a scratch its step would not pass"));
      if (!k->buffer_shapes() || k->buffer_shapes()->size() != info.bufferDtypes.size())
        return corrupt(absl::StrCat(where, " has no dims for each of its buffers"));
      for (const fb::BufferShape *b : *k->buffer_shapes()) {
        std::vector<Dim> dims;
        if (b->dims())
          for (const fb::Dim *d : *b->dims()) {
            absl::StatusOr<Dim> one = dim(d, where);
            if (!one.ok())
              return one.status();
            dims.push_back(std::move(*one));
          }
        info.bufferShapes.push_back(std::move(dims));
      }
      info.cubins = readCubins(k->cubins());
      plan.kernels.push_back(std::move(info));
    }
  if (model.host_libraries())
    for (const fb::HostLibrary *h : *model.host_libraries())
      plan.hostLibraries.push_back(readHostLibrary(h));
  return absl::OkStatus();
}

absl::Status Reader::readSteps() {
  // Every value is defined once, before its first use; a value a body defines
  // goes out of scope when its control step ends.
  // Inputs are defined only when the input list names them (a caller passes
  // their bytes), weights only when they have bytes.
  defined.assign(plan.values.size(), Scope::Undefined);
  for (size_t v = 0; v < plan.values.size(); ++v)
    if (plan.values[v].kind == ValueKind::Weight && plan.values[v].weightData)
      defined[v] = Scope::Visible;
  for (int v : plan.inputs)
    defined[v] = Scope::Visible;
  if (model.steps())
    if (absl::Status st = readStepList(model.steps(), plan.steps, "step ", 0); !st.ok())
      return st;
  for (int v : plan.outputs)
    if (defined[v] != Scope::Visible)
      return corrupt(absl::StrCat("output value ", v, " is never defined"));
  // Numbers: the top level first, then the bodies depth first.
  size_t next = 0;
  for (StepInfo &step : plan.steps)
    step.index = static_cast<int>(next++);
  std::function<void(std::vector<StepInfo> &)> number = [&](std::vector<StepInfo> &steps) {
    for (StepInfo &step : steps)
      for (BodyInfo &body : step.bodies) {
        for (StepInfo &inner : body.steps)
          inner.index = static_cast<int>(next++);
        number(body.steps);
      }
  };
  number(plan.steps);
  plan.stepCount = next;
  return absl::OkStatus();
}

absl::Status Reader::defineValue(int v, const std::string &where) {
  if (defined[v] != Scope::Undefined)
    return corrupt(absl::StrCat(where, " defines value ", v, " a second time"));
  defined[v] = Scope::Visible;
  return absl::OkStatus();
}

absl::Status Reader::readValuesUsed(const std::vector<int> &values, const std::string &where) {
  for (int v : values)
    if (defined[v] != Scope::Visible)
      return corrupt(absl::StrCat(where, " reads value ", v,
                                  defined[v] == Scope::Undefined
                                      ? " before it is defined"
                                      : ", which a body defined and its step has ended"));
  return absl::OkStatus();
}

absl::Status Reader::readBody(const fb::Body *table, BodyInfo &body, size_t parameters,
                              size_t results, const std::string &where, int depth) {
  if (!table)
    return corrupt(absl::StrCat(where, " has no body"));
  absl::StatusOr<std::vector<int>> params = valueList(table->parameters(), where);
  absl::StatusOr<std::vector<int>> res = valueList(table->results(), where);
  if (!params.ok())
    return params.status();
  if (!res.ok())
    return res.status();
  body.parameters = std::move(*params);
  body.results = std::move(*res);
  if (body.parameters.size() != parameters || body.results.size() != results)
    return corrupt(absl::StrCat(where, " has ", body.parameters.size(), " parameters and ",
                                body.results.size(), " results; its step needs ", parameters,
                                " and ", results));
  std::vector<int> definedHere;
  for (int v : body.parameters) {
    if (plan.values[v].kind != ValueKind::Intermediate)
      return corrupt(absl::StrCat(where, ": parameter value ", v, " is not an intermediate"));
    if (absl::Status st = defineValue(v, where); !st.ok())
      return st;
    definedHere.push_back(v);
  }
  size_t before = scoped.size();
  if (table->steps())
    if (absl::Status st = readStepList(table->steps(), body.steps, where + " step ", depth + 1);
        !st.ok())
      return st;
  if (absl::Status st = readValuesUsed(body.results, where + " (its results)"); !st.ok())
    return st;
  // What the body defined goes out of scope with it.
  for (int v : definedHere)
    defined[v] = Scope::Ended;
  for (size_t i = before; i < scoped.size(); ++i)
    defined[scoped[i]] = Scope::Ended;
  scoped.resize(before);
  return absl::OkStatus();
}

absl::Status Reader::readControl(const fb::Step *s, StepInfo &step, const std::string &where,
                                 int depth) {
  step.kind = StepKind::Control;
  size_t in = step.inputs.size(), out = step.outputs.size();
  auto tooFew = [&](size_t need) -> absl::Status {
    if (in < need)
      return corrupt(absl::StrCat(where, ": ", step.label, " takes at least ", need, " inputs"));
    return absl::OkStatus();
  };
  switch (step.op) {
  case fb::StepOp::If: {
    if (in != 1)
      return corrupt(absl::StrCat(where, ": If takes one input, its condition"));
    const fb::If *table = s->op_as_If();
    step.bodies.resize(2);
    for (int b = 0; b < 2; ++b)
      if (absl::Status st = readBody(b == 0 ? table->then_branch() : table->else_branch(),
                                     step.bodies[b], 0, out,
                                     absl::StrCat(where, b == 0 ? " then" : " else"), depth);
          !st.ok())
        return st;
    return absl::OkStatus();
  }
  case fb::StepOp::Loop: {
    if (absl::Status st = tooFew(2); !st.ok())
      return st;
    size_t carried = in - 2;
    if (out < carried)
      return corrupt(absl::StrCat(where, ": Loop has fewer outputs than carried values"));
    step.bodies.resize(1);
    ++loopDepth_;
    absl::Status st = readBody(s->op_as_Loop()->body(), step.bodies[0], 2 + carried, 1 + out,
                               where + " body", depth);
    --loopDepth_;
    return st;
  }
  case fb::StepOp::Scan: {
    const fb::Scan *table = s->op_as_Scan();
    int64_t scanned = table->num_scan_inputs();
    auto copied = [](const auto *v, auto &out) {
      using T = typename std::decay_t<decltype(out)>::value_type;
      out.resize(v ? v->size() : 0);
      if (!out.empty())
        std::memcpy(out.data(), v->Data(), out.size() * sizeof(T));
    };
    step.scan.numScanInputs = scanned;
    copied(table->input_axes(), step.scan.inputAxes);
    copied(table->output_axes(), step.scan.outputAxes);
    copied(table->input_reverse(), step.scan.inputReverse);
    copied(table->output_reverse(), step.scan.outputReverse);
    if (scanned < 1 || static_cast<size_t>(scanned) > in)
      return corrupt(absl::StrCat(where, ": Scan has ", in, " inputs and ", scanned,
                                  " scanned ones"));
    size_t states = in - static_cast<size_t>(scanned);
    if (out < states)
      return corrupt(absl::StrCat(where, ": Scan has fewer outputs than states"));
    step.bodies.resize(1);
    ++loopDepth_;
    absl::Status st = readBody(table->body(), step.bodies[0], in, out, where + " body", depth);
    --loopDepth_;
    return st;
  }
  default:
    return corrupt(absl::StrCat(where, ": not a control step"));
  }
}

absl::Status Reader::readStepList(const flatbuffers::Vector<flatbuffers::Offset<fb::Step>> *list,
                                  std::vector<StepInfo> &steps, const std::string &prefix,
                                  int depth) {
  // FlatBuffers' verifier bounds nesting too; this keeps the recursion here
  // well inside any stack.
  constexpr int kMaxBodyDepth = 16;
  if (depth > kMaxBodyDepth)
    return corrupt(absl::StrCat("control flow nests deeper than ", kMaxBodyDepth, " levels"));
  for (const fb::Step *s : *list) {
    StepInfo step;
    std::string where = absl::StrCat(prefix, steps.size());
    step.op = s->op_type();
    step.table = s;
    if (step.op == fb::StepOp::NONE || step.op > fb::StepOp::MAX || !s->op())
      return absl::UnimplementedError(absl::StrCat(
          where, ": a step kind this runtime does not know (type ",
          static_cast<int>(step.op), "); the artifact needs a newer runtime"));
    absl::StatusOr<std::vector<int>> inputs = valueList(s->inputs(), where);
    absl::StatusOr<std::vector<int>> outputs = valueList(s->outputs(), where);
    if (!inputs.ok())
      return inputs.status();
    if (!outputs.ok())
      return outputs.status();
    step.inputs = std::move(*inputs);
    step.outputs = std::move(*outputs);
    if (absl::Status st = readValuesUsed(step.inputs, where); !st.ok())
      return st;
    // A size read and a check have no outputs (one binds symbols, the
    // other reads them); every other step has.
    bool outputless = step.op == fb::StepOp::ReadSizes || step.op == fb::StepOp::Check;
    if (step.outputs.empty() != outputless)
      return corrupt(absl::StrCat(where, step.outputs.empty() ? " has no outputs"
                                         : step.op == fb::StepOp::Check
                                             ? ": a check has no outputs"
                                             : ": a size read has no outputs"));
    if (s->binds()) {
      if (loopDepth_ > 0)
        return corrupt(absl::StrCat(where, " binds symbols inside a loop's body"));
      for (const fb::DimBinding *b : *s->binds()) {
        if (b->output() < 0 || b->output() >= static_cast<int>(step.outputs.size()) ||
            b->symbol() < 0 || b->symbol() >= static_cast<int>(plan.symbols.size()))
          return corrupt(absl::StrCat(where, " binds a symbol to an output it does not have"));
        const ValueInfo &value = plan.values[step.outputs[b->output()]];
        // The value's dim must be exactly that symbol: what later steps
        // evaluate it to is what the step computed.
        if (b->dim() < 0 || b->dim() >= static_cast<int>(value.shape.size()) ||
            value.shape[b->dim()].soleSymbol() != std::optional<int64_t>(b->symbol()))
          return corrupt(absl::StrCat(where, " binds symbol ", b->symbol(), " to dim ", b->dim(),
                                      " of a value whose dim is not that symbol"));
        step.binds.push_back({b->output(), b->dim(), b->symbol()});
      }
    }
    step.label = fb::EnumNameStepOp(step.op);
    switch (step.op) {
    case fb::StepOp::KernelLaunch:
    case fb::StepOp::KernelInPlace:
      step.kind = StepKind::Kernel;
      if (step.op == fb::StepOp::KernelInPlace) {
        step.kernel = s->op_as_KernelInPlace()->kernel();
        step.inPlaceInput = s->op_as_KernelInPlace()->input();
      } else {
        step.kernel = s->op_as_KernelLaunch()->kernel();
      }
      if (step.kernel < 0 || step.kernel >= static_cast<int>(plan.kernels.size()))
        return corrupt(absl::StrCat(where, ": kernel ", step.kernel, " is not in the table"));
      if (step.outputs.size() != 1)
        return corrupt(absl::StrCat(where, ": a kernel writes one output"));
      step.label = plan.kernels[step.kernel].name;
      {
        // The step's buffers must be the kernel's: count and element types.
        const std::vector<ref::DType> &want = plan.kernels[step.kernel].bufferDtypes;
        if (want.size() != step.inputs.size() + 1)
          return corrupt(absl::StrCat(where, ": kernel ", step.label, " takes ", want.size() - 1,
                                      " inputs, the step passes ", step.inputs.size()));
        const std::vector<std::vector<Dim>> &dims = plan.kernels[step.kernel].bufferShapes;
        for (size_t b = 0; b < want.size(); ++b) {
          int v = b == 0 ? step.outputs[0] : step.inputs[b - 1];
          if (plan.values[v].dtype != want[b])
            return corrupt(absl::StrCat(where, ": kernel ", step.label, " buffer ", b, " is ",
                                        dtypeName(want[b]), ", value ", v, " is ",
                                        dtypeName(plan.values[v].dtype)));
          // The kernel indexes its buffers by the dims compiled into it: a value
          // with other dims would be read or written past its bytes.
          if (!sameDims(plan.values[v].shape, dims[b]))
            return corrupt(absl::StrCat(
                where, ": kernel ", step.label, " buffer ", b, " has dims [",
                dimsToString(dims[b], plan.symbols), "], value ", v, " has [",
                dimsToString(plan.values[v].shape, plan.symbols), "]"));
        }
        // A kernel that writes into its input's bytes does so only into a
        // model input at the top level (the caller's cache, which the
        // compiler checked nothing else reads), of the result's dtype and dims.
        if (step.op == fb::StepOp::KernelInPlace) {
          int in = step.inPlaceInput;
          if (in < 0 || static_cast<size_t>(in) >= step.inputs.size() || depth > 0 ||
              plan.values[step.inputs[in]].kind != ValueKind::Input ||
              want[in + 1] != want[0] || !sameDims(dims[in + 1], dims[0]))
            return corrupt(absl::StrCat(where, ": kernel ", step.label, " writes in place into ",
                                        "input ", in, ", which is not a model input of its "
                                        "result's type at the top level"));
        }
      }
      break;
    case fb::StepOp::SymbolicConstant: {
      step.kind = StepKind::SymbolicConstant;
      absl::StatusOr<std::vector<Dim>> d = dims(s->op_as_SymbolicConstant()->dims(), where);
      if (!d.ok())
        return d.status();
      step.dims = std::move(*d);
      if (!step.inputs.empty() || step.outputs.size() != 1)
        return corrupt(absl::StrCat(where, ": symbolic_constant takes no input, one output"));
      break;
    }
    case fb::StepOp::ShapeOf:
      step.kind = StepKind::ShapeOf;
      if (step.inputs.size() != 1 || step.outputs.size() != 1)
        return corrupt(absl::StrCat(where, ": shape_of takes one input, one output"));
      break;
    case fb::StepOp::ReadSizes: {
      step.kind = StepKind::ReadSizes;
      // Bindings made in a loop's body would change once per iteration under
      // the steps outside it; the compiler reads sizes at the top level and
      // in an if's branches only.
      if (loopDepth_ > 0)
        return corrupt(absl::StrCat(where, " reads sizes inside a loop's body"));
      const fb::ReadSizes *read = s->op_as_ReadSizes();
      if (step.inputs.size() != 1 || !read->symbols())
        return corrupt(absl::StrCat(where, ": read_sizes takes one input and names its symbols"));
      const ValueInfo &sizes = plan.values[step.inputs[0]];
      std::optional<ref::Shape> shape = evaluateShape(sizes, {});
      if (sizes.dtype != ref::DType::i64 || !shape || shape->size() > 1 ||
          ref::numElements(*shape) != static_cast<int64_t>(read->symbols()->size()))
        return corrupt(absl::StrCat(where, ": read_sizes needs an i64 tensor of ",
                                    read->symbols()->size(), " elements, one per symbol"));
      for (int symbol : *read->symbols()) {
        if (symbol < 0 || symbol >= static_cast<int>(plan.symbols.size()))
          return corrupt(absl::StrCat(where, ": symbol ", symbol, " is not in the table"));
        step.readSymbols.push_back(symbol);
      }
      if (read->what())
        step.readWhat = read->what()->str();
      break;
    }
    case fb::StepOp::Check: {
      step.kind = StepKind::Check;
      const fb::Check *check = s->op_as_Check();
      if (!step.inputs.empty() || !check->predicates() || check->predicates()->size() == 0)
        return corrupt(absl::StrCat(where, ": a check takes no inputs and states its facts"));
      // Which symbols have values is known only as the call runs (steps
      // bind them); a fact that reads an unbound one fails that call.
      for (const fb::Predicate *p : *check->predicates()) {
        absl::StatusOr<PredicateInfo> predicate =
            this->predicate(p, absl::StrCat(where, " fact ", step.checks.size()), nullptr);
        if (!predicate.ok())
          return predicate.status();
        step.checks.push_back(std::move(*predicate));
      }
      break;
    }
    case fb::StepOp::View: {
      step.kind = StepKind::View;
      // A body's results are copied into its parameters each iteration: an
      // alias there could be overwritten while it is read.
      if (depth > 0)
        return corrupt(absl::StrCat(where, " is a view inside a body"));
      if (step.inputs.size() != 1 || step.outputs.size() != 1)
        return corrupt(absl::StrCat(where, ": a view takes one input, one output"));
      const ValueInfo &in = plan.values[step.inputs[0]], &out = plan.values[step.outputs[0]];
      if (in.dtype != out.dtype)
        return corrupt(absl::StrCat(where, ": a view of ", dtypeName(in.dtype), " as ",
                                    dtypeName(out.dtype)));
      break;
    }
    case fb::StepOp::If:
    case fb::StepOp::Loop:
    case fb::StepOp::Scan:
      // The bodies run before the step's outputs exist.
      if (absl::Status st = readControl(s, step, where, depth); !st.ok())
        return st;
      break;
    default:
      // Library ops and graph breaks: the runtime checks each table's operands
      // when it decodes it (runtime/src/HostSteps.cpp).
      step.kind = StepKind::Host;
      break;
    }
    for (int v : step.outputs) {
      if (absl::Status st = defineValue(v, where); !st.ok())
        return st;
      if (depth > 0)
        scoped.push_back(v);
    }
    steps.push_back(std::move(step));
  }
  return absl::OkStatus();
}

absl::Status Reader::readGuards() {
  if (!model.guards())
    return absl::OkStatus();
  for (const fb::Guard *g : *model.guards()) {
    GuardInfo guard;
    std::string where = absl::StrCat("guard ", plan.guards.size());
    guard.input = g->input();
    guard.dim = g->dim();
    guard.binds = g->binds();
    if (guard.input < 0 || guard.input >= static_cast<int>(plan.inputs.size()))
      return corrupt(absl::StrCat(where, ": input ", guard.input, " is not an input"));
    const ValueInfo &input = plan.values[plan.inputs[guard.input]];
    if (guard.dim < 0 || guard.dim >= static_cast<int>(input.shape.size()))
      return corrupt(absl::StrCat(where, ": dim ", guard.dim, " is out of range"));
    absl::StatusOr<Dim> expected = dim(g->expected(), where);
    if (!expected.ok())
      return expected.status();
    guard.expected = std::move(*expected);
    if (guard.binds && !guard.expected.soleSymbol())
      return corrupt(absl::StrCat(where, ": binds but its dim is not one symbol"));
    plan.guards.push_back(std::move(guard));
  }
  return absl::OkStatus();
}

absl::Status Reader::readPredicates() {
  if (!model.predicates())
    return absl::OkStatus();
  // Only symbols the inputs bind have values when predicates are checked.
  std::vector<bool> bound(plan.symbols.size(), false);
  for (const GuardInfo &g : plan.guards)
    if (g.binds)
      bound[*g.expected.soleSymbol()] = true;
  for (const fb::Predicate *p : *model.predicates()) {
    absl::StatusOr<PredicateInfo> predicate =
        this->predicate(p, absl::StrCat("predicate ", plan.predicates.size()), &bound);
    if (!predicate.ok())
      return predicate.status();
    plan.predicates.push_back(std::move(*predicate));
  }
  return absl::OkStatus();
}

absl::StatusOr<PredicateInfo> Reader::predicate(const fb::Predicate *p, const std::string &where,
                                                const std::vector<bool> *bound) {
  PredicateInfo predicate;
  if (!p)
    return corrupt(absl::StrCat(where, ": missing"));
  if (p->kind() > fb::PredicateKind::MAX)
    return corrupt(absl::StrCat(where, ": unknown kind ", static_cast<int>(p->kind())));
  predicate.kind = static_cast<PredicateInfo::Kind>(p->kind());
  absl::StatusOr<Dim> lhs = dim(p->lhs(), where), rhs = dim(p->rhs(), where);
  if (!lhs.ok())
    return lhs.status();
  if (!rhs.ok())
    return rhs.status();
  for (const Dim *side : {&*lhs, &*rhs}) {
    if (!side->known())
      return corrupt(absl::StrCat(where, ": a side is an unknown dim"));
    if (bound)
      for (auto [op, value] : side->ops)
        if (op == Dim::Op::Symbol && !(*bound)[value])
          return corrupt(absl::StrCat(where, ": symbol '", plan.symbols[value],
                                      "' is bound by no input"));
  }
  predicate.lhs = std::move(*lhs);
  predicate.rhs = std::move(*rhs);
  predicate.reason = p->reason() ? p->reason()->str() : "";
  return predicate;
}

absl::StatusOr<Plan> Reader::read() {
  plan.producer = model.producer() ? model.producer()->str() : "";
  plan.source = model.source() ? model.source()->str() : "";
  plan.deviceLibrary = model.device_library() ? model.device_library()->str() : "";
  if (model.symbols())
    for (const flatbuffers::String *s : *model.symbols())
      plan.symbols.push_back(s->str());
  if (absl::Status s = readValues(); !s.ok())
    return s;
  absl::StatusOr<std::vector<int>> inputs = valueList(model.inputs(), "the input list");
  absl::StatusOr<std::vector<int>> outputs = valueList(model.outputs(), "the output list");
  if (!inputs.ok())
    return inputs.status();
  if (!outputs.ok())
    return outputs.status();
  plan.inputs = std::move(*inputs);
  plan.outputs = std::move(*outputs);
  for (int v : plan.inputs)
    if (plan.values[v].kind != ValueKind::Input)
      return corrupt(absl::StrCat("input ", v, " is not an input value"));
  for (absl::Status s : {readKernels(), readSteps(), readGuards(), readPredicates(), readVariants()})
    if (!s.ok())
      return s;
  if (model.device_symbols())
    for (const fb::DeviceSymbol *d : *model.device_symbols()) {
      if (!d || d->symbol() < 0 || d->symbol() >= static_cast<int>(plan.symbols.size()) ||
          !d->bound())
        return corrupt("a device symbol is not in the table or has no bound");
      absl::StatusOr<Dim> bound = dim(d->bound(), "a device symbol's bound");
      if (!bound.ok())
        return bound.status();
      plan.deviceSymbols.push_back({d->symbol(), std::move(*bound)});
    }
  // A kernel reads a device symbol's word only where the runtime writes it:
  // a symbol of Model.device_symbols, bound by an input (its value is known
  // when the call starts).
  for (const KernelInfo &k : plan.kernels)
    for (int s : k.deviceSymbols) {
      bool listed = std::any_of(plan.deviceSymbols.begin(), plan.deviceSymbols.end(),
                                [&](const Plan::DeviceSymbol &d) { return d.symbol == s; });
      bool byInput = std::any_of(plan.guards.begin(), plan.guards.end(), [&](const GuardInfo &g) {
        return g.binds && g.expected.soleSymbol() == std::optional<int64_t>(s);
      });
      if (!listed || !byInput)
        return corrupt(absl::StrCat("kernel ", k.name, " reads symbol ", plan.symbols[s],
                                    " from device memory, which the model does not write "
                                    "there (not a device symbol an input binds)"));
    }
  if (model.independent_rows())
    for (int32_t s : *model.independent_rows()) {
      if (s < 0 || s >= static_cast<int>(plan.symbols.size()))
        return corrupt(absl::StrCat("independent rows along symbol ", s, ", which the artifact "
                                    "does not have"));
      plan.independentRows.push_back(s);
    }
  return std::move(plan);
}

} // namespace

void forEachStep(const Plan &plan, const std::function<void(const StepInfo &)> &visit) {
  std::function<void(const std::vector<StepInfo> &)> walk = [&](const std::vector<StepInfo> &steps) {
    for (const StepInfo &step : steps) {
      visit(step);
      for (const BodyInfo &body : step.bodies)
        walk(body.steps);
    }
  };
  walk(plan.steps);
}

std::string variantEntryName(const KernelInfo &kernel, const VariantInfo &variant) {
  std::vector<std::pair<int, int64_t>> fixed;
  for (size_t i = 0; i < kernel.symbols.size(); ++i)
    for (size_t v = 0; v < variant.symbols.size(); ++v)
      if (variant.symbols[v] == kernel.symbols[i])
        fixed.emplace_back(static_cast<int>(i), variant.values[v]);
  return variantEntryName(kernel.name, fixed);
}

bool index32Fits(const KernelInfo &kernel, const Bindings &symbols) {
  if (kernel.index32Sizes.empty())
    return false;
  for (int s : kernel.symbols)
    if (s < 0 || static_cast<size_t>(s) >= symbols.size() || !symbols[s] || *symbols[s] < 0 ||
        *symbols[s] > kMaxIndex32Elements)
      return false;
  for (const Dim &size : kernel.index32Sizes) {
    std::optional<int64_t> n = size.evaluate(symbols);
    if (!n || *n < 0 || *n > kMaxIndex32Elements)
      return false;
  }
  return true;
}

std::optional<int64_t> Dim::evaluate(const Bindings &symbols) const {
  if (ops.empty())
    return std::nullopt;
  // Runs on every call for every guard and planned shape: a stack on the stack
  // for the usual shallow expressions (no allocation), a vector past that.
  constexpr size_t kInline = 16;
  int64_t inlineStack[kInline];
  std::vector<int64_t> heap;
  int64_t *stack = inlineStack;
  if (ops.size() > kInline) {
    heap.resize(ops.size());
    stack = heap.data();
  }
  size_t depth = 0;
  for (auto [op, value] : ops) {
    if (op == Op::Constant) {
      stack[depth++] = value;
      continue;
    }
    if (op == Op::Symbol) {
      if (value < 0 || value >= static_cast<int64_t>(symbols.size()) || !symbols[value])
        return std::nullopt;
      stack[depth++] = *symbols[value];
      continue;
    }
    if (depth < 2)
      return std::nullopt;
    int64_t r = stack[--depth];
    int64_t l = stack[depth - 1];
    int64_t out = 0;
    switch (op) {
    case Op::Add:
      if (__builtin_add_overflow(l, r, &out))
        return std::nullopt;
      break;
    case Op::Mul:
      if (__builtin_mul_overflow(l, r, &out))
        return std::nullopt;
      break;
    default:
      if (r == 0 || (l == std::numeric_limits<int64_t>::min() && r == -1))
        return std::nullopt;
      if (op == Op::FloorDiv)
        out = floorDiv(l, r);
      else if (op == Op::CeilDiv)
        out = -floorDiv(-l, r);
      else
        out = l - floorDiv(l, r) * r;
    }
    stack[depth - 1] = out;
  }
  if (depth != 1)
    return std::nullopt;
  return stack[0];
}

std::optional<int64_t> Dim::soleSymbol() const {
  if (ops.size() == 1 && ops[0].first == Op::Symbol)
    return ops[0].second;
  return std::nullopt;
}

std::string Dim::toString(const std::vector<std::string> &names) const {
  if (ops.empty())
    return "?";
  std::vector<std::string> stack;
  for (auto [op, value] : ops) {
    if (op == Op::Constant) {
      stack.push_back(std::to_string(value));
    } else if (op == Op::Symbol) {
      stack.push_back(value >= 0 && value < static_cast<int64_t>(names.size())
                          ? names[value]
                          : absl::StrCat("s", value));
    } else if (stack.size() >= 2) {
      static const char *const kSpelling[] = {"", "", " + ", " * ", " floordiv ", " ceildiv ",
                                              " mod "};
      std::string r = stack.back();
      stack.pop_back();
      bool bare = stack.size() == 1 && op == Op::Add;
      // x + -3 reads as x - 3 (the compiler writes a difference as a sum).
      const char *spelling = kSpelling[static_cast<int>(op)];
      if (op == Op::Add && r.size() > 1 && r[0] == '-' &&
          r.find_first_not_of("0123456789", 1) == std::string::npos) {
        spelling = " - ";
        r.erase(0, 1);
      }
      stack.back() = absl::StrCat(bare ? "" : "(", stack.back(), spelling, r, bare ? "" : ")");
    }
  }
  std::string s = stack.empty() ? "?" : stack.back();
  if (s.size() > 2 && s.front() == '(' && s.back() == ')')
    s = s.substr(1, s.size() - 2);
  return s;
}

std::optional<bool> PredicateInfo::holds(const Bindings &symbols) const {
  std::optional<int64_t> l = lhs.evaluate(symbols), r = rhs.evaluate(symbols);
  if (!l || !r)
    return std::nullopt;
  switch (kind) {
  case Kind::Equal:
    return *l == *r;
  case Kind::EqualOrOne:
    return *l == *r || *l == 1;
  case Kind::LessEqual:
    return *l <= *r;
  }
  return std::nullopt;
}

std::string PredicateInfo::broken(const Bindings &symbols,
                                  const std::vector<std::string> &names) const {
  // The symbols it reads, with their values: what a user needs to see which
  // size is off.
  std::vector<std::string> values;
  std::vector<bool> named(names.size(), false);
  for (const Dim *side : {&lhs, &rhs})
    for (auto [op, s] : side->ops)
      if (op == Dim::Op::Symbol && s >= 0 && static_cast<size_t>(s) < names.size() &&
          !named[s] && static_cast<size_t>(s) < symbols.size() && symbols[s]) {
        named[s] = true;
        values.push_back(absl::StrCat(names[s], " = ", *symbols[s]));
      }
  return absl::StrCat("guard '", toString(names), "' ",
                      holds(symbols) ? "does not hold" : "cannot be evaluated",
                      values.empty() ? "" : absl::StrCat(" (", absl::StrJoin(values, ", "), ")"));
}

std::string PredicateInfo::toString(const std::vector<std::string> &names) const {
  std::string l = lhs.toString(names), r = rhs.toString(names);
  switch (kind) {
  case Kind::Equal:
    return absl::StrCat(l, " == ", r);
  case Kind::EqualOrOne:
    return absl::StrCat(l, " == ", r, " or ", l, " == 1");
  case Kind::LessEqual:
    return absl::StrCat(l, " <= ", r);
  }
  return "?";
}

bool evaluateShapeInto(const ValueInfo &value, const Bindings &symbols, ref::Shape &shape) {
  shape.resize(value.shape.size());
  for (size_t d = 0; d < value.shape.size(); ++d) {
    std::optional<int64_t> size = value.shape[d].evaluate(symbols);
    if (!size || *size < 0)
      return false;
    shape[d] = *size;
  }
  return true;
}

std::optional<ref::Shape> evaluateShape(const ValueInfo &value, const Bindings &symbols) {
  ref::Shape shape;
  if (!evaluateShapeInto(value, symbols, shape))
    return std::nullopt;
  return shape;
}

std::string dtypeName(ref::DType t) {
  return t == ref::DType::boolean ? "bool" : ref::info(t).name;
}

std::string describeValue(const ValueInfo &v, const std::vector<std::string> &symbols) {
  std::vector<std::string> dims;
  for (const Dim &d : v.shape)
    dims.push_back(d.toString(symbols));
  return absl::StrCat(dtypeName(v.dtype), "[", absl::StrJoin(dims, ", "), "]");
}

uint64_t artifactChecksum(const uint8_t *data, size_t size, size_t skip) {
  // XXH3 streams at memory bandwidth (a 436 MB artifact in tens of ms): damage
  // detection at load without a cryptographic hash's cost. The checksum field
  // itself hashes as eight zero bytes.
  XXH3_state_t state;
  std::memset(&state, 0, sizeof(state)); // reset reads fields before it sets them
  XXH3_64bits_reset_withSeed(&state, size);
  if (skip >= size) {
    XXH3_64bits_update(&state, data, size);
    return XXH3_64bits_digest(&state);
  }
  static const uint8_t kZeros[8] = {};
  size_t skipEnd = std::min(size, skip + 8);
  XXH3_64bits_update(&state, data, skip);
  XXH3_64bits_update(&state, kZeros, skipEnd - skip);
  XXH3_64bits_update(&state, data + skipEnd, size - skipEnd);
  return XXH3_64bits_digest(&state);
}

namespace {
/// Where the root table's checksum field (vtable slot `field`) has its eight
/// bytes, if the buffer has one.
std::optional<size_t> checksumOffset(const uint8_t *data,
                                     flatbuffers::voffset_t field = fb::Model::VT_CHECKSUM) {
  // The root as a plain table: generated tables keep field addresses private.
  const uint8_t *at = flatbuffers::GetRoot<flatbuffers::Table>(data)->GetAddressOf(field);
  if (!at)
    return std::nullopt;
  return static_cast<size_t>(at - data);
}

/// Stores the checksum of a finished buffer into its root's field `field`.
bool sealRoot(uint8_t *data, size_t size, flatbuffers::voffset_t field) {
  std::optional<size_t> at = checksumOffset(data, field);
  if (!at || *at + 8 > size)
    return false;
  uint64_t sum = artifactChecksum(data, size, *at);
  std::memcpy(data + *at, &sum, 8);
  return true;
}
} // namespace

bool sealArtifact(uint8_t *data, size_t size) {
  return sealRoot(data, size, fb::Model::VT_CHECKSUM);
}

uint64_t artifactChecksumOfPieces(
    size_t size,
    const std::function<void(const std::function<void(const uint8_t *, size_t)> &)> &pieces) {
  // As artifactChecksum with the field already zero: the same stream of bytes.
  XXH3_state_t state;
  std::memset(&state, 0, sizeof(state));
  XXH3_64bits_reset_withSeed(&state, size);
  pieces([&](const uint8_t *data, size_t n) { XXH3_64bits_update(&state, data, n); });
  return XXH3_64bits_digest(&state);
}

std::optional<size_t> artifactChecksumOffset(const uint8_t *data) { return checksumOffset(data); }

bool matchesPlan(const ref::Tensor &got, const ValueInfo &info, const Bindings &symbols) {
  return matchesPlan(got.dtype(), got.shape(), info, symbols);
}

bool matchesPlan(ref::DType dtype, const ref::Shape &shape, const ValueInfo &info,
                 const Bindings &symbols) {
  if (dtype != info.dtype || shape.size() != info.shape.size())
    return false;
  for (size_t d = 0; d < info.shape.size(); ++d)
    if (std::optional<int64_t> want = info.shape[d].evaluate(symbols); want && *want != shape[d])
      return false;
  return true;
}

absl::StatusOr<ref::Tensor> evaluateShapeStep(const Plan &plan, const StepInfo &step,
                                              const Bindings &symbols,
                                              const ref::Shape &inputShape) {
  const ValueInfo &result = plan.values[step.outputs[0]];
  std::optional<ref::Shape> planned = evaluateShape(result, symbols);
  if (step.kind == StepKind::ShapeOf) {
    ref::Shape shape = {static_cast<int64_t>(inputShape.size())};
    if (result.dtype != ref::DType::i64 || (planned && *planned != shape))
      return absl::InvalidArgumentError("its result is not an i64 vector of the input's rank");
    ref::Tensor t(ref::DType::i64, shape);
    for (size_t d = 0; d < inputShape.size(); ++d)
      t.setI(static_cast<int64_t>(d), inputShape[d]);
    return t;
  }
  // A vector of the dims, or a scalar when there is one.
  if (result.dtype != ref::DType::i64 || !planned ||
      ref::numElements(*planned) != static_cast<int64_t>(step.dims.size()))
    return absl::InvalidArgumentError("its result is not an i64 tensor of its dims");
  ref::Tensor t(ref::DType::i64, *planned);
  for (size_t i = 0; i < step.dims.size(); ++i) {
    std::optional<int64_t> v = step.dims[i].evaluate(symbols);
    if (!v)
      return absl::InvalidArgumentError(
          absl::StrCat("dim ", step.dims[i].toString(plan.symbols), " has no value"));
    t.setI(static_cast<int64_t>(i), *v);
  }
  return t;
}

absl::StatusOr<Plan> readArtifact(const uint8_t *data, size_t size,
                                  const WeightsFileResolver &resolveWeights) {
  if (!data || size < 8)
    return absl::InvalidArgumentError(
        absl::StrCat("not a kiln artifact: ", size, " bytes is too short"));
  if (!fb::ModelBufferHasIdentifier(data))
    return absl::InvalidArgumentError(absl::StrCat(
        "not a kiln artifact: its file identifier is '",
        std::string(reinterpret_cast<const char *>(data) + 4, 4), "', not '",
        fb::ModelIdentifier(), "'"));
  if (reinterpret_cast<uintptr_t>(data) % 8 != 0)
    return absl::InvalidArgumentError("artifact bytes must be 8-byte aligned");
  flatbuffers::Verifier verifier(data, size, /*max_depth=*/64, /*max_tables=*/1u << 26);
  if (!fb::VerifyModelBuffer(verifier))
    return absl::InvalidArgumentError(absl::StrCat(
        "corrupt or truncated artifact (", size, " bytes): its FlatBuffers structure does not verify"));
  const fb::Model *model = fb::GetModel(data);
  if (model->format_version() != kFormatVersion)
    return absl::FailedPreconditionError(absl::StrCat(
        "artifact format version ", model->format_version(), ", but this runtime reads version ",
        kFormatVersion, "; recompile the model with a matching kiln-compile"));
  std::optional<size_t> at = checksumOffset(data);
  if (!at)
    return absl::InvalidArgumentError("corrupt artifact: it has no checksum");
  if (artifactChecksum(data, size, *at) != model->checksum())
    return absl::InvalidArgumentError(absl::StrCat(
        "corrupt artifact (", size, " bytes): its checksum does not match its contents"));
  if (!model->external_weights()) {
    absl::StatusOr<Plan> plan =
        Reader(*model, model->weights_data() ? model->weights_data()->data() : nullptr,
               model->weights_data() ? model->weights_data()->size() : 0)
            .read();
    if (plan.ok())
      plan->checksum = model->checksum();
    return plan;
  }
  std::string name = model->external_weights()->str();
  if (name.empty() || name.find('/') != std::string::npos)
    return absl::InvalidArgumentError(
        absl::StrCat("corrupt artifact: weights file name '", name, "' is not a plain file name"));
  if (!resolveWeights)
    return absl::FailedPreconditionError(absl::StrCat(
        "the artifact's weights are in the separate file '", name,
        "'; load the artifact from its file (kiln_model_load_file) so it can be found"));
  absl::StatusOr<std::pair<const uint8_t *, size_t>> weights = resolveWeights(name);
  if (!weights.ok())
    return weights.status();
  auto [bytes, length] = *weights;
  if (length != model->external_weights_size())
    return absl::InvalidArgumentError(absl::StrCat("weights file '", name, "' has ", length,
                                                   " bytes; the artifact expects ",
                                                   model->external_weights_size()));
  if (artifactChecksum(bytes, length, length) != model->external_weights_checksum())
    return absl::InvalidArgumentError(absl::StrCat(
        "weights file '", name, "' does not match the artifact (checksum); it is damaged or "
        "belongs to another compile"));
  absl::StatusOr<Plan> plan = Reader(*model, bytes, length).read();
  if (plan.ok())
    plan->checksum = model->checksum();
  return plan;
}

bool sealVariantPack(uint8_t *data, size_t size) {
  return sealRoot(data, size, fb::VariantPack::VT_CHECKSUM);
}

absl::StatusOr<VariantPackInfo> readVariantPack(const uint8_t *data, size_t size,
                                                const Plan &plan) {
  if (!data || size < 8 || !fb::VariantPackBufferHasIdentifier(data))
    return absl::InvalidArgumentError("not a kiln variant pack (no 'KVAR' identifier)");
  if (reinterpret_cast<uintptr_t>(data) % 8 != 0)
    return absl::InvalidArgumentError("variant pack bytes must be 8-byte aligned");
  flatbuffers::Verifier verifier(data, size, /*max_depth=*/64, /*max_tables=*/1u << 24);
  if (!fb::VerifyVariantPackBuffer(verifier))
    return absl::InvalidArgumentError(absl::StrCat(
        "corrupt or truncated variant pack (", size, " bytes): its structure does not verify"));
  const fb::VariantPack *pack = fb::GetVariantPack(data);
  if (pack->format_version() != kFormatVersion)
    return absl::FailedPreconditionError(absl::StrCat("variant pack format version ",
                                                      pack->format_version(), ", but this runtime reads version ",
                                                      kFormatVersion));
  std::optional<size_t> at = checksumOffset(data, fb::VariantPack::VT_CHECKSUM);
  if (!at || artifactChecksum(data, size, *at) != pack->checksum())
    return absl::InvalidArgumentError(
        absl::StrCat("corrupt variant pack (", size, " bytes): its checksum does not match"));
  if (pack->artifact_checksum() != plan.checksum)
    return absl::InvalidArgumentError(
        "the variant pack was compiled for another artifact (its artifact checksum differs)");
  VariantPackInfo info;
  if (pack->variants())
    for (const fb::Variant *v : *pack->variants()) {
      absl::StatusOr<VariantInfo> variant = readVariant(v, plan, info.variants.size());
      if (!variant.ok())
        return variant.status();
      info.variants.push_back(std::move(*variant));
    }
  if (pack->host_libraries())
    for (const fb::HostLibrary *h : *pack->host_libraries()) {
      HostLibraryInfo lib = readHostLibrary(h);
      if (lib.variant < 0 || lib.variant >= static_cast<int>(info.variants.size()))
        return absl::InvalidArgumentError(absl::StrCat(
            "corrupt variant pack: a host library belongs to variant ", lib.variant));
      info.hostLibraries.push_back(std::move(lib));
    }
  return info;
}

} // namespace kiln::artifact
