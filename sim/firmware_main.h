// The main.c a firmware author writes for a compiled model, generated: it includes
// tvmgen_<model>.h, declares the workspace statically with the WORKSPACE_SIZE macro,
// holds the input sets as const arrays, runs the model on each, and prints the outputs
// as hex bytes, the instructions of each run and the stack high-water as "@mtir" lines.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace mtir::sim {

struct FirmwareTensor {
  std::string c_name;  // the member of tvmgen_<model>_inputs / _outputs
  int64_t bytes = 0;
};

// One tensor parameter of the model's main, in main's order: what the packed interface
// passes as a DLTensor, and (with -link-params=0) the weights the application holds.
struct FirmwareArg {
  enum class Role { kInput, kWeight, kOutput };
  std::string c_name;
  Role role = Role::kInput;
  int ndim = 0;
  std::string dl_type_code;  // kDLFloat, kDLInt or kDLUInt
  int bits = 32;
  std::vector<uint8_t> weight;  // kWeight: the bytes (parameters/<name>.npy without its header)
};

struct FirmwareSpec {
  std::string model;  // the C identifier in tvmgen_<model>
  std::vector<FirmwareTensor> inputs, outputs;
  // How the artifact was compiled: "c" (tvmgen_<model>_run with structs) or "packed"
  // (TVMFuncGetGlobal and TVMFuncCall); with link_params false the firmware holds the
  // weights and passes them (a params struct, or DLTensors).
  std::string interface_api = "c";
  bool link_params = true;
  std::vector<FirmwareArg> args;  // main's tensor parameters; needed unless c with linked weights
  // samples[s][i]: the bytes of input i for run s.
  std::vector<std::vector<std::vector<uint8_t>>> samples;
  int64_t stack_paint_bytes = 0;  // 0: no stack measurement
  std::string paint_floor_symbol;  // painting never goes below this linker symbol (the end of bss)
  bool wasm_data_end = false;     // report __data_end (wasm32: where static data ends)
  // Device instances: each is a simulated NPU (sim/npu/sim_npu.h) passed in the devices
  // struct; its counters are printed after the last run as "@mtir device" lines.
  std::vector<std::string> devices;
  // Count every operator of run() (the TVMGEN_PROFILE hooks of the generated code, see
  // firmware_profile_header): "@mtir layer" lines per run and one "@mtir layer_probe"
  // with the cost of an empty hook pair. Needs a port with an instruction counter.
  bool profile_layers = false;
  // The artifact keeps state (variable tensors): every input set starts from the initial
  // state (tvmgen_<model>_reset() before each run, not counted), as one Invoke() after
  // AllocateTensors() does in TFLite Micro.
  bool has_state = false;
};

std::string firmware_main(const FirmwareSpec& spec);

// The header the generated sources are compiled with (-include) when profiling layers:
// it defines TVMGEN_PROFILE_BEGIN / _END as calls of the counter functions in main.c.
std::string firmware_profile_header();

// Bytes of the const input arrays firmware_main puts in flash (to report them apart).
int64_t firmware_input_bytes(const FirmwareSpec& spec);

}  // namespace mtir::sim
