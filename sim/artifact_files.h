// The files of a compiled artifact that came from elsewhere (a model.tar from another
// machine, a fuzzer): unpacking an archive and reading the files its graph names, both
// confined to the artifact's folder. Every problem is a user error naming the archive
// or the file; nothing is written or read outside the folder.
#pragma once

#include <string>

#include "frontend/graph.h"
#include "sim/artifact_runner.h"

namespace mtir::sim {

// Writes the regular files of the ustar archive `archive` (its bytes; `name` names it in
// messages) under the existing folder `dir` and returns the artifact's folder: `dir`, or
// the archive's single top folder when metadata.json sits there (`tar cf model.tar
// folder/`). An entry that would clash with another (the same path twice, a file where
// another entry needs a folder) is refused before anything is written.
std::string unpack_artifact(const std::string& archive, const std::string& name, const std::string& dir);

// Reads the weight files the artifact's graph (info.graph_file) names, relative to its
// folder: only regular files inside the artifact (no absolute paths, no "..", no
// devices), so an artifact cannot make `run` read /dev/zero or files elsewhere. `name`
// names the artifact in messages (the archive the user gave).
FileReader artifact_graph_reader(const ArtifactInfo& info, const std::string& name);

}  // namespace mtir::sim
