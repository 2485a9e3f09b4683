//===- LibraryCall.cpp - library ops dispatched by name -------------------===//

#include "kiln/reference/LibraryCall.h"

#include "kiln/reference/Kernels.h"

#include "absl/strings/str_cat.h"

namespace kiln::ref {
namespace {

// Activation numbers of kiln's `activation` enum (ir/Kiln/KilnAttrs.td).
constexpr int64_t kActivationRelu = 1;

class Reader {
public:
  Reader(const LibraryCall &call, const std::vector<const Tensor *> &inputs)
      : call(call), inputs(inputs) {}

  /// An attribute holding a list of integers; absent gives `fallback`.
  std::vector<int64_t> ints(const char *name, std::vector<int64_t> fallback = {}) const {
    auto it = call.attrs.find(name);
    return it == call.attrs.end() ? fallback : it->second.ints;
  }
  /// An integer attribute (a default-valued one may be absent).
  absl::StatusOr<int64_t> integer(const char *name, std::optional<int64_t> fallback) const {
    auto it = call.attrs.find(name);
    if (it == call.attrs.end()) {
      if (fallback)
        return *fallback;
      return absl::InvalidArgumentError(absl::StrCat(call.op, " lacks attribute '", name, "'"));
    }
    if (it->second.ints.size() != 1)
      return absl::InvalidArgumentError(
          absl::StrCat(call.op, " attribute '", name, "' is not one integer"));
    return it->second.ints[0];
  }
  absl::Status arity(size_t least, size_t most) const {
    if (inputs.size() < least || inputs.size() > most)
      return absl::InvalidArgumentError(absl::StrCat(call.op, " takes ", least, "-", most,
                                                     " inputs, got ", inputs.size()));
    for (const Tensor *t : inputs)
      if (!t)
        return absl::InvalidArgumentError(absl::StrCat(call.op, " got a null input"));
    return absl::OkStatus();
  }
  const Tensor *optional(size_t i) const { return i < inputs.size() ? inputs[i] : nullptr; }

private:
  const LibraryCall &call;
  const std::vector<const Tensor *> &inputs;
};

absl::StatusOr<Tensor> applyActivation(absl::StatusOr<Tensor> r, int64_t activation) {
  if (r.ok() && activation == kActivationRelu)
    return binary(BinaryFn::max, *r, Tensor(r->dtype(), {}));
  return r;
}

absl::StatusOr<ConvParams> convParams(const Reader &read) {
  ConvParams p;
  p.strides = read.ints("strides");
  p.dilations = read.ints("dilations");
  p.pads = read.ints("pads");
  p.outputPadding = read.ints("output_padding");
  absl::StatusOr<int64_t> group = read.integer("group", 1);
  if (!group.ok())
    return group.status();
  p.group = *group;
  return p;
}

absl::StatusOr<Tensor> runOne(const LibraryCall &call, const std::vector<const Tensor *> &in) {
  Reader read(call, in);
  if (call.op == "kiln.matmul") {
    if (absl::Status s = read.arity(2, 3); !s.ok())
      return s;
    absl::StatusOr<int64_t> activation = read.integer("activation", 0);
    if (!activation.ok())
      return activation.status();
    absl::StatusOr<Tensor> r = matmul(*in[0], *in[1]);
    if (r.ok() && read.optional(2))
      r = binary(BinaryFn::add, *r, *in[2]);
    return applyActivation(std::move(r), *activation);
  }
  if (call.op == "kiln.conv" || call.op == "kiln.conv_transpose") {
    if (absl::Status s = read.arity(2, 3); !s.ok())
      return s;
    absl::StatusOr<ConvParams> p = convParams(read);
    if (!p.ok())
      return p.status();
    if (call.op == "kiln.conv_transpose")
      return convTranspose(*in[0], *in[1], read.optional(2), *p);
    absl::StatusOr<int64_t> activation = read.integer("activation", 0);
    if (!activation.ok())
      return activation.status();
    return applyActivation(conv(*in[0], *in[1], read.optional(2), *p), *activation);
  }
  if (call.op == "kiln.pool") {
    if (absl::Status s = read.arity(1, 1); !s.ok())
      return s;
    PoolParams p;
    absl::StatusOr<int64_t> kind = read.integer("kind", std::nullopt);
    absl::StatusOr<int64_t> ceilMode = read.integer("ceil_mode", 0);
    absl::StatusOr<int64_t> countIncludePad = read.integer("count_include_pad", 0);
    absl::StatusOr<int64_t> norm = read.integer("p", 2);
    for (const auto *s : {&kind, &ceilMode, &countIncludePad, &norm})
      if (!s->ok())
        return s->status();
    if (*kind < 0 || *kind > static_cast<int64_t>(PoolKind::lp))
      return absl::InvalidArgumentError(absl::StrCat("kiln.pool kind ", *kind, " is unknown"));
    p.kind = static_cast<PoolKind>(*kind);
    p.kernel = read.ints("kernel_shape");
    p.strides = read.ints("strides");
    p.pads = read.ints("pads");
    p.dilations = read.ints("dilations");
    p.ceilMode = *ceilMode != 0;
    p.countIncludePad = *countIncludePad != 0;
    p.p = *norm;
    return pool(*in[0], p);
  }
  return absl::UnimplementedError(absl::StrCat("no library kernel for '", call.op, "'"));
}

} // namespace

bool isLibraryOp(const std::string &op) {
  return op == "kiln.matmul" || op == "kiln.conv" || op == "kiln.conv_transpose" ||
         op == "kiln.pool";
}

absl::StatusOr<std::vector<Tensor>> runLibraryCall(const LibraryCall &call,
                                                   const std::vector<const Tensor *> &inputs) {
  absl::StatusOr<Tensor> r = runOne(call, inputs);
  if (!r.ok())
    return r.status();
  std::vector<Tensor> results;
  results.push_back(std::move(*r));
  return results;
}

} // namespace kiln::ref
