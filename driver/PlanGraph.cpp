//===- PlanGraph.cpp - a compiled plan as a Graphviz graph ----------------===//

#include "driver/PlanGraph.h"

#include "kiln/reference/Tensor.h"

#include <functional>
#include <map>
#include <set>
#include <sstream>

namespace kiln {

namespace {

/// A DOT string literal's body.
std::string escape(const std::string &s) {
  std::string out;
  for (char c : s) {
    if (c == '"' || c == '\\')
      out += '\\';
    out += c;
  }
  return out;
}


const char *scheduleColour(schema::Schedule s) {
  switch (s) {
  case schema::Schedule::Pointwise: return "#cfe8ff";
  case schema::Schedule::Reduction: return "#d8f5d0";
  case schema::Schedule::Row: return "#fde7c8";
  case schema::Schedule::Compaction: return "#eadcf8";
  case schema::Schedule::Attention: return "#f8d7e0";
  }
  return "#eeeeee";
}

/// "f32[batch, 16]", and "= 512 B" when the symbols size it.
std::string valueLabel(const artifact::Plan &plan, int v, const artifact::Bindings &symbols) {
  const artifact::ValueInfo &info = plan.values[v];
  std::string label = artifact::describeValue(info, plan.symbols);
  if (std::optional<ref::Shape> shape = artifact::evaluateShape(info, symbols)) {
    uint64_t bytes = ref::info(info.dtype).bytes;
    for (int64_t d : *shape)
      bytes *= static_cast<uint64_t>(d);
    label += " = " + std::to_string(bytes) + " B";
  }
  return label;
}
} // namespace

std::string planToDot(const artifact::Plan &plan, const llvm::json::Object &report,
                      const artifact::Bindings &symbols) {
  // The ops each kernel fuses, from the writer's report.
  std::map<std::string, std::string> fused;
  if (const llvm::json::Array *kernels = report.getArray("kernels"))
    for (const llvm::json::Value &k : *kernels) {
      const llvm::json::Object &o = *k.getAsObject();
      std::string ops;
      if (const llvm::json::Array *list = o.getArray("ops"))
        for (const llvm::json::Value &op : *list) {
          // Constants are splat copies inside the kernel, symbolic constants
          // sizes: not work, left out.
          std::string name = op.getAsString().value_or("").str();
          if (name != "kiln.constant" && name != "kiln.symbolic_constant")
            ops += (ops.empty() ? "" : "\\n") + escape(name);
        }
      fused[o.getString("name").value_or("").str()] = ops;
    }
  std::ostringstream dot;
  dot << "digraph kiln_plan {\n"
      << "  rankdir=TB;\n"
      << "  node [fontname=\"Helvetica\", fontsize=10];\n"
      << "  edge [fontname=\"Helvetica\", fontsize=9];\n";
  std::map<int, std::string> producer; ///< value -> node id
  std::set<int> outputs(plan.outputs.begin(), plan.outputs.end());
  for (size_t i = 0; i < plan.inputs.size(); ++i) {
    int v = plan.inputs[i];
    std::string id = "in" + std::to_string(i);
    dot << "  " << id << " [shape=oval, style=filled, fillcolor=\"#ffffff\", label=\"input "
        << escape(plan.values[v].name) << "\"];\n";
    producer[v] = id;
  }
  for (size_t s = 0; s < plan.steps.size(); ++s) {
    const artifact::StepInfo &step = plan.steps[s];
    std::string id = "step" + std::to_string(s);
    std::string label = "#" + std::to_string(s) + " ";
    std::string attributes;
    switch (step.kind) {
    case artifact::StepKind::Kernel: {
      const artifact::KernelInfo &k = plan.kernels[step.kernel];
      label += escape(k.name) + "\\n" + schema::EnumNameSchedule(k.schedule) + " kernel";
      if (auto it = fused.find(k.name); it != fused.end() && !it->second.empty())
        label += "\\n" + it->second;
      attributes = std::string("shape=box, style=\"rounded,filled\", fillcolor=\"") +
                   scheduleColour(k.schedule) + "\"";
      break;
    }
    case artifact::StepKind::Host:
      if (isLibraryStep(step.op)) {
        label += escape(step.label) + "\\nlibrary call";
        attributes = "shape=box, style=filled, fillcolor=\"#e6dcf5\"";
      } else {
        label += escape(step.label) + "\\ngraph break: host round trip + sync on CUDA";
        attributes = "shape=box, style=\"filled,bold\", color=\"#c0392b\", fillcolor=\"#fbdcd8\"";
      }
      break;
    case artifact::StepKind::View:
      label += "view\\nthe input's bytes under new dims";
      attributes = "shape=note, style=filled, fillcolor=\"#f2f2f2\"";
      break;
    case artifact::StepKind::SymbolicConstant:
    case artifact::StepKind::ShapeOf:
      label += escape(step.label) + "\\nshape step";
      attributes = "shape=note, style=filled, fillcolor=\"#f2f2f2\"";
      break;
    case artifact::StepKind::ReadSizes: {
      // A size the device computed, read back alone: a synchronization, no
      // host compute. It feeds the kernels it sizes through the symbols.
      std::string names;
      for (int symbol : step.readSymbols)
        names += (names.empty() ? "" : ", ") + plan.symbols[symbol];
      label += "size read: binds " + escape(names) + "\\nstream sync on CUDA";
      attributes = "shape=note, style=\"filled,bold\", color=\"#d35400\", fillcolor=\"#fdebd0\"";
      break;
    }
    case artifact::StepKind::Check: {
      // Facts over sizes steps bound, checked on the host where they stand.
      std::string facts;
      for (const artifact::PredicateInfo &p : step.checks)
        facts += "\\n" + escape(p.toString(plan.symbols));
      label += "check" + facts;
      attributes = "shape=note, style=filled, fillcolor=\"#f2f2f2\"";
      break;
    }
    case artifact::StepKind::Control: {
      // The host drives it; what its bodies run, counted by kind.
      size_t kernels = 0, library = 0, breaks = 0;
      std::function<void(const std::vector<artifact::StepInfo> &)> count =
          [&](const std::vector<artifact::StepInfo> &steps) {
            for (const artifact::StepInfo &inner : steps) {
              kernels += inner.kind == artifact::StepKind::Kernel;
              library += inner.kind == artifact::StepKind::Host && isLibraryStep(inner.op);
              breaks += inner.kind == artifact::StepKind::Host && !isLibraryStep(inner.op);
              for (const artifact::BodyInfo &body : inner.bodies)
                count(body.steps);
            }
          };
      for (const artifact::BodyInfo &body : step.bodies)
        count(body.steps);
      label += escape(step.label) + "\\ncontrol flow (host-driven)\\nbodies: " +
               std::to_string(kernels) + " kernels, " + std::to_string(library) +
               " library calls, " + std::to_string(breaks) + " graph breaks";
      attributes = "shape=hexagon, style=\"filled,bold\", color=\"#c0392b\", fillcolor=\"#fdf2d0\"";
      break;
    }
    }
    dot << "  " << id << " [" << attributes << ", label=\"" << label << "\"];\n";
    for (int v : step.inputs) {
      auto it = producer.find(v);
      std::string from = it != producer.end() ? it->second : "";
      if (from.empty() && plan.values[v].kind == artifact::ValueKind::Weight) {
        from = "w" + std::to_string(v);
        dot << "  " << from << " [shape=cylinder, style=filled, fillcolor=\"#fff7d6\", label=\"weight\"];\n";
        producer[v] = from;
      }
      if (!from.empty())
        dot << "  " << from << " -> " << id << " [label=\"" << escape(valueLabel(plan, v, symbols))
            << "\"];\n";
    }
    for (int v : step.outputs)
      producer[v] = id;
  }
  for (size_t i = 0; i < plan.outputs.size(); ++i) {
    int v = plan.outputs[i];
    std::string id = "out" + std::to_string(i);
    dot << "  " << id << " [shape=oval, style=filled, fillcolor=\"#ffffff\", label=\"output "
        << escape(plan.values[v].name) << "\"];\n";
    if (auto it = producer.find(v); it != producer.end())
      dot << "  " << it->second << " -> " << id << " [label=\""
          << escape(valueLabel(plan, v, symbols)) << "\"];\n";
  }
  dot << "}\n";
  return dot.str();
}

} // namespace kiln
