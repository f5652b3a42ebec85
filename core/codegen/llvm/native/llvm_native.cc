#include "codegen/llvm/native/llvm_native.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <exception>
#include <memory>
#include <mutex>
#include <thread>

#include <llvm/ADT/SmallVector.h>
#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/LegacyPassManager.h>
#include <llvm/IR/Module.h>
#include <llvm/IR/Verifier.h>
#include <llvm/IRReader/IRReader.h>
#include <llvm/MC/TargetRegistry.h>
#include <llvm/Passes/PassBuilder.h>
#include <llvm/Support/CommandLine.h>
#include <llvm/Support/MemoryBuffer.h>
#include <llvm/Support/SourceMgr.h>
#include <llvm/Support/TargetSelect.h>
#include <llvm/Support/raw_ostream.h>
#include <llvm/Target/TargetMachine.h>
#include <llvm/Target/TargetOptions.h>
#include <llvm/Transforms/Scalar/EarlyCSE.h>
#include <llvm/Transforms/Scalar/LICM.h>
#include <llvm/Transforms/Scalar/LoopStrengthReduce.h>
#include <llvm/Transforms/Scalar/SeparateConstOffsetFromGEP.h>
#include <llvm/Transforms/Utils/CanonicalizeFreezeInLoops.h>

#include "codegen/llvm/llvm_target.h"
#include "codegen/llvm/module_parts.h"
#include "codegen/llvm/native/exit_on_pointer.h"
#include "codegen/llvm/native/invariant_gep_base.h"
#include "codegen/llvm/native/register_allocator.h"
#include "support/diagnostic.h"
#include "support/timing.h"

extern "C" {
// Only the four targets the backend emits for are initialized (not InitializeAll*).
#define MTIR_LLVM_TARGET(T)                 \
  void LLVMInitialize##T##TargetInfo();     \
  void LLVMInitialize##T##Target();         \
  void LLVMInitialize##T##TargetMC();       \
  void LLVMInitialize##T##AsmPrinter();
MTIR_LLVM_TARGET(X86)
MTIR_LLVM_TARGET(ARM)
MTIR_LLVM_TARGET(RISCV)
MTIR_LLVM_TARGET(WebAssembly)
#undef MTIR_LLVM_TARGET
// Inline assembly in the IR (the ARM backend's SMMLAR) is assembled by the target's parser.
void LLVMInitializeARMAsmParser();
}

namespace mtir::llvm_native {
namespace {

// Loop strength reduction's addressing mode. For Cortex-M without Helium LLVM 14 prefers
// pre-indexed forms: an SMLAD tile's loop then steps one counter and recomputes each
// buffer's address from a base and the counter (an ADD per buffer per step, a base
// reloaded from the stack), where GCC steps one pointer per buffer. Post-indexed, LSR
// steps the pointers (AD's reduction step 90 -> 84 instructions, GCC's count). It is
// LLVM's own choice for Helium cores; targets without post-increment loads (x86, RISC-V,
// wasm) ignore it. The option is process-wide, so it is set once, before any compile.
void prefer_post_indexed_addresses() {
  llvm::StringMap<llvm::cl::Option*>& options = llvm::cl::getRegisteredOptions();
  auto it = options.find("lsr-preferred-addressing-mode");
  if (it == options.end()) internal_error(__FILE__, __LINE__, "LLVM has no option lsr-preferred-addressing-mode");
  if (it->second->getNumOccurrences() == 0) it->second->addOccurrence(0, it->first(), "postindexed");
}

// Loop strength reduction runs in run_loop_lowering (the same passes code generation
// would run first, then ExitOnPointerPass), so code generation must not run it again: it
// would put back the counters ExitOnPointerPass removed. Process-wide, like the above.
void no_strength_reduction_in_code_generation() {
  llvm::StringMap<llvm::cl::Option*>& options = llvm::cl::getRegisteredOptions();
  auto it = options.find("disable-lsr");
  if (it == options.end()) internal_error(__FILE__, __LINE__, "LLVM has no option disable-lsr");
  if (it->second->getNumOccurrences() == 0) it->second->addOccurrence(0, it->first(), "true");
}

// Whether the machine scheduler runs is LLVM's process-wide option enable-misched, read
// as each function is compiled: a compile sets it for its target while it holds this
// lock (compiles of one module's parts on threads share the setting).
std::mutex& scheduler_setting() {
  static std::mutex lock;
  return lock;
}

void set_machine_scheduler(bool on) {
  llvm::StringMap<llvm::cl::Option*>& options = llvm::cl::getRegisteredOptions();
  auto it = options.find("enable-misched");
  if (it == options.end()) internal_error(__FILE__, __LINE__, "LLVM has no option enable-misched");
  if (on)
    it->second->reset();  // the subtarget decides, as without the option
  else if (it->second->getNumOccurrences() == 0)
    it->second->addOccurrence(0, it->first(), "false");
}

void initialize_targets() {
  static std::once_flag once;
  std::call_once(once, [] {
#define MTIR_INIT(T)                \
  LLVMInitialize##T##TargetInfo();  \
  LLVMInitialize##T##Target();      \
  LLVMInitialize##T##TargetMC();    \
  LLVMInitialize##T##AsmPrinter();
    MTIR_INIT(X86)
    MTIR_INIT(ARM)
    MTIR_INIT(RISCV)
    MTIR_INIT(WebAssembly)
#undef MTIR_INIT
    LLVMInitializeARMAsmParser();
    prefer_post_indexed_addresses();
    no_strength_reduction_in_code_generation();
    install_register_allocator();
  });
}

[[noreturn]] void fail(const std::string& message) { internal_error(__FILE__, __LINE__, message); }

std::unique_ptr<llvm::Module> parse_and_verify(llvm::LLVMContext* context, const std::string& ir, const std::string& name) {
  llvm::SMDiagnostic error;
  std::unique_ptr<llvm::Module> module = llvm::parseIR(llvm::MemoryBufferRef(ir, name), error, *context);
  if (!module) {
    fail("the LLVM backend emitted IR that LLVM cannot parse (" + name + ":" + std::to_string(error.getLineNo()) + ":" +
         std::to_string(error.getColumnNo()) + "): " + error.getMessage().str() + "\n  " + error.getLineContents().str());
  }
  for (llvm::Function& f : *module) {
    std::string why;
    llvm::raw_string_ostream os(why);
    if (llvm::verifyFunction(f, &os)) {
      os.flush();
      fail("the LLVM verifier rejects function '" + f.getName().str() + "' of " + name + ": " + why);
    }
  }
  std::string why;
  llvm::raw_string_ostream os(why);
  if (llvm::verifyModule(*module, &os)) {
    os.flush();
    fail("the LLVM verifier rejects module " + name + ": " + why);
  }
  return module;
}

std::unique_ptr<llvm::TargetMachine> target_machine(const Options& options) {
  initialize_targets();
  const LlvmTargetInfo& info = llvm_target(options.triple);
  std::string error;
  const llvm::Target* target = llvm::TargetRegistry::lookupTarget(info.triple, error);
  if (!target) fail("LLVM has no target for " + info.triple + ": " + error);
  llvm::TargetOptions to;
  // "eabihf": floats in VFP registers, as clang sets it (the Default ABI leaves the
  // object without Tag_ABI_VFP_args, which GNU ld refuses to link with hard-float code).
  if (info.triple.size() > 2 && info.triple.compare(info.triple.size() - 2, 2, "hf") == 0)
    to.FloatABIType = llvm::FloatABI::Hard;
  // Thumb functions are 2-byte aligned and ARM pads loop heads to 4 bytes with NOPs, which
  // run on each entry to the loop: whether a loop gets one depends on where its function
  // lands in the object, so on the functions before it (and on how a module is split into
  // parts). Unpadded, each function's code is the same wherever it is, with no NOP to run.
  if (llvm::Triple(info.triple).isThumb()) to.LoopAlignment = 1;
  // Position-independent code links into the host's PIE executables; firmware is static.
  llvm::Reloc::Model reloc = info.pointer_bits == 64 ? llvm::Reloc::PIC_ : llvm::Reloc::Static;
  std::unique_ptr<llvm::TargetMachine> tm(target->createTargetMachine(
      info.triple, options.cpu, info.features, to, reloc, llvm::None,
      options.opt == "O0" ? llvm::CodeGenOpt::None : llvm::CodeGenOpt::Default));
  if (!tm) fail("LLVM cannot make a target machine for " + info.triple);
  return tm;
}

llvm::OptimizationLevel level(const std::string& opt) {
  if (opt == "O0") return llvm::OptimizationLevel::O0;
  if (opt == "O1") return llvm::OptimizationLevel::O1;
  if (opt == "O2") return llvm::OptimizationLevel::O2;
  if (opt == "O3") return llvm::OptimizationLevel::O3;
  if (opt == "Os") return llvm::OptimizationLevel::Os;
  if (opt == "Oz") return llvm::OptimizationLevel::Oz;
  user_error(Span{}, "unknown optimization level -" + opt + "; use O0, O1, O2, O3, Os or Oz");
}

// Cortex-M (Thumb) only: the int8 kernels index buffers as `base + (ko*16 | k)`, and
// with the constant part inside the index ARM's instruction selection computes every
// address with its own ORR before a register-offset load (48 extra instructions per
// reduction step of the KWS pointwise tile, 1.35x GCC's count). Splitting the constant
// offsets out of the GEPs, then CSE and hoisting the shared base, lets each access be
// one LDR with an immediate offset, as GCC emits it.
bool separates_gep_offsets(const llvm::TargetMachine& tm) { return tm.getTargetTriple().isThumb(); }

// The new pass manager's analysis managers for `tm`, registered and cross-wired.
struct Analyses {
  llvm::PassBuilder pb;
  llvm::LoopAnalysisManager lam;
  llvm::FunctionAnalysisManager fam;
  llvm::CGSCCAnalysisManager cgam;
  llvm::ModuleAnalysisManager mam;
  explicit Analyses(llvm::TargetMachine* tm) : pb(tm) {
    pb.registerModuleAnalyses(mam);
    pb.registerCGSCCAnalyses(cgam);
    pb.registerFunctionAnalyses(fam);
    pb.registerLoopAnalyses(lam);
    pb.crossRegisterProxies(lam, fam, cgam, mam);
  }
};

void run_pipeline(llvm::Module* module, llvm::TargetMachine* tm, const std::string& opt) {
  Analyses a(tm);
  llvm::OptimizationLevel l = level(opt);
  llvm::ModulePassManager mpm =
      l == llvm::OptimizationLevel::O0 ? a.pb.buildO0DefaultPipeline(l) : a.pb.buildPerModuleDefaultPipeline(l);
  if (l != llvm::OptimizationLevel::O0 && separates_gep_offsets(*tm)) {
    llvm::FunctionPassManager fpm;
    fpm.addPass(llvm::SeparateConstOffsetFromGEPPass());
    fpm.addPass(llvm::EarlyCSEPass());
    fpm.addPass(llvm::createFunctionToLoopPassAdaptor(llvm::LICMPass(), /*UseMemorySSA=*/true));
    mpm.addPass(llvm::createModuleToFunctionPassAdaptor(std::move(fpm)));
  }
  mpm.run(*module, a.mam);
}

// Cortex-M without low-overhead loops (v8.1-M has them: there the counter is LR and free).
// The 3x2 SMLAD tile's loop needs all 14 registers for its accumulators, pointers and
// operands; LSR's down-counter is one more (spilled and reloaded in every step).
bool exits_on_pointers(const llvm::TargetMachine& tm) {
  const llvm::Triple& t = tm.getTargetTriple();
  return t.isThumb() && t.getSubArch() != llvm::Triple::ARMSubArch_v8_1m_mainline;
}

// What code generation runs first on a loop (TargetPassConfig::addIRPasses: freezes
// canonicalized, loop strength reduction), here so ExitOnPointerPass can follow it.
void run_loop_lowering(llvm::Module* module, llvm::TargetMachine* tm, const std::string& opt) {
  if (level(opt) == llvm::OptimizationLevel::O0) return;
  Analyses a(tm);
  llvm::LoopPassManager lpm;
  lpm.addPass(llvm::CanonicalizeFreezeInLoopsPass());
  lpm.addPass(llvm::LoopStrengthReducePass());
  if (exits_on_pointers(*tm)) lpm.addPass(ExitOnPointerPass());
  llvm::FunctionPassManager fpm;
  fpm.addPass(llvm::createFunctionToLoopPassAdaptor(std::move(lpm), /*UseMemorySSA=*/false));
  if (exits_on_pointers(*tm)) {
    fpm.addPass(TileRegisterAllocatorPass());
    fpm.addPass(InvariantGepBasePass());
  }
  llvm::ModulePassManager mpm;
  mpm.addPass(llvm::createModuleToFunctionPassAdaptor(std::move(fpm)));
  mpm.run(*module, a.mam);
}

// LLVM's allocators as the targets choose them, except on the Cortex-M cores whose tile
// loops ExitOnPointerPass shortens to 14 registers: there greedy, or PBQP for the functions
// TileRegisterAllocatorPass marked (register_allocator.h).
RegisterAllocation register_allocation(const llvm::TargetMachine& tm, const std::string& opt) {
  if (tm.getTargetTriple().isWasm()) return RegisterAllocation::kNone;
  if (level(opt) == llvm::OptimizationLevel::O0) return RegisterAllocation::kFast;
  return exits_on_pointers(tm) ? RegisterAllocation::kPerFunction : RegisterAllocation::kGreedy;
}

void check_triple(const llvm::Module& module, const llvm::TargetMachine& tm, const std::string& name) {
  if (module.getTargetTriple() != tm.getTargetTriple().str())
    user_error(Span{}, name + " is for " + module.getTargetTriple() + ", not " + tm.getTargetTriple().str());
}

// The optimization pipeline and code generation of a verified module: an object file.
std::string compile_module(llvm::Module* module, const std::string& name, const Options& options) {
  std::unique_ptr<llvm::TargetMachine> tm = target_machine(options);
  check_triple(*module, *tm, name);
  {
    TimingScope timing("backend", "llvm: optimize " + name + " (-" + options.opt + ")");
    run_pipeline(module, tm.get(), options.opt);
    run_loop_lowering(module, tm.get(), options.opt);
  }
  TimingScope timing("backend", "llvm: instruction selection and object " + name);
  set_register_allocation(register_allocation(*tm, options.opt));
  llvm::SmallVector<char, 0> buffer;
  llvm::raw_svector_ostream os(buffer);
  llvm::legacy::PassManager pm;
  if (tm->addPassesToEmitFile(pm, os, nullptr, llvm::CGFT_ObjectFile)) {
    fail("LLVM cannot emit object files for " + tm->getTargetTriple().str());
  }
  pm.run(*module);
  return std::string(buffer.begin(), buffer.end());
}

// One part on a worker thread, in a context of its own (LLVM's are not shared across
// threads): parsed and verified there, as the whole module would be.
std::string compile_part(const LlvmModulePart& part, const std::string& name, const Options& options) {
  llvm::LLVMContext context;
  std::unique_ptr<llvm::Module> module = parse_and_verify(&context, part.text, name);
  return compile_module(module.get(), name, options);
}

// The parts on min(parts, threads) worker threads, largest first from a shared queue. The
// workers record no timer rows (the timer is per thread): each part's wall time is added
// after, under the step that waited for them.
std::vector<std::string> compile_parts(const std::vector<LlvmModulePart>& parts, const std::string& name,
                                       const Options& options) {
  std::vector<size_t> order(parts.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return parts[a].instructions > parts[b].instructions; });
  std::vector<std::string> objects(parts.size());
  std::vector<double> wall_ms(parts.size(), 0);
  std::vector<std::exception_ptr> errors(parts.size());
  std::atomic<size_t> next{0};
  auto worker = [&] {
    for (size_t k; (k = next++) < order.size();) {
      const size_t p = order[k];
      const auto start = std::chrono::steady_clock::now();
      try {
        objects[p] = compile_part(parts[p], name + " part " + std::to_string(p), options);
      } catch (...) {
        errors[p] = std::current_exception();
      }
      wall_ms[p] = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    }
  };
  const unsigned cores = options.threads > 0 ? static_cast<unsigned>(options.threads)
                                             : std::max(1u, std::thread::hardware_concurrency());
  const size_t threads = std::min<size_t>(parts.size(), cores);
  TimingScope timing("backend", "llvm: optimize and emit " + std::to_string(parts.size()) + " parts of " + name +
                                    " on " + std::to_string(threads) + " threads");
  std::vector<std::thread> pool;
  for (size_t t = 0; t < threads; ++t) pool.emplace_back(worker);
  for (auto& t : pool) t.join();
  for (const auto& e : errors)
    if (e) std::rethrow_exception(e);
  for (size_t p = 0; p < parts.size(); ++p)
    TimingScope::record_elsewhere("backend", "llvm: part " + std::to_string(p) + " (" + std::to_string(parts[p].functions) +
                                                 " functions, " + std::to_string(parts[p].instructions) + " instructions)",
                                  wall_ms[p]);
  return objects;
}

}  // namespace

void verify(const std::string& ir, const std::string& name) {
  llvm::LLVMContext context;
  parse_and_verify(&context, ir, name);
}

namespace {

// The module after the optimization pipeline and, with `loops`, the loop lowering: as text.
std::string optimized_text(const std::string& ir, const std::string& name, const Options& options, bool loops) {
  llvm::LLVMContext context;
  std::unique_ptr<llvm::Module> module = parse_and_verify(&context, ir, name);
  std::unique_ptr<llvm::TargetMachine> tm = target_machine(options);
  run_pipeline(module.get(), tm.get(), options.opt);
  if (loops) run_loop_lowering(module.get(), tm.get(), options.opt);
  std::string out;
  llvm::raw_string_ostream os(out);
  module->print(os, nullptr);
  os.flush();
  return out;
}

}  // namespace

std::string optimize(const std::string& ir, const std::string& name, const Options& options) {
  return optimized_text(ir, name, options, false);
}

std::string lower_loops(const std::string& ir, const std::string& name, const Options& options) {
  return optimized_text(ir, name, options, true);
}

namespace {

// Parsed, verified, optimized and compiled as one object.
std::string compile_whole(const std::string& ir, const std::string& name, const Options& options) {
  llvm::LLVMContext context;
  std::unique_ptr<llvm::Module> module;
  {
    TimingScope timing("backend", "llvm: parse and verify " + name);
    module = parse_and_verify(&context, ir, name);
  }
  return compile_module(module.get(), name, options);
}

}  // namespace

std::string compile_to_object(const std::string& ir, const std::string& name, const Options& options) {
  initialize_targets();
  std::lock_guard<std::mutex> lock(scheduler_setting());
  set_machine_scheduler(options.machine_scheduler);
  return compile_whole(ir, name, options);
}

std::vector<std::string> compile_to_objects(const std::string& ir, const std::string& name, const Options& options) {
  std::vector<LlvmModulePart> parts;
  {
    TimingScope timing("backend", "llvm: split " + name + " into parts");
    parts = split_llvm_module(ir, options.parts);
  }
  initialize_targets();
  std::lock_guard<std::mutex> lock(scheduler_setting());
  set_machine_scheduler(options.machine_scheduler);
  if (parts.empty()) return {compile_whole(ir, name, options)};
  return compile_parts(parts, name, options);
}

}  // namespace mtir::llvm_native
