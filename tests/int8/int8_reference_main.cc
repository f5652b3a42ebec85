// int8_reference: evaluates an int8 JSON graph with the independent reference and
// compares microtir's output with it bit for bit.
//   int8_reference GRAPH.json INPUT.npy [--stats] [--write OUT.npy] [--compare ACTUAL.npy]
// INPUT.npy feeds the graph's only input; OUT.npy / ACTUAL.npy are its first output.
// Exit 0: ok (and equal); 1: the outputs differ; 2: bad usage or a bad graph.
#include <cstdio>
#include <cstring>
#include <string>

#include "int8_reference.h"

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: int8_reference GRAPH.json INPUT.npy [--stats] [--write OUT.npy] [--compare ACTUAL.npy]\n");
    return 2;
  }
  try {
    std::string graph = argv[1];
    int8ref::Tensor x = int8ref::read_npy(argv[2]);
    std::vector<std::string> names = int8ref::graph_input_names(graph);
    if (names.size() != 1) throw int8ref::Error("the graph must have exactly one input");
    int8ref::GraphResult r = int8ref::run_graph(graph, {{names[0], x}});
    const int8ref::Tensor& out = r.values.at(r.output_names.at(0));
    int status = 0;
    for (int i = 3; i < argc; ++i) {
      if (!std::strcmp(argv[i], "--stats")) {
        for (const auto& s : r.stats)
          std::printf("%-14s %-20s %8lld values  %5.1f%% at -128  %5.1f%% at 127  %3d distinct\n", s.name.c_str(),
                      s.op.c_str(), static_cast<long long>(s.size), 100.0 * s.at_min / s.size, 100.0 * s.at_max / s.size,
                      s.distinct);
      } else if (!std::strcmp(argv[i], "--write") && i + 1 < argc) {
        int8ref::write_npy(argv[++i], out);
      } else if (!std::strcmp(argv[i], "--compare") && i + 1 < argc) {
        int8ref::Tensor got = int8ref::read_npy(argv[++i]);
        if (got.dtype != out.dtype || got.shape != out.shape) {
          std::fprintf(stderr, "%s: dtype or shape differs from the reference output '%s'\n", argv[i],
                       r.output_names[0].c_str());
          return 1;
        }
        int64_t diff = 0;
        for (size_t k = 0; k < out.data.size(); ++k) {
          if (got.data[k] == out.data[k]) continue;
          if (diff++ < 5) std::fprintf(stderr, "element %zu: got %d, reference %d\n", k, got.data[k], out.data[k]);
        }
        if (diff) {
          std::fprintf(stderr, "%s: %lld of %lld elements differ from the reference\n", argv[i],
                       static_cast<long long>(diff), static_cast<long long>(out.size()));
          status = 1;
        } else {
          std::printf("%s: all %lld elements equal the reference (bit-exact)\n", argv[i], static_cast<long long>(out.size()));
        }
      } else {
        std::fprintf(stderr, "int8_reference: unknown argument '%s'\n", argv[i]);
        return 2;
      }
    }
    return status;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "int8_reference: %s\n", e.what());
    return 2;
  }
}
