//===- LibraryCall.cpp - kiln ops dispatched by name ----------------------===//
//
// One table from op name to reference kernel, reading each op's attributes under
// their ODS names. Default-valued attributes may be absent (the IR omits them
// when they were never set), so every such read names the ODS default.
//
//===----------------------------------------------------------------------===//

#include "kiln/reference/LibraryCall.h"

#include "kiln/reference/Kernels.h"

#include "absl/strings/str_cat.h"

#include <functional>
#include <map>

namespace kiln::ref {
namespace {

// Activation numbers of kiln's `activation` enum (ir/Kiln/KilnAttrs.td).
constexpr int64_t kActivationRelu = 1;

using Results = absl::StatusOr<std::vector<Tensor>>;

class Call {
public:
  Call(const LibraryCall &call, const std::vector<const Tensor *> &inputs)
      : call(call), inputs(inputs) {}

  const Tensor &in(size_t i) const { return *inputs[i]; }
  const Tensor *optional(size_t i) const { return i < inputs.size() ? inputs[i] : nullptr; }
  size_t count() const { return inputs.size(); }

  /// An integer list attribute (absent: `fallback`).
  std::vector<int64_t> ints(const char *name, std::vector<int64_t> fallback = {}) const {
    auto it = call.attrs.find(name);
    return it == call.attrs.end() ? fallback : it->second.ints;
  }
  std::vector<double> floats(const char *name) const {
    auto it = call.attrs.find(name);
    return it == call.attrs.end() ? std::vector<double>() : it->second.floats;
  }
  bool has(const char *name) const { return call.attrs.count(name) != 0; }
  /// One integer (bools and enums too); a required one that is absent is an error.
  int64_t integer(const char *name, std::optional<int64_t> fallback = std::nullopt) {
    auto it = call.attrs.find(name);
    if (it != call.attrs.end() && it->second.ints.size() == 1)
      return it->second.ints[0];
    if (it == call.attrs.end() && fallback)
      return *fallback;
    fail(absl::StrCat("attribute '", name, "' is missing or not one integer"));
    return 0;
  }
  double real(const char *name, double fallback) {
    auto it = call.attrs.find(name);
    if (it == call.attrs.end())
      return fallback;
    if (it->second.floats.size() != 1) {
      fail(absl::StrCat("attribute '", name, "' is not one float"));
      return 0;
    }
    return it->second.floats[0];
  }
  /// An enum attribute, checked against the enum's last value.
  template <typename E> E choice(const char *name, E last, std::optional<int64_t> fallback = {}) {
    int64_t v = integer(name, fallback);
    if (v < 0 || v > static_cast<int64_t>(last)) {
      fail(absl::StrCat("attribute '", name, "' has no value ", v));
      return static_cast<E>(0);
    }
    return static_cast<E>(v);
  }
  /// The values of a 1-D integer tensor input (shape operands).
  std::vector<int64_t> values(size_t i) const {
    std::vector<int64_t> out;
    for (int64_t k = 0; k < inputs[i]->numel(); ++k)
      out.push_back(inputs[i]->getI(k));
    return out;
  }

  absl::Status status() const { return error; }
  void fail(std::string message) {
    if (error.ok())
      error = absl::InvalidArgumentError(message);
  }

private:
  const LibraryCall &call;
  const std::vector<const Tensor *> &inputs;
  absl::Status error;
};

Results one(absl::StatusOr<Tensor> t) {
  if (!t.ok())
    return t.status();
  std::vector<Tensor> out;
  out.push_back(std::move(*t));
  return out;
}

absl::StatusOr<Tensor> applyActivation(absl::StatusOr<Tensor> r, int64_t activation) {
  if (r.ok() && activation == kActivationRelu)
    return binary(BinaryFn::max, *r, Tensor(r->dtype(), {}));
  return r;
}

ConvParams convParams(Call &c) {
  ConvParams p;
  p.strides = c.ints("strides");
  p.dilations = c.ints("dilations");
  p.pads = c.ints("pads");
  p.outputPadding = c.ints("output_padding");
  p.group = c.integer("group", 1);
  return p;
}

absl::StatusOr<DType> dtypeAttr(Call &c, const char *name) {
  int64_t v = c.integer(name);
  if (v < 0 || v > static_cast<int64_t>(DType::u2))
    return absl::InvalidArgumentError(absl::StrCat("attribute '", name, "' names no dtype"));
  return static_cast<DType>(v);
}

Results reshape(Call &c) {
  const Tensor &x = c.in(0);
  std::vector<int64_t> shape = c.values(1);
  int64_t known = 1, unknownAt = -1;
  for (size_t d = 0; d < shape.size(); ++d) {
    if (shape[d] == -1)
      unknownAt = static_cast<int64_t>(d);
    else
      known *= shape[d];
  }
  if (unknownAt >= 0)
    shape[unknownAt] = known ? x.numel() / known : 0;
  if (numElements(shape) != x.numel())
    return absl::InvalidArgumentError(absl::StrCat("reshape of ", x.describe(), " to [",
                                                   shapeToString(shape),
                                                   "] changes the element count"));
  return one(x.reshaped(shape));
}

using Kernel = std::function<Results(Call &)>;

/// Every op by name: {inputs at least, at most, kernel}.
struct Entry {
  size_t least, most;
  Kernel run;
};

const std::map<std::string, Entry> &table() {
  static const std::map<std::string, Entry> entries = [] {
    std::map<std::string, Entry> t;
    const std::pair<const char *, UnaryFn> unaries[] = {
        {"neg", UnaryFn::neg},         {"abs", UnaryFn::abs},
        {"sign", UnaryFn::sign},       {"exp", UnaryFn::exp},
        {"log", UnaryFn::log},         {"sqrt", UnaryFn::sqrt},
        {"rsqrt", UnaryFn::rsqrt},     {"reciprocal", UnaryFn::reciprocal},
        {"tanh", UnaryFn::tanh},       {"sigmoid", UnaryFn::sigmoid},
        {"erf", UnaryFn::erf},         {"sin", UnaryFn::sin},
        {"cos", UnaryFn::cos},         {"tan", UnaryFn::tan},
        {"asin", UnaryFn::asin},       {"acos", UnaryFn::acos},
        {"atan", UnaryFn::atan},       {"sinh", UnaryFn::sinh},
        {"cosh", UnaryFn::cosh},       {"asinh", UnaryFn::asinh},
        {"acosh", UnaryFn::acosh},     {"atanh", UnaryFn::atanh},
        {"floor", UnaryFn::floor},     {"ceil", UnaryFn::ceil},
        {"round", UnaryFn::round},     {"is_nan", UnaryFn::is_nan},
        {"is_inf", UnaryFn::is_inf},   {"not", UnaryFn::logical_not},
        {"bitwise_not", UnaryFn::bitwise_not}};
    for (auto [name, fn] : unaries)
      t[absl::StrCat("kiln.", name)] = {1, 1, [fn = fn](Call &c) { return one(unary(fn, c.in(0))); }};
    const std::pair<const char *, BinaryFn> binaries[] = {
        {"add", BinaryFn::add},
        {"sub", BinaryFn::sub},
        {"mul", BinaryFn::mul},
        {"div", BinaryFn::div},
        {"rem", BinaryFn::rem},
        {"mod", BinaryFn::mod},
        {"pow", BinaryFn::pow},
        {"max", BinaryFn::max},
        {"min", BinaryFn::min},
        {"and", BinaryFn::logical_and},
        {"or", BinaryFn::logical_or},
        {"xor", BinaryFn::logical_xor},
        {"bitwise_and", BinaryFn::bitwise_and},
        {"bitwise_or", BinaryFn::bitwise_or},
        {"bitwise_xor", BinaryFn::bitwise_xor},
        {"shift_left", BinaryFn::shift_left},
        {"shift_right", BinaryFn::shift_right}};
    for (auto [name, fn] : binaries)
      t[absl::StrCat("kiln.", name)] = {
          2, 2, [fn = fn](Call &c) { return one(binary(fn, c.in(0), c.in(1))); }};

    t["kiln.compare"] = {2, 2, [](Call &c) {
                           CompareFn fn = c.choice("direction", CompareFn::ge);
                           return one(compare(fn, c.in(0), c.in(1)));
                         }};
    t["kiln.select"] = {3, 3, [](Call &c) { return one(select(c.in(0), c.in(1), c.in(2))); }};
    t["kiln.cast"] = {1, 1, [](Call &c) -> Results {
                        absl::StatusOr<DType> to = dtypeAttr(c, "to");
                        if (!to.ok())
                          return to.status();
                        return one(castTensor(c.in(0), *to, c.integer("saturate", 1) != 0));
                      }};
    t["kiln.bitcast"] = {1, 1, [](Call &c) -> Results {
                           absl::StatusOr<DType> to = dtypeAttr(c, "to");
                           if (!to.ok())
                             return to.status();
                           return one(bitcast(c.in(0), *to));
                         }};
    t["kiln.range"] = {3, 3, [](Call &c) { return one(range(c.in(0), c.in(1), c.in(2))); }};
    t["kiln.reshape"] = {2, 2, reshape};
    t["kiln.transpose"] = {1, 1, [](Call &c) {
                             return one(transpose(c.in(0), c.ints("permutation")));
                           }};
    t["kiln.broadcast_to"] = {2, 2,
                              [](Call &c) { return one(broadcastTo(c.in(0), c.values(1))); }};
    t["kiln.concat"] = {1, SIZE_MAX, [](Call &c) {
                          std::vector<const Tensor *> parts;
                          for (size_t i = 0; i < c.count(); ++i)
                            parts.push_back(&c.in(i));
                          return one(concat(parts, c.integer("axis")));
                        }};
    t["kiln.slice"] = {4, 4, [](Call &c) {
                         return one(slice(c.in(0), c.values(1), c.values(2), c.values(3)));
                       }};
    t["kiln.gather"] = {2, 2, [](Call &c) {
                          return one(gather(c.in(0), c.in(1), c.integer("axis")));
                        }};
    t["kiln.pad"] = {3, 3, [](Call &c) {
                       PadMode mode = c.choice("mode", PadMode::wrap);
                       return one(pad(c.in(0), c.values(1), mode, c.in(2)));
                     }};
    t["kiln.gather_elements"] = {2, 2, [](Call &c) {
                                   return one(gatherElements(c.in(0), c.in(1), c.integer("axis")));
                                 }};
    t["kiln.scatter_elements"] = {
        3, 3, [](Call &c) {
          ScatterReduction r = c.choice("reduction", ScatterReduction::min);
          return one(scatterElements(c.in(0), c.in(1), c.in(2), c.integer("axis"), r));
        }};
    t["kiln.gather_nd"] = {2, 2, [](Call &c) {
                             return one(gatherND(c.in(0), c.in(1), c.integer("batch_dims", 0)));
                           }};
    t["kiln.scatter_nd"] = {3, 3, [](Call &c) {
                              ScatterReduction r = c.choice("reduction", ScatterReduction::min);
                              return one(scatterND(c.in(0), c.in(1), c.in(2), r));
                            }};
    t["kiln.non_zero"] = {1, 1, [](Call &c) { return one(nonZero(c.in(0))); }};
    t["kiln.compress"] = {2, 2, [](Call &c) {
                            std::optional<int64_t> axis;
                            if (c.has("axis"))
                              axis = c.integer("axis");
                            return one(compress(c.in(0), c.in(1), axis));
                          }};
    t["kiln.resize"] = {2, 2, [](Call &c) {
                          ResizeParams p;
                          p.size = c.values(1);
                          p.mode = c.choice("mode", ResizeMode::cubic);
                          p.coordinateMode = c.choice("coordinate_mode",
                                                      CoordinateMode::tf_crop_and_resize);
                          p.nearestMode = c.choice("nearest_mode", NearestMode::ceil);
                          p.scales = c.floats("scales");
                          p.roi = c.floats("roi");
                          p.cubicCoeffA = c.real("cubic_coeff_a", -0.75);
                          p.excludeOutside = c.integer("exclude_outside", 0) != 0;
                          p.extrapolationValue = c.real("extrapolation_value", 0.0);
                          p.antialias = c.integer("antialias", 0) != 0;
                          return one(resize(c.in(0), p));
                        }};
    t["kiln.reduce"] = {1, 1, [](Call &c) {
                          ReduceKind kind = c.choice("kind", ReduceKind::all);
                          return one(reduce(c.in(0), kind, c.ints("axes"),
                                            c.integer("keep_dims", 1) != 0));
                        }};
    t["kiln.arg_reduce"] = {1, 1, [](Call &c) {
                              ArgReduceKind kind = c.choice("kind", ArgReduceKind::argmin);
                              return one(argReduce(c.in(0), kind, c.integer("axis"),
                                                   c.integer("keep_dims", 1) != 0,
                                                   c.integer("select_last_index", 0) != 0));
                            }};
    t["kiln.cumulative"] = {1, 1, [](Call &c) {
                              CumulativeKind kind = c.choice("kind", CumulativeKind::prod);
                              return one(cumulative(c.in(0), kind, c.integer("axis"),
                                                    c.integer("exclusive", 0) != 0,
                                                    c.integer("reverse", 0) != 0));
                            }};
    t["kiln.top_k"] = {2, 2, [](Call &c) -> Results {
                         if (c.in(1).numel() != 1)
                           return absl::InvalidArgumentError("k must hold one value");
                         auto r = topK(c.in(0), c.in(1).getI(0), c.integer("axis"),
                                       c.integer("largest", 1) != 0, c.integer("sorted", 1) != 0);
                         if (!r.ok())
                           return r.status();
                         std::vector<Tensor> out;
                         out.push_back(std::move(r->first));
                         out.push_back(std::move(r->second));
                         return out;
                       }};
    t["kiln.matmul"] = {2, 3, [](Call &c) {
                          int64_t activation = c.integer("activation", 0);
                          absl::StatusOr<Tensor> r = matmul(c.in(0), c.in(1));
                          if (r.ok() && c.optional(2))
                            r = binary(BinaryFn::add, *r, c.in(2));
                          return one(applyActivation(std::move(r), activation));
                        }};
    t["kiln.conv"] = {2, 3, [](Call &c) {
                        ConvParams p = convParams(c);
                        int64_t activation = c.integer("activation", 0);
                        return one(applyActivation(conv(c.in(0), c.in(1), c.optional(2), p),
                                                   activation));
                      }};
    t["kiln.conv_transpose"] = {2, 3, [](Call &c) {
                                  ConvParams p = convParams(c);
                                  return one(convTranspose(c.in(0), c.in(1), c.optional(2), p));
                                }};
    t["kiln.pool"] = {1, 1, [](Call &c) {
                        PoolParams p;
                        p.kind = c.choice("kind", PoolKind::lp);
                        p.kernel = c.ints("kernel_shape");
                        p.strides = c.ints("strides");
                        p.pads = c.ints("pads");
                        p.dilations = c.ints("dilations");
                        p.ceilMode = c.integer("ceil_mode", 0) != 0;
                        p.countIncludePad = c.integer("count_include_pad", 0) != 0;
                        p.p = c.integer("p", 2);
                        return one(pool(c.in(0), p));
                      }};
    t["kiln.softmax"] = {1, 1, [](Call &c) {
                           return one(softmax(c.in(0), c.integer("axis"), false));
                         }};
    t["kiln.log_softmax"] = {1, 1, [](Call &c) {
                               return one(softmax(c.in(0), c.integer("axis"), true));
                             }};
    t["kiln.layer_norm"] = {2, 3, [](Call &c) {
                              return one(layerNorm(c.in(0), c.in(1), c.optional(2),
                                                   c.integer("axis", -1),
                                                   static_cast<float>(c.real("epsilon", 1e-5))));
                            }};
    t["kiln.grid_sample"] = {2, 2, [](Call &c) {
                               ResizeMode mode = c.choice("mode", ResizeMode::cubic);
                               GridPadding padding = c.choice("padding", GridPadding::reflection);
                               return one(gridSample(c.in(0), c.in(1), mode, padding,
                                                     c.integer("align_corners", 0) != 0));
                             }};
    t["kiln.roi_align"] = {3, 3, [](Call &c) {
                             RoiAlignParams p;
                             p.maxMode = c.choice("mode", PoolKind::lp) == PoolKind::max;
                             p.outputHeight = c.integer("output_height");
                             p.outputWidth = c.integer("output_width");
                             p.samplingRatio = c.integer("sampling_ratio");
                             p.spatialScale = static_cast<float>(c.real("spatial_scale", 1.0));
                             p.halfPixel = c.integer("half_pixel", 1) != 0;
                             return one(roiAlign(c.in(0), c.in(1), c.in(2), p));
                           }};
    t["kiln.non_max_suppression"] = {
        4, 5, [](Call &c) -> Results {
          for (size_t i = 2; i < c.count(); ++i)
            if (c.in(i).numel() != 1)
              return absl::InvalidArgumentError("scalar operands must hold one value");
          std::optional<double> scoreThreshold;
          if (c.optional(4))
            scoreThreshold = c.in(4).getF(0);
          return one(nonMaxSuppression(c.in(0), c.in(1), c.in(2).getI(0), c.in(3).getF(0),
                                       scoreThreshold, c.integer("center_point_box", 0) != 0));
        }};
    t["kiln.unique"] = {1, 1, [](Call &c) -> Results {
                          std::optional<int64_t> axis;
                          if (c.has("axis"))
                            axis = c.integer("axis");
                          return unique(c.in(0), axis, c.integer("sorted", 1) != 0);
                        }};
    t["kiln.det"] = {1, 1, [](Call &c) { return one(det(c.in(0))); }};
    t["kiln.col2im"] = {1, 1, [](Call &c) {
                          Col2ImParams p;
                          p.imageShape = c.ints("image_shape");
                          p.blockShape = c.ints("block_shape");
                          p.strides = c.ints("strides");
                          p.dilations = c.ints("dilations");
                          p.pads = c.ints("pads");
                          return one(col2im(c.in(0), p));
                        }};
    return t;
  }();
  return entries;
}

} // namespace

bool isLibraryOp(const std::string &op) { return table().count(op) != 0; }

absl::StatusOr<std::vector<Tensor>> runLibraryCall(const LibraryCall &call,
                                                   const std::vector<const Tensor *> &inputs) {
  auto it = table().find(call.op);
  if (it == table().end())
    return absl::UnimplementedError(absl::StrCat("no reference kernel for '", call.op, "'"));
  const Entry &entry = it->second;
  if (inputs.size() < entry.least || inputs.size() > entry.most)
    return absl::InvalidArgumentError(absl::StrCat(call.op, " takes ", entry.least, "-",
                                                   entry.most, " inputs, got ", inputs.size()));
  for (const Tensor *t : inputs)
    if (!t)
      return absl::InvalidArgumentError(absl::StrCat(call.op, " got a null input"));
  Call c(call, inputs);
  Results r = entry.run(c);
  // An attribute problem found while reading wins over what the kernel made of it.
  if (!c.status().ok())
    return absl::Status(c.status().code(), absl::StrCat(call.op, ": ", c.status().message()));
  return r;
}

} // namespace kiln::ref
