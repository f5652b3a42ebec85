// Running tools (compilers, simulated programs) without a shell.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

namespace mtir::sim {

// Runs argv[0] (searched in PATH) with stdout and stderr into `log`. Returns the exit
// status, or 128 + signal number. A user error if the program cannot be started.
int run_process(const std::vector<std::string>& argv, const std::filesystem::path& log);

// The whole file, or "" if it cannot be read.
std::string read_text(const std::filesystem::path& path);

}  // namespace mtir::sim
