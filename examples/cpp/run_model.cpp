// run_model.cpp - load any compiled model (.so or .kiln) at run time with kiln's
// C++ wrapper, run it on raw float32 inputs from files, and write the outputs.
//
//   c++ -std=c++17 run_model.cpp -lkiln_runtime -o run_model
//   ./run_model MODEL INPUT.f32:D0xD1x... OUTPUT_PREFIX
#include <kiln/runtime.hpp>

#include <cstdio>
#include <fstream>
#include <iostream>
#include <sstream>

int main(int argc, char **argv) {
  if (argc != 4) {
    std::cerr << "usage: run_model MODEL INPUT.f32:D0xD1x... OUTPUT_PREFIX\n";
    return 2;
  }
  kiln::Model model;
  kiln::Status s = kiln::Model::load(argv[1], &model);
  if (!s.ok()) {
    std::cerr << "run_model: " << s.message() << "\n";
    return 1;
  }
  std::cout << model.numInputs() << " input(s), " << model.numOutputs() << " output(s) on "
            << (model.backend() == KILN_BACKEND_CUDA ? "cuda" : "host emulation") << "\n";

  // INPUT.f32:2x5x16 -> a host tensor of those dims read from the file.
  std::string spec = argv[2];
  size_t colon = spec.rfind(':');
  std::vector<int64_t> dims;
  std::stringstream dimText(spec.substr(colon + 1));
  for (std::string d; std::getline(dimText, d, 'x');)
    dims.push_back(std::stoll(d));
  std::vector<kiln::HostTensor> inputs = {kiln::HostTensor(KILN_F32, dims)};
  std::ifstream in(spec.substr(0, colon), std::ios::binary);
  in.read(reinterpret_cast<char *>(inputs[0].data.data()), inputs[0].data.size());
  if (!in) {
    std::cerr << "run_model: cannot read " << spec << "\n";
    return 1;
  }

  std::vector<kiln::HostTensor> outputs;
  s = model.run(inputs, &outputs);
  if (!s.ok()) {
    std::cerr << "run_model: " << s.message() << "\n";
    return 1;
  }
  for (size_t i = 0; i < outputs.size(); ++i) {
    std::cout << model.outputInfo(i).name << ": [";
    for (size_t d = 0; d < outputs[i].dims.size(); ++d)
      std::cout << (d ? ", " : "") << outputs[i].dims[d];
    std::cout << "]\n";
    std::ofstream out(std::string(argv[3]) + std::to_string(i) + ".f32", std::ios::binary);
    out.write(reinterpret_cast<const char *>(outputs[i].data.data()), outputs[i].data.size());
  }
  return 0;
}
